//! Message ids: the broker's offset msg id and the client's unique key (`UNIQ_KEY`).
//! The broker writes the first into every send response and reads it back for
//! transactions and retries; tools and clients parse both. All of them must agree on
//! the text byte for byte, so the two layouts live here:
//!
//! | id | bytes (big-endian), shown as uppercase hex | hex length |
//! |---|---|---|
//! | offset msg id | store IP (4 / 16) · int32 port · int64 CommitLog offset | 32 / 56 |
//! | `UNIQ_KEY` | client IP (4 / 16) · int16 pid · int32 class loader hash · int32 ms since the start of the month · int16 counter | 32 / 56 |
//!
//! Both are 32 hex chars for IPv4, so the text alone does not say which one an id is:
//! `queryMsgById` tries the offset id first and falls back to a unique-key query, as
//! RocketMQ's admin does. Parsing accepts either case; encoding writes uppercase
//! (`UtilAll.bytes2string`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU16, Ordering};

use thiserror::Error;

/// An id that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid {kind} {id:?}: {reason}")]
pub struct MessageIdError {
    /// Which id it was read as: "offset msg id" or "unique key".
    pub kind: &'static str,
    /// The text given.
    pub id: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn push_hex(out: &mut String, bytes: &[u8]) {
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xF)]));
    }
}

fn push_ip(out: &mut String, ip: IpAddr) {
    match ip {
        IpAddr::V4(ip) => push_hex(out, &ip.octets()),
        IpAddr::V6(ip) => push_hex(out, &ip.octets()),
    }
}

/// Uppercase hex of `bytes` (`UtilAll.bytes2string`).
#[must_use]
pub fn hex_upper(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    push_hex(&mut s, bytes);
    s
}

/// Bytes of an even-length hex string (either case), `None` if it is not one.
#[must_use]
pub fn parse_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    // Byte by byte: a multi-byte UTF-8 char is simply not a hex digit. `to_digit` takes
    // no sign, unlike `from_str_radix` ("+F" would read as 0x0F).
    let digit = |b: u8| char::from(b).to_digit(16);
    text.as_bytes()
        .chunks_exact(2)
        .map(|pair| u8::try_from(digit(pair[0])? << 4 | digit(pair[1])?).ok())
        .collect()
}

/// The bytes of a 32- or 56-char id and its IP, or why not.
fn split_ip(id: &str) -> Result<(IpAddr, Vec<u8>), &'static str> {
    let ip_len = match id.len() {
        32 => 4,
        56 => 16,
        _ => return Err("expected 32 (IPv4) or 56 (IPv6) hex chars"),
    };
    let mut raw = parse_hex(id).ok_or("not hex")?;
    let rest = raw.split_off(ip_len);
    let ip = match <[u8; 4]>::try_from(raw.as_slice()) {
        Ok(v4) => IpAddr::V4(Ipv4Addr::from(v4)),
        Err(_) => IpAddr::V6(Ipv6Addr::from(
            <[u8; 16]>::try_from(raw.as_slice()).map_err(|_| "not hex")?,
        )),
    };
    Ok((ip, rest))
}

fn be<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    bytes.get(at..at + N)?.try_into().ok()
}

/// Where a stored message is: the broker's address and the CommitLog offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetMsgId {
    /// Store host (`brokerIP1:listenPort`).
    pub addr: SocketAddr,
    /// CommitLog offset of the record (an int64 on the wire: the same eight bytes).
    pub offset: u64,
}

impl OffsetMsgId {
    /// Uppercase hex: 32 chars for an IPv4 store host, 56 for IPv6. Every send answers
    /// with one of these, so it is written straight into the string.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut s = String::with_capacity(if self.addr.is_ipv4() { 32 } else { 56 });
        push_ip(&mut s, self.addr.ip());
        push_hex(&mut s, &i32::from(self.addr.port()).to_be_bytes());
        push_hex(&mut s, &self.offset.to_be_bytes());
        s
    }

    /// Decodes a 32- or 56-char hex id (either case).
    ///
    /// # Errors
    /// Wrong length, not hex, or a port outside 0..=65535.
    pub fn decode(id: &str) -> Result<Self, MessageIdError> {
        let err = |reason| MessageIdError {
            kind: "offset msg id",
            id: id.to_owned(),
            reason,
        };
        let (ip, rest) = split_ip(id).map_err(err)?;
        let port = be::<4>(&rest, 0)
            .map(i32::from_be_bytes)
            .ok_or(err("not hex"))?;
        let port = u16::try_from(port).map_err(|_| err("port outside 0..=65535"))?;
        let offset = be::<8>(&rest, 4)
            .map(u64::from_be_bytes)
            .ok_or(err("not hex"))?;
        Ok(OffsetMsgId {
            addr: SocketAddr::new(ip, port),
            offset,
        })
    }
}

/// The fields of a `UNIQ_KEY` (`MessageClientIDSetter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniqKey {
    /// The producer's IP.
    pub ip: IpAddr,
    /// The low 16 bits of its pid.
    pub pid: u16,
    /// A per-generator hash (Java: the class loader's `hashCode`).
    pub hash: u32,
    /// Milliseconds since the start of the month the message was born in (Java's
    /// `(int)` cast: wraps after ~24.8 days).
    pub millis_in_month: i32,
    /// The generator's counter.
    pub counter: u16,
}

impl UniqKey {
    /// Uppercase hex: 32 chars for an IPv4 producer, 56 for IPv6.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut s = prefix(self.ip, self.pid, self.hash);
        push_suffix(&mut s, self.millis_in_month, self.counter);
        s
    }

    /// Decodes a 32- or 56-char hex unique key (either case).
    ///
    /// # Errors
    /// Wrong length or not hex.
    pub fn decode(id: &str) -> Result<Self, MessageIdError> {
        let err = |reason| MessageIdError {
            kind: "unique key",
            id: id.to_owned(),
            reason,
        };
        let (ip, rest) = split_ip(id).map_err(err)?;
        let field = |at| be::<4>(&rest, at).ok_or(err("not hex"));
        Ok(UniqKey {
            ip,
            pid: be::<2>(&rest, 0)
                .map(u16::from_be_bytes)
                .ok_or(err("not hex"))?,
            hash: u32::from_be_bytes(field(2)?),
            millis_in_month: i32::from_be_bytes(field(6)?),
            counter: be::<2>(&rest, 10)
                .map(u16::from_be_bytes)
                .ok_or(err("not hex"))?,
        })
    }
}

/// The fixed hex prefix of a generator's keys: IP · pid · hash.
fn prefix(ip: IpAddr, pid: u16, hash: u32) -> String {
    let mut s = String::with_capacity(if ip.is_ipv4() { 32 } else { 56 });
    push_ip(&mut s, ip);
    push_hex(&mut s, &pid.to_be_bytes());
    push_hex(&mut s, &hash.to_be_bytes());
    s
}

fn push_suffix(s: &mut String, millis_in_month: i32, counter: u16) {
    push_hex(s, &millis_in_month.to_be_bytes());
    push_hex(s, &counter.to_be_bytes());
}

/// Generates `UNIQ_KEY`s as `MessageClientIDSetter` does, for one producer identity.
///
/// The caller says who it is (IP, pid, hash: finding the host's address is I/O) and
/// when the message is born. The month start is computed in UTC, where Java uses the
/// JVM's default time zone; the id stays unique either way.
#[derive(Debug)]
pub struct UniqIdGenerator {
    prefix: String,
    counter: AtomicU16,
}

impl UniqIdGenerator {
    /// A generator for producer `ip`, `pid` (Java keeps the low 16 bits) and `hash`
    /// (anything that differs between processes on one host).
    #[must_use]
    pub fn new(ip: IpAddr, pid: u16, hash: u32) -> Self {
        UniqIdGenerator {
            prefix: prefix(ip, pid, hash),
            counter: AtomicU16::new(0),
        }
    }

    /// The next id, for a message born at `now_ms` (ms since the Unix epoch).
    #[must_use]
    pub fn next_at(&self, now_ms: i64) -> String {
        #[allow(
            clippy::cast_possible_truncation,
            reason = "a month of milliseconds fits in 32 bits, as Java's (int) cast assumes"
        )]
        let millis_in_month = now_ms.wrapping_sub(month_start_millis(now_ms)) as i32;
        let counter = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut id = self.prefix.clone();
        push_suffix(&mut id, millis_in_month, counter);
        id
    }
}

const DAY_MS: i64 = 86_400_000;

/// The first millisecond (UTC) of the month that contains `ms` (ms since the Unix
/// epoch), by H. Hinnant's `civil_from_days` ("chrono-Compatible Low-Level Date
/// Algorithms"), reduced to what a month start needs.
fn month_start_millis(ms: i64) -> i64 {
    let days = ms.div_euclid(DAY_MS);
    // Days since 0000-03-01, in 400-year eras.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    // Month of a March-based year, 0..=11, and the day-of-year its first day has.
    let mp = (5 * doy + 2) / 153;
    let month_doy = (153 * mp + 2) / 5;
    (era * 146_097 + 365 * yoe + yoe / 4 - yoe / 100 + month_doy - 719_468) * DAY_MS
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Days since the epoch of a civil date (the inverse algorithm, written
    /// independently of [`month_start_millis`]).
    fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y.rem_euclid(400);
        let m = i64::from(m);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    fn civil_ms(y: i64, m: u32, d: u32) -> i64 {
        days_from_civil(y, m, d) * DAY_MS
    }

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
        let host: SocketAddr = "192.168.0.1:10911".parse().unwrap();
        let id = OffsetMsgId {
            addr: host,
            offset: 0x1234,
        };
        assert_eq!(id.encode(), "C0A8000100002A9F0000000000001234");
        let v6 = OffsetMsgId {
            addr: "[fe80::1]:10911".parse().unwrap(),
            offset: 7,
        };
        assert_eq!(v6.encode().len(), 56);
        assert_eq!(OffsetMsgId::decode(&v6.encode()).unwrap(), v6);
    }

    #[test]
    fn offset_id_with_signs_or_a_wide_port_is_refused() {
        let refused = |id| OffsetMsgId::decode(id).unwrap_err().reason;
        assert_eq!(refused(""), "expected 32 (IPv4) or 56 (IPv6) hex chars");
        assert_eq!(
            OffsetMsgId::decode("x").unwrap_err().to_string(),
            "invalid offset msg id \"x\": expected 32 (IPv4) or 56 (IPv6) hex chars"
        );
        assert_eq!(refused("7F000001000051AF00000000000000"), refused(""));
        assert_eq!(refused("ZZ000001000051AF0000000000000000"), "not hex");
        // `from_str_radix` takes a leading '+': "+F" read as 0x0F.
        assert_eq!(refused("+F000001000051AF0000000000000000"), "not hex");
        assert_eq!(refused("7F000001000051AF+000000000000000"), "not hex");
        // Port 0x00010000 does not fit in 16 bits (it was truncated to 0).
        assert_eq!(
            refused("7F000001000100000000000000000000"),
            "port outside 0..=65535"
        );
        assert!(OffsetMsgId::decode("7F000001FFFFFFFF0000000000000000").is_err());
        // Multi-byte UTF-8 of the right byte length must not panic.
        assert_eq!(refused("ééééééééééééééé00"), "not hex");
        assert_eq!(
            OffsetMsgId::decode("7f000001000051af00000000000000ff").unwrap(),
            OffsetMsgId {
                addr: "127.0.0.1:20911".parse().unwrap(),
                offset: 255
            }
        );
    }

    #[test]
    fn uniq_id_layout() {
        let generator = UniqIdGenerator::new("192.168.0.7".parse().unwrap(), 0x1234, 0xCAFE_BABE);
        // 2026-11-29T14:00:00.123Z; the month started 2026-11-01T00:00:00Z.
        let now = civil_ms(2026, 11, 29) + 14 * 3_600_000 + 123;
        let id = generator.next_at(now);
        assert_eq!(id.len(), 32);
        assert_eq!(&id[..20], "C0A800071234CAFEBABE");
        // Java's (int) cast wraps after ~24.8 days into the month; so does ours.
        let diff = u32::from_str_radix(&id[20..28], 16).unwrap();
        let expected = now - civil_ms(2026, 11, 1);
        assert_eq!(i64::from(diff), expected.rem_euclid(1 << 32));
        assert_eq!(&id[28..], "0000");
        let key = UniqKey::decode(&id).unwrap();
        assert_eq!(
            key,
            UniqKey {
                ip: "192.168.0.7".parse().unwrap(),
                pid: 0x1234,
                hash: 0xCAFE_BABE,
                millis_in_month: diff as i32,
                counter: 0,
            }
        );
        assert_eq!(key.encode(), id);
        assert!(generator.next_at(now).ends_with("0001"));
        let v6 = UniqIdGenerator::new("::1".parse().unwrap(), 1, 2).next_at(now);
        assert_eq!(v6.len(), 56);
        assert_eq!(
            UniqKey::decode(&v6).unwrap().ip,
            "::1".parse::<IpAddr>().unwrap()
        );
        assert!(UniqKey::decode("0A0000").is_err());
    }

    #[test]
    fn month_start() {
        let t = civil_ms(2024, 2, 29) + 5;
        assert_eq!(month_start_millis(t), civil_ms(2024, 2, 1));
        assert_eq!(month_start_millis(0), 0);
        assert_eq!(month_start_millis(-1), civil_ms(1969, 12, 1));
        assert_eq!(
            month_start_millis(civil_ms(2000, 3, 1)),
            civil_ms(2000, 3, 1)
        );
        assert_eq!(
            month_start_millis(civil_ms(2000, 3, 1) - 1),
            civil_ms(2000, 2, 1)
        );
    }

    fn host() -> impl Strategy<Value = SocketAddr> {
        (any::<IpAddr>(), any::<u16>()).prop_map(|(ip, port)| SocketAddr::new(ip, port))
    }

    proptest! {
        #[test]
        fn offset_ids_read_back(addr in host(), offset in any::<u64>(), lower in any::<bool>()) {
            let id = OffsetMsgId { addr, offset };
            let text = if lower { id.encode().to_lowercase() } else { id.encode() };
            prop_assert_eq!(OffsetMsgId::decode(&text).unwrap(), id);
        }

        #[test]
        fn offset_id_decode_never_panics(text in "\\PC{0,60}|[0-9a-fA-F+ \\-]{30,58}") {
            if let Ok(id) = OffsetMsgId::decode(&text) {
                prop_assert!(id.encode().eq_ignore_ascii_case(&text));
            }
            if let Ok(key) = UniqKey::decode(&text) {
                prop_assert!(key.encode().eq_ignore_ascii_case(&text));
            }
        }

        #[test]
        fn uniq_keys_read_back(ip in any::<IpAddr>(), pid in any::<u16>(), hash in any::<u32>(), millis_in_month in any::<i32>(), counter in any::<u16>()) {
            let key = UniqKey { ip, pid, hash, millis_in_month, counter };
            prop_assert_eq!(UniqKey::decode(&key.encode()).unwrap(), key);
        }

        #[test]
        fn month_starts_are_first_days(days in -1_000_000i64..1_000_000, ms in 0..DAY_MS) {
            let t = days * DAY_MS + ms;
            let start = month_start_millis(t);
            prop_assert!(start <= t && t - start < 31 * DAY_MS);
            prop_assert_eq!(start % DAY_MS, 0);
            // The day before a month start is in another month; its start is earlier.
            prop_assert!(month_start_millis(start - 1) < start);
            prop_assert_eq!(month_start_millis(start), start);
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
