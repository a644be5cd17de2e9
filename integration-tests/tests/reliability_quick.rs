//! The reliability driver in `--quick` mode, so it cannot rot: every scenario against sluice
//! (real processes, the official Java client, a few faults each), then the figures every
//! scenario must have produced and the safety figures that must hold whatever else the page
//! says: no acknowledged message lost under SYNC_FLUSH kill -9 nor across SYNC_MASTER slave
//! kills and failovers, no corrupt message served anywhere, and for POP across kill -9 no
//! message of the backlog left unacked and none delivered again after a successful ack. The
//! long run is by hand (RELIABILITY.md; its POP duplicate ratio is judged there).
#![allow(clippy::unwrap_used, reason = "test: a failed step should fail loudly")]

use integration_tests::spawn::GatedCommand;
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
        Kind::PopKill9 => &[
            "sent",
            "acked",
            "lost",
            "duplicated",
            "duplicated_pct",
            "redelivered_after_ack",
            "corrupt",
            "unknown",
            "kills",
            "kills_while_consuming",
            "consumed_per_s",
            "errors",
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
        Kind::PopKill9 => &["kill_to_serving_ms", "kill_to_listening_ms"],
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
        .gated_output()
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
        if sc.kind == Kind::PopKill9 {
            let m = &r.metrics;
            assert_eq!(
                m["lost"], 0.0,
                "{}: messages of the backlog never acked: {:?}",
                sc.name, r.notes
            );
            assert_eq!(m["acked"], m["sent"], "{}: every message acked", sc.name);
            assert_eq!(
                m["redelivered_after_ack"], 0.0,
                "{}: delivered again after a successful ack: {:?}",
                sc.name, r.notes
            );
            assert_eq!(m["unknown"], 0.0, "{}: not in the backlog", sc.name);
            assert!(
                m["kills_while_consuming"] >= 1.0,
                "{}: no kill came while the backlog was consumed: {:?}",
                sc.name,
                m
            );
            // The ratio is the long run's verdict; a quick run must still show its figure.
            assert!(m["duplicated_pct"] >= 0.0);
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
