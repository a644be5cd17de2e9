//! `--chart FILE.svg`: the run drawn second by second — messages per second, the p99 of
//! each second's latencies, errors — as one self-contained SVG, the figures the progress
//! lines print. The side-by-side charts of the bench driver live next to it in docs/bench;
//! this one is for a single run an operator makes by hand.
//!
//! The samples come from the progress reporter ([`super::report_progress`]), which takes
//! them once a second anyway: charting adds nothing to the send/receive path.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use parking_lot::Mutex;

use crate::error::{Result, ToolsError};

/// `--chart`, flattened into the options of the modes that report each second.
#[derive(Debug, Clone, Default, Args)]
pub struct ChartArgs {
    /// Write the run's rate, p99 and errors per second to this SVG file at the end.
    #[arg(long = "chart", value_name = "FILE.svg")]
    pub chart: Option<PathBuf>,
}

/// One second of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Second {
    /// Seconds since the start (the end of this second).
    pub at: u64,
    /// Messages in this second.
    pub messages: u64,
    /// p99 of this second's latencies, ms; `None` without a sample.
    pub p99_ms: Option<f64>,
    /// Errors in this second.
    pub errors: u64,
}

/// The seconds of a run so far.
#[derive(Debug, Default)]
pub struct Timeline {
    seconds: Mutex<Vec<Second>>,
}

impl Timeline {
    /// Adds a second.
    pub fn push(&self, second: Second) {
        self.seconds.lock().push(second);
    }

    /// The seconds so far.
    #[must_use]
    pub fn seconds(&self) -> Vec<Second> {
        self.seconds.lock().clone()
    }
}

impl ChartArgs {
    /// Writes the chart of `timeline` if `--chart` asked for one.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(&self, title: &str, latency: &str, timeline: &Timeline) -> Result<()> {
        let Some(path) = &self.chart else {
            return Ok(());
        };
        let svg = svg(title, latency, &timeline.seconds());
        std::fs::write(path, svg).map_err(|e| {
            ToolsError::Usage(format!("cannot write the chart {}: {e}", path.display()))
        })
    }
}

const WIDTH: f64 = 900.0;
const PANEL: f64 = 200.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 72.0;
const GAP: f64 = 50.0;

/// The SVG: messages per second (errors in red below it) and the p99 per second.
#[must_use]
#[allow(
    clippy::cast_precision_loss,
    reason = "figures drawn, not computed with"
)]
pub fn svg(title: &str, latency: &str, seconds: &[Second]) -> String {
    let height = TOP + 2.0 * PANEL + GAP + 24.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="{WIDTH}" height="{height}" fill="white"/>"#
    );
    // `mqbench producer: topic=... size=...`: the mode in bold, its settings under it.
    let (mode, settings) = title.split_once(": ").unwrap_or((title, ""));
    let _ = writeln!(
        out,
        r##"<text x="{LEFT}" y="22" font-size="15" font-weight="bold">{}</text><text x="{LEFT}" y="40" font-size="11" fill="#555">{}</text>"##,
        escape(mode),
        escape(settings)
    );
    let end = seconds.last().map_or(1, |s| s.at.max(1));
    let rate: Vec<(u64, f64)> = seconds.iter().map(|s| (s.at, s.messages as f64)).collect();
    let errors: Vec<(u64, f64)> = seconds.iter().map(|s| (s.at, s.errors as f64)).collect();
    let p99: Vec<(u64, f64)> = seconds
        .iter()
        .filter_map(|s| s.p99_ms.map(|p| (s.at, p)))
        .collect();
    let any_error = errors.iter().any(|(_, e)| *e > 0.0);
    let mut rate_series: Vec<Series<'_>> = vec![("messages/s", "#1f6fbf", rate.as_slice())];
    if any_error {
        rate_series.push(("errors/s", "#dc2626", errors.as_slice()));
    }
    panel(&mut out, TOP, end, "messages per second", &rate_series);
    let p99_title = format!("p99 {latency}, ms (each second)");
    panel(
        &mut out,
        TOP + PANEL + GAP,
        end,
        &p99_title,
        &[("p99", "#d97706", p99.as_slice())],
    );
    out.push_str("</svg>\n");
    out
}

/// A line of a panel: its name, its colour, its (second, figure) points.
type Series<'a> = (&'a str, &'a str, &'a [(u64, f64)]);

/// One line chart at `top`: axes, the largest figure, and each series as a polyline.
#[allow(clippy::cast_precision_loss, reason = "coordinates")]
fn panel(out: &mut String, top: f64, end: u64, title: &str, series: &[Series<'_>]) {
    let max = series
        .iter()
        .flat_map(|(_, _, points)| points.iter().map(|(_, v)| *v))
        .fold(0.0_f64, f64::max);
    let scale = if max > 0.0 { max } else { 1.0 };
    let x = |t: u64| LEFT + (WIDTH - LEFT - RIGHT) * t as f64 / end as f64;
    let y = |v: f64| top + PANEL - PANEL * v / scale;
    let _ = writeln!(
        out,
        r##"<text x="{LEFT}" y="{}" fill="#333">{}</text>"##,
        top - 8.0,
        escape(title)
    );
    let _ = writeln!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#999\"/><line x1=\"{LEFT}\" y1=\"{top}\" x2=\"{LEFT}\" y2=\"{b}\" stroke=\"#999\"/>",
        b = top + PANEL,
        r = WIDTH - RIGHT,
    );
    let _ = writeln!(
        out,
        r##"<text x="{}" y="{}" text-anchor="end" fill="#555">{}</text><text x="{}" y="{}" text-anchor="end" fill="#555">0</text><text x="{}" y="{}" text-anchor="end" fill="#555">{end} s</text>"##,
        LEFT - 6.0,
        top + 4.0,
        figure(max),
        LEFT - 6.0,
        top + PANEL + 4.0,
        WIDTH - RIGHT,
        top + PANEL + 16.0,
    );
    let mut legend_x = WIDTH - RIGHT;
    for (name, color, points) in series.iter().rev() {
        let _ = writeln!(
            out,
            r##"<text x="{legend_x}" y="{}" text-anchor="end" fill="{color}">{}</text>"##,
            top - 8.0,
            escape(name)
        );
        legend_x -= 12.0 + 7.0 * name.len() as f64;
        if points.is_empty() {
            continue;
        }
        let line: Vec<String> = points
            .iter()
            .map(|(t, v)| format!("{:.1},{:.1}", x(*t), y(*v)))
            .collect();
        let _ = writeln!(
            out,
            r##"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"##,
            line.join(" ")
        );
    }
}

/// A figure as an axis label: whole above 100, else two decimals.
fn figure(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(at: u64, messages: u64, p99_ms: Option<f64>, errors: u64) -> Second {
        Second {
            at,
            messages,
            p99_ms,
            errors,
        }
    }

    #[test]
    fn draws_each_series_with_its_points() {
        let seconds = [
            second(1, 1000, Some(2.5), 0),
            second(2, 3000, None, 0),
            second(3, 2000, Some(4.0), 0),
        ];
        let svg = svg("producer <async> 1 KiB", "send latency", &seconds);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("producer &lt;async&gt; 1 KiB"));
        let lines: Vec<&str> = svg.lines().filter(|l| l.starts_with("<polyline")).collect();
        assert_eq!(lines.len(), 2, "rate and p99, no error line: {svg}");
        // Three rate points, two p99 points (one second had no sample).
        assert_eq!(lines[0].matches(',').count(), 3, "{}", lines[0]);
        assert_eq!(lines[1].matches(',').count(), 2, "{}", lines[1]);
        // The largest figure labels the axis.
        assert!(svg.contains(">3000<"), "{svg}");
        assert!(svg.contains(">4.00<"), "{svg}");
    }

    #[test]
    fn errors_are_drawn_when_there_were_some() {
        let seconds = [second(1, 10, Some(1.0), 0), second(2, 5, Some(1.0), 3)];
        let svg = svg("t", "send latency", &seconds);
        assert!(svg.contains("errors/s"));
        assert_eq!(svg.matches("<polyline").count(), 3);
    }

    #[test]
    fn an_empty_run_still_makes_a_chart() {
        let svg = svg("t", "send latency", &[]);
        assert!(svg.contains("messages per second") && !svg.contains("<polyline"));
    }

    #[test]
    fn written_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let timeline = Timeline::default();
        timeline.push(second(1, 7, Some(1.5), 0));
        ChartArgs::default()
            .write("t", "send latency", &timeline)
            .unwrap();
        let path = dir.path().join("run.svg");
        let args = ChartArgs {
            chart: Some(path.clone()),
        };
        args.write("t", "send latency", &timeline).unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("<polyline")
        );
        let nowhere = ChartArgs {
            chart: Some(dir.path().join("no/such/dir/run.svg")),
        };
        assert!(nowhere.write("t", "send latency", &timeline).is_err());
    }
}
