//! The reliability scenarios, the sizes of a run (`--quick` or long), and what a scenario's run
//! works with and yields: its context ([`Ctx`]), every figure into a [`RunResult`]. Running one
//! is [`super::runner`]'s.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::drill::{Books, Produced};
use crate::harness::{BrokerProcess, ChildProcess};

/// Sizes of a whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Whether this is the short mode.
    pub quick: bool,
    /// Repeats of each scenario.
    pub repeat: u32,
    /// Seed of the random kill moments (run `r` of a scenario uses `seed + r`).
    pub seed: u64,
    /// kill -9 of the SYNC_FLUSH broker per run.
    pub kills: u32,
    /// kill -9 of the SYNC_MASTER's slave per run.
    pub slave_kills: u32,
    /// Failovers per run (alternately a kill and a planned switchover).
    pub failovers: u32,
    /// Size of the disk-full scenario's tmpfs, MiB.
    pub disk_mib: u64,
    /// Connections of each flood.
    pub flood_connections: usize,
    /// How long a flood's connections are held, s.
    pub flood_hold_secs: u64,
    /// Messages of the POP kill scenario's backlog.
    #[serde(default)]
    pub pop_messages: u64,
    /// kill -9 during the POP consumption (0: one every gap until the backlog is consumed).
    #[serde(default)]
    pub pop_kills: u32,
    /// Running time between the broker serving again and the next kill, ms.
    #[serde(default)]
    pub pop_kill_gap_ms: u64,
    /// Invisible time of the pops, ms.
    #[serde(default)]
    pub pop_invisible_ms: i64,
    /// Messages per second the POP consumers pop at most (0: as fast as they can), so the
    /// consumption spans the kills.
    #[serde(default)]
    pub pop_rate: u64,
}

impl Plan {
    /// The long mode (by hand; writes RELIABILITY.md).
    #[must_use]
    pub fn long(repeat: u32, seed: u64) -> Self {
        Plan {
            quick: false,
            repeat,
            seed,
            kills: 50,
            slave_kills: 20,
            failovers: 10,
            disk_mib: 256,
            flood_connections: 10_000,
            flood_hold_secs: 5,
            pop_messages: 1_000_000,
            pop_kills: 0,
            pop_kill_gap_ms: 10_000,
            pop_invisible_ms: 10_000,
            // As fast as they can, 8 consumers take 1 M messages in about 15 s here (one
            // kill); at 2 000/s the consumption spans about 50.
            pop_rate: 2_000,
        }
    }

    /// `--quick`: every scenario, a few faults each (CI).
    #[must_use]
    pub fn quick(repeat: u32, seed: u64) -> Self {
        Plan {
            quick: true,
            repeat,
            seed,
            kills: 5,
            slave_kills: 3,
            failovers: 2,
            disk_mib: 128,
            flood_connections: 2_000,
            flood_hold_secs: 2,
            pop_messages: 20_000,
            pop_kills: 3,
            pop_kill_gap_ms: 2_000,
            pop_invisible_ms: 5_000,
            pop_rate: 2_500,
        }
    }

    /// Takes `other`'s sizes of the scenarios of `kind` (a merge of their new runs).
    pub fn take_sizes(&mut self, other: &Plan, kind: Kind) {
        match kind {
            Kind::Kill9 => self.kills = other.kills,
            Kind::SlaveKill => self.slave_kills = other.slave_kills,
            Kind::Failover { .. } => self.failovers = other.failovers,
            Kind::DiskFull => self.disk_mib = other.disk_mib,
            Kind::Flood => {
                self.flood_connections = other.flood_connections;
                self.flood_hold_secs = other.flood_hold_secs;
            }
            Kind::PopKill9 => {
                self.pop_messages = other.pop_messages;
                self.pop_kills = other.pop_kills;
                self.pop_kill_gap_ms = other.pop_kill_gap_ms;
                self.pop_invisible_ms = other.pop_invisible_ms;
                self.pop_rate = other.pop_rate;
            }
        }
    }

    /// How many faults a scenario injects per run under this plan (0 for `pop-kill9` in
    /// long mode: one every gap for as long as the consumption lasts).
    #[must_use]
    pub fn events(&self, kind: Kind) -> u32 {
        match kind {
            Kind::Kill9 => self.kills,
            Kind::PopKill9 => self.pop_kills,
            Kind::SlaveKill => self.slave_kills,
            Kind::Failover { .. } => self.failovers,
            Kind::DiskFull | Kind::Flood => 1,
        }
    }
}

/// What a scenario does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// kill -9 loop of a single SYNC_FLUSH master.
    Kill9,
    /// kill -9 / restart of a SYNC_MASTER's slave.
    SlaveKill,
    /// Failover drills with the old master rejoining.
    Failover {
        /// SYNC_MASTER (else ASYNC_MASTER).
        sync: bool,
    },
    /// A size-limited store file system filled up.
    DiskFull,
    /// Connection floods on the broker's and the name server's ports.
    Flood,
    /// POP consumption of a backlog across kill -9 of its SYNC_FLUSH master.
    PopKill9,
}

/// One scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Key (`kill9-sync-flush`), for `--scenario` and the results.
    pub name: &'static str,
    /// Heading in RELIABILITY.md.
    pub title: &'static str,
    /// What it does.
    pub kind: Kind,
}

/// Every scenario, in report order.
#[must_use]
pub fn all() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "kill9-sync-flush",
            title: "kill -9 loop of a SYNC_FLUSH master",
            kind: Kind::Kill9,
        },
        Scenario {
            name: "slave-kill-sync-master",
            title: "kill -9 / restart of a SYNC_MASTER's slave",
            kind: Kind::SlaveKill,
        },
        Scenario {
            name: "failover-sync-master",
            title: "Failover drills, SYNC_MASTER + SYNC_FLUSH, old master rejoining",
            kind: Kind::Failover { sync: true },
        },
        Scenario {
            name: "failover-async-master",
            title: "Failover drills, ASYNC_MASTER, old master rejoining",
            kind: Kind::Failover { sync: false },
        },
        Scenario {
            name: "disk-full",
            title: "Disk full on a size-limited file system",
            kind: Kind::DiskFull,
        },
        Scenario {
            name: "conn-flood",
            title: "Connection floods on the broker and the name server",
            kind: Kind::Flood,
        },
        Scenario {
            name: "pop-kill9",
            title: "POP consumption across kill -9 of a SYNC_FLUSH master",
            kind: Kind::PopKill9,
        },
    ]
}

/// The result of one run of one scenario.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunResult {
    /// Scenario key.
    pub scenario: String,
    /// 1-based repeat.
    pub repeat: u32,
    /// Whether it ran to the end (a skipped run is not ok).
    pub ok: bool,
    /// Why it did not run ("permission: ..." when the driver may not mount).
    pub skipped: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// Named figures of the run (counts, bytes, booleans as 0/1).
    pub metrics: BTreeMap<String, f64>,
    /// Figures taken once per fault (one value per kill, restart, failover).
    pub events: BTreeMap<String, Vec<f64>>,
    /// Words worth showing (the refusal's response, log lines, versions).
    pub notes: BTreeMap<String, String>,
    /// The command that reproduces this run.
    pub command: String,
    /// Wall time of the whole run.
    pub wall_secs: f64,
}

impl RunResult {
    /// Sets a figure.
    pub fn metric(&mut self, key: &str, value: f64) {
        self.metrics.insert(key.to_owned(), value);
    }

    /// Sets a count.
    #[allow(clippy::cast_precision_loss, reason = "counts of a run")]
    pub fn count(&mut self, key: &str, value: usize) {
        self.metrics.insert(key.to_owned(), value as f64);
    }

    /// Appends one fault's figure.
    pub fn event(&mut self, key: &str, value: f64) {
        self.events.entry(key.to_owned()).or_default().push(value);
    }

    /// Appends one fault's figure (a duration in ms, a byte count), when there is one.
    #[allow(clippy::cast_precision_loss, reason = "figures for display")]
    pub fn event_opt(&mut self, key: &str, value: Option<u64>) {
        if let Some(v) = value {
            self.event(key, v as f64);
        }
    }

    /// Sets a note.
    pub fn note(&mut self, key: &str, value: impl Into<String>) {
        self.notes.insert(key.to_owned(), value.into());
    }

    /// Records which standard client produced, and how (the `producer` note).
    pub fn note_producer(&mut self, client_version: &str, options: &crate::drill::ProducerOptions) {
        self.note(
            "producer",
            format!(
                "DrillProducer (rocketmq-client {client_version}) {}",
                options.args().join(" ")
            ),
        );
    }

    /// Records the books of a producer against a drain (the summary's columns).
    pub fn books(&mut self, books: &Books, produced: &Produced) {
        self.count("sent", books.sent);
        self.count("acked", books.acked);
        self.count("stored_not_ok", books.stored_not_ok);
        self.count("failed", books.failed);
        self.count("received", books.received);
        self.count("lost", books.lost.len());
        self.count("lost_not_ok", books.lost_not_ok);
        self.count("duplicated", books.duplicates);
        self.count("failed_but_stored", books.failed_but_stored);
        self.count("unknown", books.unknown.len());
        self.count("corrupt", books.corrupt.len());
        self.count("removed_by_expiry", books.removed_by_expiry);
        if !books.lost.is_empty() {
            let first: Vec<&str> = books.lost.iter().take(10).map(String::as_str).collect();
            self.note("lost_ids", first.join(" "));
        }
        if !books.corrupt.is_empty() {
            let first: Vec<&str> = books.corrupt.iter().take(10).map(String::as_str).collect();
            self.note("corrupt_ids", first.join(" "));
        }
        let mut statuses: BTreeMap<&str, usize> = BTreeMap::new();
        for a in &produced.acks {
            *statuses.entry(a.status.as_str()).or_default() += 1;
        }
        if !statuses.is_empty() {
            self.note(
                "answers",
                statuses
                    .iter()
                    .map(|(k, n)| format!("{k} × {n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
        let kinds = crate::drill::failures_by_kind(&produced.fails);
        if !kinds.is_empty() {
            self.note(
                "failures",
                kinds
                    .iter()
                    .map(|(k, (n, _))| format!("{k} × {n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            for (k, (_, first)) in kinds {
                self.note(&format!("first_failure_{k}"), truncate(&first, 300));
            }
        }
    }
}

/// `s` cut to at most `max` characters.
#[must_use]
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

/// What a scenario's run ended with, when it did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It ran.
    Done,
    /// It could not run here (the reason).
    Skipped(String),
}

/// What one run works with.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// Where this run's logs go (`<out>/logs/<scenario>-<repeat>`).
    pub log_dir: PathBuf,
    /// This run's random source (kill moments).
    pub rng: fastrand::Rng,
    /// What it measured so far.
    pub result: RunResult,
}

impl Ctx<'_> {
    /// The figures of a broker at the end of a kill loop: whether it still runs, how its
    /// restarts recovered (abnormally, truncating a torn tail), and its logs.
    pub fn broker_after_kills(&mut self, broker: &mut BrokerProcess) {
        let running = broker.process().is_running();
        self.result
            .metric("broker_running_at_end", f64::from(u8::from(running)));
        let log = format!(
            "{}\n{}",
            broker.process_ref().stdout(),
            broker.process_ref().stderr()
        );
        self.result.count(
            "abnormal_recoveries",
            log.lines()
                .filter(|l| l.contains("commit log recovered") && l.contains("Abnormal"))
                .count(),
        );
        self.result.count(
            "recoveries_truncating",
            log.lines()
                .filter(|l| l.contains("recovery truncated an invalid commit log tail"))
                .count(),
        );
        self.keep_logs("broker", broker.process_ref());
    }

    /// Copies a process's logs into the run's log dir and records what they say that an
    /// operator should see: error and warning lines, panics, the first distinct errors.
    pub fn keep_logs(&mut self, label: &str, process: &ChildProcess) {
        let _ = process.save_logs(&self.log_dir);
        let text = format!("{}\n{}", process.stdout(), process.stderr());
        let scan = LogScan::of(&text);
        self.result
            .count(&format!("log_errors_{label}"), scan.errors);
        self.result
            .count(&format!("log_warnings_{label}"), scan.warnings);
        self.result
            .count(&format!("log_panics_{label}"), scan.panics);
        if !scan.first.is_empty() {
            self.result
                .note(&format!("log_first_errors_{label}"), scan.first.join(" | "));
        }
    }
}

/// What a broker's log says, counted.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LogScan {
    /// `ERROR` lines.
    pub errors: usize,
    /// `WARN` lines.
    pub warnings: usize,
    /// Panic messages.
    pub panics: usize,
    /// Up to five distinct ERROR/WARN messages (timestamp and fields dropped).
    pub first: Vec<String>,
}

impl LogScan {
    /// Scans `tracing`'s fmt lines (`<time>  WARN target: message key=value`).
    #[must_use]
    pub fn of(text: &str) -> Self {
        let mut scan = LogScan::default();
        for line in text.lines() {
            let level = if line.contains(" ERROR ") {
                scan.errors += 1;
                Some("ERROR")
            } else if line.contains(" WARN ") {
                scan.warnings += 1;
                Some("WARN")
            } else {
                None
            };
            if line.contains("panicked") {
                scan.panics += 1;
            }
            if let (Some(level), true) = (level, scan.first.len() < 5) {
                let rest = line.split_once(level).map_or(line, |(_, r)| r).trim();
                // The message: after the target's colon, before the structured fields.
                let message = rest.split_once(": ").map_or(rest, |(_, m)| m);
                let message = message
                    .split(" error=")
                    .next()
                    .unwrap_or(message)
                    .trim()
                    .to_owned();
                let entry = format!("{level} {}", truncate(&message, 160));
                if !scan.first.contains(&entry) {
                    scan.first.push(entry);
                }
            }
        }
        scan
    }

    /// Lines in `text` (for rates).
    #[must_use]
    pub fn lines(text: &str) -> usize {
        text.lines().count()
    }
}

/// The command that reproduces run `repeat` of `scenario` under `plan` (as its first and only
/// run: the seed is that run's).
#[must_use]
pub fn command(scenario: &Scenario, plan: &Plan, repeat: u32) -> String {
    let mut cmd = format!(
        "cargo run --release -p integration-tests --bin reliability -- --scenario {}",
        scenario.name
    );
    if plan.quick {
        cmd.push_str(" --quick");
    }
    if matches!(
        scenario.kind,
        Kind::Kill9 | Kind::SlaveKill | Kind::Failover { .. }
    ) {
        cmd.push_str(&format!(
            " --events {} --seed {}",
            plan.events(scenario.kind),
            plan.seed + u64::from(repeat) - 1
        ));
    }
    if scenario.kind == Kind::PopKill9 && plan.pop_kills > 0 {
        // The kills come at a fixed gap: no seed.
        cmd.push_str(&format!(" --events {}", plan.pop_kills));
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_tracing_lines() {
        let text = "2026-01-01T00:00:00.000Z  INFO broker: listening on 127.0.0.1:1\n\
                    2026-01-01T00:00:00.001Z  WARN store::recovery: truncating dirty tail file=/x offset=3\n\
                    2026-01-01T00:00:00.002Z ERROR store::flush: fsync failed error=EIO\n\
                    2026-01-01T00:00:00.003Z ERROR store::flush: fsync failed error=EIO\n\
                    thread 'main' panicked at x.rs:1\n";
        let s = LogScan::of(text);
        assert_eq!((s.errors, s.warnings, s.panics), (2, 1, 1));
        assert_eq!(
            s.first,
            [
                "WARN truncating dirty tail file=/x offset=3",
                "ERROR fsync failed"
            ]
        );
        assert_eq!(LogScan::lines(text), 5);
    }

    #[test]
    fn every_scenario_has_a_command() {
        let plan = Plan::quick(1, 7);
        for s in all() {
            let c = command(&s, &plan, 1);
            assert!(c.contains(s.name) && c.contains("--quick"), "{c}");
        }
        let kill = &all()[0];
        assert!(command(kill, &plan, 2).ends_with("--events 5 --seed 8"));
        let pop = all()
            .into_iter()
            .find(|s| s.kind == Kind::PopKill9)
            .unwrap();
        assert!(command(&pop, &plan, 1).ends_with("--quick --events 3"));
        assert!(!command(&pop, &Plan::long(1, 7), 1).contains("--events"));
        assert_eq!(truncate("abcdef", 3), "abc…");
    }
}
