//! The gRPC scenarios of issue 17, both systems in local mode (the proxy inside the broker
//! process: sluice's `mqbroker` with `enableGrpcProxy`, Apache's broker inside its proxy's
//! JVM), so the broker CPU figures carry the proxy's work on both sides.
//!
//! - `grpc-send-1k`: `mqbench grpc-producer`, 1 KiB, 16 tasks × 16 calls in flight over 2
//!   HTTP/2 connections (the remoting `async-1k` load, over gRPC): its broker CPU per message
//!   against `async-1k`'s is what the proxy costs.
//! - `grpc-receive-ack`: a backlog written over remoting, then received (batches of 32) and
//!   acked one AckMessage per message by 8 `mqbench grpc-consumer` tasks, as the SDKs' simple
//!   and push consumers do, until every message is acked.

use std::time::Duration;

use super::{
    Bench, Plan, QUEUES, RunResult, Sample, TOPIC, add_errors, create_topics, fill_backlog, num,
    record_producer, secs, strings,
};
use crate::bench::cluster::Cluster;

/// The load of `grpc-send-1k` (the remoting [`super::MAX_RATE`]).
const SEND_LOAD: &[&str] = &["--threads", "16", "--inflight", "16", "--connections", "2"];
/// Receiving tasks and batch of `grpc-receive-ack`.
const CONSUMERS: &str = "8";
const BATCH: &str = "32";

fn endpoint(cluster: &Cluster) -> Result<String, String> {
    cluster
        .master
        .grpc
        .clone()
        .ok_or_else(|| "the master serves no gRPC endpoint".to_owned())
}

/// Warm-up, then the measured gRPC send run with CPU and memory sampled.
pub(super) fn send(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &Plan,
    size: usize,
    result: &mut RunResult,
) -> Result<(), String> {
    create_topics(bench, cluster, TOPIC, 1, QUEUES)?;
    let endpoint = endpoint(cluster)?;
    let mut args = strings(&[
        "grpc-producer",
        "--endpoint",
        &endpoint,
        "-t",
        TOPIC,
        "--size",
        &size.to_string(),
    ]);
    args.extend(strings(SEND_LOAD));
    let timeout = |s: u64| Duration::from_secs(s + 120);
    let mut warm = args.clone();
    warm.extend(["--duration".to_owned(), secs(plan.warmup_secs)]);
    let _ = bench.run("warmup", &warm, timeout(plan.warmup_secs))?;
    let mut measured = args;
    measured.extend(["--duration".to_owned(), secs(plan.measure_secs)]);
    let sample = Sample::start(cluster);
    let summary = bench.run("grpc-producer", &measured, timeout(plan.measure_secs))?;
    sample.finish(cluster, num(&summary, &["messages"]), "", result);
    record_producer(result, "", &summary);
    add_errors(result, &summary);
    result.params.insert("size".to_owned(), size.to_string());
    result.params.insert("load".to_owned(), SEND_LOAD.join(" "));
    if num(&summary, &["messages"]) <= 0.0 {
        return Err("the gRPC producer stored no message".to_owned());
    }
    Ok(())
}

/// A backlog written over remoting, then received and acked over gRPC to its end.
pub(super) fn receive_ack(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &Plan,
    result: &mut RunResult,
) -> Result<(), String> {
    create_topics(bench, cluster, TOPIC, 1, QUEUES)?;
    let endpoint = endpoint(cluster)?;
    let fill = fill_backlog(bench, cluster, plan.pop_messages, 1024, 16, &[], result)?;
    record_producer(result, "fill_", &fill);
    add_errors(result, &fill);
    let stored = num(&fill, &["messages"]);
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a message count"
    )]
    let stored_count = stored as u64;
    let consumer = |group: &str, messages: u64, duration: u64| {
        strings(&[
            "grpc-consumer",
            "--endpoint",
            &endpoint,
            "-t",
            TOPIC,
            "-g",
            group,
            "--consumers",
            CONSUMERS,
            "--batch",
            BATCH,
            "--ack",
            "each",
            "--messages",
            &messages.to_string(),
            "--duration",
            &secs(duration),
        ])
    };
    // Warm-up: a group of its own, a share of the backlog.
    let warm = (stored_count / 10).max(1);
    let _ = bench.run(
        "warmup",
        &consumer("bench_grpc_warmup", warm, plan.warmup_secs.max(5) * 4),
        Duration::from_secs(plan.warmup_secs * 4 + 180),
    )?;
    let sample = Sample::start(cluster);
    let read = bench.run(
        "grpc-consumer",
        &consumer("bench_grpc", stored_count, 1800),
        Duration::from_secs(2000),
    )?;
    let received = num(&read, &["messages"]);
    sample.finish(cluster, received, "", result);
    let m = &mut result.metrics;
    m.insert("backlog_messages".to_owned(), stored);
    m.insert("consume_tps".to_owned(), num(&read, &["tps"]));
    m.insert("consume_secs".to_owned(), num(&read, &["duration_secs"]));
    m.insert("consumed".to_owned(), received);
    m.insert("errors".to_owned(), num(&read, &["errors"]));
    add_errors(result, &read);
    result.params.insert(
        "load".to_owned(),
        format!("{CONSUMERS} consumers, batches of {BATCH}, one AckMessage per message"),
    );
    if received < stored {
        return Err(format!(
            "the gRPC consumers acked {received} of {stored} messages"
        ));
    }
    Ok(())
}
