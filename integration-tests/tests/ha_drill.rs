//! The failover drills of issue #6, with real processes and the official Java client: a name
//! server, a master and a slave (a SYNC_MASTER pair also flushes with SYNC_FLUSH);
//! `sluice.it.DrillProducer` sends continuously and records every answer, including which broker
//! stored it (the offset message id names the store host); the master goes away (below);
//! `mqadmin switchRole` promotes the slave; the producer carries on once its route refresh finds
//! the new master; the old master becomes the new master's slave, its log cut back to the
//! promotion point (the common prefix); then `sluice.it.DrillDrain` reads every queue to its end
//! from the new master.
//!
//! What counts (see `DrillProducer`'s docs): a message is *acknowledged* when the client got
//! SEND_OK; FLUSH_*_TIMEOUT / SLAVE_NOT_AVAILABLE answers mean "stored on the master only" and are
//! reported separately as `stored_not_ok`; a send that threw is `failed` (its message may exist
//! anyway: the answer can be lost with the master).
//!
//! - `sync_master_switchover_drill`: planned, both brokers alive: `switchRole -r MASTER` on the
//!   slave, then `switchRole -r SLAVE -m <new master>` on the master, while sending. The old
//!   master takes writes between the two that its (departed) slave never acknowledges; the
//!   demotion cuts them (it must cut exactly at the promotion point) and it follows the new
//!   master.
//! - `sync_master_drill`: the master is killed with SIGKILL, the slave promoted as SYNC_MASTER,
//!   the old master restarted as its slave (it learns the new master from the name server and
//!   cuts any tail past the promotion point).
//!
//!   Both assert: every acknowledged id is drained (0 lost), every drained id was sent, every
//!   answer names one of the two brokers as its store, the new master acknowledges writes after
//!   the switch, the old master ends byte-identical to the new master and follows it, no broker
//!   panicked. Duplicates are counted, and the time from the (first) switch command to the first
//!   write stored by the new master (goal ≤ 1 s; any status: a promoted SYNC_MASTER answers
//!   SLAVE_NOT_AVAILABLE until the old master rejoins as its slave, so its first SEND_OK is
//!   reported separately) is measured and printed, not asserted beyond a generous limit.
//! - `async_master_drill`: the kill drill with ASYNC_MASTER; acknowledged messages the slave had
//!   not received when the master died are lost (cut when the old master rejoins): the number is
//!   printed, not asserted; everything else is.
//!
//! Each test prints one `DRILL ...` summary line on stderr (`--nocapture`). The drills of this file
//! run one at a time (they measure latencies on a small machine). The other client / send-mode
//! combinations are `#[ignore]`d (`cargo test -p integration-tests --test ha_drill -- --ignored`).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use integration_tests::java::{JavaTools, Recv, V4, V5, unique_name};
use integration_tests::process::{HaBrokerProcess, NamesrvProcess, TestDir, wait_until};

/// Messages acknowledged before the master is killed.
const ACKS_BEFORE_KILL: usize = 300;
/// Time between the kill and the switch command: an operator noticing the failure.
const DETECTION: Duration = Duration::from_millis(1000);
/// Time the new master takes writes alone before the old one is restarted as its slave.
const ALONE: Duration = Duration::from_millis(1500);
/// Time the producer keeps sending once the pair is whole again.
const TAIL: Duration = Duration::from_millis(1000);
/// The goal for "switch command to first accepted write".
const SWITCH_GOAL_MS: u64 = 1000;
/// What the test tolerates for it on a loaded CI machine (the goal is printed, not asserted).
const SWITCH_LIMIT_MS: u64 = 10_000;

/// One drill at a time: they measure latencies, and two at once on two cores measure the machine.
static DRILLS: Mutex<()> = Mutex::new(());

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// An `ACK` line of `DrillProducer`:
/// `ACK <id> <status> <sentAt> <ackAt> i=.. q=.. off=.. oid=<offsetMsgId>`.
#[derive(Debug, Clone)]
struct Ack {
    id: String,
    status: String,
    sent_at: u64,
    ack_at: u64,
    /// `ip:port` of the broker that stored it and the record's CommitLog offset, from the
    /// offset message id.
    stored: Option<(String, u64)>,
}

/// An offset message id (RocketMQ's `MessageDecoder.createMessageId`): 32 hex digits, the store
/// host's IPv4 (4 bytes), its port (4 bytes, big-endian) and the CommitLog offset (8 bytes).
fn parse_offset_msg_id(hex: &str) -> Option<(String, u64)> {
    if hex.len() != 32 || !hex.is_ascii() {
        return None;
    }
    let ip = u32::from_str_radix(&hex[0..8], 16).ok()?;
    let port = u32::from_str_radix(&hex[8..16], 16).ok()?;
    let offset = u64::from_str_radix(&hex[16..32], 16).ok()?;
    Some((format!("{}:{port}", std::net::Ipv4Addr::from(ip)), offset))
}

/// A `FAIL` line: `FAIL <i> <id|-> <sentAt> <failAt> <error>`.
#[derive(Debug, Clone)]
struct Fail {
    id: Option<String>,
    fail_at: u64,
    error: String,
}

fn parse_acks<S: AsRef<str>>(lines: &[S]) -> Vec<Ack> {
    lines
        .iter()
        .filter_map(|l| {
            let f: Vec<&str> = l.as_ref().strip_prefix("ACK ")?.split(' ').collect();
            Some(Ack {
                id: f.first()?.to_string(),
                status: f.get(1)?.to_string(),
                sent_at: f.get(2)?.parse().ok()?,
                ack_at: f.get(3)?.parse().ok()?,
                stored: f
                    .iter()
                    .find_map(|x| x.strip_prefix("oid="))
                    .and_then(parse_offset_msg_id),
            })
        })
        .collect()
}

/// Whether an ACK at or after `t` (a SEND_OK one with `ok_only`) is among `lines`. Looks from the
/// end and stops at acks well before `t` (async acks may come slightly out of order), so waiting
/// on a long-running producer stays cheap.
fn acked_since<S: AsRef<str>>(lines: &[S], t: u64, ok_only: bool) -> bool {
    for line in lines.iter().rev() {
        let Some(ack) = parse_acks(std::slice::from_ref(line)).pop() else {
            continue;
        };
        if ack.ack_at >= t && (!ok_only || ack.status == "SEND_OK") {
            return true;
        }
        if ack.ack_at + 5_000 < t {
            return false;
        }
    }
    false
}

fn parse_fails<S: AsRef<str>>(lines: &[S]) -> Vec<Fail> {
    lines
        .iter()
        .filter_map(|l| {
            let mut f = l.as_ref().strip_prefix("FAIL ")?.splitn(5, ' ');
            let _i = f.next()?;
            let id = f.next()?;
            let _sent_at = f.next()?;
            Some(Fail {
                id: (id != "-").then(|| id.to_owned()),
                fail_at: f.next()?.parse().ok()?,
                error: f.next().unwrap_or("").to_owned(),
            })
        })
        .collect()
}

/// How the master goes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failover {
    /// SIGKILL the master, promote the slave, restart the old master as its slave.
    Kill,
    /// Planned: promote the slave, then demote the live master to its slave (`-m`), both with
    /// `mqadmin switchRole` while the producer sends.
    Switchover,
}

/// What a drill measured.
#[derive(Debug, Default)]
struct Report {
    label: String,
    sent: usize,
    acked: usize,
    stored_not_ok: usize,
    failed: usize,
    received: usize,
    distinct_received: usize,
    lost: Vec<String>,
    lost_not_ok: usize,
    duplicates: usize,
    failed_but_stored: usize,
    unknown: Vec<String>,
    /// SEND_OK answers from the old master / the new one.
    acked_on_old: usize,
    acked_on_new: usize,
    kill_to_first_write_ms: Option<u64>,
    /// From the (first) switch command to the first write the new master stored (any status).
    switch_to_first_write_ms: Option<u64>,
    /// ... to the first SEND_OK from the new master.
    switch_to_first_send_ok_ms: Option<u64>,
    switch_command_ms: u64,
    rejoin_to_first_send_ok_ms: Option<u64>,
    max_send_latency_ms: u64,
    /// The new master's promotion point (its CommitLog end when promoted).
    promoted_at: Option<u64>,
    /// The old master's CommitLog end before it rejoined (switchover: when demoted).
    old_end: Option<u64>,
    /// Where the old master's log was cut (the promotion point), if it had a tail past it.
    truncated_to: Option<u64>,
    failure_kinds: BTreeMap<String, usize>,
    /// The first error of each kind.
    failure_examples: BTreeMap<String, String>,
    elapsed: Duration,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |v: Option<u64>| v.map_or_else(|| "none".to_owned(), |v| format!("{v}ms"));
        let off = |v: Option<u64>| v.map_or_else(|| "none".to_owned(), |v| v.to_string());
        write!(
            f,
            "DRILL {}: sent={} acked(SEND_OK)={} (old master {}, new master {}) stored_not_ok={} \
             failed={} received={} lost={} lost_not_ok={} duplicates={} failed_but_stored={} \
             switch_to_first_write={} (goal {SWITCH_GOAL_MS}ms: {}) switch_to_first_send_ok={} \
             kill_to_first_write={} switch_command={}ms rejoin_to_first_send_ok={} \
             max_send_latency={}ms promoted_at={} old_master_end={} old_master_cut_to={} took={:.1}s",
            self.label,
            self.sent,
            self.acked,
            self.acked_on_old,
            self.acked_on_new,
            self.stored_not_ok,
            self.failed,
            self.received,
            self.lost.len(),
            self.lost_not_ok,
            self.duplicates,
            self.failed_but_stored,
            ms(self.switch_to_first_write_ms),
            if self
                .switch_to_first_write_ms
                .is_some_and(|v| v <= SWITCH_GOAL_MS)
            {
                "met"
            } else {
                "MISSED"
            },
            ms(self.switch_to_first_send_ok_ms),
            ms(self.kill_to_first_write_ms),
            self.switch_command_ms,
            ms(self.rejoin_to_first_send_ok_ms),
            self.max_send_latency_ms,
            off(self.promoted_at),
            off(self.old_end),
            off(self.truncated_to),
            self.elapsed.as_secs_f64(),
        )?;
        if !self.failure_kinds.is_empty() {
            write!(f, " failures_by_kind={:?}", self.failure_kinds)?;
        }
        Ok(())
    }
}

/// The failure's exception, shortened to its kind, for the summary (`broker-14` for an
/// MQBrokerException with code 14).
fn failure_kind(error: &str) -> String {
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

/// `role`: SYNC_MASTER or ASYNC_MASTER (the pair's and the promoted slave's; a SYNC_MASTER pair
/// also flushes synchronously, SYNC_FLUSH); `client`: the Java client version; `mode`:
/// DrillProducer's sync or async sends; `failover`: how the master goes away.
#[allow(
    clippy::too_many_lines,
    reason = "one drill, step by step, reads best as one function"
)]
fn drill(role: &str, client: &str, mode: &str, failover: Failover) -> Report {
    let _one_at_a_time = DRILLS.lock().unwrap_or_else(PoisonError::into_inner);
    let started = Instant::now();
    let label = format!("{failover:?} {role} client={client} mode={mode}");
    let java = JavaTools::get(client);
    let work = TestDir::new("drill");
    let stop_file = work.path().join("stop");
    let flush = if role == "SYNC_MASTER" {
        "SYNC_FLUSH"
    } else {
        "ASYNC_FLUSH"
    };
    let settings = [("flushDiskType", flush)];

    // The pair: the master registered first, so the slave learns it at its first registration.
    let ns = NamesrvProcess::start();
    let mut a = HaBrokerProcess::start_master("a", &ns.addr(), role, &settings);
    let topic = unique_name("Drill");
    a.create_topic(&topic, 4);
    let mut b = HaBrokerProcess::start("b", &ns.addr(), "SLAVE", 1, &settings);
    b.wait_following(&a, Duration::from_secs(20)).unwrap();

    // Continuous sends.
    let producer = java.spawn(
        "sluice.it.DrillProducer",
        &[
            "--namesrv",
            &ns.addr(),
            "--topic",
            &topic,
            "--mode",
            mode,
            "--send-timeout-ms",
            "1000",
            "--retries",
            "2",
            "--poll-namesrv-ms",
            "1000",
            "--stop-file",
            stop_file.to_str().unwrap(),
            "--timeout-ms",
            "180000",
        ],
    );
    assert!(
        producer.wait_until(Duration::from_secs(60), |lines| {
            lines.iter().filter(|l| l.starts_with("ACK ")).count() >= ACKS_BEFORE_KILL
        }),
        "the producer did not get {ACKS_BEFORE_KILL} acks: {:?}",
        producer
            .stdout_lines()
            .iter()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
    );

    let promote = |b: &HaBrokerProcess| {
        let switch = b.mqadmin(&["switchRole", "-b", &b.addr(), "-r", "MASTER", "-t", role]);
        switch.assert_ok();
        assert_eq!(switch.value("role"), Some(role), "{switch}");
        assert_eq!(switch.value("changed"), Some("true"), "{switch}");
        u64::try_from(switch.elapsed.as_millis()).unwrap_or(u64::MAX)
    };
    let (killed_at, switch_at, rejoin_at, switch_command_ms, old_end, truncated_to) = match failover
    {
        Failover::Kill => {
            // The master dies (`kill` returns once it is gone).
            let old_end = a.ha_status().ok().map(|s| s.max_offset);
            a.kill();
            let killed_at = now_ms();
            thread::sleep(DETECTION);

            // The slave takes over.
            let switch_at = now_ms();
            let switch_command_ms = promote(&b);
            assert!(
                producer.wait_until(Duration::from_secs(30), |lines| acked_since(
                    lines, switch_at, false
                )),
                "no write accepted after the switch: {:?}",
                producer
                    .stdout_lines()
                    .iter()
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
            );
            thread::sleep(ALONE);

            // The old master comes back as the new master's slave: it learns the new
            // master from the name server and cuts its tail past the promotion point.
            let rejoin_at = now_ms();
            a.restart_as("SLAVE", 1);
            (
                Some(killed_at),
                switch_at,
                rejoin_at,
                switch_command_ms,
                old_end,
                None,
            )
        }
        Failover::Switchover => {
            // Promote the slave, then demote the master to its slave, as an operator's
            // script would, while the producer sends. Between the two the old master
            // still takes writes its slave (now gone) never acknowledges: they are cut.
            let switch_at = now_ms();
            let promote_ms = promote(&b);
            let old_end = a.ha_status().ok().map(|s| s.max_offset);
            let demote = a.mqadmin(&[
                "switchRole",
                "-b",
                &a.addr(),
                "-r",
                "SLAVE",
                "-m",
                &b.addr(),
            ]);
            demote.assert_ok();
            assert_eq!(demote.value("role"), Some("SLAVE"), "{demote}");
            let truncated_to = demote.value("truncatedTo").and_then(|v| v.parse().ok());
            let demote_ms = u64::try_from(demote.elapsed.as_millis()).unwrap_or(u64::MAX);
            (
                None,
                switch_at,
                now_ms(),
                promote_ms + demote_ms,
                old_end,
                truncated_to,
            )
        }
    };
    assert!(
        wait_until(Duration::from_secs(30), || a
            .ha_status()
            .is_ok_and(|s| s.connected
                && !s.is_master()
                && s.master.as_deref() == Some(b.ha_addr().as_str()))),
        "the old master did not follow the new one: {:?}",
        a.ha_status()
    );
    if role == "SYNC_MASTER" {
        // SEND_OK again once the new SYNC_MASTER has a slave.
        assert!(
            producer.wait_until(Duration::from_secs(30), |lines| acked_since(
                lines, rejoin_at, true
            )),
            "no SEND_OK after the old master rejoined"
        );
    }
    thread::sleep(TAIL);

    // Stop, and read everything back.
    fs::write(&stop_file, b"stop").unwrap();
    let produced = producer.wait(Duration::from_secs(60));
    produced.assert_ok();
    let lines: Vec<&str> = produced.stdout.lines().collect();
    let acks = parse_acks(&lines);
    let fails = parse_fails(&lines);
    a.wait_following(&b, Duration::from_secs(30)).unwrap();
    let new_master = b.ha_status().unwrap();
    assert!(
        new_master.is_master() && new_master.broker_id == 0,
        "{new_master:?}"
    );
    let promoted_at = new_master.promoted_at_offset;
    let drained = java.run(
        "sluice.it.DrillDrain",
        &[
            "--namesrv",
            &ns.addr(),
            "--topic",
            &topic,
            "--group",
            &unique_name("drain"),
        ],
        Duration::from_secs(120),
    );
    drained.assert_ok();
    let received: Vec<String> = Recv::all(drained.stdout.lines())
        .into_iter()
        .map(|r| r.msg_id)
        .collect();

    // The old master's log is now the new master's, byte for byte: cut to the common prefix
    // (the promotion point) and following.
    let same =
        integration_tests::process::compare_store_files(&b.commit_log_dir(), &a.commit_log_dir());
    assert!(same.is_ok(), "after the rejoin: {}", same.unwrap_err());
    if let Some(cut) = truncated_to {
        assert_eq!(
            Some(cut),
            promoted_at,
            "the old master was cut somewhere else than the promotion point"
        );
    }
    for broker in [&mut a, &mut b] {
        let p = broker.process();
        assert_eq!(p.count_in_log("panicked"), 0, "{}", p.log_tails());
    }

    // Which broker stored each answered send: the offset message id says.
    let (old_addr, new_addr) = (a.addr(), b.addr());
    for ack in &acks {
        let host = ack.stored.as_ref().map(|(h, _)| h.as_str());
        assert!(
            host == Some(old_addr.as_str()) || host == Some(new_addr.as_str()),
            "an answer names neither broker as the store: {ack:?}"
        );
    }
    let on = |ack: &Ack, addr: &str| ack.stored.as_ref().is_some_and(|(h, _)| h == addr);

    // The books.
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for id in &received {
        *counts.entry(id.as_str()).or_default() += 1;
    }
    let acked: BTreeSet<&str> = acks
        .iter()
        .filter(|a| a.status == "SEND_OK")
        .map(|a| a.id.as_str())
        .collect();
    let stored_not_ok: BTreeSet<&str> = acks
        .iter()
        .filter(|a| a.status != "SEND_OK")
        .map(|a| a.id.as_str())
        .collect();
    let failed_ids: BTreeSet<&str> = fails.iter().filter_map(|f| f.id.as_deref()).collect();
    let mut failure_kinds = BTreeMap::new();
    let mut failure_examples = BTreeMap::new();
    for f in &fails {
        let kind = failure_kind(&f.error);
        failure_examples
            .entry(kind.clone())
            .or_insert_with(|| f.error.clone());
        *failure_kinds.entry(kind).or_default() += 1;
    }
    let first_after = |t: u64, ok_only: bool, addr: Option<&str>| {
        acks.iter()
            .filter(|a| a.ack_at >= t && (!ok_only || a.status == "SEND_OK"))
            .filter(|a| addr.is_none_or(|addr| on(a, addr)))
            .map(|a| a.ack_at - t)
            .min()
    };
    let acked_on = |addr: &str| {
        acks.iter()
            .filter(|a| a.status == "SEND_OK" && on(a, addr))
            .count()
    };
    let report = Report {
        label,
        sent: acks.len() + fails.len(),
        acked: acked.len(),
        stored_not_ok: stored_not_ok.len(),
        failed: fails.len(),
        received: received.len(),
        distinct_received: counts.len(),
        lost: acked
            .iter()
            .filter(|id| !counts.contains_key(*id))
            .map(|id| (*id).to_owned())
            .collect(),
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
                !acked.contains(*id) && !stored_not_ok.contains(*id) && !failed_ids.contains(*id)
            })
            .map(|id| (*id).to_owned())
            .collect(),
        acked_on_old: acked_on(&old_addr),
        acked_on_new: acked_on(&new_addr),
        kill_to_first_write_ms: killed_at.and_then(|k| first_after(k, false, Some(&new_addr))),
        switch_to_first_write_ms: first_after(switch_at, false, Some(&new_addr)),
        switch_to_first_send_ok_ms: first_after(switch_at, true, Some(&new_addr)),
        switch_command_ms,
        rejoin_to_first_send_ok_ms: first_after(rejoin_at, true, Some(&new_addr)),
        max_send_latency_ms: acks
            .iter()
            .map(|a| a.ack_at.saturating_sub(a.sent_at))
            .max()
            .unwrap_or(0),
        promoted_at,
        old_end,
        truncated_to,
        failure_kinds,
        failure_examples,
        elapsed: started.elapsed(),
    };
    eprintln!("{report}");
    for (kind, error) in &report.failure_examples {
        eprintln!("  first {kind} failure: {error}");
    }
    if !report.lost.is_empty() {
        eprintln!(
            "lost (acknowledged, not drained), first 10: {:?}",
            &report.lost[..report.lost.len().min(10)]
        );
    }

    // What must hold for any master role.
    assert!(
        report.unknown.is_empty(),
        "drained messages the producer never sent: {:?}",
        report.unknown
    );
    assert!(report.distinct_received <= report.sent, "{report}");
    assert!(
        report.acked_on_new > 0,
        "the new master acknowledged nothing: {report}"
    );
    let first_write = report
        .switch_to_first_write_ms
        .expect("a write on the new master after the switch");
    assert!(
        first_write <= SWITCH_LIMIT_MS,
        "first write {first_write}ms after the switch: {report}"
    );
    let fails_after_switch = fails
        .iter()
        .filter(|f| f.fail_at > switch_at + SWITCH_LIMIT_MS)
        .count();
    assert_eq!(
        fails_after_switch, 0,
        "sends still failing {SWITCH_LIMIT_MS}ms after the switch: {report}"
    );
    report
}

fn assert_nothing_lost(report: &Report) {
    assert!(
        report.lost.is_empty(),
        "{} acknowledged messages lost: {report}",
        report.lost.len()
    );
}

#[test]
fn sync_master_switchover_drill() {
    let report = drill("SYNC_MASTER", V4, "sync", Failover::Switchover);
    assert_nothing_lost(&report);
    assert!(
        report.switch_to_first_send_ok_ms.is_some(),
        "no SEND_OK from the new master: {report}"
    );
}

#[test]
fn sync_master_drill() {
    let report = drill("SYNC_MASTER", V4, "sync", Failover::Kill);
    assert_nothing_lost(&report);
    assert!(
        report.switch_to_first_send_ok_ms.is_some(),
        "no SEND_OK after the switch: {report}"
    );
}

#[test]
fn async_master_drill() {
    let report = drill("ASYNC_MASTER", V5, "sync", Failover::Kill);
    // Loss is allowed here, bounded by the replication lag at the kill; it is printed above.
    eprintln!(
        "ASYNC_MASTER drill lost {} of {} acknowledged messages",
        report.lost.len(),
        report.acked
    );
}

#[test]
#[ignore = "slow: the remaining client/send-mode combinations; run with --ignored"]
fn sync_master_switchover_drill_5_3_3_async_sends() {
    let report = drill("SYNC_MASTER", V5, "async", Failover::Switchover);
    assert_nothing_lost(&report);
}

#[test]
#[ignore = "slow: the remaining client/send-mode combinations; run with --ignored"]
fn sync_master_drill_5_3_3_async_sends() {
    let report = drill("SYNC_MASTER", V5, "async", Failover::Kill);
    assert_nothing_lost(&report);
}

#[test]
#[ignore = "slow: the remaining client/send-mode combinations; run with --ignored"]
fn sync_master_drill_5_3_3() {
    let report = drill("SYNC_MASTER", V5, "sync", Failover::Kill);
    assert_nothing_lost(&report);
}

#[test]
#[ignore = "slow: the remaining client/send-mode combinations; run with --ignored"]
fn sync_master_drill_4_9_8_async_sends() {
    let report = drill("SYNC_MASTER", V4, "async", Failover::Kill);
    assert_nothing_lost(&report);
}

#[test]
#[ignore = "slow: the remaining client/send-mode combinations; run with --ignored"]
fn async_master_drill_4_9_8() {
    drill("ASYNC_MASTER", V4, "sync", Failover::Kill);
}

#[test]
#[ignore = "slow: the remaining client/send-mode combinations; run with --ignored"]
fn async_master_switchover_drill() {
    drill("ASYNC_MASTER", V4, "sync", Failover::Switchover);
}
