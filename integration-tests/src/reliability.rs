//! The reliability driver (issue 12): each scenario injects one kind of fault into a fresh
//! sluice cluster — kill -9 under SYNC_FLUSH, a SYNC_MASTER's slave killed, failovers with
//! the old master rejoining, a full disk, connection floods — while the official Java client
//! sends and records every answer; then everything is read back and the books are kept
//! (acknowledged, lost, duplicated, corrupt), with the recovery times. One more (issue 16)
//! consumes a backlog by POP across kill -9 and keeps the consumer's books (acked, lost,
//! delivered twice, delivered again after a successful ack). Results as JSON and
//! RELIABILITY.md, the page an operator reads first.
//!
//! ```sh
//! cargo run --release -p integration-tests --bin reliability                  # long mode, writes RELIABILITY.md
//! cargo run --release -p integration-tests --bin reliability -- --quick       # minutes; target/reliability/<run>/
//! cargo run --release -p integration-tests --bin reliability -- --scenario kill9-sync-flush --events 20 --seed 7
//! cargo run --release -p integration-tests --bin reliability -- --render docs/reliability/results.json
//! cargo run --release -p integration-tests --bin reliability -- --scenario pop-kill9 \
//!     --merge docs/reliability/results.json      # one scenario again, the others' results kept
//! ```
//!
//! Layout:
//! - `scenario`: the scenarios, the plan (sizes of quick and long runs), a run's context and result.
//! - `runner`: one run of one scenario, never a panic out of it.
//! - `kill_loop`, `slave_kill`, `failover`, `disk_full`, `conn_flood`, `pop_kill`: the scenarios.
//! - `tmpfs`: the size-limited file system of the disk-full scenario, unmounted on any exit.
//! - `report`: results JSON, the invariants, RELIABILITY.md.
//!
//! The processes are the test harness's ([`crate::harness`], [`crate::drill`]), killed on
//! drop, on a failed step (the run's panic is caught and becomes its error) and on Ctrl-C
//! ([`crate::procs`]).

pub mod conn_flood;
pub mod disk_full;
pub mod failover;
pub mod kill_loop;
pub mod pop_kill;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod slave_kill;
pub mod tmpfs;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;

use crate::driver::{self, utc_now};
use crate::harness::build::{self, own_dir, workspace_root};
use crate::java::{V4, V5};
use report::Results;
use scenario::Plan;

/// `reliability` command line.
#[derive(Debug, Parser)]
#[command(
    name = "reliability",
    about = "Fault injection against sluice with the official Java client; writes RELIABILITY.md"
)]
pub struct Cli {
    /// Short mode: every scenario with a few faults (CI); results under --out only
    /// (RELIABILITY.md at the root is not touched).
    #[arg(long)]
    pub quick: bool,
    /// Scenarios to run (repeatable or comma-separated); default all. See --list.
    #[arg(long = "scenario", value_delimiter = ',')]
    pub scenarios: Vec<String>,
    /// Repeats of each scenario (default 1).
    #[arg(long)]
    pub repeat: Option<u32>,
    /// Faults per run of the kill, slave-kill, failover and POP kill scenarios (default: quick
    /// 5 / 3 / 2 / 3, long 50 / 20 / 10 / one every 10 s until the backlog is consumed).
    #[arg(long)]
    pub events: Option<u32>,
    /// Seed of the random kill moments (default: from the clock; recorded in the results).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Results directory (default target/reliability/<UTC time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where RELIABILITY.md goes (default: the workspace's in long mode and with --render,
    /// <out>/ in quick mode or with --scenario).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Directory of mqnamesrv/mqbroker/mqadmin/mqbench (default: next to this program, built
    /// first).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Do not build the binaries first.
    #[arg(long)]
    pub no_build: bool,
    /// Only regenerate RELIABILITY.md from a results.json.
    #[arg(long)]
    pub render: Option<PathBuf>,
    /// Add this run's results to those of a results.json (its runs of the scenarios run now
    /// are replaced, the others kept), save them there and write RELIABILITY.md (default the
    /// workspace's) from both. Each merged run says when and with which build it ran.
    #[arg(long)]
    pub merge: Option<PathBuf>,
    /// List the scenarios and exit.
    #[arg(long)]
    pub list: bool,
}

/// Runs the driver; returns the process exit code (0: every run ran; the verdicts are in the
/// page).
#[must_use]
pub fn main_with(cli: &Cli) -> i32 {
    match drive(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("reliability: {e}");
            2
        }
    }
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit (the floods hold thousands of
/// sockets; the brokers it starts inherit it, as an operator's `ulimit -n` would give them);
/// returns the limits after.
fn raise_open_files() -> (Option<u64>, Option<u64>) {
    let soft = remoting::net::raise_fd_limit();
    (
        soft,
        rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum,
    )
}

#[allow(
    clippy::too_many_lines,
    reason = "the driver's sequence, top to bottom"
)]
fn drive(cli: &Cli) -> Result<i32, String> {
    let all = scenario::all();
    if cli.list {
        for s in &all {
            println!("{:<24} {}", s.name, s.title);
        }
        return Ok(0);
    }
    let root = workspace_root();
    if let Some(path) = &cli.render {
        let results = Results::load(path)?;
        let report_path = cli
            .report
            .clone()
            .unwrap_or_else(|| root.join("RELIABILITY.md"));
        write_report(&results, &report_path)?;
        return Ok(0);
    }
    crate::procs::install_signal_handler();
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
    let repeat = cli.repeat.unwrap_or(1).max(1);
    let seed = cli.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs() % 100_000)
    });
    let mut plan = if cli.quick {
        Plan::quick(repeat, seed)
    } else {
        Plan::long(repeat, seed)
    };
    if let Some(n) = cli.events {
        plan.kills = n;
        plan.slave_kills = n;
        plan.failovers = n;
        plan.pop_kills = n;
    }
    let bin_dir = cli.bin_dir.clone().unwrap_or_else(own_dir);
    let target_dir = bin_dir
        .parent()
        .map_or_else(|| root.join("target"), Path::to_owned);
    if !cli.no_build && cli.bin_dir.is_none() && std::env::var_os("SLUICE_SKIP_BUILD").is_none() {
        build::build_binaries(&bin_dir, "reliability")?;
    }
    for name in build::BINARIES {
        if !bin_dir.join(name).is_file() {
            return Err(format!("{} is missing", bin_dir.join(name).display()));
        }
    }
    let started_at = utc_now("+%Y-%m-%dT%H:%M:%SZ");
    let out = cli.out.clone().unwrap_or_else(|| {
        target_dir
            .join("reliability")
            .join(utc_now("+%Y%m%d-%H%M%S"))
    });
    fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    // A copy of the binaries: others may rebuild target/ while a long run goes on.
    let snapshot = build::snapshot_binaries(&bin_dir, &out)?;
    build::use_bin_dir(&snapshot);
    let (soft, hard) = raise_open_files();

    let profile = bin_dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut settings = BTreeMap::new();
    settings.insert(
        "sluice build".to_owned(),
        driver::build_description(&profile),
    );
    settings.insert(
        "standard clients".to_owned(),
        format!(
            "official `org.apache.rocketmq:rocketmq-client` {V4} and {V5} from Maven Central (`sluice.it.DrillProducer`, `sluice.it.DrillDrain`)"
        ),
    );
    settings.insert(
        "open files limit (driver and brokers)".to_owned(),
        format!(
            "{} soft, {} hard",
            soft.map_or_else(|| "unlimited".to_owned(), |v| v.to_string()),
            hard.map_or_else(|| "unlimited".to_owned(), |v| v.to_string())
        ),
    );
    settings.insert("seed".to_owned(), plan.seed.to_string());
    let mut results = Results {
        started: started_at,
        duration_secs: 0.0,
        plan: plan.clone(),
        machine: crate::machine::describe(&std::env::temp_dir()),
        settings,
        runs: Vec::new(),
    };
    let results_path = out.join("results.json");
    let clock = Instant::now();
    for sc in &selected {
        for rep in 1..=plan.repeat {
            eprintln!(
                "reliability: [{:>5.0}s] {} run {rep}/{}",
                clock.elapsed().as_secs_f64(),
                sc.name,
                plan.repeat
            );
            let r = runner::run(sc, rep, &plan, &out);
            let line = if let Some(s) = &r.skipped {
                format!("skipped: {s}")
            } else if r.ok {
                format!("ran in {:.0}s: {}", r.wall_secs, headline(&r.metrics))
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
            eprintln!("reliability:          {line}");
            if let Some(e) = &r.error {
                let _ = fs::write(out.join(format!("failure-{}-{rep}.txt", sc.name)), e);
            }
            results.runs.push(r);
            results.duration_secs = clock.elapsed().as_secs_f64();
            results.save(&results_path)?;
        }
    }
    // A partial run (quick, or some scenarios) never overwrites the page at the root, unless
    // it is merged into the results behind it.
    let full = !cli.quick && cli.scenarios.is_empty();
    let report_path = cli.report.clone().unwrap_or_else(|| {
        if full || cli.merge.is_some() {
            root.join("RELIABILITY.md")
        } else {
            out.join("RELIABILITY.md")
        }
    });
    let selected_results = results.clone();
    if let Some(path) = &cli.merge {
        results = merged(Results::load(path)?, results);
        results.save(path)?;
    } else if full && cli.report.is_none() {
        // Keep the results next to the page so it can be regenerated.
        let dir = root.join("docs").join("reliability");
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        results.save(&dir.join("results.json"))?;
    }
    write_report(&results, &report_path)?;
    println!("results: {}", results_path.display());
    for sc in &selected {
        println!("{:<24} {}", sc.name, report::verdict(&results, sc));
    }
    let failed = selected_results
        .runs
        .iter()
        .filter(|r| r.error.is_some())
        .count();
    if failed > 0 {
        eprintln!("reliability: {failed} run(s) failed; see {}", out.display());
        return Ok(1);
    }
    Ok(0)
}

/// `base` with the runs of `new` in place of its runs of the same scenarios; each new run
/// notes when and with which build it ran (the header describes `base`'s run), and the plan
/// takes `new`'s sizes of the scenarios run (the descriptions show them).
fn merged(mut base: Results, new: Results) -> Results {
    base.runs
        .retain(|old| !new.runs.iter().any(|r| r.scenario == old.scenario));
    let build = new
        .settings
        .get("sluice build")
        .cloned()
        .unwrap_or_default();
    let ran: Vec<&str> = new.runs.iter().map(|r| r.scenario.as_str()).collect();
    let all = scenario::all();
    let kinds: Vec<scenario::Kind> = all
        .iter()
        .filter(|s| ran.contains(&s.name))
        .map(|s| s.kind)
        .collect();
    for kind in kinds {
        base.plan.take_sizes(&new.plan, kind);
    }
    for mut run in new.runs {
        run.note(
            "merged run",
            format!(
                "started {}, sluice build {build}, seed {}",
                new.started, new.plan.seed
            ),
        );
        base.runs.push(run);
    }
    base.duration_secs += new.duration_secs;
    base
}

fn write_report(results: &Results, path: &Path) -> Result<(), String> {
    fs::write(path, report::markdown(results)).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("reliability: wrote {}", path.display());
    Ok(())
}

/// A short line of the figures that matter most in a run.
fn headline(m: &BTreeMap<String, f64>) -> String {
    [
        ("acked", "acked"),
        ("lost", "lost"),
        ("duplicated", "dup"),
        ("corrupt", "corrupt"),
        ("broker_time_to_accept_all_ms", "broker flood ms"),
    ]
    .iter()
    .filter_map(|(k, label)| {
        m.get(*k)
            .map(|v| format!("{label} {}", crate::stats::fmt_num(*v)))
    })
    .collect::<Vec<_>>()
    .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use scenario::RunResult;

    fn results(started: &str, plan: Plan, runs: &[&str]) -> Results {
        Results {
            started: started.to_owned(),
            duration_secs: 100.0,
            plan,
            machine: crate::machine::Machine::default(),
            settings: BTreeMap::from([("sluice build".to_owned(), format!("`{started}`"))]),
            runs: runs
                .iter()
                .map(|s| RunResult {
                    scenario: (*s).to_owned(),
                    repeat: 1,
                    ok: true,
                    ..RunResult::default()
                })
                .collect(),
        }
    }

    #[test]
    fn a_merge_replaces_the_runs_of_the_scenarios_run_again() {
        let base = results(
            "then",
            Plan::long(1, 1),
            &["kill9-sync-flush", "pop-kill9", "conn-flood"],
        );
        let mut plan = Plan::long(1, 2);
        plan.pop_messages = 123;
        plan.kills = 7;
        let new = results("now", plan, &["pop-kill9"]);
        let m = merged(base, new);
        assert_eq!(m.started, "then");
        let names: Vec<&str> = m.runs.iter().map(|r| r.scenario.as_str()).collect();
        assert_eq!(names, ["kill9-sync-flush", "conn-flood", "pop-kill9"]);
        assert_eq!(m.plan.pop_messages, 123, "the merged scenario's sizes");
        assert_eq!(m.plan.kills, 50, "the others' sizes stay");
        assert_eq!(
            m.runs[2].notes["merged run"],
            "started now, sluice build `now`, seed 2"
        );
        assert!(!m.runs[0].notes.contains_key("merged run"));
        assert!((m.duration_secs - 200.0).abs() < 1e-9);
    }
}
