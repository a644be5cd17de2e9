//! The bench driver in `--quick` mode, so it cannot rot: every scenario against sluice (real
//! processes, a few seconds each), and the 1 KiB async scenario against Apache RocketMQ 5.3.3
//! when Java and Maven can provide it. The full side-by-side run is by hand (BENCHMARKS.md).
#![allow(clippy::unwrap_used, reason = "test: a failed step should fail loudly")]

use integration_tests::spawn::GatedCommand;
use std::path::Path;
use std::process::Command;

use integration_tests::bench::report::Results;
use integration_tests::bench::scenario;

/// The figure each scenario must have produced (nonzero).
fn main_metric(name: &str) -> &'static str {
    match name {
        "backlog-read" => "read_tps",
        "e2e-latency" => "received",
        "timer-lateness" => "timer_received",
        "timer-1m" => "pending_received",
        "sql-filter" | "sql-filter-registered" => "sql1_delivered",
        "pull-consume" | "pop-consume" | "pop-consume-batch-ack" | "grpc-receive-ack" => {
            "consume_tps"
        }
        _ => "tps",
    }
}

fn run_driver(out: &Path, args: &[&str]) -> Results {
    let output = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["--quick", "--out"])
        .arg(out)
        .args(args)
        .gated_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "bench {args:?} failed ({}):\n{stderr}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout)
    );
    Results::load(&out.join("results.json")).unwrap()
}

#[test]
fn quick_bench_of_every_scenario_on_sluice() {
    let out = tempfile::tempdir().unwrap();
    let results = run_driver(out.path(), &["--system", "sluice"]);
    assert_eq!(results.systems, ["sluice"]);
    for sc in scenario::all() {
        let runs: Vec<_> = results
            .runs
            .iter()
            .filter(|r| r.scenario == sc.name)
            .collect();
        assert_eq!(runs.len(), 1, "{}: one run", sc.name);
        let r = runs[0];
        assert!(r.ok, "{}: {:?}", sc.name, r.error);
        let figure = r.metrics.get(main_metric(sc.name)).copied().unwrap_or(0.0);
        assert!(
            figure > 0.0,
            "{}: {} = {figure}",
            sc.name,
            main_metric(sc.name)
        );
        assert!(
            r.errors_by_kind.is_empty(),
            "{}: errors {:?}",
            sc.name,
            r.errors_by_kind
        );
        if r.metrics.contains_key("tps") {
            assert!(
                r.metrics.get("cpu_master_s_per_m").copied().unwrap_or(0.0) > 0.0,
                "{}: broker CPU was sampled",
                sc.name
            );
        }
        assert!(
            r.metrics.get("rss_idle_master_mib").copied().unwrap_or(0.0) > 0.0,
            "{}: broker memory was sampled",
            sc.name
        );
    }
    let md = std::fs::read_to_string(out.path().join("BENCHMARKS.md")).unwrap();
    assert!(md.contains("## Goals (issue 7)"), "{md}");
    assert!(md.contains("### `async-1k`"), "{md}");
    for chart in ["throughput.svg", "cpu.svg", "memory.svg", "latency.svg"] {
        let svg = std::fs::read_to_string(out.path().join("charts").join(chart)).unwrap();
        assert!(svg.starts_with("<svg"), "{chart}");
    }
}

#[test]
fn quick_bench_against_apache_rocketmq() {
    integration_tests::require_tools!(Java, Maven);
    let out = tempfile::tempdir().unwrap();
    let results = run_driver(
        out.path(),
        &["--system", "rocketmq", "--scenario", "async-1k"],
    );
    let r = &results.runs[0];
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.system, "rocketmq");
    // The JVM sheds load while it warms up (SYSTEM_BUSY); the run must still store messages.
    assert!(r.metrics["tps"] > 0.0, "{:?}", r.metrics);
    assert!(r.metrics["cpu_master_s_per_m"] > 0.0, "{:?}", r.metrics);
    assert!(
        r.metrics["rss_idle_master_mib"] > 50.0,
        "a JVM: {:?}",
        r.metrics
    );
}
