//! Pending timers per real topic (RocketMQ `TimerMetrics`): +1 when a timer is taken
//! into the wheel, −1 when it is delivered (a rolled timer leaves and comes back; a
//! recall marker counts −1). Kept in `config/timermetrics`, answered to
//! GET_TIMER_METRICS, and copied by slaves from their master (theirs never deliver, so
//! their own counts would only grow).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use remoting::config_file::ConfigFileError;
use remoting::protocol::topic::DataVersion;
use serde::{Deserialize, Serialize};

use crate::persist;

/// `config/timermetrics`.
pub const TIMER_METRICS: &str = "timermetrics";

/// The count of one topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Metric {
    /// Pending timers.
    pub count: i64,
    /// Last change (ms).
    pub time_stamp: i64,
}

/// The file and GET_TIMER_METRICS body (`TimerMetricsSerializeWrapper`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TimerMetricsWrapper {
    /// Real topic → count.
    pub timing_count: BTreeMap<String, Metric>,
    /// Bumped on every change.
    pub data_version: DataVersion,
}

/// The counts and their file.
#[derive(Debug)]
pub struct TimerMetrics {
    path: PathBuf,
    table: Mutex<TimerMetricsWrapper>,
    dirty: AtomicBool,
    /// Timers taken into the wheel and delivered since start, per real topic
    /// (`rocketmq_timer_enqueue_total`, `rocketmq_timer_dequeue_total`; a rolled timer
    /// counts at each pass).
    passes: ::metrics::family::Family<Box<str>, [::metrics::Counter; 2]>,
    /// From send to due time, seconds, per real topic (`rocketmq_delay_message_latency`).
    delays: ::metrics::family::Family<Box<str>, ::metrics::Histogram>,
}

impl TimerMetrics {
    /// Loads `config/timermetrics` under `root` (empty when absent).
    ///
    /// # Errors
    /// The file exists and neither it nor its backup parses.
    pub fn load(root: &std::path::Path) -> Result<Self, ConfigFileError> {
        let path = persist::config_path(root, TIMER_METRICS);
        let table = persist::load::<TimerMetricsWrapper>(&path)?.unwrap_or_default();
        Ok(TimerMetrics {
            path,
            table: Mutex::new(table),
            dirty: AtomicBool::new(false),
            passes: ::metrics::family::Family::new(Default::default),
            delays: ::metrics::family::Family::new(|| {
                ::metrics::Histogram::new(::metrics::meter::DELAY_LATENCY_S)
            }),
        })
    }

    /// Adds `delta` to `topic`'s count at `now_ms`.
    pub fn add(&self, topic: &str, delta: i64, now_ms: i64) {
        let mut t = self.table.lock();
        let m = t.timing_count.entry(topic.to_owned()).or_default();
        m.count += delta;
        m.time_stamp = now_ms;
        t.data_version.next_version(now_ms);
        self.dirty.store(true, Ordering::Release);
    }

    /// A timer of `topic`, due `delay_ms` after it was sent, was taken into the wheel.
    pub fn count_enqueue(&self, topic: &str, delay_ms: i64) {
        self.passes.with(topic, |c| c[0].inc());
        let secs = u64::try_from(delay_ms / 1000).unwrap_or(0);
        self.delays.with(topic, |h| h.observe(secs));
    }

    /// Per topic, the delays (seconds) of the timers taken in since start.
    #[must_use]
    pub fn delays(&self) -> Vec<(Box<str>, ::metrics::meter::HistogramSnapshot)> {
        self.delays
            .entries()
            .into_iter()
            .map(|(t, h)| (t, h.snapshot()))
            .collect()
    }

    /// A timer of `topic` was delivered.
    pub fn count_dequeue(&self, topic: &str) {
        self.passes.with(topic, |c| c[1].inc());
    }

    /// (topic, enqueued, delivered) since start.
    #[must_use]
    pub fn passes(&self) -> Vec<(Box<str>, u64, u64)> {
        self.passes
            .entries()
            .into_iter()
            .map(|(t, c)| (t, c[0].get(), c[1].get()))
            .collect()
    }

    /// The table as GET_TIMER_METRICS answers it.
    #[must_use]
    pub fn wrapper(&self) -> TimerMetricsWrapper {
        self.table.lock().clone()
    }

    /// A slave takes its master's table when its version differs.
    pub fn replace_from_master(&self, master: TimerMetricsWrapper) {
        let mut t = self.table.lock();
        if t.data_version != master.data_version {
            *t = master;
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// Writes the file if anything changed since the last write.
    ///
    /// # Errors
    /// The write failed (it is tried again next time).
    pub fn persist(&self) -> Result<(), ConfigFileError> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let table = self.wrapper();
        persist::save(&self.path, &table).inspect_err(|_| self.dirty.store(true, Ordering::Release))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_persist_in_rocketmq_s_shape() {
        let dir = tempfile::tempdir().unwrap();
        let m = TimerMetrics::load(dir.path()).unwrap();
        m.add("T", 1, 5);
        m.add("T", 1, 6);
        m.add("U", 1, 7);
        m.add("T", -1, 8);
        m.persist().unwrap();
        let text = std::fs::read_to_string(dir.path().join("config").join("timermetrics")).unwrap();
        assert!(
            text.contains(
                r#""timingCount":{"T":{"count":1,"timeStamp":8},"U":{"count":1,"timeStamp":7}}"#
            ),
            "{text}"
        );
        assert!(text.contains(r#""counter":4"#), "{text}");
        let again = TimerMetrics::load(dir.path()).unwrap();
        assert_eq!(again.wrapper(), m.wrapper());
        // A slave takes a different master table as a whole.
        let master = TimerMetricsWrapper::default();
        again.replace_from_master(master.clone());
        assert_eq!(again.wrapper(), master);
    }
}
