//! Results: the JSON written after every run, medians with min–max, the goals of issue 7,
//! BENCHMARKS.md and its SVG charts.

pub mod grpc;
pub mod pop;
pub mod timer;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::machine::{CriterionResult, DiskCeiling, criterion_table};
use super::scenario::{Plan, RunResult, Scenario, all};
use crate::machine::Machine;
use crate::stats::{Stat, fmt_num, fmt_stat};

/// Everything one invocation of the driver measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    /// When it started (UTC, RFC 3339).
    pub started: String,
    /// Wall time so far.
    pub duration_secs: f64,
    /// Durations and sizes.
    pub plan: Plan,
    /// Systems compared (`sluice`, `rocketmq`).
    pub systems: Vec<String>,
    /// The machine.
    pub machine: Machine,
    /// The disk's write ceiling, measured at the start.
    pub disk: DiskCeiling,
    /// Settings worth recording (versions, JVM flags, commit).
    pub settings: BTreeMap<String, String>,
    /// Every run.
    pub runs: Vec<RunResult>,
    /// Criterion results found in `target/criterion`.
    pub criterion: Vec<CriterionResult>,
}

impl Results {
    /// The statistic of `metric` for `scenario` on `system`, over its successful runs.
    #[must_use]
    pub fn stat(&self, scenario: &str, system: &str, metric: &str) -> Option<Stat> {
        let values: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| r.ok && r.scenario == scenario && r.system == system)
            .filter_map(|r| r.metrics.get(metric).copied())
            .collect();
        Stat::of(&values)
    }

    /// The median of `metric` for `scenario` on `system`.
    #[must_use]
    pub fn median(&self, scenario: &str, system: &str, metric: &str) -> Option<f64> {
        self.stat(scenario, system, metric).map(|s| s.median)
    }

    /// Writes the results as pretty JSON.
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
}

/// One row of a scenario table.
struct Row {
    metric: &'static str,
    label: &'static str,
}

const fn row(metric: &'static str, label: &'static str) -> Row {
    Row { metric, label }
}

fn rows_for(scenario: &Scenario) -> Vec<Row> {
    let mut rows = workload_rows(scenario);
    rows.push(row(
        "loadavg_1m",
        "machine load average (1 min) before the run",
    ));
    rows
}

fn workload_rows(scenario: &Scenario) -> Vec<Row> {
    use super::scenario::Workload;
    let producer = vec![
        row("tps", "messages/s"),
        row("mb_s", "MiB/s of bodies"),
        row("p50_ms", "send p50 ms"),
        row("p99_ms", "send p99 ms"),
        row("p999_ms", "send p99.9 ms"),
        row("max_ms", "send max ms"),
        row("errors", "failed sends"),
        row("cpu_master_s_per_m", "broker CPU s / million msgs"),
        row("cpu_master_pct", "broker CPU % (of one core)"),
        row(
            "cpu_loadgen_s_per_m",
            "load generator (mqbench) CPU s / million msgs",
        ),
        row("disk_write_master_mb_s", "broker disk writes MiB/s"),
        row("rss_peak_master_mib", "broker RssAnon peak MiB"),
        row("rss_idle_master_mib", "broker RssAnon idle MiB"),
        row(
            "vmrss_idle_master_mib",
            "broker VmRSS idle MiB (mapped store files included)",
        ),
    ];
    match scenario.workload {
        Workload::Produce { .. } if scenario.slave => {
            let mut rows = producer;
            rows.extend([
                row("cpu_slave_s_per_m", "slave CPU s / million msgs"),
                row("rss_peak_slave_mib", "slave RssAnon peak MiB"),
                row(
                    "rss_peak_total_mib",
                    "name server + master + slave RssAnon peak MiB",
                ),
            ]);
            rows
        }
        Workload::Produce { .. } | Workload::GrpcSend { .. } => producer,
        Workload::GrpcConsume => vec![
            row("backlog_messages", "backlog messages (1 KiB)"),
            row("consume_tps", "received + acked messages/s"),
            row("consume_secs", "seconds to the end of the backlog"),
            row("errors", "failed receives / acks"),
            row("cpu_master_s_per_m", "broker CPU s / million msgs"),
            row("cpu_master_pct", "broker CPU % (of one core)"),
            row(
                "cpu_loadgen_s_per_m",
                "load generator (mqbench) CPU s / million msgs",
            ),
            row("rss_peak_master_mib", "broker RssAnon peak MiB"),
        ],
        Workload::Backlog => vec![
            row("backlog_mib", "backlog MiB (bodies)"),
            row("fill_tps", "fill messages/s (batches of 16)"),
            row("fill_mb_s", "fill MiB/s"),
            row(
                "fill_cpu_master_s_per_m",
                "fill: broker CPU s / million msgs",
            ),
            row("read_tps", "catch-up read messages/s"),
            row("read_mb_s", "catch-up read MiB/s"),
            row("read_secs", "catch-up read seconds"),
            row("cpu_master_s_per_m", "read: broker CPU s / million msgs"),
            row("rss_peak_master_mib", "read: broker RssAnon peak MiB"),
        ],
        Workload::EndToEnd { .. } => vec![
            row("tps", "sent messages/s"),
            row("received", "messages received"),
            row("e2e_p50_ms", "end-to-end p50 ms"),
            row("e2e_p99_ms", "end-to-end p99 ms"),
            row("e2e_p999_ms", "end-to-end p99.9 ms"),
            row("e2e_max_ms", "end-to-end max ms"),
            row("p99_ms", "send p99 ms"),
            row("cpu_master_s_per_m", "broker CPU s / million msgs"),
            row("cpu_master_pct", "broker CPU % (of one core)"),
        ],
        Workload::TimerLateness | Workload::TimerPending => timer::rows(&scenario.workload),
        Workload::PullConsume | Workload::PopConsume { .. } => pop::rows(&scenario.workload),
        Workload::SqlFilter { .. } => vec![
            row("backlog_mib", "backlog MiB (bodies)"),
            row("fill_tps", "fill messages/s (batches of 16)"),
            row(
                "fill_cpu_master_s_per_m",
                "fill: broker CPU s / million msgs (dispatch-time filter work included)",
            ),
            row("all_scanned_per_s", "unfiltered read: messages/s"),
            row(
                "sql1_scanned_per_s",
                "`bucket < 1` (1%): messages scanned/s",
            ),
            row(
                "sql1_delivered_per_s",
                "`bucket < 1` (1%): messages delivered/s",
            ),
            row(
                "sql50_scanned_per_s",
                "`bucket < 50` (50%): messages scanned/s",
            ),
            row(
                "sql50_delivered_per_s",
                "`bucket < 50` (50%): messages delivered/s",
            ),
            row(
                "all_cpu_master_s_per_m",
                "unfiltered: broker CPU s / million msgs",
            ),
            row(
                "sql1_cpu_master_s_per_m",
                "1%: broker CPU s / million scanned",
            ),
            row(
                "sql50_cpu_master_s_per_m",
                "50%: broker CPU s / million scanned",
            ),
            row("all_secs", "unfiltered read seconds"),
            row("sql1_secs", "1% read seconds"),
            row("sql50_secs", "50% read seconds"),
        ],
        Workload::Topics { .. } => vec![
            row("create_per_s", "topics created / s"),
            row("create_secs", "creation seconds"),
            row("create_p99_ms", "creation p99 ms"),
            row("create_cpu_master_s", "creation: broker CPU s"),
            row(
                "rss_topics_master_mib",
                "broker RssAnon with the topics, idle MiB",
            ),
            row("tps", "messages/s over all topics"),
            row("p99_ms", "send p99 ms"),
            row("errors", "failed sends"),
            row("cpu_master_s_per_m", "broker CPU s / million msgs"),
            row("rss_peak_master_mib", "broker RssAnon peak MiB"),
        ],
    }
}

fn ratio(a: Option<Stat>, b: Option<Stat>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b.median.abs() > 1e-12 => format!("{:.2}×", a.median / b.median),
        _ => "—".to_owned(),
    }
}

fn system_title(key: &str) -> &str {
    match key {
        "sluice" => "sluice",
        "rocketmq" => "RocketMQ 5.3.3",
        other => other,
    }
}

/// A goal of issue 7 and whether the run met it.
#[derive(Debug, Clone)]
pub struct Goal {
    /// What is asked.
    pub what: String,
    /// What was measured.
    pub measured: String,
    /// Met, missed, or not measured (`None`).
    pub met: Option<bool>,
}

/// The goals of issue 7, judged on the medians.
#[must_use]
pub fn goals(r: &Results) -> Vec<Goal> {
    let s = |sc: &str, m: &str| r.median(sc, "sluice", m);
    let j = |sc: &str, m: &str| r.median(sc, "rocketmq", m);
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
        "1 KiB async flush: sluice ≥ 3× RocketMQ messages/s",
        s("async-1k", "tps")
            .zip(j("async-1k", "tps"))
            .map(|(a, b)| {
                (
                    a / b,
                    format!("{} vs {} msg/s = {:.2}×", fmt_num(a), fmt_num(b), a / b),
                )
            }),
        &|x| x >= 3.0,
    );
    goal(
        "1 KiB async flush: sluice broker CPU per message ≤ 1/4 of RocketMQ's",
        s("async-1k", "cpu_master_s_per_m")
            .zip(j("async-1k", "cpu_master_s_per_m"))
            .map(|(a, b)| {
                (
                    a / b,
                    format!(
                        "{} vs {} CPU s / million msgs = {:.2}×",
                        fmt_num(a),
                        fmt_num(b),
                        a / b
                    ),
                )
            }),
        &|x| x <= 0.25,
    );
    let ceiling = r.disk.direct_mib_s;
    goal(
        "1 KiB async flush: sluice ≥ 60% of the disk's sequential-write ceiling",
        // A store on tmpfs (`--store-root /dev/shm`) writes nothing to a disk: no verdict.
        s("async-1k", "disk_write_master_mb_s")
            .filter(|w| ceiling > 0.0 && *w > 0.0)
            .map(|w| {
                (
                    w / ceiling,
                    format!(
                        "broker writes {} MiB/s ({} MiB/s of bodies) vs dd oflag=direct {} MiB/s = {:.0}%",
                        fmt_num(w),
                        fmt_num(s("async-1k", "mb_s").unwrap_or(0.0)),
                        fmt_num(ceiling),
                        w / ceiling * 100.0
                    ),
                )
            }),
        &|x| x >= 0.6,
    );
    goal(
        "Sync flush ≥ 50% of sluice's async figure",
        s("sync-flush-1k", "tps")
            .zip(s("async-1k", "tps"))
            .map(|(a, b)| {
                (
                    a / b,
                    format!(
                        "{} vs {} msg/s = {:.0}%",
                        fmt_num(a),
                        fmt_num(b),
                        a / b * 100.0
                    ),
                )
            }),
        &|x| x >= 0.5,
    );
    goal(
        "SYNC_MASTER ≥ 70% of ASYNC_MASTER (sluice)",
        s("ha-sync-master", "tps")
            .zip(s("ha-async-master", "tps"))
            .map(|(a, b)| {
                (
                    a / b,
                    format!(
                        "{} vs {} msg/s = {:.0}%",
                        fmt_num(a),
                        fmt_num(b),
                        a / b * 100.0
                    ),
                )
            }),
        &|x| x >= 0.7,
    );
    goal(
        "Memory: sluice master + slave + name server ≤ 1 GiB under load (RssAnon)",
        s("ha-async-master", "rss_peak_total_mib").map(|m| (m, format!("{} MiB peak", fmt_num(m)))),
        &|x| x <= 1024.0,
    );
    goal(
        "Memory: idle sluice broker ≤ 50 MiB (RssAnon)",
        s("async-1k", "rss_idle_master_mib").map(|m| (m, format!("{} MiB", fmt_num(m)))),
        &|x| x <= 50.0,
    );
    out
}

// ---------------------------------------------------------------- charts

/// One series of a bar chart: a name, a colour, a statistic per category.
struct Series {
    name: String,
    color: &'static str,
    values: Vec<Option<Stat>>,
}

const COLORS: [&str; 2] = ["#1f77b4", "#ff7f0e"];

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A grouped bar chart (median bars, min–max whiskers) as SVG.
fn bar_chart(title: &str, unit: &str, categories: &[String], series: &[Series]) -> String {
    let (w, h) = (760.0_f64, 360.0_f64);
    let (left, right, top, bottom) = (70.0, 20.0, 40.0, 80.0);
    let plot_w = w - left - right;
    let plot_h = h - top - bottom;
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().flatten().map(|v| v.max.max(v.median)))
        .fold(0.0_f64, f64::max);
    let top_value = nice_ceiling(max);
    let y = |v: f64| top + plot_h - (v / top_value * plot_h).clamp(0.0, plot_h);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        w / 2.0,
        xml_escape(title)
    );
    for i in 0..=5 {
        let v = top_value * f64::from(i) / 5.0;
        let yy = y(v);
        let _ = writeln!(
            svg,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{}" y2="{yy:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            w - right,
            left - 6.0,
            yy + 4.0,
            xml_escape(&fmt_num(v))
        );
    }
    let _ = writeln!(
        svg,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        top + plot_h / 2.0,
        xml_escape(unit)
    );
    #[allow(clippy::cast_precision_loss, reason = "chart geometry")]
    let group_w = plot_w / categories.len().max(1) as f64;
    #[allow(clippy::cast_precision_loss, reason = "chart geometry")]
    let bar_w = (group_w * 0.7) / series.len().max(1) as f64;
    for (ci, cat) in categories.iter().enumerate() {
        #[allow(clippy::cast_precision_loss, reason = "chart geometry")]
        let gx = left + group_w * ci as f64 + group_w * 0.15;
        for (si, s) in series.iter().enumerate() {
            let Some(Some(v)) = s.values.get(ci) else {
                continue;
            };
            #[allow(clippy::cast_precision_loss, reason = "chart geometry")]
            let x = gx + bar_w * si as f64;
            let yy = y(v.median);
            let _ = writeln!(
                svg,
                r#"<rect x="{x:.1}" y="{yy:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"#,
                bar_w - 2.0,
                top + plot_h - yy,
                s.color,
                xml_escape(&s.name),
                xml_escape(&fmt_stat(Some(*v)))
            );
            // The median over the bar: a bar a hundred times shorter than its neighbour
            // (memory) is still read.
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="8">{}</text>"#,
                x + (bar_w - 2.0) / 2.0,
                (y(v.max.max(v.median)) - 3.0).max(top - 2.0),
                xml_escape(&fmt_num(v.median))
            );
            if v.n > 1 {
                let cx = x + (bar_w - 2.0) / 2.0;
                let _ = writeln!(
                    svg,
                    r##"<line x1="{cx:.1}" y1="{:.1}" x2="{cx:.1}" y2="{:.1}" stroke="#333"/>"##,
                    y(v.min),
                    y(v.max)
                );
            }
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            gx + group_w * 0.35,
            top + plot_h + 18.0,
            xml_escape(cat)
        );
    }
    for (si, s) in series.iter().enumerate() {
        #[allow(clippy::cast_precision_loss, reason = "chart geometry")]
        let x = left + 160.0 * si as f64;
        let yy = h - 22.0;
        let _ = writeln!(
            svg,
            r#"<rect x="{x}" y="{}" width="14" height="14" fill="{}"/><text x="{}" y="{yy}">{}</text>"#,
            yy - 11.0,
            s.color,
            x + 20.0,
            xml_escape(&s.name)
        );
    }
    let _ = writeln!(
        svg,
        r##"<text x="{}" y="{}" text-anchor="end" fill="#666">bars: median; whiskers: min–max</text>"##,
        w - right,
        h - 10.0
    );
    svg.push_str("</svg>\n");
    svg
}

/// 1, 2 or 5 × 10^k at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let exp = v.log10().floor();
    let base = 10f64.powf(exp);
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * base >= v {
            return m * base;
        }
    }
    10.0 * base
}

/// Which charts exist: file name, title, unit, (scenario, metric, label) per category.
type ChartSpec = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str, &'static str)],
);

const CHARTS: [ChartSpec; 4] = [
    (
        "throughput.svg",
        "Messages per second (higher is better)",
        "messages / s",
        &[
            ("async-1k", "tps", "1 KiB async"),
            ("sync-flush-1k", "tps", "sync flush"),
            ("ha-async-master", "tps", "ASYNC_M+S"),
            ("ha-sync-master", "tps", "SYNC_M+S"),
            ("size-128", "tps", "128 B"),
            ("size-4k", "tps", "4 KiB"),
            ("topics-1k", "tps", "topics (few)"),
            ("topics-10k", "tps", "topics (many)"),
        ],
    ),
    (
        "cpu.svg",
        "Broker CPU seconds per million messages (lower is better)",
        "CPU s / million msgs",
        &[
            ("async-1k", "cpu_master_s_per_m", "1 KiB async"),
            ("sync-flush-1k", "cpu_master_s_per_m", "sync flush"),
            ("ha-async-master", "cpu_master_s_per_m", "ASYNC_M+S"),
            ("ha-sync-master", "cpu_master_s_per_m", "SYNC_M+S"),
            ("size-128", "cpu_master_s_per_m", "128 B"),
            ("size-4k", "cpu_master_s_per_m", "4 KiB"),
            ("backlog-read", "cpu_master_s_per_m", "catch-up read"),
            ("e2e-latency", "cpu_master_s_per_m", "10k msg/s e2e"),
        ],
    ),
    (
        "memory.svg",
        "Anonymous resident memory, MiB (lower is better)",
        "RssAnon MiB",
        &[
            ("async-1k", "rss_idle_master_mib", "broker idle"),
            ("async-1k", "rss_peak_master_mib", "broker loaded"),
            ("ha-async-master", "rss_peak_slave_mib", "slave loaded"),
            ("async-1k", "rss_idle_namesrv_mib", "name server"),
            ("ha-async-master", "rss_peak_total_mib", "ns+master+slave"),
            ("topics-10k", "rss_topics_master_mib", "broker, many topics"),
        ],
    ),
    (
        "latency.svg",
        "End-to-end latency at 10k msg/s, ms (lower is better)",
        "ms",
        &[
            ("e2e-latency", "e2e_p50_ms", "p50"),
            ("e2e-latency", "e2e_p99_ms", "p99"),
            ("e2e-latency", "e2e_p999_ms", "p99.9"),
            ("e2e-latency", "e2e_max_ms", "max"),
        ],
    ),
];

/// Writes the charts into `dir`; returns the file names written.
///
/// # Errors
/// A file cannot be written.
pub fn write_charts(r: &Results, dir: &Path) -> Result<Vec<String>, String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for (file, title, unit, cats) in CHARTS {
        let present: Vec<_> = cats
            .iter()
            .filter(|(sc, m, _)| r.systems.iter().any(|sys| r.stat(sc, sys, m).is_some()))
            .collect();
        if present.is_empty() {
            continue;
        }
        let categories: Vec<String> = present.iter().map(|(_, _, l)| (*l).to_owned()).collect();
        let series: Vec<Series> = r
            .systems
            .iter()
            .enumerate()
            .map(|(i, sys)| Series {
                name: system_title(sys).to_owned(),
                color: COLORS[i % COLORS.len()],
                values: present
                    .iter()
                    .map(|(sc, m, _)| r.stat(sc, sys, m))
                    .collect(),
            })
            .collect();
        let svg = bar_chart(title, unit, &categories, &series);
        let path = dir.join(file);
        fs::write(&path, svg).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(file.to_owned());
    }
    Ok(written)
}

// ---------------------------------------------------------------- markdown

/// The hand-written notes of BENCHMARKS.md: the closing one and those closing a section.
#[derive(Debug, Clone, Default)]
pub struct Notes {
    /// After everything.
    pub closing: Option<String>,
    /// After the timer section.
    pub timer: Option<String>,
    /// After the POP section.
    pub pop: Option<String>,
    /// After the gRPC section.
    pub grpc: Option<String>,
}

/// BENCHMARKS.md. `chart_dir` is where the charts are, relative to the file.
#[must_use]
pub fn markdown(r: &Results, chart_dir: &str, charts: &[String], notes: &Notes) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Benchmarks: sluice and Apache RocketMQ, side by side\n"
    );
    let _ = writeln!(
        md,
        "Generated by the bench driver (`integration-tests/src/bench.rs`) from the results of a run started {} \
         ({}, {} repeat(s) of each scenario on each system unless said, {:.0} min in all; the raw figures \
         are in `{chart_dir}/results.json`). Regenerate with:\n",
        r.started,
        if r.plan.quick {
            "**quick mode**"
        } else {
            "full mode"
        },
        r.plan.repeat,
        r.duration_secs / 60.0
    );
    md.push_str(
        "```sh\ncargo run --release -p integration-tests --bin bench                 # full run, ~1 h, writes this file\n\
         cargo run --release -p integration-tests --bin bench -- --quick      # a few minutes, results under target/bench/\n\
         cargo run --release -p integration-tests --bin bench -- --render target/bench/<run>/results.json\n```\n\n",
    );
    md.push_str(
        "Figures are medians over the repeats, with min–max in parentheses; the ratio is sluice / RocketMQ \
         of the medians. Everything shares one small, noisy machine (other builds and tests ran at the \
         same time), so look at the ranges and at **broker CPU seconds per million messages**, which \
         stays fair when the load generator and the broker share the cores.\n\n",
    );
    md.push_str(
        "The charts below are in `docs/bench/` (a full run writes them there, with `results.json`). \
         One run of the load generator by itself draws its own: `mqbench producer|consumer|grpc-producer|\
         grpc-consumer ... --chart run.svg` (messages, p99 and errors per second); on a terminal it \
         also keeps a live status line.\n\n",
    );

    // Machine.
    let m = &r.machine;
    md.push_str("## Machine and settings\n\n");
    let _ = writeln!(md, "| | |\n|---|---|");
    let _ = writeln!(md, "| CPU | {} × {} |", m.cpus, m.cpu_model);
    let _ = writeln!(
        md,
        "| memory | {} MiB ({} MiB available at the start) |",
        m.memory_mib, m.memory_available_mib
    );
    let _ = writeln!(md, "| kernel | {} |", m.kernel);
    let _ = writeln!(md, "| store disk | `{}` — {} |", m.disk, m.disk_device);
    let _ = writeln!(
        md,
        "| disk write ceiling (same day) | {} MiB/s with `dd bs=1M oflag=direct`, {} MiB/s buffered + `fdatasync` ({} MiB each); one 4 KiB write + sync (`dd bs=4k oflag=dsync`) takes {} ms |",
        fmt_num(r.disk.direct_mib_s),
        fmt_num(r.disk.buffered_mib_s),
        r.disk.bytes >> 20,
        fmt_num(r.disk.sync_write_ms)
    );
    let _ = writeln!(md, "| load average at the start | {} |", m.loadavg);
    let _ = writeln!(md, "| Java | {} |", m.java);
    let _ = writeln!(md, "| Rust | {} |", m.rustc);
    for (k, v) in &r.settings {
        let _ = writeln!(md, "| {k} | {v} |");
    }
    let _ = writeln!(
        md,
        "| durations | {} s warm-up (same load), {} s measured, {} s idle before the idle-memory reading |",
        r.plan.warmup_secs, r.plan.measure_secs, r.plan.settle_secs
    );
    md.push('\n');
    md.push_str(
        "Both systems get the same store settings in every scenario: `mappedFileSizeCommitLog=1073741824`, \
         the scenario's `flushDiskType` and `brokerRole`, `defaultTopicQueueNums=8`, a fresh store in a temp \
         dir on the same disk, a fresh cluster per run (name server + master, + slave where the scenario has \
         one), all on 127.0.0.1 with reserved ports. Everything else is each system's default. The load \
         generator is `mqbench` (tools/) for both, speaking the remoting protocol. CPU is user + system time \
         from `/proc/PID/stat` over the measured phase; memory is `RssAnon` from `/proc/PID/status` \
         (page cache and mapped store files excluded), idle after start and peak while loaded (sampled every \
         200 ms); disk writes are `write_bytes` of `/proc/PID/io`.\n\n",
    );

    // Goals.
    md.push_str("## Goals (issue 7)\n\n| goal | measured (medians) | |\n|---|---|---|\n");
    for g in goals(r) {
        let verdict = match g.met {
            Some(true) => "**met**",
            Some(false) => "**missed**",
            None => "not measured",
        };
        let _ = writeln!(md, "| {} | {} | {verdict} |", g.what, g.measured);
    }
    md.push('\n');

    if !charts.is_empty() {
        md.push_str("## Charts\n\n");
        for c in charts {
            let _ = writeln!(md, "![{c}]({chart_dir}/{c})\n");
        }
    }

    // Scenario tables (the timer and consumption scenarios have their own sections below).
    md.push_str("## Scenarios\n\n");
    for sc in all()
        .iter()
        .filter(|sc| !timer::is_timer(sc) && !pop::is_pop(sc) && !grpc::is_grpc(sc))
    {
        scenario_section(&mut md, r, sc);
    }

    timer::section(&mut md, r, notes.timer.as_deref());
    pop::section(&mut md, r, notes.pop.as_deref());
    grpc::section(&mut md, r, notes.grpc.as_deref());

    // Criterion.
    md.push_str("## Micro-benchmarks (criterion)\n\n");
    if r.criterion.is_empty() {
        md.push_str(
            "No criterion results were found in `target/criterion` when this was generated \
             (`make bench` produces them; the driver only summarises).\n\n",
        );
    } else {
        md.push_str("Latest estimates found in `target/criterion` (mean per iteration; produced by `make bench`, \
             not by this driver, so they may predate this run and come from other commits):\n\n| benchmark | mean |\n|---|---|\n");
        for (id, time) in criterion_table(&r.criterion) {
            let _ = writeln!(md, "| `{id}` | {time} |");
        }
        md.push('\n');
    }

    if let Some(closing) = &notes.closing {
        md.push_str(closing.trim_end());
        md.push('\n');
    }
    md
}

/// The heading, settings line, table and failures of one scenario (nothing when it has no
/// run).
fn scenario_section(md: &mut String, r: &Results, sc: &Scenario) {
    if !r.runs.iter().any(|run| run.scenario == sc.name) {
        return;
    }
    let _ = writeln!(md, "### `{}` — {}\n", sc.name, sc.title);
    let params: BTreeMap<String, String> = r
        .runs
        .iter()
        .filter(|run| run.scenario == sc.name)
        .flat_map(|run| run.params.clone())
        .collect();
    let _ = writeln!(
        md,
        "`brokerRole={}`, `flushDiskType={}`{}{}\n",
        sc.role,
        sc.flush,
        if sc.slave { ", with a slave" } else { "" },
        params
            .iter()
            .map(|(k, v)| format!(", {k}: `{v}`"))
            .collect::<String>()
    );
    let measured: std::collections::BTreeSet<&str> = r
        .runs
        .iter()
        .filter(|run| run.scenario == sc.name)
        .filter_map(|run| run.measured.as_deref())
        .filter(|m| !m.starts_with(r.started.as_str()))
        .collect();
    if !measured.is_empty() {
        let _ = writeln!(
            md,
            "Measured in a later run than the rest of this page: {}.\n",
            measured.into_iter().collect::<Vec<_>>().join("; ")
        );
    }
    let _ = write!(md, "| |");
    for sys in &r.systems {
        let _ = write!(md, " {} |", system_title(sys));
    }
    if r.systems.len() == 2 {
        md.push_str(" ratio |");
    }
    md.push_str("\n|---|");
    for _ in &r.systems {
        md.push_str("---|");
    }
    if r.systems.len() == 2 {
        md.push_str("---|");
    }
    md.push('\n');
    for row in rows_for(sc) {
        let stats: Vec<Option<Stat>> = r
            .systems
            .iter()
            .map(|sys| r.stat(sc.name, sys, row.metric))
            .collect();
        if stats.iter().all(Option::is_none) {
            continue;
        }
        let _ = write!(md, "| {} |", row.label);
        for s in &stats {
            let _ = write!(md, " {} |", fmt_stat(*s));
        }
        if stats.len() == 2 {
            let _ = write!(md, " {} |", ratio(stats[0], stats[1]));
        }
        md.push('\n');
    }
    // Failures and error kinds.
    for sys in &r.systems {
        let runs: Vec<&RunResult> = r
            .runs
            .iter()
            .filter(|run| run.scenario == sc.name && &run.system == sys)
            .collect();
        let failed: Vec<&&RunResult> = runs.iter().filter(|run| !run.ok).collect();
        let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
        for run in &runs {
            for (k, n) in &run.errors_by_kind {
                *kinds.entry(k.as_str()).or_default() += n;
            }
        }
        if !failed.is_empty() {
            let first = failed[0]
                .error
                .as_deref()
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("");
            let _ = writeln!(
                md,
                "\n{}: {} of {} run(s) failed (first: `{}`); the figures are of the others.",
                system_title(sys),
                failed.len(),
                runs.len(),
                first.replace('`', "'")
            );
        }
        if !kinds.is_empty() {
            let _ = writeln!(
                md,
                "\n{} errors over all repeats: {}.",
                system_title(sys),
                kinds
                    .iter()
                    .map(|(k, n)| format!("`{k}` × {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_scale() {
        assert_eq!(nice_ceiling(730.0), 1000.0);
        assert_eq!(nice_ceiling(120.0), 200.0);
    }

    #[test]
    fn chart_is_svg() {
        let svg = bar_chart(
            "t <x>",
            "u",
            &["a".to_owned(), "b".to_owned()],
            &[Series {
                name: "s".to_owned(),
                color: COLORS[0],
                values: vec![Stat::of(&[1.0, 2.0, 3.0]), None],
            }],
        );
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("t &lt;x&gt;"));
    }
}
