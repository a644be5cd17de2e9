//! The harness's polling wait: conditions here ask other processes (a request, a log file),
//! so they are checked every 50 ms, not in a tight loop. `test_support` owns the loop.

use std::time::Duration;

/// How often [`wait_until`] checks.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Checks `done` every [`POLL_INTERVAL`] until it holds (true) or `timeout` passes (false).
pub fn wait_until(timeout: Duration, done: impl FnMut() -> bool) -> bool {
    test_support::wait_until_every(POLL_INTERVAL, timeout, done)
}
