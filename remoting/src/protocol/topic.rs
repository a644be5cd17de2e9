//! Topic configuration bodies: `TopicConfig`, `DataVersion`, the
//! `TopicConfigSerializeWrapper` (topics.json, GET_ALL_TOPIC_CONFIG) and
//! `RegisterBrokerBody` (REGISTER_BROKER), including its zlib "compressed" form.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use crate::error::BodyError;
use crate::fastjson::{self, KeyStyle};
use crate::protocol::constants::perm;

/// How tags are filtered on a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum TopicFilterType {
    /// One tag per message.
    #[default]
    #[serde(rename = "SINGLE_TAG")]
    SingleTag,
    /// Several tags per message (the broker sets the MULTI_TAGS sys flag).
    #[serde(rename = "MULTI_TAG")]
    MultiTag,
}

impl TopicFilterType {
    /// The Java enum name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            TopicFilterType::SingleTag => "SINGLE_TAG",
            TopicFilterType::MultiTag => "MULTI_TAG",
        }
    }

    /// From the Java enum name.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "SINGLE_TAG" => Some(TopicFilterType::SingleTag),
            "MULTI_TAG" => Some(TopicFilterType::MultiTag),
            _ => None,
        }
    }
}

/// One topic on one broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TopicConfig {
    /// Topic name.
    pub topic_name: String,
    /// Readable queues.
    pub read_queue_nums: i32,
    /// Writable queues.
    pub write_queue_nums: i32,
    /// Permission bits.
    pub perm: i32,
    /// Tag filter type.
    pub topic_filter_type: TopicFilterType,
    /// Topic sys flag.
    pub topic_sys_flag: i32,
    /// Ordered topic.
    pub order: bool,
    /// 5.x attributes (`+message.type=NORMAL` style keys).
    pub attributes: BTreeMap<String, String>,
}

/// Java's `TopicConfig.defaultReadQueueNums` / `defaultWriteQueueNums`.
pub const DEFAULT_QUEUE_NUMS: i32 = 16;

impl Default for TopicConfig {
    fn default() -> Self {
        TopicConfig {
            topic_name: String::new(),
            read_queue_nums: DEFAULT_QUEUE_NUMS,
            write_queue_nums: DEFAULT_QUEUE_NUMS,
            perm: perm::READ | perm::WRITE,
            topic_filter_type: TopicFilterType::SingleTag,
            topic_sys_flag: 0,
            order: false,
            attributes: BTreeMap::new(),
        }
    }
}

impl TopicConfig {
    /// A config with `queues` read and write queues and RW permission.
    #[must_use]
    pub fn new(name: impl Into<String>, queues: i32) -> Self {
        TopicConfig {
            topic_name: name.into(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            ..TopicConfig::default()
        }
    }

    /// The space-separated form used by compressed registration
    /// (`name readQ writeQ perm filterType attributesJSON`).
    #[must_use]
    pub fn encode_compact(&self) -> String {
        let attrs = serde_json::to_string(&self.attributes).unwrap_or_else(|_| "{}".into());
        format!(
            "{} {} {} {} {} {}",
            self.topic_name,
            self.read_queue_nums,
            self.write_queue_nums,
            self.perm,
            self.topic_filter_type.name(),
            attrs
        )
    }

    /// Parses [`encode_compact`](Self::encode_compact); attributes that do not parse
    /// are dropped, as Java does.
    #[must_use]
    pub fn decode_compact(text: &str) -> Option<Self> {
        let parts: Vec<&str> = text.split(' ').collect();
        if parts.len() < 5 {
            return None;
        }
        Some(TopicConfig {
            topic_name: parts[0].to_owned(),
            read_queue_nums: parts[1].parse().ok()?,
            write_queue_nums: parts[2].parse().ok()?,
            perm: parts[3].parse().ok()?,
            topic_filter_type: TopicFilterType::from_name(parts[4])?,
            attributes: parts
                .get(5)
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or_default(),
            ..TopicConfig::default()
        })
    }
}

/// A version stamp of a config table; brokers bump it on every change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct DataVersion {
    /// Milliseconds since the epoch at the last change.
    pub timestamp: i64,
    /// Change counter.
    pub counter: i64,
    /// 5.x state version.
    pub state_version: i64,
}

impl DataVersion {
    /// A fresh version stamped `now_ms`.
    #[must_use]
    pub fn new(now_ms: i64) -> Self {
        DataVersion {
            timestamp: now_ms,
            counter: 0,
            state_version: 0,
        }
    }

    /// Records a change at `now_ms`.
    pub fn next_version(&mut self, now_ms: i64) {
        self.timestamp = now_ms;
        self.counter += 1;
    }
}

/// topics.json / GET_ALL_TOPIC_CONFIG body / the topic part of a registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct TopicConfigSerializeWrapper {
    /// Topic name → config.
    pub topic_config_table: BTreeMap<String, TopicConfig>,
    /// Version of the table.
    pub data_version: DataVersion,
}

/// REGISTER_BROKER body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct RegisterBrokerBody {
    /// The broker's topics.
    pub topic_config_serialize_wrapper: TopicConfigSerializeWrapper,
    /// Filter servers (unused, kept for the format).
    pub filter_server_list: Vec<String>,
}

fn body_error(reason: impl Into<String>) -> BodyError {
    BodyError {
        what: "RegisterBrokerBody",
        reason: reason.into(),
    }
}

impl RegisterBrokerBody {
    /// Encodes as JSON, or in the zlib form when `compressed`.
    ///
    /// # Errors
    /// Serialisation failure (not expected for well-formed configs).
    pub fn encode(&self, compressed: bool) -> Result<Vec<u8>, BodyError> {
        if !compressed {
            return fastjson::to_vec(self, KeyStyle::Fastjson);
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        let wrapper = &self.topic_config_serialize_wrapper;
        let io = |e: std::io::Error| body_error(e.to_string());
        let dv =
            serde_json::to_vec(&wrapper.data_version).map_err(|e| body_error(e.to_string()))?;
        put(&mut z, &dv).map_err(io)?;
        let count = i32::try_from(wrapper.topic_config_table.len())
            .map_err(|_| body_error("too many topics"))?;
        z.write_all(&count.to_be_bytes()).map_err(io)?;
        for config in wrapper.topic_config_table.values() {
            put(&mut z, config.encode_compact().as_bytes()).map_err(io)?;
        }
        let filters =
            serde_json::to_vec(&self.filter_server_list).map_err(|e| body_error(e.to_string()))?;
        put(&mut z, &filters).map_err(io)?;
        // 5.x appends the static-topic mapping count; zero mappings.
        z.write_all(&0i32.to_be_bytes()).map_err(io)?;
        z.finish().map_err(io)
    }

    /// Decodes JSON, or the zlib form when `compressed`.
    ///
    /// # Errors
    /// The bytes are not a body of that form.
    pub fn decode(bytes: &[u8], compressed: bool) -> Result<Self, BodyError> {
        if !compressed {
            return fastjson::from_slice(bytes);
        }
        let mut data = Vec::new();
        flate2::read::ZlibDecoder::new(bytes)
            .read_to_end(&mut data)
            .map_err(|e| body_error(format!("inflate: {e}")))?;
        let mut cursor = data.as_slice();
        let data_version: DataVersion = serde_json::from_slice(take_chunk(&mut cursor)?)
            .map_err(|e| body_error(format!("data version: {e}")))?;
        let count = take_i32(&mut cursor)?;
        let mut table = BTreeMap::new();
        for _ in 0..count {
            let text = std::str::from_utf8(take_chunk(&mut cursor)?)
                .map_err(|_| body_error("topic config is not UTF-8"))?;
            let config = TopicConfig::decode_compact(text)
                .ok_or_else(|| body_error(format!("bad topic config '{text}'")))?;
            table.insert(config.topic_name.clone(), config);
        }
        let filter_server_list =
            serde_json::from_slice(take_chunk(&mut cursor)?).unwrap_or_default();
        Ok(RegisterBrokerBody {
            topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                topic_config_table: table,
                data_version,
            },
            filter_server_list,
        })
    }
}

/// Writes `len(bytes)` as a big-endian i32, then the bytes.
fn put(z: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    let len = i32::try_from(bytes.len()).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    z.write_all(&len.to_be_bytes())?;
    z.write_all(bytes)
}

fn take_i32(cursor: &mut &[u8]) -> Result<i32, BodyError> {
    let (head, tail) = cursor
        .split_at_checked(4)
        .ok_or_else(|| body_error("truncated"))?;
    *cursor = tail;
    Ok(i32::from_be_bytes([head[0], head[1], head[2], head[3]]))
}

fn take_chunk<'a>(cursor: &mut &'a [u8]) -> Result<&'a [u8], BodyError> {
    let len = usize::try_from(take_i32(cursor)?).map_err(|_| body_error("negative length"))?;
    let (head, tail) = cursor
        .split_at_checked(len)
        .ok_or_else(|| body_error("truncated"))?;
    *cursor = tail;
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> RegisterBrokerBody {
        let mut table = BTreeMap::new();
        table.insert("T1".to_owned(), TopicConfig::new("T1", 4));
        let mut tbw = TopicConfig::new("TBW102", 8);
        tbw.perm = 7;
        table.insert("TBW102".to_owned(), tbw);
        RegisterBrokerBody {
            topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                topic_config_table: table,
                data_version: DataVersion {
                    timestamp: 1_700_000_000_000,
                    counter: 12,
                    state_version: 0,
                },
            },
            filter_server_list: vec![],
        }
    }

    #[test]
    fn json_and_compressed_round_trip() {
        for compressed in [false, true] {
            let bytes = body().encode(compressed).unwrap();
            assert_eq!(
                RegisterBrokerBody::decode(&bytes, compressed).unwrap(),
                body()
            );
        }
        let json = String::from_utf8(body().encode(false).unwrap()).unwrap();
        assert!(
            json.contains(
                r#""dataVersion":{"counter":12,"stateVersion":0,"timestamp":1700000000000}"#
            ),
            "{json}"
        );
        assert!(json.contains(r#""T1":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T1","topicSysFlag":0,"writeQueueNums":4}"#), "{json}");
    }

    #[test]
    fn compressed_garbage_is_an_error() {
        assert!(RegisterBrokerBody::decode(b"not zlib", true).is_err());
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&[0, 0, 0, 9, b'{']).unwrap();
        assert!(RegisterBrokerBody::decode(&z.finish().unwrap(), true).is_err());
    }

    #[test]
    fn compact_config() {
        let c = TopicConfig::new("T", 3);
        assert_eq!(c.encode_compact(), "T 3 3 6 SINGLE_TAG {}");
        assert_eq!(TopicConfig::decode_compact(&c.encode_compact()), Some(c));
        assert_eq!(TopicConfig::decode_compact("T 1 2"), None);
    }
}
