//! Errors of the auth crate that stop a server from starting: metadata that cannot be read,
//! settings that do not parse, a plain ACL file that is not valid.

use std::path::PathBuf;

/// The metadata files cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A file exists but neither it nor its `.bak` parses.
    #[error("cannot load {path}: {reason}")]
    Load {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The auth settings cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A setting's value is wrong (the key is named, a secret never).
    #[error("invalid {key}: {reason}")]
    Config {
        /// The key.
        key: &'static str,
        /// Why.
        reason: String,
    },
    /// The users and ACLs cannot be loaded or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A management call made at start failed.
    #[error("{what}: {reason}")]
    Init {
        /// What was being done.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// The 4.9 plain ACL files are not valid.
    #[error("plain ACL {path}: {reason}")]
    Plain {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// `Result` of this crate.
pub type Result<T, E = AuthError> = std::result::Result<T, E>;
