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
//! The POP runs count every delivery by `UNIQ_KEY` and keep popping after the last ack for
//! the invisible time plus some (the linger): a redelivery of an acked message would show.
//! The broker CPU of the linger (the timer delivering the checkpoints and acks to the
//! revive queues, the revive service reading them) is recorded apart (`linger_*`).

use std::time::Duration;

use super::{
    Bench, MIB, Plan, QUEUES, RunResult, Sample, TOPIC, add_errors, create_topics, fill_backlog,
    num, record_producer, strings,
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
        "backlog".to_owned(),
        format!("{} messages of 1 KiB on {QUEUES} queues", plan.pop_messages),
    );
    if stored <= 0.0 {
        return Err("the fill stored no message".to_owned());
    }
    Ok(stored)
}

/// `pull-consume`: the backlog read by pulls of 32.
pub(super) fn pull_consume(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &Plan,
    result: &mut RunResult,
) -> Result<(), String> {
    let stored = backlog(bench, cluster, plan, result)?;
    let sample = Sample::start(cluster);
    let read = bench.run(
        "pull",
        &strings(&[
            "consumer",
            "-t",
            TOPIC,
            "-g",
            "bench_pull",
            "--from",
            "first",
            "--catch-up",
            "--pull-batch",
            &BATCH.to_string(),
            "--duration",
            "1800s",
        ]),
        CONSUME_TIMEOUT + Duration::from_secs(120),
    )?;
    let received = num(&read, &["messages"]);
    sample.finish(cluster, received, "", result);
    add_errors(result, &read);
    let secs = num(&read, &["duration_secs"]).max(1e-3);
    let m = &mut result.metrics;
    m.insert("consume_tps".to_owned(), received / secs);
    m.insert("consume_secs".to_owned(), secs);
    m.insert("delivered".to_owned(), received);
    result.params.insert(
        "load".to_owned(),
        format!("{QUEUES} pull loops (one per queue), maxMsgNums {BATCH}"),
    );
    if received < stored {
        return Err(format!("the pulls got {received} of {stored} messages"));
    }
    Ok(())
}

/// `pop-consume` / `pop-consume-batch-ack`: the backlog popped and acked.
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
    let group = match ack {
        AckMode::Single => "bench_pop",
        AckMode::Batch => "bench_pop_batch",
    };
    let load = PopLoad {
        addr: cluster.master.addr.clone(),
        broker_name: BROKER_NAME.to_owned(),
        topic: TOPIC.to_owned(),
        group: group.to_owned(),
        consumers: CONSUMERS,
        max: BATCH,
        invisible_ms: plan.pop_invisible_ms,
        poll_ms: POLL_MS,
        ack,
        expect,
    };
    let sample = Sample::start(cluster);
    let own = own_cpu_seconds();
    let running = pop_load::start(load)?;
    let consumed = running.wait_consumed(CONSUME_TIMEOUT);
    sample.finish(cluster, stored, "", result);
    let loadgen = own_cpu_seconds() - own;
    let linger = Sample::start(cluster);
    let outcome = running.finish(Duration::from_secs(plan.pop_linger_secs));
    linger.finish(cluster, stored, "linger_", result);
    for (kind, n) in &outcome.errors {
        *result.errors_by_kind.entry(kind.clone()).or_default() += n;
    }
    let m = &mut result.metrics;
    // The driver's own CPU is the POP load generator's (not an `mqbench` child).
    m.insert("cpu_loadgen_s".to_owned(), loadgen);
    m.insert("cpu_loadgen_s_per_m".to_owned(), loadgen / stored * 1e6);
    for key in ["linger_cpu_loadgen_s", "linger_cpu_loadgen_s_per_m"] {
        m.remove(key);
    }
    if let Some(secs) = outcome.consume_secs {
        m.insert("consume_tps".to_owned(), stored / secs.max(1e-3));
        m.insert("consume_secs".to_owned(), secs);
    }
    m.insert("delivered".to_owned(), outcome.delivered as f64);
    m.insert("unique".to_owned(), outcome.unique as f64);
    m.insert(
        "missing".to_owned(),
        (stored - outcome.unique as f64).max(0.0),
    );
    m.insert("redelivered".to_owned(), outcome.redelivered as f64);
    m.insert(
        "redelivered_acked".to_owned(),
        outcome.redelivered_acked as f64,
    );
    m.insert("pops".to_owned(), outcome.pops as f64);
    m.insert("empty_pops".to_owned(), outcome.empty_pops as f64);
    let found = outcome.pops.saturating_sub(outcome.empty_pops).max(1);
    m.insert(
        "per_pop".to_owned(),
        outcome.delivered as f64 / found as f64,
    );
    m.insert("ack_requests".to_owned(), outcome.ack_requests as f64);
    m.insert("pop_p50_ms".to_owned(), outcome.pop_ms.0);
    m.insert("pop_p99_ms".to_owned(), outcome.pop_ms.1);
    m.insert("ack_p50_ms".to_owned(), outcome.ack_ms.0);
    m.insert("ack_p99_ms".to_owned(), outcome.ack_ms.1);
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
    if consumed.is_none() {
        return Err(format!(
            "{} of {expect} messages acked in {CONSUME_TIMEOUT:?}",
            outcome.acked
        ));
    }
    if outcome.unique < expect {
        return Err(format!("{} of {expect} messages delivered", outcome.unique));
    }
    Ok(())
}
