//! The consumption scenarios of issue 16, both systems alike (`timerWheelEnable=true`: POP
//! needs the timer on both): a backlog of 1 KiB messages on a topic of [`QUEUES`] queues,
//! written first, then consumed to its end, timed.
//!
//! - `pull-consume`: `mqbench consumer --catch-up`, one long-polling pull loop per queue
//!   (8 in flight), `maxMsgNums` 32: the baseline.
//! - `pop-consume`: [`CONSUMERS`] consumers pop (queue −1, `maxMsgNums` 32) and ack every
//!   message, one ACK_MESSAGE each, as the Java push consumer and the proxy do
//!   ([`crate::bench::pop_load`]).
//! - `pop-consume-batch-ack`: the same with one BATCH_ACK_MESSAGE per pop.
//!
//! Each starts with a warm-up (the same load for the plan's warm-up time, by a group of its
//! own: the JVM's JIT, page faults), then consumes the whole backlog with a fresh group, and
//! again with another while the consumption so far took less than the plan's measured time
//! (sluice pulls 1M messages in about a second): the figures are over all these passes.
//!
//! The POP runs count every delivery by `UNIQ_KEY` and keep popping after the last ack for
//! the invisible time plus some (the linger): a redelivery of an acked message would show.
//! The broker CPU of the linger (the timer delivering the checkpoints and acks to the
//! revive queues, the revive service reading them) is recorded apart (`linger_*`).

use std::time::Duration;

use super::{
    Bench, MIB, Plan, QUEUES, RunResult, Sample, TOPIC, add_errors, create_topics, fill_backlog,
    num, record_producer, secs, strings,
};
use crate::bench::cluster::{BROKER_NAME, Cluster};
use crate::bench::pop_load::{self, AckMode, PopLoad};
use crate::procs::own_cpu_seconds;

/// Concurrent POP consumers (the pull baseline has one loop per queue: 8).
pub const CONSUMERS: usize = 8;
/// `maxMsgNums` of a pop and of a pull.
pub const BATCH: i32 = 32;
/// Messages per send request of the fill.
const FILL_BATCH: u64 = 16;
/// Poll time of a pop that finds nothing (the end of the backlog, the linger), ms.
const POLL_MS: i64 = 1000;
/// The longest a consumption may take.
const CONSUME_TIMEOUT: Duration = Duration::from_secs(1800);
/// A POP consumption that acks nothing for this long has failed.
const STALL: Duration = Duration::from_secs(60);

/// Fills the backlog of the plan's size; returns the messages stored.
fn backlog(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &Plan,
    result: &mut RunResult,
) -> Result<f64, String> {
    create_topics(bench, cluster, TOPIC, 1, QUEUES)?;
    let fill = fill_backlog(
        bench,
        cluster,
        plan.pop_messages,
        1024,
        FILL_BATCH,
        &[],
        result,
    )?;
    record_producer(result, "fill_", &fill);
    add_errors(result, &fill);
    let stored = num(&fill, &["messages"]);
    let m = &mut result.metrics;
    m.insert("backlog_messages".to_owned(), stored);
    m.insert("backlog_mib".to_owned(), stored * 1024.0 / MIB);
    result.params.insert(
        "passes".to_owned(),
        format!(
            "after a {} s warm-up, until ≥ {} s of consumption",
            plan.warmup_secs, plan.measure_secs
        ),
    );
    result.params.insert(
        "backlog".to_owned(),
        format!("{} messages of 1 KiB on {QUEUES} queues", plan.pop_messages),
    );
    if let Some(root) = cluster.store_dir().and_then(std::path::Path::parent) {
        result
            .params
            .insert("store under".to_owned(), root.display().to_string());
    }
    if stored <= 0.0 {
        return Err("the fill stored no message".to_owned());
    }
    Ok(stored)
}

/// The most passes over the backlog a run makes.
const MAX_PASSES: usize = 20;

/// Whether another pass over the backlog is due: consumption so far is shorter than the
/// plan's measured time (a backlog consumed fast is read again, by a fresh group).
fn another_pass(plan: &Plan, passes: usize, secs: f64) -> bool {
    #[allow(clippy::cast_precision_loss, reason = "seconds")]
    let measure = plan.measure_secs as f64;
    passes < MAX_PASSES && secs < measure
}

/// `pull-consume`: the backlog read by pulls of 32, after a warm-up read by another group.
pub(super) fn pull_consume(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &Plan,
    result: &mut RunResult,
) -> Result<(), String> {
    let stored = backlog(bench, cluster, plan, result)?;
    let read = |group: &str, catch_up: bool, duration: u64| {
        let mut args = strings(&[
            "consumer",
            "-t",
            TOPIC,
            "-g",
            group,
            "--from",
            "first",
            "--pull-batch",
            &BATCH.to_string(),
            "--duration",
            &secs(duration),
        ]);
        if catch_up {
            args.push("--catch-up".to_owned());
        }
        args
    };
    let _ = bench.run(
        "pull-warmup",
        &read("bench_pull_warmup", false, plan.warmup_secs),
        Duration::from_secs(plan.warmup_secs + 120),
    )?;
    let sample = Sample::start(cluster);
    let (mut received, mut took, mut passes) = (0.0, 0.0, 0);
    while passes == 0 || another_pass(plan, passes, took) {
        let summary = bench.run(
            &format!("pull-{passes}"),
            &read(&format!("bench_pull_{passes}"), true, 1800),
            CONSUME_TIMEOUT + Duration::from_secs(120),
        )?;
        add_errors(result, &summary);
        let got = num(&summary, &["messages"]);
        if got < stored {
            return Err(format!(
                "pass {passes}: the pulls got {got} of {stored} messages"
            ));
        }
        received += got;
        took += num(&summary, &["duration_secs"]).max(1e-3);
        passes += 1;
    }
    sample.finish(cluster, received, "", result);
    let m = &mut result.metrics;
    m.insert("consume_tps".to_owned(), received / took);
    m.insert("consume_secs".to_owned(), took);
    m.insert("delivered".to_owned(), received);
    #[allow(clippy::cast_precision_loss, reason = "a small count")]
    m.insert("passes".to_owned(), passes as f64);
    result.params.insert(
        "load".to_owned(),
        format!("{QUEUES} pull loops (one per queue), maxMsgNums {BATCH}"),
    );
    Ok(())
}

/// `pop-consume` / `pop-consume-batch-ack`: the backlog popped and acked, after a warm-up
/// by another group; each pass's consumers keep popping until the linger ends.
#[allow(clippy::cast_precision_loss, reason = "counts as figures")]
pub(super) fn pop_consume(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &Plan,
    ack: AckMode,
    result: &mut RunResult,
) -> Result<(), String> {
    let stored = backlog(bench, cluster, plan, result)?;
    let expect = stored as u64;
    let prefix = match ack {
        AckMode::Single => "bench_pop",
        AckMode::Batch => "bench_pop_batch",
    };
    let load = |group: String, expect: u64| PopLoad {
        addr: cluster.master.addr.clone(),
        broker_name: BROKER_NAME.to_owned(),
        topic: TOPIC.to_owned(),
        progress: Some(bench.log_dir.join(format!("pop-{group}.log"))),
        group,
        consumers: CONSUMERS,
        max: BATCH,
        invisible_ms: plan.pop_invisible_ms,
        poll_ms: POLL_MS,
        ack,
        expect,
        rate: None,
        retry_acks: false,
        check_bodies: false,
    };
    let warmup = pop_load::start(load(format!("{prefix}_warmup"), u64::MAX))?;
    let _ = warmup.wait_consumed(Duration::from_secs(plan.warmup_secs), STALL);
    let warmed = warmup.finish();
    for (kind, n) in &warmed.errors {
        *result
            .errors_by_kind
            .entry(format!("warm-up {kind}"))
            .or_default() += n;
    }
    let sample = Sample::start(cluster);
    let own = own_cpu_seconds();
    let mut passes = Vec::new();
    let mut took = 0.0;
    let mut unfinished = None;
    while passes.is_empty() || another_pass(plan, passes.len(), took) {
        let running = pop_load::start(load(format!("{prefix}_{}", passes.len()), expect))?;
        let consumed = running.wait_consumed(CONSUME_TIMEOUT, STALL);
        passes.push(running);
        match consumed {
            Some(d) => took += d.as_secs_f64(),
            None => {
                unfinished = Some(passes.len() - 1);
                break;
            }
        }
    }
    let consumed_messages = stored * passes.len() as f64;
    sample.finish(cluster, consumed_messages, "", result);
    let loadgen = own_cpu_seconds() - own;
    let linger = Sample::start(cluster);
    std::thread::sleep(Duration::from_secs(plan.pop_linger_secs));
    for p in &passes {
        p.stop();
    }
    let outcomes: Vec<_> = passes.into_iter().map(pop_load::Running::finish).collect();
    linger.finish(cluster, consumed_messages, "linger_", result);
    let total = |f: &dyn Fn(&pop_load::PopOutcome) -> u64| outcomes.iter().map(f).sum::<u64>();
    for o in &outcomes {
        for (kind, n) in &o.errors {
            *result.errors_by_kind.entry(kind.clone()).or_default() += n;
        }
    }
    let m = &mut result.metrics;
    // The driver's own CPU is the POP load generator's (not an `mqbench` child's).
    m.insert("cpu_loadgen_s".to_owned(), loadgen);
    m.insert(
        "cpu_loadgen_s_per_m".to_owned(),
        loadgen / consumed_messages * 1e6,
    );
    for key in ["linger_cpu_loadgen_s", "linger_cpu_loadgen_s_per_m"] {
        m.remove(key);
    }
    m.insert("consume_tps".to_owned(), consumed_messages / took.max(1e-3));
    m.insert("consume_secs".to_owned(), took);
    m.insert("passes".to_owned(), outcomes.len() as f64);
    let delivered = total(&|o| o.delivered);
    m.insert("delivered".to_owned(), delivered as f64);
    let unique = total(&|o| o.unique);
    m.insert(
        "missing".to_owned(),
        (consumed_messages - unique as f64).max(0.0),
    );
    m.insert("redelivered".to_owned(), total(&|o| o.redelivered) as f64);
    m.insert(
        "redelivered_acked".to_owned(),
        total(&|o| o.redelivered_acked) as f64,
    );
    let pops = total(&|o| o.pops);
    let empty = total(&|o| o.empty_pops);
    m.insert("pops".to_owned(), pops as f64);
    m.insert("empty_pops".to_owned(), empty as f64);
    m.insert(
        "per_pop".to_owned(),
        delivered as f64 / pops.saturating_sub(empty).max(1) as f64,
    );
    m.insert("ack_requests".to_owned(), total(&|o| o.ack_requests) as f64);
    // Round trips of the first pass (the others' alike).
    if let Some(first) = outcomes.first() {
        m.insert("pop_p50_ms".to_owned(), first.pop_ms.0);
        m.insert("pop_p99_ms".to_owned(), first.pop_ms.1);
        m.insert("ack_p50_ms".to_owned(), first.ack_ms.0);
        m.insert("ack_p99_ms".to_owned(), first.ack_ms.1);
    }
    let p = &mut result.params;
    p.insert(
        "load".to_owned(),
        format!(
            "{CONSUMERS} consumers, maxMsgNums {BATCH}, invisible {} s, {}",
            plan.pop_invisible_ms / 1000,
            match ack {
                AckMode::Single => "one ACK_MESSAGE per message",
                AckMode::Batch => "one BATCH_ACK_MESSAGE per pop",
            }
        ),
    );
    p.insert(
        "linger".to_owned(),
        format!("{} s after the last ack", plan.pop_linger_secs),
    );
    if let Some(pass) = unfinished {
        return Err(format!(
            "pass {pass}: {} of {expect} messages acked (nothing acked for {STALL:?}, or {CONSUME_TIMEOUT:?} passed)",
            outcomes[pass].acked
        ));
    }
    if unique < expect * outcomes.len() as u64 {
        return Err(format!(
            "{unique} of {consumed_messages} messages delivered"
        ));
    }
    Ok(())
}
