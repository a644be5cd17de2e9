//! Rate limits for log lines that something outside the process can trigger: a client
//! (a refused request, a malformed frame), a peer on the HA port, a full disk refusing
//! every put. One line per event turns a misbehaving client or a full disk into a log
//! flood (hundreds of identical ERROR lines a second) that buries everything else and
//! fills the disk that is already full.
//!
//! A [`Gate`] lets the first event through, then at most one line per interval, each
//! saying how many were left out since the last one (`suppressed = N`). Gates are
//! per call site: [`limited!`] declares one in a `static` where it is used, so each
//! distinct message is limited on its own.
//!
//! ```
//! # fn refuse() {
//! log_limit::limited!(warn!(code = 999, "request code not supported"));
//! # }
//! ```
//!
//! Depends on nothing of ours, so every crate (store and remoting included) can use it.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The default interval between two lines of one call site.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// One call site's limit: the time of its last line and the events left out since.
#[derive(Debug)]
pub struct Gate {
    interval_ms: u64,
    /// Milliseconds since [`epoch`] + 1 of the last line written (0: never).
    last: AtomicU64,
    suppressed: AtomicU64,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    u64::try_from(epoch().elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl Gate {
    /// A gate writing at most one line per `interval`.
    #[must_use]
    pub const fn new(interval: Duration) -> Self {
        Gate {
            interval_ms: interval.as_millis() as u64,
            last: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// Whether a line may be written now; `Some(n)` with the number of events left out
    /// since the last line, `None` when this one is left out (and counted).
    pub fn permit(&self) -> Option<u64> {
        self.permit_at(now_ms())
    }

    fn permit_at(&self, now: u64) -> Option<u64> {
        let stamp = now.saturating_add(1);
        let last = self.last.load(Ordering::Relaxed);
        let due = last == 0 || stamp.saturating_sub(last) >= self.interval_ms;
        // One winner per interval; losers of the race count as left out.
        if due
            && self
                .last
                .compare_exchange(last, stamp, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            return Some(self.suppressed.swap(0, Ordering::AcqRel));
        }
        self.suppressed.fetch_add(1, Ordering::AcqRel);
        None
    }
}

/// A `tracing` event written through a per-call-site [`Gate`]
/// ([`DEFAULT_INTERVAL`], or the interval given first), with a `suppressed` field
/// counting the events left out since the last line:
/// `limited!(error!(error = %e, "cannot roll"))`,
/// `limited!(Duration::from_secs(1), warn!("..."))`.
#[macro_export]
macro_rules! limited {
    ($interval:expr, $level:ident!($($arg:tt)*)) => {{
        static GATE: $crate::Gate = $crate::Gate::new($interval);
        if let Some(suppressed) = GATE.permit() {
            ::tracing::$level!(suppressed, $($arg)*);
        }
    }};
    ($level:ident!($($arg:tt)*)) => {
        $crate::limited!($crate::DEFAULT_INTERVAL, $level!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_event_passes_then_one_per_interval_with_a_count() {
        let gate = Gate::new(Duration::from_millis(1000));
        assert_eq!(gate.permit_at(5), Some(0));
        for t in 6..700 {
            assert_eq!(gate.permit_at(t), None);
        }
        assert_eq!(gate.permit_at(1005), Some(694));
        assert_eq!(gate.permit_at(1006), None);
        assert_eq!(gate.permit_at(2005), Some(1));
        assert_eq!(gate.permit_at(9000), Some(0));
    }

    #[test]
    fn the_macro_limits_each_call_site_on_its_own() {
        #[derive(Clone, Default)]
        struct Lines(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out = Lines::default();
        let sink = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            for i in 0..100 {
                limited!(warn!(i, "first site"));
                limited!(Duration::from_secs(60), info!(i, "second site"));
            }
        });
        let text = String::from_utf8(out.0.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].contains("first site") && lines[0].contains("suppressed=0"),
            "{text}"
        );
        assert!(
            lines[1].contains("second site") && lines[1].contains("i=0"),
            "{text}"
        );
    }
}
