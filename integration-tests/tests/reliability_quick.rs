//! The reliability driver in `--quick` mode, so it cannot rot: every scenario against sluice
//! (real processes, the official Java client, a few faults each), then the figures every
//! scenario must have produced and the safety figures that must hold whatever else the page
//! says: no acknowledged message lost under SYNC_FLUSH kill -9 nor across SYNC_MASTER slave
//! kills and failovers, no corrupt message served anywhere. The long run is by hand
//! (RELIABILITY.md).
#![allow(clippy::unwrap_used, reason = "test: a failed step should fail loudly")]

use std::process::Command;

use integration_tests::reliability::report::{self, Results};
use integration_tests::reliability::scenario::{self, Kind};

/// Figures each scenario must have produced.
fn required(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Kill9 => &["acked", "lost", "duplicated", "corrupt", "kills"],
        Kind::SlaveKill => &[
            "acked",
            "lost",
            "stored_not_ok",
            "corrupt",
            "slave_identical",
        ],
        Kind::Failover { .. } => &["acked", "lost", "duplicated", "corrupt", "slave_identical"],
        Kind::DiskFull => &[
            "acked",
            "lost",
            "corrupt",
            "refused_steadily",
            "log_lines_per_s_refusing_max_load",
            "recovered",
        ],
        Kind::Flood => &[
            "acked",
            "lost",
            "broker_accepted",
            "namesrv_accepted",
            "broker_handshakes_done_ms",
            "broker_rss_with_mib",
            "producer_p99_ms_broker",
        ],
    }
}

/// Per-fault figures each scenario must have produced, one per fault.
fn required_events(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Kill9 => &["kill_to_serving_ms", "kill_to_first_send_ok_ms"],
        Kind::SlaveKill => &["restart_to_caught_up_ms", "restart_to_first_send_ok_ms"],
        Kind::Failover { .. } => &[
            "switch_to_first_write_ms",
            "switch_to_first_send_ok_ms",
            "catch_up_ms",
        ],
        Kind::DiskFull | Kind::Flood => &[],
    }
}

#[test]
fn quick_reliability_run_of_every_scenario() {
    integration_tests::require_tools!(Java, Maven);
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_reliability"))
        .args(["--quick", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let results = Results::load(&out.path().join("results.json"))
        .unwrap_or_else(|e| panic!("{e}\n{stderr}\n{stdout}"));
    for sc in scenario::all() {
        let runs = results.runs_of(sc.name);
        assert_eq!(runs.len(), 1, "{}: one run", sc.name);
        let r = runs[0];
        if let Some(why) = &r.skipped {
            // Only a scenario that needs root may be skipped, and only for lack of it.
            assert!(
                sc.kind == Kind::DiskFull && why.starts_with("permission"),
                "{} skipped: {why}",
                sc.name
            );
            continue;
        }
        assert!(r.ok, "{}: {:?}\n{stderr}", sc.name, r.error);
        for m in required(sc.kind) {
            assert!(
                r.metrics.contains_key(*m),
                "{}: no {m}: {:?}",
                sc.name,
                r.metrics
            );
        }
        for e in required_events(sc.kind) {
            let n = r.events.get(*e).map_or(0, Vec::len);
            assert_eq!(
                n,
                results.plan.events(sc.kind) as usize,
                "{}: {e} once per fault: {:?}",
                sc.name,
                r.events
            );
        }
        assert!(
            r.metrics["acked"] > 0.0,
            "{}: nothing acknowledged",
            sc.name
        );
        assert_eq!(
            r.metrics["corrupt"], 0.0,
            "{}: corrupt served: {:?}",
            sc.name, r.notes
        );
        let durable = matches!(
            sc.kind,
            Kind::Kill9 | Kind::SlaveKill | Kind::Failover { sync: true }
        );
        if durable {
            assert_eq!(
                r.metrics["lost"], 0.0,
                "{}: acknowledged messages lost: {:?}",
                sc.name, r.notes
            );
        }
        assert!(!r.command.is_empty(), "{}: a command", sc.name);
    }
    assert!(
        output.status.success(),
        "{}\n{stderr}\n{stdout}",
        output.status
    );
    let md = std::fs::read_to_string(out.path().join("RELIABILITY.md")).unwrap();
    assert!(md.contains("## Summary"), "{md}");
    assert!(md.contains("## How to read these numbers"), "{md}");
    for sc in scenario::all() {
        assert!(
            md.contains(&format!("### `{}`", sc.name)),
            "{}: {md}",
            sc.name
        );
        assert!(
            md.contains(&format!("--scenario {}", sc.name)),
            "{}: its command",
            sc.name
        );
        // The verdict is rendered, whatever it is.
        assert!(!report::verdict(&results, &sc).is_empty());
    }
    assert!(md.contains("| date |"), "the page says when");
    assert!(md.contains("sluice build"), "the page says which commit");
}
