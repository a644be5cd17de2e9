//! JSON bodies as Java's fastjson writes and reads them.
//!
//! RocketMQ serialises bodies with fastjson, which departs from JSON in two ways
//! clients rely on:
//! - maps with non-string keys are written with **bare keys**: `{0:"10.0.0.1:10911"}`;
//! - maps keyed by an object (a `MessageQueue`) are written with the **object in key
//!   position**: `{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}`.
//!
//! Writing: fields that need such keys use [`bare_keys`] or [`object_keys`] as serde
//! `with` modules; they tag each key, and [`to_vec`] writes tagged keys bare or, in
//! [`KeyStyle::Standard`] (fastjson's `BrowserCompatible`, used for routes asked by
//! new clients), quoted. Reading: [`from_slice`] first rewrites bare and object keys
//! into quoted strings, then lets serde do the rest, so our parsers accept both forms.

use std::collections::BTreeMap;
use std::fmt::{self, Display};
use std::str::FromStr;

use bytes::{BufMut, BytesMut};
use serde::de::{DeserializeOwned, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::BodyError;

/// Marks a map key that fastjson writes without quotes. A NUL can never start a real key.
const BARE_KEY_TAG: char = '\u{0}';

/// How tagged map keys are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStyle {
    /// fastjson's default: bare integer keys, object keys in place.
    Fastjson,
    /// fastjson `BrowserCompatible`: keys quoted, non-ASCII escaped as `\uXXXX`.
    Standard,
}

/// Serialises `value` as fastjson would.
///
/// # Errors
/// When `value` cannot be represented as JSON (a map with non-string keys not
/// declared through [`bare_keys`]/[`object_keys`]).
pub fn to_vec<T: Serialize + ?Sized>(value: &T, style: KeyStyle) -> Result<Vec<u8>, BodyError> {
    let value = serde_json::to_value(value).map_err(|e| BodyError {
        what: std::any::type_name::<T>(),
        reason: e.to_string(),
    })?;
    let mut buf = BytesMut::with_capacity(256);
    write_value(&mut buf, &value, style);
    Ok(buf.to_vec())
}

/// Parses a body (a JSON object) written by fastjson (bare or object keys) or by a
/// standard JSON writer.
///
/// # Errors
/// When the bytes are not JSON of the expected shape.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, BodyError> {
    let err = |reason: String| BodyError {
        what: short_type_name::<T>(),
        reason,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| err(e.to_string()))?;
    // Every body is a JSON object; serde would also take a struct written as an array.
    if text.trim_start().as_bytes().first() != Some(&b'{') {
        return Err(err("body is not a JSON object".to_owned()));
    }
    let normal = normalize(text).map_err(|r| err(r.to_owned()))?;
    serde_json::from_str(&normal).map_err(|e| err(e.to_string()))
}

fn short_type_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    full.rsplit("::").next().unwrap_or(full)
}

// ---------------------------------------------------------------- writing

fn write_value(buf: &mut BytesMut, value: &Value, style: KeyStyle) {
    match value {
        Value::Null => buf.put_slice(b"null"),
        Value::Bool(b) => buf.put_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => buf.put_slice(n.to_string().as_bytes()),
        Value::String(s) => write_str(buf, s, style),
        Value::Array(items) => {
            buf.put_u8(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    buf.put_u8(b',');
                }
                write_value(buf, item, style);
            }
            buf.put_u8(b']');
        }
        Value::Object(map) => {
            buf.put_u8(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    buf.put_u8(b',');
                }
                match (key.strip_prefix(BARE_KEY_TAG), style) {
                    (Some(bare), KeyStyle::Fastjson) => buf.put_slice(bare.as_bytes()),
                    (Some(bare), KeyStyle::Standard) => write_str(buf, bare, style),
                    (None, _) => write_str(buf, key, style),
                }
                buf.put_u8(b':');
                write_value(buf, item, style);
            }
            buf.put_u8(b'}');
        }
    }
}

fn write_str(buf: &mut BytesMut, s: &str, style: KeyStyle) {
    if style == KeyStyle::Fastjson || s.is_ascii() {
        crate::header::put_json_str(buf, s);
        return;
    }
    buf.put_u8(b'"');
    for c in s.chars() {
        if c.is_ascii() {
            let mut tmp = BytesMut::with_capacity(8);
            crate::header::put_json_str(&mut tmp, c.encode_utf8(&mut [0; 4]));
            buf.put_slice(&tmp[1..tmp.len() - 1]);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                buf.put_slice(format!("\\u{unit:04x}").as_bytes());
            }
        }
    }
    buf.put_u8(b'"');
}

// ---------------------------------------------------------------- reading

/// Rewrites fastjson's bare and object keys as quoted strings: `{0:"a"}` becomes
/// `{"0":"a"}` and `{{"q":1}:2}` becomes `{"{\"q\":1}":2}`. Everything else is copied.
fn normalize(input: &str) -> Result<String, &'static str> {
    #[derive(Clone, Copy, PartialEq)]
    enum Ctx {
        Object { expect_key: bool },
        Array,
    }
    let bytes = input.as_bytes();
    let mut out = String::with_capacity(input.len() + 16);
    let mut stack: Vec<Ctx> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            out.push(char::from(c));
            i += 1;
            continue;
        }
        let expecting_key = matches!(stack.last(), Some(Ctx::Object { expect_key: true }));
        if expecting_key && c != b'"' && c != b'}' {
            // A key that is not a string: an object/array literal, or a bare token.
            let end = if c == b'{' || c == b'[' {
                balanced_end(bytes, i)?
            } else {
                bytes[i..]
                    .iter()
                    .position(|b| *b == b':' || b.is_ascii_whitespace())
                    .map_or(bytes.len(), |p| i + p)
            };
            let key = &input[i..end];
            let quoted = serde_json::to_string(key).map_err(|_| "unencodable key")?;
            out.push_str(&quoted);
            if let Some(Ctx::Object { expect_key }) = stack.last_mut() {
                *expect_key = false;
            }
            i = end;
            continue;
        }
        match c {
            b'"' => {
                let end = string_end(bytes, i)?;
                out.push_str(&input[i..end]);
                if let Some(Ctx::Object { expect_key }) = stack.last_mut() {
                    *expect_key = false;
                }
                i = end;
                continue;
            }
            b'{' => stack.push(Ctx::Object { expect_key: true }),
            b'[' => stack.push(Ctx::Array),
            b'}' | b']' => {
                stack.pop().ok_or("unbalanced brackets")?;
            }
            b',' => {
                if let Some(Ctx::Object { expect_key }) = stack.last_mut() {
                    *expect_key = true;
                }
            }
            _ => {}
        }
        // Multi-byte UTF-8 sequences are copied whole.
        let len = utf8_len(c);
        let chunk = input.get(i..i + len).ok_or("invalid UTF-8")?;
        out.push_str(chunk);
        i += len;
    }
    Ok(out)
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

/// Index just past the string literal starting at `start` (a `"`).
fn string_end(bytes: &[u8], start: usize) -> Result<usize, &'static str> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Ok(i + 1),
            _ => i += 1,
        }
    }
    Err("unterminated string")
}

/// Index just past the object or array literal starting at `start`.
fn balanced_end(bytes: &[u8], start: usize) -> Result<usize, &'static str> {
    let mut depth = 0usize;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = string_end(bytes, i)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err("unterminated key object")
}

// ---------------------------------------------------------------- serde helpers

/// `#[serde(with = "fastjson::bare_keys")]` for maps whose keys fastjson writes bare
/// (`Map<Long, String>`, `Map<Integer, Long>`).
pub mod bare_keys {
    use super::{
        BARE_KEY_TAG, BTreeMap, Deserialize, Deserializer, Display, FromStr, SerializeMap,
        Serializer,
    };
    use serde::Serialize;
    use serde::de::Error as _;

    /// Serialises with tagged keys.
    ///
    /// # Errors
    /// Propagates the serializer's errors.
    pub fn serialize<K: Display, V: Serialize, S: Serializer>(
        map: &BTreeMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(map.len()))?;
        for (k, v) in map {
            m.serialize_entry(&format!("{BARE_KEY_TAG}{k}"), v)?;
        }
        m.end()
    }

    /// Deserialises from quoted (after normalisation) keys.
    ///
    /// # Errors
    /// A key that does not parse as `K`.
    pub fn deserialize<'de, K, V, D>(d: D) -> Result<BTreeMap<K, V>, D::Error>
    where
        K: FromStr + Ord,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        let raw = BTreeMap::<String, V>::deserialize(d)?;
        raw.into_iter()
            .map(|(k, v)| {
                k.trim()
                    .parse::<K>()
                    .map(|k| (k, v))
                    .map_err(|_| D::Error::custom(format!("invalid map key '{k}'")))
            })
            .collect()
    }
}

/// `#[serde(with = "fastjson::object_keys")]` for maps keyed by an object
/// (`Map<MessageQueue, _>`), written as `{{"brokerName":..}:value}`.
pub mod object_keys {
    use super::{BARE_KEY_TAG, BTreeMap, DeserializeOwned, Deserializer, SerializeMap, Serializer};
    use serde::de::Error as _;
    use serde::ser::Error as _;
    use serde::{Deserialize, Serialize};

    /// Serialises with each key as a tagged JSON object.
    ///
    /// # Errors
    /// Propagates the serializer's errors.
    pub fn serialize<K: Serialize, V: Serialize, S: Serializer>(
        map: &BTreeMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(map.len()))?;
        for (k, v) in map {
            // Through a Value so the key's fields come out sorted, as fastjson writes them.
            let key = serde_json::to_value(k)
                .and_then(|v| serde_json::to_string(&v))
                .map_err(S::Error::custom)?;
            m.serialize_entry(&format!("{BARE_KEY_TAG}{key}"), v)?;
        }
        m.end()
    }

    /// Deserialises keys that hold the JSON text of an object.
    ///
    /// # Errors
    /// A key that is not the JSON of a `K`.
    pub fn deserialize<'de, K, V, D>(d: D) -> Result<BTreeMap<K, V>, D::Error>
    where
        K: DeserializeOwned + Ord,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        let raw = BTreeMap::<String, V>::deserialize(d)?;
        raw.into_iter()
            .map(|(k, v)| {
                serde_json::from_str::<K>(&k)
                    .map(|k| (k, v))
                    .map_err(|e| D::Error::custom(format!("invalid object key '{k}': {e}")))
            })
            .collect()
    }
}

/// A `Display` adapter so a body can be logged.
#[derive(Debug)]
pub struct Lossy<'a>(pub &'a [u8]);

impl Display for Lossy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone)]
    #[serde(rename_all = "camelCase")]
    struct Mq {
        broker_name: String,
        queue_id: i32,
        topic: String,
    }

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Both {
        #[serde(with = "bare_keys")]
        broker_addrs: BTreeMap<i64, String>,
        #[serde(with = "object_keys")]
        offset_table: BTreeMap<Mq, i64>,
        name: String,
    }

    fn sample() -> Both {
        Both {
            broker_addrs: [
                (0, "10.0.0.1:10911".to_owned()),
                (1, "10.0.0.2:10911".to_owned()),
            ]
            .into(),
            offset_table: [(
                Mq {
                    broker_name: "b".into(),
                    queue_id: 0,
                    topic: "T".into(),
                },
                100,
            )]
            .into(),
            name: "名字".into(),
        }
    }

    #[test]
    fn writes_fastjson_and_standard_forms() {
        let fj = String::from_utf8(to_vec(&sample(), KeyStyle::Fastjson).unwrap()).unwrap();
        assert_eq!(
            fj,
            r#"{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"name":"名字","offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:100}}"#
        );
        let std = String::from_utf8(to_vec(&sample(), KeyStyle::Standard).unwrap()).unwrap();
        assert!(std.starts_with(r#"{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"name":"\u540d\u5b57""#), "{std}");
        serde_json::from_str::<serde_json::Value>(&std).unwrap();
    }

    #[test]
    fn reads_both_forms() {
        for style in [KeyStyle::Fastjson, KeyStyle::Standard] {
            let bytes = to_vec(&sample(), style).unwrap();
            assert_eq!(from_slice::<Both>(&bytes).unwrap(), sample());
        }
        let spaced = br#"{ "brokerAddrs" : { 0 : "a" , 1:"b" }, "offsetTable":{ {"brokerName":"b","queueId":1,"topic":"x}{"} : 5 }, "name":"n"}"#;
        let b: Both = from_slice(spaced).unwrap();
        assert_eq!(b.broker_addrs[&1], "b");
        assert_eq!(b.offset_table.keys().next().unwrap().topic, "x}{");
    }

    #[test]
    fn refuses_garbage_without_panicking() {
        for bad in [
            &b"{"[..],
            b"{0",
            b"{{",
            b"}",
            b"{\"a",
            b"\xff",
            b"{{\"a\":1}",
            b"[1,2",
        ] {
            assert!(from_slice::<Both>(bad).is_err());
        }
    }
}
