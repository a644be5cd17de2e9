//! The proxy's wall clock: milliseconds since the epoch, as RocketMQ's timestamps are.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in milliseconds since the epoch (0 before it, saturating far after).
#[must_use]
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
