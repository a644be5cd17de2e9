//! The gRPC part of BENCHMARKS.md (issue 17): how the figures are taken, the issue's targets
//! judged on them, and the two gRPC scenarios' tables.

use std::fmt::Write as _;

use super::super::scenario::{Scenario, Workload, all};
use super::{Goal, Results, scenario_section};
use crate::stats::fmt_num;

/// Whether `sc` is one of the gRPC scenarios (they have their own section).
#[must_use]
pub fn is_grpc(sc: &Scenario) -> bool {
    matches!(
        sc.workload,
        Workload::GrpcSend { .. } | Workload::GrpcConsume
    )
}

/// A goal from a pair of medians, or "not measured" without them.
fn goal(what: String, values: Option<(f64, String)>, ok: impl Fn(f64) -> bool) -> Goal {
    match values {
        Some((v, measured)) => Goal {
            what,
            measured,
            met: Some(ok(v)),
        },
        None => Goal {
            what,
            measured: "not measured".to_owned(),
            met: None,
        },
    }
}

/// The targets of issue 17, judged on the medians.
#[must_use]
pub fn goals(r: &Results) -> Vec<Goal> {
    let s = |sc: &str, m: &str| r.median(sc, "sluice", m);
    let j = |sc: &str, m: &str| r.median(sc, "rocketmq", m);
    let ratio = |a: f64, b: f64, unit: &str| {
        (
            a / b,
            format!("{} vs {} {unit} = {:.2}×", fmt_num(a), fmt_num(b), a / b),
        )
    };
    vec![
        goal(
            "gRPC send 1 KiB ≥ 3× Apache's proxy in local mode, messages/s".to_owned(),
            s("grpc-send-1k", "tps")
                .zip(j("grpc-send-1k", "tps"))
                .map(|(a, b)| ratio(a, b, "msg/s")),
            |x| x >= 3.0,
        ),
        goal(
            "gRPC receive + ack ≥ 2× Apache's, messages/s".to_owned(),
            s("grpc-receive-ack", "consume_tps")
                .zip(j("grpc-receive-ack", "consume_tps"))
                .map(|(a, b)| ratio(a, b, "msg/s")),
            |x| x >= 2.0,
        ),
        goal(
            "gRPC send p99 ≤ Apache's / 3".to_owned(),
            s("grpc-send-1k", "p99_ms")
                .zip(j("grpc-send-1k", "p99_ms"))
                .map(|(a, b)| {
                    (
                        b / a,
                        format!(
                            "{} vs {} ms: Apache's is {:.2}× ours",
                            fmt_num(a),
                            fmt_num(b),
                            b / a
                        ),
                    )
                }),
            |x| x >= 3.0,
        ),
        goal(
            "the proxy adds ≤ 20% broker CPU per message over a remoting send (sluice)".to_owned(),
            s("grpc-send-1k", "cpu_master_s_per_m")
                .zip(s("async-1k", "cpu_master_s_per_m"))
                .map(|(a, b)| {
                    (
                        a / b,
                        format!(
                            "{} vs {} CPU s / million msgs (`async-1k`) = +{:.0}%",
                            fmt_num(a),
                            fmt_num(b),
                            (a / b - 1.0) * 100.0
                        ),
                    )
                }),
            |x| x <= 1.2,
        ),
    ]
}

/// The "gRPC" section: how, the targets, the tables, the hand-written notes.
pub(super) fn section(md: &mut String, r: &Results, notes: Option<&str>) {
    if !r.runs.iter().any(|run| {
        all()
            .iter()
            .any(|sc| sc.name == run.scenario && is_grpc(sc))
    }) {
        return;
    }
    md.push_str("## gRPC, the proxy in the broker (issue 17)\n\n");
    md.push_str(
        "RocketMQ 5's gRPC protocol served from inside the broker process on both systems \
         (local mode): sluice's `mqbroker` with `enableGrpcProxy=true`, Apache's broker run by \
         `ProxyStartup -pm local` (what Apache's `mqbroker --enable-proxy` starts), so each \
         system's broker CPU includes its proxy. The load generator is `mqbench grpc-producer` / \
         `grpc-consumer` (tools/src/mqbench/grpc.rs), one tonic client speaking \
         `apache.rocketmq.v2` as the SDKs do (telemetry settings first, the SDK headers), with \
         no SDK batching or retries:\n\n\
         - `grpc-send-1k`: one message per SendMessage call, 16 tasks × 16 calls in flight over \
         2 HTTP/2 connections (the `async-1k` remoting load); latency is the call's round trip.\n\
         - `grpc-receive-ack`: a backlog written over remoting, then 8 consumers each \
         ReceiveMessage (32 a call) and AckMessage per message until every message is acked, \
         a warm-up group first.\n\n",
    );
    md.push_str(
        "```sh\n\
         cargo run --release -p integration-tests --bin bench -- \\\n    \
         --scenario async-1k,grpc-send-1k,grpc-receive-ack --repeat 3 --store-root /dev/shm \\\n    \
         --merge docs/bench/results.json\n\
         ```\n\n",
    );
    md.push_str("| target | measured (medians) | |\n|---|---|---|\n");
    for g in goals(r) {
        let verdict = match g.met {
            Some(true) => "**met**",
            Some(false) => "**missed**",
            None => "not measured",
        };
        let _ = writeln!(md, "| {} | {} | {verdict} |", g.what, g.measured);
    }
    md.push('\n');
    for sc in all().iter().filter(|sc| is_grpc(sc)) {
        scenario_section(md, r, sc);
    }
    if let Some(notes) = notes {
        md.push_str(notes.trim_end());
        md.push_str("\n\n");
    }
}
