//! Who this process is as a producer of `UNIQ_KEY`s: the host's address, the pid and a
//! per-process hash, found here (host name lookup, clock) so that the id format itself,
//! [`message::id::UniqIdGenerator`], stays free of I/O.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use message::id::UniqIdGenerator;

use crate::time::now_millis;

/// A generator of `UNIQ_KEY`s for this host and process, as `MessageClientIDSetter`
/// sets itself up: the host's IP (or, as Java's `createFakeIP`, the low 4 bytes of the
/// clock), the low 16 bits of the pid, and for the class loader hash Java uses, the low
/// bits of the creation time, which only has to differ between processes on one host.
#[must_use]
pub fn local_generator() -> UniqIdGenerator {
    let now = now_millis();
    let ip = local_ip().unwrap_or_else(|| {
        let b = now.to_be_bytes();
        IpAddr::V4(Ipv4Addr::new(b[4], b[5], b[6], b[7]))
    });
    #[allow(
        clippy::cast_possible_truncation,
        reason = "Java keeps the low 16 bits of the pid: (short) pid"
    )]
    let pid = std::process::id() as u16;
    #[allow(
        clippy::cast_possible_truncation,
        reason = "any 32 bits of the clock will do for the hash"
    )]
    let hash = (now as u32) ^ 0x5A5A_0000;
    UniqIdGenerator::new(ip, pid, hash)
}

/// A non-loopback address of this host, found by resolving its host name (no traffic).
fn local_ip() -> Option<IpAddr> {
    use std::net::ToSocketAddrs;
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()?;
    let name = name.trim();
    if name.is_empty() {
        return None;
    }
    let addrs: Vec<SocketAddr> = (name, 0).to_socket_addrs().ok()?.collect();
    addrs
        .iter()
        .map(SocketAddr::ip)
        .find(|ip| ip.is_ipv4() && !ip.is_loopback())
        .or_else(|| {
            addrs
                .iter()
                .map(SocketAddr::ip)
                .find(|ip| !ip.is_loopback())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use message::id::UniqKey;

    #[test]
    fn ids_carry_this_process() {
        let ids = local_generator();
        let key = UniqKey::decode(&ids.next_at(now_millis())).unwrap();
        assert_eq!(key.pid, std::process::id() as u16);
        assert_eq!(key.counter, 0);
        assert_eq!(
            UniqKey::decode(&ids.next_at(now_millis())).unwrap().counter,
            1
        );
    }
}
