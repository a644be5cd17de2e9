//! The POP consumption part of BENCHMARKS.md (issue 16): how the figures are taken, the
//! issue's targets judged on them, and the three consumption scenarios' tables.

use std::fmt::Write as _;

use super::super::scenario::{POP_BATCH, POP_CONSUMERS, Scenario, Workload, all};
use super::{Goal, Results, Row, row, scenario_section};
use crate::stats::{fmt_count, fmt_num};

/// Whether `sc` is one of the consumption scenarios (they have their own section).
#[must_use]
pub fn is_pop(sc: &Scenario) -> bool {
    matches!(
        sc.workload,
        Workload::PullConsume | Workload::PopConsume { .. }
    )
}

/// The rows of the consumption scenarios' tables.
pub(super) fn rows(workload: &Workload) -> Vec<Row> {
    let common = [
        row("backlog_messages", "backlog messages (1 KiB)"),
        row("fill_tps", "fill messages/s (batches of 16)"),
        row("consume_tps", "consumed messages/s"),
        row("consume_secs", "consumption seconds"),
        row(
            "passes",
            "passes over the backlog (a fresh group each, until ≥ the measured time)",
        ),
        row("delivered", "messages delivered"),
    ];
    let tail = [
        row(
            "cpu_master_s_per_m",
            "broker CPU s / million msgs (consumption)",
        ),
        row("cpu_master_pct", "broker CPU % (of one core)"),
        row("cpu_loadgen_s_per_m", "load generator CPU s / million msgs"),
        row("disk_write_master_mb_s", "broker disk writes MiB/s"),
        row("rss_peak_master_mib", "broker RssAnon peak MiB"),
    ];
    let mut rows: Vec<Row> = common.into_iter().collect();
    if matches!(workload, Workload::PopConsume { .. }) {
        rows.extend([
            row("redelivered_acked", "redelivered after a successful ack"),
            row("redelivered", "redelivered (any)"),
            row("missing", "never delivered"),
            row("per_pop", "messages per pop that found some"),
            row("ack_requests", "ack requests"),
            row("pop_p50_ms", "pop round trip p50 ms"),
            row("pop_p99_ms", "pop round trip p99 ms"),
            row("ack_p50_ms", "ack round trip p50 ms"),
            row("ack_p99_ms", "ack round trip p99 ms"),
        ]);
    }
    rows.extend(tail);
    if matches!(workload, Workload::PopConsume { .. }) {
        rows.extend([
            row(
                "linger_cpu_master_s",
                "linger: broker CPU s after the last ack (revive of the checkpoints and acks)",
            ),
            row(
                "linger_disk_write_master_mb_s",
                "linger: broker disk writes MiB/s",
            ),
        ]);
    }
    rows
}

/// The sum of `metric` over every successful run of `system` in `scenarios`, and how many
/// runs there were.
fn total(r: &Results, system: &str, scenarios: &[&str], metric: &str) -> (f64, usize) {
    let runs: Vec<_> = r
        .runs
        .iter()
        .filter(|run| run.ok && run.system == system && scenarios.contains(&run.scenario.as_str()))
        .collect();
    let sum = runs.iter().filter_map(|run| run.metrics.get(metric)).sum();
    (sum, runs.len())
}

/// The targets of issue 16, judged on the medians.
#[must_use]
pub fn goals(r: &Results) -> Vec<Goal> {
    let s = |sc: &str| r.median(sc, "sluice", "consume_tps");
    let j = |sc: &str| r.median(sc, "rocketmq", "consume_tps");
    let mut out = Vec::new();
    let mut goal = |what: String, values: Option<(f64, String)>, ok: &dyn Fn(f64) -> bool| {
        out.push(match values {
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
        });
    };
    for (sc, how) in [
        ("pop-consume", "one ACK_MESSAGE per message"),
        ("pop-consume-batch-ack", "one BATCH_ACK_MESSAGE per pop"),
    ] {
        let apache = j(sc)
            .zip(j("pull-consume"))
            .map_or(String::new(), |(a, b)| {
                format!(
                    " (RocketMQ 5.3.3: {} vs {} = {:.0}%)",
                    fmt_num(a),
                    fmt_num(b),
                    a / b * 100.0
                )
            });
        goal(
            format!("POP ({how}) ≥ 80% of PULL consume messages/s, same backlog"),
            s(sc).zip(s("pull-consume")).map(|(a, b)| {
                (
                    a / b,
                    format!(
                        "{} vs {} msg/s = {:.0}%{apache}",
                        fmt_num(a),
                        fmt_num(b),
                        a / b * 100.0
                    ),
                )
            }),
            &|x| x >= 0.8,
        );
        goal(
            format!("POP ({how}) ≥ 2× RocketMQ 5.3.3's POP messages/s"),
            s(sc).zip(j(sc)).map(|(a, b)| {
                (
                    a / b,
                    format!("{} vs {} msg/s = {:.2}×", fmt_num(a), fmt_num(b), a / b),
                )
            }),
            &|x| x >= 2.0,
        );
    }
    let pops = ["pop-consume", "pop-consume-batch-ack"];
    let (again, runs) = total(r, "sluice", &pops, "redelivered_acked");
    let (any, _) = total(r, "sluice", &pops, "redelivered");
    let (apache_again, apache_runs) = total(r, "rocketmq", &pops, "redelivered_acked");
    let backlog = r.median("pop-consume", "sluice", "backlog_messages");
    goal(
        format!(
            "0 redeliveries of acked messages in a {} message run without faults, every POP run",
            backlog.map_or("1 M".to_owned(), fmt_count)
        ),
        (runs > 0).then(|| {
            (
                again,
                format!(
                    "{} in {runs} run(s), {} redeliveries in all{}",
                    fmt_count(again),
                    fmt_count(any),
                    if apache_runs > 0 {
                        format!(
                            " (RocketMQ 5.3.3: {} in {apache_runs})",
                            fmt_count(apache_again)
                        )
                    } else {
                        String::new()
                    }
                ),
            )
        }),
        &|x| x == 0.0,
    );
    out
}

/// The "POP consumption" section: how, the targets, the tables, the hand-written notes.
pub(super) fn section(md: &mut String, r: &Results, notes: Option<&str>) {
    if !r
        .runs
        .iter()
        .any(|run| all().iter().any(|sc| sc.name == run.scenario && is_pop(sc)))
    {
        return;
    }
    md.push_str("## POP consumption (issue 16)\n\n");
    let _ = write!(
        md,
        "RocketMQ 5 POP consumption against PULL on the same backlog, both systems alike \
         (`timerWheelEnable=true`, every POP setting at each system's default). Each run writes a \
         fresh backlog of 1 KiB messages to a topic of 8 queues, then consumes all of it once:\n\n\
         - **PULL** (`pull-consume`): `mqbench consumer --catch-up --pull-batch {POP_BATCH}`, one \
         long-polling pull loop per queue (8 pulls in flight), no offset commits.\n\
         - **POP** (`pop-consume`, `pop-consume-batch-ack`): {POP_CONSUMERS} consumers in the \
         driver's process (integration-tests/src/bench/pop_load.rs, over one connection), each \
         popping the whole topic (queue −1, `maxMsgNums` {POP_BATCH}) and \
         acking every message before its next pop: one ACK_MESSAGE per message, all of a pop's \
         in flight at once (as the Java push consumer's consume threads and the proxy send \
         them), or one BATCH_ACK_MESSAGE per pop.\n\
         - Each run first warms up with the same load (a group of its own), then consumes the \
         whole backlog with a fresh group, and again with another while the consumption so \
         far is shorter than the measured time (up to 20 passes; sluice pulls a million \
         messages in about a second). *Consumed messages/s* is the messages of all passes over \
         the sum of their times, a POP pass timed from its first pop to the answer of the ack \
         of its last message. The warm-up's checkpoints come due during the measured passes: \
         the revive work of earlier pops runs beside the pops, as it does in a steady state.\n\
         - Every POP delivery is counted by `UNIQ_KEY`; after the last pass every pass's \
         consumers keep popping for the invisible time plus 15 s (the *linger*), so an \
         acked message handed out again would be counted. The linger's broker CPU is the rest \
         of the deferred cost of the acks: the timer delivering the checkpoints and acks into \
         the revive queues and the revive service reading them.\n\
         - Broker CPU per million messages is over the measured passes; the load generator's is \
         `mqbench`'s for PULL and the driver's own for POP. The machine has **2 vCPUs shared \
         with other work** (the load average before each run is in the tables); load generator \
         and broker share them. Warm-up, measured time, invisible time and linger are on \
         each table's settings line.\n\n"
    );
    md.push_str(
        "```sh\n\
         cargo run --release -p integration-tests --bin bench -- \\\n    \
         --scenario pull-consume,pop-consume,pop-consume-batch-ack --repeat 3 --store-root /dev/shm \\\n    \
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
    for sc in all().iter().filter(|sc| is_pop(sc)) {
        scenario_section(md, r, sc);
    }
    if let Some(notes) = notes {
        md.push_str(notes.trim_end());
        md.push_str("\n\n");
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::bench::scenario::{Plan, RunResult};

    fn run(scenario: &str, system: &str, metrics: &[(&str, f64)]) -> RunResult {
        RunResult {
            scenario: scenario.to_owned(),
            system: system.to_owned(),
            repeat: 1,
            ok: true,
            error: None,
            metrics: metrics.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
            errors_by_kind: BTreeMap::new(),
            params: BTreeMap::new(),
            wall_secs: 1.0,
            measured: None,
        }
    }

    fn results(runs: Vec<RunResult>) -> Results {
        Results {
            started: "2026-12-01T00:00:00Z".to_owned(),
            duration_secs: 0.0,
            plan: Plan::quick(1),
            systems: vec!["sluice".to_owned(), "rocketmq".to_owned()],
            machine: crate::machine::Machine::default(),
            disk: crate::bench::machine::DiskCeiling::default(),
            settings: BTreeMap::new(),
            runs,
            criterion: Vec::new(),
        }
    }

    #[test]
    fn targets_are_judged_on_the_medians_and_redeliveries_on_every_run() {
        let r = results(vec![
            run("pull-consume", "sluice", &[("consume_tps", 100_000.0)]),
            run(
                "pop-consume",
                "sluice",
                &[("consume_tps", 70_000.0), ("backlog_messages", 1e6)],
            ),
            run(
                "pop-consume-batch-ack",
                "sluice",
                &[("consume_tps", 90_000.0), ("redelivered_acked", 2.0)],
            ),
            run("pop-consume", "rocketmq", &[("consume_tps", 30_000.0)]),
            run("pull-consume", "rocketmq", &[("consume_tps", 60_000.0)]),
        ]);
        let g = goals(&r);
        let verdict = |prefix: &str| {
            g.iter()
                .find(|g| g.what.starts_with(prefix))
                .map(|g| (g.met, g.measured.clone()))
                .unwrap_or((None, String::new()))
        };
        let single = verdict("POP (one ACK_MESSAGE per message) ≥ 80%");
        assert_eq!(single.0, Some(false), "{single:?}");
        assert!(
            single
                .1
                .contains("RocketMQ 5.3.3: 30\u{202f}000 vs 60\u{202f}000 = 50%"),
            "{single:?}"
        );
        assert_eq!(
            verdict("POP (one BATCH_ACK_MESSAGE per pop) ≥ 80%").0,
            Some(true)
        );
        assert_eq!(
            verdict("POP (one ACK_MESSAGE per message) ≥ 2×").0,
            Some(true)
        );
        assert_eq!(verdict("POP (one BATCH_ACK_MESSAGE per pop) ≥ 2×").0, None);
        let again = verdict("0 redeliveries");
        assert_eq!(again.0, Some(false), "{again:?}");
        assert!(
            g.iter()
                .any(|g| g.what.contains("1\u{202f}000\u{202f}000 message run"))
        );
        let mut md = String::new();
        section(&mut md, &r, Some("by hand"));
        assert!(md.starts_with("## POP consumption (issue 16)"));
        assert!(md.contains("### `pop-consume`") && md.contains("### `pull-consume`"));
        assert!(md.trim_end().ends_with("by hand"));
        let mut none = String::new();
        section(&mut none, &results(Vec::new()), None);
        assert!(none.is_empty());
    }
}
