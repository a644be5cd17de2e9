//! The white-address patterns of a 4.9 plain ACL (`RemoteAddressStrategyFactory`): `*`, one
//! IP, `a,b,c`, `192.168.1.{1,2}`, and ranges `192.168.1.*`, `192.168.1-5.*`,
//! `192.168.*.*`, `10.1.1.1-100`.
//!
//! IPv6 is matched as one address or a list of them; IPv6 ranges are refused when the file is
//! loaded (Apache accepts `2::ac5:78:1-200` style ranges; sluice does not support them).

use std::net::Ipv6Addr;

/// A parsed white-address pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressRule {
    /// Blank: matches nothing.
    Blank,
    /// `*`: matches everything.
    Any,
    /// One of these (IPv4 as written, IPv6 normalised).
    Set(Vec<String>),
    /// IPv4 addresses starting with `head` whose octet after it is in `start..=end`
    /// (`index`: which octet, 1 to 3).
    Range {
        /// The fixed octets, each followed by a dot.
        head: Option<String>,
        /// Which octet varies.
        index: usize,
        /// Lowest value.
        start: u32,
        /// Highest value.
        end: u32,
    },
}

fn is_ipv4(text: &str) -> bool {
    crate::cidr::is_valid_ip(text) && !text.contains(':')
}

fn normalise(text: &str) -> Result<String, String> {
    if is_ipv4(text) {
        return Ok(text.to_owned());
    }
    text.parse::<Ipv6Addr>()
        .map(|a| a.to_string())
        .map_err(|_| format!("Netaddress examine Exception netaddress is {text}"))
}

fn octet(text: &str) -> Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|v| *v <= 255)
        .ok_or_else(|| format!("NetAddress examine scope Exception netAddress is {text}"))
}

impl AddressRule {
    /// Parses a pattern.
    ///
    /// # Errors
    /// Apache's remark for a pattern it refuses (or one sluice does not support).
    pub fn parse(text: &str) -> Result<AddressRule, String> {
        if text.trim().is_empty() {
            return Ok(AddressRule::Blank);
        }
        if matches!(text, "*" | "*.*.*.*" | "*:*:*:*:*:*:*:*") {
            return Ok(AddressRule::Any);
        }
        if text.ends_with('}') {
            let open = text
                .find('{')
                .ok_or_else(|| format!("MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress {text}"))?;
            let (head, list) = text.split_at(open);
            let dots = text.split('.').filter(|p| !p.is_empty()).count();
            if !text.contains(':') && dots < 4 {
                return Err(format!(
                    "MultipleRemoteAddressStrategy has got a/some wrong format IP(s) {text}"
                ));
            }
            let inner = &list[1..list.len() - 1];
            let addrs = inner
                .split(',')
                .filter(|p| !p.is_empty())
                .map(|p| normalise(&format!("{head}{p}")))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(AddressRule::Set(addrs));
        }
        if text.contains(',') {
            let addrs = text
                .split(',')
                .filter(|p| !p.is_empty())
                .map(normalise)
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(AddressRule::Set(addrs));
        }
        if text.contains('*') || text.contains('-') {
            return Self::range(text);
        }
        Ok(AddressRule::Set(vec![normalise(text)?]))
    }

    fn range(text: &str) -> Result<AddressRule, String> {
        if text.contains(':') {
            return Err(format!("IPv6 address ranges are not supported: {text}"));
        }
        let parts: Vec<&str> = text.split('.').filter(|p| !p.is_empty()).collect();
        let (mut start, mut end, mut index) = (0u32, 0u32, 0usize);
        let mut found = false;
        for i in 1..=3 {
            let value = parts
                .get(i)
                .ok_or_else(|| format!("NetAddress examine scope Exception netAddress is {text}"))?
                .trim();
            index = i;
            if value == "*" {
                (start, end) = (0, 255);
            } else if value.contains('-') {
                if value.starts_with('-') {
                    return Err(format!(
                        "RangeRemoteAddressStrategy netaddress examine scope Exception value {value} "
                    ));
                }
                let mut bounds = value.split('-').filter(|p| !p.is_empty());
                let (Some(s), Some(e)) = (bounds.next(), bounds.next()) else {
                    return Err(format!(
                        "NetAddress examine scope Exception netAddress is {text}"
                    ));
                };
                let parse = |v: &str| {
                    v.parse::<u32>()
                        .map_err(|_| format!("For input string: \"{v}\""))
                };
                (start, end) = (parse(s)?, parse(e)?);
                if !(start <= 255 && end <= 255 && start <= end) {
                    return Err(format!(
                        "RangeRemoteAddressStrategy netaddress examine scope Exception start is {start} , end is {end}"
                    ));
                }
            }
            if end > 0 {
                found = true;
                break;
            }
        }
        if !found {
            return Ok(AddressRule::Range {
                head: None,
                index,
                start,
                end,
            });
        }
        // AclUtils.verify(remoteAddr, index - 1): four parts, the first index-1 are octets.
        if parts.len() != 4 {
            return Err(format!(
                "NetAddress examine scope Exception netAddress is {text}"
            ));
        }
        for p in &parts[..index - 1] {
            octet(p)?;
        }
        let head: String = parts[..index]
            .iter()
            .map(|p| format!("{}.", p.trim()))
            .collect();
        Ok(AddressRule::Range {
            head: Some(head),
            index,
            start,
            end,
        })
    }

    /// Whether the client at `ip` is covered.
    #[must_use]
    pub fn matches(&self, ip: &str) -> bool {
        match self {
            AddressRule::Blank => false,
            AddressRule::Any => true,
            AddressRule::Set(addrs) => normalise(ip).is_ok_and(|n| addrs.contains(&n)),
            AddressRule::Range {
                head: Some(head),
                index,
                start,
                end,
            } => {
                if !is_ipv4(ip) || !ip.starts_with(head.as_str()) {
                    return false;
                }
                let rest = &ip[head.len()..];
                let value = rest.split('.').next().unwrap_or_default();
                // Which octet: index 3 is the last, 2 the third, 1 the second.
                let expected_dots = 3 - index;
                if rest.matches('.').count() != expected_dots {
                    return false;
                }
                value.parse::<u32>().is_ok_and(|v| v >= *start && v <= *end)
            }
            AddressRule::Range { head: None, .. } => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn m(rule: &str, ip: &str) -> bool {
        AddressRule::parse(rule).unwrap().matches(ip)
    }

    #[test]
    fn apache_patterns() {
        assert!(m("*", "1.2.3.4"));
        assert!(!m("", "1.2.3.4"));
        assert!(m("192.168.0.1", "192.168.0.1"));
        assert!(!m("192.168.0.1", "192.168.0.2"));
        assert!(m("192.168.0.1,10.0.0.1", "10.0.0.1"));
        assert!(m("192.168.1.{1,2}", "192.168.1.2"));
        assert!(!m("192.168.1.{1,2}", "192.168.1.3"));
        assert!(m("10.10.103.*", "10.10.103.77"));
        assert!(!m("10.10.103.*", "10.10.104.77"));
        assert!(m("192.168.*.*", "192.168.9.9"));
        assert!(m("192.168.1-5.*", "192.168.3.200"));
        assert!(!m("192.168.1-5.*", "192.168.6.1"));
        assert!(m("127.0.0.1-10", "127.0.0.10"));
        assert!(!m("127.0.0.1-10", "127.0.0.11"));
        assert!(m("::1", "0:0:0:0:0:0:0:1"));
        assert!(AddressRule::parse("300.1.1.1").is_err());
        assert!(AddressRule::parse("1.2.3.9-4").is_err());
        assert!(AddressRule::parse("1.2.*").is_err());
        assert!(AddressRule::parse("2::ac5:78:1-200").is_err());
    }

    proptest! {
        #[test]
        fn any_pattern_is_safe(rule in "[0-9.*,{}:\\-a-f ]{0,24}", ip in "[0-9.:]{0,16}") {
            if let Ok(r) = AddressRule::parse(&rule) {
                let _ = r.matches(&ip);
            }
        }
    }
}
