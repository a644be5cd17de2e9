//! The gRPC server: a bound listener, the service, and a shutdown future (`run(listener,
//! shutdown)`, so tests bind port 0 in-process).
//!
//! HTTP/2 keepalive pings go out every [`KEEPALIVE_INTERVAL`] and a connection that does not
//! answer within [`KEEPALIVE_TIMEOUT`] is closed: a client that vanished (its machine gone,
//! a NAT dropped the flow) is noticed in seconds rather than when TCP gives up (Apache
//! #10510), which matters for the telemetry streams each client keeps open.
//!
//! [`serve`] takes any `MessagingService` (the proxy, or the proxy behind
//! [`crate::auth::Authenticated`]) and optional [`Tls`] (then the listener's connections are
//! sniffed and handshaken by [`crate::tls::incoming`]).

use std::future::Future;
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

use std::sync::Arc;

use crate::auth::{Authenticated, Gate};
use crate::backend::Backend;
use crate::pb::messaging_service_server::{MessagingService, MessagingServiceServer};
use crate::service::MessagingProxy;
use crate::tls::{self, Tls};

/// How often an idle connection is pinged.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(20);
/// How long a ping may go unanswered.
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request accepted (Apache's `grpcMaxInboundMessageSize`, 130 MiB): a 4 MiB body
/// batch of several messages must fit.
pub const MAX_INBOUND_MESSAGE_SIZE: usize = 130 * 1024 * 1024;

/// Serves `service` on `listener` until `shutdown` completes (plaintext).
///
/// # Errors
/// The server failed (not a single call: those are answered).
pub async fn run<B: Backend>(
    listener: TcpListener,
    service: MessagingProxy<B>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    serve(listener, None, service, shutdown).await
}

/// Serves the proxy `service` on `listener` until `shutdown` completes: with `tls` when
/// given, every call checked by `gate` when given (unary and receive calls before they reach
/// the service, each telemetry command by the service). Both modes serve through here.
///
/// # Errors
/// The server failed (not a single call: those are answered).
pub async fn serve_proxy<B: Backend>(
    listener: TcpListener,
    tls: Option<Tls>,
    service: MessagingProxy<B>,
    gate: Option<Arc<Gate>>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    match gate {
        Some(gate) => {
            let service = Authenticated::new(service.with_gate(Arc::clone(&gate)), gate);
            serve(listener, tls, service, shutdown).await
        }
        None => serve(listener, tls, service, shutdown).await,
    }
}

/// Serves `service` on `listener`, with `tls` when given, until `shutdown` completes.
///
/// # Errors
/// The server failed (not a single call: those are answered).
pub async fn serve<S: MessagingService>(
    listener: TcpListener,
    tls: Option<Tls>,
    service: S,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    let router = Server::builder()
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
        .add_service(
            MessagingServiceServer::new(service)
                .max_decoding_message_size(MAX_INBOUND_MESSAGE_SIZE),
        );
    match tls {
        None => {
            let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
            router
                .serve_with_incoming_shutdown(incoming, shutdown)
                .await
        }
        Some(tls) => {
            router
                .serve_with_incoming_shutdown(tls::incoming(listener, tls), shutdown)
                .await
        }
    }
}
