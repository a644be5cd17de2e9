//! How often pulls read messages the page cache holds: the figure that tells an operator
//! whether consumers are served from memory or are making the disk seek (a consumer far
//! behind, a cache too small for the backlog). RocketMQ only estimates it from the
//! distance to the CommitLog's end (`accessMessageInMemoryMaxRatio`); sluice asks the
//! kernel (`mincore`) for one pull in [`SAMPLE_EVERY`], so the hot path pays one atomic
//! add when sampling is on and one load when it is off.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// One pull in this many is sampled.
pub const SAMPLE_EVERY: u32 = 16;

/// Sampled residency of the messages pulls read. Off until [`enable`](Self::enable)d.
#[derive(Debug, Default)]
pub struct PageCacheSampler {
    enabled: AtomicBool,
    pulls: AtomicU32,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Messages of the sampled pulls, by whether all their pages were in the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageCacheReads {
    /// Read from memory.
    pub hits: u64,
    /// At least one page not in memory: read from disk.
    pub misses: u64,
}

impl PageCacheSampler {
    /// Starts sampling (the broker does when its metrics are on).
    pub fn enable(&self) {
        self.enabled.store(true, Ordering::Relaxed);
    }

    /// Whether the pull starting now is sampled.
    #[must_use]
    pub fn sample_this_pull(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
            && self.pulls.fetch_add(1, Ordering::Relaxed) % SAMPLE_EVERY == 0
    }

    /// Counts one message of a sampled pull (`None`: the kernel could not tell).
    pub fn record(&self, resident: Option<bool>) {
        match resident {
            Some(true) => self.hits.fetch_add(1, Ordering::Relaxed),
            Some(false) => self.misses.fetch_add(1, Ordering::Relaxed),
            None => return,
        };
    }

    /// The counts so far.
    #[must_use]
    pub fn reads(&self) -> PageCacheReads {
        PageCacheReads {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_until_enabled_then_one_pull_in_sample_every() {
        let s = PageCacheSampler::default();
        assert!((0..100).all(|_| !s.sample_this_pull()));
        s.enable();
        let sampled = (0..SAMPLE_EVERY * 10)
            .filter(|_| s.sample_this_pull())
            .count();
        assert_eq!(sampled, 10);
        s.record(Some(true));
        s.record(Some(false));
        s.record(Some(true));
        s.record(None);
        assert_eq!(s.reads(), PageCacheReads { hits: 2, misses: 1 });
    }
}
