//! Disk full: the broker's whole store (`storePathRootDir`) on a small tmpfs, every disk
//! setting at its default (`diskMaxUsedSpaceRatio` 75, forced cleanup above 85 %, puts refused
//! above 90 %). `mqbench` fills it at full speed (the load: the point is the broker's
//! behaviour) while the official Java producer sends its checked messages alongside; once the
//! broker refuses steadily: what it answers, how many log lines it writes per second, whether
//! it still serves reads (a drain while full) and stays up; then the file system is grown
//! (`mount -o remount,size=..`) and the time to the first SEND_OK is the recovery. Finally every
//! acknowledged message must be read back (or have been removed by the store's own expiry,
//! counted apart).

use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use super::scenario::{Ctx, LogScan, Outcome, truncate};
use super::tmpfs::{MountError, Tmpfs};
use crate::drill::{self, Books, DrillProducer, ProducerOptions, first_ack_after, now_ms};
use crate::harness::{BrokerProcess, NamesrvProcess, TestDir, binary, unique_name};
use crate::java::{JavaTools, V4};
use crate::procs::Proc;

/// Body size of the Java producer's messages.
pub const BODY_SIZE: usize = 1024;
/// The filler: `mqbench producer` with these arguments (plus `-n`, `-t`, `--duration`).
pub const FILLER: &[&str] = &[
    "--size",
    "4096",
    "--mode",
    "async",
    "--threads",
    "4",
    "--inflight",
    "16",
];
/// Refusing "steadily": no SEND_OK for this long while sends keep failing.
const STEADY: Duration = Duration::from_secs(3);
/// How long the log rate is measured while refusing.
const LOG_WINDOW: Duration = Duration::from_secs(5);
/// How long the broker may take to accept again once there is room.
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(60);

/// The producer's settings here.
#[must_use]
pub fn producer_options() -> ProducerOptions {
    ProducerOptions {
        body_size: BODY_SIZE,
        send_timeout_ms: 3_000,
        ..ProducerOptions::default()
    }
}

/// Lines in a process's logs.
fn log_lines(broker: &BrokerProcess) -> usize {
    let p = broker.process_ref();
    LogScan::lines(&p.stdout()) + LogScan::lines(&p.stderr())
}

/// The most lines logged within one second (`tracing` lines start with a timestamp; the
/// first 19 characters are the second).
fn peak_lines_per_second(text: &str) -> usize {
    let mut per_second: std::collections::BTreeMap<&str, usize> = Default::default();
    for line in text.lines() {
        if line.len() >= 19 && line.as_bytes()[0].is_ascii_digit() {
            *per_second.entry(&line[..19]).or_default() += 1;
        }
    }
    per_second.values().copied().max().unwrap_or(0)
}

/// Runs the scenario (see the module docs).
///
/// # Errors
/// A step fails (the broker does not start, the producer does not run).
#[allow(clippy::too_many_lines, reason = "the scenario, step by step")]
pub fn run(ctx: &mut Ctx<'_>) -> Result<Outcome, String> {
    let size = ctx.plan.disk_mib;
    // Declared first, dropped last: after every process using it.
    let mount = match Tmpfs::mount(size) {
        Ok(m) => m,
        Err(e @ MountError::Permission(_)) => return Ok(Outcome::Skipped(e.to_string())),
        Err(MountError::Other(e)) => return Err(e),
    };
    let java = JavaTools::try_get(V4)?;
    let work = TestDir::new("rel-disk-full");
    let store = mount.path().join("store");
    let store_s = store.display().to_string();
    ctx.result.metric("tmpfs_mib", size as f64);
    ctx.result.note(
        "store",
        format!("tmpfs of {size} MiB as storePathRootDir, mappedFileSizeCommitLog=16 MiB, other disk settings default"),
    );
    let ns = NamesrvProcess::start();
    let mut broker = BrokerProcess::start_master(
        "a",
        &ns.addr(),
        "ASYNC_MASTER",
        &[("storePathRootDir", &store_s)],
    );
    let topic = unique_name("DiskFull");
    let filler_topic = unique_name("Filler");
    broker.create_topic(&topic, 4);
    broker.create_topic(&filler_topic, 4);
    let options = producer_options();
    ctx.result.note_producer(V4, &options);
    ctx.result
        .note("filler", format!("mqbench producer {}", FILLER.join(" ")));
    let producer = DrillProducer::start(java, &ns.addr(), &topic, work.path(), options);
    if !producer.wait_acks(100, Duration::from_secs(60)) {
        return Err(format!(
            "no 100 answers before the fill: {:?}",
            producer.last_lines(5)
        ));
    }
    let log_at_fill = log_lines(&broker);
    let fill_at = now_ms();
    let fill_clock = Instant::now();
    let mut filler_cmd = std::process::Command::new(binary("tools", "mqbench"));
    filler_cmd
        .arg("producer")
        .args(["-n", &ns.addr(), "-t", &filler_topic])
        .args(FILLER)
        .args(["--duration", "3600s", "--json"])
        .env("RUST_LOG", "warn");
    let filler_json = ctx.log_dir.join("filler.json");
    let mut filler = Proc::spawn_split(
        "mqbench-filler",
        filler_cmd,
        &ctx.log_dir.join("filler.log"),
        Some(&filler_json),
    )
    .map_err(|e| e.to_string())?;

    // Until the broker refuses steadily: sends keep failing and no SEND_OK for STEADY.
    let fill_timeout = Duration::from_secs(if ctx.plan.quick { 120 } else { 600 });
    let steady_ms = u64::try_from(STEADY.as_millis()).unwrap_or(u64::MAX);
    let refusing = producer.process().wait_until(fill_timeout, |lines| {
        let now = now_ms();
        let mut saw_refusal = false;
        for line in lines.iter().rev() {
            if line.starts_with("FAIL ") {
                saw_refusal |= line.contains("MQBrokerException");
            } else if let Some(ack) = drill::parse_acks(std::slice::from_ref(line)).pop() {
                if ack.is_send_ok() {
                    return saw_refusal && ack.ack_at + steady_ms < now;
                }
            }
        }
        false
    });
    let full_after = fill_clock.elapsed();
    ctx.result
        .metric("refused_steadily", f64::from(u8::from(refusing)));
    ctx.result.metric("fill_secs", full_after.as_secs_f64());
    if let Some((used, total)) = mount.usage() {
        ctx.result.metric(
            "used_pct_when_refusing",
            used as f64 * 100.0 / total.max(1) as f64,
        );
    }
    let alive_full = broker.process().is_running();
    ctx.result
        .metric("broker_running_when_full", f64::from(u8::from(alive_full)));

    // The log while refused: at full load (the filler), then with the Java producer alone.
    let (l0, t0) = (log_lines(&broker), Instant::now());
    thread::sleep(LOG_WINDOW);
    let (l1, t1) = (log_lines(&broker), Instant::now());
    ctx.result.metric(
        "log_lines_per_s_refusing_max_load",
        (l1 - l0) as f64 / (t1 - t0).as_secs_f64(),
    );
    filler.stop();
    let (l2, t2) = (log_lines(&broker), Instant::now());
    thread::sleep(LOG_WINDOW);
    let (l3, t3) = (log_lines(&broker), Instant::now());
    ctx.result.metric(
        "log_lines_per_s_refusing_producer_only",
        (l3 - l2) as f64 / (t3 - t2).as_secs_f64(),
    );
    let text = format!(
        "{}\n{}",
        broker.process_ref().stdout(),
        broker.process_ref().stderr()
    );
    let since_fill: String = text
        .lines()
        .skip(log_at_fill)
        .collect::<Vec<_>>()
        .join("\n");
    ctx.result
        .count("log_lines_since_fill", l3.saturating_sub(log_at_fill));
    ctx.result
        .count("log_peak_lines_per_s", peak_lines_per_second(&since_fill));
    if let Ok(summary) = fs::read_to_string(&filler_json) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&summary) {
            ctx.result
                .metric("filler_stored", v["messages"].as_f64().unwrap_or(0.0));
            if let Some(kinds) = v["errors_by_kind"].as_object() {
                ctx.result.note(
                    "filler_errors",
                    kinds
                        .iter()
                        .map(|(k, n)| format!("{k} × {n}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                );
            }
        }
    }

    // Reads while full.
    let drain_timeout = Duration::from_secs(300);
    match drill::try_drain(java, &ns.addr(), &topic, drain_timeout) {
        Ok(d) => {
            ctx.result.metric("reads_served_when_full", 1.0);
            ctx.result.count("drained_when_full", d.received.len());
        }
        Err(e) => {
            ctx.result.metric("reads_served_when_full", 0.0);
            ctx.result.note("reads_when_full", truncate(&e, 400));
        }
    }

    // Room again.
    let freed_at = now_ms();
    mount.resize(size * 4)?;
    let recovered = producer.wait_acked_since(freed_at, true, RECOVERY_TIMEOUT);
    ctx.result
        .metric("recovered", f64::from(u8::from(recovered)));
    thread::sleep(Duration::from_secs(1));
    let produced = producer.stop(Duration::from_secs(120));
    let _ = fs::write(ctx.log_dir.join("producer.out"), &produced.output.stdout);
    let acks = &produced.acks;
    ctx.result.event_opt(
        "space_freed_to_first_send_ok_ms",
        first_ack_after(acks, freed_at, true, None),
    );
    // The refusal: the first failure answered by the broker after the fill began.
    let refusal = produced
        .fails
        .iter()
        .filter(|f| f.fail_at >= fill_at && f.error.contains("MQBrokerException"))
        .min_by_key(|f| f.fail_at);
    if let Some(r) = refusal {
        ctx.result.event_opt(
            "fill_to_first_refusal_ms",
            Some(r.fail_at.saturating_sub(fill_at)),
        );
        ctx.result.note("first_refusal", truncate(&r.error, 300));
        ctx.result.count(
            "acked_before_refusal",
            acks.iter()
                .filter(|a| a.is_send_ok() && a.ack_at < r.fail_at)
                .count(),
        );
        ctx.result.count(
            "acked_while_full",
            acks.iter()
                .filter(|a| a.is_send_ok() && a.ack_at > r.fail_at && a.ack_at < freed_at)
                .count(),
        );
    }
    let refusals: std::collections::BTreeMap<String, usize> = produced
        .fails
        .iter()
        .filter(|f| f.fail_at >= fill_at && f.fail_at < freed_at)
        .fold(Default::default(), |mut m, f| {
            *m.entry(drill::failure_kind(&f.error)).or_default() += 1;
            m
        });
    ctx.result.note(
        "refusals",
        refusals
            .iter()
            .map(|(k, n)| format!("{k} × {n}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    let drained = drill::try_drain(java, &ns.addr(), &topic, drain_timeout)?;
    let books = Books::new(acks, &produced.fails, &drained, BODY_SIZE);
    ctx.result.books(&books, &produced);
    let alive = broker.process().is_running();
    ctx.result
        .metric("broker_running_at_end", f64::from(u8::from(alive)));
    ctx.keep_logs("broker", broker.process_ref());
    drop(broker);
    drop(ns);
    drop(mount);
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_rate_of_timestamped_lines() {
        let text = "2026-01-01T00:00:01.1Z ERROR a\n2026-01-01T00:00:01.5Z ERROR a\n\
                    2026-01-01T00:00:02.0Z ERROR a\n    at some.stack(Trace.java)\n";
        assert_eq!(peak_lines_per_second(text), 2);
        assert_eq!(peak_lines_per_second(""), 0);
    }
}
