//! Drills with the official Java client: `sluice.it.DrillProducer` sends continuously and
//! prints every answer, `sluice.it.DrillDrain` reads every queue to its end; between the two a
//! broker goes away. This module owns the producer's and the drain's lines, the books kept
//! from them (acknowledged, lost, duplicated, corrupt), and the steps of a master/slave
//! failover on an [`HaPair`] ([`failover`]) — shared by `tests/ha_drill.rs` and the reliability
//! driver.
//!
//! What counts (see `DrillProducer`'s docs): a message is *acknowledged* when the client got
//! SEND_OK; FLUSH_*_TIMEOUT / SLAVE_NOT_AVAILABLE answers mean "stored on the master only" and
//! are counted separately as `stored_not_ok`; a send that threw is `failed` (its message may
//! exist anyway: the answer can be lost with the broker).
//!
//! The steps panic when one fails (a broker that does not come back, a switch command that
//! fails), like the rest of the harness; the books only count, the caller judges.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::harness::{
    BrokerProcess, ChildOutput, ChildProcess, HaPair, ha_status, unique_name, wait_until,
};
use crate::java::{JavaTools, Recv};

/// Time between a master's death and the switch command: an operator noticing the failure.
pub const DETECTION: Duration = Duration::from_millis(1000);
/// Time the new master takes writes alone before the old one rejoins as its slave.
pub const ALONE: Duration = Duration::from_millis(1500);
/// How long a step may take (a write after the switch, the rejoin, a catch-up).
pub const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// Milliseconds since the epoch, the clock of `DrillProducer`'s lines.
#[must_use]
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

// ---------------------------------------------------------------- the producer's lines

/// An `ACK` line of `DrillProducer`:
/// `ACK <id> <status> <sentAt> <ackAt> i=.. q=.. off=.. oid=<offsetMsgId>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    /// The client's unique message id.
    pub id: String,
    /// The client's `SendStatus` (`SEND_OK`, `SLAVE_NOT_AVAILABLE`, ...).
    pub status: String,
    /// When the send started, ms since the epoch.
    pub sent_at: u64,
    /// When the answer came.
    pub ack_at: u64,
    /// The message's index `i` (its body is [`expected_body`] of it).
    pub index: Option<u64>,
    /// Queue and queue offset the broker answered.
    pub queue: Option<(i32, i64)>,
    /// `ip:port` of the broker that stored it and the record's CommitLog offset, from the
    /// offset message id.
    pub stored: Option<(String, u64)>,
}

impl Ack {
    /// Whether the answer was SEND_OK: stored as durably as the broker's role requires.
    #[must_use]
    pub fn is_send_ok(&self) -> bool {
        self.status == "SEND_OK"
    }

    /// Whether the broker at `addr` stored it (by its offset message id).
    #[must_use]
    pub fn stored_on(&self, addr: &str) -> bool {
        self.stored.as_ref().is_some_and(|(h, _)| h == addr)
    }

    /// Send-to-answer time.
    #[must_use]
    pub fn latency_ms(&self) -> u64 {
        self.ack_at.saturating_sub(self.sent_at)
    }
}

/// An offset message id (RocketMQ's `MessageDecoder.createMessageId`, decoded by the
/// message crate): the store host and the CommitLog offset.
#[must_use]
pub fn parse_offset_msg_id(hex: &str) -> Option<(String, u64)> {
    let id = message::id::OffsetMsgId::decode(hex).ok()?;
    Some((id.addr.to_string(), id.offset))
}

fn labelled<'a>(fields: &[&'a str], key: &str) -> Option<&'a str> {
    fields
        .iter()
        .find_map(|f| f.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// Every `ACK` line of `lines`.
pub fn parse_acks<S: AsRef<str>>(lines: &[S]) -> Vec<Ack> {
    lines.iter().filter_map(|l| parse_ack(l.as_ref())).collect()
}

fn parse_ack(line: &str) -> Option<Ack> {
    let f: Vec<&str> = line.strip_prefix("ACK ")?.split(' ').collect();
    let queue = labelled(&f, "q")
        .and_then(|q| q.parse().ok())
        .zip(labelled(&f, "off").and_then(|o| o.parse().ok()));
    Some(Ack {
        id: (*f.first()?).to_owned(),
        status: (*f.get(1)?).to_owned(),
        sent_at: f.get(2)?.parse().ok()?,
        ack_at: f.get(3)?.parse().ok()?,
        index: labelled(&f, "i").and_then(|i| i.parse().ok()),
        queue,
        stored: labelled(&f, "oid").and_then(parse_offset_msg_id),
    })
}

/// A `FAIL` line: `FAIL <i> <id|-> <sentAt> <failAt> <error>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail {
    /// The message's index.
    pub index: Option<u64>,
    /// Its unique id, when the client had set one (a broker was chosen).
    pub id: Option<String>,
    /// When the send started.
    pub sent_at: u64,
    /// When it failed.
    pub fail_at: u64,
    /// The exception, as `Harness.describe` prints it.
    pub error: String,
}

/// Every `FAIL` line of `lines`.
pub fn parse_fails<S: AsRef<str>>(lines: &[S]) -> Vec<Fail> {
    lines
        .iter()
        .filter_map(|l| {
            let mut f = l.as_ref().strip_prefix("FAIL ")?.splitn(5, ' ');
            let index = f.next()?.parse().ok();
            let id = f.next()?;
            let sent_at = f.next()?.parse().ok()?;
            Some(Fail {
                index,
                id: (id != "-").then(|| id.to_owned()),
                sent_at,
                fail_at: f.next()?.parse().ok()?,
                error: f.next().unwrap_or("").to_owned(),
            })
        })
        .collect()
}

/// Whether an ACK at or after `t` (a SEND_OK one with `ok_only`) is among `lines`. Looks from
/// the end and stops at acks well before `t` (async acks may come slightly out of order), so
/// waiting on a long-running producer stays cheap.
pub fn acked_since<S: AsRef<str>>(lines: &[S], t: u64, ok_only: bool) -> bool {
    for line in lines.iter().rev() {
        let Some(ack) = parse_ack(line.as_ref()) else {
            continue;
        };
        if ack.ack_at >= t && (!ok_only || ack.is_send_ok()) {
            return true;
        }
        if ack.ack_at + 5_000 < t {
            return false;
        }
    }
    false
}

/// Milliseconds from `t` to the first answer at or after it (SEND_OK only with `ok_only`; from
/// the broker at `addr` only, when given).
#[must_use]
pub fn first_ack_after(acks: &[Ack], t: u64, ok_only: bool, addr: Option<&str>) -> Option<u64> {
    acks.iter()
        .filter(|a| a.ack_at >= t && (!ok_only || a.is_send_ok()))
        .filter(|a| addr.is_none_or(|addr| a.stored_on(addr)))
        .map(|a| a.ack_at - t)
        .min()
}

/// Milliseconds from `t` to the first SEND_OK of a send started at or after `t`: the outage a
/// client saw (answers to sends already in flight at `t` do not end it).
#[must_use]
pub fn first_send_ok_sent_after(acks: &[Ack], t: u64) -> Option<u64> {
    acks.iter()
        .filter(|a| a.sent_at >= t && a.is_send_ok())
        .map(|a| a.ack_at - t)
        .min()
}

/// The failure's exception, shortened to its kind, for summaries (`broker-14` for an
/// MQBrokerException with code 14).
#[must_use]
pub fn failure_kind(error: &str) -> String {
    if error.contains("No route info") {
        return "no-route".to_owned();
    }
    // The client wraps the broker's refusal ("... <- MQBrokerException: CODE: 14 DESC: ...").
    if error.contains("MQBrokerException") {
        if let Some(code) = error
            .split("MQBrokerException: CODE: ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
        {
            return format!("broker-{code}");
        }
    }
    if error.contains("timeout") {
        return "timeout".to_owned();
    }
    if error.contains("connect to") || error.contains("Connect") {
        return "connect".to_owned();
    }
    error.split(':').next().unwrap_or(error).to_owned()
}

/// The body `DrillProducer --body-size size` sends as message `index`: `drill-<i>`, or when
/// `size` is larger, `drill-<i>-` and letters up to `size` bytes, byte k being
/// `'a' + (i + 7k) mod 26`.
#[must_use]
pub fn expected_body(index: u64, size: usize) -> String {
    let mut body = format!("drill-{index}");
    if size <= body.len() + 1 {
        return body;
    }
    body.push('-');
    for k in body.len()..size {
        let letter = (index + 7 * k as u64) % 26;
        body.push(char::from(b'a' + u8::try_from(letter).unwrap_or(0)));
    }
    body
}

// ---------------------------------------------------------------- running the programs

/// How `DrillProducer` sends.
#[derive(Debug, Clone)]
pub struct ProducerOptions {
    /// `sync` (one send at a time) or `async` (up to `max_in_flight`).
    pub mode: &'static str,
    /// Async sends in flight.
    pub max_in_flight: u32,
    /// Pause between sends, ms.
    pub interval_ms: u64,
    /// Body size (0: `drill-<i>`); see [`expected_body`].
    pub body_size: usize,
    /// The client's send timeout, ms.
    pub send_timeout_ms: u64,
    /// The client's retries of a failed send.
    pub retries: u32,
    /// The client's route refresh interval, ms.
    pub poll_namesrv_ms: u64,
    /// The program's own watchdog, ms.
    pub timeout_ms: u64,
}

impl Default for ProducerOptions {
    /// The drills' settings: sync sends, 1 s send timeout, 2 retries, routes every second.
    fn default() -> Self {
        ProducerOptions {
            mode: "sync",
            max_in_flight: 32,
            interval_ms: 0,
            body_size: 0,
            send_timeout_ms: 1000,
            retries: 2,
            poll_namesrv_ms: 1000,
            timeout_ms: 600_000,
        }
    }
}

impl ProducerOptions {
    /// The program's arguments after `--namesrv` and `--topic`.
    #[must_use]
    pub fn args(&self) -> Vec<String> {
        let mut v = vec![
            "--mode".to_owned(),
            self.mode.to_owned(),
            "--max-in-flight".to_owned(),
            self.max_in_flight.to_string(),
            "--send-timeout-ms".to_owned(),
            self.send_timeout_ms.to_string(),
            "--retries".to_owned(),
            self.retries.to_string(),
            "--poll-namesrv-ms".to_owned(),
            self.poll_namesrv_ms.to_string(),
            "--timeout-ms".to_owned(),
            self.timeout_ms.to_string(),
        ];
        if self.interval_ms > 0 {
            v.extend(["--interval-ms".to_owned(), self.interval_ms.to_string()]);
        }
        if self.body_size > 0 {
            v.extend(["--body-size".to_owned(), self.body_size.to_string()]);
        }
        v
    }
}

/// A running `DrillProducer`; stopped through its stop file ([`stop`](Self::stop)), killed
/// when dropped.
#[derive(Debug)]
pub struct DrillProducer {
    process: ChildProcess,
    stop_file: PathBuf,
    /// How it sends.
    pub options: ProducerOptions,
}

impl DrillProducer {
    /// Starts one sending to `topic` through the name server `namesrv`; its stop file goes in
    /// `dir`.
    ///
    /// # Panics
    /// When java cannot be started.
    #[must_use]
    pub fn start(
        java: &JavaTools,
        namesrv: &str,
        topic: &str,
        dir: &Path,
        options: ProducerOptions,
    ) -> Self {
        let stop_file = dir.join(unique_name("stop"));
        let mut args = vec![
            "--namesrv".to_owned(),
            namesrv.to_owned(),
            "--topic".to_owned(),
            topic.to_owned(),
            "--stop-file".to_owned(),
            stop_file.display().to_string(),
        ];
        args.extend(options.args());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        DrillProducer {
            process: java.spawn("sluice.it.DrillProducer", &refs),
            stop_file,
            options,
        }
    }

    /// The running program (its lines so far, waits on them).
    #[must_use]
    pub fn process(&self) -> &ChildProcess {
        &self.process
    }

    /// Waits until it has `n` ACK lines (any status).
    pub fn wait_acks(&self, n: usize, timeout: Duration) -> bool {
        self.process.wait_until(timeout, |lines| {
            lines.iter().filter(|l| l.starts_with("ACK ")).count() >= n
        })
    }

    /// Waits until an answer at or after `t` (SEND_OK only with `ok_only`) is printed.
    pub fn wait_acked_since(&self, t: u64, ok_only: bool, timeout: Duration) -> bool {
        self.process
            .wait_until(timeout, |lines| acked_since(lines, t, ok_only))
    }

    /// Waits until a send started at or after `t` is answered SEND_OK.
    pub fn wait_send_ok_sent_since(&self, t: u64, timeout: Duration) -> bool {
        self.process.wait_until(timeout, |lines| {
            for line in lines.iter().rev() {
                let Some(ack) = parse_ack(line) else {
                    continue;
                };
                if ack.sent_at >= t && ack.is_send_ok() {
                    return true;
                }
                if ack.ack_at + 5_000 < t {
                    return false;
                }
            }
            false
        })
    }

    /// The last `n` lines, for failure messages.
    #[must_use]
    pub fn last_lines(&self, n: usize) -> Vec<String> {
        let lines = self.process.stdout_lines();
        lines[lines.len().saturating_sub(n)..].to_vec()
    }

    /// Creates the stop file, waits for the program to finish and parses what it printed.
    ///
    /// # Panics
    /// When it does not end with its `OK` line within `timeout`.
    #[must_use]
    pub fn stop(self, timeout: Duration) -> Produced {
        fs::write(&self.stop_file, b"stop").expect("write the producer's stop file");
        let output = self.process.wait(timeout);
        output.assert_ok();
        let _ = fs::remove_file(&self.stop_file);
        let lines: Vec<&str> = output.stdout.lines().collect();
        Produced {
            acks: parse_acks(&lines),
            fails: parse_fails(&lines),
            output,
        }
    }
}

/// What a stopped `DrillProducer` printed.
#[derive(Debug)]
pub struct Produced {
    /// Every answered send.
    pub acks: Vec<Ack>,
    /// Every send that threw.
    pub fails: Vec<Fail>,
    /// The whole output.
    pub output: ChildOutput,
}

/// A `QUEUE` line of `DrillDrain`: a queue's bounds when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueBounds {
    /// Broker name.
    pub broker: String,
    /// Queue id.
    pub queue_id: i32,
    /// Its min offset (above 0 once expiry removed files).
    pub min: i64,
    /// Its max offset.
    pub max: i64,
}

/// What `DrillDrain` read.
#[derive(Debug)]
pub struct Drained {
    /// Every message, in queue order.
    pub received: Vec<Recv>,
    /// Each queue's bounds.
    pub queues: Vec<QueueBounds>,
    /// How long the drain took.
    pub elapsed: Duration,
}

/// Reads every queue of `topic` to its end with `DrillDrain` (a fresh group).
///
/// # Panics
/// When the drain fails (a queue does not advance, a pull throws) or takes over `timeout`.
#[must_use]
pub fn drain(java: &JavaTools, namesrv: &str, topic: &str, timeout: Duration) -> Drained {
    try_drain(java, namesrv, topic, timeout).unwrap_or_else(|e| panic!("{e}"))
}

/// [`drain`], with a failed drain as an error: where a broker that cannot serve reads is a
/// finding rather than a broken step.
///
/// # Errors
/// The drain's output when it did not end with its `OK` line.
pub fn try_drain(
    java: &JavaTools,
    namesrv: &str,
    topic: &str,
    timeout: Duration,
) -> Result<Drained, String> {
    let started = Instant::now();
    let out = java.run(
        "sluice.it.DrillDrain",
        &[
            "--namesrv",
            namesrv,
            "--topic",
            topic,
            "--group",
            &unique_name("drain"),
        ],
        timeout,
    );
    if !out.success() {
        let stderr: Vec<&str> = out.stderr.lines().collect();
        return Err(format!(
            "the drain failed ({:?}, timed out: {}): {:?}; stderr ends: {}",
            out.status,
            out.timed_out,
            out.lines_starting_with("ERR"),
            stderr[stderr.len().saturating_sub(5)..].join(" | ")
        ));
    }
    let queues = out
        .fields("QUEUE ")
        .into_iter()
        .filter_map(|f| {
            Some(QueueBounds {
                broker: (*f.first()?).to_owned(),
                queue_id: f.get(1)?.parse().ok()?,
                min: f.get(2)?.parse().ok()?,
                max: f.get(3)?.parse().ok()?,
            })
        })
        .collect();
    Ok(Drained {
        received: Recv::all(out.stdout.lines()),
        queues,
        elapsed: started.elapsed(),
    })
}

// ---------------------------------------------------------------- the books

/// What was acknowledged against what was read back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Books {
    /// Sends made (answered + failed).
    pub sent: usize,
    /// Distinct messages answered SEND_OK.
    pub acked: usize,
    /// Distinct messages answered stored-but-not-OK (FLUSH_*_TIMEOUT, SLAVE_NOT_AVAILABLE).
    pub stored_not_ok: usize,
    /// Sends that threw.
    pub failed: usize,
    /// Messages read back (duplicates included).
    pub received: usize,
    /// Distinct messages read back.
    pub distinct_received: usize,
    /// Acknowledged (SEND_OK) and not read back: ids.
    pub lost: Vec<String>,
    /// Stored-not-OK and not read back.
    pub lost_not_ok: usize,
    /// Extra copies read back (a retried send whose first answer was lost).
    pub duplicates: usize,
    /// Sends that threw but whose message was read back.
    pub failed_but_stored: usize,
    /// Read back but never sent: ids.
    pub unknown: Vec<String>,
    /// Read back with a body other than the one sent: ids.
    pub corrupt: Vec<String>,
    /// Acknowledged, not read back, and below its queue's min offset at the drain: removed by
    /// the store's expiry (disk-ratio cleanup), not lost by a fault. Not in `lost`.
    pub removed_by_expiry: usize,
}

impl Books {
    /// The books of one producer's answers against one drain; `body_size` as the producer's
    /// ([`expected_body`]).
    #[must_use]
    pub fn new(acks: &[Ack], fails: &[Fail], drained: &Drained, body_size: usize) -> Self {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &drained.received {
            *counts.entry(r.msg_id.as_str()).or_default() += 1;
        }
        let acked: BTreeSet<&str> = acks
            .iter()
            .filter(|a| a.is_send_ok())
            .map(|a| a.id.as_str())
            .collect();
        let stored_not_ok: BTreeSet<&str> = acks
            .iter()
            .filter(|a| !a.is_send_ok() && !acked.contains(a.id.as_str()))
            .map(|a| a.id.as_str())
            .collect();
        let failed_ids: BTreeSet<&str> = fails.iter().filter_map(|f| f.id.as_deref()).collect();
        let mut index: BTreeMap<&str, u64> = BTreeMap::new();
        for a in acks {
            if let Some(i) = a.index {
                index.insert(a.id.as_str(), i);
            }
        }
        for f in fails {
            if let (Some(id), Some(i)) = (f.id.as_deref(), f.index) {
                index.entry(id).or_insert(i);
            }
        }
        // Where each acknowledged message was (its last SEND_OK answer), for expiry.
        let mut queue_of: BTreeMap<&str, (i32, i64)> = BTreeMap::new();
        for a in acks.iter().filter(|a| a.is_send_ok()) {
            if let Some(q) = a.queue {
                queue_of.insert(a.id.as_str(), q);
            }
        }
        let min_of = |queue_id: i32| {
            drained
                .queues
                .iter()
                .filter(|q| q.queue_id == queue_id)
                .map(|q| q.min)
                .max()
        };
        let mut lost = Vec::new();
        let mut removed_by_expiry = 0;
        for id in acked.iter().filter(|id| !counts.contains_key(*id)) {
            let expired = queue_of
                .get(id)
                .is_some_and(|&(q, off)| min_of(q).is_some_and(|min| off < min));
            if expired {
                removed_by_expiry += 1;
            } else {
                lost.push((*id).to_owned());
            }
        }
        let corrupt = drained
            .received
            .iter()
            .filter(|r| {
                index
                    .get(r.msg_id.as_str())
                    .is_some_and(|&i| r.body != expected_body(i, body_size))
            })
            .map(|r| r.msg_id.clone())
            .collect();
        Books {
            sent: acks.len() + fails.len(),
            acked: acked.len(),
            stored_not_ok: stored_not_ok.len(),
            failed: fails.len(),
            received: drained.received.len(),
            distinct_received: counts.len(),
            lost,
            lost_not_ok: stored_not_ok
                .iter()
                .filter(|id| !counts.contains_key(*id))
                .count(),
            duplicates: counts.values().map(|n| n - 1).sum(),
            failed_but_stored: failed_ids
                .iter()
                .filter(|id| counts.contains_key(*id))
                .count(),
            unknown: counts
                .keys()
                .filter(|id| {
                    !acked.contains(*id)
                        && !stored_not_ok.contains(*id)
                        && !failed_ids.contains(*id)
                })
                .map(|id| (*id).to_owned())
                .collect(),
            corrupt,
            removed_by_expiry,
        }
    }
}

/// Failures by [`failure_kind`], with the first error of each kind.
#[must_use]
pub fn failures_by_kind(fails: &[Fail]) -> BTreeMap<String, (usize, String)> {
    let mut kinds: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for f in fails {
        let entry = kinds
            .entry(failure_kind(&f.error))
            .or_insert_with(|| (0, f.error.clone()));
        entry.0 += 1;
    }
    kinds
}

// ---------------------------------------------------------------- the pair and its failovers

/// How the master goes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failover {
    /// SIGKILL the master, promote the slave, restart the old master as its slave.
    Kill,
    /// Planned: promote the slave, then demote the live master to its slave (`-m`), both with
    /// `mqadmin switchRole` while the producer sends.
    Switchover,
}

/// Promotes `broker` with `mqadmin switchRole -r MASTER -t <role>`; returns how long the
/// command took.
fn promote(broker: &BrokerProcess, role: &str) -> u64 {
    let switch = broker.mqadmin(&[
        "switchRole",
        "-b",
        &broker.addr(),
        "-r",
        "MASTER",
        "-t",
        role,
    ]);
    switch.assert_ok();
    assert_eq!(switch.value("role"), Some(role), "{switch}");
    assert_eq!(switch.value("changed"), Some("true"), "{switch}");
    u64::try_from(switch.elapsed.as_millis()).unwrap_or(u64::MAX)
}

/// One failover of `pair` while `producer` sends: the master goes away (`kind`), the slave is
/// promoted, the producer gets a write stored on it, the old master rejoins as its slave and
/// follows it (for a SYNC_MASTER, until a SEND_OK comes after the rejoin). Returns the moments
/// and what the brokers said; the figures come from the producer's answers
/// ([`Round::figures`]).
///
/// # Panics
/// When a step fails or times out ([`STEP_TIMEOUT`]).
#[allow(
    clippy::too_many_lines,
    reason = "one failover, step by step, reads best as one function"
)]
pub fn failover(pair: &mut HaPair, kind: Failover, producer: &DrillProducer) -> Round {
    let role = pair.role.clone();
    let old_addr = pair.master().addr();
    let new_addr = pair.slave().addr();
    let new_ha = pair.slave().ha_addr();
    let mut round = Round {
        kind: Some(kind),
        old_master: old_addr.clone(),
        new_master: new_addr.clone(),
        ..Round::default()
    };
    let no_write = |what: &str| -> String {
        format!("no write accepted {what}: {:?}", producer.last_lines(5))
    };
    match kind {
        Failover::Kill => {
            // The master dies (`kill` returns once it is gone).
            round.old_end = pair.master().ha_status().ok().map(|s| s.max_offset);
            pair.master_mut().kill();
            round.killed_at = Some(now_ms());
            thread::sleep(DETECTION);

            // The slave takes over.
            round.switch_at = now_ms();
            round.switch_command_ms = promote(pair.slave(), &role);
            pair.promoted();
            assert!(
                producer.wait_acked_since(round.switch_at, false, STEP_TIMEOUT),
                "{}",
                no_write("after the switch")
            );
            thread::sleep(ALONE);

            // The old master comes back as the new master's slave: it learns the new
            // master from the name server and cuts its tail past the promotion point.
            round.caught_up_target = ha_status(&new_addr).ok().map(|s| s.max_offset);
            round.rejoin_at = now_ms();
            pair.slave_mut().restart_as("SLAVE", 1);
        }
        Failover::Switchover => {
            // Promote the slave, then demote the master to its slave, as an operator's
            // script would, while the producer sends. Between the two the old master
            // still takes writes its slave (now gone) never acknowledges: they are cut.
            round.switch_at = now_ms();
            let promote_ms = promote(pair.slave(), &role);
            pair.promoted();
            round.old_end = pair.slave().ha_status().ok().map(|s| s.max_offset);
            let demote = pair.slave().mqadmin(&[
                "switchRole",
                "-b",
                &old_addr,
                "-r",
                "SLAVE",
                "-m",
                &new_addr,
            ]);
            demote.assert_ok();
            assert_eq!(demote.value("role"), Some("SLAVE"), "{demote}");
            round.truncated_to = demote.value("truncatedTo").and_then(|v| v.parse().ok());
            let demote_ms = u64::try_from(demote.elapsed.as_millis()).unwrap_or(u64::MAX);
            round.switch_command_ms = promote_ms + demote_ms;
            round.caught_up_target = ha_status(&new_addr).ok().map(|s| s.max_offset);
            round.rejoin_at = now_ms();
        }
    }
    round.promoted_at = ha_status(&new_addr).ok().and_then(|s| s.promoted_at_offset);
    // The old master follows the new one; "caught up" once it also holds what the new
    // master had when it rejoined.
    let target = round.caught_up_target.unwrap_or(0);
    let mut caught_up = None;
    let followed = wait_until(STEP_TIMEOUT, || {
        let s = ha_status(&old_addr);
        let following = s.as_ref().is_ok_and(|s| {
            s.connected && !s.is_master() && s.master.as_deref() == Some(new_ha.as_str())
        });
        if following && caught_up.is_none() && s.as_ref().is_ok_and(|s| s.max_offset >= target) {
            caught_up = Some(now_ms());
        }
        following && caught_up.is_some()
    });
    assert!(
        followed,
        "the old master did not follow the new one: {:?}",
        ha_status(&old_addr)
    );
    round.caught_up_at = caught_up;
    if role == "SYNC_MASTER" {
        // SEND_OK again once the new SYNC_MASTER has a slave.
        assert!(
            producer.wait_acked_since(round.rejoin_at, true, STEP_TIMEOUT),
            "{}",
            no_write("as SEND_OK after the old master rejoined")
        );
    }
    round
}

/// One failover's moments (ms since the epoch) and what the brokers said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round {
    /// How the master went away.
    pub kind: Option<Failover>,
    /// The old master's address.
    pub old_master: String,
    /// The new master's (the promoted slave's) address.
    pub new_master: String,
    /// When the old master was killed.
    pub killed_at: Option<u64>,
    /// When the (first) switch command was given.
    pub switch_at: u64,
    /// When the old master was restarted / demoted to rejoin.
    pub rejoin_at: u64,
    /// How long the switch command(s) took.
    pub switch_command_ms: u64,
    /// The old master's CommitLog end before it went (switchover: when demoted).
    pub old_end: Option<u64>,
    /// Where the demotion cut the old master's log, if it had a tail past the promotion point.
    pub truncated_to: Option<u64>,
    /// The new master's promotion point (its CommitLog end when promoted).
    pub promoted_at: Option<u64>,
    /// The new master's CommitLog end when the old one rejoined.
    pub caught_up_target: Option<u64>,
    /// When the rejoined old master followed and held `caught_up_target`.
    pub caught_up_at: Option<u64>,
}

/// A round's figures, from the producer's answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundFigures {
    /// Kill to the first write the new master stored (any status).
    pub kill_to_first_write_ms: Option<u64>,
    /// Switch command to the first write the new master stored (any status).
    pub switch_to_first_write_ms: Option<u64>,
    /// Switch command to the first SEND_OK from the new master.
    pub switch_to_first_send_ok_ms: Option<u64>,
    /// Rejoin to the first SEND_OK from the new master.
    pub rejoin_to_first_send_ok_ms: Option<u64>,
    /// Rejoin to the old master holding what the new one had then (restart included).
    pub catch_up_ms: Option<u64>,
}

impl Round {
    /// The figures of this round in `acks`.
    #[must_use]
    pub fn figures(&self, acks: &[Ack]) -> RoundFigures {
        let new = Some(self.new_master.as_str());
        RoundFigures {
            kill_to_first_write_ms: self
                .killed_at
                .and_then(|k| first_ack_after(acks, k, false, new)),
            switch_to_first_write_ms: first_ack_after(acks, self.switch_at, false, new),
            switch_to_first_send_ok_ms: first_ack_after(acks, self.switch_at, true, new),
            rejoin_to_first_send_ok_ms: first_ack_after(acks, self.rejoin_at, true, new),
            catch_up_ms: self.caught_up_at.map(|t| t.saturating_sub(self.rejoin_at)),
        }
    }
}

/// Waits until the slave at `slave_addr` follows `master_ha_addr`, is connected and holds
/// `target` bytes of CommitLog (the master's end when the slave came back, say); returns when
/// it did. Works while the master takes writes (unlike
/// [`wait_caught_up`](crate::harness::wait_caught_up), which wants equal ends).
///
/// # Errors
/// The last status seen, after `timeout`.
pub fn wait_holding(
    slave_addr: &str,
    master_ha_addr: &str,
    target: u64,
    timeout: Duration,
) -> Result<Instant, String> {
    let mut last = String::new();
    let done = wait_until(timeout, || {
        let s = ha_status(slave_addr);
        let ok = s.as_ref().is_ok_and(|s| {
            s.connected
                && !s.is_master()
                && s.master.as_deref() == Some(master_ha_addr)
                && s.max_offset >= target
        });
        last = format!("{s:?}");
        ok
    });
    if done {
        Ok(Instant::now())
    } else {
        Err(format!(
            "slave {slave_addr} did not reach offset {target} of {master_ha_addr} in {timeout:?}: {last}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_producer_lines() {
        let lines = [
            "STARTED g 1",
            "ACK AB SEND_OK 100 105 i=3 q=2 off=7 oid=7F0000010000272A0000000000000040",
            "ACK CD SLAVE_NOT_AVAILABLE 106 108 i=4 q=1 off=0 oid=null",
            "FAIL 5 EF 110 1110 RemotingTimeoutException: timeout",
            "FAIL 6 - 1200 1201 MQClientException: No route info of this topic",
        ];
        let acks = parse_acks(&lines);
        assert_eq!(acks.len(), 2);
        assert_eq!(acks[0].index, Some(3));
        assert_eq!(acks[0].queue, Some((2, 7)));
        assert_eq!(acks[0].stored, Some(("127.0.0.1:10026".to_owned(), 64)));
        assert!(acks[0].stored_on("127.0.0.1:10026") && acks[0].is_send_ok());
        assert_eq!(acks[0].latency_ms(), 5);
        assert_eq!(acks[1].stored, None);
        let fails = parse_fails(&lines);
        assert_eq!(fails.len(), 2);
        assert_eq!(
            (fails[0].index, fails[0].id.as_deref()),
            (Some(5), Some("EF"))
        );
        assert_eq!(fails[1].id, None);
        assert_eq!(failure_kind(&fails[0].error), "timeout");
        assert_eq!(failure_kind(&fails[1].error), "no-route");
        assert_eq!(
            failure_kind("MQBrokerException: CODE: 14 DESC: disk full"),
            "broker-14"
        );
        assert!(acked_since(&lines, 105, true));
        assert!(!acked_since(&lines, 106, true));
        assert!(acked_since(&lines, 106, false));
        assert_eq!(first_ack_after(&acks, 101, false, None), Some(4));
        assert_eq!(first_ack_after(&acks, 106, true, None), None);
        assert_eq!(first_send_ok_sent_after(&acks, 100), Some(5));
        assert_eq!(first_send_ok_sent_after(&acks, 101), None);
    }

    #[test]
    fn bodies_match_the_java_producer() {
        assert_eq!(expected_body(12, 0), "drill-12");
        assert_eq!(expected_body(12, 9), "drill-12");
        // Byte 9 of message 12: 'a' + (12 + 63) % 26 = 'a' + 23.
        assert_eq!(expected_body(12, 10), "drill-12-x");
        let b = expected_body(123_456, 1024);
        assert_eq!(b.len(), 1024);
        assert!(b.starts_with("drill-123456-"));
    }

    fn recv(id: &str, body: &str) -> Recv {
        Recv {
            msg_id: id.to_owned(),
            body: body.to_owned(),
            ..Recv::default()
        }
    }

    #[test]
    fn books_count_what_was_kept() {
        let acks = parse_acks(&[
            "ACK A SEND_OK 1 2 i=0 q=0 off=0 oid=-",
            "ACK B SEND_OK 1 2 i=1 q=0 off=1 oid=-",
            "ACK C SEND_OK 1 2 i=2 q=1 off=0 oid=-",
            "ACK D SLAVE_NOT_AVAILABLE 1 2 i=3 q=1 off=1 oid=-",
            "ACK E SEND_OK 1 2 i=4 q=1 off=2 oid=-",
        ]);
        let fails = parse_fails(&["FAIL 5 F 1 2 timeout", "FAIL 6 G 1 2 timeout"]);
        let drained = Drained {
            received: vec![
                recv("B", "drill-1"),
                recv("B", "drill-1"),
                recv("C", "drill-9"),
                recv("F", "drill-5"),
                recv("Z", "drill-7"),
            ],
            // Queue 0 was expired below offset 1: A went with its file.
            queues: vec![
                QueueBounds {
                    broker: "broker-a".to_owned(),
                    queue_id: 0,
                    min: 1,
                    max: 2,
                },
                QueueBounds {
                    broker: "broker-a".to_owned(),
                    queue_id: 1,
                    min: 0,
                    max: 3,
                },
            ],
            elapsed: Duration::ZERO,
        };
        let b = Books::new(&acks, &fails, &drained, 0);
        assert_eq!(b.sent, 7);
        assert_eq!((b.acked, b.stored_not_ok, b.failed), (4, 1, 2));
        assert_eq!((b.received, b.distinct_received), (5, 4));
        assert_eq!(b.lost, ["E"]);
        assert_eq!(b.removed_by_expiry, 1);
        assert_eq!(b.lost_not_ok, 1);
        assert_eq!(b.duplicates, 1);
        assert_eq!(b.failed_but_stored, 1);
        assert_eq!(b.unknown, ["Z"]);
        assert_eq!(b.corrupt, ["C"]);
    }
}
