//! The timer-message scenarios (issue 14), both systems alike:
//!
//! - `timer-lateness`: `mqbench timer` sends the plan's timers (100 000) due evenly over
//!   its window (60 s) and long-polls them back; lateness is the consumer's receipt minus
//!   the due time, both on this host's clock.
//! - `timer-1m`: the plan's pending timers (1 000 000) are sent with the broker's enqueue
//!   stopped (`timerStopEnqueue=true`), so they are only parked in
//!   `rmq_sys_wheel_timer`; a clean restart with the enqueue on then times the enqueue
//!   into the wheel alone (`mqbench timer-watch`: GET_TIMER_CHECK_POINT against the queue's
//!   max offset) and the memory it takes; a kill -9 and restart times the recovery; last,
//!   every timer is received when due, none early, none missing.

use std::fs;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{Bench, QUEUES, RunResult, Sample, add_errors, create_topics, mib, num, secs, strings};
use crate::bench::cluster::{Cluster, Stop};
use crate::procs::{OtherCpuSampler, RssSampler, mapped_file_rss, rss_anon, rss_file, vm_rss};

/// The topic timers are delivered to.
const TOPIC: &str = "TimerBench";
/// Body size of the timer messages (small, as reminders and timeouts are).
const BODY: &str = "64";
/// The load of every timer send: 8 senders, 16 in flight each.
const SEND_LOAD: &[&str] = &["--threads", "8", "--inflight", "16", "--size", BODY];

/// How long after the last due time the consumer waits for stragglers.
const LATENESS_GRACE: Duration = Duration::from_secs(10);
/// The same for the pending scenario (Apache delivers a slot's timers at once).
const PENDING_GRACE: Duration = Duration::from_secs(120);

/// Now, in ms since the epoch (the clock `mqbench` stamps due times with).
fn epoch_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn timer_args(extra: &[String]) -> Vec<String> {
    let mut args = strings(&["timer", "-t", TOPIC]);
    args.extend(strings(SEND_LOAD));
    args.extend(extra.iter().cloned());
    args
}

/// Figures of a `mqbench timer` summary's receipts, under `prefix`.
fn record_receipts(result: &mut RunResult, prefix: &str, s: &Value) {
    let m = &mut result.metrics;
    let r = &s["receipts"];
    for (key, path) in [
        ("received", &["received"][..]),
        ("missing", &["missing"]),
        ("duplicates", &["duplicates"]),
        ("early", &["early"]),
        ("early_max_ms", &["early_max_ms"]),
        ("broker_early", &["broker_early"]),
        ("late_p50_ms", &["lateness", "p50_ms"]),
        ("late_p90_ms", &["lateness", "p90_ms"]),
        ("late_p99_ms", &["lateness", "p99_ms"]),
        ("late_p999_ms", &["lateness", "p999_ms"]),
        ("late_max_ms", &["lateness", "max_ms"]),
        ("late_mean_ms", &["lateness", "mean_ms"]),
        ("broker_p50_ms", &["broker_lateness", "p50_ms"]),
        ("broker_p99_ms", &["broker_lateness", "p99_ms"]),
        ("broker_max_ms", &["broker_lateness", "max_ms"]),
    ] {
        m.insert(format!("{prefix}{key}"), num(r, path));
    }
    m.insert(format!("{prefix}pull_errors"), num(s, &["pull_errors"]));
}

/// Figures of a send (the `mqbench timer` summary) under `prefix`.
fn record_send(result: &mut RunResult, prefix: &str, s: &Value) {
    let m = &mut result.metrics;
    m.insert(format!("{prefix}send_tps"), num(s, &["send_tps"]));
    m.insert(format!("{prefix}sent"), num(s, &["messages"]));
    m.insert(format!("{prefix}send_errors"), num(s, &["errors"]));
    m.insert(
        format!("{prefix}send_p99_ms"),
        num(s, &["send_latency", "p99_ms"]),
    );
    m.insert(
        format!("{prefix}sent_after_due"),
        num(s, &["sent_after_due"]),
    );
    add_errors(result, s);
}

/// `timer-lateness`: a warm-up of the same shape, then the measured run.
pub(super) fn lateness(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &super::Plan,
    result: &mut RunResult,
) -> Result<(), String> {
    create_topics(bench, cluster, TOPIC, 1, QUEUES)?;
    let n = plan.timer_messages.max(1);
    let grace = secs(LATENESS_GRACE.as_secs());
    // Warm-up: a fifth of the timers over the warm-up time (JIT, page faults, routes).
    let warm_window = plan.warmup_secs.max(3);
    let warm = timer_args(&strings(&[
        "--messages",
        &(n / 5).max(1000).to_string(),
        "--window",
        &secs(warm_window),
        "--lead",
        &secs(plan.timer_lead_secs.max(3)),
        "--grace",
        "5s",
        "-g",
        "bench_timer_warmup",
    ]));
    let _ = bench.run(
        "timer-warmup",
        &warm,
        Duration::from_secs(warm_window + plan.timer_lead_secs + 180),
    )?;
    let args = timer_args(&strings(&[
        "--messages",
        &n.to_string(),
        "--window",
        &secs(plan.timer_window_secs),
        "--lead",
        &secs(plan.timer_lead_secs),
        "--grace",
        &grace,
    ]));
    let sample = Sample::start(cluster);
    let (proc, json) = bench.spawn("timer", &args)?;
    let mut measured = cluster.pids();
    measured.push(proc.pid());
    let other = OtherCpuSampler::start(measured);
    let timeout = plan.timer_lead_secs + plan.timer_window_secs + LATENESS_GRACE.as_secs() + 180;
    let summary = Bench::finish(proc, &json, Duration::from_secs(timeout))?;
    let other = other.finish();
    if !other.is_empty() {
        #[allow(clippy::cast_precision_loss, reason = "a count of seconds")]
        let mean = other.iter().sum::<f64>() / other.len() as f64;
        let max = other.iter().copied().fold(0.0, f64::max);
        result.metrics.insert("other_cpu_mean_pct".to_owned(), mean);
        result.metrics.insert("other_cpu_max_pct".to_owned(), max);
    }
    #[allow(clippy::cast_precision_loss, reason = "a message count")]
    sample.finish(cluster, n as f64, "", result);
    record_send(result, "timer_", &summary);
    record_receipts(result, "timer_", &summary);
    let p = &mut result.params;
    p.insert("timers".to_owned(), n.to_string());
    p.insert(
        "due".to_owned(),
        format!(
            "evenly over {} s, the first {} s after the sends start",
            plan.timer_window_secs, plan.timer_lead_secs
        ),
    );
    p.insert("load".to_owned(), format!("mqbench {}", args.join(" ")));
    if num(&summary, &["messages"]) <= 0.0 {
        return Err("no timer message was sent".to_owned());
    }
    Ok(())
}

/// RssAnon, VmRSS and RssFile of the master, and what of its mapped files is resident,
/// as `mem_<label>_*` (MiB).
fn memory(cluster: &Cluster, label: &str, result: &mut RunResult) {
    let pid = cluster.master.proc.pid();
    let m = &mut result.metrics;
    m.insert(
        format!("mem_{label}_anon_mib"),
        mib(rss_anon(pid).unwrap_or(0)),
    );
    m.insert(
        format!("mem_{label}_vmrss_mib"),
        mib(vm_rss(pid).unwrap_or(0)),
    );
    m.insert(
        format!("mem_{label}_file_mib"),
        mib(rss_file(pid).unwrap_or(0)),
    );
    let (mut commit_log, mut timer_files, mut timer_queue) = (0u64, 0u64, 0u64);
    for (path, bytes) in mapped_file_rss(pid) {
        let p = path.to_string_lossy();
        if p.contains("/commitlog/") {
            commit_log += bytes;
        } else if p.contains("/timerlog/") || p.ends_with("/timerwheel") {
            timer_files += bytes;
        } else if p.contains("/consumequeue/rmq_sys_wheel_timer/") {
            timer_queue += bytes;
        }
    }
    m.insert(format!("mem_{label}_commitlog_mib"), mib(commit_log));
    m.insert(format!("mem_{label}_timerfiles_mib"), mib(timer_files));
    m.insert(format!("mem_{label}_timerqueue_mib"), mib(timer_queue));
}

/// "boot success" lines in the master's log so far (both systems print one per start).
fn boots(cluster: &Cluster) -> usize {
    fs::read_to_string(&cluster.master.proc.log)
        .map(|t| t.matches("boot success").count())
        .unwrap_or(0)
}

/// Waits for the master's log to say "boot success" more than `before` times; the time
/// since `from`.
fn wait_boot(cluster: &Cluster, before: usize, from: Instant, timeout: Duration) -> Option<f64> {
    while from.elapsed() < timeout {
        if boots(cluster) > before {
            return Some(from.elapsed().as_secs_f64());
        }
        thread::sleep(Duration::from_millis(5));
    }
    None
}

/// A restart of the master, timed: `mqbench timer-watch` starts with it and follows the
/// wheel until it holds `expect` timers. Metrics `<prefix>answer_secs` (spawn to the first
/// answered request), `boot_secs` (to "boot success" in its log), `caught_up_secs` (to the
/// wheel holding them all), `rate` and `first_enqueued`.
fn timed_restart(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    how: Stop,
    overrides: &[(&str, String)],
    expect: u64,
    prefix: &str,
    result: &mut RunResult,
) -> Result<Value, String> {
    let before = boots(cluster);
    cluster.restart_master(how, overrides)?;
    let spawned = Instant::now();
    let spawned_ms = epoch_millis();
    let rss = RssSampler::start(vec![cluster.master.proc.pid()]);
    let (watch, json) = bench.spawn(
        &format!("{prefix}watch"),
        &strings(&[
            "timer-watch",
            "--broker",
            &cluster.master.addr,
            "--expect",
            &expect.to_string(),
            "--interval",
            "10ms",
            "--timeout",
            "900s",
        ]),
    )?;
    let boot = wait_boot(cluster, before, spawned, Duration::from_secs(300));
    let summary = Bench::finish(watch, &json, Duration::from_secs(1000))?;
    let peak = rss.finish();
    #[allow(clippy::cast_precision_loss, reason = "epoch ms differences")]
    let since = |key: &str| {
        summary[key]
            .as_i64()
            .map(|t| (t - spawned_ms) as f64 / 1000.0)
    };
    let m = &mut result.metrics;
    if let Some(b) = boot {
        m.insert(format!("{prefix}boot_secs"), b);
    }
    if let Some(a) = since("first_answer_ms") {
        m.insert(format!("{prefix}answer_secs"), a);
    }
    if let Some(c) = since("caught_up_ms") {
        m.insert(format!("{prefix}caught_up_secs"), c);
    }
    m.insert(format!("{prefix}rate"), num(&summary, &["rate_per_s"]));
    m.insert(
        format!("{prefix}first_enqueued"),
        num(&summary, &["first_enqueued"]),
    );
    m.insert(format!("{prefix}rss_peak_mib"), mib(peak[0]));
    if summary["caught_up"].as_bool() != Some(true) {
        return Err(format!(
            "after the restart the timer wheel did not catch up: {}",
            summary["last_enqueued"]
        ));
    }
    Ok(summary)
}

/// `timer-1m`, see the module docs.
#[allow(
    clippy::too_many_lines,
    reason = "the scenario's sequence, top to bottom"
)]
pub(super) fn pending(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &super::Plan,
    result: &mut RunResult,
) -> Result<(), String> {
    create_topics(bench, cluster, TOPIC, 1, QUEUES)?;
    let n = plan.pending_timers.max(1);
    thread::sleep(Duration::from_secs(plan.settle_secs));
    memory(cluster, "idle", result);

    // 1. Park them (the enqueue is stopped).
    let args = timer_args(&strings(&[
        "--send-only",
        "--messages",
        &n.to_string(),
        "--window",
        &secs(plan.pending_window_secs),
        "--lead",
        &secs(plan.pending_lead_secs),
    ]));
    let sample = Sample::start(cluster);
    let sent = bench.run("send", &args, Duration::from_secs(1800))?;
    #[allow(clippy::cast_precision_loss, reason = "a message count")]
    sample.finish(cluster, n as f64, "send_", result);
    record_send(result, "pending_", &sent);
    if num(&sent, &["messages"]) < n as f64 {
        return Err(format!(
            "only {} of {n} timers were sent: {}",
            sent["messages"], sent["errors_by_kind"]
        ));
    }
    memory(cluster, "parked", result);

    // 2. The enqueue alone: a clean restart with it on.
    let _ = timed_restart(
        bench,
        cluster,
        Stop::Clean,
        &[("timerStopEnqueue", "false".to_owned())],
        n,
        "enqueue_",
        result,
    )?;
    memory(cluster, "enqueued", result);
    let m = &mut result.metrics;
    for kind in ["anon", "vmrss", "file"] {
        let at = |label: &str| m.get(&format!("mem_{label}_{kind}_mib")).copied();
        if let (Some(idle), Some(full)) = (at("idle"), at("enqueued")) {
            m.insert(format!("mem_growth_{kind}_mib"), full - idle);
        }
    }

    // 3. kill -9 with all of them pending, and the recovery.
    let due_first = sent["first_due_ms"].as_i64().unwrap_or(0);
    let killed_ms = epoch_millis();
    let _ = timed_restart(bench, cluster, Stop::Kill, &[], n, "recovery_", result)?;
    memory(cluster, "recovered", result);
    let m = &mut result.metrics;
    #[allow(clippy::cast_precision_loss, reason = "epoch ms differences")]
    m.insert(
        "pending_lead_at_kill_secs".to_owned(),
        (due_first - killed_ms) as f64 / 1000.0,
    );

    // 4. Every timer when due: none early, none missing.
    let last_due = sent["last_due_ms"].as_i64().unwrap_or(0);
    let run_id = sent["run_id"].as_u64().unwrap_or(0);
    let receive = strings(&[
        "timer",
        "-t",
        TOPIC,
        "--receive-only",
        "--run-id",
        &run_id.to_string(),
        "--last-due-ms",
        &last_due.to_string(),
        "--messages",
        &n.to_string(),
        "--grace",
        &secs(PENDING_GRACE.as_secs()),
        "-g",
        "bench_timer_pending",
    ]);
    let wait = u64::try_from((last_due - epoch_millis()).max(0) / 1000).unwrap_or(0)
        + PENDING_GRACE.as_secs()
        + 300;
    let received = bench.run("receive", &receive, Duration::from_secs(wait))?;
    record_receipts(result, "pending_", &received);

    let p = &mut result.params;
    p.insert("pending timers".to_owned(), n.to_string());
    p.insert(
        "due".to_owned(),
        format!(
            "evenly over {} s, the first {} s after the sends start",
            plan.pending_window_secs, plan.pending_lead_secs
        ),
    );
    p.insert("load".to_owned(), format!("mqbench {}", args.join(" ")));
    Ok(())
}
