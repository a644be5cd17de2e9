//! Source-IP conditions of ACL 2.0 entries, as Apache's `IPAddressUtils` checks them: an entry
//! lists IPs (matched as text, exactly) and CIDRs (`10.0.0.0/8`, `::1/128`).
//!
//! Only IP literals are accepted: Java resolves a CIDR's address with `InetAddress.getByName`,
//! which would look a host name up in DNS; an ACL naming a host is refused here instead.

use std::net::IpAddr;

/// Whether `text` is an IPv4 or IPv6 address (commons-validator's `InetAddressValidator`:
/// dotted quads without leading zeros).
#[must_use]
pub fn is_valid_ip(text: &str) -> bool {
    parse_ip(text).is_some()
}

/// Whether `text` is an IP or a CIDR (`isValidIPOrCidr`), as `createAcl -i` takes them.
#[must_use]
pub fn is_valid_ip_or_cidr(text: &str) -> bool {
    is_valid_ip(text) || parse_cidr(text).is_some()
}

fn parse_ip(text: &str) -> Option<IpAddr> {
    if text.contains(':') {
        return text.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6);
    }
    let mut octets = 0;
    for part in text.split('.') {
        octets += 1;
        let leading_zero = part.len() > 1 && part.starts_with('0');
        if part.is_empty()
            || part.len() > 3
            || leading_zero
            || !part.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        if part.parse::<u16>().ok()? > 255 {
            return None;
        }
    }
    if octets != 4 {
        return None;
    }
    text.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

/// A parsed CIDR: the network address, its width in bits and the prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cidr {
    addr: u128,
    bits: u32,
    prefix: u32,
}

fn ip_bits(ip: IpAddr) -> (u128, u32) {
    match ip {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
        IpAddr::V6(v6) => (u128::from(v6), 128),
    }
}

fn parse_cidr(text: &str) -> Option<Cidr> {
    let mut parts = text.split('/');
    let (ip, prefix) = (parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let (addr, bits) = ip_bits(parse_ip(ip)?);
    let prefix: u32 = prefix.parse().ok()?;
    (prefix <= bits).then_some(Cidr { addr, bits, prefix })
}

/// Why an IP condition could not be evaluated (Apache throws, and the request is refused with
/// the generic authorization failure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unevaluable;

/// Whether `ip` is `rule` (an IP: compared as text) or inside it (a CIDR), as
/// `IPAddressUtils.isIPInRange` decides.
///
/// # Errors
/// `rule` has a `/` but is no CIDR of IP literals, or `ip` is no IP.
pub fn ip_in_range(ip: &str, rule: &str) -> Result<bool, Unevaluable> {
    if !rule.contains('/') {
        return Ok(ip == rule);
    }
    if rule.split('/').count() != 2 {
        return Ok(false);
    }
    let cidr = parse_cidr(rule).ok_or(Unevaluable)?;
    let (value, _) = ip_bits(parse_ip(ip).ok_or(Unevaluable)?);
    let host_bits = cidr.bits - cidr.prefix;
    let host_mask = if host_bits >= 128 {
        u128::MAX
    } else {
        (1u128 << host_bits) - 1
    };
    let lower = cidr.addr & !host_mask;
    let upper = lower | host_mask;
    Ok(value >= lower && value <= upper)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn validates_like_apache() {
        assert!(is_valid_ip_or_cidr("127.0.0.1"));
        assert!(is_valid_ip_or_cidr("10.0.0.0/8"));
        assert!(is_valid_ip_or_cidr("::1"));
        assert!(is_valid_ip_or_cidr("fe80::/10"));
        assert!(!is_valid_ip_or_cidr("10.0.0.0/33"));
        assert!(!is_valid_ip_or_cidr("010.0.0.1"));
        assert!(!is_valid_ip_or_cidr("256.1.1.1"));
        assert!(!is_valid_ip_or_cidr("1.2.3"));
        assert!(!is_valid_ip_or_cidr("localhost/8"));
        assert!(!is_valid_ip_or_cidr("10.0.0.0/8/1"));
        assert!(!is_valid_ip_or_cidr(""));
    }

    #[test]
    fn ranges() {
        assert_eq!(ip_in_range("127.0.0.1", "127.0.0.1"), Ok(true));
        assert_eq!(ip_in_range("127.0.0.2", "127.0.0.1"), Ok(false));
        assert_eq!(ip_in_range("127.0.0.9", "127.0.0.0/24"), Ok(true));
        assert_eq!(ip_in_range("127.0.1.9", "127.0.0.0/24"), Ok(false));
        assert_eq!(ip_in_range("127.0.0.1", "127.0.0.7/32"), Ok(false));
        assert_eq!(ip_in_range("127.0.0.1", "0.0.0.0/0"), Ok(true));
        assert_eq!(ip_in_range("::1", "::/0"), Ok(true));
        assert_eq!(ip_in_range("::1", "::1/128"), Ok(true));
        assert_eq!(ip_in_range("127.0.0.1", "a/b"), Err(Unevaluable));
    }

    proptest! {
        /// Operator input never panics, and a valid CIDR always contains its own address.
        #[test]
        fn any_text_is_safe(rule in "\\PC{0,40}", ip in "\\PC{0,20}") {
            let _ = is_valid_ip_or_cidr(&rule);
            let _ = ip_in_range(&ip, &rule);
        }

        #[test]
        fn a_cidr_holds_its_network(a in any::<u32>(), prefix in 0u32..=32) {
            let ip = std::net::Ipv4Addr::from(a).to_string();
            let rule = format!("{ip}/{prefix}");
            prop_assert_eq!(ip_in_range(&ip, &rule), Ok(true));
        }
    }
}
