//! The gRPC endpoint inside the broker: RocketMQ 5's `MessagingService` in local mode
//! (issue 17), what Apache runs with `mqbroker --enable-proxy`.
//!
//! Off by default (`enableGrpcProxy=false`). When on, its port (`grpcServerPort`) is bound on
//! the broker's `bindAddress` with the broker's other ports, before the store is touched, so a
//! taken port stops the broker at start (so does a TLS certificate that cannot be read); it
//! serves only once the broker does (after the role's services are up and the remoting
//! listener is serving), and stops first when the broker shuts down: calls in flight may
//! finish for [`SHUTDOWN_GRACE`], then the in-process connection is closed so that nothing
//! reaches the broker after its store is shut.
//!
//! The semantics are the proxy crate's ([`proxy::MessagingProxy`] in [`proxy::Mode::Local`]);
//! this broker is called in-process through its dispatcher, the name server and other brokers
//! over remoting ([`proxy::LocalBackend`], which signs those requests as the broker signs its
//! own).
//!
//! Authentication and authorization ([`proxy::auth::Gate`]) check every call against this
//! broker's own users and ACLs when the broker's settings or the proxy file
//! (`authenticationEnabled`, `authorizationEnabled`) turn them on: Apache's local mode
//! follows the proxy file alone, so a broker with ACLs on and a proxy file without them
//! serves gRPC unchecked there; here the broker's settings are enough. In-process requests
//! are not checked again by the broker (the gate checked the call they serve). The 4.9 plain
//! ACL (`aclEnable`) does not cover gRPC calls: with it on and authentication off, the
//! endpoint refuses to start rather than serve unchecked. TLS as the proxy file says
//! ([`proxy::tls`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use proxy::auth::{Gate, LocalUsers};
use proxy::tls::Tls;
use proxy::{LocalBackend, LocalBroker, MessagingProxy, ProxyConfig};
use remoting::client::ClientConfig;
use remoting::connection::RequestHandler;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::broker::BrokerError;
use crate::config::{BrokerConfig, ConfigError};
use crate::role::Role;

/// How long calls in flight (a send, an open telemetry stream) may go on once the broker
/// shuts down.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// The endpoint's port bound, not serving yet.
#[derive(Debug)]
pub struct GrpcEndpoint {
    listener: TcpListener,
    config: ProxyConfig,
    tls: Option<Tls>,
}

/// The gRPC port of `broker` with `proxy` settings: the broker's `grpcServerPort`, else the
/// proxy file's.
#[must_use]
pub fn port(broker: &BrokerConfig, proxy: &ProxyConfig) -> u16 {
    broker.grpc_server_port.unwrap_or(proxy.grpc_server_port)
}

/// Binds the endpoint when `enableGrpcProxy` is on (`None` when off), with the broker's auth
/// settings `auth` joined to the proxy file's (see the module docs). Must be called inside a
/// tokio runtime.
///
/// # Errors
/// The port cannot be bound on `bindAddress`; TLS is asked for and its certificate or key
/// cannot be used; the 4.9 plain ACL is on without authentication.
pub fn bind(
    broker: &BrokerConfig,
    auth: &auth::AuthConfig,
    mut proxy: ProxyConfig,
) -> Result<Option<GrpcEndpoint>, BrokerError> {
    if !broker.enable_grpc_proxy {
        return Ok(None);
    }
    proxy.auth.authentication_enabled |= auth.authentication_enabled;
    proxy.auth.authorization_enabled |= auth.authorization_enabled;
    if auth.acl_enable && !proxy.auth.authentication_enabled {
        return Err(ConfigError::Invalid(
            "enableGrpcProxy with aclEnable: the 4.9 plain ACL does not cover gRPC calls; \
             turn on authenticationEnabled (ACL 2.0, migrateAuthFromV1Enabled copies the plain \
             accounts)"
                .to_owned(),
        )
        .into());
    }
    let tls = Tls::from_config(&proxy.tls)
        .map_err(|e| ConfigError::Invalid(format!("gRPC endpoint TLS: {e}")))?;
    let port = port(broker, &proxy);
    let listener = crate::listen::bind_as(
        &broker.bind_address,
        port,
        broker.server_socket_backlog,
        "grpcServerPort",
    )?;
    // What the endpoint advertises and binds is the broker's.
    proxy.grpc_bind_address.clone_from(&broker.bind_address);
    proxy.grpc_server_port = port;
    Ok(Some(GrpcEndpoint {
        listener,
        config: proxy,
        tls,
    }))
}

impl GrpcEndpoint {
    /// The address it is bound to.
    ///
    /// # Errors
    /// The socket has no address (cannot happen for a bound listener).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Starts serving for the broker of `role`, calling it through `handler` (the broker's
    /// dispatcher).
    #[must_use]
    pub fn serve(self, role: &Arc<Role>, handler: Arc<dyn RequestHandler>) -> Serving {
        let broker = role.broker();
        let addr = self
            .listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], self.config.grpc_server_port)));
        let identity = broker.identity();
        let local = LocalBroker {
            name: identity.broker_name,
            addr: identity.broker_addr,
        };
        let backend = LocalBackend::new(
            local,
            handler,
            addr,
            ClientConfig::default(),
            broker.namesrv.addrs(),
        )
        .with_hook(broker.inner_hook());
        let closer = backend.clone();
        let mode = backend.mode();
        let users = Arc::new(LocalUsers::new(Arc::clone(broker.guard.store())));
        let gate = Gate::new(&self.config.auth, users);
        let service = MessagingProxy::with_mode(backend, self.config, addr.port(), mode);
        info!(
            broker = %closer.broker().addr,
            tls = ?self.tls.as_ref().map(Tls::mode),
            authentication = gate.is_some(),
            "gRPC endpoint (local mode) serving on {addr}"
        );
        let (stop, stopped) = oneshot::channel::<()>();
        let (listener, tls) = (self.listener, self.tls);
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
            };
            let served = proxy::server::serve_proxy(listener, tls, service, gate, shutdown);
            if let Err(e) = served.await {
                warn!(error = %e, "gRPC endpoint failed");
            }
        });
        Serving {
            stop,
            task,
            backend: closer,
        }
    }
}

/// The endpoint serving; [`stop`](Self::stop) it before the broker's store shuts.
#[derive(Debug)]
pub struct Serving {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
    backend: LocalBackend,
}

impl Serving {
    /// Stops accepting calls, lets those in flight finish for [`SHUTDOWN_GRACE`], then cuts
    /// the rest off from the broker.
    pub async fn stop(self) {
        let Serving {
            stop,
            mut task,
            backend,
        } = self;
        let _ = stop.send(());
        if tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
            .await
            .is_err()
        {
            warn!(grace = ?SHUTDOWN_GRACE, "gRPC calls still open at shutdown: cut off");
            task.abort();
        }
        backend.close();
        info!("gRPC endpoint stopped");
    }
}
