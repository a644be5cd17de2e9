//! `StoreConfig`: the CommitLog-related keys of RocketMQ's `MessageStoreConfig`,
//! spelled exactly as in broker.conf so an operator's settings carry over.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::error::ConfigError;

/// Default CommitLog file size: 1 GiB (`mappedFileSizeCommitLog`).
pub const DEFAULT_MAPPED_FILE_SIZE_COMMIT_LOG: u64 = 1024 * 1024 * 1024;
/// Default largest message body: 4 MiB (`maxMessageSize`).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 4 * 1024 * 1024;
/// Smallest CommitLog file size we accept (one OS page).
pub const MIN_MAPPED_FILE_SIZE: u64 = 4096;
/// Largest CommitLog file size: RocketMQ keeps positions in a Java `int`.
pub const MAX_MAPPED_FILE_SIZE: u64 = i32::MAX as u64;

/// When a put counts as stored (`flushDiskType`), spelled as RocketMQ spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[allow(non_camel_case_types)]
pub enum FlushDiskType {
    /// The put returns once the record is in the page cache; a flush thread syncs
    /// every `flushIntervalCommitLog`.
    #[default]
    ASYNC_FLUSH,
    /// The put's completion waits for a group commit (`fdatasync`/`msync`) that covers it.
    SYNC_FLUSH,
}

/// Store settings (CommitLog part). Keys and defaults are RocketMQ's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StoreConfig {
    /// Store root (`storePathRootDir`): holds `commitlog/`, `checkpoint`, `abort`.
    /// Default `~/store`.
    pub store_path_root_dir: PathBuf,
    /// CommitLog directory (`storePathCommitLog`). Default `<storePathRootDir>/commitlog`.
    pub store_path_commit_log: Option<PathBuf>,
    /// Size of each CommitLog file in bytes (`mappedFileSizeCommitLog`). Default 1 GiB;
    /// 4 KiB ..= 2 GiB - 1. Existing files must have exactly this size.
    pub mapped_file_size_commit_log: u64,
    /// `ASYNC_FLUSH` (default) or `SYNC_FLUSH` (`flushDiskType`).
    pub flush_disk_type: FlushDiskType,
    /// Async flush period in ms (`flushIntervalCommitLog`). Default 500.
    pub flush_interval_commit_log: u64,
    /// Async flush only when at least this many 4 KiB pages are dirty
    /// (`flushCommitLogLeastPages`). Default 4.
    pub flush_commit_log_least_pages: u32,
    /// Async flush ignores the page minimum once per this many ms
    /// (`flushCommitLogThoroughInterval`). Default 10 000.
    pub flush_commit_log_thorough_interval: u64,
    /// Transient pool: commit period in ms (`commitIntervalCommitLog`). Default 200.
    pub commit_interval_commit_log: u64,
    /// Transient pool: commit only when at least this many pages are pending
    /// (`commitCommitLogLeastPages`). Default 4.
    pub commit_commit_log_least_pages: u32,
    /// Transient pool: commit regardless of pages once per this many ms
    /// (`commitCommitLogThoroughInterval`). Default 200.
    pub commit_commit_log_thorough_interval: u64,
    /// Write puts into pooled, locked buffers that a commit thread copies into the file
    /// (`transientStorePoolEnable`). Default false. Unlike RocketMQ, it also works with
    /// `SYNC_FLUSH` (the group commit commits before it syncs).
    pub transient_store_pool_enable: bool,
    /// Number of pooled buffers, each one file in size (`transientStorePoolSize`). Default 5.
    pub transient_store_pool_size: usize,
    /// How long a `SYNC_FLUSH` put waits for its group commit, in ms (`syncFlushTimeout`).
    /// Default 5 000; then it completes `FLUSH_DISK_TIMEOUT`.
    pub sync_flush_timeout: u64,
    /// Largest message body in bytes (`maxMessageSize`). Default 4 MiB. A record may
    /// additionally hold up to 64 KiB of header, topic and properties.
    pub max_message_size: usize,
    /// Verify body CRCs during normal recovery (`checkCRCOnRecover`). Default true.
    /// Abnormal recovery (abort file present) always verifies them.
    #[serde(rename = "checkCRCOnRecover")]
    pub check_crc_on_recover: bool,
    /// Warm new CommitLog files (`warmMapedFileEnable`, RocketMQ's spelling): touch
    /// and sync every page before use, so later syncs carry no extent allocation.
    /// Writes each file twice. Default false.
    pub warm_maped_file_enable: bool,
    /// Pre-fault CommitLog pages (`MADV_POPULATE_WRITE`) in the background, a few MiB
    /// at a time and up to 64 MiB ahead of the writer, so puts take no page faults
    /// (`prefaultMappedFileEnable`, sluice only). Default true. Ignored for files that
    /// use a transient pool buffer.
    pub prefault_mapped_file_enable: bool,
    /// With warming under `SYNC_FLUSH`, sync every this many pages while warming
    /// (`flushLeastPagesWhenWarmMapedFile`). Default 4096.
    pub flush_least_pages_when_warm_maped_file: u32,
    /// Index is built (`messageIndexEnable`); with `messageIndexSafe` it widens abnormal
    /// recovery to the index checkpoint. Default true.
    pub message_index_enable: bool,
    /// Start abnormal recovery early enough for the index too (`messageIndexSafe`).
    /// Default false.
    pub message_index_safe: bool,
    /// A put lock held longer than this (ms) means the page cache is busy
    /// (`osPageCacheBusyTimeOutMills`). Default 1 000.
    pub os_page_cache_busy_time_out_mills: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
        StoreConfig {
            store_path_root_dir: home.join("store"),
            store_path_commit_log: None,
            mapped_file_size_commit_log: DEFAULT_MAPPED_FILE_SIZE_COMMIT_LOG,
            flush_disk_type: FlushDiskType::ASYNC_FLUSH,
            flush_interval_commit_log: 500,
            flush_commit_log_least_pages: 4,
            flush_commit_log_thorough_interval: 10_000,
            commit_interval_commit_log: 200,
            commit_commit_log_least_pages: 4,
            commit_commit_log_thorough_interval: 200,
            transient_store_pool_enable: false,
            transient_store_pool_size: 5,
            sync_flush_timeout: 5_000,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            check_crc_on_recover: true,
            warm_maped_file_enable: false,
            prefault_mapped_file_enable: true,
            flush_least_pages_when_warm_maped_file: 1024 / 4 * 16,
            message_index_enable: true,
            message_index_safe: false,
            os_page_cache_busy_time_out_mills: 1_000,
        }
    }
}

impl StoreConfig {
    /// A config rooted at `root` with everything else default.
    #[must_use]
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        StoreConfig {
            store_path_root_dir: root.into(),
            ..StoreConfig::default()
        }
    }

    /// The CommitLog directory.
    #[must_use]
    pub fn commit_log_dir(&self) -> PathBuf {
        self.store_path_commit_log
            .clone()
            .unwrap_or_else(|| self.store_path_root_dir.join("commitlog"))
    }

    /// Path of the `checkpoint` file.
    #[must_use]
    pub fn checkpoint_path(&self) -> PathBuf {
        self.store_path_root_dir.join("checkpoint")
    }

    /// Path of the `abort` marker.
    #[must_use]
    pub fn abort_path(&self) -> PathBuf {
        self.store_path_root_dir.join("abort")
    }

    /// Largest record the encoder accepts: body limit + 64 KiB, as RocketMQ reserves.
    #[must_use]
    pub fn max_record_size(&self) -> usize {
        self.max_message_size.saturating_add(64 * 1024)
    }

    /// Rejects impossible values and clamps odd ones (with a warning).
    ///
    /// # Errors
    /// A file size outside 4 KiB ..= 2 GiB - 1, a zero body limit or timeout, or an
    /// enabled transient pool without buffers.
    pub fn sanitize(&mut self) -> Result<(), ConfigError> {
        let size = self.mapped_file_size_commit_log;
        if !(MIN_MAPPED_FILE_SIZE..=MAX_MAPPED_FILE_SIZE).contains(&size) {
            return Err(ConfigError::Invalid {
                key: "mappedFileSizeCommitLog",
                value: size.to_string(),
                reason: "must be between 4096 and 2147483647",
            });
        }
        if self.max_message_size == 0 || self.max_message_size > i32::MAX as usize {
            return Err(ConfigError::Invalid {
                key: "maxMessageSize",
                value: self.max_message_size.to_string(),
                reason: "must be between 1 and 2147483647",
            });
        }
        if self.sync_flush_timeout == 0 {
            return Err(ConfigError::Invalid {
                key: "syncFlushTimeout",
                value: "0".into(),
                reason: "must be positive",
            });
        }
        if self.transient_store_pool_enable && self.transient_store_pool_size == 0 {
            return Err(ConfigError::Invalid {
                key: "transientStorePoolSize",
                value: "0".into(),
                reason: "must be positive when transientStorePoolEnable is true",
            });
        }
        for (key, v) in [
            (
                "flushIntervalCommitLog",
                &mut self.flush_interval_commit_log,
            ),
            (
                "commitIntervalCommitLog",
                &mut self.commit_interval_commit_log,
            ),
        ] {
            if *v == 0 {
                warn!(key, "interval 0 ms would spin; using 1 ms");
                *v = 1;
            }
        }
        if (self.max_record_size() as u64) + 8 > size {
            warn!(
                max_message_size = self.max_message_size,
                file_size = size,
                "records near maxMessageSize do not fit in one commit log file; such puts will be rejected"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_rocketmq_defaults() {
        let c = StoreConfig::default();
        assert_eq!(c.mapped_file_size_commit_log, 1 << 30);
        assert_eq!(c.flush_disk_type, FlushDiskType::ASYNC_FLUSH);
        assert_eq!(c.flush_interval_commit_log, 500);
        assert_eq!(c.flush_commit_log_least_pages, 4);
        assert_eq!(c.flush_commit_log_thorough_interval, 10_000);
        assert_eq!(c.commit_interval_commit_log, 200);
        assert_eq!(c.transient_store_pool_size, 5);
        assert_eq!(c.sync_flush_timeout, 5_000);
        assert_eq!(c.max_message_size, 4 << 20);
        assert!(c.check_crc_on_recover);
        assert!(!c.warm_maped_file_enable);
        assert_eq!(c.flush_least_pages_when_warm_maped_file, 4096);
    }

    #[test]
    fn sanitize_rejects_bad_sizes_and_clamps_intervals() {
        let mut c = StoreConfig::with_root("/tmp/x");
        c.mapped_file_size_commit_log = 100;
        assert!(c.sanitize().is_err());
        c.mapped_file_size_commit_log = 64 * 1024;
        c.flush_interval_commit_log = 0;
        c.sanitize().unwrap();
        assert_eq!(c.flush_interval_commit_log, 1);
        c.transient_store_pool_enable = true;
        c.transient_store_pool_size = 0;
        assert!(c.sanitize().is_err());
    }

    #[test]
    fn deserializes_rocketmq_key_names() {
        let c: StoreConfig = serde_json::from_str(
            r#"{"storePathRootDir": "/data/s", "mappedFileSizeCommitLog": 65536,
                "flushDiskType": "SYNC_FLUSH", "checkCRCOnRecover": false,
                "warmMapedFileEnable": true, "transientStorePoolEnable": true,
                "syncFlushTimeout": 100}"#,
        )
        .unwrap();
        assert_eq!(c.store_path_root_dir, PathBuf::from("/data/s"));
        assert_eq!(c.mapped_file_size_commit_log, 65536);
        assert_eq!(c.flush_disk_type, FlushDiskType::SYNC_FLUSH);
        assert!(!c.check_crc_on_recover);
        assert!(c.warm_maped_file_enable);
        assert!(c.transient_store_pool_enable);
        assert_eq!(c.sync_flush_timeout, 100);
        assert_eq!(
            c.flush_interval_commit_log, 500,
            "absent keys keep defaults"
        );
    }

    #[test]
    fn paths_derive_from_root() {
        let c = StoreConfig::with_root("/data/store");
        assert_eq!(c.commit_log_dir(), PathBuf::from("/data/store/commitlog"));
        assert_eq!(c.checkpoint_path(), PathBuf::from("/data/store/checkpoint"));
        assert_eq!(c.abort_path(), PathBuf::from("/data/store/abort"));
    }
}
