//! Errors of the name server: configuration, persisted files, startup.
//!
//! Request-level failures never surface here: the processor turns them into
//! RocketMQ response codes in one place (`processor`).

use std::io;

/// A setting that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file or an override could not be loaded.
    #[error(transparent)]
    Load(#[from] remoting::settings::SettingsError),
    /// A value is out of range or inconsistent.
    #[error("invalid name server config: {0}")]
    Invalid(String),
}

/// Why the name server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NamesrvError {
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The KV config could not be loaded.
    #[error(transparent)]
    Persist(#[from] remoting::config_file::ConfigFileError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr} (listenPort): {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Cause.
        source: io::Error,
    },
}

/// Result alias of the nameserver crate.
pub type Result<T, E = NamesrvError> = std::result::Result<T, E>;
