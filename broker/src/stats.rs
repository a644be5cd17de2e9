//! Broker statistics for GET_BROKER_RUNTIME_INFO and `mqadmin clusterList` /
//! `brokerStatus`: message counters (today, yesterday) and put/get TPS over 10 s,
//! 60 s and 600 s windows, sampled once a second.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use store::PutResult;

/// Samples kept: 600 s at one per second.
const WINDOW: usize = 601;

/// Counters and rate windows.
#[derive(Debug, Default)]
pub struct BrokerStats {
    put_nums: AtomicU64,
    put_size: AtomicU64,
    get_found: AtomicU64,
    get_miss: AtomicU64,
    get_transferred: AtomicU64,
    put_failures: AtomicU64,
    samples: Mutex<VecDeque<Sample>>,
    day_marks: Mutex<DayMarks>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    at_ms: i64,
    put: u64,
    got: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct DayMarks {
    day: i64,
    put_yesterday_morning: u64,
    put_today_morning: u64,
    get_yesterday_morning: u64,
    get_today_morning: u64,
}

/// TPS over the three windows, as `"10s 60s 600s"` text.
fn tps_text(samples: &VecDeque<Sample>, pick: fn(&Sample) -> u64) -> String {
    let Some(last) = samples.back() else {
        return "0.00 0.00 0.00".into();
    };
    let rate = |secs: usize| {
        let idx = samples.len().saturating_sub(secs + 1);
        let first = samples[idx];
        let dt = (last.at_ms - first.at_ms) as f64 / 1000.0;
        if dt <= 0.0 {
            0.0
        } else {
            (pick(last) - pick(&first)) as f64 / dt
        }
    };
    format!("{:.2} {:.2} {:.2}", rate(10), rate(60), rate(600))
}

impl BrokerStats {
    /// Counts a put.
    pub fn record_put(&self, _topic: &str, result: &PutResult) {
        match &result.append {
            Some(a) if result.status.is_ok() => {
                self.put_nums.fetch_add(a.msg_num as u64, Ordering::Relaxed);
                self.put_size
                    .fetch_add(a.wrote_bytes as u64, Ordering::Relaxed);
            }
            _ => {
                self.put_failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Counts a pull that returned `messages` messages.
    pub fn record_get(&self, messages: usize) {
        if messages == 0 {
            self.get_miss.fetch_add(1, Ordering::Relaxed);
        } else {
            self.get_found.fetch_add(1, Ordering::Relaxed);
            self.get_transferred
                .fetch_add(messages as u64, Ordering::Relaxed);
        }
    }

    /// Messages put so far.
    #[must_use]
    pub fn put_total(&self) -> u64 {
        self.put_nums.load(Ordering::Relaxed)
    }

    /// Messages handed out so far.
    #[must_use]
    pub fn get_total(&self) -> u64 {
        self.get_transferred.load(Ordering::Relaxed)
    }

    /// Takes a sample (once a second) and rolls the day counters at midnight (UTC day).
    pub fn sample(&self, now_ms: i64) {
        let put = self.put_total();
        let got = self.get_total();
        {
            let mut s = self.samples.lock();
            s.push_back(Sample {
                at_ms: now_ms,
                put,
                got,
            });
            while s.len() > WINDOW {
                s.pop_front();
            }
        }
        let day = now_ms / 86_400_000;
        let mut marks = self.day_marks.lock();
        if marks.day != day {
            marks.put_yesterday_morning = marks.put_today_morning;
            marks.get_yesterday_morning = marks.get_today_morning;
            marks.put_today_morning = put;
            marks.get_today_morning = got;
            marks.day = day;
        }
    }

    /// The keys of GET_BROKER_RUNTIME_INFO that come from these counters.
    #[must_use]
    pub fn runtime_entries(&self) -> Vec<(&'static str, String)> {
        let samples = self.samples.lock();
        let marks = *self.day_marks.lock();
        let get_tps = tps_text(&samples, |s| s.got);
        vec![
            ("putTps", tps_text(&samples, |s| s.put)),
            ("getTransferedTps", get_tps.clone()),
            ("getTransferredTps", get_tps.clone()),
            ("getFoundTps", get_tps),
            ("getMissTps", "0.00 0.00 0.00".into()),
            ("getTotalTps", tps_text(&samples, |s| s.got)),
            ("msgPutTotalTodayNow", self.put_total().to_string()),
            ("msgGetTotalTodayNow", self.get_total().to_string()),
            (
                "msgPutTotalTodayMorning",
                marks.put_today_morning.to_string(),
            ),
            (
                "msgGetTotalTodayMorning",
                marks.get_today_morning.to_string(),
            ),
            (
                "msgPutTotalYesterdayMorning",
                marks.put_yesterday_morning.to_string(),
            ),
            (
                "msgGetTotalYesterdayMorning",
                marks.get_yesterday_morning.to_string(),
            ),
            (
                "putMessageFailedTimes",
                self.put_failures.load(Ordering::Relaxed).to_string(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tps_windows() {
        let stats = BrokerStats::default();
        for i in 0..20u64 {
            stats.put_nums.store(i * 100, Ordering::Relaxed);
            stats.sample(1_000_000 + i64::try_from(i).unwrap() * 1000);
        }
        let entries = stats.runtime_entries();
        let put_tps = &entries.iter().find(|(k, _)| *k == "putTps").unwrap().1;
        assert!(put_tps.starts_with("100.00 100.00 100.00"), "{put_tps}");
    }
}
