//! Giving the heap freed by a connection storm back to the operating system.
//!
//! glibc malloc keeps freed memory in its arenas: `free` returns only the top of a
//! heap, so when thousands of connections close, the ~12 KiB each used stays resident
//! behind the few allocations made after them (10,000 connections left ~120 MiB with
//! 2 MiB in use). `malloc_trim(0)` releases every free page of every arena. It walks
//! the arenas under their locks, so it runs only after a storm — many connections
//! closed, then a quiet tick — from a housekeeping task, never on a request path.
//! [`StormTrim`] is that decision; [`release_free_memory`] the call.

use std::time::Instant;

use tracing::{info, warn};

/// Closes that make a storm worth a trim.
pub const STORM_CLOSES: u64 = 1024;
/// Trim anyway after this many closes, even if they never stop (steady churn).
const CHURN_CLOSES: u64 = 16 * STORM_CLOSES;

/// Decides, one housekeeping tick at a time, when freed memory is worth returning:
/// after at least [`STORM_CLOSES`] closes followed by a tick without any.
#[derive(Debug, Default)]
pub struct StormTrim {
    seen: u64,
    pending: u64,
}

impl StormTrim {
    /// Called every tick with the number of connections closed so far (a total that only
    /// grows); true when it is time to call [`release_free_memory`].
    pub fn tick(&mut self, closed_total: u64) -> bool {
        let new = closed_total.saturating_sub(self.seen);
        self.seen = self.seen.max(closed_total);
        self.pending += new;
        let quiet_after_storm = new == 0 && self.pending >= STORM_CLOSES;
        if quiet_after_storm || self.pending >= CHURN_CLOSES {
            self.pending = 0;
            return true;
        }
        false
    }
}

/// Returns the free pages of every malloc arena to the OS (glibc's `malloc_trim(0)`);
/// true if any was released. Does nothing (false) on other C libraries. Blocks for a few
/// milliseconds after a storm: call it from a blocking-capable thread.
#[must_use]
pub fn release_free_memory() -> bool {
    trim()
}

/// [`release_free_memory`] on tokio's blocking pool (it must not stall a worker), logged.
pub async fn release_heap() {
    let started = Instant::now();
    match tokio::task::spawn_blocking(release_free_memory).await {
        Ok(released) => info!(
            released,
            elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "connection storm over: freed heap returned to the OS"
        ),
        Err(e) => warn!(error = %e, "heap trim failed"),
    }
}

// The one `unsafe` outside store::mapped_file, here because this is where connection
// memory comes from and both servers (name server, broker) depend on this crate; it is
// an FFI call, not memory handling, so it does not belong with the mappings.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim() -> bool {
    // SAFETY: malloc_trim takes no pointers and has no preconditions; glibc makes it
    // thread-safe by taking each arena's lock while it trims that arena.
    unsafe { libc::malloc_trim(0) != 0 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_once_a_storm_is_over() {
        let mut t = StormTrim::default();
        assert!(!t.tick(0));
        assert!(!t.tick(600), "closing still");
        assert!(!t.tick(1200), "closing still");
        assert!(t.tick(1200), "quiet after 1200 closes");
        assert!(!t.tick(1200), "once per storm");
        assert!(!t.tick(1300));
        assert!(!t.tick(1300), "100 closes are no storm");
    }

    #[test]
    fn steady_churn_is_trimmed_now_and_then() {
        let mut t = StormTrim::default();
        let mut trims = 0;
        for i in 1..=40u64 {
            if t.tick(i * 1000) {
                trims += 1;
            }
        }
        assert_eq!(trims, 2);
    }

    #[test]
    fn release_runs() {
        let big: Vec<Vec<u8>> = (0..64).map(|_| vec![1u8; 64 * 1024]).collect();
        drop(big);
        let _ = release_free_memory();
    }
}
