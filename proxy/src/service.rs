//! The `apache.rocketmq.v2.MessagingService` on top of a [`Backend`]: RocketMQ 5's gRPC
//! protocol, as Apache's proxy serves it.
//!
//! - QueryRoute: the topic's queues from the name server, each broker's endpoints replaced by
//!   the proxy's own (the client keeps talking to the proxy), or in local mode by that
//!   broker's own gRPC endpoint ([`Mode`]), the accepted message types from the topic's
//!   `message.type`.
//! - Telemetry: the client's settings are kept and answered with the server's
//!   ([`crate::settings`]; a consumer's FIFO flag and attempts from its group:
//!   [`crate::consume`]); the stream stays open for the commands the server sends: a
//!   broker's transaction check as a `RecoverOrphanedTransactionCommand` to one producer of
//!   the group ([`crate::transaction`]; the brokers' requests reach it through
//!   [`Backend::serve_inbound`], given when the service is made); in local mode the broker's
//!   questions to one client ([`crate::relay`]), whose answers (`ThreadStackTrace`,
//!   `VerifyMessageResult`) come back on the stream.
//! - Heartbeat / NotifyClientTermination: answered by the client type its settings named. A
//!   producer (settings, heartbeat) produces for the groups named as its topics; as Apache's
//!   cluster mode, the proxy registers the transactional ones with their brokers (HEART_BEAT,
//!   for the check-backs) and unregisters a group whose last producer terminated or lost its
//!   stream (UNREGISTER_CLIENT). In local mode every client is also registered with the
//!   broker on a connection of its own ([`crate::presence`]), so the broker lists it and asks
//!   it (thread stacks, a message to verify: [`crate::relay`]); in cluster mode POP needs no
//!   consumer heartbeat and brokers do not learn of gRPC clients, as with Apache's proxy.
//! - SendMessage: each message converted ([`crate::convert`]), checked against the topic's
//!   type, sent to the chosen queue's master with SEND_MESSAGE_V2 (SEND_BATCH_MESSAGE for
//!   several), the answer mapped to result entries. A transactional message is a half
//!   message; where it went is recorded for its EndTransaction.
//! - EndTransaction: commit or rollback at the broker that holds the half message
//!   ([`crate::transaction`]).
//! - ReceiveMessage, AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue,
//!   QueryAssignment: delegated to [`crate::consume`] (POP_MESSAGE, ACK_MESSAGE,
//!   CHANGE_MESSAGE_INVISIBLETIME, CONSUMER_SEND_MSG_BACK; assignments from the route).
//!
//! Every other rpc answers `NOT_IMPLEMENTED` in its response's status (the protocol's way,
//! the gRPC call itself succeeds), never a pretended success.
//!
//! Failures of a call are in the response's status ([`Refusal`]); only a malformed telemetry
//! stream ends with a gRPC error, as Apache's does.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use remoting::protocol::constants::system;
use remoting::protocol::timer::{
    RecallHandle, RecallMessageRequestHeader, RecallMessageResponseHeader,
};
use tokio::sync::mpsc;
use tonic::codegen::tokio_stream::{self, wrappers::ReceiverStream};
use tonic::{Request, Response, Status, Streaming};
use tracing::{debug, info, warn};

use crate::backend::{Backend, ClientAnswer, Inbound, Target};
use crate::clock::now_ms;
use crate::config::ProxyConfig;
use crate::consume::Consumers;
use crate::convert::{self, Limits, Outgoing};
use crate::local::Mode;
use crate::metadata::{TopicMessageType, TopicTypes};
use crate::pb::messaging_service_server::MessagingService;
use crate::pb::{self, ClientType, Code, settings::PubSub, telemetry_command::Command};
use crate::presence;
use crate::relay::{self, Relay};
use crate::resource::{check_group, check_topic};
use crate::route::Routes;
use crate::settings::{self, ClientSettings};
use crate::status::{self, Refusal};
use crate::transaction::Transactions;

/// The `x-mq-client-id` header: who a call is from.
pub const CLIENT_ID: &str = "x-mq-client-id";
/// The `x-mq-language` header.
pub const LANGUAGE: &str = "x-mq-language";
/// The `x-mq-client-version` header.
pub const CLIENT_VERSION: &str = "x-mq-client-version";
/// Telemetry commands waiting to be written to one client.
const TELEMETRY_BUFFER: usize = 16;
/// How often silent clients are looked for (Apache's 10 s).
const EXPIRY_SCAN: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a RECALL_MESSAGE may take (Apache's 2 s).
const RECALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
/// How long a client's registration with the broker may take (local mode).
const REGISTER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// What a call says about its client.
#[derive(Debug, Clone, Default)]
struct Caller {
    client_id: String,
    language: String,
    version: String,
    peer: Option<SocketAddr>,
}

impl Caller {
    fn of<T>(request: &Request<T>) -> Self {
        let header = |name: &str| {
            request
                .metadata()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        Caller {
            client_id: header(CLIENT_ID),
            language: header(LANGUAGE),
            version: header(CLIENT_VERSION),
            peer: request.remote_addr(),
        }
    }

    /// The client id, required on every call.
    fn require_id(&self) -> Result<&str, Refusal> {
        if self.client_id.trim().is_empty() {
            return Err(Refusal::new(
                Code::ClientIdRequired,
                "client id cannot be empty",
            ));
        }
        Ok(&self.client_id)
    }
}

/// The gRPC endpoint: one per proxy, shared by every call (and by the tasks serving
/// telemetry streams).
#[derive(Debug)]
pub struct MessagingProxy<B> {
    shared: Arc<Shared<B>>,
}

/// What every call of the endpoint works with.
#[derive(Debug)]
struct Shared<B> {
    backend: Arc<B>,
    routes: Arc<Routes<B>>,
    types: TopicTypes<B>,
    consumers: Consumers<B>,
    clients: ClientSettings,
    /// Each client's open telemetry stream: where server commands to it go.
    telemetry: Mutex<HashMap<String, mpsc::Sender<Result<pb::TelemetryCommand, Status>>>>,
    /// Half messages, transactional producer groups, check-backs.
    transactions: Arc<Transactions<B>>,
    config: ProxyConfig,
    limits: Limits,
    /// The port clients reach this proxy on, put in QueryRoute's endpoints.
    port: u16,
    /// Cluster or local mode.
    mode: Mode,
    /// Checks each telemetry command when authentication or authorization is on (the other
    /// calls are checked before they reach the service: [`crate::auth::Authenticated`]).
    gate: std::sync::OnceLock<Arc<crate::auth::Gate>>,
    /// The broker's questions to clients waiting for their answers (local mode).
    relay: Relay,
}

impl<B: Backend> MessagingProxy<B> {
    /// The service over `backend` in cluster mode, advertising `port` as its own in routes.
    #[must_use]
    pub fn new(backend: B, config: ProxyConfig, port: u16) -> Self {
        Self::with_mode(backend, config, port, Mode::Cluster)
    }

    /// The service over `backend` in `mode`, serving on `port`.
    #[must_use]
    pub fn with_mode(backend: B, config: ProxyConfig, port: u16, mode: Mode) -> Self {
        let backend = Arc::new(backend);
        let routes = Arc::new(Routes::with_mode(Arc::clone(&backend), mode.clone()));
        let transactions = Arc::new(Transactions::new(
            Arc::clone(&backend),
            Arc::clone(&routes),
            &config,
        ));
        Transactions::start(&transactions);
        let shared = Arc::new(Shared {
            types: TopicTypes::new(Arc::clone(&backend), Arc::clone(&routes)),
            consumers: Consumers::new(Arc::clone(&backend), Arc::clone(&routes), config.clone()),
            backend,
            routes,
            clients: ClientSettings::new(),
            telemetry: Mutex::new(HashMap::new()),
            transactions,
            limits: config.limits(),
            config,
            port,
            mode,
            gate: std::sync::OnceLock::new(),
            relay: Relay::new(),
        });
        // The brokers' check-backs come through the backend.
        shared.backend.serve_inbound(Arc::new(CheckBacks {
            shared: Arc::downgrade(&shared),
        }));
        Shared::start_expiry(&shared);
        MessagingProxy { shared }
    }

    /// The same service, checking each telemetry command with `gate` (set once).
    #[must_use]
    pub fn with_gate(self, gate: Arc<crate::auth::Gate>) -> Self {
        if self.shared.gate.set(gate).is_err() {
            debug!("telemetry gate already set");
        }
        self
    }

    /// Clients that reported their settings and did not terminate.
    #[must_use]
    pub fn clients(&self) -> usize {
        self.shared.clients.len()
    }
}

impl<B: Backend> Shared<B> {
    /// Every [`EXPIRY_SCAN`], forgets the clients gone silent (Apache's
    /// `scanNotActiveChannel`): neither settings nor a heartbeat for `channelExpiredTimeout`,
    /// and no open telemetry stream. Without a runtime (unit tests of the conversions) nothing
    /// expires.
    fn start_expiry(this: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak = Arc::downgrade(this);
        let idle = std::time::Duration::from_millis(this.config.channel_expired_timeout);
        runtime.spawn(async move {
            let mut scan = tokio::time::interval(EXPIRY_SCAN);
            scan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                scan.tick().await;
                let Some(this) = weak.upgrade() else { break };
                let gone = this
                    .clients
                    .expire(idle, |id| this.telemetry.lock().contains_key(id));
                for id in gone {
                    debug!(client = id, "client expired");
                    this.transactions.unregister_client(&id);
                    this.backend.client_gone(&id);
                }
            }
        });
    }

    /// `client_id`'s stream `out` ended: forget it, unless a newer stream replaced it.
    fn forget_stream(
        &self,
        client_id: &str,
        out: &mpsc::Sender<Result<pb::TelemetryCommand, Status>>,
    ) {
        let mut streams = self.telemetry.lock();
        if streams.get(client_id).is_some_and(|s| s.same_channel(out)) {
            streams.remove(client_id);
            drop(streams);
            // Without a stream it cannot be asked about a transaction, nor anything else.
            self.transactions.unregister_client(client_id);
            self.backend.client_gone(client_id);
        }
    }

    async fn query_route(
        &self,
        caller: &Caller,
        request: &pb::QueryRouteRequest,
    ) -> Result<Vec<pb::MessageQueue>, Refusal> {
        caller.require_id()?;
        let topic = check_topic(request.topic.as_ref())?;
        let route = self.routes.get(topic).await?;
        let kind = self.types.get(topic).await;
        let resource = request.topic.clone().unwrap_or_default();
        if let Mode::Local(_) = self.mode {
            // Every broker's own endpoint: its host, our port.
            return Ok(convert::message_queues_at(
                &route,
                &resource,
                kind,
                |addr| convert::broker_endpoints(addr, self.port),
            ));
        }
        // The addresses the client reached us at, with our port (Apache's default:
        // `useEndpointPortFromRequest=false`).
        let mut endpoints = request.endpoints.clone().unwrap_or_default();
        for address in &mut endpoints.addresses {
            address.port = i32::from(self.port);
        }
        Ok(convert::message_queues(&route, &resource, &endpoints, kind))
    }

    async fn heartbeat(
        &self,
        caller: &Caller,
        request: &pb::HeartbeatRequest,
    ) -> Result<(), Refusal> {
        let id = caller.require_id()?;
        let Some(settings) = self.clients.get(id) else {
            return Err(Refusal::new(
                Code::UnrecognizedClientType,
                "cannot find client settings for this client",
            ));
        };
        self.clients.touch(id);
        let group = match settings.client_type() {
            ClientType::Producer => {
                self.transactions
                    .register_producer(id, published_topics(&settings));
                None
            }
            ClientType::PushConsumer | ClientType::SimpleConsumer => {
                Some(check_group(request.group.as_ref())?)
            }
            other => {
                return Err(Refusal::new(
                    Code::UnrecognizedClientType,
                    other.as_str_name(),
                ));
            }
        };
        self.register(caller, &settings, group).await;
        Ok(())
    }

    /// Registers the client with the broker on its own connection (local mode:
    /// [`crate::presence`]); a failure is logged, the client's call goes on (the next
    /// heartbeat tries again).
    async fn register(&self, caller: &Caller, settings: &pb::Settings, group: Option<&str>) {
        if self.mode.local().is_none() {
            return;
        }
        let who = presence::Who {
            client_id: &caller.client_id,
            language: &caller.language,
            version: &caller.version,
        };
        let Some(request) = presence::heartbeat(&who, settings, group, now_ms()) else {
            return;
        };
        let sent = self
            .backend
            .invoke_as_client(&caller.client_id, request, REGISTER_TIMEOUT)
            .await;
        match sent {
            Some(Ok(r)) if r.code() == remoting::ResponseCode::Success.code() => {}
            Some(Ok(r)) => warn!(
                client = caller.client_id,
                code = r.code(),
                remark = r.remark().unwrap_or_default(),
                "the broker refused the client's registration"
            ),
            Some(Err(e)) => {
                warn!(client = caller.client_id, error = %e, "client registration failed")
            }
            None => {}
        }
    }

    fn terminate(
        &self,
        caller: &Caller,
        request: &pb::NotifyClientTerminationRequest,
    ) -> Result<(), Refusal> {
        let id = caller.require_id()?;
        self.telemetry.lock().remove(id);
        self.backend.client_gone(id);
        let Some(settings) = self.clients.remove(id) else {
            return Err(Refusal::new(
                Code::UnrecognizedClientType,
                "cannot find client settings for this client",
            ));
        };
        match settings.client_type() {
            ClientType::Producer => {
                self.transactions.unregister_client(id);
                Ok(())
            }
            ClientType::PushConsumer | ClientType::SimpleConsumer => {
                check_group(request.group.as_ref()).map(|_| ())
            }
            other => Err(Refusal::new(
                Code::UnrecognizedClientType,
                other.as_str_name(),
            )),
        }
    }

    async fn send(
        &self,
        caller: &Caller,
        request: &pb::SendMessageRequest,
    ) -> Result<Vec<pb::SendResultEntry>, Refusal> {
        caller.require_id()?;
        let Some(first) = request.messages.first() else {
            return Err(Refusal::new(Code::MessageCorrupted, "no message to send"));
        };
        let topic = check_topic(first.topic.as_ref())?.to_owned();
        let now = now_ms();
        let peer = caller.peer.map(|p| p.to_string());
        let mut messages: Vec<Outgoing> = Vec::with_capacity(request.messages.len());
        for m in &request.messages {
            if m.topic != first.topic {
                return Err(Refusal::new(
                    Code::MessageCorrupted,
                    "topic in message is not same",
                ));
            }
            // The topic's name is the producer group, as Apache's proxy has it (the group a
            // transaction's check-back goes to).
            messages.push(convert::outgoing(
                m,
                &topic,
                peer.as_deref(),
                now,
                &self.limits,
            )?);
        }
        let kind = messages[0].kind();
        let route = self.routes.get(&topic).await?;
        let retry_or_dlq = topic.starts_with(system::RETRY_GROUP_TOPIC_PREFIX)
            || topic.starts_with(system::DLQ_GROUP_TOPIC_PREFIX);
        if self.config.enable_topic_message_type_check && !retry_or_dlq {
            self.types.get(&topic).await.check(kind)?;
        }
        // Only a single message keeps its group's queue (a batch goes round robin, as
        // Apache's does).
        let sharding = match messages.as_slice() {
            [one] => one.message_group.as_deref(),
            _ => None,
        };
        let Some(queue) = route.select(sharding).cloned() else {
            return Err(Refusal::new(Code::Forbidden, "no writable queue"));
        };
        let command = convert::send_request(&messages, &topic, queue.queue_id, now)?;
        debug!(topic, broker = %queue.broker_name, queue = queue.queue_id, messages = messages.len(), "send");
        let response = match self
            .backend
            .invoke(
                Target::Broker(queue.addr.clone()),
                command,
                self.config.send_timeout(),
            )
            .await
        {
            Ok(r) => r,
            Err(e) => {
                // The broker may be gone: the next send asks the name server again.
                self.routes.invalidate(&topic);
                warn!(topic, broker = %queue.addr, error = %e, "send failed");
                return Err(e.into());
            }
        };
        let entries = convert::send_results(&messages, &response)?;
        if kind == TopicMessageType::Transaction {
            // The producer group is the topic.
            self.transactions
                .record_sent(&topic, &queue.addr, &topic, &response, &entries);
        }
        Ok(entries)
    }

    async fn end_transaction(
        &self,
        caller: &Caller,
        request: &pb::EndTransactionRequest,
    ) -> Result<(), Refusal> {
        caller.require_id()?;
        let topic = check_topic(request.topic.as_ref())?;
        self.transactions.end(topic, request).await
    }

    /// RecallMessage (RocketMQ 5.3.2+): RECALL_MESSAGE to the master of the broker the handle
    /// names, for a DELAY topic only (`enableTopicMessageTypeCheck`), as Apache's
    /// `ProducerProcessor.recallMessage`; the recalled message's id.
    async fn recall(
        &self,
        caller: &Caller,
        request: &pb::RecallMessageRequest,
    ) -> Result<String, Refusal> {
        caller.require_id()?;
        let topic = check_topic(request.topic.as_ref())?;
        if self.config.enable_topic_message_type_check {
            self.types.get(topic).await.check(TopicMessageType::Delay)?;
        }
        let handle = RecallHandle::decode(&request.recall_handle)
            .map_err(|e| Refusal::new(Code::InternalServerError, e.to_string()))?;
        let route = self.routes.get(topic).await?;
        let Some(addr) = route.master_of(&handle.broker_name) else {
            return Err(Refusal::new(
                Code::InternalServerError,
                format!("no master of broker {} found", handle.broker_name),
            ));
        };
        let header = RecallMessageRequestHeader {
            producer_group: None,
            topic: topic.to_owned(),
            recall_handle: request.recall_handle.clone(),
            broker_name: Some(handle.broker_name.clone()),
        };
        let response = self
            .backend
            .invoke(
                Target::Broker(addr.to_owned()),
                remoting::RemotingCommand::request_with(
                    remoting::RequestCode::RecallMessage,
                    &header,
                ),
                RECALL_TIMEOUT,
            )
            .await?;
        if response.code() != remoting::ResponseCode::Success.code() {
            return Err(Refusal::from_response(response.code(), response.remark()));
        }
        let answered: RecallMessageResponseHeader = response
            .decode_header()
            .map_err(|e| Refusal::new(Code::InternalServerError, e.to_string()))?;
        Ok(answered.msg_id.unwrap_or_default())
    }

    /// Handles one command of `client_id`'s telemetry stream; an error ends the stream.
    async fn on_telemetry(
        &self,
        caller: &Caller,
        command: pb::TelemetryCommand,
        out: &mpsc::Sender<Result<pb::TelemetryCommand, Status>>,
    ) -> Result<Option<pb::TelemetryCommand>, Status> {
        match command.command {
            Some(Command::Settings(reported)) => {
                match &reported.pub_sub {
                    Some(PubSub::Publishing(p)) => {
                        for t in &p.topics {
                            check_topic(Some(t)).map_err(|r| telemetry_error(&r))?;
                        }
                    }
                    Some(PubSub::Subscription(s)) => {
                        check_group(s.group.as_ref()).map_err(|r| telemetry_error(&r))?;
                    }
                    None => {
                        return Err(Status::invalid_argument(
                            "there is no publishing or subscription data in settings",
                        ));
                    }
                }
                let id = caller.client_id.as_str();
                let first = self.clients.get(id).is_none();
                self.clients.update(id, reported.clone());
                self.telemetry.lock().insert(id.to_owned(), out.clone());
                if reported.client_type() == ClientType::Producer {
                    self.transactions
                        .register_producer(id, published_topics(&reported));
                }
                if first {
                    info!(
                        client = id,
                        language = caller.language,
                        version = caller.version,
                        kind = reported.client_type().as_str_name(),
                        "client settings"
                    );
                }
                let group = match &reported.pub_sub {
                    Some(PubSub::Subscription(s)) => s.group.as_ref().map(|g| g.name.as_str()),
                    _ => None,
                };
                self.register(caller, &reported, group).await;
                let mut answer = settings::answer(&reported, &self.config);
                // A consumer's FIFO flag and attempts are its group's.
                self.consumers.merge_group(&mut answer).await;
                Ok(Some(pb::TelemetryCommand {
                    status: Some(status::ok()),
                    command: Some(Command::Settings(answer)),
                }))
            }
            // Answers to the broker's questions ([`crate::relay`]).
            Some(answer @ (Command::ThreadStackTrace(_) | Command::VerifyMessageResult(_))) => {
                self.relay.on_answer(command.status.as_ref(), &answer);
                Ok(None)
            }
            other => {
                debug!(client = caller.client_id, command = ?other.map(|c| std::mem::discriminant(&c)), "telemetry command ignored");
                Ok(None)
            }
        }
    }
}

/// How a refused telemetry command ends the stream (Apache: INVALID_ARGUMENT for the 400
/// codes, INTERNAL for the others).
fn telemetry_error(refusal: &Refusal) -> Status {
    let message = format!(
        "process client telemetryCommand failed. {}",
        refusal.message
    );
    let code = refusal.code as i32;
    if (Code::BadRequest as i32..Code::InternalError as i32).contains(&code) {
        Status::invalid_argument(message)
    } else {
        Status::internal(message)
    }
}

/// What the call's deadline (`grpc-timeout`: digits and a unit) leaves, if it has one.
fn grpc_timeout<T>(request: &Request<T>) -> Option<std::time::Duration> {
    let text = request.metadata().get("grpc-timeout")?.to_str().ok()?;
    parse_grpc_timeout(text)
}

fn parse_grpc_timeout(text: &str) -> Option<std::time::Duration> {
    use std::time::Duration;
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

fn not_implemented(what: &str) -> Option<pb::Status> {
    Some(Refusal::not_implemented(what).status())
}

type Reply<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl<B: Backend> MessagingService for MessagingProxy<B> {
    async fn query_route(
        &self,
        request: Request<pb::QueryRouteRequest>,
    ) -> Reply<pb::QueryRouteResponse> {
        let caller = Caller::of(&request);
        let response = match self.shared.query_route(&caller, request.get_ref()).await {
            Ok(message_queues) => pb::QueryRouteResponse {
                status: Some(status::ok()),
                message_queues,
            },
            Err(r) => pb::QueryRouteResponse {
                status: Some(r.status()),
                message_queues: Vec::new(),
            },
        };
        Ok(Response::new(response))
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Reply<pb::HeartbeatResponse> {
        let caller = Caller::of(&request);
        let status = match self.shared.heartbeat(&caller, request.get_ref()).await {
            Ok(()) => status::ok(),
            Err(r) => r.status(),
        };
        Ok(Response::new(pb::HeartbeatResponse {
            status: Some(status),
        }))
    }

    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Reply<pb::SendMessageResponse> {
        let caller = Caller::of(&request);
        let response = match self.shared.send(&caller, request.get_ref()).await {
            Ok(entries) => pb::SendMessageResponse {
                status: Some(convert::overall_status(&entries)),
                entries,
            },
            Err(r) => {
                debug!(
                    client = caller.client_id,
                    code = r.code.as_str_name(),
                    message = r.message,
                    "send refused"
                );
                pb::SendMessageResponse {
                    status: Some(r.status()),
                    entries: Vec::new(),
                }
            }
        };
        Ok(Response::new(response))
    }

    async fn query_assignment(
        &self,
        request: Request<pb::QueryAssignmentRequest>,
    ) -> Reply<pb::QueryAssignmentResponse> {
        let caller = Caller::of(&request);
        let request = request.get_ref();
        let answer = match caller.require_id() {
            Ok(_) => {
                // The addresses the client reached us at, with our port (as QueryRoute's).
                let mut endpoints = request.endpoints.clone().unwrap_or_default();
                for address in &mut endpoints.addresses {
                    address.port = i32::from(self.shared.port);
                }
                self.shared
                    .consumers
                    .query_assignment(request, &endpoints)
                    .await
            }
            Err(r) => Err(r),
        };
        Ok(Response::new(match answer {
            Ok(assignments) => pb::QueryAssignmentResponse {
                status: Some(status::ok()),
                assignments,
            },
            Err(r) => pb::QueryAssignmentResponse {
                status: Some(r.status()),
                assignments: Vec::new(),
            },
        }))
    }

    type ReceiveMessageStream =
        tokio_stream::Iter<std::vec::IntoIter<Result<pb::ReceiveMessageResponse, Status>>>;

    async fn receive_message(
        &self,
        request: Request<pb::ReceiveMessageRequest>,
    ) -> Reply<Self::ReceiveMessageStream> {
        let caller = Caller::of(&request);
        let remaining = grpc_timeout(&request);
        let responses = match caller.require_id() {
            Ok(id) => {
                let settings = self.shared.clients.get(id);
                self.shared
                    .consumers
                    .receive(
                        settings.as_ref(),
                        &caller.version,
                        remaining,
                        request.get_ref(),
                        now_ms(),
                    )
                    .await
            }
            Err(r) => vec![pb::ReceiveMessageResponse {
                content: Some(pb::receive_message_response::Content::Status(r.status())),
            }],
        };
        Ok(Response::new(tokio_stream::iter(
            responses.into_iter().map(Ok).collect::<Vec<_>>(),
        )))
    }

    async fn ack_message(
        &self,
        request: Request<pb::AckMessageRequest>,
    ) -> Reply<pb::AckMessageResponse> {
        let caller = Caller::of(&request);
        let response = match caller.require_id() {
            Ok(_) => self.shared.consumers.ack(request.get_ref(), now_ms()).await,
            Err(r) => pb::AckMessageResponse {
                status: Some(r.status()),
                entries: Vec::new(),
            },
        };
        Ok(Response::new(response))
    }

    async fn forward_message_to_dead_letter_queue(
        &self,
        request: Request<pb::ForwardMessageToDeadLetterQueueRequest>,
    ) -> Reply<pb::ForwardMessageToDeadLetterQueueResponse> {
        let caller = Caller::of(&request);
        let status = match caller.require_id() {
            Ok(_) => {
                self.shared
                    .consumers
                    .forward_to_dlq(request.get_ref(), now_ms())
                    .await
            }
            Err(r) => r.status(),
        };
        Ok(Response::new(pb::ForwardMessageToDeadLetterQueueResponse {
            status: Some(status),
        }))
    }

    type PullMessageStream =
        tokio_stream::Iter<std::vec::IntoIter<Result<pb::PullMessageResponse, Status>>>;

    async fn pull_message(
        &self,
        _: Request<pb::PullMessageRequest>,
    ) -> Reply<Self::PullMessageStream> {
        let status = not_implemented("PullMessage").unwrap_or_default();
        Ok(Response::new(tokio_stream::iter(vec![Ok(
            pb::PullMessageResponse {
                content: Some(pb::pull_message_response::Content::Status(status)),
            },
        )])))
    }

    async fn update_offset(
        &self,
        _: Request<pb::UpdateOffsetRequest>,
    ) -> Reply<pb::UpdateOffsetResponse> {
        Ok(Response::new(pb::UpdateOffsetResponse {
            status: not_implemented("UpdateOffset"),
        }))
    }

    async fn get_offset(&self, _: Request<pb::GetOffsetRequest>) -> Reply<pb::GetOffsetResponse> {
        Ok(Response::new(pb::GetOffsetResponse {
            status: not_implemented("GetOffset"),
            ..Default::default()
        }))
    }

    async fn query_offset(
        &self,
        _: Request<pb::QueryOffsetRequest>,
    ) -> Reply<pb::QueryOffsetResponse> {
        Ok(Response::new(pb::QueryOffsetResponse {
            status: not_implemented("QueryOffset"),
            ..Default::default()
        }))
    }

    async fn end_transaction(
        &self,
        request: Request<pb::EndTransactionRequest>,
    ) -> Reply<pb::EndTransactionResponse> {
        let caller = Caller::of(&request);
        let status = match self
            .shared
            .end_transaction(&caller, request.get_ref())
            .await
        {
            Ok(()) => status::ok(),
            Err(r) => {
                debug!(
                    client = caller.client_id,
                    code = r.code.as_str_name(),
                    message = r.message,
                    "end transaction refused"
                );
                r.status()
            }
        };
        Ok(Response::new(pb::EndTransactionResponse {
            status: Some(status),
        }))
    }

    type TelemetryStream = ReceiverStream<Result<pb::TelemetryCommand, Status>>;

    async fn telemetry(
        &self,
        request: Request<Streaming<pb::TelemetryCommand>>,
    ) -> Reply<Self::TelemetryStream> {
        let caller = Caller::of(&request);
        if let Err(r) = caller.require_id() {
            return Err(telemetry_error(&r));
        }
        let (metadata, peer) = (request.metadata().clone(), request.remote_addr());
        let mut commands = request.into_inner();
        let (tx, rx) = mpsc::channel(TELEMETRY_BUFFER);
        // The stream is served by a task of its own, which needs the service: a handle
        // that owns what it uses.
        let this = TelemetryHandle { caller, out: tx };
        let service = Arc::clone(&self.shared);
        tokio::spawn(async move {
            loop {
                match commands.message().await {
                    Ok(Some(command)) => {
                        if let Some(gate) = service.gate.get() {
                            if let Err(r) = gate.admit_parts(&metadata, peer, &command).await {
                                // Apache answers a refused command on the stream, which stays open.
                                let refused = pb::TelemetryCommand {
                                    status: Some(r.status()),
                                    command: None,
                                };
                                if this.out.send(Ok(refused)).await.is_err() {
                                    break;
                                }
                                continue;
                            }
                        }
                        let answer = service.on_telemetry(&this.caller, command, &this.out).await;
                        let ended = answer.is_err();
                        let item = match answer {
                            Ok(None) => continue,
                            Ok(Some(reply)) => Ok(reply),
                            Err(status) => Err(status),
                        };
                        if this.out.send(item).await.is_err() || ended {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(status) => {
                        debug!(client = this.caller.client_id, %status, "telemetry stream broken");
                        break;
                    }
                }
            }
            service.forget_stream(&this.caller.client_id, &this.out);
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn notify_client_termination(
        &self,
        request: Request<pb::NotifyClientTerminationRequest>,
    ) -> Reply<pb::NotifyClientTerminationResponse> {
        let caller = Caller::of(&request);
        let status = match self.shared.terminate(&caller, request.get_ref()) {
            Ok(()) => status::ok(),
            Err(r) => r.status(),
        };
        Ok(Response::new(pb::NotifyClientTerminationResponse {
            status: Some(status),
        }))
    }

    async fn change_invisible_duration(
        &self,
        request: Request<pb::ChangeInvisibleDurationRequest>,
    ) -> Reply<pb::ChangeInvisibleDurationResponse> {
        let caller = Caller::of(&request);
        let answer = match caller.require_id() {
            Ok(_) => {
                self.shared
                    .consumers
                    .change_invisible(request.get_ref(), now_ms())
                    .await
            }
            Err(r) => Err(r),
        };
        Ok(Response::new(match answer {
            Ok(receipt_handle) => pb::ChangeInvisibleDurationResponse {
                status: Some(status::ok()),
                receipt_handle,
            },
            Err(r) => pb::ChangeInvisibleDurationResponse {
                status: Some(r.status()),
                receipt_handle: String::new(),
            },
        }))
    }

    async fn recall_message(
        &self,
        request: Request<pb::RecallMessageRequest>,
    ) -> Reply<pb::RecallMessageResponse> {
        let caller = Caller::of(&request);
        Ok(Response::new(
            match self.shared.recall(&caller, request.get_ref()).await {
                Ok(message_id) => pb::RecallMessageResponse {
                    status: Some(status::ok()),
                    message_id,
                },
                Err(r) => pb::RecallMessageResponse {
                    status: Some(r.status()),
                    message_id: String::new(),
                },
            },
        ))
    }

    async fn sync_lite_subscription(
        &self,
        _: Request<pb::SyncLiteSubscriptionRequest>,
    ) -> Reply<pb::SyncLiteSubscriptionResponse> {
        Ok(Response::new(pb::SyncLiteSubscriptionResponse {
            status: not_implemented("SyncLiteSubscription"),
        }))
    }
}

/// The topics a producer's settings publish: its producer groups.
fn published_topics(settings: &pb::Settings) -> impl Iterator<Item = &str> {
    let topics = match &settings.pub_sub {
        Some(PubSub::Publishing(p)) => p.topics.as_slice(),
        _ => &[],
    };
    topics.iter().map(|t| t.name.as_str())
}

/// Where the brokers' unasked requests go: their transaction checks, to a producer's
/// telemetry stream. Holds the service weakly (the backend that holds this is the service's).
#[derive(Debug)]
struct CheckBacks<B> {
    shared: Weak<Shared<B>>,
}

impl<B: Backend> Inbound for CheckBacks<B> {
    fn on_request(&self, broker: &str, request: remoting::RemotingCommand) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        if request.code() != i32::from(remoting::RequestCode::CheckTransactionState) {
            debug!(
                broker,
                code = request.code(),
                "request from a broker ignored"
            );
            return;
        }
        let stream_of = |client: &str| shared.telemetry.lock().get(client).cloned();
        shared.transactions.on_check(broker, &request, &stream_of);
    }

    fn on_client_request(
        &self,
        client_id: &str,
        broker: &str,
        request: remoting::RemotingCommand,
        answer: ClientAnswer,
    ) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        if !Relay::handles(request.code()) {
            self.on_request(broker, request);
            return;
        }
        let settings = shared.clients.get(client_id);
        let version = settings
            .as_ref()
            .and_then(|s| s.user_agent.as_ref())
            .map_or("", |ua| ua.version.as_str());
        let client = relay::Client {
            settings: settings.as_ref(),
            version,
        };
        let stream = shared.telemetry.lock().get(client_id).cloned();
        shared
            .relay
            .ask(client_id, &client, stream, &request, answer);
    }
}

/// One open telemetry stream: its client and where commands to it are written.
#[derive(Debug)]
struct TelemetryHandle {
    caller: Caller,
    out: mpsc::Sender<Result<pb::TelemetryCommand, Status>>,
}
