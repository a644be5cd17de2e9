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
/// `TRAN_PREPARED_QUEUE_OFFSET`.
pub const TRAN_PREPARED_QUEUE_OFFSET: &str = "TRAN_PREPARED_QUEUE_OFFSET";

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

/// Whether the producer waits for the store (`WAIT` absent or not "false").
#[must_use]
pub fn wait_store_ok(props: &str) -> bool {
    get(props, WAIT).is_none_or(|v| !v.eq_ignore_ascii_case("false"))
}

/// The delay level (`DELAY`), 0 when absent or not a positive number.
#[must_use]
pub fn delay_level(props: &str) -> i32 {
    get(props, DELAY)
        .and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|l| *l > 0)
        .unwrap_or(0)
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
        assert!(wait_store_ok(p));
        assert!(!wait_store_ok("WAIT\u{1}false"));
        assert_eq!(delay_level("DELAY\u{1}3"), 3);
        assert_eq!(delay_level("DELAY\u{1}-1"), 0);
        assert_eq!(delay_level("DELAY\u{1}x"), 0);
    }
}
