//! Socket options, listeners and address parsing, in one place.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpListener, TcpStream};
use tracing::{debug, warn};

use crate::error::{RemotingError, Result};

/// RocketMQ's default listen backlog (`serverSocketBacklog`, from NettySystemConfig's
/// `com.rocketmq.remoting.socket.backlog`). tokio's own `bind` listens with 128.
pub const DEFAULT_SERVER_SOCKET_BACKLOG: u32 = 1024;

/// Where Linux caps every listen backlog.
const SOMAXCONN: &str = "/proc/sys/net/core/somaxconn";

/// Raises this process's soft limit on open files (`RLIMIT_NOFILE`) to its hard limit,
/// as RocketMQ's start scripts do with `ulimit -n`: every connection is a descriptor,
/// and the soft limit is often 1024. Returns the soft limit now in force (`None`: it
/// cannot be read); a refusal is logged, not an error.
pub fn raise_fd_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let from = limit.current;
        limit.current = limit.maximum;
        match setrlimit(Resource::Nofile, limit) {
            Ok(()) => debug!(from = ?from, to = ?limit.maximum, "raised RLIMIT_NOFILE"),
            Err(e) => {
                warn!(error = %e, "cannot raise RLIMIT_NOFILE; connections beyond it fail to accept");
            }
        }
    }
    getrlimit(Resource::Nofile).current
}

/// Binds a listener on `addr` with SO_REUSEADDR (as tokio's `bind` does, so a restarted
/// server rebinds its port at once) and a listen backlog of `backlog`
/// (`serverSocketBacklog`): connections whose handshake is done wait there until
/// accepted. A storm of connects beyond it has its SYNs dropped, and each retries only
/// after a second or more. The kernel caps it at `net.core.somaxconn` (logged).
///
/// Must be called inside a tokio runtime.
///
/// # Errors
/// The socket cannot be created, bound or put in listening state.
pub fn listen(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    if let Some(cap) = std::fs::read_to_string(SOMAXCONN)
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .filter(|cap| backlog > *cap)
    {
        warn!(
            backlog,
            somaxconn = cap,
            %addr,
            "serverSocketBacklog is above net.core.somaxconn; the kernel uses somaxconn"
        );
    }
    TcpListener::from_std(socket.into())
}

/// Options every remoting connection gets: no Nagle delay (requests are small and
/// latency-bound), keepalive so dead peers are noticed.
pub fn tune_stream(stream: &TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        debug!(error = %e, "set_nodelay failed");
    }
    let sock = socket2::SockRef::from(stream);
    if let Err(e) = sock.set_keepalive(true) {
        debug!(error = %e, "set_keepalive failed");
    }
}

/// Parses `host:port` (an IP literal, or a name resolved once).
///
/// # Errors
/// `InvalidAddress` when it is not `host:port` or the name does not resolve.
pub fn parse_addr(addr: &str) -> Result<SocketAddr> {
    let addr = addr.trim();
    if let Ok(sa) = addr.parse::<SocketAddr>() {
        return Ok(sa);
    }
    addr.to_socket_addrs()
        .ok()
        .and_then(|mut it| it.next())
        .ok_or_else(|| RemotingError::InvalidAddress(addr.to_owned()))
}

/// Parses `host:port` like [`parse_addr`], resolving a host name without blocking the
/// runtime (name servers are often DNS names in Kubernetes).
///
/// # Errors
/// `InvalidAddress` when it is not `host:port` or the name does not resolve.
pub async fn resolve(addr: &str) -> Result<SocketAddr> {
    let addr = addr.trim();
    if let Ok(sa) = addr.parse::<SocketAddr>() {
        return Ok(sa);
    }
    tokio::net::lookup_host(addr)
        .await
        .ok()
        .and_then(|mut it| it.next())
        .ok_or_else(|| RemotingError::InvalidAddress(addr.to_owned()))
}

/// Splits a `;`-separated name server list (`namesrvAddr`), dropping blanks.
#[must_use]
pub fn split_addr_list(list: &str) -> Vec<String> {
    list.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// With nothing accepting, every connect of a burst larger than tokio's 128 must
    /// complete its handshake and wait in the accept queue: the backlog is the one asked
    /// for. (With 128, the SYNs beyond it are dropped and the connects hang.)
    #[tokio::test]
    async fn listener_has_the_configured_backlog() {
        const BURST: usize = 300;
        let listener = listen("127.0.0.1:0".parse().unwrap(), 1024).unwrap();
        let addr = listener.local_addr().unwrap();
        let connects = (0..BURST).map(|_| tokio::spawn(TcpStream::connect(addr)));
        let connected = tokio::time::timeout(std::time::Duration::from_secs(20), async {
            let mut streams = Vec::new();
            for c in connects {
                streams.push(c.await.unwrap().unwrap());
            }
            streams
        })
        .await
        .expect("every connect of the burst completes while nothing accepts");
        assert_eq!(connected.len(), BURST);
        for _ in 0..BURST {
            tokio::time::timeout(std::time::Duration::from_secs(10), listener.accept())
                .await
                .expect("the handshake waits in the accept queue")
                .unwrap();
        }
    }

    #[test]
    fn fd_limit_is_raised_to_the_hard_limit() {
        use rustix::process::{Resource, getrlimit, setrlimit};
        let mut limit = getrlimit(Resource::Nofile);
        let hard = limit.maximum;
        // Start from a low soft limit (lowering needs no privilege), as a login shell's 1024.
        limit.current = Some(hard.unwrap_or(u64::MAX).min(4096));
        setrlimit(Resource::Nofile, limit).unwrap();
        assert_eq!(raise_fd_limit(), hard);
    }

    #[test]
    fn parses_addresses() {
        assert_eq!(parse_addr("127.0.0.1:9876").unwrap().port(), 9876);
        assert!(parse_addr("localhost:1").is_ok());
        assert!(parse_addr("nonsense").is_err());
        assert_eq!(split_addr_list(" a:1; ;b:2;"), vec!["a:1", "b:2"]);
    }

    /// Text whose part after the last ':' is no port: parsing fails before any name
    /// lookup, so the test sends nothing to a resolver.
    fn unresolvable(text: &str) -> bool {
        text.trim()
            .rsplit_once(':')
            .is_none_or(|(_, port)| port.parse::<u16>().is_err())
    }

    proptest! {
        #[test]
        fn parse_addr_never_panics(text in "\\PC{0,40}|[0-9a-f:.\\[\\] %]{0,40}") {
            if unresolvable(&text) {
                prop_assert!(parse_addr(&text).is_err());
            }
        }

        #[test]
        fn socket_addrs_read_back(ip in any::<std::net::IpAddr>(), port in any::<u16>(), pad in "[ \t]{0,2}") {
            let addr = SocketAddr::new(ip, port);
            prop_assert_eq!(parse_addr(&format!("{pad}{addr}{pad}")).unwrap(), addr);
        }

        #[test]
        fn addr_lists_split_into_trimmed_entries(
            text in "\\PC{0,60}|[a:1; \t]{0,30}",
            entries in prop::collection::vec("[a-z0-9.:]{1,12}", 0..5),
        ) {
            for e in split_addr_list(&text) {
                prop_assert!(!e.is_empty() && !e.contains(';') && e.trim() == e, "{:?}", e);
            }
            prop_assert_eq!(split_addr_list(&entries.join(" ; ")), entries);
        }
    }
}
