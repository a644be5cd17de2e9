//! The reliability results (the JSON written after every run), the invariants each scenario
//! is judged by, and RELIABILITY.md.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::scenario::{Kind, Plan, RunResult, Scenario, all};
use super::{conn_flood, disk_full, failover, kill_loop, pop_kill, slave_kill};
use crate::machine::Machine;
use crate::stats::{Stat, fmt_count, fmt_num, fmt_stat};

/// Everything one invocation of the driver measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    /// When it started (UTC, RFC 3339).
    pub started: String,
    /// Wall time so far.
    pub duration_secs: f64,
    /// Sizes.
    pub plan: Plan,
    /// The machine.
    pub machine: Machine,
    /// Settings worth recording (build, clients, limits).
    pub settings: BTreeMap<String, String>,
    /// Every run.
    pub runs: Vec<RunResult>,
}

impl Results {
    /// Writes the results as pretty JSON (atomically).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        let tmp = path.with_extension("json.tmp");
        fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Reads results written by [`save`](Self::save).
    ///
    /// # Errors
    /// The file cannot be read or parsed.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The runs of `scenario`.
    #[must_use]
    pub fn runs_of(&self, scenario: &str) -> Vec<&RunResult> {
        self.runs
            .iter()
            .filter(|r| r.scenario == scenario)
            .collect()
    }

    /// The sum of `metric` over the successful runs of `scenario` (`None`: no run has it).
    #[must_use]
    pub fn total(&self, scenario: &str, metric: &str) -> Option<f64> {
        let v: Vec<f64> = self
            .runs_of(scenario)
            .into_iter()
            .filter(|r| r.ok)
            .filter_map(|r| r.metrics.get(metric).copied())
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    }

    /// Median and range of `metric` over the successful runs of `scenario`.
    #[must_use]
    pub fn over_runs(&self, scenario: &str, metric: &str) -> Option<Stat> {
        let v: Vec<f64> = self
            .runs_of(scenario)
            .into_iter()
            .filter(|r| r.ok)
            .filter_map(|r| r.metrics.get(metric).copied())
            .collect();
        Stat::of(&v)
    }

    /// Median and range of the per-fault figure `event` over every fault of every successful
    /// run of `scenario`.
    #[must_use]
    pub fn over_events(&self, scenario: &str, event: &str) -> Option<Stat> {
        let v: Vec<f64> = self
            .runs_of(scenario)
            .into_iter()
            .filter(|r| r.ok)
            .filter_map(|r| r.events.get(event))
            .flatten()
            .copied()
            .collect();
        Stat::of(&v)
    }
}

// ---------------------------------------------------------------- invariants

/// One invariant of a scenario, judged on all its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// What must hold.
    pub what: &'static str,
    /// What was measured.
    pub measured: String,
    /// Whether it held (`None`: not measured).
    pub held: Option<bool>,
}

fn zero(r: &Results, sc: &str, metric: &str, what: &'static str) -> Check {
    let v = r.total(sc, metric);
    Check {
        what,
        measured: v.map_or_else(|| "not measured".to_owned(), fmt_count),
        held: v.map(|v| v == 0.0),
    }
}

/// Every successful run has `metric` = 1.
fn all_true(r: &Results, sc: &str, metric: &str, what: &'static str) -> Check {
    let v: Vec<f64> = r
        .runs_of(sc)
        .into_iter()
        .filter(|x| x.ok)
        .filter_map(|x| x.metrics.get(metric).copied())
        .collect();
    let yes = v.iter().filter(|x| **x == 1.0).count();
    Check {
        what,
        measured: if v.is_empty() {
            "not measured".to_owned()
        } else {
            format!("{yes} of {} run(s)", v.len())
        },
        held: (!v.is_empty()).then_some(yes == v.len()),
    }
}

/// The sum of `metrics` is 0.
fn zero_sum(r: &Results, sc: &str, metrics: &[&str], what: &'static str) -> Check {
    let v: Vec<f64> = metrics.iter().filter_map(|m| r.total(sc, m)).collect();
    let sum: f64 = v.iter().sum();
    Check {
        what,
        measured: if v.is_empty() {
            "not measured".to_owned()
        } else {
            fmt_count(sum)
        },
        held: (!v.is_empty()).then_some(sum == 0.0),
    }
}

/// Both processes accepted every connection of their flood (within the accept timeout).
fn accepted_all(r: &Results, sc: &str) -> Check {
    let runs: Vec<&RunResult> = r.runs_of(sc).into_iter().filter(|x| x.ok).collect();
    let mut short = Vec::new();
    for run in &runs {
        let want = run.metrics.get("connections").copied().unwrap_or(0.0);
        for label in ["broker", "namesrv"] {
            let got = run
                .metrics
                .get(&format!("{label}_accepted"))
                .copied()
                .unwrap_or(0.0);
            if got < want {
                short.push(format!("{label} {} of {}", fmt_count(got), fmt_count(want)));
            }
        }
    }
    Check {
        what: "the broker and the name server accepted every connection (within 60 s)",
        measured: if runs.is_empty() {
            "not measured".to_owned()
        } else if short.is_empty() {
            "all".to_owned()
        } else {
            short.join(", ")
        },
        held: (!runs.is_empty()).then_some(short.is_empty()),
    }
}

/// Issue 16's bound on POP duplicates across kill -9: 0.1 % of the backlog.
pub const POP_DUPLICATES_MAX_PCT: f64 = 0.1;

/// Duplicates (`duplicated` over `sent`, summed over the runs) within
/// [`POP_DUPLICATES_MAX_PCT`]; judged on long runs only (a quick run's few kills over a small
/// backlog say nothing about a ratio).
fn duplicates_within(r: &Results, sc: &str) -> Check {
    let what = "duplicates ≤ 0.1 % of the backlog (issue 16's target; long runs)";
    let (Some(dup), Some(sent)) = (r.total(sc, "duplicated"), r.total(sc, "sent")) else {
        return Check {
            what,
            measured: "not measured".to_owned(),
            held: None,
        };
    };
    let pct = dup * 100.0 / sent.max(1.0);
    let mut measured = format!("{} of {} = {pct:.3} %", fmt_count(dup), fmt_count(sent));
    if r.plan.quick {
        measured.push_str(" (quick run: not judged)");
    }
    Check {
        what,
        measured,
        held: (!r.plan.quick).then_some(pct <= POP_DUPLICATES_MAX_PCT),
    }
}

/// What each scenario must show. Timings are figures, not invariants.
#[must_use]
pub fn checks(r: &Results, sc: &Scenario) -> Vec<Check> {
    let n = sc.name;
    let mut v = Vec::new();
    let lost = zero(r, n, "lost", "0 acknowledged (SEND_OK) messages lost");
    match sc.kind {
        Kind::Kill9 => {
            v.push(lost);
            v.push(zero(r, n, "corrupt", "0 corrupt messages served"));
            v.push(zero(
                r,
                n,
                "unknown",
                "0 messages served that were never sent",
            ));
            v.push(zero(
                r,
                n,
                "log_panics_broker",
                "no panic in the broker's log",
            ));
        }
        Kind::SlaveKill => {
            v.push(lost);
            v.push(zero(r, n, "corrupt", "0 corrupt messages served"));
            v.push(zero(
                r,
                n,
                "unknown",
                "0 messages served that were never sent",
            ));
            v.push(zero(
                r,
                n,
                "send_ok_while_slave_down",
                "no SEND_OK while the slave was down",
            ));
            v.push(all_true(
                r,
                n,
                "slave_identical",
                "slave's CommitLog byte-identical to the master's at the end",
            ));
            v.push(zero_sum(
                r,
                n,
                &["log_panics_master", "log_panics_slave"],
                "no panic in the brokers' logs",
            ));
        }
        Kind::Failover { sync } => {
            if sync {
                v.push(lost);
            }
            v.push(zero(r, n, "corrupt", "0 corrupt messages served"));
            v.push(zero(
                r,
                n,
                "unknown",
                "0 messages served that were never sent",
            ));
            v.push(all_true(
                r,
                n,
                "slave_identical",
                "old master's CommitLog byte-identical to the new master's at the end",
            ));
            v.push(zero(
                r,
                n,
                "cut_elsewhere_than_promotion_point",
                "every demotion cut the old master at the promotion point",
            ));
            v.push(zero_sum(
                r,
                n,
                &["log_panics_a", "log_panics_b"],
                "no panic in the brokers' logs",
            ));
        }
        Kind::DiskFull => {
            v.push(lost);
            v.push(zero(r, n, "corrupt", "0 corrupt messages served"));
            v.push(all_true(
                r,
                n,
                "refused_steadily",
                "the full broker refuses sends (no SEND_OK for 3 s)",
            ));
            v.push(all_true(
                r,
                n,
                "broker_running_at_end",
                "the broker did not crash",
            ));
            v.push(all_true(
                r,
                n,
                "reads_served_when_full",
                "reads served while full (a drain of every queue)",
            ));
            v.push(all_true(
                r,
                n,
                "recovered",
                "SEND_OK again once there is room (within 60 s)",
            ));
        }
        Kind::PopKill9 => {
            v.push(zero(
                r,
                n,
                "fill_send_ok_not_stored",
                "every SEND_OK of the fill read back before the kills",
            ));
            v.push(zero(
                r,
                n,
                "lost",
                "0 messages of the backlog never acked (lost)",
            ));
            v.push(zero(
                r,
                n,
                "redelivered_after_ack",
                "0 deliveries of a message after its ack was answered SUCCESS within its invisible time",
            ));
            v.push(duplicates_within(r, n));
            v.push(zero(
                r,
                n,
                "corrupt",
                "0 deliveries with another body than the one stored",
            ));
            v.push(zero(
                r,
                n,
                "unknown",
                "0 messages delivered that were not in the backlog",
            ));
            v.push(all_true(
                r,
                n,
                "broker_running_at_end",
                "the broker did not crash",
            ));
            v.push(zero(
                r,
                n,
                "log_panics_broker",
                "no panic in the broker's log",
            ));
        }
        Kind::Flood => {
            v.push(lost);
            v.push(zero(r, n, "corrupt", "0 corrupt messages served"));
            v.push(zero_sum(
                r,
                n,
                &["broker_connect_failed", "namesrv_connect_failed"],
                "every flood connect completed (60 s connect timeout)",
            ));
            v.push(accepted_all(r, n));
            v.push(zero_sum(
                r,
                n,
                &["producer_failures_broker", "producer_failures_namesrv"],
                "no send failed during the floods",
            ));
            v.push(all_true(
                r,
                n,
                "broker_recovered",
                "the broker answers a fresh request after the flood",
            ));
            v.push(all_true(
                r,
                n,
                "namesrv_recovered",
                "the name server answers a fresh request after the flood",
            ));
            v.push(all_true(
                r,
                n,
                "broker_running_at_end",
                "the broker did not crash",
            ));
        }
    }
    v
}

/// `pass`, `FAIL (...)`, `skipped (...)`, `not run`, `error (...)`: the verdict on the runs.
#[must_use]
pub fn verdict(r: &Results, sc: &Scenario) -> String {
    let runs = r.runs_of(sc.name);
    if runs.is_empty() {
        return "not run".to_owned();
    }
    if let Some(failed) = runs.iter().find(|x| x.error.is_some()) {
        let first = failed
            .error
            .as_deref()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        return format!("**error**: {}", first.replace('|', "\\|").replace('`', "'"));
    }
    if runs.iter().all(|x| x.skipped.is_some()) {
        return format!(
            "skipped: {}",
            runs[0].skipped.as_deref().unwrap_or("").replace('|', "\\|")
        );
    }
    let failed: Vec<&'static str> = checks(r, sc)
        .into_iter()
        .filter(|c| c.held == Some(false))
        .map(|c| c.what)
        .collect();
    if failed.is_empty() {
        "pass".to_owned()
    } else {
        format!("**FAIL**: {}", failed.join("; "))
    }
}

// ---------------------------------------------------------------- figures

/// Where a figure comes from.
#[derive(Debug, Clone)]
enum Src {
    /// Summed over the runs.
    Sum(String),
    /// Median over the runs.
    Runs(String),
    /// Median over every fault of every run.
    Events(String),
}

struct Row {
    src: Src,
    label: String,
}

fn sum(m: &str, label: &str) -> Row {
    Row {
        src: Src::Sum(m.to_owned()),
        label: label.to_owned(),
    }
}

fn runs(m: &str, label: &str) -> Row {
    Row {
        src: Src::Runs(m.to_owned()),
        label: label.to_owned(),
    }
}

fn events(m: &str, label: &str) -> Row {
    Row {
        src: Src::Events(m.to_owned()),
        label: label.to_owned(),
    }
}

fn books_rows() -> Vec<Row> {
    vec![
        sum("sent", "sends made"),
        sum("acked", "acknowledged (SEND_OK)"),
        sum(
            "stored_not_ok",
            "stored, not OK (FLUSH_*_TIMEOUT / SLAVE_NOT_AVAILABLE)",
        ),
        sum("failed", "sends that threw (after the client's retries)"),
        sum("received", "messages read back"),
        sum("lost", "**acknowledged and not read back (lost)**"),
        sum("lost_not_ok", "stored-not-OK and not read back"),
        sum("duplicated", "duplicates read back"),
        sum(
            "failed_but_stored",
            "threw, but read back (the answer was lost)",
        ),
        sum("corrupt", "**read back with another body (corrupt)**"),
        sum("unknown", "read back, never sent"),
    ]
}

/// The figures of one flood target (`broker` or `namesrv`).
fn flood_rows(prefix: &str, who: &str) -> Vec<Row> {
    let row = |metric: &str, label: &str, summed: bool| {
        let (metric, label) = (format!("{prefix}_{metric}"), format!("{who}: {label}"));
        if summed {
            sum(&metric, &label)
        } else {
            runs(&metric, &label)
        }
    };
    vec![
        row(
            "handshakes_done_ms",
            "every client connect completed after, ms",
            false,
        ),
        row(
            "time_to_accept_all_ms",
            "accepted them all after, ms",
            false,
        ),
        row("accepted", "connections accepted", false),
        row("connect_p50_ms", "connect p50, ms", false),
        row("connect_p99_ms", "connect p99, ms", false),
        row("connect_max_ms", "connect max, ms", false),
        row("connect_failed", "connects failed", true),
        row("rss_before_mib", "RssAnon before, MiB", false),
        row("rss_with_mib", "RssAnon holding the flood, MiB", false),
        row("rss_peak_mib", "RssAnon peak, MiB", false),
        row("rss_after_mib", "RssAnon 3 s after, MiB", false),
        row("open_files_with", "open files holding the flood", false),
        row(
            "still_open_after_hold",
            "connections open at the end of the hold (client's view)",
            false,
        ),
        row("open_files_after", "open files after", false),
        row(
            "fresh_request_ms",
            "a fresh request answered after, ms",
            false,
        ),
    ]
}

fn rows_for(sc: &Scenario) -> Vec<Row> {
    let mut rows = match sc.kind {
        Kind::Kill9 => vec![
            sum("kills", "kill -9 of the broker"),
            events("kill_to_listening_ms", "kill → listening again, ms"),
            events(
                "kill_to_serving_ms",
                "kill → answering requests (recovered), ms",
            ),
            events(
                "kill_to_first_send_ok_ms",
                "kill → first SEND_OK of a send started after the kill (client outage), ms",
            ),
            sum("abnormal_recoveries", "abnormal (crash) recoveries logged"),
            sum(
                "recoveries_truncating",
                "recoveries that cut an invalid CommitLog tail",
            ),
            runs("acked_per_s", "SEND_OK / s over the run"),
        ],
        Kind::SlaveKill => vec![
            sum("kills", "kill -9 of the slave"),
            events(
                "kill_to_first_not_ok_ms",
                "slave kill → first stored-not-OK answer, ms",
            ),
            sum(
                "outage_sends_send_ok_after_slave_back",
                "sends in flight at the kill or made before the restart: held, SEND_OK once the slave was back",
            ),
            sum(
                "outage_sends_not_ok",
                "... answered stored-not-OK (SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT)",
            ),
            sum("outage_sends_failed", "... that threw"),
            events(
                "restart_to_caught_up_ms",
                "slave restart → holds the master's end as of the restart (catch-up), ms",
            ),
            events(
                "restart_to_first_send_ok_ms",
                "slave restart → first SEND_OK, ms",
            ),
            events(
                "longest_send_across_outage_ms",
                "longest of those sends (send → answer), ms",
            ),
            sum(
                "send_ok_while_slave_down",
                "SEND_OK while the slave was down",
            ),
        ],
        Kind::Failover { .. } => vec![
            sum("rounds", "failovers"),
            sum("kill_rounds", "of which kill -9 of the master"),
            events(
                "switch_to_first_send_ok_ms",
                "switch command → first SEND_OK from the new master (RTO), ms",
            ),
            events(
                "switch_to_first_write_ms",
                "switch command → first write stored by the new master, ms",
            ),
            events(
                "kill_switch_to_first_send_ok_ms",
                "kill rounds: switch → first SEND_OK, ms",
            ),
            events(
                "switchover_switch_to_first_send_ok_ms",
                "switchover rounds: switch → first SEND_OK, ms",
            ),
            events(
                "kill_to_first_write_ms",
                "kill → first write stored by the new master (1 s detection included), ms",
            ),
            events("switch_command_ms", "mqadmin switchRole command(s), ms"),
            events(
                "catch_up_ms",
                "old master rejoin → holds the new master's end as of the rejoin (restart included), ms",
            ),
            events(
                "rejoin_to_first_send_ok_ms",
                "old master rejoin → first SEND_OK, ms",
            ),
            events(
                "old_master_tail_bytes",
                "old master's bytes past the promotion point (cut on rejoin)",
            ),
            events("lost_per_round", "acknowledged messages lost per failover"),
            events(
                "kill_lost_per_round",
                "kill rounds: acknowledged messages lost",
            ),
            events(
                "switchover_lost_per_round",
                "switchover rounds: acknowledged messages lost (SEND_OKs of the old master cut at its demotion)",
            ),
            sum(
                "lost_after_last_rejoin",
                "acknowledged after the last rejoin and lost",
            ),
        ],
        Kind::DiskFull => vec![
            runs("tmpfs_mib", "file system size, MiB"),
            runs("fill_secs", "fill → steady refusal, s"),
            events("fill_to_first_refusal_ms", "fill → first refusal, ms"),
            runs(
                "used_pct_when_refusing",
                "file system used when refusing, %",
            ),
            sum("acked_before_refusal", "SEND_OK before the first refusal"),
            sum(
                "acked_while_full",
                "SEND_OK after the first refusal, before room was made",
            ),
            runs("filler_stored", "filler (mqbench) messages stored"),
            runs(
                "log_lines_per_s_refusing_max_load",
                "broker log lines / s while refusing, filler at full speed",
            ),
            runs(
                "log_lines_per_s_refusing_producer_only",
                "broker log lines / s while refusing, Java producer only",
            ),
            runs(
                "log_peak_lines_per_s",
                "broker log lines in the busiest second",
            ),
            runs(
                "log_lines_since_fill",
                "broker log lines from the fill to the end",
            ),
            runs("drained_when_full", "messages read back while full"),
            events(
                "space_freed_to_first_send_ok_ms",
                "room made (remount ×4) → first SEND_OK (recovery), ms",
            ),
            sum(
                "removed_by_expiry",
                "acknowledged, removed by the store's disk-ratio cleanup (not lost)",
            ),
        ],
        Kind::Flood => {
            let mut rows = vec![
                runs("connections", "connections per flood"),
                runs("broker_max_open_files", "broker's RLIMIT_NOFILE"),
            ];
            for (p, who) in [("broker", "broker"), ("namesrv", "name server")] {
                rows.extend(flood_rows(p, who));
            }
            rows.extend([
                runs("producer_p99_ms_baseline", "producer send p99 before, ms"),
                runs(
                    "producer_p99_ms_broker",
                    "producer send p99 during the broker flood, ms",
                ),
                runs(
                    "producer_p99_ms_namesrv",
                    "producer send p99 during the name server flood, ms",
                ),
                sum(
                    "producer_failures_broker",
                    "producer failures during the broker flood",
                ),
                sum(
                    "producer_failures_namesrv",
                    "producer failures during the name server flood",
                ),
            ]);
            rows
        }
        Kind::PopKill9 => vec![
            sum("kills", "kill -9 of the broker"),
            sum(
                "kills_while_consuming",
                "... of which before the last message was acked",
            ),
            events("kill_to_listening_ms", "kill → listening again, ms"),
            events(
                "kill_to_serving_ms",
                "kill → answering requests (recovered), ms",
            ),
            events(
                "kill_to_first_ack_ms",
                "kill → first ack answered SUCCESS (the consumers' outage), ms",
            ),
            runs("fill_secs", "backlog written (mqbench, SYNC_FLUSH), s"),
            sum("fill_send_ok", "SEND_OK of the fill"),
            sum("sent", "messages in the backlog (read back by pulls)"),
            sum(
                "backlog_duplicate_keys",
                "backlog records with a UNIQ_KEY read before",
            ),
            runs(
                "consume_secs",
                "first pop → every message acked once (kills included), s",
            ),
            runs("consumed_per_s", "messages acked / s over that time"),
            sum("acked", "messages acked"),
            sum("lost", "**messages never acked (lost)**"),
            sum("never_delivered", "... of which never delivered"),
            sum(
                "lost_ack_unanswered",
                "... delivered, every ack unanswered (the broker may hold one), never back",
            ),
            sum(
                "lost_ack_refused",
                "... delivered, the ack refused, never back",
            ),
            sum("delivered", "deliveries"),
            sum(
                "duplicated",
                "deliveries after a message's first (duplicates)",
            ),
            runs("duplicated_pct", "duplicates, % of the backlog"),
            sum(
                "redelivered_after_ack",
                "**deliveries after a successful ack**",
            ),
            sum("acked_messages_redelivered", "... distinct messages"),
            sum("corrupt", "**deliveries with another body (corrupt)**"),
            sum("unknown", "messages delivered, not in the backlog"),
            sum("pops", "POP_MESSAGE answered"),
            sum("empty_pops", "... that found nothing"),
            sum("ack_requests", "ACK_MESSAGE sent"),
            runs("pop_p50_ms", "pop round trip p50, ms"),
            runs("pop_p99_ms", "pop round trip p99, ms"),
            runs("ack_p50_ms", "ack round trip p50, ms"),
            runs("ack_p99_ms", "ack round trip p99, ms"),
            sum("errors", "failed requests (by kind in the notes)"),
            sum("abnormal_recoveries", "abnormal (crash) recoveries logged"),
            runs("linger_secs", "linger after the last first ack, s"),
        ],
    };
    if sc.kind != Kind::PopKill9 {
        rows.extend(books_rows());
    }
    rows
}

fn figure(r: &Results, sc: &str, src: &Src) -> Option<String> {
    match src {
        Src::Sum(m) => r.total(sc, m).map(fmt_count),
        Src::Runs(m) => r.over_runs(sc, m).map(|s| fmt_stat(Some(s))),
        Src::Events(m) => r
            .over_events(sc, m)
            .map(|s| format!("{} (n={})", fmt_stat(Some(s)), s.n)),
    }
}

fn median(s: Option<Stat>) -> String {
    s.map_or_else(|| "—".to_owned(), |s| format!("{} ms", fmt_num(s.median)))
}

/// The summary's RTO and catch-up cells.
fn rto_and_catch_up(r: &Results, sc: &Scenario) -> (String, String) {
    let n = sc.name;
    match sc.kind {
        Kind::Kill9 => (
            format!(
                "{} (kill → SEND_OK)",
                median(r.over_events(n, "kill_to_first_send_ok_ms"))
            ),
            "—".to_owned(),
        ),
        Kind::SlaveKill => (
            format!(
                "{} (slave restart → SEND_OK)",
                median(r.over_events(n, "restart_to_first_send_ok_ms"))
            ),
            median(r.over_events(n, "restart_to_caught_up_ms")),
        ),
        Kind::Failover { .. } => (
            format!(
                "{} to SEND_OK, {} to stored",
                median(r.over_events(n, "switch_to_first_send_ok_ms")),
                median(r.over_events(n, "switch_to_first_write_ms"))
            ),
            median(r.over_events(n, "catch_up_ms")),
        ),
        Kind::PopKill9 => (
            format!(
                "{} (kill → ack)",
                median(r.over_events(n, "kill_to_first_ack_ms"))
            ),
            "—".to_owned(),
        ),
        Kind::DiskFull => (
            format!(
                "{} (room → SEND_OK)",
                median(r.over_events(n, "space_freed_to_first_send_ok_ms"))
            ),
            "—".to_owned(),
        ),
        Kind::Flood => {
            let accept = |p: &str| match r.over_runs(n, &format!("{p}_time_to_accept_all_ms")) {
                Some(s) => format!("all in {} ms", fmt_num(s.median)),
                None => format!(
                    "{} of {}",
                    r.over_runs(n, &format!("{p}_accepted"))
                        .map_or_else(|| "—".to_owned(), |s| fmt_count(s.median)),
                    r.over_runs(n, "connections")
                        .map_or_else(|| "—".to_owned(), |s| fmt_count(s.median)),
                ),
            };
            (
                format!(
                    "accepted: broker {}, name server {}",
                    accept("broker"),
                    accept("namesrv")
                ),
                "—".to_owned(),
            )
        }
    }
}

/// What a scenario does, for its section (the plan's sizes filled in).
fn description(sc: &Scenario, plan: &Plan) -> String {
    match sc.kind {
        Kind::Kill9 => format!(
            "One master (`brokerRole=ASYNC_MASTER`, `flushDiskType=SYNC_FLUSH`, no slave). The official Java \
             producer sends continuously ({} in flight, {} B bodies that encode their own index). {} times, at a \
             random moment {}–{} ms after the broker served again, the broker is killed with SIGKILL and started \
             again at once on the same store. At the end every queue is read back with `DrillDrain` and compared \
             with every answer the producer got. SIGKILL is a process crash: the page cache survives it, so this \
             tests recovery and the acknowledgement protocol, not power loss.",
            kill_loop::IN_FLIGHT,
            kill_loop::BODY_SIZE,
            plan.kills,
            kill_loop::GAP_MS.start,
            kill_loop::GAP_MS.end
        ),
        Kind::SlaveKill => format!(
            "A SYNC_MASTER + slave pair, both `flushDiskType=SYNC_FLUSH`. The Java producer sends continuously \
             ({} B bodies) to the master. {} times the slave is killed with SIGKILL, left down {}–{} ms, and \
             restarted on its store; the driver waits until it holds the master's CommitLog end as of the restart. \
             At the end, with the producer stopped, the slave's CommitLog files are compared byte for byte with the \
             master's, and every queue is read back.",
            slave_kill::BODY_SIZE,
            plan.slave_kills,
            slave_kill::DOWN_MS.start,
            slave_kill::DOWN_MS.end
        ),
        Kind::Failover { sync } => format!(
            "A name server and a master/slave pair, {}. The Java producer (rocketmq-client {}, sync sends, 1 s send timeout, 2 \
             retries, routes refreshed every second) sends continuously. {} failovers one after the other on the same \
             pair, alternately: (kill) the master is killed with SIGKILL, after {} ms (an operator noticing) \
             `mqadmin switchRole -r MASTER` promotes the slave, {} ms later the old master is restarted on its store \
             as the new master's slave; (switchover) `switchRole -r MASTER` on the slave, then `switchRole -r SLAVE -m \
             <new master>` on the live master. Each time the old master must follow and catch up before the next \
             round, so both brokers are master in turn. At the end the last old master's CommitLog is compared with \
             the last master's and every queue is read back from it.{}",
            if sync {
                "SYNC_MASTER (+ SYNC_FLUSH)"
            } else {
                "ASYNC_MASTER"
            },
            failover::client(sync),
            plan.failovers,
            crate::drill::DETECTION.as_millis(),
            crate::drill::ALONE.as_millis(),
            if sync {
                ""
            } else {
                " With ASYNC_MASTER a SEND_OK does not wait for the slave: what it had not received when the master \
                 died is lost when the old master rejoins (its tail is cut to the promotion point); the loss is \
                 reported, bounded by the replication lag at the kill. A switchover loses nothing: the promotion \
                 fences the live old master first (it stops acknowledging and the slave catches up with it), so the \
                 demotion has nothing to cut."
            }
        ),
        Kind::DiskFull => format!(
            "The broker's whole store (`storePathRootDir`) on a tmpfs of {} MiB, 16 MiB CommitLog files, every \
             disk setting at its default (`diskMaxUsedSpaceRatio=75`, forced cleanup above 85 %, puts refused above \
             90 %). `mqbench producer {}` fills it at full speed (mqbench is our load generator, not a standard \
             client: here it is only the load) while the Java producer sends {} B checked messages alongside. Once \
             no SEND_OK has come for 3 s: the broker's log rate is measured for 5 s with the filler still running \
             and 5 s with the Java producer alone, every queue of the Java producer's topic is read back (reads \
             while full), then the file system is grown to {} MiB with `mount -o remount,size=..` and the time to \
             the next SEND_OK is the recovery. Needs root (to mount); skipped otherwise.",
            plan.disk_mib,
            disk_full::FILLER.join(" "),
            disk_full::BODY_SIZE,
            plan.disk_mib * 4
        ),
        Kind::PopKill9 => format!(
            "One master (`brokerRole=ASYNC_MASTER`, `flushDiskType=SYNC_FLUSH`, no slave, the POP settings at their \
             defaults): a popped batch's checkpoint stays in memory while it may be acked soon (`enablePopBufferMerge`), \
             with a line of the offset journal from which a restart writes it back; the pop offset passes a batch once \
             it is acked or its checkpoint is durable, and an ack is answered once the offset passed its batch or its \
             record is durable. A topic of {} queues gets a backlog of {} \
             messages of {} B, written by `mqbench producer {}` (our load generator, not a standard client: here \
             only the fill) and read back once by pulls: every message's `UNIQ_KEY` and body are the books' \
             *backlog*. Then {} POP consumers in the driver's process (integration-tests/src/bench/pop_load.rs, one \
             connection) pop (queue −1, {} at a time, invisible time {} ms) and ack every message with one \
             ACK_MESSAGE, {}. A pop that fails (the broker down, its connection cut, a timeout) is counted and \
             tried again on a new connection; an ack that fails so is counted and sent again {} s later until it \
             is answered, as the 5.x SDKs' push consumers do (an ack answered SUCCESS only after the receipt's \
             invisible time is *late*: the message may have been revived meanwhile). {} the broker is killed \
             with SIGKILL {} ms after it served again and started at once on the same store. After the kills the \
             consumers go on until every message has been acked once, then {} s longer (the invisible time + {} \
             s), so an ack or a checkpoint the broker lost would come back. Deliveries are counted per `UNIQ_KEY`: \
             *lost* = never acked; *duplicates* = deliveries after a message's first (a message popped before a \
             kill whose ack did not get through comes back after its invisible time, which POP allows); a delivery \
             after an ack answered SUCCESS within the receipt's invisible time is one the broker had promised away.",
            pop_kill::QUEUES,
            crate::stats::fmt_count(plan.pop_messages as f64),
            pop_kill::BODY_SIZE,
            pop_kill::FILLER.join(" "),
            pop_kill::CONSUMERS,
            pop_kill::BATCH,
            plan.pop_invisible_ms,
            if plan.pop_rate > 0 {
                format!(
                    "all of a pop's at once, at most {} messages/s in all (a pop's messages held un-acked until the \
                     pace allows, as a consumer busy with them would: the consumption lasts across the kills)",
                    plan.pop_rate
                )
            } else {
                "all of a pop's at once, as fast as they can".to_owned()
            },
            crate::bench::pop_load::ACK_RETRY_DELAY.as_secs(),
            if plan.pop_kills == 0 {
                "For as long as the consumption lasts,".to_owned()
            } else {
                format!("{} times,", plan.pop_kills)
            },
            plan.pop_kill_gap_ms,
            (u64::try_from(plan.pop_invisible_ms).unwrap_or(0) / 1000)
                + pop_kill::LINGER_SLACK.as_secs(),
            pop_kill::LINGER_SLACK.as_secs(),
        ),
        Kind::Flood => format!(
            "A name server and one master. The Java producer sends {} B messages, one at a time, {} ms apart, on \
             its own connection. Then {} TCP connections are opened to the broker's main port ({} handshakes in \
             flight at once, 60 s connect timeout each), held {} s and closed; {} s later the same on the name \
             server's port. A connect completes on the client once the kernel has the handshake — with a full \
             accept queue, even while the server still holds it half-open — so *accepted* is counted on the \
             server: its open files (`/proc/PID/fd`) grown by the number of connections. Memory is `RssAnon` \
             (`/proc/PID/status`), sampled every 200 ms for the peak.",
            conn_flood::BODY_SIZE,
            conn_flood::INTERVAL_MS,
            plan.flood_connections,
            conn_flood::IN_FLIGHT,
            plan.flood_hold_secs,
            3
        ),
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// RELIABILITY.md.
#[must_use]
#[allow(clippy::too_many_lines, reason = "the page, top to bottom")]
pub fn markdown(r: &Results) -> String {
    let mut md = String::new();
    md.push_str("# Reliability: what sluice acknowledges, and what it keeps\n\n");
    md.push_str(
        "This page is for operators. Each scenario below does to a running sluice cluster what happens in \
         production — the broker process killed in the middle of writes, a slave dying under a SYNC_MASTER, \
         masters failing over and coming back, the disk filling up, a storm of connections — while the official \
         Apache RocketMQ Java client sends, and records every answer the client got. Afterwards every queue is \
         read back with the same client and compared with those answers. The counts come from the client, \
         not from the broker: *acknowledged* means the client got SEND_OK; *lost* means acknowledged and not \
         there when read back. The POP scenario (`pop-kill9`) is the consumer's side: a backlog consumed by POP \
         while the broker is killed, every delivery and every ack answer counted per message. Every figure has \
         the command that reproduces it. Apache RocketMQ has never \
         published such numbers for itself; these are sluice's, measured on the machine below.\n\n",
    );
    let _ = writeln!(
        md,
        "Generated by the reliability driver (`integration-tests/src/reliability.rs`) from a run started {} \
         ({}, {} repeat(s) of each scenario, {:.0} min in all; raw figures in `docs/reliability/results.json` for \
         the page at the repository root, in `<out>/results.json` for any other). Regenerate with:\n",
        r.started,
        if r.plan.quick {
            "**quick mode**"
        } else {
            "long mode"
        },
        r.plan.repeat,
        r.duration_secs / 60.0
    );
    md.push_str(
        "```sh\ncargo run --release -p integration-tests --bin reliability                # long mode, writes this file\n\
         cargo run --release -p integration-tests --bin reliability -- --quick     # a few minutes (CI), results under target/reliability/\n\
         cargo run --release -p integration-tests --bin reliability -- --scenario kill9-sync-flush --repeat 3\n\
         cargo run --release -p integration-tests --bin reliability -- --render docs/reliability/results.json\n```\n\n",
    );

    // Summary.
    md.push_str("## Summary\n\n");
    md.push_str(
        "| scenario | faults | acknowledged | lost | duplicated | corrupt served | RTO (median) | catch-up (median) | verdict |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for sc in all() {
        let runs = r.runs_of(sc.name);
        if runs.is_empty() {
            continue;
        }
        let n = sc.name;
        let num = |m: &str| r.total(n, m).map_or_else(|| "—".to_owned(), fmt_count);
        let faults = if sc.kind == Kind::PopKill9 {
            num("kills")
        } else {
            (runs.iter().filter(|x| x.ok).count() as u32 * r.plan.events(sc.kind)).to_string()
        };
        let mut duplicated = num("duplicated");
        if let (Kind::PopKill9, Some(d), Some(s)) =
            (sc.kind, r.total(n, "duplicated"), r.total(n, "sent"))
        {
            let _ = write!(duplicated, " ({:.3} %)", d * 100.0 / s.max(1.0));
        }
        let (rto, catch_up) = rto_and_catch_up(r, &sc);
        let mut lost = num("lost");
        if let Some(e) = r.total(n, "removed_by_expiry").filter(|e| *e > 0.0) {
            let _ = write!(lost, " (+{} removed by expiry)", fmt_count(e));
        }
        let _ = writeln!(
            md,
            "| [`{n}`](#{n}) | {} | {} | {lost} | {duplicated} | {} | {} | {} | {} |",
            if matches!(sc.kind, Kind::DiskFull | Kind::Flood) {
                runs.iter().filter(|x| x.ok).count().to_string()
            } else {
                faults
            },
            num("acked"),
            num("corrupt"),
            cell(&rto),
            cell(&catch_up),
            cell(&verdict(r, &sc)),
        );
    }
    md.push('\n');

    // Machine.
    let m = &r.machine;
    md.push_str("## Machine and build\n\n| | |\n|---|---|\n");
    let _ = writeln!(md, "| date | {} |", r.started);
    let _ = writeln!(md, "| CPU | {} × {} |", m.cpus, m.cpu_model);
    let _ = writeln!(
        md,
        "| memory | {} MiB ({} MiB available at the start) |",
        m.memory_mib, m.memory_available_mib
    );
    let _ = writeln!(md, "| kernel | {} |", m.kernel);
    let _ = writeln!(
        md,
        "| disk (temp dirs, stores) | `{}` — {} |",
        m.disk, m.disk_device
    );
    let _ = writeln!(md, "| load average at the start | {} |", m.loadavg);
    let _ = writeln!(md, "| Java | {} |", m.java);
    let _ = writeln!(md, "| Rust | {} |", m.rustc);
    for (k, v) in &r.settings {
        let _ = writeln!(md, "| {k} | {} |", cell(v));
    }
    md.push('\n');
    md.push_str(
        "Every process runs on 127.0.0.1 with reserved ports; every broker has `brokerIP1=127.0.0.1` and \
         `bindAddress=127.0.0.1`, its store in a fresh temp dir, 16 MiB CommitLog files, and otherwise \
         `deploy/broker.toml` (RocketMQ's defaults). The machine is shared with other work, so times vary; \
         counts do not.\n\n",
    );

    // Scenarios.
    md.push_str("## Scenarios\n\n");
    for sc in all() {
        let runs = r.runs_of(sc.name);
        if runs.is_empty() {
            continue;
        }
        let _ = writeln!(
            md,
            "<a id=\"{}\"></a>\n### `{}` — {}\n",
            sc.name, sc.name, sc.title
        );
        let _ = writeln!(md, "{}\n", description(&sc, &r.plan));
        let _ = writeln!(md, "**Verdict:** {}\n", verdict(r, &sc));
        let checks = checks(r, &sc);
        md.push_str("| must hold | measured | |\n|---|---|---|\n");
        for c in &checks {
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                c.what,
                cell(&c.measured),
                match c.held {
                    Some(true) => "held",
                    Some(false) => "**broken**",
                    None if c.measured == "not measured" => "not measured",
                    None => "not judged",
                }
            );
        }
        md.push('\n');
        md.push_str(
            "| figure | value: total, or median (min–max) over the faults (n) / runs |\n|---|---|\n",
        );
        for row in rows_for(&sc) {
            if let Some(v) = figure(r, sc.name, &row.src) {
                let _ = writeln!(md, "| {} | {v} |", row.label);
            }
        }
        md.push('\n');
        for run in &runs {
            let _ = writeln!(
                md,
                "Run {} ({:.0} s){}: `{}`\n",
                run.repeat,
                run.wall_secs,
                if let Some(s) = &run.skipped {
                    format!(", skipped ({})", cell(s))
                } else if let Some(e) = &run.error {
                    format!(
                        ", **failed**: {}",
                        cell(e.lines().next().unwrap_or("")).replace('`', "'")
                    )
                } else {
                    String::new()
                },
                run.command
            );
            if !run.notes.is_empty() {
                for (k, v) in &run.notes {
                    let _ = writeln!(md, "- {k}: {}", cell(v).replace('`', "'"));
                }
                md.push('\n');
            }
        }
    }

    md.push_str(
        "## How to read these numbers\n\n\
         - **Acknowledged** = the client got `SEND_OK`: the broker stored the message as durably as its role \
         requires — flushed to disk before the answer under `SYNC_FLUSH`, held by the slave before the answer \
         under `SYNC_MASTER`. `FLUSH_DISK_TIMEOUT`, `FLUSH_SLAVE_TIMEOUT` and `SLAVE_NOT_AVAILABLE` are *stored, \
         not OK*: on the master, without the promised durability (the Java client returns them as results, not \
         errors, and does not retry them). A send that threw is *failed*: its message may exist anyway (the answer \
         was lost), which is how duplicates happen.\n\
         - **Lost** = acknowledged and not read back. It must be 0 wherever the role promises durability \
         (SYNC_FLUSH across crashes, SYNC_MASTER across failovers). Under ASYNC_MASTER a failover loses what the \
         slave had not yet received; that is the role's contract, the count shows its size.\n\
         - **Duplicated** = read back more than once: a send retried by the client after its answer was lost \
         (RocketMQ is at-least-once; consumers de-duplicate by message key). Not a fault.\n\
         - **POP** (`pop-kill9`): *acknowledged* = messages of the backlog whose ACK_MESSAGE was answered \
         SUCCESS, *lost* = never acked by the end, *duplicated* = deliveries after a message's first. POP is \
         at-least-once too: a message popped before a kill whose ack did not get through comes back after its \
         invisible time. A delivery after an ack answered SUCCESS is counted apart: sluice answers an ack once \
         its record is durable, so that one must be 0.\n\
         - **Corrupt served** = read back with a body other than the one sent. Every body encodes its index, so \
         every byte is checked. Must be 0, always.\n\
         - **Removed by expiry** (disk full) = acknowledged, then deleted by the store's own disk-ratio cleanup \
         (RocketMQ's retention: above `diskSpaceCleanForciblyRatio` the oldest CommitLog files go, consumed or \
         not). Counted apart from lost.\n\
         - **RTO** = time until a standard client's write is acknowledged again, measured from the client's own \
         answers: from the switch command for failovers (SEND_OK, and the first write stored at all — a promoted \
         SYNC_MASTER answers SLAVE_NOT_AVAILABLE until the old master rejoins as its slave), from the kill for the \
         kill loop, from the room made for disk full; for POP, from the kill until the first ack answered \
         SUCCESS.\n\
         - **Catch-up** = a restarted slave (or a rejoining old master) from its restart until it holds what its \
         master had at that moment.\n\
         - Timings are medians with min–max over every fault of every run; on a shared 2-core machine read the \
         ranges. The verdict judges only what must hold, never a timing.\n",
    );
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results() -> Results {
        let mut run = RunResult {
            scenario: "kill9-sync-flush".to_owned(),
            repeat: 1,
            ok: true,
            command: "cargo run ...".to_owned(),
            ..RunResult::default()
        };
        for (k, v) in [
            ("acked", 100.0),
            ("lost", 0.0),
            ("corrupt", 0.0),
            ("unknown", 0.0),
            ("duplicated", 2.0),
            ("log_panics_broker", 0.0),
        ] {
            run.metric(k, v);
        }
        run.event("kill_to_first_send_ok_ms", 300.0);
        run.event("kill_to_first_send_ok_ms", 500.0);
        let mut bad = run.clone();
        bad.scenario = "slave-kill-sync-master".to_owned();
        bad.metric("lost", 3.0);
        Results {
            started: "2026-01-01T00:00:00Z".to_owned(),
            duration_secs: 60.0,
            plan: Plan::quick(1, 1),
            machine: Machine::default(),
            settings: BTreeMap::new(),
            runs: vec![run, bad],
        }
    }

    fn pop_run(duplicated: f64, lost: f64, after_ack: f64) -> RunResult {
        let mut run = RunResult {
            scenario: "pop-kill9".to_owned(),
            repeat: 1,
            ok: true,
            command: "cargo run ... --scenario pop-kill9".to_owned(),
            ..RunResult::default()
        };
        for (k, v) in [
            ("sent", 1_000_000.0),
            ("acked", 1_000_000.0 - lost),
            ("lost", lost),
            ("duplicated", duplicated),
            ("redelivered_after_ack", after_ack),
            ("corrupt", 0.0),
            ("unknown", 0.0),
            ("fill_send_ok_not_stored", 0.0),
            ("broker_running_at_end", 1.0),
            ("log_panics_broker", 0.0),
            ("kills", 12.0),
        ] {
            run.metric(k, v);
        }
        run.event("kill_to_first_ack_ms", 250.0);
        run
    }

    #[test]
    fn judges_pop_duplicates_on_long_runs_only() {
        let pop = all()
            .into_iter()
            .find(|s| s.kind == Kind::PopKill9)
            .unwrap();
        let mut r = results();
        r.plan = Plan::long(1, 1);
        r.runs = vec![pop_run(900.0, 0.0, 0.0)];
        assert_eq!(verdict(&r, &pop), "pass");
        r.runs = vec![pop_run(1_001.0, 0.0, 0.0)];
        let v = verdict(&r, &pop);
        assert!(v.contains("duplicates ≤ 0.1 %"), "{v}");
        r.runs = vec![pop_run(0.0, 3.0, 0.0)];
        assert!(verdict(&r, &pop).contains("lost"));
        r.runs = vec![pop_run(0.0, 0.0, 32.0)];
        assert!(verdict(&r, &pop).contains("after its ack"));
        // A quick run reports the ratio and does not judge it.
        r.plan = Plan::quick(1, 1);
        r.runs = vec![pop_run(50_000.0, 0.0, 0.0)];
        assert_eq!(verdict(&r, &pop), "pass");
        let md = markdown(&r);
        let row = "| [`pop-kill9`](#pop-kill9) | 12 | 1\u{202f}000\u{202f}000 | 0 | 50\u{202f}000 (5.000 %) | 0 \
                   | 250 ms (kill → ack) | — | pass |";
        assert!(md.contains(row), "{md}");
        assert!(
            md.contains("(quick run: not judged) | not judged |"),
            "{md}"
        );
    }

    #[test]
    fn judges_and_renders() {
        let r = results();
        let scs = all();
        assert_eq!(verdict(&r, &scs[0]), "pass");
        let v = verdict(&r, &scs[1]);
        assert!(v.starts_with("**FAIL**") && v.contains("lost"), "{v}");
        assert_eq!(verdict(&r, &scs[4]), "not run");
        assert_eq!(
            r.over_events("kill9-sync-flush", "kill_to_first_send_ok_ms")
                .unwrap()
                .median,
            400.0
        );
        let md = markdown(&r);
        assert!(md.contains("## Summary"), "{md}");
        assert!(
            md.contains("| [`kill9-sync-flush`](#kill9-sync-flush) | 5 | 100 | 0 | 2 | 0 | 400 ms"),
            "{md}"
        );
        assert!(md.contains("### `slave-kill-sync-master`"));
        assert!(md.contains("## How to read these numbers"));
        assert!(!md.contains("### `disk-full`"));
    }
}
