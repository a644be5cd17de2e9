//! Message ids: the broker's offset msg id and the client's unique key (`UNIQ_KEY`).
//!
//! | id | bytes (big-endian), shown as uppercase hex | hex length |
//! |---|---|---|
//! | offset msg id | store IP (4 / 16) · int32 port · int64 CommitLog offset | 32 / 56 |
//! | `UNIQ_KEY` | client IP (4 / 16) · int16 pid · int32 class loader hash · int32 ms since the start of the month · int16 counter | 32 / 56 |
//!
//! Both are 32 hex chars for IPv4, so the text alone does not say which one an id is:
//! `queryMsgById` tries the offset id first and falls back to a unique-key query, as
//! RocketMQ's admin does.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use thiserror::Error;

/// An offset msg id that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid offset msg id {id:?}: {reason}")]
pub struct MessageIdError {
    /// The text given.
    pub id: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Where a stored message is: the broker's address and the CommitLog offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetMsgId {
    /// Store host (`brokerIP1:listenPort`).
    pub addr: SocketAddr,
    /// CommitLog offset of the record.
    pub offset: i64,
}

impl OffsetMsgId {
    /// Uppercase hex: 32 chars for an IPv4 store host, 56 for IPv6 (the store's encoder,
    /// which writes the id every send answers with).
    #[must_use]
    pub fn encode(&self) -> String {
        // The offset is an int64 on the wire: the same eight bytes either way.
        store::record::offset_msg_id(&self.addr, self.offset as u64)
    }

    /// Decodes a 32- or 56-char hex id (either case), with the store's decoder.
    ///
    /// # Errors
    /// Wrong length, not hex, or a port outside 0..=65535.
    pub fn decode(id: &str) -> Result<Self, MessageIdError> {
        let err = |reason| MessageIdError {
            id: id.to_owned(),
            reason,
        };
        if id.len() != 32 && id.len() != 56 {
            return Err(err("expected 32 (IPv4) or 56 (IPv6) hex chars"));
        }
        let (addr, offset) = store::record::parse_offset_msg_id(id)
            .ok_or_else(|| err("not hex, or a port outside 0..=65535"))?;
        Ok(OffsetMsgId {
            addr,
            // The offset is an int64 on the wire: the same eight bytes either way.
            offset: offset as i64,
        })
    }
}

/// Uppercase hex of `bytes` (`UtilAll.bytes2string`).
#[must_use]
pub fn hex_upper(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xF)]));
    }
    s
}

/// Bytes of an even-length hex string, `None` if it is not one.
#[must_use]
pub fn parse_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    let digit = |c: u8| char::from(c).to_digit(16);
    text.as_bytes()
        .chunks_exact(2)
        .map(|pair| {
            let hi = digit(pair[0])?;
            let lo = digit(pair[1])?;
            u8::try_from(hi * 16 + lo).ok()
        })
        .collect()
}

/// Generates `UNIQ_KEY`s as `MessageClientIDSetter` does.
///
/// The fixed prefix is IP · pid · a per-generator hash (Java uses its class loader's
/// hash; we use the low bits of the creation time, which only has to differ between
/// processes on one host). The month start is computed in UTC, where Java uses the
/// JVM's default time zone; the id stays unique either way.
#[derive(Debug)]
pub struct UniqIdGenerator {
    prefix: String,
    counter: AtomicU16,
}

impl UniqIdGenerator {
    /// A generator for this host and process.
    #[must_use]
    pub fn new() -> Self {
        let now = now_millis();
        let ip = local_ip().unwrap_or_else(|| {
            // Java's createFakeIP: the low 4 bytes of the clock.
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
        Self::with_prefix(ip, pid, hash)
    }

    /// A generator with a given prefix (tests).
    #[must_use]
    pub fn with_prefix(ip: IpAddr, pid: u16, hash: u32) -> Self {
        let mut fixed = Vec::with_capacity(22);
        match ip {
            IpAddr::V4(ip) => fixed.extend_from_slice(&ip.octets()),
            IpAddr::V6(ip) => fixed.extend_from_slice(&ip.octets()),
        }
        fixed.extend_from_slice(&pid.to_be_bytes());
        fixed.extend_from_slice(&hash.to_be_bytes());
        UniqIdGenerator {
            prefix: hex_upper(&fixed),
            counter: AtomicU16::new(0),
        }
    }

    /// The next id, for a message born at `now_ms`.
    #[must_use]
    pub fn next_at(&self, now_ms: i64) -> String {
        let start = month_start_millis(now_ms);
        #[allow(
            clippy::cast_possible_truncation,
            reason = "a month of milliseconds fits in 32 bits, as Java's (int) cast assumes"
        )]
        let diff = (now_ms - start) as i32;
        let counter = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut id = String::with_capacity(self.prefix.len() + 12);
        id.push_str(&self.prefix);
        id.push_str(&hex_upper(&diff.to_be_bytes()));
        id.push_str(&hex_upper(&counter.to_be_bytes()));
        id
    }

    /// The next id, now.
    #[must_use]
    pub fn next(&self) -> String {
        self.next_at(now_millis())
    }
}

impl Default for UniqIdGenerator {
    fn default() -> Self {
        Self::new()
    }
}

/// Milliseconds since the Unix epoch.
#[must_use]
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The first millisecond (UTC) of the month that contains `ms`.
#[must_use]
pub fn month_start_millis(ms: i64) -> i64 {
    let days = ms.div_euclid(86_400_000);
    let (y, m, _) = crate::time::civil_from_days(days);
    crate::time::days_from_civil(y, m, 1) * 86_400_000
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
    use proptest::prelude::*;
    use std::net::Ipv6Addr;

    #[test]
    fn offset_id_golden() {
        // From Apache RocketMQ 5.3.3 (integration-tests/java/README.md): broker
        // 127.0.0.1:20911, CommitLog offset 0.
        let id = OffsetMsgId::decode("7F000001000051AF0000000000000000").unwrap();
        assert_eq!(id.addr, "127.0.0.1:20911".parse().unwrap());
        assert_eq!(id.offset, 0);
        let id = OffsetMsgId {
            addr: "10.0.0.1:10911".parse().unwrap(),
            offset: 0x1234_5678_9ABC,
        };
        assert_eq!(id.encode(), "0A00000100002A9F0000123456789ABC");
        assert_eq!(
            OffsetMsgId::decode(&id.encode().to_lowercase()).unwrap(),
            id
        );
    }

    #[test]
    fn offset_id_errors() {
        assert!(OffsetMsgId::decode("").is_err());
        assert!(OffsetMsgId::decode("ZZ000001000051AF0000000000000000").is_err());
        assert!(OffsetMsgId::decode("7F000001000051AF00000000000000").is_err());
        // Port 0x00010000 does not fit in 16 bits.
        assert!(OffsetMsgId::decode("7F000001000100000000000000000000").is_err());
        // Multi-byte UTF-8 of the right byte length must not panic.
        assert!(OffsetMsgId::decode("ééééééééééééééé00").is_err());
    }

    #[test]
    fn uniq_id_layout() {
        let generator =
            UniqIdGenerator::with_prefix("192.168.0.7".parse().unwrap(), 0x1234, 0xCAFE_BABE);
        // 2026-11-29T14:00:00.123Z; the month started 2026-11-01T00:00:00Z.
        let now = days_from_civil_ms(2026, 11, 29) + 14 * 3_600_000 + 123;
        let id = generator.next_at(now);
        assert_eq!(id.len(), 32);
        assert_eq!(&id[..20], "C0A800071234CAFEBABE");
        // Java's (int) cast wraps after ~24.8 days into the month; so does ours.
        let diff = u32::from_str_radix(&id[20..28], 16).unwrap();
        let expected = now - days_from_civil_ms(2026, 11, 1);
        assert_eq!(i64::from(diff), expected.rem_euclid(1 << 32));
        assert_eq!(&id[28..], "0000");
        assert!(generator.next_at(now).ends_with("0001"));
        let v6 = UniqIdGenerator::with_prefix("::1".parse().unwrap(), 1, 2).next_at(now);
        assert_eq!(v6.len(), 56);
    }

    fn days_from_civil_ms(y: i64, m: u32, d: u32) -> i64 {
        crate::time::days_from_civil(y, m, d) * 86_400_000
    }

    #[test]
    fn month_start() {
        let t = days_from_civil_ms(2024, 2, 29) + 5;
        assert_eq!(month_start_millis(t), days_from_civil_ms(2024, 2, 1));
        assert_eq!(month_start_millis(0), 0);
    }

    proptest! {
        #[test]
        fn offset_id_round_trip(a in any::<[u8; 4]>(), port in any::<u16>(), offset in any::<i64>()) {
            let id = OffsetMsgId { addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::from(a)), port), offset };
            prop_assert_eq!(OffsetMsgId::decode(&id.encode()).unwrap(), id);
        }

        #[test]
        fn offset_id_v6_round_trip(a in any::<[u8; 16]>(), port in any::<u16>(), offset in any::<i64>()) {
            let id = OffsetMsgId { addr: SocketAddr::new(IpAddr::V6(Ipv6Addr::from(a)), port), offset };
            prop_assert_eq!(OffsetMsgId::decode(&id.encode()).unwrap(), id);
        }

        #[test]
        fn decode_never_panics(text in "\\PC{0,60}|[0-9a-fA-F+ ]{30,58}") {
            if let Ok(id) = OffsetMsgId::decode(&text) {
                prop_assert!(id.encode().eq_ignore_ascii_case(&text));
            }
        }

        #[test]
        fn hex_reads_back(bytes in prop::collection::vec(any::<u8>(), 0..40), text in "\\PC{0,20}") {
            prop_assert_eq!(parse_hex(&hex_upper(&bytes)), Some(bytes.clone()));
            prop_assert_eq!(parse_hex(&hex_upper(&bytes).to_lowercase()), Some(bytes));
            if let Some(b) = parse_hex(&text) {
                prop_assert!(hex_upper(&b).eq_ignore_ascii_case(&text));
            }
        }
    }
}
