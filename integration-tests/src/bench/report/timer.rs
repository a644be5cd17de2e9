//! The timer-message part of BENCHMARKS.md (issue 14): how the figures are taken, the
//! issue's targets judged on them, and the two scenarios' tables.

use std::fmt::Write as _;

use super::super::scenario::{Scenario, Workload, all};
use super::{Goal, Results, Row, row, scenario_section};
use crate::stats::{fmt_count, fmt_num};

/// Whether `sc` is one of the timer scenarios (they have their own section).
#[must_use]
pub fn is_timer(sc: &Scenario) -> bool {
    matches!(
        sc.workload,
        Workload::TimerLateness | Workload::TimerPending
    )
}

/// The rows of the timer scenarios' tables.
pub(super) fn rows(workload: &Workload) -> Vec<Row> {
    match workload {
        Workload::TimerLateness => vec![
            row("timer_sent", "timers sent"),
            row("timer_send_tps", "timer sends / s"),
            row("timer_sent_after_due", "sent after their due time"),
            row("timer_received", "timers received"),
            row("timer_missing", "missing (sent, never received)"),
            row("timer_duplicates", "received twice"),
            row("timer_early", "received before their due time"),
            row(
                "timer_broker_early",
                "stored (delivered) before their due time",
            ),
            row(
                "timer_late_p50_ms",
                "lateness p50 ms (consumer receipt − due)",
            ),
            row("timer_late_p90_ms", "lateness p90 ms"),
            row("timer_late_p99_ms", "lateness p99 ms"),
            row("timer_late_p999_ms", "lateness p99.9 ms"),
            row("timer_late_max_ms", "lateness max ms"),
            row(
                "timer_broker_p50_ms",
                "broker's part p50 ms (store timestamp − due, whole ms)",
            ),
            row("timer_broker_p99_ms", "broker's part p99 ms"),
            row("timer_broker_max_ms", "broker's part max ms"),
            row(
                "cpu_master_s_per_m",
                "broker CPU s / million timers (send to last receipt)",
            ),
            row("rss_peak_master_mib", "broker RssAnon peak MiB"),
            row(
                "other_cpu_mean_pct",
                "other work on the machine meanwhile, mean CPU % (of 200)",
            ),
            row("other_cpu_max_pct", "… its busiest second, CPU %"),
        ],
        Workload::TimerPending => vec![
            row("pending_sent", "timers sent (parked, enqueue stopped)"),
            row("pending_send_tps", "timer sends / s"),
            row(
                "send_cpu_master_s_per_m",
                "send: broker CPU s / million timers",
            ),
            row(
                "enqueue_rate",
                "enqueue into the wheel, timers / s (clean restart, enqueue on)",
            ),
            row(
                "enqueue_caught_up_secs",
                "restart → all timers in the wheel, s",
            ),
            row("enqueue_answer_secs", "restart → first answered request, s"),
            row("mem_idle_anon_mib", "broker RssAnon idle (empty store) MiB"),
            row(
                "mem_enqueued_anon_mib",
                "broker RssAnon with all timers in the wheel MiB",
            ),
            row(
                "enqueue_rss_peak_mib",
                "broker RssAnon peak while enqueuing MiB",
            ),
            row("mem_growth_anon_mib", "RssAnon growth MiB"),
            row("mem_idle_vmrss_mib", "broker VmRSS idle MiB"),
            row(
                "mem_enqueued_vmrss_mib",
                "broker VmRSS with all timers in the wheel MiB",
            ),
            row("mem_growth_vmrss_mib", "VmRSS growth MiB"),
            row(
                "mem_enqueued_commitlog_mib",
                "… of it resident commit log MiB",
            ),
            row(
                "mem_enqueued_timerfiles_mib",
                "… resident timerlog + timerwheel MiB",
            ),
            row(
                "mem_enqueued_timerqueue_mib",
                "… resident rmq_sys_wheel_timer consume queue MiB",
            ),
            row(
                "pending_lead_at_kill_secs",
                "first due time, s after the kill -9",
            ),
            row(
                "recovery_answer_secs",
                "kill -9 → restarted broker answers, s",
            ),
            row("recovery_boot_secs", "kill -9 → `boot success` logged, s"),
            row(
                "recovery_caught_up_secs",
                "kill -9 → all timers in the wheel again, s",
            ),
            row("pending_received", "timers received when due"),
            row("pending_missing", "missing"),
            row("pending_duplicates", "received twice"),
            row("pending_early", "received before their due time"),
            row(
                "pending_broker_early",
                "stored (delivered) before their due time",
            ),
            row("pending_late_p50_ms", "lateness p50 ms"),
            row("pending_late_p99_ms", "lateness p99 ms"),
            row("pending_late_max_ms", "lateness max ms"),
        ],
        _ => Vec::new(),
    }
}
/// The sum of `metrics` over every successful run of `system` in `scenarios`, and how many
/// runs there were.
fn total(r: &Results, system: &str, scenarios: &[&str], metrics: &[&str]) -> (f64, usize) {
    let runs: Vec<_> = r
        .runs
        .iter()
        .filter(|run| run.ok && run.system == system && scenarios.contains(&run.scenario.as_str()))
        .collect();
    let sum = runs
        .iter()
        .flat_map(|run| metrics.iter().filter_map(|m| run.metrics.get(*m)))
        .sum();
    (sum, runs.len())
}

/// The targets of issue 14, judged on sluice's medians (RocketMQ's alongside).
#[must_use]
pub fn goals(r: &Results) -> Vec<Goal> {
    let s = |sc: &str, m: &str| r.median(sc, "sluice", m);
    let j = |sc: &str, m: &str| r.median(sc, "rocketmq", m);
    let vs = |sc: &str, m: &str, unit: &str| {
        s(sc, m).map(|a| {
            let other = j(sc, m).map_or(String::new(), |b| {
                format!(" (RocketMQ 5.3.3: {} {unit})", fmt_num(b))
            });
            (a, format!("{} {unit}{other}", fmt_num(a)))
        })
    };
    let mut out = Vec::new();
    let mut goal = |what: &str, values: Option<(f64, String)>, ok: &dyn Fn(f64) -> bool| {
        out.push(match values {
            Some((v, measured)) => Goal {
                what: what.to_owned(),
                measured,
                met: Some(ok(v)),
            },
            None => Goal {
                what: what.to_owned(),
                measured: "not measured".to_owned(),
                met: None,
            },
        });
    };
    goal(
        "Lateness p50 ≤ 2 ms (100k timers due over 60 s, at the consumer)",
        vs("timer-lateness", "timer_late_p50_ms", "ms"),
        &|x| x <= 2.0,
    );
    goal(
        "Lateness p99 ≤ 10 ms (same run)",
        vs("timer-lateness", "timer_late_p99_ms", "ms"),
        &|x| x <= 10.0,
    );
    let early = [
        "timer_early",
        "timer_broker_early",
        "pending_early",
        "pending_broker_early",
    ];
    let scenarios = ["timer-lateness", "timer-1m"];
    let (sluice_early, runs) = total(r, "sluice", &scenarios, &early);
    let (apache_early, apache_runs) = total(r, "rocketmq", &scenarios, &early);
    goal(
        "Never early: 0 timers received or stored before their due time, every timer run",
        (runs > 0).then(|| {
            (
                sluice_early,
                format!(
                    "{} in {runs} run(s){}",
                    fmt_count(sluice_early),
                    if apache_runs > 0 {
                        format!(
                            " (RocketMQ 5.3.3: {} in {apache_runs})",
                            fmt_count(apache_early)
                        )
                    } else {
                        String::new()
                    }
                ),
            )
        }),
        &|x| x == 0.0,
    );
    goal(
        "1M pending: enqueue into the wheel ≥ 50k timers/s",
        vs("timer-1m", "enqueue_rate", "timers/s"),
        &|x| x >= 50_000.0,
    );
    let apache = |m: &str, unit: &str| {
        j("timer-1m", m).map_or(String::new(), |b| {
            format!("; RocketMQ 5.3.3: +{} {unit}", fmt_num(b))
        })
    };
    goal(
        "1M pending: broker RSS growth ≤ 64 MiB — anonymous memory (RssAnon: what the broker allocates)",
        s("timer-1m", "mem_growth_anon_mib").map(|anon| {
            let files = s("timer-1m", "mem_enqueued_timerfiles_mib").unwrap_or(0.0);
            let queue = s("timer-1m", "mem_enqueued_timerqueue_mib").unwrap_or(0.0);
            (
                anon,
                format!(
                    "+{} MiB (the timer log and wheel are mapped files: {} MiB of them resident, and {} MiB of the rmq_sys_wheel_timer queue{})",
                    fmt_num(anon),
                    fmt_num(files),
                    fmt_num(queue),
                    apache("mem_growth_anon_mib", "MiB RssAnon")
                ),
            )
        }),
        &|x| x <= 64.0,
    );
    goal(
        "1M pending: broker RSS growth ≤ 64 MiB — VmRSS (every resident page it maps, the commit log's included)",
        s("timer-1m", "mem_growth_vmrss_mib").map(|v| {
            (
                v,
                format!(
                    "+{} MiB, of which {} MiB resident commit log{}",
                    fmt_num(v),
                    fmt_num(s("timer-1m", "mem_enqueued_commitlog_mib").unwrap_or(0.0)),
                    apache("mem_growth_vmrss_mib", "MiB VmRSS")
                ),
            )
        }),
        &|x| x <= 64.0,
    );
    goal(
        "1M pending: recovery after kill -9 ≤ 2 s (restart to the first answered request)",
        vs("timer-1m", "recovery_answer_secs", "s"),
        &|x| x <= 2.0,
    );
    let lost = s("timer-1m", "pending_missing").map(|missing| {
        let received = s("timer-1m", "pending_received").unwrap_or(0.0);
        let sent = s("timer-1m", "pending_sent").unwrap_or(0.0);
        (
            missing + (sent - received).max(0.0),
            format!(
                "{} of {} received when due, {} missing",
                fmt_count(received),
                fmt_count(sent),
                fmt_count(missing)
            ),
        )
    });
    goal("1M pending: none lost across the kill -9", lost, &|x| {
        x == 0.0
    });
    out
}

/// The "Timer messages" section: how, the targets, the tables, the hand-written notes.
pub(super) fn section(md: &mut String, r: &Results, notes: Option<&str>) {
    if !r.runs.iter().any(|run| scenario_is_timer(&run.scenario)) {
        return;
    }
    md.push_str("## Timer messages (issue 14)\n\n");
    md.push_str(
        "Timer messages (5.x `TIMER_DELIVER_MS`) through `mqbench timer` and `mqbench timer-watch` \
         (tools/src/mqbench/timer.rs), the same load on both systems, `timerWheelEnable=true` on both and \
         every other timer setting at each system's default (RocketMQ's `timerPrecisionMs` is 1000 ms: \
         it delivers a timer in the second after the one it is due in).\n\n\
         - **Lateness** is the consumer's receive time minus the message's due time (the \
         `TIMER_DELIVER_MS` it was sent with, also stamped in its body), both read from this host's \
         clock. It is what a consumer sees: the broker's delivery into the real topic, the dispatch to \
         its consume queue and the wake-up of a long-polling pull (one pull loop per queue, 15 s \
         suspend, as `mqbench consumer`). The broker's part alone is the delivered message's store \
         timestamp minus the due time (whole milliseconds). *Early* counts receipts before the due \
         time (to the microsecond), *stored early* deliveries stored before it; *missing* and \
         *received twice* are counted by the index each body carries.\n\
         - **1M pending** parks the timers with the broker's enqueue stopped (`timerStopEnqueue=true`), \
         restarts it cleanly with the enqueue on and times the enqueue alone with `mqbench timer-watch` \
         (GET_TIMER_CHECK_POINT's enqueued offset against the max offset of `rmq_sys_wheel_timer` \
         queue 0, every 10 ms; RocketMQ refreshes the checkpoint it answers with once a second, so its \
         rate is good to about a second of its duration). Memory is the broker's `/proc/PID/status` \
         (RssAnon, VmRSS) and its `smaps` per mapped file, idle on the empty store against all timers \
         in the wheel. Then kill -9 and a restart on the same store: the time to the first answered \
         request and to `boot success` in its log; last, every timer is received when due.\n\
         - The machine has **2 vCPUs shared with other work** (builds and tests of other sessions), so \
         tails move with that work: the rows *other work on the machine meanwhile* (the machine's busy \
         time less the cluster's and `mqbench`'s, once a second) and the load average say how much \
         there was. The load generator runs on the same cores.\n\n",
    );
    md.push_str(
        "```sh\n\
         cargo run --release -p integration-tests --bin bench -- --scenario timer-lateness --repeat 5 --merge docs/bench/results.json\n\
         cargo run --release -p integration-tests --bin bench -- --scenario timer-1m --merge docs/bench/results.json   # once: ~17 min\n\
         # by hand, against a running name server + broker (topic TimerBench with 8 queues):\n\
         mqbench timer -n 127.0.0.1:9876 -t TimerBench --messages 100000 --window 60s --lead 15s --threads 8 --inflight 16 --size 64\n\
         mqbench timer -n 127.0.0.1:9876 -t TimerBench --send-only --messages 1000000 --window 120s --lead 360s --size 64   # broker: timerStopEnqueue=true\n\
         mqbench timer-watch -n 127.0.0.1:9876 --broker 127.0.0.1:10911 --expect 1000000 --interval 10ms                # restarted with it false\n\
         mqbench timer -n 127.0.0.1:9876 -t TimerBench --receive-only --run-id ID --last-due-ms MS --messages 1000000 --grace 120s\n\
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
    for sc in all().iter().filter(|sc| is_timer(sc)) {
        scenario_section(md, r, sc);
    }
    if let Some(notes) = notes {
        md.push_str(notes.trim_end());
        md.push_str("\n\n");
    }
}

fn scenario_is_timer(name: &str) -> bool {
    all().iter().any(|sc| sc.name == name && is_timer(sc))
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
            measured: Some("2026-12-01T19:00:00Z, sluice `abc`".to_owned()),
        }
    }

    fn results(runs: Vec<RunResult>) -> Results {
        Results {
            started: "2026-11-29T20:47:37Z".to_owned(),
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
    fn targets_are_judged_on_sluice_and_early_counts_any_run() {
        let r = results(vec![
            run(
                "timer-lateness",
                "sluice",
                &[("timer_late_p50_ms", 1.2), ("timer_late_p99_ms", 12.0)],
            ),
            run(
                "timer-lateness",
                "rocketmq",
                &[("timer_late_p50_ms", 570.0), ("timer_early", 3.0)],
            ),
            run(
                "timer-1m",
                "sluice",
                &[("enqueue_rate", 900_000.0), ("pending_broker_early", 1.0)],
            ),
        ]);
        let g = goals(&r);
        let verdict = |prefix: &str| {
            g.iter()
                .find(|g| g.what.starts_with(prefix))
                .map(|g| (g.met, g.measured.clone()))
                .unwrap()
        };
        assert_eq!(verdict("Lateness p50").0, Some(true));
        assert!(verdict("Lateness p50").1.contains("RocketMQ 5.3.3: 570 ms"));
        assert_eq!(verdict("Lateness p99").0, Some(false));
        let early = verdict("Never early");
        assert_eq!(early.0, Some(false), "{early:?}");
        assert!(early.1.contains("RocketMQ 5.3.3: 3 in 1"), "{early:?}");
        assert_eq!(verdict("1M pending: enqueue").0, Some(true));
        assert_eq!(verdict("1M pending: recovery").0, None);
        let mut md = String::new();
        section(&mut md, &r, Some("hand-written"));
        assert!(md.starts_with("## Timer messages (issue 14)"));
        assert!(md.contains("### `timer-lateness`") && md.contains("### `timer-1m`"));
        assert!(md.contains("Measured in a later run than the rest of this page"));
        assert!(md.trim_end().ends_with("hand-written"));
        let mut none = String::new();
        section(&mut none, &results(Vec::new()), None);
        assert!(none.is_empty());
    }
}
