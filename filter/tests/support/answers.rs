//! A selector request answered in the format of
//! `integration-tests/java-broker/oracle/SqlOracle.java`, which answers with Apache
//! RocketMQ's own filter: shared by the fixture test, the `answers` example and the
//! live oracle test in integration-tests.

use filter::{Fault, Selector};

/// Undoes the request escapes (`\\ \t \n \r \uXXXX`, over UTF-16 code units).
pub fn unescape(s: &str) -> String {
    let units: Vec<u16> = s.encode_utf16().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < units.len() {
        if units[i] == u16::from(b'\\') && i + 1 < units.len() {
            i += 1;
            match units[i] {
                0x74 => out.push(0x09),
                0x6E => out.push(0x0A),
                0x72 => out.push(0x0D),
                0x75 => {
                    let end = (i + 5).min(units.len());
                    let hex = String::from_utf16_lossy(&units[i + 1..end]);
                    out.push(u16::from_str_radix(&hex, 16).unwrap_or(0xFFFD));
                    i += 4;
                }
                u => out.push(u),
            }
        } else {
            out.push(units[i]);
        }
        i += 1;
    }
    String::from_utf16_lossy(&out)
}

/// Escapes a field as the oracle does: printable ASCII as is, the rest as escapes.
pub fn escape(s: &str) -> String {
    let mut out = String::new();
    for u in s.encode_utf16() {
        match u {
            0x5C => out.push_str("\\\\"),
            0x09 => out.push_str("\\t"),
            0x0A => out.push_str("\\n"),
            0x0D => out.push_str("\\r"),
            0x20..=0x7E => out.push(char::from(u8::try_from(u).unwrap_or(b'?'))),
            _ => out.push_str(&format!("\\u{u:04x}")),
        }
    }
    out
}

/// The answer to one request line.
pub fn answer(line: &str) -> String {
    let fields: Vec<String> = line.split('\t').map(unescape).collect();
    let props: Vec<(&str, &str)> = fields[1..]
        .chunks_exact(2)
        .map(|kv| (kv[0].as_str(), kv[1].as_str()))
        .collect();
    match Selector::parse(&fields[0]) {
        Err(e) => format!("P\t{}", escape(e.message())),
        Ok(s) => {
            let result = match s.evaluate(&values(&s, &props)) {
                Ok(Some(true)) => "TRUE",
                Ok(Some(false)) => "FALSE",
                Ok(None) => "NULL",
                Err(Fault::ClassCast) => "X:java.lang.ClassCastException",
                Err(_) => "X:java.lang.RuntimeException",
            };
            // The one-pass lookup the broker uses must agree with the slot lookup.
            let pairs = s.matches_properties(props.iter().copied());
            assert_eq!(
                pairs,
                result == "TRUE",
                "matches_properties disagrees on {line:?}"
            );
            format!("E\t{result}\t{}", escape(&s.to_string()))
        }
    }
}

fn values<'a>(s: &Selector, props: &[(&str, &'a str)]) -> Vec<Option<&'a str>> {
    s.property_names()
        .iter()
        .map(|n| {
            props
                .iter()
                .rev()
                .find(|(k, _)| *k == &**n)
                .map(|(_, v)| *v)
        })
        .collect()
}
