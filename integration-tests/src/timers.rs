//! Timer messages over the remoting protocol, for the timer tests: a timer send as a
//! 5.x producer makes it (`TIMER_DELIVER_MS`, the due time also in the user property
//! `due`), a drain of a queue that reads back each message's id, due time and store time,
//! and a broker's timer checkpoint (GET_TIMER_CHECK_POINT) — the same calls work against
//! sluice and Apache RocketMQ.

use std::time::{SystemTime, UNIX_EPOCH};

use message::properties;
use message::record::{self, Record};
use remoting::{RemotingCommand, RequestCode};

use crate::client::{send_request_with, try_request};

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
    send_request_with(
        topic,
        b"timer",
        &format!(
            "TIMER_DELIVER_MS\u{1}{due}\u{2}UNIQ_KEY\u{1}t{i}\u{2}due\u{1}{due}\u{2}WAIT\u{1}true\u{2}"
        ),
    )
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
        let Ok(resp) = try_request(
            addr,
            crate::client::read_request("timer_drain", topic, 0, offset),
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

/// How deliveries met the timers that were sent: the one tally of every timer test
/// (pulled here, or printed by a Java consumer: `timer_deliveries`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tally {
    /// Deliveries, duplicates included.
    pub delivered: usize,
    /// Distinct timers delivered.
    pub distinct: usize,
    /// Deliveries beyond the first of a timer (at-least-once).
    pub duplicates: usize,
    /// Sent timers never delivered.
    pub missing: Vec<String>,
    /// Deliveries before their due time (duplicates too): (id, ms early).
    pub early: Vec<(String, i64)>,
    /// Deliveries of messages that were not sent (another run's, or a broker bug).
    pub foreign: Vec<String>,
    /// Lateness of each delivery of a sent timer (ms after due).
    pub lateness_ms: Vec<i64>,
}

impl Tally {
    /// Every sent timer delivered, none early, nothing foreign (duplicates not judged).
    #[must_use]
    pub fn complete_and_never_early(&self) -> bool {
        self.missing.is_empty() && self.foreign.is_empty() && self.early.is_empty()
    }

    /// Matches deliveries — (id, due, delivered at) — against the ids sent.
    #[must_use]
    pub fn of<'a>(
        sent: impl IntoIterator<Item = &'a str>,
        got: impl IntoIterator<Item = (&'a str, i64, i64)>,
    ) -> Tally {
        let expected: std::collections::BTreeSet<&str> = sent.into_iter().collect();
        let mut seen = std::collections::BTreeMap::<&str, usize>::new();
        let mut t = Tally::default();
        for (id, due, at) in got {
            t.delivered += 1;
            if !expected.contains(id) {
                t.foreign.push(id.to_owned());
                continue;
            }
            *seen.entry(id).or_default() += 1;
            if at < due {
                t.early.push((id.to_owned(), due - at));
            }
            t.lateness_ms.push(at - due);
        }
        t.distinct = seen.len();
        t.duplicates = seen.values().map(|n| n - 1).sum();
        t.missing = expected
            .iter()
            .filter(|k| !seen.contains_key(*k))
            .map(|k| (*k).to_owned())
            .collect();
        t
    }
}

/// Tallies drained deliveries against `due` (id → due time); a delivery whose due time
/// is not the one sent counts as foreign.
#[must_use]
pub fn tally(got: &[Delivered], due: &std::collections::BTreeMap<String, i64>) -> Tally {
    let (matching, foreign): (Vec<&Delivered>, Vec<&Delivered>) =
        got.iter().partition(|d| due.get(&d.id) == Some(&d.due));
    let mut t = Tally::of(
        due.keys().map(String::as_str),
        matching.iter().map(|d| (d.id.as_str(), d.due, d.stored_at)),
    );
    t.delivered += foreign.len();
    t.foreign.extend(foreign.iter().map(|d| d.id.clone()));
    t
}

/// Drains `topic` on `addr` until every timer of `due` is there and the last is due,
/// or `timeout` passes; returns the last drain's tally.
#[must_use]
pub fn wait_delivered(
    addr: &str,
    topic: &str,
    due: &std::collections::BTreeMap<String, i64>,
    timeout: std::time::Duration,
) -> Tally {
    let last = due.values().max().copied().unwrap_or(0);
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let t = tally(&drain(addr, topic), due);
        if (t.missing.is_empty() && now_ms() > last) || std::time::Instant::now() > deadline {
            return t;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
