//! The broker's listening sockets: `listenPort`, the VIP channel (`fastListenPort`) and the
//! gRPC endpoint's `grpcServerPort`, all bound on `bindAddress` before the store is touched,
//! so a port that is taken stops the broker at start with the key that names it.

use tokio::net::TcpListener;

use crate::broker::BrokerError;

/// Binds `bindAddress:port` (port 0: any free port) with a listen backlog of
/// `backlog` (`serverSocketBacklog`). Must be called inside a tokio runtime.
///
/// # Errors
/// The address is not an `ip:port` or cannot be bound.
pub fn bind(bind_address: &str, port: u16, backlog: u32) -> Result<TcpListener, BrokerError> {
    bind_as(bind_address, port, backlog, "listenPort")
}

pub(crate) fn bind_as(
    bind_address: &str,
    port: u16,
    backlog: u32,
    key: &'static str,
) -> Result<TcpListener, BrokerError> {
    let addr = format!("{bind_address}:{port}");
    let parsed = addr.parse().map_err(|_| BrokerError::Bind {
        addr: addr.clone(),
        key,
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not an ip:port"),
    })?;
    remoting::net::listen(parsed, backlog).map_err(|source| BrokerError::Bind { addr, key, source })
}

/// Binds the VIP channel for a broker serving on `listen_port`
/// ([`BrokerConfig::fast_listen_port`]); `None` when it is off (`fastListenPort=0`).
///
/// # Errors
/// The port cannot be bound. As RocketMQ, the broker does not start without it: 4.x
/// clients send on it by default (`vipChannelEnabled`), and Java slaves copy their
/// master's tables from it.
///
/// [`BrokerConfig::fast_listen_port`]: crate::config::BrokerConfig::fast_listen_port
pub fn bind_vip_channel(
    broker_config: &crate::config::BrokerConfig,
    listen_port: u16,
) -> Result<Option<TcpListener>, BrokerError> {
    match broker_config.fast_listen_port(listen_port) {
        None => Ok(None),
        Some(port) => bind_as(
            &broker_config.bind_address,
            port,
            broker_config.server_socket_backlog,
            "fastListenPort",
        )
        .map(Some),
    }
}
