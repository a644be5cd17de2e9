//! Counters, latency histograms, the per-second progress line and the final summary.
//!
//! Workers record into their own [`Recorder`] (a histogram behind an uncontended lock,
//! plus shared atomics); the reporter swaps interval histograms out every second and
//! merges them into the run's total, so recording never waits for printing. The p99 of
//! the last interval is kept for the live status line.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::Serialize;

use crate::error::response_name;

/// Latencies are recorded in microseconds, up to an hour.
const MAX_LATENCY_US: u64 = 3_600_000_000;

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
        .expect("3 significant figures over 1 us ..= 1 h are valid constant bounds")
}

/// Shared counters of a run.
#[derive(Debug, Default)]
pub struct Counters {
    /// Messages done (sent OK / received).
    pub messages: AtomicU64,
    /// Body bytes of those messages.
    pub bytes: AtomicU64,
    /// Failed requests.
    pub errors: AtomicU64,
    errors_by_kind: Mutex<BTreeMap<String, (u64, String)>>,
}

impl Counters {
    /// Counts `n` successful messages of `bytes` body bytes in total.
    pub fn ok(&self, n: u64, bytes: u64) {
        self.messages.fetch_add(n, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts a failure by response code (`Some`) or transport error kind; the first
    /// `detail` (the broker's remark) of each kind is kept as a sample.
    pub fn error(&self, code: Option<i32>, transport: &str, detail: &str) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let kind = code.map_or_else(
            || transport.to_owned(),
            |c| format!("{}({c})", response_name(c)),
        );
        self.errors_by_kind
            .lock()
            .entry(kind)
            .or_insert_with(|| (0, detail.to_owned()))
            .0 += 1;
    }

    /// Errors by kind so far.
    #[must_use]
    pub fn errors_by_kind(&self) -> BTreeMap<String, u64> {
        self.errors_by_kind
            .lock()
            .iter()
            .map(|(k, (n, _))| (k.clone(), *n))
            .collect()
    }

    /// The first detail seen for each error kind.
    #[must_use]
    pub fn error_samples(&self) -> BTreeMap<String, String> {
        self.errors_by_kind
            .lock()
            .iter()
            .map(|(k, (_, d))| (k.clone(), d.clone()))
            .collect()
    }
}

/// One worker's latency recorder.
#[derive(Debug, Clone)]
pub struct Recorder {
    hist: Arc<Mutex<Histogram<u64>>>,
}

impl Recorder {
    /// Records one latency.
    pub fn record(&self, latency: Duration) {
        let us = u64::try_from(latency.as_micros())
            .unwrap_or(MAX_LATENCY_US)
            .clamp(1, MAX_LATENCY_US);
        let _ = self.hist.lock().record(us);
    }

    /// Records a latency in milliseconds (end-to-end, from born timestamps).
    pub fn record_millis(&self, ms: i64) {
        let us = u64::try_from(ms.max(0)).unwrap_or(0).saturating_mul(1000);
        let _ = self.hist.lock().record(us.clamp(1, MAX_LATENCY_US));
    }
}

/// All recorders of a run and the running total.
#[derive(Debug)]
pub struct Latencies {
    recorders: Mutex<Vec<Arc<Mutex<Histogram<u64>>>>>,
    total: Mutex<Histogram<u64>>,
    /// p99 of the last [`interval`](Self::interval), µs; 0: it had no sample.
    last_p99_us: AtomicU64,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            recorders: Mutex::new(Vec::new()),
            total: Mutex::new(new_histogram()),
            last_p99_us: AtomicU64::new(0),
        }
    }
}

impl Latencies {
    /// A recorder for one worker.
    pub fn recorder(&self) -> Recorder {
        let hist = Arc::new(Mutex::new(new_histogram()));
        self.recorders.lock().push(Arc::clone(&hist));
        Recorder { hist }
    }

    /// Takes what was recorded since the last call, adds it to the total, returns it.
    pub fn interval(&self) -> Histogram<u64> {
        let mut interval = new_histogram();
        for r in self.recorders.lock().iter() {
            let mut h = r.lock();
            let _ = interval.add(&*h);
            h.reset();
        }
        let _ = self.total.lock().add(&interval);
        // Recorded values are at least 1 µs, so 0 can mean "no sample".
        let p99 = if interval.is_empty() {
            0
        } else {
            interval.value_at_quantile(0.99)
        };
        self.last_p99_us.store(p99, Ordering::Relaxed);
        interval
    }

    /// The p99 of what the last [`interval`](Self::interval) took, in milliseconds;
    /// `None` if it took nothing (or was never called).
    pub fn last_interval_p99_ms(&self) -> Option<f64> {
        match self.last_p99_us.load(Ordering::Relaxed) {
            0 => None,
            us => Some(ms(us)),
        }
    }

    /// The whole run (call [`interval`](Self::interval) once more first).
    pub fn total(&self) -> Histogram<u64> {
        self.total.lock().clone()
    }
}

/// Percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Maximum.
    pub max_ms: f64,
    /// Mean.
    pub mean_ms: f64,
}

#[allow(
    clippy::cast_precision_loss,
    reason = "microseconds to printed milliseconds"
)]
pub(crate) fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

impl LatencySummary {
    /// From a histogram in microseconds.
    #[must_use]
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
            mean_ms: h.mean() / 1000.0,
        }
    }
}

/// The end-of-run summary (`--json` prints it as JSON).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// `producer` or `consumer`.
    pub role: String,
    /// Settings, as given.
    pub settings: BTreeMap<String, String>,
    /// Wall time of the measured run (seconds).
    pub duration_secs: f64,
    /// Messages sent OK / received.
    pub messages: u64,
    /// Messages per second.
    pub tps: f64,
    /// Body megabytes (MiB) per second.
    pub mb_per_sec: f64,
    /// Failed requests.
    pub errors: u64,
    /// Failed requests by response code / transport error.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// The first remark / error text of each kind.
    pub error_samples: BTreeMap<String, String>,
    /// Send round trip (producer) or born-to-receipt (consumer) latency.
    pub latency: LatencySummary,
}

impl Summary {
    /// Builds the summary.
    #[must_use]
    #[allow(clippy::cast_precision_loss, reason = "rates for display")]
    pub fn new(
        role: &str,
        settings: BTreeMap<String, String>,
        elapsed: Duration,
        counters: &Counters,
        latency: &Histogram<u64>,
    ) -> Self {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let messages = counters.messages.load(Ordering::Relaxed);
        let bytes = counters.bytes.load(Ordering::Relaxed);
        Summary {
            role: role.to_owned(),
            settings,
            duration_secs: elapsed.as_secs_f64(),
            messages,
            tps: messages as f64 / secs,
            mb_per_sec: bytes as f64 / secs / (1024.0 * 1024.0),
            errors: counters.errors.load(Ordering::Relaxed),
            errors_by_kind: counters.errors_by_kind(),
            error_samples: counters.error_samples(),
            latency: LatencySummary::of(latency),
        }
    }

    /// The human-readable summary.
    #[must_use]
    pub fn text(&self) -> String {
        let l = &self.latency;
        let mut s = format!(
            "=== {} summary ===\nsettings:  {}\nduration:  {:.1} s\nmessages:  {}\nTPS:       {:.1}\nMB/s:      {:.2}\nlatency:   p50 {:.3} ms  p99 {:.3} ms  p99.9 {:.3} ms  max {:.3} ms  mean {:.3} ms ({} samples)\nerrors:    {}",
            self.role,
            self.settings
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            self.duration_secs,
            self.messages,
            self.tps,
            self.mb_per_sec,
            l.p50_ms,
            l.p99_ms,
            l.p999_ms,
            l.max_ms,
            l.mean_ms,
            l.count,
            self.errors
        );
        for (kind, n) in &self.errors_by_kind {
            let sample = self.error_samples.get(kind).map_or("", String::as_str);
            s.push_str(&format!("\n  {kind}: {n}  (first: {})", sample.trim()));
        }
        s
    }
}

/// One progress line.
#[must_use]
#[allow(clippy::cast_precision_loss, reason = "rates for display")]
pub fn progress_line(
    second: u64,
    messages: u64,
    bytes: u64,
    errors: u64,
    interval: &Histogram<u64>,
    what: &str,
) -> String {
    let l = LatencySummary::of(interval);
    format!(
        "[{second:>4}s] {what} {messages:>8} msg/s {:>8.2} MB/s  p50 {:>7.3} ms  p99 {:>8.3} ms  max {:>8.3} ms  errors {errors}",
        bytes as f64 / (1024.0 * 1024.0),
        l.p50_ms,
        l.p99_ms,
        l.max_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_merge_and_reset() {
        let lat = Latencies::default();
        let a = lat.recorder();
        let b = lat.recorder();
        for i in 1..=100 {
            a.record(Duration::from_micros(i * 10));
        }
        b.record_millis(50);
        assert_eq!(lat.last_interval_p99_ms(), None);
        let first = lat.interval();
        assert_eq!(first.len(), 101);
        let p99 = lat.last_interval_p99_ms().unwrap();
        assert!((p99 - 1.0).abs() < 0.01, "{p99}");
        assert!(lat.interval().is_empty());
        let s = LatencySummary::of(&lat.total());
        assert_eq!(s.count, 101);
        assert!((s.p50_ms - 0.51).abs() < 0.01, "{s:?}");
        assert!((s.max_ms - 50.0).abs() < 0.1, "{s:?}");
        assert_eq!(lat.last_interval_p99_ms(), None);
        b.record_millis(-5);
        assert_eq!(lat.interval().max(), 1);
        assert_eq!(lat.last_interval_p99_ms(), Some(0.001));
    }

    #[test]
    fn summary_counts_errors() {
        let c = Counters::default();
        c.ok(10, 10 * 1024);
        c.error(Some(16), "", "[NO_PERMISSION] topic not writable");
        c.error(Some(16), "", "second");
        c.error(None, "timeout", "request 7 timed out");
        let s = Summary::new(
            "producer",
            BTreeMap::new(),
            Duration::from_secs(2),
            &c,
            &new_histogram(),
        );
        assert_eq!(s.tps, 5.0);
        assert_eq!(s.errors, 3);
        assert_eq!(s.errors_by_kind["NO_PERMISSION(16)"], 2);
        assert_eq!(s.errors_by_kind["timeout"], 1);
        let text = s.text();
        assert!(
            text.contains("NO_PERMISSION(16): 2  (first: [NO_PERMISSION] topic not writable)"),
            "{text}"
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["messages"], 10);
        assert_eq!(json["latency"]["p99_ms"], 0.0);
    }
}
