//! The gRPC server: a bound listener, the service, and a shutdown future (`run(listener,
//! shutdown)`, so tests bind port 0 in-process).
//!
//! HTTP/2 keepalive pings go out every [`KEEPALIVE_INTERVAL`] and a connection that does not
//! answer within [`KEEPALIVE_TIMEOUT`] is closed: a client that vanished (its machine gone,
//! a NAT dropped the flow) is noticed in seconds rather than when TCP gives up (Apache
//! #10510), which matters for the telemetry streams each client keeps open.

use std::future::Future;
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

use crate::backend::Backend;
use crate::pb::messaging_service_server::MessagingServiceServer;
use crate::service::MessagingProxy;

/// How often an idle connection is pinged.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(20);
/// How long a ping may go unanswered.
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request accepted (Apache's `grpcMaxInboundMessageSize`, 130 MiB): a 4 MiB body
/// batch of several messages must fit.
pub const MAX_INBOUND_MESSAGE_SIZE: usize = 130 * 1024 * 1024;

/// Serves `service` on `listener` until `shutdown` completes.
///
/// # Errors
/// The server failed (not a single call: those are answered).
pub async fn run<B: Backend>(
    listener: TcpListener,
    service: MessagingProxy<B>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    Server::builder()
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
        .add_service(
            MessagingServiceServer::new(service)
                .max_decoding_message_size(MAX_INBOUND_MESSAGE_SIZE),
        )
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}
