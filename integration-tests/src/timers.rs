//! Timer messages over the remoting protocol, for the timer tests: a timer send as a
//! 5.x producer makes it (`TIMER_DELIVER_MS`, the due time also in the user property
//! `due`), a drain of a queue that reads back each message's id, due time and store time,
//! and a broker's timer checkpoint (GET_TIMER_CHECK_POINT) — the same calls work against
//! sluice and Apache RocketMQ.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use message::properties;
use message::record::{self, Record};
use remoting::protocol::broker::{PullMessageRequestHeader, SendMessageRequestHeaderV2};
use remoting::protocol::constants::pull_sys_flag;
use remoting::{RemotingCommand, RequestCode};

use crate::client::try_request;

/// Now, in ms since the epoch.
#[must_use]
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A SEND_MESSAGE_V2 to queue 0 of `topic`, due at `due` (epoch ms), id `t<i>`.
#[must_use]
pub fn timer_send(topic: &str, i: i64, due: i64) -> RemotingCommand {
    let header = SendMessageRequestHeaderV2 {
        producer_group: "sluice_it_timer".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: now_ms(),
        flag: 0,
        properties: Some(format!(
            "TIMER_DELIVER_MS\u{1}{due}\u{2}UNIQ_KEY\u{1}t{i}\u{2}due\u{1}{due}\u{2}WAIT\u{1}true\u{2}"
        )),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: None,
    };
    RemotingCommand::request_with(RequestCode::SendMessageV2, &header)
        .with_body(Bytes::from_static(b"timer"))
}

/// One delivered timer message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// `UNIQ_KEY`.
    pub id: String,
    /// The `due` property.
    pub due: i64,
    /// When the broker stored the delivered copy.
    pub stored_at: i64,
}

/// Every message of queue 0 of `topic` on the broker at `addr` (empty when it cannot
/// be pulled).
#[must_use]
pub fn drain(addr: &str, topic: &str) -> Vec<Delivered> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let header = PullMessageRequestHeader {
            consumer_group: "timer_drain".into(),
            topic: topic.into(),
            queue_id: 0,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag: pull_sys_flag::SUBSCRIPTION,
            commit_offset: 0,
            suspend_timeout_millis: 0,
            subscription: Some("*".into()),
            sub_version: 0,
            expression_type: Some("TAG".into()),
            ..PullMessageRequestHeader::default()
        };
        let Ok(resp) = try_request(
            addr,
            RemotingCommand::request_with(RequestCode::PullMessage, &header),
        ) else {
            return out;
        };
        if resp.code() != 0 {
            return out;
        }
        let body = resp.body.to_bytes();
        let mut rest = &body[..];
        let before = out.len();
        while let Ok(Some(Record::Message(m))) = record::decode(rest) {
            let props = m.properties_str();
            let [id, due] = properties::get_many(&props, ["UNIQ_KEY", "due"]);
            out.push(Delivered {
                id: id.unwrap_or("").to_owned(),
                due: due.and_then(|d| d.parse().ok()).unwrap_or(0),
                stored_at: m.store_timestamp,
            });
            let Some(next) = rest.get(m.total_size as usize..) else {
                break;
            };
            rest = next;
        }
        if out.len() == before {
            return out;
        }
        offset += i64::try_from(out.len() - before).unwrap_or(0);
    }
}

/// The first fields of a timer checkpoint (RocketMQ `TimerCheckpoint.encode`: big-endian
/// longs), decoded here rather than by sluice's own codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerProgress {
    /// How far the broker has delivered (ms).
    pub last_read_time_ms: i64,
    /// Timer log position flushed.
    pub last_timer_log_flush_pos: i64,
    /// Offset of `rmq_sys_wheel_timer` enqueued so far.
    pub last_timer_queue_offset: i64,
}

/// The broker's timer checkpoint (GET_TIMER_CHECK_POINT), if it answers one.
#[must_use]
pub fn timer_checkpoint(addr: &str) -> Option<TimerProgress> {
    let resp = try_request(
        addr,
        RemotingCommand::request(RequestCode::GetTimerCheckPoint),
    )
    .ok()?;
    if resp.code() != 0 {
        return None;
    }
    let body = resp.body.to_bytes();
    let long = |i: usize| -> Option<i64> {
        Some(i64::from_be_bytes(
            body.get(i * 8..i * 8 + 8)?.try_into().ok()?,
        ))
    };
    Some(TimerProgress {
        last_read_time_ms: long(0)?,
        last_timer_log_flush_pos: long(1)?,
        last_timer_queue_offset: long(2)?,
    })
}
