//! Error types of the store: one umbrella [`StoreError`] plus the config error.
//!
//! Put outcomes are not errors: a put always returns a [`crate::PutResult`] whose
//! [`crate::PutMessageStatus`] says what happened, as RocketMQ's `PutMessageResult` does.
//! `StoreError` is for opening, recovery, reads by the HA/dispatch side, and the
//! background services.

use std::io;
use std::path::PathBuf;

/// The crate's result type.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Everything that can go wrong in the store outside the put path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A file operation failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What we were doing (`"create"`, `"fallocate"`, `"msync"`, ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A file's content or name violates the store layout.
    #[error("corrupt store file {} at {offset}: {reason}", file.display())]
    Corrupt {
        /// The file.
        file: PathBuf,
        /// Byte offset (physical offset for CommitLog files).
        offset: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// A CommitLog file does not have the configured size.
    #[error("{} is {actual} bytes, expected mappedFileSizeCommitLog = {expected}", file.display())]
    FileSize {
        /// The file.
        file: PathBuf,
        /// Its length on disk.
        actual: u64,
        /// The configured size.
        expected: u64,
    },
    /// Two neighbouring CommitLog files are not consecutive.
    #[error("commit log files are not consecutive: {} follows {}", next.display(), prev.display())]
    NotContiguous {
        /// The earlier file.
        prev: PathBuf,
        /// The later file, whose name is not `prev + file size`.
        next: PathBuf,
    },
    /// `append_raw` was asked to write somewhere else than at the end of the log.
    #[error("append at {requested}, but the log ends at {actual}")]
    OffsetMismatch {
        /// Offset the caller wanted to write at.
        requested: u64,
        /// Current end of the log.
        actual: u64,
    },
    /// The requested offset is outside the log.
    #[error("offset {offset} is outside the log [{min}, {max})")]
    OutOfRange {
        /// Requested offset.
        offset: u64,
        /// Lowest offset held.
        min: u64,
        /// End of the log.
        max: u64,
    },
    /// An earlier write or sync failed; the writer refuses further writes until reopened.
    #[error("commit log writer poisoned by an earlier failure: {0}")]
    Poisoned(String),
    /// The store was shut down.
    #[error("the commit log is shut down")]
    Closed,
    /// Readers still hold slices of bytes that a truncation would overwrite.
    #[error("readers still hold data past offset {offset}")]
    ReadersActive {
        /// The truncation offset.
        offset: u64,
    },
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Another broker holds the store, or its lock cannot be taken.
    #[error(transparent)]
    Locked(#[from] crate::lock::LockError),
}

impl StoreError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// Why a [`crate::StoreConfig`] was rejected by `sanitize`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A value is outside its bounds.
    #[error("{key} = {value} is invalid: {reason}")]
    Invalid {
        /// RocketMQ key name.
        key: &'static str,
        /// The value given.
        value: String,
        /// Why.
        reason: &'static str,
    },
    /// One entry of a list-valued setting is invalid.
    #[error("{key} = '{value}': entry '{entry}' is invalid: {reason}")]
    InvalidEntry {
        /// RocketMQ key name.
        key: &'static str,
        /// The whole value given.
        value: String,
        /// The offending entry.
        entry: String,
        /// Why.
        reason: &'static str,
    },
}
