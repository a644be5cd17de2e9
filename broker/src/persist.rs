//! The broker's JSON config files under `<storePathRootDir>/config/`, in RocketMQ's
//! formats (fastjson bare keys), written crash-safely through `remoting::config_file`.

use std::path::{Path, PathBuf};

use remoting::config_file::{self, ConfigFileError};
use remoting::fastjson::{self, KeyStyle};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `topics.json`.
pub const TOPICS_JSON: &str = "topics.json";
/// `subscriptionGroup.json`.
pub const SUBSCRIPTION_GROUP_JSON: &str = "subscriptionGroup.json";
/// `consumerOffset.json`.
pub const CONSUMER_OFFSET_JSON: &str = "consumerOffset.json";
/// `delayOffset.json`.
pub const DELAY_OFFSET_JSON: &str = "delayOffset.json";

/// `<root>/config/<name>`.
#[must_use]
pub fn config_path(store_root: &Path, name: &str) -> PathBuf {
    store_root.join("config").join(name)
}

/// Loads a table, falling back to its `.bak`; `None` when neither file exists.
///
/// # Errors
/// A file exists but neither it nor its `.bak` parses.
pub fn load<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, ConfigFileError> {
    config_file::read_with_backup(path, |bytes| {
        fastjson::from_slice::<T>(bytes).map_err(|e| e.to_string())
    })
}

/// Writes a table atomically in fastjson's form.
///
/// # Errors
/// Serialisation or any I/O step failed; the previous file is then unchanged.
pub fn save<T: Serialize>(path: &Path, value: &T) -> Result<(), ConfigFileError> {
    let bytes =
        fastjson::to_vec(value, KeyStyle::Fastjson).map_err(|e| ConfigFileError::Corrupt {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
    config_file::write_atomic(path, &bytes)
}
