//! The side-by-side bench driver (issue 7): for each scenario, a fresh cluster of sluice and
//! one of Apache RocketMQ 5.3.3 (name server + broker from Maven Central jars, Java 17), the
//! same store settings, warm-up, `mqbench`, the broker's CPU seconds and RSS from `/proc`,
//! stop; repeated; results as JSON, BENCHMARKS.md and SVG charts.
//!
//! ```sh
//! cargo run --release -p integration-tests --bin bench                    # full run, writes BENCHMARKS.md
//! cargo run --release -p integration-tests --bin bench -- --quick         # minutes; target/bench/<run>/
//! cargo run --release -p integration-tests --bin bench -- --scenario async-1k --repeat 5
//! cargo run --release -p integration-tests --bin bench -- --render target/bench/<run>/results.json
//! cargo run --release -p integration-tests --bin bench -- --scenario timer-lateness,timer-1m \
//!     --merge docs/bench/results.json                                 # new scenarios, old tables kept
//! cargo run --release -p integration-tests --bin bench -- \
//!     --scenario pull-consume,pop-consume,pop-consume-batch-ack --store-root /dev/shm \
//!     --merge docs/bench/results.json
//! ```
//!
//! Layout:
//! - `cluster`: name server + master (+ slave) of either system on reserved loopback ports.
//! - `scenario`: the scenarios and one run of one.
//! - `machine`: the disk's write ceiling, criterion results.
//! - `timer`: the timer-message scenarios (issue 14).
//! - `pop_load`: the POP consumers of the consumption scenarios (issue 16), in-process.
//!
//! Shared with the reliability driver: [`crate::procs`] (child processes killed on drop, panic
//! and Ctrl-C; CPU and `RssAnon` from `/proc`), [`crate::machine`] (the machine description),
//! [`crate::driver`] (building and copying the binaries, the build description) and
//! [`crate::stats`] (medians and number formatting).
//! - `report`: medians, goals, BENCHMARKS.md (its timer section in `report::timer`), SVG
//!   charts.

pub mod cluster;
pub mod machine;
pub mod pop_load;
pub mod report;
pub mod scenario;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;

use crate::driver::utc_now;
use crate::harness::build::{self, build_binaries, own_dir, workspace_root};
use crate::{driver, procs};
use cluster::{JvmSettings, Programs, System};
use report::Results;
use scenario::Plan;

/// The Apache RocketMQ version compared against.
pub const ROCKETMQ_VERSION: &str = "5.3.3";

/// `bench` command line.
#[derive(Debug, Parser)]
#[command(
    name = "bench",
    about = "Side-by-side benchmarks of sluice and Apache RocketMQ"
)]
pub struct Cli {
    /// Short mode: every scenario for a few seconds, small backlog and topic counts, one
    /// repeat unless --repeat; results under --out only (BENCHMARKS.md is not touched).
    #[arg(long)]
    pub quick: bool,
    /// Scenarios to run (repeatable or comma-separated); default all. See --list.
    #[arg(long = "scenario", value_delimiter = ',')]
    pub scenarios: Vec<String>,
    /// sluice, rocketmq or both.
    #[arg(long, default_value = "both")]
    pub system: String,
    /// Repeats of each scenario on each system (default 3, quick 1).
    #[arg(long)]
    pub repeat: Option<u32>,
    /// Results directory (default target/bench/<UTC time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where BENCHMARKS.md goes (default: the workspace's in a full run, <out>/ in quick).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Where the charts go (default: docs/bench/ next to the report in a full run,
    /// <out>/charts in quick).
    #[arg(long)]
    pub charts: Option<PathBuf>,
    /// Closing note appended to BENCHMARKS.md (default docs/bench/notes.md when present).
    #[arg(long)]
    pub notes: Option<PathBuf>,
    /// Note closing the timer section (default docs/bench/timer-notes.md when present).
    #[arg(long)]
    pub timer_notes: Option<PathBuf>,
    /// Note closing the POP section (default docs/bench/pop-notes.md when present).
    #[arg(long)]
    pub pop_notes: Option<PathBuf>,
    /// Note closing the gRPC section (default docs/bench/grpc-notes.md when present).
    #[arg(long)]
    pub grpc_notes: Option<PathBuf>,
    /// Add this run's results to those of a results.json (its runs of the scenarios run
    /// now are replaced) and write the report from both: new scenarios without rerunning
    /// the others. Each merged run says when and with which build it ran.
    #[arg(long)]
    pub merge: Option<PathBuf>,
    /// Parent directory of the temp store dirs (default the system temp dir).
    #[arg(long)]
    pub store_root: Option<PathBuf>,
    /// Directory of mqnamesrv/mqbroker/mqbench (default: next to this program, built first).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// What the binaries of --bin-dir are (recorded as "sluice build" instead of the
    /// workspace's commit), e.g. "`abc1234`, a clean export, release".
    #[arg(long)]
    pub build_note: Option<String>,
    /// Do not build the binaries first.
    #[arg(long)]
    pub no_build: bool,
    /// Only regenerate BENCHMARKS.md and the charts from a results.json.
    #[arg(long)]
    pub render: Option<PathBuf>,
    /// List the scenarios and exit.
    #[arg(long)]
    pub list: bool,
}

/// Runs the driver; returns the process exit code (0: every run succeeded).
#[must_use]
pub fn main_with(cli: &Cli) -> i32 {
    match drive(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bench: {e}");
            2
        }
    }
}

/// Where the hand-written notes are (each file optional).
#[derive(Debug, Default)]
struct NotePaths {
    closing: Option<PathBuf>,
    timer: Option<PathBuf>,
    pop: Option<PathBuf>,
    grpc: Option<PathBuf>,
}

impl NotePaths {
    /// The given paths, each defaulting to `docs/bench/<default>` under `root` when present.
    fn resolve(cli: &Cli, root: &Path) -> Self {
        let pick = |given: &Option<PathBuf>, default: &str| {
            given.clone().or_else(|| {
                let path = root.join("docs").join("bench").join(default);
                path.is_file().then_some(path)
            })
        };
        NotePaths {
            closing: pick(&cli.notes, "notes.md"),
            timer: pick(&cli.timer_notes, "timer-notes.md"),
            pop: pick(&cli.pop_notes, "pop-notes.md"),
            grpc: pick(&cli.grpc_notes, "grpc-notes.md"),
        }
    }

    fn read(&self) -> report::Notes {
        let read = |p: &Option<PathBuf>| p.as_ref().and_then(|p| fs::read_to_string(p).ok());
        report::Notes {
            closing: read(&self.closing),
            timer: read(&self.timer),
            pop: read(&self.pop),
            grpc: read(&self.grpc),
        }
    }
}

fn chart_and_report(
    results: &Results,
    report_path: &Path,
    chart_dir: &Path,
    notes: &NotePaths,
) -> Result<(), String> {
    let charts = report::write_charts(results, chart_dir)?;
    let report_parent = report_path.parent().unwrap_or(Path::new("."));
    let rel = pathdiff(chart_dir, report_parent);
    let md = report::markdown(results, &rel, &charts, &notes.read());
    fs::write(report_path, md).map_err(|e| format!("{}: {e}", report_path.display()))?;
    eprintln!(
        "bench: wrote {} and {} chart(s) in {}",
        report_path.display(),
        charts.len(),
        chart_dir.display()
    );
    Ok(())
}

/// `target` relative to `base` when it is below it, else absolute.
fn pathdiff(target: &Path, base: &Path) -> String {
    let (t, b) = (
        target.canonicalize().unwrap_or_else(|_| target.to_owned()),
        base.canonicalize().unwrap_or_else(|_| base.to_owned()),
    );
    t.strip_prefix(&b)
        .map_or_else(|_| t.display().to_string(), |p| p.display().to_string())
}

#[allow(
    clippy::too_many_lines,
    reason = "the driver's sequence, top to bottom"
)]
fn drive(cli: &Cli) -> Result<i32, String> {
    let all = scenario::all();
    if cli.list {
        for s in &all {
            println!("{:<16} {}", s.name, s.title);
        }
        return Ok(0);
    }
    let root = workspace_root();
    let notes = NotePaths::resolve(cli, &root);
    if let Some(path) = &cli.render {
        let results = Results::load(path)?;
        let report_path = cli
            .report
            .clone()
            .unwrap_or_else(|| root.join("BENCHMARKS.md"));
        let charts = cli
            .charts
            .clone()
            .unwrap_or_else(|| root.join("docs").join("bench"));
        chart_and_report(&results, &report_path, &charts, &notes)?;
        return Ok(0);
    }
    procs::install_signal_handler();
    let systems: Vec<System> = match cli.system.as_str() {
        "both" => vec![System::Sluice, System::RocketMq],
        key => vec![System::from_key(key).ok_or_else(|| format!("unknown system {key}"))?],
    };
    let selected: Vec<_> = if cli.scenarios.is_empty() {
        all.clone()
    } else {
        for name in &cli.scenarios {
            if !all.iter().any(|s| s.name == name) {
                return Err(format!("unknown scenario {name} (see --list)"));
            }
        }
        all.iter()
            .filter(|s| cli.scenarios.iter().any(|n| n == s.name))
            .cloned()
            .collect()
    };
    let repeat = cli.repeat.unwrap_or(if cli.quick { 1 } else { 3 }).max(1);
    let plan = if cli.quick {
        Plan::quick(repeat)
    } else {
        Plan::full(repeat)
    };
    let bin_dir = cli.bin_dir.clone().unwrap_or_else(own_dir);
    let target_dir = bin_dir
        .parent()
        .map_or_else(|| root.join("target"), Path::to_owned);
    if !cli.no_build && cli.bin_dir.is_none() && std::env::var_os("SLUICE_SKIP_BUILD").is_none() {
        build_binaries(&bin_dir, "bench")?;
    }
    for name in ["mqnamesrv", "mqbroker", "mqbench"] {
        if !bin_dir.join(name).is_file() {
            return Err(format!("{} is missing", bin_dir.join(name).display()));
        }
    }
    let mut systems = systems;
    let apache = if systems.contains(&System::RocketMq) {
        match crate::java::apache_dist(ROCKETMQ_VERSION) {
            Ok(dist) => Some(dist),
            Err(e) if cli.quick && systems.len() > 1 => {
                eprintln!("bench: Apache RocketMQ not available, sluice only: {e}");
                systems.retain(|s| *s == System::Sluice);
                None
            }
            Err(e) => return Err(e),
        }
    } else {
        None
    };
    let started_at = utc_now("+%Y-%m-%dT%H:%M:%SZ");
    let out = cli
        .out
        .clone()
        .unwrap_or_else(|| target_dir.join("bench").join(utc_now("+%Y%m%d-%H%M%S")));
    fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    // A snapshot of the binaries: others may rebuild target/ while a long run goes on.
    let bin_dir = build::snapshot_binaries(&bin_dir, &out)?;
    let store_root = cli.store_root.clone().unwrap_or_else(std::env::temp_dir);
    let jvm = JvmSettings::for_machine(crate::machine::available_bytes());
    let programs = Programs {
        bin_dir: bin_dir.clone(),
        workspace: root.clone(),
        apache,
        jvm,
    };
    let machine = crate::machine::describe(&store_root);
    eprintln!(
        "bench: measuring the disk's write ceiling under {}",
        store_root.display()
    );
    let disk = machine::disk_ceiling(&store_root, if cli.quick { 256 << 20 } else { 2 << 30 });
    let mut settings = BTreeMap::new();
    let profile = cli
        .bin_dir
        .clone()
        .unwrap_or_else(own_dir)
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let build = match &cli.build_note {
        Some(note) => note.clone(),
        None => driver::build_description(&profile),
    };
    settings.insert("sluice build".to_owned(), build.clone());
    let measured = format!("{started_at}, sluice {build}");
    if programs.apache.is_some() {
        settings.insert(
            "RocketMQ".to_owned(),
            format!(
                "`org.apache.rocketmq:rocketmq-namesrv` / `rocketmq-broker` {ROCKETMQ_VERSION} from Maven Central (resolved by integration-tests/java-broker/build.sh)"
            ),
        );
        settings.insert(
            "RocketMQ broker JVM".to_owned(),
            format!("`{}`", programs.jvm.broker.join(" ")),
        );
        settings.insert(
            "RocketMQ name server JVM".to_owned(),
            format!("`{}`", programs.jvm.namesrv.join(" ")),
        );
    }
    settings.insert(
        "max-rate load".to_owned(),
        format!("`mqbench producer {}`", scenario::MAX_RATE.join(" ")),
    );
    settings.insert(
        "sync-flush load".to_owned(),
        format!("`mqbench producer {}`", scenario::SYNC_64.join(" ")),
    );
    let mut results = Results {
        started: started_at,
        duration_secs: 0.0,
        plan: plan.clone(),
        systems: systems.iter().map(|s| s.key().to_owned()).collect(),
        machine,
        disk,
        settings,
        runs: Vec::new(),
        // The workspace's criterion output (`make bench`), wherever the binaries came from.
        criterion: machine::criterion_results(
            &own_dir()
                .parent()
                .map_or_else(|| target_dir.clone(), Path::to_owned)
                .join("criterion"),
        ),
    };
    let results_path = out.join("results.json");
    let clock = Instant::now();
    for sc in &selected {
        let repeats = sc.max_repeat.map_or(plan.repeat, |m| m.min(plan.repeat));
        for rep in 1..=repeats {
            for &system in &systems {
                eprintln!(
                    "bench: [{:>5.0}s] {} on {system}, run {rep}/{repeats}",
                    clock.elapsed().as_secs_f64(),
                    sc.name,
                );
                let mut r = scenario::run(sc, system, rep, &plan, &programs, &out, &store_root);
                r.measured = Some(measured.clone());
                let line = if r.ok {
                    format!("ok in {:.0}s: {}", r.wall_secs, headline(&r.metrics))
                } else {
                    format!(
                        "FAILED in {:.0}s: {}",
                        r.wall_secs,
                        r.error
                            .as_deref()
                            .unwrap_or("")
                            .lines()
                            .next()
                            .unwrap_or("")
                    )
                };
                eprintln!("bench:          {line}");
                if !r.ok {
                    let _ = fs::write(
                        out.join(format!("failure-{}-{system}-{rep}.txt", sc.name)),
                        r.error.clone().unwrap_or_default(),
                    );
                }
                results.runs.push(r);
                results.duration_secs = clock.elapsed().as_secs_f64();
                results.save(&results_path)?;
            }
        }
    }
    let (report_path, chart_dir) = if cli.quick {
        (
            cli.report
                .clone()
                .unwrap_or_else(|| out.join("BENCHMARKS.md")),
            cli.charts.clone().unwrap_or_else(|| out.join("charts")),
        )
    } else {
        let report = cli
            .report
            .clone()
            .unwrap_or_else(|| root.join("BENCHMARKS.md"));
        let charts = cli.charts.clone().unwrap_or_else(|| {
            report
                .parent()
                .unwrap_or(Path::new("."))
                .join("docs")
                .join("bench")
        });
        (report, charts)
    };
    let failed = results.runs.iter().filter(|r| !r.ok).count();
    if let Some(path) = &cli.merge {
        results = merged(Results::load(path)?, results);
    }
    // Keep a copy of the results next to the charts, so BENCHMARKS.md can be regenerated.
    fs::create_dir_all(&chart_dir).map_err(|e| format!("{}: {e}", chart_dir.display()))?;
    results.save(&chart_dir.join("results.json"))?;
    chart_and_report(&results, &report_path, &chart_dir, &notes)?;
    println!("results: {}", results_path.display());
    for g in report::goals(&results)
        .into_iter()
        .chain(report::timer::goals(&results))
        .chain(report::pop::goals(&results))
        .chain(report::grpc::goals(&results))
    {
        println!(
            "{:<10} {} — {}",
            match g.met {
                Some(true) => "MET",
                Some(false) => "MISSED",
                None => "n/a",
            },
            g.what,
            g.measured
        );
    }
    for (id, time) in machine::criterion_table(&results.criterion) {
        println!("criterion  {id}: {time}");
    }
    if failed > 0 {
        eprintln!("bench: {failed} run(s) failed; see {}", out.display());
        return Ok(1);
    }
    Ok(0)
}

/// `base` with the runs of `new` in place of its runs of the same scenarios (the settings
/// and machine of `base` stay: its header describes most of the report).
fn merged(mut base: Results, new: Results) -> Results {
    base.runs
        .retain(|old| !new.runs.iter().any(|r| r.scenario == old.scenario));
    for system in &new.systems {
        if !base.systems.contains(system) {
            base.systems.push(system.clone());
        }
    }
    base.runs.extend(new.runs);
    base
}

/// A short line of the figures that matter most in a run.
fn headline(m: &BTreeMap<String, f64>) -> String {
    let keys = [
        ("tps", "msg/s"),
        ("read_tps", "read msg/s"),
        ("e2e_p99_ms", "e2e p99 ms"),
        ("create_per_s", "topics/s"),
        ("timer_late_p99_ms", "timer lateness p99 ms"),
        ("enqueue_rate", "timers enqueued/s"),
        ("recovery_answer_secs", "s to recover"),
        ("pending_missing", "timers missing"),
        ("consume_tps", "consumed msg/s"),
        ("redelivered_acked", "acked redelivered"),
        ("redelivered", "redelivered"),
        ("cpu_master_s_per_m", "CPU s/M"),
        ("rss_peak_master_mib", "RssAnon MiB"),
        ("errors", "errors"),
    ];
    keys.iter()
        .filter_map(|(k, label)| {
            m.get(*k)
                .map(|v| format!("{} {label}", crate::stats::fmt_num(*v)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use scenario::RunResult;

    fn results(runs: &[(&str, &str)]) -> Results {
        Results {
            started: "then".to_owned(),
            duration_secs: 0.0,
            plan: Plan::quick(1),
            systems: vec!["sluice".to_owned()],
            machine: crate::machine::Machine::default(),
            disk: machine::DiskCeiling::default(),
            settings: BTreeMap::new(),
            runs: runs
                .iter()
                .map(|(scenario, system)| RunResult {
                    scenario: (*scenario).to_owned(),
                    system: (*system).to_owned(),
                    repeat: 1,
                    ok: true,
                    error: None,
                    metrics: BTreeMap::new(),
                    errors_by_kind: BTreeMap::new(),
                    params: BTreeMap::new(),
                    wall_secs: 0.0,
                    measured: None,
                })
                .collect(),
            criterion: Vec::new(),
        }
    }

    #[test]
    fn a_merge_replaces_the_runs_of_the_scenarios_run_again() {
        let base = results(&[("async-1k", "sluice"), ("timer-1m", "sluice")]);
        let mut new = results(&[("timer-1m", "sluice"), ("timer-1m", "rocketmq")]);
        new.systems.push("rocketmq".to_owned());
        new.started = "now".to_owned();
        let m = merged(base, new);
        assert_eq!(m.started, "then");
        assert_eq!(m.systems, ["sluice", "rocketmq"]);
        let runs: Vec<(&str, &str)> = m
            .runs
            .iter()
            .map(|r| (r.scenario.as_str(), r.system.as_str()))
            .collect();
        assert_eq!(
            runs,
            [
                ("async-1k", "sluice"),
                ("timer-1m", "sluice"),
                ("timer-1m", "rocketmq")
            ]
        );
    }
}
