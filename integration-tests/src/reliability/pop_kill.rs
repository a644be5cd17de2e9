//! POP consumption across kill -9 (issue 16's target: "with kill -9 every 10 s, duplicates
//! ≤ 0.1 %, lost 0"). One master under `flushDiskType=SYNC_FLUSH` (an ack is answered
//! once the pop offset passed its batch or its record is durable; checkpoints kept in
//! memory are journaled and written back at the restart) holds a backlog written
//! first by `mqbench`, read back once by pulls so the books know every message it holds
//! (`UNIQ_KEY` and body). Then POP consumers in the driver's process
//! ([`crate::bench::pop_load`]: pops of 32, one ACK_MESSAGE per message) consume it while
//! the broker is killed with SIGKILL at a fixed gap after it served again and restarted at
//! once on the same store. They keep going after the last kill until every message has
//! been acked once, then for longer than the invisible time plus the revive's latency, so
//! an ack the broker lost would come back as a redelivery.
//!
//! The books: *lost* is a message of the backlog never acked; *duplicated* is every
//! delivery after a message's first (an ack the kill cut off: the message comes back after
//! its invisible time, as POP promises); *redelivered after an ack* is a delivery of a
//! message whose ack had been answered SUCCESS — the broker promised that ack durable.

use std::collections::HashMap;
use std::thread;
use std::time::{Duration, Instant};

use message::properties;
use message::record::{self, Record};
use remoting::RemotingClient;
use serde_json::Value;

use super::scenario::{Ctx, Outcome, truncate};
use crate::bench::pop_load::{self, AckMode, PopLoad, PopOutcome, body_hash, identity_of_key};
use crate::harness::build::binary;
use crate::harness::{
    BrokerProcess, HA_BROKER_NAME, NamesrvProcess, ha_status, unique_name, wait_until,
};
use crate::procs::Proc;

/// Body size of the backlog's messages.
pub const BODY_SIZE: usize = 512;
/// Queues of the topic.
pub const QUEUES: u32 = 8;
/// Concurrent POP consumers (each popping every queue).
pub const CONSUMERS: usize = 8;
/// `maxMsgNums` of a pop.
pub const BATCH: i32 = 32;
/// Poll time of a pop that finds nothing, ms.
pub const POLL_MS: i64 = 1000;
/// The linger after the last ack: the invisible time plus this (the timer wheel's delivery
/// of the checkpoint to the revive log, the revive round, a pop's poll).
pub const LINGER_SLACK: Duration = Duration::from_secs(8);
/// The fill: `mqbench producer` with these arguments (plus `-n`, `-t`, `--size`,
/// `--messages`).
pub const FILLER: &[&str] = &[
    "--mode",
    "async",
    "--batch",
    "16",
    "--threads",
    "8",
    "--inflight",
    "4",
];
/// Consumer group.
const GROUP: &str = "GID_rel_pop_kill9";
/// How long a restarted broker may take to answer requests again.
const SERVE_TIMEOUT: Duration = Duration::from_secs(60);
/// Kills at most (when the plan says "until consumed").
const MAX_KILLS: u32 = 1000;

/// Runs the scenario (see the module docs).
///
/// # Errors
/// A step fails (the fill, the read-back, the broker does not come back).
#[allow(
    clippy::too_many_lines,
    reason = "the scenario's sequence, top to bottom"
)]
pub fn run(ctx: &mut Ctx<'_>) -> Result<Outcome, String> {
    let plan = ctx.plan;
    let ns = NamesrvProcess::start();
    let mut broker = BrokerProcess::start_master(
        "a",
        &ns.addr(),
        "ASYNC_MASTER",
        &[("flushDiskType", "SYNC_FLUSH")],
    );
    let addr = broker.addr();
    let topic = unique_name("PopKill9");
    broker.create_topic(&topic, QUEUES);

    // The backlog, then what the broker holds of it: the books' "sent".
    let fill_clock = Instant::now();
    let fill = fill(ctx, &ns.addr(), &topic, plan.pop_messages)?;
    ctx.result
        .metric("fill_secs", fill_clock.elapsed().as_secs_f64());
    let send_ok = num(&fill, "messages");
    ctx.result.metric("fill_send_ok", send_ok);
    ctx.result.metric("fill_errors", num(&fill, "errors"));
    let backlog = read_backlog(&addr, &topic)?;
    #[allow(clippy::cast_precision_loss, reason = "counts")]
    let records = backlog.records as f64;
    ctx.result.count("backlog_records", backlog.records);
    ctx.result.count("backlog_duplicate_keys", backlog.repeated);
    // A SEND_OK under SYNC_FLUSH, before any fault: every one of them must be there.
    ctx.result
        .metric("fill_send_ok_not_stored", (send_ok - records).max(0.0));
    let sent = backlog.keys;
    ctx.result.count("sent", sent.len());
    if sent.is_empty() {
        return Err("the backlog is empty".to_owned());
    }
    ctx.result.note(
        "backlog",
        format!(
            "`mqbench producer {} --size {BODY_SIZE}`: {} SEND_OK, {} records read back by pulls",
            FILLER.join(" "),
            crate::stats::fmt_count(send_ok),
            backlog.records
        ),
    );

    let load = PopLoad {
        addr: addr.clone(),
        broker_name: HA_BROKER_NAME.to_owned(),
        topic: topic.clone(),
        group: GROUP.to_owned(),
        consumers: CONSUMERS,
        max: BATCH,
        invisible_ms: plan.pop_invisible_ms,
        poll_ms: POLL_MS,
        ack: AckMode::Single,
        expect: sent.len() as u64,
        progress: Some(ctx.log_dir.join("pop-consumers.log")),
        #[allow(clippy::cast_precision_loss, reason = "a rate")]
        rate: (plan.pop_rate > 0).then_some(plan.pop_rate as f64),
        retry_acks: true,
        check_bodies: true,
    };
    ctx.result.note(
        "consumers",
        format!(
            "{CONSUMERS} in-process POP consumers over one connection (integration-tests/src/bench/pop_load.rs): \
             pops of {BATCH} (queue −1), invisible {} ms, poll {POLL_MS} ms, one ACK_MESSAGE per message (sent \
             again {} s after a transport error until answered, as the 5.x SDKs' push consumers do), {}",
            plan.pop_invisible_ms,
            pop_load::ACK_RETRY_DELAY.as_secs(),
            if plan.pop_rate > 0 {
                format!(
                    "at most {} messages/s (a pop's messages held un-acked until the pace allows)",
                    plan.pop_rate
                )
            } else {
                "as fast as they can".to_owned()
            }
        ),
    );
    let running = pop_load::start(load)?;
    let started = Instant::now();
    let gap = Duration::from_millis(plan.pop_kill_gap_ms);
    let planned = if plan.pop_kills == 0 {
        MAX_KILLS
    } else {
        plan.pop_kills
    };
    // No new message acked for this long: the rest will not come (lost).
    let stall = Duration::from_millis(u64::try_from(plan.pop_invisible_ms).unwrap_or(0) * 4)
        .max(Duration::from_secs(30))
        + LINGER_SLACK;
    let (mut kills, mut while_consuming) = (0u32, 0u32);
    let mut progress = (running.acked(), Instant::now());
    let mut stalled = false;
    // The last kill while consuming: its clock and the successful acks before it, until the
    // first ack after it is seen.
    let mut outage: Option<(Instant, u64)> = None;
    // How long the first ack after a kill may take: the un-acked messages of the kill come
    // back after the invisible time.
    let first_ack_timeout =
        Duration::from_millis(u64::try_from(plan.pop_invisible_ms).unwrap_or(0))
            + LINGER_SLACK
            + SERVE_TIMEOUT;
    loop {
        // The gap (longer while the last kill's first ack is awaited), watching the
        // consumers.
        let until = Instant::now() + gap;
        loop {
            thread::sleep(Duration::from_millis(5));
            let acked = running.acked();
            if acked != progress.0 {
                progress = (acked, Instant::now());
            }
            if let Some((clock, before)) = outage {
                if running.acks_ok() > before {
                    ctx.result.event(
                        "kill_to_first_ack_ms",
                        clock.elapsed().as_secs_f64() * 1000.0,
                    );
                    outage = None;
                } else if running.consumed() || clock.elapsed() > first_ack_timeout {
                    outage = None;
                }
            }
            if progress.1.elapsed() > stall {
                stalled = true;
                break;
            }
            let done = kills >= planned || (plan.pop_kills == 0 && running.consumed());
            if outage.is_none() && (done || Instant::now() >= until) {
                break;
            }
        }
        if stalled || kills >= planned || (plan.pop_kills == 0 && running.consumed()) {
            break;
        }
        let consuming = !running.consumed();
        let clock = Instant::now();
        broker.kill();
        let acks_before = running.acks_ok();
        broker.process().restart();
        let listening = clock.elapsed();
        if !wait_until(SERVE_TIMEOUT, || ha_status(&addr).is_ok()) {
            running.stop();
            return Err(format!(
                "kill {}: the broker does not answer after its restart",
                kills + 1
            ));
        }
        let serving = clock.elapsed();
        kills += 1;
        ctx.result
            .event("kill_to_listening_ms", listening.as_secs_f64() * 1000.0);
        ctx.result
            .event("kill_to_serving_ms", serving.as_secs_f64() * 1000.0);
        if consuming {
            while_consuming += 1;
            outage = Some((clock, acks_before));
        }
        progress = (running.acked(), Instant::now());
    }
    let kills_done = started.elapsed();
    ctx.result.count("kills", kills as usize);
    ctx.result
        .count("kills_while_consuming", while_consuming as usize);
    // Until every message has been acked once (or nothing moves for `stall`).
    if !stalled {
        let mut progress = (running.acked(), Instant::now());
        while !running.consumed() && progress.1.elapsed() < stall {
            thread::sleep(Duration::from_millis(20));
            let acked = running.acked();
            if acked != progress.0 {
                progress = (acked, Instant::now());
            }
        }
    }
    let consumed = running.consumed();
    let consume_secs = started.elapsed();
    ctx.result.metric("consumed", f64::from(u8::from(consumed)));
    ctx.result.metric("kills_secs", kills_done.as_secs_f64());
    // The linger: anything a lost ack (or checkpoint) would bring back shows now.
    let linger =
        Duration::from_millis(u64::try_from(plan.pop_invisible_ms).unwrap_or(0)) + LINGER_SLACK;
    if consumed {
        thread::sleep(linger);
    }
    ctx.result.metric("linger_secs", linger.as_secs_f64());
    let outcome = running.finish();
    books(ctx, &sent, &outcome, consume_secs);

    ctx.broker_after_kills(&mut broker);
    Ok(Outcome::Done)
}

/// Keeps the books of a finished consumption against the backlog.
#[allow(clippy::cast_precision_loss, reason = "counts as figures")]
fn books(ctx: &mut Ctx<'_>, sent: &HashMap<u128, Stored>, o: &PopOutcome, took: Duration) {
    let r = &mut ctx.result;
    let (mut lost, mut never_delivered, mut duplicated, mut corrupt) = (0usize, 0usize, 0u64, 0);
    let (mut after_ack, mut acked_back, mut acked) = (0u64, 0usize, 0usize);
    let (mut after_late, mut acked_late) = (0u64, 0usize);
    let (mut unanswered, mut refused) = (0usize, 0usize);
    let (mut lost_at, mut back_at) = (Vec::new(), Vec::new());
    for (id, stored) in sent {
        let d = o.messages.get(id).copied().unwrap_or_default();
        after_late += u64::from(d.after_late_ack);
        if d.acked && !d.acked_in_time {
            acked_late += 1;
        }
        if d.acked {
            acked += 1;
        } else {
            lost += 1;
            lost_at.push((stored.queue_id, stored.offset));
        }
        if !d.acked {
            if d.deliveries == 0 {
                never_delivered += 1;
            } else if d.acks_unanswered > 0 {
                unanswered += 1;
            } else if d.acks_refused > 0 {
                refused += 1;
            }
        }
        duplicated += u64::from(d.deliveries.saturating_sub(1));
        after_ack += u64::from(d.after_ack);
        if d.after_ack > 0 {
            acked_back += 1;
            back_at.push((stored.queue_id, stored.offset));
        }
        if d.body_changed > 0 || d.body.is_some_and(|b| b != stored.body) {
            corrupt += 1;
        }
    }
    let unknown = o.messages.keys().filter(|k| !sent.contains_key(k)).count();
    r.count("acked", acked);
    r.count("lost", lost);
    r.count("never_delivered", never_delivered);
    r.count("lost_ack_unanswered", unanswered);
    r.count("lost_ack_refused", refused);
    r.metric("duplicated", duplicated as f64);
    r.metric(
        "duplicated_pct",
        duplicated as f64 * 100.0 / sent.len().max(1) as f64,
    );
    r.metric("redelivered_after_ack", after_ack as f64);
    r.count("acked_messages_redelivered", acked_back);
    r.count("acked_only_late", acked_late);
    r.metric("redelivered_after_late_ack", after_late as f64);
    r.count("corrupt", corrupt);
    r.count("unknown", unknown);
    r.metric("delivered", o.delivered as f64);
    r.metric("pops", o.pops as f64);
    r.metric("empty_pops", o.empty_pops as f64);
    r.metric("ack_requests", o.ack_requests as f64);
    r.metric("pop_p50_ms", o.pop_ms.0);
    r.metric("pop_p99_ms", o.pop_ms.1);
    r.metric("ack_p50_ms", o.ack_ms.0);
    r.metric("ack_p99_ms", o.ack_ms.1);
    if let Some(secs) = o.consume_secs {
        r.metric("consume_secs", secs);
        r.metric("consumed_per_s", sent.len() as f64 / secs.max(1e-3));
    } else {
        r.metric("consume_secs", took.as_secs_f64());
    }
    r.metric("errors", o.errors.values().sum::<u64>() as f64);
    if !o.errors.is_empty() {
        r.note(
            "errors",
            o.errors
                .iter()
                .map(|(k, n)| format!("{k} × {n}"))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    for (key, mut at) in [("lost_at", lost_at), ("redelivered_after_ack_at", back_at)] {
        if !at.is_empty() {
            at.sort_unstable();
            r.note(key, ranges(&at));
        }
    }
}

/// `queue@first-last` runs of sorted (queue, offset) pairs, the first 20 of them.
fn ranges(at: &[(i32, i64)]) -> String {
    let mut runs: Vec<(i32, i64, i64)> = Vec::new();
    for &(q, o) in at {
        match runs.last_mut() {
            Some((rq, _, last)) if *rq == q && *last + 1 == o => *last = o,
            _ => runs.push((q, o, o)),
        }
    }
    let n = runs.len();
    let mut text: Vec<String> = runs
        .iter()
        .take(20)
        .map(|(q, a, b)| {
            if a == b {
                format!("q{q}@{a}")
            } else {
                format!("q{q}@{a}-{b}")
            }
        })
        .collect();
    if n > 20 {
        text.push(format!("… ({n} runs)"));
    }
    text.join(" ")
}

/// Writes the backlog with `mqbench producer`; its JSON summary.
fn fill(ctx: &Ctx<'_>, namesrv: &str, topic: &str, messages: u64) -> Result<Value, String> {
    let mut cmd = std::process::Command::new(binary("tools", "mqbench"));
    cmd.arg("producer")
        .args(["-n", namesrv, "-t", topic])
        .args(["--size", &BODY_SIZE.to_string()])
        .args(FILLER)
        .args(["--messages", &messages.to_string(), "--duration", "1800s"])
        .arg("--json")
        .env("RUST_LOG", "warn");
    let json = ctx.log_dir.join("fill.json");
    let mut proc = Proc::spawn_split(
        "mqbench-fill",
        cmd,
        &ctx.log_dir.join("fill.log"),
        Some(&json),
    )
    .map_err(|e| e.to_string())?;
    let status = proc.wait_exit(Duration::from_secs(1900));
    let text = std::fs::read_to_string(&json).unwrap_or_default();
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "the fill ({status:?}) printed no summary ({e}): {}",
            truncate(&proc.log_tail(20), 2000)
        )
    })
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(0.0)
}

/// One message of the backlog.
#[derive(Debug, Clone, Copy)]
struct Stored {
    body: u64,
    queue_id: i32,
    offset: i64,
}

/// What the broker holds of the topic, read by pulls from every queue's start.
#[derive(Debug, Default)]
struct Backlog {
    /// Every message by identity: its body's hash and where it is.
    keys: HashMap<u128, Stored>,
    /// Records read.
    records: usize,
    /// Records whose identity was read before.
    repeated: usize,
}

/// Reads every queue of `topic` to its end (pulls of 32, the queues side by side).
///
/// # Errors
/// A pull fails, or a record has no 32-hex-digit `UNIQ_KEY`.
fn read_backlog(addr: &str, topic: &str) -> Result<Backlog, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("read-back runtime: {e}"))?;
    let client = RemotingClient::default();
    let per_queue = runtime.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for queue_id in 0..QUEUES {
            let (client, addr, topic) = (client.clone(), addr.to_owned(), topic.to_owned());
            set.spawn(async move {
                read_queue(&client, &addr, &topic, i32::try_from(queue_id).unwrap_or(0)).await
            });
        }
        let mut all = Vec::new();
        while let Some(joined) = set.join_next().await {
            all.push(joined.map_err(|e| format!("read-back task: {e}"))??);
        }
        Ok::<_, String>(all)
    })?;
    client.close_all();
    let mut backlog = Backlog::default();
    for queue in per_queue {
        for (id, stored) in queue {
            backlog.records += 1;
            if backlog.keys.insert(id, stored).is_some() {
                backlog.repeated += 1;
            }
        }
    }
    Ok(backlog)
}

async fn read_queue(
    client: &RemotingClient,
    addr: &str,
    topic: &str,
    queue_id: i32,
) -> Result<Vec<(u128, Stored)>, String> {
    let mut out = Vec::new();
    let mut offset = 0i64;
    loop {
        let response = client
            .invoke(
                addr,
                crate::client::read_request("rel_pop_kill9_readback", topic, queue_id, offset),
                Duration::from_secs(10),
            )
            .await
            .map_err(|e| format!("read-back pull of queue {queue_id} at {offset}: {e}"))?;
        if response.code() != 0 {
            // PULL_NOT_FOUND / NO_NEW_MSG: the end of the queue.
            return Ok(out);
        }
        let body = response.body.to_bytes();
        let mut at = 0;
        let mut n = 0;
        while at < body.len() {
            let Ok(Some(Record::Message(m))) = record::decode(&body[at..]) else {
                return Err(format!(
                    "read-back of queue {queue_id}: a record at {at} does not decode"
                ));
            };
            at += m.total_size as usize;
            let props = m.properties_str();
            let key = properties::get(&props, properties::keys::UNIQ_KEY).unwrap_or("");
            let id = identity_of_key(key).ok_or_else(|| {
                format!("read-back of queue {queue_id}: a message without a UNIQ_KEY ({key:?})")
            })?;
            out.push((
                id,
                Stored {
                    body: body_hash(m.body),
                    queue_id,
                    offset: i64::try_from(m.queue_offset).unwrap_or(-1),
                },
            ));
            n += 1;
        }
        let next = response
            .ext("nextBeginOffset")
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(offset + n);
        if n == 0 || next <= offset {
            return Ok(out);
        }
        offset = next;
    }
}
