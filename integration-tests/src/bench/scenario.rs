//! The scenarios and how one run of one goes: fresh cluster, idle memory, topics, warm-up,
//! the measured load with the broker's CPU and memory sampled from `/proc`, stop.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::cluster::{CLUSTER, Cluster, Programs, System, Topology};
use super::pop_load::AckMode;

mod grpc;
mod pop;
mod sql;
mod timer;
use crate::procs::{Proc, RssSampler, children_cpu_seconds};
pub use pop::{BATCH as POP_BATCH, CONSUMERS as POP_CONSUMERS};

/// Durations and sizes of a whole run (`--quick` or full).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Whether this is the short mode.
    pub quick: bool,
    /// Repeats of each (scenario, system).
    pub repeat: u32,
    /// Load before the measurement (JIT warm-up, page faults, route caches).
    pub warmup_secs: u64,
    /// The measured load.
    pub measure_secs: u64,
    /// Pause after start before idle memory is read.
    pub settle_secs: u64,
    /// Backlog written before the catch-up read.
    pub backlog_bytes: u64,
    /// Topic counts of the two many-topics scenarios.
    pub topics_few: usize,
    /// See `topics_few`.
    pub topics_many: usize,
    /// Timer messages of the lateness scenario (issue 14: 100 000 over 60 s).
    #[serde(default)]
    pub timer_messages: u64,
    /// Their due times are spread over this many seconds ...
    #[serde(default)]
    pub timer_window_secs: u64,
    /// ... the first this long after the sending starts.
    #[serde(default)]
    pub timer_lead_secs: u64,
    /// Timers pending at once in the enqueue / memory / recovery scenario (1 000 000).
    #[serde(default)]
    pub pending_timers: u64,
    /// They fall due this long after the sending starts (after the restarts) ...
    #[serde(default)]
    pub pending_lead_secs: u64,
    /// ... spread over this many seconds.
    #[serde(default)]
    pub pending_window_secs: u64,
    /// Backlog of the consumption scenarios (issue 16: 1 000 000 messages of 1 KiB).
    #[serde(default)]
    pub pop_messages: u64,
    /// Invisible time of their pops, ms.
    #[serde(default)]
    pub pop_invisible_ms: i64,
    /// How long the POP consumers keep popping after the last ack (longer than the
    /// invisible time plus a revive), s.
    #[serde(default)]
    pub pop_linger_secs: u64,
}

impl Plan {
    /// The full run (by hand).
    #[must_use]
    pub fn full(repeat: u32) -> Self {
        Plan {
            quick: false,
            repeat,
            warmup_secs: 10,
            measure_secs: 15,
            settle_secs: 3,
            // Several GiB, still well inside the page cache of the dev VM (23 GiB): the
            // catch-up read measures the brokers' read path, not the disk.
            backlog_bytes: 4 << 30,
            topics_few: 1_000,
            topics_many: 10_000,
            timer_messages: 100_000,
            timer_window_secs: 60,
            timer_lead_secs: 15,
            pending_timers: 1_000_000,
            // Apache sends 1M timers at ~12k/s and restarts twice: all within 6 min.
            pending_lead_secs: 360,
            pending_window_secs: 120,
            pop_messages: 1_000_000,
            pop_invisible_ms: 20_000,
            pop_linger_secs: 35,
        }
    }

    /// `--quick`: every scenario, a few seconds each, small backlog and topic counts.
    #[must_use]
    pub fn quick(repeat: u32) -> Self {
        Plan {
            quick: true,
            repeat,
            warmup_secs: 1,
            measure_secs: 3,
            settle_secs: 1,
            backlog_bytes: 32 << 20,
            topics_few: 20,
            topics_many: 100,
            timer_messages: 10_000,
            timer_window_secs: 10,
            timer_lead_secs: 5,
            pending_timers: 50_000,
            // sluice sends 50k timers and restarts twice in a few seconds.
            pending_lead_secs: 30,
            pending_window_secs: 10,
            pop_messages: 20_000,
            pop_invisible_ms: 5_000,
            // The invisible time, sluice's revive (~1 s) and a margin.
            pop_linger_secs: 8,
        }
    }
}

/// What the load is.
#[derive(Debug, Clone)]
pub enum Workload {
    /// `mqbench producer` with these arguments at max rate (plus `--size`).
    Produce {
        /// Body size.
        size: usize,
        /// Producer arguments.
        args: &'static [&'static str],
    },
    /// Write `Plan::backlog_bytes`, then read it all with `consumer --catch-up`.
    Backlog,
    /// Consumer long-polling while a producer sends at `rate` msg/s.
    EndToEnd {
        /// Messages per second.
        rate: u64,
    },
    /// Create this many topics (1 queue each), then produce over all of them.
    Topics {
        /// Whether it is the bigger count of the plan.
        many: bool,
    },
    /// Timer messages due over a window; lateness at a long-polling consumer.
    TimerLateness,
    /// Many pending timers: enqueue rate, memory, recovery after kill -9, then delivery.
    TimerPending,
    /// A backlog read unfiltered, then through SQL92 filters selecting 1% and 50%;
    /// `registered`: the filters registered by heartbeat before the backlog is written.
    SqlFilter {
        /// Filters registered first (push consumers) rather than carried by the pulls.
        registered: bool,
    },
    /// A backlog read to its end by pulls of 32 (the baseline of the POP scenarios).
    PullConsume,
    /// A backlog popped (32 at a time) and acked to its end.
    PopConsume {
        /// One ACK_MESSAGE per message, or one BATCH_ACK_MESSAGE per pop.
        ack: AckMode,
    },
    /// gRPC SendMessage at max rate, through the broker's own gRPC endpoint (local mode).
    GrpcSend {
        /// Body size.
        size: usize,
    },
    /// A backlog received and acked over gRPC (local mode) to its end.
    GrpcConsume,
}

/// One scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Key (`async-1k`), for `--scenario` and the results.
    pub name: &'static str,
    /// Heading in BENCHMARKS.md.
    pub title: &'static str,
    /// Cluster layout and store settings.
    pub role: &'static str,
    /// `ASYNC_FLUSH` / `SYNC_FLUSH`.
    pub flush: &'static str,
    /// With a slave.
    pub slave: bool,
    /// The load.
    pub workload: Workload,
    /// Fewer repeats than the plan's in a full run (the slow 10 000-topic creation).
    pub max_repeat: Option<u32>,
}

/// The max-rate load of the throughput scenarios: 16 sender tasks over 2 connections,
/// 16 requests in flight each (256 in flight in all).
pub const MAX_RATE: &[&str] = &[
    "--mode",
    "async",
    "--threads",
    "16",
    "--inflight",
    "16",
    "--connections",
    "2",
];

/// 64 producers, each waiting for its send before the next (group commit is what lets them
/// share one fsync).
pub const SYNC_64: &[&str] = &["--mode", "sync", "--threads", "64", "--connections", "4"];

/// Queues of the single-topic scenarios' topic.
pub const QUEUES: usize = 8;
/// Consume-queue file size in the many-topics scenarios (6 000 units; RocketMQ's default
/// 300 000 would reserve 5.7 MB per queue: 57 GB for 10 000 topics).
pub const TOPICS_CQ_FILE_SIZE: u64 = 120_000;

/// Every scenario, in report order.
#[must_use]
pub fn all() -> Vec<Scenario> {
    let s = |name, title, role, flush, slave, workload| Scenario {
        name,
        title,
        role,
        flush,
        slave,
        workload,
        max_repeat: None,
    };
    vec![
        s(
            "async-1k",
            "1 KiB, async flush, max rate",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::Produce {
                size: 1024,
                args: MAX_RATE,
            },
        ),
        s(
            "sync-flush-1k",
            "1 KiB, sync flush (group commit), 64 sync producers",
            "ASYNC_MASTER",
            "SYNC_FLUSH",
            false,
            Workload::Produce {
                size: 1024,
                args: SYNC_64,
            },
        ),
        s(
            "ha-async-master",
            "ASYNC_MASTER + slave, 1 KiB, max rate",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            true,
            Workload::Produce {
                size: 1024,
                args: MAX_RATE,
            },
        ),
        s(
            "ha-sync-master",
            "SYNC_MASTER + slave, 1 KiB, max rate",
            "SYNC_MASTER",
            "ASYNC_FLUSH",
            true,
            Workload::Produce {
                size: 1024,
                args: MAX_RATE,
            },
        ),
        s(
            "backlog-read",
            "Backlog catch-up read (1 KiB messages)",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::Backlog,
        ),
        s(
            "e2e-latency",
            "Long-poll end-to-end latency at 10k msg/s",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::EndToEnd { rate: 10_000 },
        ),
        s(
            "size-128",
            "128 B, async flush, max rate",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::Produce {
                size: 128,
                args: MAX_RATE,
            },
        ),
        s(
            "size-4k",
            "4 KiB, async flush, max rate",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::Produce {
                size: 4096,
                args: MAX_RATE,
            },
        ),
        s(
            "topics-1k",
            "Many topics (fewer): create, then 1 KiB max rate over all",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::Topics { many: false },
        ),
        Scenario {
            max_repeat: Some(1),
            ..s(
                "topics-10k",
                "Many topics (more): create, then 1 KiB max rate over all",
                "ASYNC_MASTER",
                "ASYNC_FLUSH",
                false,
                Workload::Topics { many: true },
            )
        },
        s(
            "timer-lateness",
            "Timer messages: lateness of 100k timers due over 60 s",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::TimerLateness,
        ),
        s(
            "sql-filter",
            "SQL92 filters: backlog read unfiltered, at 1% and at 50% selectivity",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::SqlFilter { registered: false },
        ),
        s(
            "sql-filter-registered",
            "SQL92 filters registered by heartbeat (sluice's match index, Apache's bloom filter)",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::SqlFilter { registered: true },
        ),
        s(
            "pull-consume",
            "Backlog consumed by PULL (32 a pull), the baseline of the POP scenarios",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::PullConsume,
        ),
        s(
            "pop-consume",
            "Backlog consumed by POP (32 a pop), one ACK_MESSAGE per message",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::PopConsume {
                ack: AckMode::Single,
            },
        ),
        s(
            "pop-consume-batch-ack",
            "Backlog consumed by POP (32 a pop), one BATCH_ACK_MESSAGE per pop",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::PopConsume {
                ack: AckMode::Batch,
            },
        ),
        s(
            "grpc-send-1k",
            "gRPC SendMessage, 1 KiB, max rate (the proxy in the broker: local mode)",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::GrpcSend { size: 1024 },
        ),
        s(
            "grpc-receive-ack",
            "gRPC ReceiveMessage (32) + AckMessage per message, a backlog to its end (local mode)",
            "ASYNC_MASTER",
            "ASYNC_FLUSH",
            false,
            Workload::GrpcConsume,
        ),
        Scenario {
            // A long run (the timers fall due minutes later), so once.
            max_repeat: Some(1),
            ..s(
                "timer-1m",
                "Timer messages: 1M pending (enqueue, memory, kill -9 recovery, delivery)",
                "ASYNC_MASTER",
                "ASYNC_FLUSH",
                false,
                Workload::TimerPending,
            )
        },
    ]
}

/// The result of one run of one scenario on one system.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// Scenario key.
    pub scenario: String,
    /// `sluice` / `rocketmq`.
    pub system: String,
    /// 1-based repeat.
    pub repeat: u32,
    /// Whether it ran to the end.
    pub ok: bool,
    /// Why not.
    pub error: Option<String>,
    /// Named figures (see [`super::report`] for their meaning).
    pub metrics: BTreeMap<String, f64>,
    /// Failed requests by kind, all mqbench phases of the measurement together.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Parameters worth showing (topic count, backlog size, ...).
    pub params: BTreeMap<String, String>,
    /// Wall time of the whole run, start to stop.
    pub wall_secs: f64,
    /// When and with which build it ran (`<UTC start of the driver run>, <build>`), so a
    /// report merging runs of several driver runs can say where each came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<String>,
}

/// Runs one scenario once on one system; never panics on a failed run (the result says why).
#[must_use]
pub fn run(
    scenario: &Scenario,
    system: System,
    repeat: u32,
    plan: &Plan,
    programs: &Programs,
    out: &Path,
    store_root: &Path,
) -> RunResult {
    let started = Instant::now();
    let mut result = RunResult {
        scenario: scenario.name.to_owned(),
        system: system.key().to_owned(),
        repeat,
        ok: false,
        error: None,
        metrics: BTreeMap::new(),
        errors_by_kind: BTreeMap::new(),
        params: BTreeMap::new(),
        wall_secs: 0.0,
        measured: None,
    };
    let log_dir = out
        .join("logs")
        .join(format!("{}-{}-{repeat}", scenario.name, system.key()));
    let outcome = run_inner(
        scenario,
        system,
        plan,
        programs,
        &log_dir,
        store_root,
        &mut result,
    );
    if let Err(e) = outcome {
        result.error = Some(e);
    } else {
        result.ok = true;
    }
    result.wall_secs = started.elapsed().as_secs_f64();
    result
}

fn topology(scenario: &Scenario) -> Topology {
    let mut extra = vec![("defaultTopicQueueNums".to_owned(), QUEUES.to_string())];
    if matches!(
        scenario.workload,
        Workload::TimerLateness
            | Workload::TimerPending
            | Workload::PullConsume
            | Workload::PopConsume { .. }
            | Workload::GrpcConsume
    ) {
        // Apache's default too; said so both ways (POP needs it; the pull baseline alike).
        extra.push(("timerWheelEnable".to_owned(), "true".to_owned()));
    }
    if matches!(scenario.workload, Workload::TimerPending) {
        // Parked only, until the restart that times the enqueue (see `super::timer`).
        extra.push(("timerStopEnqueue".to_owned(), "true".to_owned()));
    }
    if let Workload::SqlFilter { registered } = scenario.workload {
        // Off by default in both.
        extra.push(("enablePropertyFilter".to_owned(), "true".to_owned()));
        if registered {
            // Apache's bloom filter (sluice accepts the keys and uses its match index).
            extra.push(("enableCalcFilterBitMap".to_owned(), "true".to_owned()));
            extra.push(("enableConsumeQueueExt".to_owned(), "true".to_owned()));
        }
    }
    if matches!(scenario.workload, Workload::Topics { .. }) {
        extra.push((
            "mappedFileSizeConsumeQueue".to_owned(),
            TOPICS_CQ_FILE_SIZE.to_string(),
        ));
    }
    Topology {
        role: scenario.role,
        flush: scenario.flush,
        slave: scenario.slave,
        extra,
        grpc: matches!(
            scenario.workload,
            Workload::GrpcSend { .. } | Workload::GrpcConsume
        ),
    }
}

pub(super) const MIB: f64 = 1024.0 * 1024.0;
/// Topic of the single-topic scenarios.
pub(super) const TOPIC: &str = "BenchTopic";

#[allow(clippy::cast_precision_loss, reason = "byte counts to MiB")]
pub(super) fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB
}

fn run_inner(
    scenario: &Scenario,
    system: System,
    plan: &Plan,
    programs: &Programs,
    log_dir: &Path,
    store_root: &Path,
    result: &mut RunResult,
) -> Result<(), String> {
    // Other work on the machine (the load average over the last minute, before this run's
    // cluster starts): the noise each figure was taken in.
    if let Some(load) = fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok())
    {
        result.metrics.insert("loadavg_1m".to_owned(), load);
    }
    let at = Instant::now();
    let mut cluster = Cluster::start(system, programs, &topology(scenario), log_dir, store_root)?;
    result
        .metrics
        .insert("start_secs".to_owned(), at.elapsed().as_secs_f64());
    thread::sleep(Duration::from_secs(plan.settle_secs));
    let labels = ["namesrv", "master", "slave"];
    for (label, rss) in labels.iter().zip(cluster.rss()) {
        result
            .metrics
            .insert(format!("rss_idle_{label}_mib"), mib(rss));
    }
    for (label, rss) in labels.iter().zip(cluster.vm_rss()) {
        result
            .metrics
            .insert(format!("vmrss_idle_{label}_mib"), mib(rss));
    }
    let bench = Bench {
        programs,
        namesrv: cluster.namesrv.addr.clone(),
        log_dir: log_dir.to_owned(),
    };
    let outcome = match &scenario.workload {
        Workload::Produce { size, args } => {
            produce(&bench, &mut cluster, plan, *size, args, result)
        }
        Workload::Backlog => backlog(&bench, &mut cluster, plan, result),
        Workload::EndToEnd { rate } => end_to_end(&bench, &mut cluster, plan, *rate, result),
        Workload::Topics { many } => topics(&bench, &mut cluster, plan, *many, result),
        Workload::TimerLateness => timer::lateness(&bench, &mut cluster, plan, result),
        Workload::TimerPending => timer::pending(&bench, &mut cluster, plan, result),
        Workload::SqlFilter { registered } => {
            sql::filtered_reads(&bench, &mut cluster, plan, *registered, result)
        }
        Workload::PullConsume => pop::pull_consume(&bench, &mut cluster, plan, result),
        Workload::PopConsume { ack } => pop::pop_consume(&bench, &mut cluster, plan, *ack, result),
        Workload::GrpcSend { size } => grpc::send(&bench, &mut cluster, plan, *size, result),
        Workload::GrpcConsume => grpc::receive_ack(&bench, &mut cluster, plan, result),
    };
    if outcome.is_ok() && !cluster.all_running() {
        return Err(format!(
            "a process of the cluster died during the run\n{}",
            cluster.log_tails()
        ));
    }
    if outcome.is_err() {
        // Keep the logs' ends in the error: the logs themselves stay in the out dir.
        return outcome.map_err(|e| format!("{e}\n{}", cluster.log_tails()));
    }
    let at = Instant::now();
    cluster.stop();
    result
        .metrics
        .insert("stop_secs".to_owned(), at.elapsed().as_secs_f64());
    Ok(())
}

/// Running `mqbench` against one cluster.
pub(super) struct Bench<'a> {
    programs: &'a Programs,
    namesrv: String,
    pub(super) log_dir: PathBuf,
}

impl Bench<'_> {
    /// `mqbench ARGS --json`, with `-n NAMESRV` unless it is a gRPC run (those take the
    /// endpoint instead).
    fn command(&self, args: &[String]) -> Command {
        let mut cmd = Command::new(self.programs.bin_dir.join("mqbench"));
        cmd.args(args);
        if !args.first().is_some_and(|a| a.starts_with("grpc-")) {
            cmd.arg("-n").arg(&self.namesrv);
        }
        cmd.arg("--json").env("RUST_LOG", "warn");
        cmd
    }

    /// Starts `mqbench ARGS -n NS --json` in the background; `label` names its files.
    pub(super) fn spawn(&self, label: &str, args: &[String]) -> Result<(Proc, PathBuf), String> {
        let json = self.log_dir.join(format!("mqbench-{label}.json"));
        let proc = Proc::spawn_split(
            &format!("mqbench-{label}"),
            self.command(args),
            &self.log_dir.join(format!("mqbench-{label}.log")),
            Some(&json),
        )
        .map_err(|e| e.to_string())?;
        Ok((proc, json))
    }

    /// Waits for a background mqbench and reads its summary.
    pub(super) fn finish(mut proc: Proc, json: &Path, timeout: Duration) -> Result<Value, String> {
        let status = proc.wait_exit(timeout);
        let text = fs::read_to_string(json).unwrap_or_default();
        let summary: Value = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{} ({status:?}) printed no summary ({e})\n{}",
                proc.name,
                proc.log_tail(30)
            )
        })?;
        Ok(summary)
    }

    /// Runs mqbench to the end and returns its summary.
    pub(super) fn run(
        &self,
        label: &str,
        args: &[String],
        timeout: Duration,
    ) -> Result<Value, String> {
        let (proc, json) = self.spawn(label, args)?;
        Self::finish(proc, &json, timeout)
    }
}

pub(super) fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

pub(super) fn num(v: &Value, path: &[&str]) -> f64 {
    let mut at = v;
    for key in path {
        at = &at[*key];
    }
    at.as_f64().unwrap_or(0.0)
}

/// Adds mqbench's errors by kind to the result's.
pub(super) fn add_errors(result: &mut RunResult, summary: &Value) {
    if let Some(map) = summary["errors_by_kind"].as_object() {
        for (k, v) in map {
            *result.errors_by_kind.entry(k.clone()).or_default() += v.as_u64().unwrap_or(0);
        }
    }
}

/// Records the producer's figures under `prefix` (`""` or `fill_`).
pub(super) fn record_producer(result: &mut RunResult, prefix: &str, s: &Value) {
    let m = &mut result.metrics;
    m.insert(format!("{prefix}tps"), num(s, &["tps"]));
    m.insert(format!("{prefix}mb_s"), num(s, &["mb_per_sec"]));
    m.insert(format!("{prefix}p50_ms"), num(s, &["latency", "p50_ms"]));
    m.insert(format!("{prefix}p99_ms"), num(s, &["latency", "p99_ms"]));
    m.insert(format!("{prefix}p999_ms"), num(s, &["latency", "p999_ms"]));
    m.insert(format!("{prefix}max_ms"), num(s, &["latency", "max_ms"]));
    m.insert(format!("{prefix}errors"), num(s, &["errors"]));
}

/// CPU, disk writes and memory of the cluster over one measured phase.
pub(super) struct Sample {
    cpu: Vec<f64>,
    /// CPU of the driver's waited-for children: the `mqbench` runs that end in the phase.
    loadgen_cpu: f64,
    written: Vec<u64>,
    rss: RssSampler,
    at: Instant,
}

impl Sample {
    pub(super) fn start(cluster: &Cluster) -> Self {
        Sample {
            cpu: cluster.cpu(),
            loadgen_cpu: children_cpu_seconds(),
            written: cluster.pids().into_iter().map(write_bytes).collect(),
            rss: RssSampler::start(cluster.pids()),
            at: Instant::now(),
        }
    }

    /// Records CPU per million `messages`, disk write rate and peak memory.
    #[allow(clippy::cast_precision_loss, reason = "figures for display")]
    pub(super) fn finish(
        self,
        cluster: &Cluster,
        messages: f64,
        prefix: &str,
        result: &mut RunResult,
    ) {
        let secs = self.at.elapsed().as_secs_f64().max(1e-3);
        let cpu_now = cluster.cpu();
        let written_now: Vec<u64> = cluster.pids().into_iter().map(write_bytes).collect();
        let peaks = self.rss.finish();
        let labels = ["namesrv", "master", "slave"];
        let m = &mut result.metrics;
        let loadgen = children_cpu_seconds() - self.loadgen_cpu;
        m.insert(format!("{prefix}cpu_loadgen_s"), loadgen);
        if messages > 0.0 {
            m.insert(
                format!("{prefix}cpu_loadgen_s_per_m"),
                loadgen / messages * 1e6,
            );
        }
        for (i, label) in labels.iter().enumerate().take(cpu_now.len()) {
            let cpu = cpu_now[i] - self.cpu[i];
            m.insert(format!("{prefix}cpu_{label}_s"), cpu);
            m.insert(format!("{prefix}cpu_{label}_pct"), cpu / secs * 100.0);
            if messages > 0.0 && *label != "namesrv" {
                m.insert(format!("{prefix}cpu_{label}_s_per_m"), cpu / messages * 1e6);
            }
            let written = written_now[i].saturating_sub(self.written[i]);
            m.insert(
                format!("{prefix}disk_write_{label}_mb_s"),
                written as f64 / MIB / secs,
            );
            if prefix.is_empty() {
                m.insert(format!("rss_peak_{label}_mib"), mib(peaks[i]));
            }
        }
        if prefix.is_empty() {
            m.insert("rss_peak_total_mib".to_owned(), mib(peaks.iter().sum()));
        }
    }
}

/// `write_bytes` of `/proc/PID/io`: bytes this process caused to be written to storage
/// (dirtied pages of its mappings included).
fn write_bytes(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("write_bytes:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

pub(super) fn secs(s: u64) -> String {
    format!("{s}s")
}

/// Creates `count` topics named as `mqbench --topics` expects, waits for their routes.
pub(super) fn create_topics(
    bench: &Bench<'_>,
    cluster: &Cluster,
    topic: &str,
    count: usize,
    queues: usize,
) -> Result<Value, String> {
    let summary = bench.run(
        "topics",
        &strings(&[
            "topics",
            "-c",
            CLUSTER,
            "-t",
            topic,
            "--count",
            &count.to_string(),
            "--queues",
            &queues.to_string(),
            "--concurrency",
            "16",
        ]),
        Duration::from_secs(3600),
    )?;
    if num(&summary, &["errors"]) > 0.0 {
        return Err(format!(
            "topic creation failed: {}",
            summary["errors_by_kind"]
        ));
    }
    let names: Vec<String> = if count <= 1 {
        vec![topic.to_owned()]
    } else {
        vec![format!("{topic}-0"), format!("{topic}-{}", count - 1)]
    };
    cluster.wait_routes(&names, Duration::from_secs(120))?;
    Ok(summary)
}

/// Warm-up, then the measured producer run with CPU and memory sampled.
fn produce(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &Plan,
    size: usize,
    load: &[&str],
    result: &mut RunResult,
) -> Result<(), String> {
    create_topics(bench, cluster, TOPIC, 1, QUEUES)?;
    measured_producer(bench, cluster, plan, size, load, &[], result)
}

fn measured_producer(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &Plan,
    size: usize,
    load: &[&str],
    extra: &[String],
    result: &mut RunResult,
) -> Result<(), String> {
    let mut args = strings(&["producer", "-t", TOPIC, "--size", &size.to_string()]);
    args.extend(strings(load));
    args.extend(extra.iter().cloned());
    let timeout = |s: u64| Duration::from_secs(s + 120);
    let mut warm = args.clone();
    warm.extend(["--duration".to_owned(), secs(plan.warmup_secs)]);
    let _ = bench.run("warmup", &warm, timeout(plan.warmup_secs))?;
    let mut measured = args;
    measured.extend(["--duration".to_owned(), secs(plan.measure_secs)]);
    let sample = Sample::start(cluster);
    let summary = bench.run("producer", &measured, timeout(plan.measure_secs))?;
    sample.finish(cluster, num(&summary, &["messages"]), "", result);
    record_producer(result, "", &summary);
    add_errors(result, &summary);
    result.params.insert("size".to_owned(), size.to_string());
    result.params.insert("load".to_owned(), load.join(" "));
    if num(&summary, &["messages"]) <= 0.0 {
        return Err("the producer stored no message".to_owned());
    }
    Ok(())
}

/// Fills the backlog of [`TOPIC`]: `messages` of `size` bytes, async batches of `batch`, 8
/// threads with 4 requests in flight each, plus `extra` producer options; the broker's
/// CPU and memory over the fill go into `result` as `fill_*`. Returns mqbench's summary.
pub(super) fn fill_backlog(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    messages: u64,
    size: u64,
    batch: u64,
    extra: &[&str],
    result: &mut RunResult,
) -> Result<Value, String> {
    let (size, batch, messages) = (size.to_string(), batch.to_string(), messages.to_string());
    let mut args = strings(&[
        "producer",
        "-t",
        TOPIC,
        "--size",
        &size,
        "--mode",
        "async",
        "--batch",
        &batch,
        "--threads",
        "8",
        "--inflight",
        "4",
        "--messages",
        &messages,
        "--duration",
        "1800s",
    ]);
    args.extend(strings(extra));
    let sample = Sample::start(cluster);
    let fill = bench.run("fill", &args, Duration::from_secs(2000))?;
    sample.finish(cluster, num(&fill, &["messages"]), "fill_", result);
    Ok(fill)
}

/// Fill a backlog (batches of 16, async), then time a catch-up read of all of it.
fn backlog(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &Plan,
    result: &mut RunResult,
) -> Result<(), String> {
    create_topics(bench, cluster, TOPIC, 1, QUEUES)?;
    let size = 1024u64;
    let messages = plan.backlog_bytes / size;
    let fill = fill_backlog(bench, cluster, messages, size, 16, &[], result)?;
    record_producer(result, "fill_", &fill);
    add_errors(result, &fill);
    let stored = num(&fill, &["messages"]);
    result.metrics.insert("backlog_messages".to_owned(), stored);
    result
        .metrics
        .insert("backlog_mib".to_owned(), stored * 1024.0 / MIB);
    let sample = Sample::start(cluster);
    let read = bench.run(
        "catchup",
        &strings(&[
            "consumer",
            "-t",
            TOPIC,
            "-g",
            "bench_catchup",
            "--from",
            "first",
            "--catch-up",
            "--duration",
            "1800s",
        ]),
        Duration::from_secs(2000),
    )?;
    let received = num(&read, &["messages"]);
    sample.finish(cluster, received, "", result);
    let m = &mut result.metrics;
    m.insert("read_tps".to_owned(), num(&read, &["tps"]));
    m.insert("read_mb_s".to_owned(), num(&read, &["mb_per_sec"]));
    m.insert("read_secs".to_owned(), num(&read, &["duration_secs"]));
    m.insert("read_messages".to_owned(), received);
    add_errors(result, &read);
    result.params.insert(
        "backlog".to_owned(),
        format!("{} MiB of 1 KiB messages", plan.backlog_bytes >> 20),
    );
    if received < stored {
        return Err(format!(
            "the catch-up read got {received} of {stored} messages"
        ));
    }
    Ok(())
}

/// A consumer long-polls every queue while a producer sends at `rate`.
fn end_to_end(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &Plan,
    rate: u64,
    result: &mut RunResult,
) -> Result<(), String> {
    create_topics(bench, cluster, TOPIC, 1, QUEUES)?;
    let producer = |duration: u64| {
        strings(&[
            "producer",
            "-t",
            TOPIC,
            "--size",
            "1024",
            "--mode",
            "async",
            "--threads",
            "8",
            "--inflight",
            "4",
            "--rate",
            &rate.to_string(),
            // Microsecond send stamps in the bodies: the born timestamp's millisecond
            // resolution is too coarse for these latencies.
            "--stamp",
            "--duration",
            &secs(duration),
        ])
    };
    let _ = bench.run(
        "warmup",
        &producer(plan.warmup_secs),
        Duration::from_secs(plan.warmup_secs + 120),
    )?;
    let (consumer, consumer_json) = bench.spawn(
        "consumer",
        &strings(&[
            "consumer",
            "-t",
            TOPIC,
            "-g",
            "bench_e2e",
            "--from",
            "last",
            "--duration",
            &secs(plan.measure_secs + 4),
        ]),
    )?;
    // Let the consumer look up offsets and park its first pulls.
    thread::sleep(Duration::from_secs(2));
    let sample = Sample::start(cluster);
    let sent = bench.run(
        "producer",
        &producer(plan.measure_secs),
        Duration::from_secs(plan.measure_secs + 120),
    )?;
    let received = Bench::finish(
        consumer,
        &consumer_json,
        Duration::from_secs(plan.measure_secs + 120),
    )?;
    sample.finish(cluster, num(&sent, &["messages"]), "", result);
    record_producer(result, "", &sent);
    add_errors(result, &sent);
    add_errors(result, &received);
    let m = &mut result.metrics;
    m.insert("received".to_owned(), num(&received, &["messages"]));
    m.insert(
        "e2e_p50_ms".to_owned(),
        num(&received, &["latency", "p50_ms"]),
    );
    m.insert(
        "e2e_p99_ms".to_owned(),
        num(&received, &["latency", "p99_ms"]),
    );
    m.insert(
        "e2e_p999_ms".to_owned(),
        num(&received, &["latency", "p999_ms"]),
    );
    m.insert(
        "e2e_max_ms".to_owned(),
        num(&received, &["latency", "max_ms"]),
    );
    result.params.insert("rate".to_owned(), rate.to_string());
    if num(&received, &["messages"]) < num(&sent, &["messages"]) {
        return Err(format!(
            "sent {} but received {}",
            sent["messages"], received["messages"]
        ));
    }
    Ok(())
}

/// Create many topics (1 queue each), then produce round robin over all of them.
fn topics(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &Plan,
    many: bool,
    result: &mut RunResult,
) -> Result<(), String> {
    let count = if many {
        plan.topics_many
    } else {
        plan.topics_few
    };
    let prefix = "ManyTopics";
    let cpu_before = cluster.cpu();
    let created = create_topics(bench, cluster, prefix, count, 1)?;
    let cpu_after = cluster.cpu();
    let m = &mut result.metrics;
    m.insert("create_per_s".to_owned(), num(&created, &["tps"]));
    m.insert("create_secs".to_owned(), num(&created, &["duration_secs"]));
    m.insert(
        "create_p99_ms".to_owned(),
        num(&created, &["latency", "p99_ms"]),
    );
    m.insert(
        "create_cpu_master_s".to_owned(),
        cpu_after[1] - cpu_before[1],
    );
    let labels = ["namesrv", "master", "slave"];
    for (label, rss) in labels.iter().zip(cluster.rss()) {
        result
            .metrics
            .insert(format!("rss_topics_{label}_mib"), mib(rss));
    }
    result.params.insert("topics".to_owned(), count.to_string());
    result.params.insert(
        "consume queue file".to_owned(),
        format!("{TOPICS_CQ_FILE_SIZE} bytes"),
    );
    let mut args = strings(&["producer", "-t", prefix, "--topics", &count.to_string()]);
    args.extend(strings(&["--size", "1024"]));
    args.extend(strings(MAX_RATE));
    let timeout = |s: u64| Duration::from_secs(s + 300);
    let mut warm = args.clone();
    warm.extend(["--duration".to_owned(), secs(plan.warmup_secs)]);
    let _ = bench.run("warmup", &warm, timeout(plan.warmup_secs))?;
    let mut measured = args;
    measured.extend(["--duration".to_owned(), secs(plan.measure_secs)]);
    let sample = Sample::start(cluster);
    let summary = bench.run("producer", &measured, timeout(plan.measure_secs))?;
    sample.finish(cluster, num(&summary, &["messages"]), "", result);
    record_producer(result, "", &summary);
    add_errors(result, &summary);
    if num(&summary, &["messages"]) <= 0.0 {
        return Err("the producer stored no message".to_owned());
    }
    Ok(())
}
