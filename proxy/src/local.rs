//! Local mode: the gRPC endpoint inside `mqbroker`, calling its own broker in-process.
//!
//! Apache runs local mode as the proxy and the broker in one JVM (`mqbroker --enable-proxy`,
//! `ProxyStartup -pm local`): requests for the broker go straight to its processors, and
//! only the name server and other brokers are reached over remoting. The same here:
//!
//! - [`LocalBackend`]: a request for this broker's own address goes through a
//!   [`LocalClient`] over the broker's request handler (`broker::server::dispatcher`), the
//!   very code a socket reaches, with no frame encoded; the name server and any other broker
//!   go through a [`ClusterBackend`], as in cluster mode. The broker's requests to the
//!   in-process client (CHECK_TRANSACTION_STATE to a producer that heartbeated through it)
//!   and other brokers' requests over remoting both reach the [`Inbound`]. Each gRPC client
//!   also gets an in-process connection of its own ([`Backend::invoke_as_client`]), on which
//!   it is registered with the broker ([`crate::presence`]) and on which the broker asks it
//!   ([`Inbound::on_client_request`]); it closes when the client goes.
//! - [`Mode`]: what differs in the semantics, as Apache's `LocalTopicRouteService` has it:
//!   QueryRoute answers each broker's own gRPC endpoint (its host, this endpoint's port:
//!   clients talk to every broker's endpoint directly), and sends go to this broker's queues
//!   only, so a message sent here is stored here. On a slave they reach the slave's store,
//!   which refuses them (SERVICE_NOT_AVAILABLE): never an answer that a message was stored
//!   when it was not.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use remoting::client::ClientConfig;
use remoting::connection::RequestHandler;
use remoting::local::LocalClient;
use remoting::{RemotingCommand, RemotingError};

use crate::backend::{Backend, BackendError, ClientAnswer, ClusterBackend, Inbound, Target};

/// The broker a local-mode endpoint runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalBroker {
    /// Its `brokerName`.
    pub name: String,
    /// Its address as registered with the name server (`brokerIP1:listenPort`).
    pub addr: String,
}

/// How the endpoint stands to the cluster (Apache's `proxyMode`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mode {
    /// A separate proxy: routes name the proxy itself, sends go to any master.
    #[default]
    Cluster,
    /// Inside this broker: routes name each broker's own endpoint, sends go to this broker.
    Local(LocalBroker),
}

impl Mode {
    /// The broker of local mode.
    #[must_use]
    pub fn local(&self) -> Option<&LocalBroker> {
        match self {
            Mode::Cluster => None,
            Mode::Local(broker) => Some(broker),
        }
    }
}

/// Where inbound requests go once the service serves them.
#[derive(Debug, Default)]
struct InboundSlot(OnceLock<Arc<dyn Inbound>>);

impl InboundSlot {
    fn deliver(&self, from: &str, request: RemotingCommand) {
        match self.0.get() {
            Some(inbound) => inbound.on_request(from, request),
            None => tracing::warn!(
                broker = from,
                code = request.code(),
                "request from the broker before the endpoint serves any: dropped"
            ),
        }
    }

    fn deliver_to_client(
        &self,
        client_id: &str,
        from: &str,
        request: RemotingCommand,
        answer: ClientAnswer,
    ) {
        match self.0.get() {
            Some(inbound) => inbound.on_client_request(client_id, from, request, answer),
            None => tracing::warn!(
                broker = from,
                client = client_id,
                code = request.code(),
                "request for a client before the endpoint serves any: dropped"
            ),
        }
    }
}

/// Local mode's transport (see the module docs). Clones share the connections.
#[derive(Clone)]
pub struct LocalBackend {
    broker: LocalBroker,
    local: Arc<LocalClient>,
    remote: ClusterBackend,
    inbound: Arc<InboundSlot>,
    /// The broker's request handler, for the clients' own connections.
    handler: Arc<dyn RequestHandler>,
    /// The address the in-process connections look to the broker as coming from.
    peer: SocketAddr,
    /// Each gRPC client's own connection ([`Backend::invoke_as_client`]).
    clients: Arc<Mutex<HashMap<String, Arc<LocalClient>>>>,
}

impl fmt::Debug for LocalBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalBackend")
            .field("broker", &self.broker)
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl LocalBackend {
    /// A backend for `broker`, whose request handler is `handler`, in a cluster of the name
    /// servers `namesrv`. The in-process connection looks to the broker like one from `peer`
    /// (the address the gRPC endpoint listens on). Must be called within a tokio runtime.
    #[must_use]
    pub fn new(
        broker: LocalBroker,
        handler: Arc<dyn RequestHandler>,
        peer: SocketAddr,
        config: ClientConfig,
        namesrv: Vec<String>,
    ) -> Self {
        let local = Arc::new(LocalClient::new(Arc::clone(&handler), peer));
        let inbound = Arc::new(InboundSlot::default());
        if let Some(mut requests) = local.server_requests() {
            let slot = Arc::clone(&inbound);
            let from = broker.addr.clone();
            tokio::spawn(async move {
                while let Some(request) = requests.recv().await {
                    slot.deliver(&from, request);
                }
            });
        }
        LocalBackend {
            broker,
            local,
            remote: ClusterBackend::new(config, namesrv),
            inbound,
            handler,
            peer,
            clients: Arc::default(),
        }
    }

    /// `client_id`'s own connection, made (and its requests routed to the inbound) on first
    /// use.
    fn client(&self, client_id: &str) -> Arc<LocalClient> {
        let mut clients = self.clients.lock();
        if let Some(c) = clients.get(client_id) {
            return Arc::clone(c);
        }
        let client = Arc::new(LocalClient::new(Arc::clone(&self.handler), self.peer));
        if let Some(mut requests) = client.server_requests() {
            let (slot, from, id) = (
                Arc::clone(&self.inbound),
                self.broker.addr.clone(),
                client_id.to_owned(),
            );
            // Weak: the task must not keep a gone client's connection alive.
            let answering = Arc::downgrade(&client);
            tokio::spawn(async move {
                while let Some(request) = requests.recv().await {
                    let answering = answering.clone();
                    let asked = request.clone();
                    let answer = ClientAnswer::new(move |response| {
                        if let Some(c) = answering.upgrade() {
                            c.answer(&asked, response);
                        }
                    });
                    slot.deliver_to_client(&id, &from, request, answer);
                }
            });
        }
        clients.insert(client_id.to_owned(), Arc::clone(&client));
        client
    }

    /// The same backend, its remoting requests (to the name server and other brokers)
    /// passed through `hook` first: the broker's `innerClientAuthenticationCredentials`, as
    /// its own requests to them are signed. In-process requests need none.
    #[must_use]
    pub fn with_hook(mut self, hook: Option<Arc<dyn remoting::client::RequestHook>>) -> Self {
        self.remote = self.remote.with_hook(hook);
        self
    }

    /// The broker it runs in.
    #[must_use]
    pub fn broker(&self) -> &LocalBroker {
        &self.broker
    }

    /// The mode a service over this backend runs in.
    #[must_use]
    pub fn mode(&self) -> Mode {
        Mode::Local(self.broker.clone())
    }

    /// Closes the in-process connections: the broker forgets the clients registered through
    /// them, as when a socket closes.
    pub fn close(&self) {
        self.local.close();
        for (_, client) in self.clients.lock().drain() {
            client.close();
        }
    }
}

impl Backend for LocalBackend {
    async fn invoke(
        &self,
        target: Target,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, BackendError> {
        match &target {
            Target::Broker(addr) if *addr == self.broker.addr => {
                match self.local.invoke(request, timeout).await {
                    Ok(response) => Ok(response),
                    Err(RemotingError::Timeout { .. }) => {
                        Err(BackendError::Timeout { target, timeout })
                    }
                    Err(source) => Err(BackendError::Unreachable { target, source }),
                }
            }
            _ => self.remote.invoke(target, request, timeout).await,
        }
    }

    fn serve_inbound(&self, inbound: Arc<dyn Inbound>) {
        self.remote.serve_inbound(Arc::clone(&inbound));
        if self.inbound.0.set(inbound).is_err() {
            tracing::debug!("inbound requests already served");
        }
    }

    async fn invoke_as_client(
        &self,
        client_id: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Option<Result<RemotingCommand, BackendError>> {
        let target = Target::Broker(self.broker.addr.clone());
        Some(
            match self.client(client_id).invoke(request, timeout).await {
                Ok(response) => Ok(response),
                Err(RemotingError::Timeout { .. }) => {
                    Err(BackendError::Timeout { target, timeout })
                }
                Err(source) => Err(BackendError::Unreachable { target, source }),
            },
        )
    }

    fn client_gone(&self, client_id: &str) {
        let gone = self.clients.lock().remove(client_id);
        if let Some(client) = gone {
            client.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use remoting::ResponseCode;
    use remoting::connection::Channel;
    use remoting::server::{self, Dispatcher, Processor, Reply, ServerConfig};

    use super::*;

    /// Answers every request with its code in the remark, and on code 39 also sends the
    /// client a request of its own (as a broker's check-back).
    struct Named(&'static str);

    impl Processor for Named {
        fn process(&self, channel: &Channel, request: RemotingCommand) -> Reply {
            if request.code() == 39 {
                let _ = channel.send(RemotingCommand::request(39));
            }
            Reply::Now(RemotingCommand::response(
                ResponseCode::Success,
                Some(format!("{} {}", self.0, request.code())),
            ))
        }
    }

    fn handler(name: &'static str) -> Arc<dyn RequestHandler> {
        let mut d = Dispatcher::default();
        d.set_default(Arc::new(Named(name)));
        Arc::new(d)
    }

    #[derive(Debug, Default)]
    struct Seen(Mutex<Vec<(String, i32)>>);

    impl Inbound for Seen {
        fn on_request(&self, broker: &str, request: RemotingCommand) {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((broker.to_owned(), request.code()));
        }
    }

    #[tokio::test]
    async fn own_address_in_process_others_over_remoting_and_check_backs_reach_the_inbound() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let other_addr = listener.local_addr().unwrap().to_string();
        let mut dispatcher = Dispatcher::default();
        dispatcher.set_default(Arc::new(Named("other")));
        let server = tokio::spawn(server::run(
            listener,
            dispatcher,
            ServerConfig::default(),
            std::future::pending(),
        ));
        let own = LocalBroker {
            name: "broker-a".into(),
            addr: "127.0.0.1:1".into(),
        };
        let backend = LocalBackend::new(
            own.clone(),
            handler("own"),
            SocketAddr::from(([127, 0, 0, 1], 8081)),
            ClientConfig::default(),
            vec![other_addr.clone()],
        );
        assert_eq!(backend.mode().local(), Some(&own));
        let t = Duration::from_secs(3);
        let ask = |target: Target, code: i32| {
            let backend = &backend;
            async move {
                let r = backend
                    .invoke(target, RemotingCommand::request(code), t)
                    .await
                    .unwrap();
                r.remark().unwrap_or_default().to_owned()
            }
        };
        // Port 1 has no listener: only the in-process path can answer it.
        assert_eq!(ask(Target::Broker(own.addr.clone()), 10).await, "own 10");
        assert_eq!(
            ask(Target::Broker(other_addr.clone()), 11).await,
            "other 11"
        );
        assert_eq!(ask(Target::Namesrv, 105).await, "other 105");

        let seen = Arc::new(Seen::default());
        backend.serve_inbound(seen.clone());
        assert_eq!(ask(Target::Broker(own.addr.clone()), 39).await, "own 39");
        assert_eq!(
            ask(Target::Broker(other_addr.clone()), 39).await,
            "other 39"
        );
        let deadline = tokio::time::Instant::now() + t;
        loop {
            let got = seen.0.lock().unwrap().clone();
            if got.len() == 2 {
                assert!(got.contains(&(own.addr.clone(), 39)), "{got:?}");
                assert!(
                    got.iter()
                        .any(|(from, code)| *code == 39 && *from != own.addr),
                    "{got:?}"
                );
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "check-backs: {got:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        backend.close();
        let closed = backend
            .invoke(
                Target::Broker(own.addr.clone()),
                RemotingCommand::request(1),
                t,
            )
            .await;
        assert!(
            matches!(closed, Err(BackendError::Unreachable { .. })),
            "{closed:?}"
        );
        server.abort();
    }
}
