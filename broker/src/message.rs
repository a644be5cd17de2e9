//! Message properties the broker reads and rewrites on the send path (`MessageConst`
//! keys), over the store's properties codec.

use store::record::properties;

/// `KEYS`.
pub const KEYS: &str = properties::KEYS;
/// `TAGS`.
pub const TAGS: &str = properties::TAGS;
/// `UNIQ_KEY`.
pub const UNIQ_KEY: &str = properties::UNIQ_KEY;
/// `WAIT`: "false" means the producer does not wait for flush/replication.
pub const WAIT: &str = properties::WAIT;
/// `DELAY`: delay level.
pub const DELAY: &str = properties::DELAY;
/// `REAL_TOPIC`: the topic of a delayed or half message.
pub const REAL_TOPIC: &str = "REAL_TOPIC";
/// `REAL_QID`: the queue of a delayed or half message.
pub const REAL_QID: &str = "REAL_QID";
/// `TRAN_MSG`: "true" on transactional half messages.
pub const TRAN_MSG: &str = "TRAN_MSG";
/// `PGROUP`: producer group of a transactional message.
pub const PGROUP: &str = "PGROUP";
/// `CLUSTER`: added by the broker to every message.
pub const CLUSTER: &str = "CLUSTER";
/// `RETRY_TOPIC`: original topic of a retried message.
pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
/// `ORIGIN_MESSAGE_ID`: id of the message a retry copies.
pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
/// `MAX_RECONSUME_TIMES`.
pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
/// `RECONSUME_TIME`.
pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
/// `MSG_REGION` (also a send response extField).
pub const MSG_REGION: &str = "MSG_REGION";
/// `TRACE_ON` (also a send response extField).
pub const TRACE_ON: &str = "TRACE_ON";
/// `TRAN_PREPARED_QUEUE_OFFSET`: on a half message copied back during its immunity
/// time, the queue offset of the original half message.
pub const TRAN_PREPARED_QUEUE_OFFSET: &str = "TRAN_PREPARED_QUEUE_OFFSET";
/// `TRANSACTION_CHECK_TIMES`: check-backs of a half message so far.
pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
/// `CHECK_IMMUNITY_TIME_IN_SECONDS`: a producer's own first check-back delay (seconds).
pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";

/// The value of `key` in a properties string.
#[must_use]
pub fn get<'a>(props: &'a str, key: &str) -> Option<&'a str> {
    properties::get(props, key)
}

/// A properties string with each `(key, value)` of `updates` set (replacing earlier
/// values; other entries kept in order), built in one pass and one allocation.
#[must_use]
pub fn set(props: &str, updates: &[(&str, &str)]) -> String {
    let extra: usize = updates.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    let mut out = String::with_capacity(props.len() + extra);
    let kept = properties::iter(props).filter(|(k, _)| !updates.iter().any(|(u, _)| u == k));
    for (k, v) in kept.chain(updates.iter().copied()) {
        if !out.is_empty() {
            out.push(properties::PROPERTY_SEPARATOR);
        }
        out.push_str(k);
        out.push(properties::NAME_VALUE_SEPARATOR);
        out.push_str(v);
    }
    out
}

/// A properties string without `keys`.
#[must_use]
pub fn without(props: &str, keys: &[&str]) -> String {
    properties::build(properties::iter(props).filter(|(k, _)| !keys.contains(k)))
}

/// Where a parked message really goes: a delayed message in SCHEDULE_TOPIC_XXXX or a
/// transactional half message keeps its topic and queue in `REAL_TOPIC` / `REAL_QID`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RealQueue<'a> {
    /// `REAL_TOPIC`.
    pub topic: &'a str,
    /// `REAL_QID`.
    pub queue_id: i32,
}

impl<'a> RealQueue<'a> {
    /// `REAL_TOPIC` and `REAL_QID` of a parked message's properties (one pass), if both
    /// are there and the queue id is a number.
    #[must_use]
    pub fn of(props: &'a str) -> Option<Self> {
        let [topic, queue_id] = properties::get_many(props, [REAL_TOPIC, REAL_QID]);
        Some(RealQueue {
            topic: topic?,
            queue_id: queue_id?.trim().parse().ok()?,
        })
    }
}

/// What the send path decides from a producer's properties, found in one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendFlags<'a> {
    /// The producer waits for the store (`WAIT` absent or not "false").
    pub wait_store: bool,
    /// The delay level (`DELAY`), 0 when absent or not a positive number.
    pub delay_level: i32,
    /// A transactional half message (`TRAN_MSG` = "true").
    pub transaction: bool,
    /// `UNIQ_KEY`, the message id the producer made.
    pub unique_key: Option<&'a str>,
}

impl<'a> SendFlags<'a> {
    /// Scans `props` once.
    #[must_use]
    pub fn scan(props: &'a str) -> Self {
        let [wait, delay, transaction, unique_key] =
            properties::get_many(props, [WAIT, DELAY, TRAN_MSG, UNIQ_KEY]);
        Self {
            wait_store: wait.is_none_or(|v| !v.eq_ignore_ascii_case("false")),
            delay_level: delay
                .and_then(|v| v.trim().parse::<i32>().ok())
                .filter(|l| *l > 0)
                .unwrap_or(0),
            transaction: transaction.is_some_and(|v| v.eq_ignore_ascii_case("true")),
            unique_key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_properties() {
        let p = "TAGS\u{1}A\u{2}KEYS\u{1}k1 k2\u{2}WAIT\u{1}true\u{2}";
        assert_eq!(get(p, KEYS), Some("k1 k2"));
        assert_eq!(
            set(p, &[(TAGS, "B")]),
            "KEYS\u{1}k1 k2\u{2}WAIT\u{1}true\u{2}TAGS\u{1}B"
        );
        assert_eq!(set("", &[(CLUSTER, "c")]), "CLUSTER\u{1}c");
        assert_eq!(
            set("A\u{1}1", &[(CLUSTER, "c"), ("A", "2")]),
            "CLUSTER\u{1}c\u{2}A\u{1}2"
        );
        assert_eq!(without(p, &[WAIT, TAGS]), "KEYS\u{1}k1 k2");
    }

    #[test]
    fn send_flags_in_one_pass() {
        let p = "TAGS\u{1}A\u{2}UNIQ_KEY\u{1}u1\u{2}DELAY\u{1}3\u{2}WAIT\u{1}true\u{2}";
        let f = SendFlags::scan(p);
        assert!(f.wait_store);
        assert_eq!(f.delay_level, 3);
        assert!(!f.transaction);
        assert_eq!(f.unique_key, Some("u1"));
        let f = SendFlags::scan("WAIT\u{1}FALSE\u{2}TRAN_MSG\u{1}True\u{2}DELAY\u{1}-1");
        assert!(!f.wait_store);
        assert!(f.transaction);
        assert_eq!(f.delay_level, 0);
        assert_eq!(f.unique_key, None);
        assert_eq!(SendFlags::scan("DELAY\u{1}x").delay_level, 0);
        // The last value wins, as in the Java map the client parses into.
        assert_eq!(
            SendFlags::scan("DELAY\u{1}2\u{2}DELAY\u{1}5").delay_level,
            5
        );
        assert_eq!(SendFlags::scan("").unique_key, None);
    }
}
