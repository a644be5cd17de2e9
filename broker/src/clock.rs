//! Wall-clock time in RocketMQ's unit (milliseconds since the epoch).

/// Milliseconds since the Unix epoch.
#[must_use]
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A random number (queue choice for sends without a queue id).
#[must_use]
pub fn random_u32() -> u32 {
    fastrand::u32(..)
}
