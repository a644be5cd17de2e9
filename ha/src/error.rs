//! Error types of the HA crate: wire decoding, configuration, the log seam, and the
//! umbrella [`HaError`] the service API returns.

use std::io;

/// Bytes on the HA wire that cannot be a valid frame, or a value the wire cannot
/// carry. "Not enough bytes yet" is never an error: decoders return `Ok(None)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A physical offset field holds a negative number.
    #[error("negative offset {0} on the HA wire")]
    NegativeOffset(i64),
    /// A transfer frame's size field holds a negative number.
    #[error("negative body size {0} in an HA transfer frame")]
    NegativeSize(i32),
    /// A transfer frame announces more body bytes than the receiver accepts.
    #[error("HA transfer body of {size} bytes exceeds the limit of {max}")]
    BodyTooLarge {
        /// Announced body size.
        size: usize,
        /// The receiver's limit.
        max: usize,
    },
    /// An offset above `i64::MAX` cannot be encoded in the wire's signed field.
    #[error("offset {0} does not fit the wire's signed 64-bit field")]
    OffsetOutOfRange(u64),
    /// A body size above `i32::MAX` cannot be encoded in the wire's signed field.
    #[error("body size {0} does not fit the wire's signed 32-bit field")]
    SizeOutOfRange(usize),
}

/// A configuration value that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `key` holds an impossible value.
    #[error("invalid HA setting {key}: {reason}")]
    Invalid {
        /// The broker.conf key.
        key: &'static str,
        /// Why it is refused.
        reason: String,
    },
}

/// Why the log refused an append or a truncation (returned by
/// [`HaLog`](crate::HaLog) implementations).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// Replicated bytes were offered at an offset that is not the end of the log.
    #[error("append at {requested} but the log ends at {actual}")]
    OffsetMismatch {
        /// Offset of the offered bytes.
        requested: u64,
        /// Where the log really ends.
        actual: u64,
    },
    /// A truncation point outside the log.
    #[error("offset {offset} is outside the log [{min}, {max}]")]
    OutOfRange {
        /// Requested offset.
        offset: u64,
        /// First offset held.
        min: u64,
        /// End of the log.
        max: u64,
    },
    /// Anything else the store reports (poisoned writer, I/O, closed).
    #[error("store: {0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl LogError {
    /// Wraps a store error.
    pub fn store(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        LogError::Store(Box::new(e))
    }
}

/// Errors of the HA service API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HaError {
    /// The configuration cannot work.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The HA listener cannot be bound.
    #[error("cannot listen on HA port {addr} (haListenPort): {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Cause.
        source: io::Error,
    },
    /// Socket, poll or thread creation failed.
    #[error("HA I/O: {0}")]
    Io(#[from] io::Error),
    /// The log refused an operation.
    #[error(transparent)]
    Log(#[from] LogError),
    /// The operation needs a role this service does not have, or it was stopped.
    #[error("HA service: {0}")]
    NotAvailable(&'static str),
}

/// Result of the HA service API.
pub type Result<T, E = HaError> = std::result::Result<T, E>;
