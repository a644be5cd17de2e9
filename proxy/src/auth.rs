//! Authentication and authorization of gRPC calls, as Apache's proxy does them (RocketMQ 5.3's
//! `AuthenticationPipeline` and `AuthorizationPipeline`), against issue 11's users and ACLs.
//!
//! When `authenticationEnabled` is on, every call (unary, ReceiveMessage's stream, every
//! command of a Telemetry stream) must carry the SDK signature (`authorization:
//! MQv2-HMAC-SHA1 Credential=AK, SignedHeaders=x-mq-date-time, Signature=HEX` over
//! `x-mq-date-time`, read by [`auth::grpc`]) of an enabled user. When `authorizationEnabled`
//! is on, the user's ACL must allow what the call asks for, the resources Apache's
//! `DefaultAuthorizationContextBuilder` names ([`Guarded::accesses`]): Pub on the topic of a
//! send, EndTransaction and RecallMessage; Sub on the group and topic of a receive, ack,
//! dead-letter forward and assignment query; Sub on the group of a consumer's heartbeat,
//! ChangeInvisibleDuration and NotifyClientTermination; Pub or Sub on a routed topic; and for
//! a Telemetry settings command, Pub on each published topic, Sub on the subscribed group and
//! topics. Calls Apache names no resource for are authorized by authentication alone. Codes in
//! `authenticationWhitelist` / `authorizationWhitelist` are the calls' message names
//! (`apache.rocketmq.v2.QueryRouteRequest`), as Apache compares them.
//!
//! A refusal is answered as Apache answers it: the call succeeds at the gRPC level and its
//! response's status is UNAUTHORIZED with Apache's remark (`check signature failed.`,
//! `User:alice has no permission to access Topic:t from 127.0.0.1, no matched policies.`);
//! on a Telemetry stream it is one command carrying that status, and the stream goes on.
//!
//! Where the users and ACLs come from ([`Users`]), so the same check runs in both modes:
//! - cluster mode: from a broker of the cluster (`rocketMQClusterName`), with AUTH_GET_USER and
//!   AUTH_GET_ACL over the [`Backend`] seam, cached [`UserCache::ttl`] — what Apache's proxy
//!   does (`ProxyAuthenticationMetadataProvider`, `ClusterMetadataService`'s user and ACL
//!   caches), so an operator manages users once, on the brokers, with mqadmin;
//! - local mode, or `authConfigPath` set: a [`Directory`] at hand (the broker's own
//!   `MetadataStore`, or the same files opened from that path and re-read when they change).
//!
//! The proxy's own remoting requests carry `innerClientAuthenticationCredentials` (as
//! Apache's `AclClientRPCHook`): an ACL-enabled broker refuses unsigned ones.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use auth::evaluate::{self, AUTHORIZATION_FAILED, Denied, Directory};
use auth::grpc::{self as signed, GrpcCredential};
use auth::model::{Acl, Action, Resource, User, user_subject};
use auth::request::Access;
use auth::{AuthConfig, MetadataStore};
use parking_lot::Mutex;
use remoting::protocol::auth::{AclInfo, AclRequestHeader, UserInfo, UserRequestHeader};
use remoting::{RemotingCommand, RequestCode, ResponseCode, fastjson};
use serde::{Deserialize, Serialize};
use tonic::codegen::tokio_stream::{self, Stream};
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status, Streaming};
use tracing::{debug, warn};

use crate::backend::{Backend, Target};
use crate::pb::messaging_service_server::MessagingService;
use crate::pb::{self, ClientType, Code, settings::PubSub, telemetry_command::Command};
use crate::route::Routes;
use crate::status::Refusal;

/// Apache's remark when the users could not be read (`AbstractAuthenticationStrategy`).
pub const AUTHENTICATION_FAILED: &str =
    "Authentication failed. Please verify the credentials and try again.";
/// How long one AUTH_GET_USER / AUTH_GET_ACL may take (Apache's `DEFAULT_TIMEOUT`).
const FETCH_TIMEOUT: Duration = Duration::from_secs(3);
/// How often local files are checked for changes, at most.
const RELOAD_INTERVAL: Duration = Duration::from_secs(1);

/// The cache keys of Apache's `AuthConfig` the proxy uses: how long a fetched user or ACL is
/// trusted before it is asked for again (60 s each, Apache's `refreshAfterWrite`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct UserCache {
    /// `userCacheRefreshSecond` (60).
    pub user_cache_refresh_second: u64,
    /// `aclCacheRefreshSecond` (60).
    pub acl_cache_refresh_second: u64,
}

impl Default for UserCache {
    fn default() -> Self {
        UserCache {
            user_cache_refresh_second: 60,
            acl_cache_refresh_second: 60,
        }
    }
}

impl UserCache {
    /// How long one fetch of a user and its ACL is used.
    #[must_use]
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(
            self.user_cache_refresh_second
                .min(self.acl_cache_refresh_second),
        )
    }
}

/// A user and their ACL, as one call reads them.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    /// The user, if known.
    pub user: Option<Arc<User>>,
    /// Their ACL, if any.
    pub acl: Option<Arc<Acl>>,
}

impl Directory for Entry {
    fn user(&self, username: &str) -> Option<Arc<User>> {
        self.user.clone().filter(|u| u.username == username)
    }

    fn acl(&self, subject: &str) -> Option<Arc<Acl>> {
        self.acl.clone().filter(|a| a.subject == subject)
    }
}

/// A boxed future (lookups are called through `dyn`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where the users and ACLs come from.
pub trait Users: Send + Sync + fmt::Debug + 'static {
    /// `username` and their ACL; `Err` when they could not be read (not: unknown user).
    fn lookup<'a>(&'a self, username: &'a str) -> BoxFuture<'a, Result<Entry, String>>;
}

/// Users at hand: the broker's own store (local mode) or the same files opened by the proxy.
#[derive(Debug)]
pub struct LocalUsers {
    store: Arc<MetadataStore>,
    /// Files re-read when changed (a proxy reading a broker's files); `None`: the owner's.
    reload: Option<Mutex<Instant>>,
}

impl LocalUsers {
    /// The users of `store`, kept current by its owner (local mode: the broker's store).
    #[must_use]
    pub fn new(store: Arc<MetadataStore>) -> Self {
        LocalUsers {
            store,
            reload: None,
        }
    }

    /// The users and ACLs files in `dir` (`authConfigPath`), re-read when they change.
    ///
    /// # Errors
    /// The files exist but cannot be read.
    pub fn open(dir: &std::path::Path) -> Result<Self, auth::AuthError> {
        let store = MetadataStore::open(dir)?;
        Ok(LocalUsers {
            store: Arc::new(store),
            reload: Some(Mutex::new(Instant::now())),
        })
    }
}

impl Users for LocalUsers {
    fn lookup<'a>(&'a self, username: &'a str) -> BoxFuture<'a, Result<Entry, String>> {
        if let Some(last) = &self.reload {
            let mut last = last.lock();
            if last.elapsed() >= RELOAD_INTERVAL {
                *last = Instant::now();
                if let Err(e) = self.store.reload_if_changed() {
                    warn!(error = %e, "cannot re-read the users and ACLs; using the last ones read");
                }
            }
        }
        let entry = Entry {
            user: self.store.user(username),
            acl: self.store.acl(&user_subject(username)),
        };
        Box::pin(std::future::ready(Ok(entry)))
    }
}

/// Cluster mode: users and ACLs asked from a broker of the cluster, cached.
#[derive(Debug)]
pub struct BrokerUsers<B> {
    backend: Arc<B>,
    routes: Routes<B>,
    cluster: String,
    ttl: Duration,
    cache: Mutex<HashMap<String, (Instant, Entry)>>,
}

impl<B: Backend> BrokerUsers<B> {
    /// Users of the brokers of `cluster` (found through the route of the topic named after
    /// the cluster, as Apache's proxy finds them), each kept `ttl`.
    #[must_use]
    pub fn new(backend: Arc<B>, cluster: &str, ttl: Duration) -> Self {
        BrokerUsers {
            routes: Routes::new(Arc::clone(&backend)),
            backend,
            cluster: cluster.to_owned(),
            ttl,
            cache: Mutex::new(HashMap::new()),
        }
    }

    async fn fetch(&self, username: &str) -> Result<Entry, String> {
        let route = self
            .routes
            .get(&self.cluster)
            .await
            .map_err(|r| format!("no route of cluster {}: {}", self.cluster, r.message))?;
        let Some(addr) = route.any_master().map(str::to_owned) else {
            return Err(format!("no master in cluster {}", self.cluster));
        };
        let user_request = RemotingCommand::request_with(
            RequestCode::AuthGetUser,
            &UserRequestHeader {
                username: Some(username.to_owned()),
            },
        );
        let user: Option<UserInfo> = self.ask(&addr, user_request).await?;
        let Some(user) = user.and_then(auth::admin::user_from_info) else {
            // Unknown: no ACL to read either.
            return Ok(Entry::default());
        };
        let acl_request = RemotingCommand::request_with(
            RequestCode::AuthGetAcl,
            &AclRequestHeader {
                subject: Some(user_subject(username)),
            },
        );
        let acl: Option<AclInfo> = self.ask(&addr, acl_request).await?;
        Ok(Entry {
            user: Some(Arc::new(user)),
            acl: acl.map(|a| Arc::new(auth::admin::acl_from_info(&a))),
        })
    }

    /// The JSON body of a successful answer (`None`: empty, nothing found).
    async fn ask<T: serde::de::DeserializeOwned>(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<Option<T>, String> {
        let code = request.code();
        let response = self
            .backend
            .invoke(Target::Broker(addr.to_owned()), request, FETCH_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        if response.code() != ResponseCode::Success.code() {
            return Err(format!(
                "request {code} refused by {addr}: {} {}",
                response.code(),
                response.remark().unwrap_or_default()
            ));
        }
        let body = response.body.to_bytes();
        if body.is_empty() {
            return Ok(None);
        }
        fastjson::from_slice(&body)
            .map(Some)
            .map_err(|e| format!("unreadable answer to {code} from {addr}: {e}"))
    }
}

impl<B: Backend> Users for BrokerUsers<B> {
    fn lookup<'a>(&'a self, username: &'a str) -> BoxFuture<'a, Result<Entry, String>> {
        Box::pin(async move {
            if let Some((at, entry)) = self.cache.lock().get(username) {
                if at.elapsed() < self.ttl {
                    return Ok(entry.clone());
                }
            }
            let entry = self.fetch(username).await?;
            self.cache
                .lock()
                .insert(username.to_owned(), (Instant::now(), entry.clone()));
            Ok(entry)
        })
    }
}

// ------------------------------------------------------------------------------ resources

/// A call message whose resources Apache's `DefaultAuthorizationContextBuilder` names.
pub trait Guarded {
    /// The message's full name: its code in the whitelists.
    const RPC: &'static str;

    /// What the call needs; `Ok(None)`: nothing beyond authentication.
    ///
    /// # Errors
    /// The resource is missing (Apache's `topic is null.` and the like).
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        Ok(None)
    }
}

fn access(resource: Resource, actions: &[Action]) -> Access {
    Access {
        resource,
        actions: actions.to_vec(),
    }
}

fn named<'a>(resource: Option<&'a pb::Resource>, what: &str) -> Result<&'a str, Denied> {
    resource
        .map(|r| r.name.as_str())
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| Denied(format!("{what} is null.")))
}

fn publish(topic: Option<&pb::Resource>) -> Result<Access, Denied> {
    Ok(access(
        Resource::topic(Some(named(topic, "topic")?)),
        &[Action::Pub],
    ))
}

fn subscribe_topic(topic: Option<&pb::Resource>) -> Result<Access, Denied> {
    Ok(access(
        Resource::topic(Some(named(topic, "topic")?)),
        &[Action::Sub],
    ))
}

fn subscribe_group(group: Option<&pb::Resource>) -> Result<Access, Denied> {
    Ok(access(
        Resource::group(Some(named(group, "group")?)),
        &[Action::Sub],
    ))
}

fn group_and_topic(
    group: Option<&pb::Resource>,
    topic: Option<&pb::Resource>,
) -> Result<Option<Vec<Access>>, Denied> {
    Ok(Some(vec![subscribe_group(group)?, subscribe_topic(topic)?]))
}

macro_rules! guarded {
    ($($message:ident),* $(,)?) => {
        $(impl Guarded for pb::$message {
            const RPC: &'static str = concat!("apache.rocketmq.v2.", stringify!($message));
        })*
    };
}

// Calls Apache authorizes by authentication alone.
guarded!(
    PullMessageRequest,
    UpdateOffsetRequest,
    GetOffsetRequest,
    QueryOffsetRequest,
    SyncLiteSubscriptionRequest,
);

impl Guarded for pb::QueryRouteRequest {
    const RPC: &'static str = "apache.rocketmq.v2.QueryRouteRequest";
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        let topic = named(self.topic.as_ref(), "topic")?;
        Ok(Some(vec![access(
            Resource::topic(Some(topic)),
            &[Action::Pub, Action::Sub],
        )]))
    }
}

impl Guarded for pb::HeartbeatRequest {
    const RPC: &'static str = "apache.rocketmq.v2.HeartbeatRequest";
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        let consumer = matches!(
            self.client_type(),
            ClientType::PushConsumer | ClientType::SimpleConsumer | ClientType::PullConsumer
        );
        if !consumer {
            return Ok(None);
        }
        Ok(Some(vec![subscribe_group(self.group.as_ref())?]))
    }
}

impl Guarded for pb::SendMessageRequest {
    const RPC: &'static str = "apache.rocketmq.v2.SendMessageRequest";
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        // Apache names the first message's topic (a batch has one topic).
        let first = self
            .messages
            .first()
            .ok_or_else(|| Denied("message is null.".into()))?;
        Ok(Some(vec![publish(first.topic.as_ref())?]))
    }
}

impl Guarded for pb::RecallMessageRequest {
    const RPC: &'static str = "apache.rocketmq.v2.RecallMessageRequest";
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        Ok(Some(vec![publish(self.topic.as_ref())?]))
    }
}

impl Guarded for pb::EndTransactionRequest {
    const RPC: &'static str = "apache.rocketmq.v2.EndTransactionRequest";
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        Ok(Some(vec![publish(self.topic.as_ref())?]))
    }
}

impl Guarded for pb::ReceiveMessageRequest {
    const RPC: &'static str = "apache.rocketmq.v2.ReceiveMessageRequest";
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        let queue = self
            .message_queue
            .as_ref()
            .ok_or_else(|| Denied("messageQueue is null.".into()))?;
        group_and_topic(self.group.as_ref(), queue.topic.as_ref())
    }
}

impl Guarded for pb::AckMessageRequest {
    const RPC: &'static str = "apache.rocketmq.v2.AckMessageRequest";
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        group_and_topic(self.group.as_ref(), self.topic.as_ref())
    }
}

impl Guarded for pb::ForwardMessageToDeadLetterQueueRequest {
    const RPC: &'static str = "apache.rocketmq.v2.ForwardMessageToDeadLetterQueueRequest";
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        group_and_topic(self.group.as_ref(), self.topic.as_ref())
    }
}

impl Guarded for pb::QueryAssignmentRequest {
    const RPC: &'static str = "apache.rocketmq.v2.QueryAssignmentRequest";
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        group_and_topic(self.group.as_ref(), self.topic.as_ref())
    }
}

impl Guarded for pb::NotifyClientTerminationRequest {
    const RPC: &'static str = "apache.rocketmq.v2.NotifyClientTerminationRequest";
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        match &self.group {
            Some(g) if !g.name.trim().is_empty() => Ok(Some(vec![subscribe_group(Some(g))?])),
            _ => Ok(None),
        }
    }
}

impl Guarded for pb::ChangeInvisibleDurationRequest {
    const RPC: &'static str = "apache.rocketmq.v2.ChangeInvisibleDurationRequest";
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        Ok(Some(vec![subscribe_group(self.group.as_ref())?]))
    }
}

impl Guarded for pb::TelemetryCommand {
    const RPC: &'static str = "apache.rocketmq.v2.TelemetryCommand";
    fn accesses(&self) -> Result<Option<Vec<Access>>, Denied> {
        let Some(Command::Settings(settings)) = &self.command else {
            return Ok(None);
        };
        let mut out = Vec::new();
        match &settings.pub_sub {
            Some(PubSub::Publishing(p)) => {
                for topic in &p.topics {
                    out.push(publish(Some(topic))?);
                }
            }
            Some(PubSub::Subscription(s)) => {
                out.push(subscribe_group(s.group.as_ref())?);
                for entry in &s.subscriptions {
                    out.push(subscribe_topic(entry.topic.as_ref())?);
                }
            }
            // Apache: an AclException, answered INTERNAL_SERVER_ERROR; the service refuses
            // such settings anyway.
            None => return Ok(None),
        }
        Ok(Some(out))
    }
}

// ------------------------------------------------------------------------------ the gate

/// The check every call passes before the service sees it.
#[derive(Debug)]
pub struct Gate {
    authentication: bool,
    authorization: bool,
    authentication_whitelist: Vec<String>,
    authorization_whitelist: Vec<String>,
    users: Arc<dyn Users>,
}

impl Gate {
    /// A gate enforcing what `config` turns on, reading users from `users`; `None` when
    /// neither authentication nor authorization is on.
    #[must_use]
    pub fn new(config: &AuthConfig, users: Arc<dyn Users>) -> Option<Arc<Self>> {
        if !config.authentication_enabled && !config.authorization_enabled {
            return None;
        }
        Some(Arc::new(Gate {
            authentication: config.authentication_enabled,
            authorization: config.authorization_enabled,
            authentication_whitelist: config.authentication_whitelist(),
            authorization_whitelist: config.authorization_whitelist(),
            users,
        }))
    }

    /// Checks a call: `Err` is the refusal its response carries.
    ///
    /// # Errors
    /// UNAUTHORIZED with Apache's remark.
    pub async fn admit<M: Guarded>(&self, request: &Request<M>) -> Result<(), Refusal> {
        self.admit_parts(request.metadata(), request.remote_addr(), request.get_ref())
            .await
    }

    /// [`admit`](Self::admit) from a call's headers, peer and message (a Telemetry
    /// stream's commands share its headers).
    ///
    /// # Errors
    /// UNAUTHORIZED with Apache's remark.
    pub async fn admit_parts<M: Guarded>(
        &self,
        metadata: &MetadataMap,
        peer: Option<SocketAddr>,
        message: &M,
    ) -> Result<(), Refusal> {
        let source_ip = peer.map(|p| p.ip().to_string()).unwrap_or_default();
        let result = self.check(metadata, &source_ip, message).await;
        if let Err(Denied(remark)) = &result {
            warn!(rpc = M::RPC, source_ip, remark, "call refused");
        }
        result.map_err(|Denied(remark)| Refusal::new(Code::Unauthorized, remark))
    }

    async fn check<M: Guarded>(
        &self,
        metadata: &MetadataMap,
        source_ip: &str,
        message: &M,
    ) -> Result<(), Denied> {
        let header = |key: &str| metadata.get(key).and_then(|v| v.to_str().ok());
        let parsed = signed::parse(header(signed::AUTHORIZATION), header(signed::DATE_TIME));
        let credential = match parsed {
            Ok(c) => c,
            // A malformed header refuses the call only where it is checked.
            Err(denied) if self.authentication => return Err(denied),
            Err(_) => None,
        };
        let credential = credential.unwrap_or_else(|| GrpcCredential {
            username: String::new(),
            signature: Vec::new(),
            content: Vec::new(),
        });
        let username = Some(credential.username.as_str()).filter(|u| !u.is_empty());
        let whitelisted = |list: &[String]| list.iter().any(|c| c == M::RPC);
        let authenticate = self.authentication && !whitelisted(&self.authentication_whitelist);
        // Apache builds the authorization contexts after authenticating: a missing resource
        // is reported only to an authenticated caller.
        let accesses = if self.authorization && !whitelisted(&self.authorization_whitelist) {
            message.accesses()
        } else {
            Ok(None)
        };
        if !authenticate && matches!(accesses, Ok(None)) {
            return Ok(());
        }
        let entry = match username {
            Some(name) => self.users.lookup(name).await.map_err(|why| {
                warn!(user = name, error = why, "cannot read the user");
                Denied(
                    if authenticate {
                        AUTHENTICATION_FAILED
                    } else {
                        AUTHORIZATION_FAILED
                    }
                    .into(),
                )
            })?,
            None => Entry::default(),
        };
        if authenticate {
            signed::authenticate(&entry, &credential)?;
        }
        if let Some(accesses) = accesses? {
            evaluate::authorize(&entry, username, &accesses, source_ip)?;
        }
        debug!(rpc = M::RPC, user = username, "call admitted");
        Ok(())
    }
}

// ---------------------------------------------------------------------- the guarded service

/// A response that can carry a refusal's status.
trait Refused: Default {
    fn refused(status: pb::Status) -> Self;
}

macro_rules! refused {
    ($($response:ident),* $(,)?) => {
        $(impl Refused for pb::$response {
            #[allow(
                clippy::needless_update,
                reason = "some responses have only a status, the others more"
            )]
            fn refused(status: pb::Status) -> Self {
                pb::$response {
                    status: Some(status),
                    ..Default::default()
                }
            }
        })*
    };
}

refused!(
    QueryRouteResponse,
    HeartbeatResponse,
    SendMessageResponse,
    QueryAssignmentResponse,
    AckMessageResponse,
    ForwardMessageToDeadLetterQueueResponse,
    UpdateOffsetResponse,
    GetOffsetResponse,
    QueryOffsetResponse,
    EndTransactionResponse,
    NotifyClientTerminationResponse,
    ChangeInvisibleDurationResponse,
    RecallMessageResponse,
    SyncLiteSubscriptionResponse,
);

type Reply<T> = Result<Response<T>, Status>;

/// A stream of responses of either origin: the service's, or one refusal.
pub type GuardedStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// The service behind the [`Gate`]: every unary and server-streaming call is checked here;
/// Telemetry is passed through, the service checking each command
/// ([`crate::MessagingProxy::with_gate`]).
#[derive(Debug)]
pub struct Authenticated<S> {
    inner: S,
    gate: Arc<Gate>,
}

impl<S> Authenticated<S> {
    /// `inner`, each call checked by `gate` first.
    pub fn new(inner: S, gate: Arc<Gate>) -> Self {
        Authenticated { inner, gate }
    }
}

impl<S> Authenticated<S> {
    async fn refusal<M: Guarded, T: Refused>(&self, request: &Request<M>) -> Option<Reply<T>> {
        match self.gate.admit(request).await {
            Ok(()) => None,
            Err(r) => Some(Ok(Response::new(T::refused(r.status())))),
        }
    }
}

fn one<T: Send + 'static>(item: T) -> GuardedStream<T> {
    Box::pin(tokio_stream::once(Ok(item)))
}

#[tonic::async_trait]
impl<S: MessagingService> MessagingService for Authenticated<S> {
    async fn query_route(
        &self,
        request: Request<pb::QueryRouteRequest>,
    ) -> Reply<pb::QueryRouteResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.query_route(request).await
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Reply<pb::HeartbeatResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.heartbeat(request).await
    }

    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Reply<pb::SendMessageResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.send_message(request).await
    }

    async fn query_assignment(
        &self,
        request: Request<pb::QueryAssignmentRequest>,
    ) -> Reply<pb::QueryAssignmentResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.query_assignment(request).await
    }

    type ReceiveMessageStream = GuardedStream<pb::ReceiveMessageResponse>;

    async fn receive_message(
        &self,
        request: Request<pb::ReceiveMessageRequest>,
    ) -> Reply<Self::ReceiveMessageStream> {
        if let Err(r) = self.gate.admit(&request).await {
            return Ok(Response::new(one(pb::ReceiveMessageResponse {
                content: Some(pb::receive_message_response::Content::Status(r.status())),
            })));
        }
        let response = self.inner.receive_message(request).await?;
        Ok(response.map(|s| Box::pin(s) as GuardedStream<_>))
    }

    async fn ack_message(
        &self,
        request: Request<pb::AckMessageRequest>,
    ) -> Reply<pb::AckMessageResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.ack_message(request).await
    }

    async fn forward_message_to_dead_letter_queue(
        &self,
        request: Request<pb::ForwardMessageToDeadLetterQueueRequest>,
    ) -> Reply<pb::ForwardMessageToDeadLetterQueueResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner
            .forward_message_to_dead_letter_queue(request)
            .await
    }

    type PullMessageStream = GuardedStream<pb::PullMessageResponse>;

    async fn pull_message(
        &self,
        request: Request<pb::PullMessageRequest>,
    ) -> Reply<Self::PullMessageStream> {
        if let Err(r) = self.gate.admit(&request).await {
            return Ok(Response::new(one(pb::PullMessageResponse {
                content: Some(pb::pull_message_response::Content::Status(r.status())),
            })));
        }
        let response = self.inner.pull_message(request).await?;
        Ok(response.map(|s| Box::pin(s) as GuardedStream<_>))
    }

    async fn update_offset(
        &self,
        request: Request<pb::UpdateOffsetRequest>,
    ) -> Reply<pb::UpdateOffsetResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.update_offset(request).await
    }

    async fn get_offset(
        &self,
        request: Request<pb::GetOffsetRequest>,
    ) -> Reply<pb::GetOffsetResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.get_offset(request).await
    }

    async fn query_offset(
        &self,
        request: Request<pb::QueryOffsetRequest>,
    ) -> Reply<pb::QueryOffsetResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.query_offset(request).await
    }

    async fn end_transaction(
        &self,
        request: Request<pb::EndTransactionRequest>,
    ) -> Reply<pb::EndTransactionResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.end_transaction(request).await
    }

    type TelemetryStream = S::TelemetryStream;

    async fn telemetry(
        &self,
        request: Request<Streaming<pb::TelemetryCommand>>,
    ) -> Reply<Self::TelemetryStream> {
        // Each command is checked by the service as it arrives.
        self.inner.telemetry(request).await
    }

    async fn notify_client_termination(
        &self,
        request: Request<pb::NotifyClientTerminationRequest>,
    ) -> Reply<pb::NotifyClientTerminationResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.notify_client_termination(request).await
    }

    async fn change_invisible_duration(
        &self,
        request: Request<pb::ChangeInvisibleDurationRequest>,
    ) -> Reply<pb::ChangeInvisibleDurationResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.change_invisible_duration(request).await
    }

    async fn recall_message(
        &self,
        request: Request<pb::RecallMessageRequest>,
    ) -> Reply<pb::RecallMessageResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.recall_message(request).await
    }

    async fn sync_lite_subscription(
        &self,
        request: Request<pb::SyncLiteSubscriptionRequest>,
    ) -> Reply<pb::SyncLiteSubscriptionResponse> {
        if let Some(refused) = self.refusal(&request).await {
            return refused;
        }
        self.inner.sync_lite_subscription(request).await
    }
}

#[cfg(test)]
mod tests {
    use auth::model::{Decision, UserType};
    use auth::store::{EntryDraft, PolicyDraft, UserChange};
    use remoting::protocol::route::{BrokerData, QueueData, TopicRouteData};
    use tonic::metadata::MetadataValue;

    use super::*;
    use crate::backend::{BackendError, Inbound};

    const WHEN: &str = "20250101T000000Z";
    const PEER: &str = "127.0.0.1:50000";

    /// alice (normal: Pub on `orders`, Sub on `orders` and group `g`), root (super).
    fn store() -> Arc<MetadataStore> {
        let store = MetadataStore::in_memory();
        let user = |name: &str, password: &str, kind| UserChange {
            username: Some(name.into()),
            password: Some(password.into()),
            user_type: Some(kind),
            ..UserChange::default()
        };
        store
            .create_user(user("alice", "alice-secret", UserType::Normal))
            .unwrap();
        store
            .create_user(user("root", "root-secret", UserType::Super))
            .unwrap();
        let entry = |resource: &str, actions: &[Action]| EntryDraft {
            resource: Resource::parse(resource),
            actions: actions.to_vec(),
            source_ips: Vec::new(),
            decision: Some(Decision::Allow),
        };
        store
            .put_acl(
                Some("User:alice"),
                vec![PolicyDraft {
                    policy_type: None,
                    entries: vec![
                        entry("Topic:orders", &[Action::Pub, Action::Sub]),
                        entry("Group:g", &[Action::Sub]),
                    ],
                }],
            )
            .unwrap();
        Arc::new(store)
    }

    fn gate(authentication: bool, authorization: bool, users: Arc<dyn Users>) -> Arc<Gate> {
        let config = AuthConfig {
            authentication_enabled: authentication,
            authorization_enabled: authorization,
            ..AuthConfig::default()
        };
        Gate::new(&config, users).unwrap()
    }

    fn local() -> Arc<dyn Users> {
        Arc::new(LocalUsers::new(store()))
    }

    fn signed<M>(message: M, who: Option<(&str, &str)>) -> Request<M> {
        let mut request = Request::new(message);
        if let Some((ak, sk)) = who {
            let header = signed::authorization(ak, sk, WHEN);
            let m = request.metadata_mut();
            m.insert(
                signed::AUTHORIZATION,
                MetadataValue::try_from(header).unwrap(),
            );
            m.insert(signed::DATE_TIME, MetadataValue::from_static(WHEN));
        }
        request
    }

    fn resource(name: &str) -> Option<pb::Resource> {
        Some(pb::Resource {
            name: name.into(),
            ..Default::default()
        })
    }

    fn send(topic: &str) -> pb::SendMessageRequest {
        pb::SendMessageRequest {
            messages: vec![pb::Message {
                topic: resource(topic),
                ..Default::default()
            }],
        }
    }

    async fn admit<M: Guarded>(gate: &Gate, request: &Request<M>) -> Result<(), String> {
        gate.admit_parts(request.metadata(), PEER.parse().ok(), request.get_ref())
            .await
            .map_err(|r| {
                assert_eq!(r.code, Code::Unauthorized);
                r.message
            })
    }

    #[tokio::test]
    async fn signatures_are_checked() {
        let gate = gate(true, false, local());
        let alice = Some(("alice", "alice-secret"));
        assert_eq!(admit(&gate, &signed(send("orders"), alice)).await, Ok(()));
        assert_eq!(
            admit(&gate, &signed(send("orders"), Some(("alice", "guess")))).await,
            Err("check signature failed.".into())
        );
        assert_eq!(
            admit(&gate, &signed(send("orders"), Some(("carol", "x")))).await,
            Err("User:carol is not found.".into())
        );
        assert_eq!(
            admit(&gate, &signed(send("orders"), None)).await,
            Err("username cannot be null.".into())
        );
        // Authentication alone: any topic.
        assert_eq!(admit(&gate, &signed(send("other"), alice)).await, Ok(()));
        // A header without its date-time.
        let mut r = signed(send("orders"), alice);
        r.metadata_mut().remove(signed::DATE_TIME);
        assert_eq!(admit(&gate, &r).await, Err("datetime is null.".into()));
    }

    #[tokio::test]
    async fn resources_are_authorized_as_apache_names_them() {
        let gate = gate(true, true, local());
        let alice = Some(("alice", "alice-secret"));
        let root = Some(("root", "root-secret"));
        assert_eq!(admit(&gate, &signed(send("orders"), alice)).await, Ok(()));
        assert_eq!(
            admit(&gate, &signed(send("other"), alice)).await,
            Err(
                "User:alice has no permission to access Topic:other from 127.0.0.1, no matched policies."
                    .into()
            )
        );
        assert_eq!(admit(&gate, &signed(send("other"), root)).await, Ok(()));
        assert_eq!(
            admit(&gate, &signed(pb::SendMessageRequest::default(), alice)).await,
            Err("message is null.".into())
        );
        // Receive: the group and the topic.
        let receive = |group: &str, topic: &str| pb::ReceiveMessageRequest {
            group: resource(group),
            message_queue: Some(pb::MessageQueue {
                topic: resource(topic),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            admit(&gate, &signed(receive("g", "orders"), alice)).await,
            Ok(())
        );
        assert!(
            admit(&gate, &signed(receive("h", "orders"), alice))
                .await
                .unwrap_err()
                .contains("Group:h")
        );
        // A producer's heartbeat names nothing; a consumer's names its group.
        let heartbeat = |kind: ClientType, group: &str| pb::HeartbeatRequest {
            group: resource(group),
            client_type: kind.into(),
        };
        assert_eq!(
            admit(&gate, &signed(heartbeat(ClientType::Producer, "h"), alice)).await,
            Ok(())
        );
        assert!(
            admit(
                &gate,
                &signed(heartbeat(ClientType::SimpleConsumer, "h"), alice)
            )
            .await
            .is_err()
        );
        // Telemetry settings: each published topic.
        let settings = |topics: &[&str]| pb::TelemetryCommand {
            status: None,
            command: Some(Command::Settings(pb::Settings {
                pub_sub: Some(PubSub::Publishing(pb::Publishing {
                    topics: topics.iter().filter_map(|t| resource(t)).collect(),
                    ..Default::default()
                })),
                ..Default::default()
            })),
        };
        assert_eq!(
            admit(&gate, &signed(settings(&["orders"]), alice)).await,
            Ok(())
        );
        assert!(
            admit(&gate, &signed(settings(&["orders", "other"]), alice))
                .await
                .unwrap_err()
                .contains("Topic:other")
        );
        // Authentication still comes first.
        assert_eq!(
            admit(&gate, &signed(send("orders"), Some(("alice", "guess")))).await,
            Err("check signature failed.".into())
        );
    }

    #[tokio::test]
    async fn whitelisted_calls_pass() {
        let config = AuthConfig {
            authentication_enabled: true,
            authorization_enabled: true,
            authentication_whitelist: Some("apache.rocketmq.v2.QueryRouteRequest".into()),
            authorization_whitelist: Some("apache.rocketmq.v2.QueryRouteRequest".into()),
            ..AuthConfig::default()
        };
        let gate = Gate::new(&config, local()).unwrap();
        let route = pb::QueryRouteRequest {
            topic: resource("other"),
            endpoints: None,
        };
        assert_eq!(admit(&gate, &signed(route, None)).await, Ok(()));
        assert!(admit(&gate, &signed(send("orders"), None)).await.is_err());
        assert!(Gate::new(&AuthConfig::default(), local()).is_none());
    }

    /// A cluster of one broker answering AUTH_GET_USER / AUTH_GET_ACL from `store`.
    #[derive(Debug)]
    struct Cluster {
        store: Arc<MetadataStore>,
        asked: Mutex<Vec<i32>>,
    }

    impl Backend for Cluster {
        async fn invoke(
            &self,
            target: Target,
            request: RemotingCommand,
            _timeout: Duration,
        ) -> Result<RemotingCommand, BackendError> {
            self.asked.lock().push(request.code());
            if target == Target::Namesrv {
                let route = TopicRouteData {
                    queue_datas: vec![QueueData {
                        broker_name: "b".into(),
                        read_queue_nums: 1,
                        write_queue_nums: 1,
                        perm: 6,
                        topic_sys_flag: 0,
                    }],
                    broker_datas: vec![BrokerData {
                        cluster: "DefaultCluster".into(),
                        broker_name: "b".into(),
                        broker_addrs: [(0, "10.0.0.1:10911".to_owned())].into_iter().collect(),
                        ..BrokerData::default()
                    }],
                    ..TopicRouteData::default()
                };
                let body = fastjson::to_vec(&route, fastjson::KeyStyle::Standard).unwrap();
                return Ok(RemotingCommand::response(ResponseCode::Success, None).with_body(body));
            }
            assert_eq!(target, Target::Broker("10.0.0.1:10911".into()));
            Ok(auth::admin::handle(&self.store, &request).unwrap())
        }

        fn serve_inbound(&self, _: Arc<dyn Inbound>) {}
    }

    #[tokio::test]
    async fn cluster_mode_reads_users_from_a_broker_and_caches_them() {
        let cluster = Arc::new(Cluster {
            store: store(),
            asked: Mutex::new(Vec::new()),
        });
        let users = Arc::new(BrokerUsers::new(
            Arc::clone(&cluster),
            "DefaultCluster",
            Duration::from_secs(60),
        ));
        let gate = gate(true, true, users);
        let alice = Some(("alice", "alice-secret"));
        assert_eq!(admit(&gate, &signed(send("orders"), alice)).await, Ok(()));
        assert!(
            admit(&gate, &signed(send("other"), alice))
                .await
                .unwrap_err()
                .contains("no matched policies")
        );
        assert_eq!(
            admit(&gate, &signed(send("orders"), Some(("alice", "guess")))).await,
            Err("check signature failed.".into())
        );
        assert_eq!(
            admit(&gate, &signed(send("orders"), Some(("carol", "x")))).await,
            Err("User:carol is not found.".into())
        );
        let asked = cluster.asked.lock().clone();
        let get_user = RequestCode::AuthGetUser.code();
        let get_acl = RequestCode::AuthGetAcl.code();
        // alice once (user + ACL), carol once (user only): cached in between.
        assert_eq!(
            asked.iter().filter(|c| **c == get_user).count(),
            2,
            "{asked:?}"
        );
        assert_eq!(
            asked.iter().filter(|c| **c == get_acl).count(),
            1,
            "{asked:?}"
        );
    }
}
