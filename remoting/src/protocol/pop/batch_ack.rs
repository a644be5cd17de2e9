//! The BATCH_ACK_MESSAGE (200151) body: acks grouped by the pop that handed the
//! messages out, each offset one bit.

use std::collections::HashMap;
use std::fmt;

use base64::Engine as _;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::{ExtraInfo, InvalidExtraInfo, RetryFlag};

/// BATCH_ACK_MESSAGE body (`BatchAckMessageRequestBody`):
/// `{"acks":[BatchAck…],"brokerName":"broker-a"}`. No acks (an empty body, missing or
/// null `acks`) is answered NO_MESSAGE.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchAckMessageRequestBody {
    /// The acks, one per (retry flag, queue, checkpoint start offset, pop time).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub acks: Vec<BatchAck>,
    /// The broker the handles name (the first handle's); the revive records carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_name: Option<String>,
}

fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

impl BatchAckMessageRequestBody {
    /// Groups handles of `topic` (the original topic) as a 5.3.3 client does
    /// (`MQClientAPIImpl.batchAckMessageAsync`): one [`BatchAck`] per retry flag, queue,
    /// checkpoint start offset and pop time, in first-seen order; the broker name of the
    /// first handle.
    ///
    /// # Errors
    /// A handle without a queue offset, or whose offset is not within `u32` above its
    /// checkpoint's start offset.
    pub fn from_handles(
        group: &str,
        topic: &str,
        handles: &[ExtraInfo],
    ) -> Result<Self, InvalidExtraInfo> {
        let mut acks: Vec<BatchAck> = Vec::new();
        let mut index: HashMap<(RetryFlag, i32, i64, i64), usize> = HashMap::new();
        for h in handles {
            let delta = h
                .queue_offset
                .and_then(|o| o.checked_sub(h.ck_queue_offset))
                .and_then(|d| u32::try_from(d).ok())
                .ok_or_else(|| InvalidExtraInfo {
                    what: "extraInfo",
                    input: h.encode(),
                    reason: "no queue offset at or above ckQueueOffset".into(),
                })?;
            let key = (h.retry, h.queue_id, h.ck_queue_offset, h.pop_time);
            let i = *index.entry(key).or_insert_with(|| {
                acks.push(BatchAck {
                    bit_set: AckBits::default(),
                    consumer_group: group.to_owned(),
                    invisible_time: h.invisible_time,
                    pop_time: h.pop_time,
                    queue_id: h.queue_id,
                    retry: h.retry.as_str().to_owned(),
                    revive_queue_id: h.revive_qid,
                    start_offset: h.ck_queue_offset,
                    topic: topic.to_owned(),
                });
                acks.len() - 1
            });
            acks[i].bit_set.insert(delta);
        }
        Ok(BatchAckMessageRequestBody {
            acks,
            broker_name: handles.first().map(|h| h.broker_name.clone()),
        })
    }
}

/// One entry of a batch ack (`BatchAck`): the messages of one pop's read of one queue.
/// Java writes the short JSON names (sorted, as fastjson does):
/// `{"b":"CQ==","c":"GID","it":60000,"pt":1700000000000,"q":3,"r":"0","rq":2,"so":100,"t":"TopicA"}`;
/// the long names (`bitSet`, `consumerGroup`, …) are read too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchAck {
    /// Which offsets are acked, relative to `start_offset`.
    #[serde(rename = "b", alias = "bitSet", default)]
    pub bit_set: AckBits,
    /// The consumer group.
    #[serde(rename = "c", alias = "consumerGroup")]
    pub consumer_group: String,
    /// The pop's invisible time (ms).
    #[serde(rename = "it", alias = "invisibleTime")]
    pub invisible_time: i64,
    /// The pop's time (epoch ms).
    #[serde(rename = "pt", alias = "popTime")]
    pub pop_time: i64,
    /// Queue of the topic read.
    #[serde(rename = "q", alias = "queueId")]
    pub queue_id: i32,
    /// [`RetryFlag`] text: `"0"`, `"1"` or `"2"` (kept as sent; see [`BatchAck::retry_flag`]).
    #[serde(rename = "r", alias = "retry")]
    pub retry: String,
    /// Revive queue of the checkpoint; 999 for FIFO.
    #[serde(rename = "rq", alias = "reviveQueueId")]
    pub revive_queue_id: i32,
    /// The checkpoint's start offset (extraInfo field 0).
    #[serde(rename = "so", alias = "startOffset")]
    pub start_offset: i64,
    /// The original topic (never the retry topic: `retry` says which was read).
    #[serde(rename = "t", alias = "topic")]
    pub topic: String,
}

impl BatchAck {
    /// The retry flag, `None` if `retry` is none of `"0"`, `"1"`, `"2"`.
    #[must_use]
    pub fn retry_flag(&self) -> Option<RetryFlag> {
        RetryFlag::parse(&self.retry)
    }

    /// The topic the messages were read from (`ExtraInfoUtil.getRealTopic(t, c, r)`);
    /// `None` for an unknown retry flag, which Java refuses.
    #[must_use]
    pub fn real_topic(&self) -> Option<String> {
        self.retry_flag()
            .map(|f| f.real_topic(&self.topic, &self.consumer_group))
    }

    /// The acked queue offsets, ascending: `start_offset + delta` for every bit
    /// (offsets past `i64::MAX` are dropped).
    pub fn offsets(&self) -> impl Iterator<Item = i64> + '_ {
        self.bit_set
            .deltas()
            .map_while(|d| self.start_offset.checked_add(i64::from(d)))
    }
}

/// A `java.util.BitSet` as `BitSetSerializerDeserializer` writes it: the base64 text of
/// `BitSet.toByteArray()` (little-endian, bit `i` is bit `i % 8` of byte `i / 8`, no
/// trailing zero byte). Bit `i` set means offset `start_offset + i` is acked.
///
/// Reads base64 with or without padding, a JSON array of byte values, and `null` (or a
/// missing field) as empty. Deltas are small in practice (a pop reads at most 32
/// messages); [`AckBits::from_deltas`] allocates `max / 8` bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct AckBits(Vec<u8>);

impl AckBits {
    /// The set of the given deltas.
    pub fn from_deltas(deltas: impl IntoIterator<Item = u32>) -> Self {
        let mut bits = AckBits::default();
        for d in deltas {
            bits.insert(d);
        }
        bits
    }

    /// From `BitSet.toByteArray()` bytes (trailing zero bytes allowed, as
    /// `BitSet.valueOf` takes them).
    #[must_use]
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let len = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        AckBits(bytes[..len].to_vec())
    }

    /// `BitSet.toByteArray()`.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Sets `delta`.
    pub fn insert(&mut self, delta: u32) {
        let byte = (delta / 8) as usize;
        if self.0.len() <= byte {
            self.0.resize(byte + 1, 0);
        }
        self.0[byte] |= 1 << (delta % 8);
    }

    /// Whether `delta` is set.
    #[must_use]
    pub fn contains(&self, delta: u32) -> bool {
        self.0
            .get((delta / 8) as usize)
            .is_some_and(|b| b & (1 << (delta % 8)) != 0)
    }

    /// The set deltas, ascending.
    pub fn deltas(&self) -> impl Iterator<Item = u32> + '_ {
        self.0
            .iter()
            .enumerate()
            .flat_map(|(i, &b)| {
                (0..8)
                    .filter(move |j| b & (1 << j) != 0)
                    .map(move |j| i * 8 + j)
            })
            .map_while(|d| u32::try_from(d).ok())
    }

    /// Whether no bit is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many bits are set.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.iter().map(|b| b.count_ones() as usize).sum()
    }
}

impl FromIterator<u32> for AckBits {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        AckBits::from_deltas(iter)
    }
}

impl Serialize for AckBits {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for AckBits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AckBits;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a base64 BitSet, a byte array or null")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<AckBits, E> {
                let engine = base64::engine::GeneralPurpose::new(
                    &base64::alphabet::STANDARD,
                    base64::engine::GeneralPurposeConfig::new()
                        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
                );
                engine
                    .decode(v)
                    .map(|bytes| AckBits::from_bytes(&bytes))
                    .map_err(|e| E::custom(format!("bit set is not base64: {e}")))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AckBits, A::Error> {
                let mut bytes = Vec::new();
                while let Some(b) = seq.next_element::<i16>()? {
                    // Java bytes are signed; accept either reading of one.
                    let b = u8::try_from(b)
                        .or_else(|_| i8::try_from(b).map(|v| v.to_le_bytes()[0]))
                        .map_err(|_| de::Error::custom(format!("{b} is not a byte")))?;
                    bytes.push(b);
                }
                Ok(AckBits::from_bytes(&bytes))
            }
            fn visit_unit<E: de::Error>(self) -> Result<AckBits, E> {
                Ok(AckBits::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<AckBits, E> {
                Ok(AckBits::default())
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<AckBits, D2::Error> {
                d.deserialize_any(V)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn handle(text: &str) -> ExtraInfo {
        ExtraInfo::parse(text).unwrap()
    }

    #[test]
    fn worked_example_of_the_spec() {
        // Offsets 100 and 103 of the pop that started at 100 on queue 3.
        let body = BatchAckMessageRequestBody::from_handles(
            "GID",
            "TopicA",
            &[
                handle("100 1700000000000 60000 2 0 broker-a 3 100"),
                handle("100 1700000000000 60000 2 0 broker-a 3 103 987654"),
            ],
        )
        .unwrap();
        assert_eq!(body.acks.len(), 1);
        assert_eq!(body.acks[0].bit_set.as_bytes(), [0x09]);
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"acks":[{"b":"CQ==","c":"GID","it":60000,"pt":1700000000000,"q":3,"r":"0","rq":2,"so":100,"t":"TopicA"}],"brokerName":"broker-a"}"#
        );
        assert_eq!(body.acks[0].offsets().collect::<Vec<_>>(), [100, 103]);
        assert_eq!(body.acks[0].real_topic().as_deref(), Some("TopicA"));
    }

    /// A body as 5.3.3 writes it by hand from BatchAck.java's @JSONField names, in
    /// fastjson's order, with a v1 retry entry next to a normal one.
    #[test]
    fn reads_java_s_batch_ack() {
        let java = br#"{"acks":[{"b":"CQ==","c":"GID","it":60000,"pt":1700000000000,"q":3,"r":"0","rq":2,"so":100,"t":"TopicA"},{"b":"AQI=","c":"GID","it":30000,"pt":1700000001000,"q":0,"r":"1","rq":5,"so":7,"t":"TopicA"}],"brokerName":"broker-a"}"#;
        let body: BatchAckMessageRequestBody = crate::fastjson::from_slice(java).unwrap();
        assert_eq!(body.broker_name.as_deref(), Some("broker-a"));
        let [normal, retry] = body.acks.as_slice() else {
            panic!("two acks expected: {body:?}");
        };
        assert_eq!(normal.offsets().collect::<Vec<_>>(), [100, 103]);
        assert_eq!(normal.retry_flag(), Some(RetryFlag::Normal));
        assert_eq!((normal.queue_id, normal.revive_queue_id), (3, 2));
        assert_eq!(
            (normal.pop_time, normal.invisible_time),
            (1_700_000_000_000, 60_000)
        );
        // [0x01, 0x02]: bits 0 and 9.
        assert_eq!(retry.offsets().collect::<Vec<_>>(), [7, 16]);
        assert_eq!(retry.real_topic().as_deref(), Some("%RETRY%GID_TopicA"));
        // Written back byte for byte.
        assert_eq!(serde_json::to_vec(&body).unwrap(), java.to_vec());
    }

    #[test]
    fn long_names_nulls_and_byte_arrays_are_read() {
        let long = r#"{"acks":[{"bitSet":"CQ","consumerGroup":"GID","invisibleTime":60000,"popTime":1,"queueId":3,"retry":"2","reviveQueueId":2,"startOffset":100,"topic":"TopicA"}]}"#;
        let body: BatchAckMessageRequestBody = serde_json::from_str(long).unwrap();
        let ack = &body.acks[0];
        assert_eq!(ack.offsets().collect::<Vec<_>>(), [100, 103]);
        assert_eq!(ack.real_topic().as_deref(), Some("%RETRY%GID+TopicA"));
        assert_eq!(body.broker_name, None);

        let no_bits = r#"{"c":"GID","it":1,"pt":1,"q":0,"r":"0","rq":0,"so":5,"t":"T"}"#;
        let ack: BatchAck = serde_json::from_str(no_bits).unwrap();
        assert!(ack.bit_set.is_empty());
        let null_bits = r#"{"b":null,"c":"GID","it":1,"pt":1,"q":0,"r":"0","rq":0,"so":5,"t":"T"}"#;
        assert!(
            serde_json::from_str::<BatchAck>(null_bits)
                .unwrap()
                .bit_set
                .is_empty()
        );
        let array = r#"{"b":[9,-128],"c":"GID","it":1,"pt":1,"q":0,"r":"9","rq":0,"so":5,"t":"T"}"#;
        let ack: BatchAck = serde_json::from_str(array).unwrap();
        assert_eq!(ack.bit_set.deltas().collect::<Vec<_>>(), [0, 3, 15]);
        assert_eq!(ack.retry_flag(), None);
        assert_eq!(ack.real_topic(), None);

        for empty in ["", "{}", r#"{"acks":null}"#] {
            let body: Result<BatchAckMessageRequestBody, _> = serde_json::from_str(empty);
            assert!(body.is_err() || body.unwrap().acks.is_empty(), "{empty}");
        }
        let bad = r#"{"b":"!!","c":"GID","it":1,"pt":1,"q":0,"r":"0","rq":0,"so":5,"t":"T"}"#;
        assert!(serde_json::from_str::<BatchAck>(bad).is_err());
    }

    #[test]
    fn bits_are_java_s_to_byte_array() {
        assert_eq!(AckBits::from_deltas([]).as_bytes(), [0u8; 0]);
        assert_eq!(serde_json::to_string(&AckBits::default()).unwrap(), r#""""#);
        assert_eq!(AckBits::from_deltas([8]).as_bytes(), [0, 1]);
        assert_eq!(AckBits::from_deltas([7, 0]).as_bytes(), [0x81]);
        assert_eq!(AckBits::from_bytes(&[1, 0, 0]), AckBits::from_deltas([0]));
        let bits: AckBits = [3, 31].into_iter().collect();
        assert!(bits.contains(31) && !bits.contains(30) && !bits.contains(1000));
        assert_eq!(bits.len(), 2);
        // Offsets past i64::MAX stop the walk instead of overflowing.
        let ack = BatchAck {
            bit_set: AckBits::from_deltas([0, 1]),
            consumer_group: "G".into(),
            invisible_time: 0,
            pop_time: 0,
            queue_id: 0,
            retry: "0".into(),
            revive_queue_id: 0,
            start_offset: i64::MAX,
            topic: "T".into(),
        };
        assert_eq!(ack.offsets().collect::<Vec<_>>(), [i64::MAX]);
    }

    #[test]
    fn handles_group_by_pop_and_queue() {
        let body = BatchAckMessageRequestBody::from_handles(
            "GID",
            "TopicA",
            &[
                handle("100 1 60000 2 0 broker-a 3 101"),
                handle("7 2 60000 5 1 broker-a 0 7"),
                handle("100 1 60000 2 0 broker-a 3 100"),
            ],
        )
        .unwrap();
        let got: Vec<(String, Vec<i64>)> = body
            .acks
            .iter()
            .map(|a| (a.retry.clone(), a.offsets().collect()))
            .collect();
        assert_eq!(got, [("0".into(), vec![100, 101]), ("1".into(), vec![7])]);
        for bad in ["100 1 60000 2 0 b 3", "100 1 60000 2 0 b 3 99"] {
            assert!(BatchAckMessageRequestBody::from_handles("G", "T", &[handle(bad)]).is_err());
        }
        assert_eq!(
            BatchAckMessageRequestBody::from_handles("G", "T", &[]).unwrap(),
            BatchAckMessageRequestBody::default()
        );
    }

    proptest! {
        #[test]
        fn bits_round_trip(deltas in proptest::collection::btree_set(0u32..4096, 0..40)) {
            let bits = AckBits::from_deltas(deltas.iter().copied());
            prop_assert_eq!(bits.deltas().collect::<std::collections::BTreeSet<_>>(), deltas.clone());
            let json = serde_json::to_string(&bits).unwrap();
            prop_assert_eq!(serde_json::from_str::<AckBits>(&json).unwrap(), bits);
        }

        #[test]
        fn any_json_string_never_panics(text in ".{0,40}") {
            let _ = serde_json::from_value::<AckBits>(serde_json::Value::String(text));
        }
    }
}
