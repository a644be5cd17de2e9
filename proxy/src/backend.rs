//! The seam between the gRPC semantics and the transport to the RocketMQ cluster.
//!
//! Everything above this module speaks remoting commands only: a send is a SEND_MESSAGE_V2
//! request, a route is a GET_ROUTEINFO_BY_TOPIC, and what comes back is the broker's or name
//! server's response as it is. Two transports carry them:
//!
//! - cluster mode (`mqproxy`): [`ClusterBackend`], a [`RemotingClient`] to the name servers
//!   and brokers, as Apache's proxy in cluster mode talks to its cluster;
//! - local mode (inside `mqbroker`, [`crate::local::LocalBackend`]): the broker's own
//!   processors called in-process, with no socket in between. That is why the seam is a trait over commands rather than a
//!   set of typed calls: the broker already dispatches commands by code.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use remoting::client::ClientConfig;
use remoting::connection::RequestHandler;
use remoting::{Channel, RemotingClient, RemotingCommand, RemotingError};

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// A name server (the backend picks which).
    Namesrv,
    /// The broker at this `ip:port`.
    Broker(String),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Namesrv => f.write_str("name server"),
            Target::Broker(addr) => write!(f, "broker {addr}"),
        }
    }
}

/// A request that got no response.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// No name server is configured.
    #[error("no name server address is configured")]
    NoNamesrv,
    /// The target did not answer within the timeout.
    #[error("{target} did not answer within {timeout:?}")]
    Timeout {
        /// Where the request went.
        target: Target,
        /// The limit.
        timeout: Duration,
    },
    /// The target could not be reached or the connection broke.
    #[error("{target} unreachable: {source}")]
    Unreachable {
        /// Where the request went.
        target: Target,
        /// Cause.
        source: RemotingError,
    },
}

/// How a request the broker sent one gRPC client's own connection is answered (the broker
/// waits for it, as for a socket's answer).
pub struct ClientAnswer(Box<dyn FnOnce(RemotingCommand) + Send>);

impl ClientAnswer {
    /// An answer that `deliver`s the response.
    pub fn new(deliver: impl FnOnce(RemotingCommand) + Send + 'static) -> Self {
        ClientAnswer(Box::new(deliver))
    }

    /// Sends `response` to the broker.
    pub fn send(self, response: RemotingCommand) {
        (self.0)(response);
    }
}

impl fmt::Debug for ClientAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientAnswer")
    }
}

/// Where requests the cluster sends the proxy unasked go (a broker's
/// CHECK_TRANSACTION_STATE, oneway).
pub trait Inbound: Send + Sync + fmt::Debug + 'static {
    /// `request` came from the broker at `broker` (`ip:port` of the connection's far end).
    fn on_request(&self, broker: &str, request: RemotingCommand);

    /// `request` came from the broker at `broker` on the connection of gRPC client
    /// `client_id` ([`Backend::invoke_as_client`]); `answer` answers it. By default it is
    /// handled as any other ([`on_request`](Self::on_request)) and not answered.
    fn on_client_request(
        &self,
        client_id: &str,
        broker: &str,
        request: RemotingCommand,
        answer: ClientAnswer,
    ) {
        let _ = (client_id, answer);
        self.on_request(broker, request);
    }
}

/// Carries remoting requests to the cluster and brings back the responses.
///
/// A response with a failure code is a response (`Ok`); only a request that got no answer is
/// an error. Implementations must be cheap to share: the service holds one for its lifetime.
pub trait Backend: Send + Sync + fmt::Debug + 'static {
    /// Sends `request` to `target` and waits at most `timeout` for the response.
    fn invoke(
        &self,
        target: Target,
        request: RemotingCommand,
        timeout: Duration,
    ) -> impl Future<Output = Result<RemotingCommand, BackendError>> + Send;

    /// Hands every request the cluster sends unasked to `inbound` from now on (set once; a
    /// second call is ignored). Until then such requests are dropped, logged.
    fn serve_inbound(&self, inbound: Arc<dyn Inbound>);

    /// Sends `request` to the broker the proxy runs in on a connection of gRPC client
    /// `client_id`'s own, made on first use: the broker lists the client as a connection of
    /// its own and sends its requests for the client there
    /// ([`Inbound::on_client_request`]). `None` when the backend keeps no such connections
    /// (cluster mode: as with Apache's proxy, brokers do not learn of gRPC clients).
    fn invoke_as_client(
        &self,
        client_id: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> impl Future<Output = Option<Result<RemotingCommand, BackendError>>> + Send {
        let _ = (client_id, request, timeout);
        std::future::ready(None)
    }

    /// Client `client_id` is gone: its own connection, if any, closes, so the broker forgets
    /// it as it forgets a closed socket's clients.
    fn client_gone(&self, client_id: &str) {
        let _ = client_id;
    }
}

/// The [`RequestHandler`] of the cluster-mode client's connections: passes brokers' requests
/// to the [`Inbound`] once there is one.
#[derive(Debug, Default)]
struct InboundSlot(OnceLock<Arc<dyn Inbound>>);

impl RequestHandler for InboundSlot {
    fn on_request(&self, channel: &Channel, request: RemotingCommand) {
        let from = channel.peer_addr().to_string();
        match self.0.get() {
            Some(inbound) => inbound.on_request(&from, request),
            None => {
                tracing::warn!(broker = %from, code = request.code(), "request from a broker before the proxy serves any: dropped")
            }
        }
    }
}

/// Cluster mode: a remoting client to the name servers and brokers.
#[derive(Debug, Clone)]
pub struct ClusterBackend {
    client: RemotingClient,
    inbound: Arc<InboundSlot>,
    namesrv: Arc<[String]>,
    /// The name server asked first; moves on when one fails, so a dead one costs one
    /// timeout, not one per request.
    preferred: Arc<AtomicUsize>,
}

impl ClusterBackend {
    /// A backend for the name servers `namesrv` (`ip:port` each), its connections made with
    /// `config`.
    #[must_use]
    pub fn new(config: ClientConfig, namesrv: Vec<String>) -> Self {
        let inbound = Arc::new(InboundSlot::default());
        let handler: Arc<dyn RequestHandler> = inbound.clone();
        ClusterBackend {
            client: RemotingClient::with_handler(config, handler),
            inbound,
            namesrv: namesrv.into(),
            preferred: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The same backend, passing every request through `hook` before it goes out (the
    /// proxy's credentials for an ACL-enabled cluster: `innerClientAuthenticationCredentials`).
    #[must_use]
    pub fn with_hook(mut self, hook: Option<Arc<dyn remoting::client::RequestHook>>) -> Self {
        self.client = self.client.with_hook(hook);
        self
    }

    async fn invoke_addr(
        &self,
        target: Target,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, BackendError> {
        match self.client.invoke(addr, request, timeout).await {
            Ok(response) => Ok(response),
            Err(RemotingError::Timeout { .. }) => Err(BackendError::Timeout { target, timeout }),
            Err(source) => Err(BackendError::Unreachable { target, source }),
        }
    }
}

impl Backend for ClusterBackend {
    async fn invoke(
        &self,
        target: Target,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, BackendError> {
        match &target {
            Target::Broker(addr) => {
                let addr = addr.clone();
                self.invoke_addr(target, &addr, request, timeout).await
            }
            Target::Namesrv => {
                if self.namesrv.is_empty() {
                    return Err(BackendError::NoNamesrv);
                }
                let first = self.preferred.load(Ordering::Relaxed);
                let mut last = None;
                for i in 0..self.namesrv.len() {
                    let at = (first + i) % self.namesrv.len();
                    let addr = &self.namesrv[at];
                    match self
                        .invoke_addr(Target::Namesrv, addr, request.clone(), timeout)
                        .await
                    {
                        Ok(response) => {
                            self.preferred.store(at, Ordering::Relaxed);
                            return Ok(response);
                        }
                        Err(e) => {
                            tracing::debug!(namesrv = %addr, error = %e, "name server failed");
                            last = Some(e);
                        }
                    }
                }
                Err(last.unwrap_or(BackendError::NoNamesrv))
            }
        }
    }

    fn serve_inbound(&self, inbound: Arc<dyn Inbound>) {
        if self.inbound.0.set(inbound).is_err() {
            tracing::debug!("inbound requests already served");
        }
    }
}
