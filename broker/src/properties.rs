//! What the broker decides from a message's properties: the send path's flags
//! ([`SendFlags`]) and where a parked message really goes ([`RealQueue`]). The names and
//! the string codec are the `message` crate's.

use message::properties;
use message::properties::keys::{
    DELAY, REAL_QID, REAL_TOPIC, SHARDING_KEY, TIMER_DELAY_MS, TIMER_DELAY_SEC, TIMER_DELIVER_MS,
    TIMER_OUT_MS, TRAN_MSG, UNIQ_KEY, WAIT,
};

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
    /// A 5.x timer delivery time is asked for (`TIMER_DELIVER_MS`, `TIMER_DELAY_SEC` or
    /// `TIMER_DELAY_MS`) and the message is not already parked for the wheel
    /// (`TIMER_OUT_MS`); see [`crate::timer`].
    pub timer: bool,
    /// A message group of a FIFO message (`__SHARDINGKEY`).
    pub fifo: bool,
}

impl<'a> SendFlags<'a> {
    /// Scans `props` once.
    #[must_use]
    pub fn scan(props: &'a str) -> Self {
        let [
            wait,
            delay,
            transaction,
            unique_key,
            deliver_ms,
            delay_sec,
            delay_ms,
            out_ms,
            sharding_key,
        ] = properties::get_many(
            props,
            [
                WAIT,
                DELAY,
                TRAN_MSG,
                UNIQ_KEY,
                TIMER_DELIVER_MS,
                TIMER_DELAY_SEC,
                TIMER_DELAY_MS,
                TIMER_OUT_MS,
                SHARDING_KEY,
            ],
        );
        Self {
            wait_store: wait.is_none_or(|v| !v.eq_ignore_ascii_case("false")),
            delay_level: delay
                .and_then(|v| v.trim().parse::<i32>().ok())
                .filter(|l| *l > 0)
                .unwrap_or(0),
            transaction: transaction.is_some_and(|v| v.eq_ignore_ascii_case("true")),
            unique_key,
            timer: out_ms.is_none()
                && (deliver_ms.is_some() || delay_sec.is_some() || delay_ms.is_some()),
            fifo: sharding_key.is_some(),
        }
    }

    /// The kind of message the metrics count it as (RocketMQ's order: transaction, then
    /// FIFO, then delay).
    #[must_use]
    pub fn message_type(&self) -> crate::meters::MessageType {
        use crate::meters::MessageType;
        if self.transaction {
            MessageType::Transaction
        } else if self.fifo {
            MessageType::Fifo
        } else if self.delay_level > 0 || self.timer {
            MessageType::Delay
        } else {
            MessageType::Normal
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(!f.timer);
        assert!(SendFlags::scan("TIMER_DELAY_MS\u{1}5\u{2}").timer);
        assert!(!SendFlags::scan("TIMER_DELAY_MS\u{1}5\u{2}TIMER_OUT_MS\u{1}9").timer);
    }
}
