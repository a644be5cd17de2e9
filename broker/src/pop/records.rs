//! The revive log's records as RocketMQ 5.3.3 writes them: a checkpoint (`ck`) per
//! popped batch and an ack (`ack`, `bAck`) per acknowledgement, JSON bodies with
//! fastjson's short names (`PopCheckPoint`, `AckMsg`, `BatchAckMsg`). The field order of
//! the structs is fastjson's output order (keys sorted, nulls left out), so a store
//! written here reads as Apache's and the other way round.

use serde::{Deserialize, Serialize};

/// A popped batch of one queue, whose un-acked messages come back after `it`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CheckPoint {
    /// Ack bits by message index (0 when written; the revive scan sets them).
    #[serde(rename = "bm", default)]
    pub bit_map: i32,
    /// The broker that holds the messages.
    #[serde(rename = "bn", default, skip_serializing_if = "Option::is_none")]
    pub broker_name: Option<String>,
    /// The consumer group.
    #[serde(rename = "c", default)]
    pub group: String,
    /// Offset of each message minus `so` (absent in checkpoints of old brokers:
    /// `so..so+n` then).
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    pub queue_offset_diff: Option<Vec<i32>>,
    /// Invisible time, ms.
    #[serde(rename = "it", default)]
    pub invisible_time: i64,
    /// Messages in the batch (≤ 32).
    #[serde(rename = "n", default)]
    pub num: u8,
    /// When the batch was popped, ms.
    #[serde(rename = "pt", default)]
    pub pop_time: i64,
    /// The queue read.
    #[serde(rename = "q", default)]
    pub queue_id: i32,
    /// fastjson writes the getter `getReviveTime()` too; readers ignore it.
    #[serde(rename = "reviveTime", default)]
    pub revive_time_written: i64,
    /// Revive-queue offset of the record (set when read back; 0 when written).
    #[serde(rename = "ro", default)]
    pub revive_offset: i64,
    /// Times the checkpoint was put again after a failed revive.
    #[serde(rename = "rp", default, skip_serializing_if = "Option::is_none")]
    pub re_put_times: Option<String>,
    /// The first queue offset read.
    #[serde(rename = "so", default)]
    pub start_offset: i64,
    /// The topic read (a retry topic for retried messages).
    #[serde(rename = "t", default)]
    pub topic: String,
}

impl CheckPoint {
    /// When the batch's un-acked messages come back: pop time + invisible time.
    #[must_use]
    pub fn revive_time(&self) -> i64 {
        self.pop_time.saturating_add(self.invisible_time)
    }

    /// The JSON body, with `reviveTime` filled as fastjson writes it.
    #[must_use]
    pub fn to_json(&self) -> Vec<u8> {
        let mut me = self.clone();
        me.revive_time_written = self.revive_time();
        serde_json::to_vec(&me).unwrap_or_default()
    }

    /// Queue offset of the message at `index`.
    #[must_use]
    pub fn queue_offset(&self, index: usize) -> Option<i64> {
        match &self.queue_offset_diff {
            Some(d) => d
                .get(index)
                .map(|diff| self.start_offset.saturating_add(i64::from(*diff))),
            None => (index < usize::from(self.num))
                .then(|| self.start_offset.saturating_add(index as i64)),
        }
    }

    /// The index of `queue_offset` in the batch (RocketMQ's `indexOfAck`).
    #[must_use]
    pub fn index_of(&self, queue_offset: i64) -> Option<usize> {
        if queue_offset < self.start_offset {
            return None;
        }
        let diff = queue_offset - self.start_offset;
        match &self.queue_offset_diff {
            Some(d) => {
                let diff = i32::try_from(diff).ok()?;
                d.iter().position(|x| *x == diff)
            }
            None => usize::try_from(diff)
                .ok()
                .filter(|i| *i < usize::from(self.num)),
        }
    }

    /// Every message of the batch acked?
    #[must_use]
    pub fn all_acked(&self) -> bool {
        let n = u32::from(self.num.min(32));
        let all = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
        self.bits() & all == all
    }

    /// The ack bits (Java's `int`, bit 31 included).
    #[must_use]
    pub fn bits(&self) -> u32 {
        u32::from_ne_bytes(self.bit_map.to_ne_bytes())
    }

    /// Marks the message at `index` acked.
    pub fn set_acked(&mut self, index: usize) {
        if index < 32 {
            let bits = self.bits() | (1u32 << index);
            self.bit_map = i32::from_ne_bytes(bits.to_ne_bytes());
        }
    }

    /// Whether the message at `index` is acked.
    #[must_use]
    pub fn is_acked(&self, index: usize) -> bool {
        index < 32 && self.bits() & (1u32 << index) != 0
    }

    /// The key acks find their checkpoint by (RocketMQ's merge key: topic, group,
    /// queue, start offset, pop time and broker, concatenated).
    #[must_use]
    pub fn merge_key(&self) -> String {
        merge_key(
            &self.topic,
            &self.group,
            self.queue_id,
            self.start_offset,
            self.pop_time,
            self.broker_name.as_deref().unwrap_or_default(),
        )
    }
}

/// RocketMQ's merge key: plain concatenation, no separators.
#[must_use]
pub fn merge_key(
    topic: &str,
    group: &str,
    queue_id: i32,
    start_offset: i64,
    pop_time: i64,
    broker_name: &str,
) -> String {
    format!("{topic}{group}{queue_id}{start_offset}{pop_time}{broker_name}")
}

/// An acknowledgement of one message (`ack`) or, with `aol`, of several of one
/// checkpoint (`bAck`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AckRecord {
    /// The acked queue offset (−1 in a batch ack).
    #[serde(rename = "ao", alias = "ackOffset", default)]
    pub ack_offset: i64,
    /// The acked offsets of a batch ack.
    #[serde(
        rename = "aol",
        alias = "ackOffsetList",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub ack_offset_list: Option<Vec<i64>>,
    /// The broker that holds the messages.
    #[serde(
        rename = "bn",
        alias = "brokerName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub broker_name: Option<String>,
    /// The consumer group.
    #[serde(rename = "c", alias = "consumerGroup", default)]
    pub group: String,
    /// The checkpoint's pop time.
    #[serde(rename = "pt", alias = "popTime", default)]
    pub pop_time: i64,
    /// The queue.
    #[serde(rename = "q", alias = "queueId", default)]
    pub queue_id: i32,
    /// The checkpoint's start offset.
    #[serde(rename = "so", alias = "startOffset", default)]
    pub start_offset: i64,
    /// The topic read (the retry topic for retried messages).
    #[serde(rename = "t", alias = "topic", default)]
    pub topic: String,
}

impl AckRecord {
    /// The ack of `offsets` of checkpoint `ck` (see [`with_offsets`](Self::with_offsets)).
    #[must_use]
    pub fn of_checkpoint(ck: &CheckPoint, offsets: Vec<i64>) -> Self {
        AckRecord {
            broker_name: ck.broker_name.clone(),
            group: ck.group.clone(),
            pop_time: ck.pop_time,
            queue_id: ck.queue_id,
            start_offset: ck.start_offset,
            topic: ck.topic.clone(),
            ..AckRecord::default()
        }
        .with_offsets(offsets)
    }

    /// Acking `offsets`: an `ack` for one offset, a `bAck` for more (each offset once).
    #[must_use]
    pub fn with_offsets(mut self, mut offsets: Vec<i64>) -> Self {
        offsets.sort_unstable();
        offsets.dedup();
        (self.ack_offset, self.ack_offset_list) = match offsets.as_slice() {
            [one] => (*one, None),
            _ => (-1, Some(offsets)),
        };
        self
    }

    /// The JSON body.
    #[must_use]
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The queue offsets it acks.
    #[must_use]
    pub fn offsets(&self) -> Vec<i64> {
        match &self.ack_offset_list {
            Some(list) => list.clone(),
            None => vec![self.ack_offset],
        }
    }

    /// The merge key of its checkpoint; an ack without a broker name is this broker's.
    #[must_use]
    pub fn merge_key(&self, this_broker: &str) -> String {
        merge_key(
            &self.topic,
            &self.group,
            self.queue_id,
            self.start_offset,
            self.pop_time,
            self.broker_name.as_deref().unwrap_or(this_broker),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> CheckPoint {
        CheckPoint {
            broker_name: Some("broker-a".into()),
            group: "GID".into(),
            queue_offset_diff: Some(vec![0, 1, 3]),
            invisible_time: 60_000,
            num: 3,
            pop_time: 1_700_000_000_000,
            queue_id: 3,
            start_offset: 100,
            topic: "TopicA".into(),
            ..CheckPoint::default()
        }
    }

    #[test]
    fn a_checkpoint_is_written_as_fastjson_writes_it() {
        assert_eq!(
            String::from_utf8(example().to_json()).unwrap(),
            r#"{"bm":0,"bn":"broker-a","c":"GID","d":[0,1,3],"it":60000,"n":3,"pt":1700000000000,"q":3,"reviveTime":1700000060000,"ro":0,"so":100,"t":"TopicA"}"#
        );
    }

    #[test]
    fn offsets_and_indexes_of_a_checkpoint() {
        let ck = example();
        assert_eq!(ck.queue_offset(2), Some(103));
        assert_eq!(ck.queue_offset(3), None);
        assert_eq!(ck.index_of(103), Some(2));
        assert_eq!(ck.index_of(102), None);
        assert_eq!(ck.index_of(99), None);
        let old = CheckPoint {
            queue_offset_diff: None,
            ..example()
        };
        assert_eq!(old.queue_offset(2), Some(102));
        assert_eq!(old.index_of(102), Some(2));
        assert_eq!(old.index_of(103), None);
        let mut acked = example();
        acked.set_acked(0);
        acked.set_acked(1);
        assert!(!acked.all_acked());
        assert!(!acked.is_acked(2));
        acked.set_acked(2);
        assert!(acked.all_acked());
        let mut full = CheckPoint {
            num: 32,
            queue_offset_diff: None,
            ..example()
        };
        for i in 0..32 {
            full.set_acked(i);
        }
        assert!(full.all_acked());
        assert_eq!(full.bit_map, -1);
    }

    #[test]
    fn acks_read_short_and_long_names() {
        let short: AckRecord = serde_json::from_str(
            r#"{"ao":103,"bn":"broker-a","c":"GID","pt":1700000000000,"q":3,"so":100,"t":"TopicA"}"#,
        )
        .unwrap();
        let long: AckRecord = serde_json::from_str(
            r#"{"ackOffset":103,"brokerName":"broker-a","consumerGroup":"GID","popTime":1700000000000,"queueId":3,"startOffset":100,"topic":"TopicA"}"#,
        )
        .unwrap();
        assert_eq!(short, long);
        assert_eq!(
            String::from_utf8(short.to_json()).unwrap(),
            r#"{"ao":103,"bn":"broker-a","c":"GID","pt":1700000000000,"q":3,"so":100,"t":"TopicA"}"#
        );
        assert_eq!(short.merge_key("x"), example().merge_key());
        let batch: AckRecord = serde_json::from_str(
            r#"{"ao":-1,"aol":[100,103],"c":"GID","pt":1700000000000,"q":3,"so":100,"t":"TopicA"}"#,
        )
        .unwrap();
        assert_eq!(batch.offsets(), vec![100, 103]);
        assert_eq!(batch.merge_key("broker-a"), example().merge_key());
    }
}
