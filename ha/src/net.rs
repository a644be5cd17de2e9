//! Socket options in one place: SO_REUSEADDR on the HA listener (RocketMQ sets it,
//! so a restarted master rebinds its port at once) and TCP_NODELAY on every HA
//! connection (8-byte reports and heartbeats must not wait for Nagle: a sync put waits
//! for that report).

use std::io;
use std::net::SocketAddr;

use socket2::{Domain, Protocol, Socket, Type};
use tracing::debug;

/// Binds the HA listener (`haListenPort`) with SO_REUSEADDR and a listen backlog of
/// `backlog` (the broker passes its `serverSocketBacklog`: a master has a handful of
/// slaves, but a port scan or a misdirected client storm must not leave a slave's
/// reconnect waiting out dropped SYNs).
///
/// # Errors
/// The socket cannot be created or bound.
pub fn listen(addr: SocketAddr, backlog: u32) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    Ok(socket.into())
}

/// Options of an accepted or connected HA stream.
pub(crate) fn configure(stream: &mio::net::TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        debug!(error = %e, "cannot set TCP_NODELAY");
    }
}
