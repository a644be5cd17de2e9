//! Socket options and address parsing, in one place.

use std::net::{SocketAddr, ToSocketAddrs};

use tokio::net::TcpStream;
use tracing::debug;

use crate::error::{RemotingError, Result};

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
