//! `StoreConfig`: the keys of RocketMQ's `MessageStoreConfig` the store uses (CommitLog,
//! consume queues, index, reads, expiry), spelled exactly as in broker.conf so an
//! operator's settings carry over.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::error::ConfigError;

/// Default CommitLog file size: 1 GiB (`mappedFileSizeCommitLog`).
pub const DEFAULT_MAPPED_FILE_SIZE_COMMIT_LOG: u64 = 1024 * 1024 * 1024;
/// Default largest message body: 4 MiB (`maxMessageSize`).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 4 * 1024 * 1024;
/// Room a record may take beyond its body (topic, properties, fixed fields), as RocketMQ
/// reserves it.
pub const RECORD_OVERHEAD_MAX: usize = 64 * 1024;
/// Smallest CommitLog file size we accept (one OS page).
pub const MIN_MAPPED_FILE_SIZE: u64 = 4096;
/// Largest CommitLog file size: RocketMQ keeps positions in a Java `int`.
pub const MAX_MAPPED_FILE_SIZE: u64 = i32::MAX as u64;
/// Default consume-queue file size: 300 000 units of 20 bytes (`mappedFileSizeConsumeQueue`).
pub const DEFAULT_MAPPED_FILE_SIZE_CONSUME_QUEUE: u64 = 300_000 * 20;
/// Default hash slots per index file (`maxHashSlotNum`).
pub const DEFAULT_MAX_HASH_SLOT_NUM: u32 = 5_000_000;
/// Default entries per index file (`maxIndexNum`).
pub const DEFAULT_MAX_INDEX_NUM: u32 = 20_000_000;
/// Default delay levels (`messageDelayLevel`).
pub const DEFAULT_MESSAGE_DELAY_LEVEL: &str =
    "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

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

impl FlushDiskType {
    /// Whether puts wait for a sync in this configuration.
    #[must_use]
    pub fn is_sync(self) -> bool {
        self == FlushDiskType::SYNC_FLUSH
    }
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

    // ---------------------------------------------------------------- consume queues
    /// Size of each consume-queue file in bytes (`mappedFileSizeConsumeQueue`), rounded
    /// up to a multiple of 20 as RocketMQ does. Default 6 000 000 (300 000 units).
    pub mapped_file_size_consume_queue: u64,
    /// Consume-queue flush period in ms (`flushIntervalConsumeQueue`). Default 1 000.
    pub flush_interval_consume_queue: u64,
    /// Flush a consume queue only when this many pages are dirty
    /// (`flushConsumeQueueLeastPages`). Default 2.
    pub flush_consume_queue_least_pages: u32,
    /// Flush everything (and advance the checkpoint's logics/index timestamps) once per
    /// this many ms (`flushConsumeQueueThoroughInterval`). Default 60 000.
    pub flush_consume_queue_thorough_interval: u64,

    // ---------------------------------------------------------------- index
    /// Hash slots per index file (`maxHashSlotNum`). Default 5 000 000.
    pub max_hash_slot_num: u32,
    /// Entries per index file (`maxIndexNum`); entry 0 is never used. Default 20 000 000.
    pub max_index_num: u32,
    /// Most offsets one key query collects (`maxMsgsNumBatch`). Default 64.
    pub max_msgs_num_batch: usize,
    /// Default result count of a key query (`defaultQueryMaxNum`). Default 32.
    pub default_query_max_num: usize,

    // ---------------------------------------------------------------- reads
    /// Pull transfer cap in bytes while the data is in page cache
    /// (`maxTransferBytesOnMessageInMemory`). Default 256 KiB.
    pub max_transfer_bytes_on_message_in_memory: usize,
    /// Pull transfer cap in messages while in page cache
    /// (`maxTransferCountOnMessageInMemory`). Default 32.
    pub max_transfer_count_on_message_in_memory: usize,
    /// Pull transfer cap in bytes once the data is "on disk"
    /// (`maxTransferBytesOnMessageInDisk`). Default 64 KiB.
    pub max_transfer_bytes_on_message_in_disk: usize,
    /// Pull transfer cap in messages once on disk (`maxTransferCountOnMessageInDisk`).
    /// Default 8.
    pub max_transfer_count_on_message_in_disk: usize,
    /// Data further behind the CommitLog's end than this percentage of physical RAM
    /// counts as on disk, and pulls there are told to try the slave
    /// (`accessMessageInMemoryMaxRatio`). Default 40; 0..=100.
    pub access_message_in_memory_max_ratio: u32,

    // ---------------------------------------------------------------- delay levels
    /// Delay levels, space separated, each a number with a unit `s`, `m`, `h` or `d`
    /// (`messageDelayLevel`). Level L (1-based) is the L-th entry; the consume-queue
    /// tags code of a `SCHEDULE_TOPIC_XXXX` record is its deliver time. Default
    /// `"1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"`.
    pub message_delay_level: String,

    // ---------------------------------------------------------------- timer (5.x)
    /// Timer messages (`TIMER_DELIVER_MS`, `TIMER_DELAY_SEC`, `TIMER_DELAY_MS`) go through
    /// the timer wheel (`timerWheelEnable`); when false they are refused. Default true.
    pub timer_wheel_enable: bool,
    /// Width of a wheel slot in ms (`timerPrecisionMs`): 100, 200, 500 or 1000 (other
    /// values round down to one of them, as RocketMQ's setter does). sluice delivers at
    /// the exact time within a slot; the precision only shapes the files. Default 1000.
    pub timer_precision_ms: u64,
    /// Timers further ahead than this many slots are parked and re-enqueued when the
    /// window reaches them (`timerRollWindowSlot`). Default 172 800 (2 days of seconds).
    pub timer_roll_window_slot: u64,
    /// Longest delay a timer message may ask for, in seconds (`timerMaxDelaySec`).
    /// Default 259 200 (3 days).
    pub timer_max_delay_sec: u64,
    /// The timer log, wheel and checkpoint are synced this often, in ms
    /// (`timerFlushIntervalMs`). Default 1 000.
    pub timer_flush_interval_ms: u64,
    /// Size of each `timerlog/` file (`mappedFileSizeTimerLog`). Default 100 MiB.
    pub mapped_file_size_timer_log: u64,
    /// A slot with more timers than this refuses some new ones, all above twice this
    /// (`timerCongestNumEachSlot`). Default `i32::MAX` (never).
    pub timer_congest_num_each_slot: i64,
    /// Stop enqueuing timers (`timerStopEnqueue`, for operators). Default false.
    pub timer_stop_enqueue: bool,
    /// Stop delivering timers (`timerStopDequeue`, for operators). Default false.
    pub timer_stop_dequeue: bool,
    /// RocketMQ 5.4's RocksDB timeline engine (`timerRocksDBEnable`). sluice has the file
    /// wheel only, so true is refused at start rather than silently ignored.
    #[serde(rename = "timerRocksDBEnable")]
    pub timer_rocks_db_enable: bool,

    // ---------------------------------------------------------------- expiry
    /// Hours a CommitLog file is kept after its last write (`fileReservedTime`).
    /// Default 72.
    pub file_reserved_time: u64,
    /// Local hours at which expired files are deleted, `;`-separated (`deleteWhen`).
    /// Default `"04"`.
    pub delete_when: String,
    /// Above this disk usage (percent) expired files are deleted at once, whatever the
    /// hour (`diskMaxUsedSpaceRatio`). Default 75; clamped to 10..=95.
    pub disk_max_used_space_ratio: u32,
    /// Above this disk usage (percent) files are deleted regardless of age, if
    /// `cleanFileForciblyEnable` (`diskSpaceCleanForciblyRatio`, a 5.x key; 4.9 reads
    /// a system property with the same default). Default 85.
    pub disk_space_clean_forcibly_ratio: u32,
    /// Above this disk usage (percent) puts are refused until usage falls
    /// (`diskSpaceWarningLevelRatio`). Default 90.
    pub disk_space_warning_level_ratio: u32,
    /// Allow deleting unexpired files above `diskSpaceCleanForciblyRatio`
    /// (`cleanFileForciblyEnable`). Default true.
    pub clean_file_forcibly_enable: bool,
    /// Period of the cleanup pass in ms (`cleanResourceInterval`). Default 10 000.
    pub clean_resource_interval: u64,
    /// Pause between two CommitLog file deletions in ms
    /// (`deleteCommitLogFilesInterval`). Default 100.
    pub delete_commit_log_files_interval: u64,
    /// Pause after the files of one consume queue were deleted, in ms
    /// (`deleteConsumeQueueFilesInterval`). Default 100.
    pub delete_consume_queue_files_interval: u64,
    /// A file whose deletion waits for readers this long (ms) is deleted anyway
    /// (`destroyMapedFileIntervalForcibly`, RocketMQ's spelling). Default 120 000.
    pub destroy_maped_file_interval_forcibly: u64,
    /// Retry a deletion that waited for readers every this many ms
    /// (`redeleteHangedFileInterval`). Default 120 000.
    pub redelete_hanged_file_interval: u64,
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
            mapped_file_size_consume_queue: DEFAULT_MAPPED_FILE_SIZE_CONSUME_QUEUE,
            flush_interval_consume_queue: 1_000,
            flush_consume_queue_least_pages: 2,
            flush_consume_queue_thorough_interval: 60_000,
            max_hash_slot_num: DEFAULT_MAX_HASH_SLOT_NUM,
            max_index_num: DEFAULT_MAX_INDEX_NUM,
            max_msgs_num_batch: 64,
            default_query_max_num: 32,
            max_transfer_bytes_on_message_in_memory: 256 * 1024,
            max_transfer_count_on_message_in_memory: 32,
            max_transfer_bytes_on_message_in_disk: 64 * 1024,
            max_transfer_count_on_message_in_disk: 8,
            access_message_in_memory_max_ratio: 40,
            message_delay_level: DEFAULT_MESSAGE_DELAY_LEVEL.to_owned(),
            timer_wheel_enable: true,
            timer_precision_ms: 1000,
            timer_roll_window_slot: 3600 * 24 * 2,
            timer_max_delay_sec: 3600 * 24 * 3,
            timer_flush_interval_ms: 1000,
            mapped_file_size_timer_log: 100 * 1024 * 1024,
            timer_congest_num_each_slot: i64::from(i32::MAX),
            timer_stop_enqueue: false,
            timer_stop_dequeue: false,
            timer_rocks_db_enable: false,
            file_reserved_time: 72,
            delete_when: "04".to_owned(),
            disk_max_used_space_ratio: 75,
            disk_space_clean_forcibly_ratio: 85,
            disk_space_warning_level_ratio: 90,
            clean_file_forcibly_enable: true,
            clean_resource_interval: 10_000,
            delete_commit_log_files_interval: 100,
            delete_consume_queue_files_interval: 100,
            destroy_maped_file_interval_forcibly: 120_000,
            redelete_hanged_file_interval: 120_000,
        }
    }
}

/// Parses `messageDelayLevel` into the delay of each level in ms, level 1 first: the
/// one parser of this key (the store's dispatch computes deliver times with it, the
/// broker's schedule service delivers with it).
///
/// Entries are separated by whitespace; each is a decimal number followed by a unit
/// `s`, `m`, `h` or `d`. Every delay is in `0..=i64::MAX` ms, so callers add it to a
/// timestamp with saturating arithmetic only.
///
/// # Errors
/// An entry without a known unit or without a number before it, a delay that does
/// not fit in `i64` ms, or no entry at all.
pub fn parse_delay_levels(s: &str) -> Result<Vec<i64>, ConfigError> {
    let bad = |entry: &str, reason| ConfigError::InvalidEntry {
        key: "messageDelayLevel",
        value: s.to_owned(),
        entry: entry.to_owned(),
        reason,
    };
    let levels = s
        .split_whitespace()
        .map(|entry| {
            // The unit is the last char, not the last byte: an operator's typo may be
            // any character.
            let unit_at = entry.char_indices().last().map_or(0, |(i, _)| i);
            let (num, unit) = entry.split_at(unit_at);
            let unit_ms: u64 = match unit {
                "s" => 1_000,
                "m" => 60_000,
                "h" => 3_600_000,
                "d" => 86_400_000,
                _ => return Err(bad(entry, "needs a unit s, m, h or d")),
            };
            let n: u64 = num
                .parse()
                .map_err(|_| bad(entry, "needs a whole number before the unit"))?;
            n.checked_mul(unit_ms)
                .and_then(|ms| i64::try_from(ms).ok())
                .ok_or_else(|| bad(entry, "is too long"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if levels.is_empty() {
        return Err(ConfigError::Invalid {
            key: "messageDelayLevel",
            value: s.to_owned(),
            reason: "names no delay level",
        });
    }
    Ok(levels)
}

/// Parses `deleteWhen` (`"04"`, `"04;10"`) into hours; unparsable entries are skipped,
/// as RocketMQ would fail on them.
#[must_use]
pub fn parse_delete_when(s: &str) -> Vec<u32> {
    s.split(';').filter_map(|h| h.trim().parse().ok()).collect()
}

impl StoreConfig {
    /// The timer keys as RocketMQ reads them: the precision rounds down to 100, 200,
    /// 500 or 1000 ms; a roll window outside `2..=slots − 60` becomes `slots − 60`.
    fn sanitize_timer(&mut self) -> Result<(), ConfigError> {
        let precision = [1000, 500, 200, 100]
            .into_iter()
            .find(|c| self.timer_precision_ms >= *c)
            .unwrap_or(100);
        if precision != self.timer_precision_ms {
            warn!(
                value = self.timer_precision_ms,
                used = precision,
                "timerPrecisionMs is one of 100, 200, 500, 1000; rounded down"
            );
            self.timer_precision_ms = precision;
        }
        let most = crate::timer::wheel::SLOTS_TOTAL.unsigned_abs()
            - crate::timer::wheel::BLANK_SLOTS.unsigned_abs();
        if !(2..=most).contains(&self.timer_roll_window_slot) {
            warn!(
                value = self.timer_roll_window_slot,
                used = most,
                "timerRollWindowSlot outside 2..={most}; using {most}"
            );
            self.timer_roll_window_slot = most;
        }
        if self.timer_rocks_db_enable {
            return Err(ConfigError::Invalid {
                key: "timerRocksDBEnable",
                value: "true".into(),
                reason: "the RocksDB timeline engine is not available: timers use the file time wheel (timerWheelEnable)",
            });
        }
        if self.timer_flush_interval_ms == 0 {
            self.timer_flush_interval_ms = 1;
        }
        if !(4096..=MAX_MAPPED_FILE_SIZE).contains(&self.mapped_file_size_timer_log) {
            return Err(ConfigError::Invalid {
                key: "mappedFileSizeTimerLog",
                value: self.mapped_file_size_timer_log.to_string(),
                reason: "must be at least 4096 bytes and below 2 GiB",
            });
        }
        Ok(())
    }

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

    /// The consume-queue root (`<root>/consumequeue`).
    #[must_use]
    pub fn consume_queue_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("consumequeue")
    }

    /// The index directory (`<root>/index`).
    #[must_use]
    pub fn index_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("index")
    }

    /// Size of one index file: 40-byte header, 4 bytes per slot, 20 per entry.
    #[must_use]
    pub fn index_file_size(&self) -> u64 {
        40 + 4 * u64::from(self.max_hash_slot_num) + 20 * u64::from(self.max_index_num)
    }

    /// Largest record the encoder accepts: body limit + 64 KiB, as RocketMQ reserves.
    #[must_use]
    pub fn max_record_size(&self) -> usize {
        self.max_message_size.saturating_add(RECORD_OVERHEAD_MAX)
    }

    /// Rejects impossible values and clamps odd ones (with a warning).
    ///
    /// # Errors
    /// A file size outside 4 KiB ..= 2 GiB - 1, a zero body limit or timeout, or an
    /// enabled transient pool without buffers.
    pub fn sanitize(&mut self) -> Result<(), ConfigError> {
        // `~/store` as in RocketMQ's docs: the home directory, not a directory named `~`.
        for path in [
            Some(&mut self.store_path_root_dir),
            self.store_path_commit_log.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            if let (Ok(rest), Some(home)) = (path.strip_prefix("~"), std::env::var_os("HOME")) {
                *path = PathBuf::from(home).join(rest);
            }
        }
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
        let cq = self
            .mapped_file_size_consume_queue
            .div_ceil(20)
            .saturating_mul(20);
        if !(20..=MAX_MAPPED_FILE_SIZE).contains(&cq) {
            return Err(ConfigError::Invalid {
                key: "mappedFileSizeConsumeQueue",
                value: self.mapped_file_size_consume_queue.to_string(),
                reason: "must hold at least one 20-byte unit and stay below 2 GiB",
            });
        }
        self.mapped_file_size_consume_queue = cq;
        if self.max_hash_slot_num == 0 || self.max_index_num < 2 {
            return Err(ConfigError::Invalid {
                key: "maxHashSlotNum/maxIndexNum",
                value: format!("{}/{}", self.max_hash_slot_num, self.max_index_num),
                reason: "need at least one slot and two entries (entry 0 is unused)",
            });
        }
        if self.index_file_size() > MAX_MAPPED_FILE_SIZE {
            return Err(ConfigError::Invalid {
                key: "maxHashSlotNum/maxIndexNum",
                value: format!("{}/{}", self.max_hash_slot_num, self.max_index_num),
                reason: "the index file (4 bytes a slot, 20 an entry) would exceed 2 GiB",
            });
        }
        parse_delay_levels(&self.message_delay_level)?;
        self.sanitize_timer()?;
        if self.access_message_in_memory_max_ratio > 100 {
            warn!(
                value = self.access_message_in_memory_max_ratio,
                "accessMessageInMemoryMaxRatio above 100; using 100"
            );
            self.access_message_in_memory_max_ratio = 100;
        }
        let ratio = self.disk_max_used_space_ratio.clamp(10, 95);
        if ratio != self.disk_max_used_space_ratio {
            warn!(
                value = self.disk_max_used_space_ratio,
                used = ratio,
                "diskMaxUsedSpaceRatio outside 10..=95; clamped"
            );
            self.disk_max_used_space_ratio = ratio;
        }
        if parse_delete_when(&self.delete_when).is_empty() {
            warn!(delete_when = %self.delete_when, "deleteWhen names no hour; expired files are deleted only when the disk fills");
        }
        for (key, v) in [
            (
                "flushIntervalConsumeQueue",
                &mut self.flush_interval_consume_queue,
            ),
            ("cleanResourceInterval", &mut self.clean_resource_interval),
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
    use proptest::prelude::*;

    #[test]
    fn tilde_means_home() {
        let mut c = StoreConfig::with_root("~/store");
        c.sanitize().unwrap();
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        assert_eq!(c.store_path_root_dir, home.join("store"));
        let mut c = StoreConfig::with_root("/data/~x");
        c.sanitize().unwrap();
        assert_eq!(c.store_path_root_dir, PathBuf::from("/data/~x"));
    }

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
    fn timer_keys_are_read_as_rocketmq_reads_them() {
        let mut c = StoreConfig {
            timer_precision_ms: 300,
            timer_roll_window_slot: 1,
            ..StoreConfig::default()
        };
        c.sanitize().unwrap();
        assert_eq!(c.timer_precision_ms, 200);
        assert_eq!(c.timer_roll_window_slot, 7 * 24 * 3600 - 60);
        let mut c = StoreConfig {
            timer_precision_ms: 50,
            ..StoreConfig::default()
        };
        c.sanitize().unwrap();
        assert_eq!(c.timer_precision_ms, 100);
        let mut c = StoreConfig {
            timer_rocks_db_enable: true,
            ..StoreConfig::default()
        };
        assert!(
            c.sanitize().is_err(),
            "the RocksDB engine is refused, not ignored"
        );
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
    fn index_and_expiry_defaults_and_clamps() {
        let mut c = StoreConfig::with_root("/tmp/x");
        assert_eq!(c.mapped_file_size_consume_queue, 6_000_000);
        assert_eq!(c.index_file_size(), 420_000_040);
        assert_eq!(c.disk_max_used_space_ratio, 75);
        assert_eq!(c.file_reserved_time, 72);
        assert_eq!(c.delete_when, "04");
        assert_eq!(c.max_transfer_bytes_on_message_in_memory, 256 * 1024);
        assert_eq!(c.max_transfer_count_on_message_in_disk, 8);
        c.disk_max_used_space_ratio = 99;
        c.mapped_file_size_consume_queue = 1001;
        c.sanitize().unwrap();
        assert_eq!(c.disk_max_used_space_ratio, 95);
        assert_eq!(
            c.mapped_file_size_consume_queue, 1020,
            "rounded up to whole units"
        );
        c.disk_max_used_space_ratio = 1;
        c.sanitize().unwrap();
        assert_eq!(c.disk_max_used_space_ratio, 10);
        c.message_delay_level = "1s 2x".into();
        assert!(c.sanitize().is_err());
    }

    #[test]
    fn delay_levels_and_delete_when_parse() {
        assert_eq!(
            parse_delay_levels("1s 5s 1m 2h 1d").unwrap(),
            vec![1_000, 5_000, 60_000, 7_200_000, 86_400_000]
        );
        assert_eq!(
            parse_delay_levels(DEFAULT_MESSAGE_DELAY_LEVEL)
                .unwrap()
                .len(),
            18
        );
        for bad in ["", " ", "1", "1x", "s", "-1s", "1.5s", "+s"] {
            assert!(parse_delay_levels(bad).is_err(), "{bad}");
        }
        // Tabs and repeated blanks separate entries too.
        assert_eq!(parse_delay_levels(" 1s\t 2s ").unwrap(), vec![1_000, 2_000]);
        assert_eq!(parse_delete_when("04"), vec![4]);
        assert_eq!(parse_delete_when("04;10; 23"), vec![4, 10, 23]);
        assert!(parse_delete_when("x").is_empty());
    }

    #[test]
    fn delay_level_with_multibyte_unit_is_an_error() {
        // Slicing off the last byte of "1é" cut inside the 'é' and panicked.
        let e = parse_delay_levels("1s 1é").unwrap_err().to_string();
        assert!(e.contains("messageDelayLevel") && e.contains("'1é'"), "{e}");
    }

    #[test]
    fn delay_level_too_long_is_an_error() {
        // i64::MAX ms is 106 751 991 167 days and a bit.
        assert_eq!(
            parse_delay_levels("106751991167d").unwrap(),
            vec![106_751_991_167 * 86_400_000]
        );
        for long in ["106751991168d", "300000000000000d", "18446744073709551616s"] {
            let e = parse_delay_levels(long).unwrap_err().to_string();
            assert!(e.contains(long), "{e}");
        }
    }

    #[test]
    fn consume_queue_file_size_near_u64_max_is_an_error() {
        // Rounding up to whole 20-byte units overflowed.
        let mut c = StoreConfig::with_root("/tmp/x");
        c.mapped_file_size_consume_queue = u64::MAX;
        let e = c.sanitize().unwrap_err().to_string();
        assert!(e.contains("mappedFileSizeConsumeQueue"), "{e}");
    }

    #[test]
    fn deserializes_rocketmq_key_names() {
        let c: StoreConfig = serde_json::from_str(
            r#"{"storePathRootDir": "/data/s", "mappedFileSizeCommitLog": 65536,
                "flushDiskType": "SYNC_FLUSH", "checkCRCOnRecover": false,
                "warmMapedFileEnable": true, "transientStorePoolEnable": true,
                "syncFlushTimeout": 100, "fileReservedTime": 48, "deleteWhen": "03;04",
                "diskMaxUsedSpaceRatio": 80, "destroyMapedFileIntervalForcibly": 5000,
                "mappedFileSizeConsumeQueue": 6000, "maxHashSlotNum": 100,
                "messageDelayLevel": "1s 2s"}"#,
        )
        .unwrap();
        assert_eq!(c.store_path_root_dir, PathBuf::from("/data/s"));
        assert_eq!(c.mapped_file_size_commit_log, 65536);
        assert_eq!(c.flush_disk_type, FlushDiskType::SYNC_FLUSH);
        assert!(!c.check_crc_on_recover);
        assert!(c.warm_maped_file_enable);
        assert!(c.transient_store_pool_enable);
        assert_eq!(c.sync_flush_timeout, 100);
        assert_eq!(c.file_reserved_time, 48);
        assert_eq!(c.delete_when, "03;04");
        assert_eq!(c.disk_max_used_space_ratio, 80);
        assert_eq!(c.destroy_maped_file_interval_forcibly, 5000);
        assert_eq!(c.mapped_file_size_consume_queue, 6000);
        assert_eq!(c.max_hash_slot_num, 100);
        assert_eq!(c.message_delay_level, "1s 2s");
        assert_eq!(
            c.flush_interval_commit_log, 500,
            "absent keys keep defaults"
        );
    }

    /// Numbers at and past the bounds the store's arithmetic cares about.
    fn edge() -> impl Strategy<Value = u64> {
        prop_oneof![
            prop::sample::select(vec![
                0,
                1,
                19,
                20,
                21,
                4095,
                4096,
                65_536 + 8,
                u64::from(u32::MAX),
                i32::MAX as u64,
                i32::MAX as u64 + 1,
                i64::MAX as u64,
                u64::MAX - 19,
                u64::MAX,
            ]),
            any::<u64>(),
            0u64..100_000,
        ]
    }

    proptest! {
        #[test]
        fn delay_levels_never_panic(text in "\\PC{0,40}|[0-9smhd+\\- \\t\u{e9}]{0,30}") {
            if let Ok(levels) = parse_delay_levels(&text) {
                prop_assert!(!levels.is_empty() && levels.iter().all(|ms| *ms >= 0));
            }
            let _ = parse_delete_when(&text);
        }

        #[test]
        fn delay_levels_read_back(levels in prop::collection::vec((0u64..1_000_000, 0usize..4), 1..20)) {
            const UNITS: [(&str, i64); 4] = [("s", 1_000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)];
            let text = levels
                .iter()
                .map(|(n, u)| format!("{n}{}", UNITS[*u].0))
                .collect::<Vec<_>>()
                .join(" ");
            let want: Vec<i64> = levels
                .iter()
                .map(|(n, u)| i64::try_from(*n).unwrap() * UNITS[*u].1)
                .collect();
            prop_assert_eq!(parse_delay_levels(&text).unwrap(), want);
        }

        #[test]
        fn delete_when_reads_back(hours in prop::collection::vec(0u32..24, 0..6)) {
            let text = hours.iter().map(|h| format!("{h:02}")).collect::<Vec<_>>().join(";");
            prop_assert_eq!(parse_delete_when(&text), hours);
        }

        #[test]
        fn sanitize_never_panics_and_leaves_sane_values(
            edits in prop::collection::vec((any::<prop::sample::Index>(), edge()), 0..16),
            delay in "\\PC{0,12}|1s 2s",
            delete_when in "\\PC{0,8}|04",
        ) {
            let base = serde_json::to_value(StoreConfig::with_root("/tmp/x")).unwrap();
            let numeric: Vec<String> = base
                .as_object()
                .unwrap()
                .iter()
                .filter(|(_, v)| v.is_u64())
                .map(|(k, _)| k.clone())
                .collect();
            let mut value = base;
            value["messageDelayLevel"] = delay.into();
            value["deleteWhen"] = delete_when.into();
            for (i, n) in edits {
                let key = i.get(&numeric);
                let before = value[key].clone();
                value[key] = n.into();
                // A number the field's type cannot hold is a parse error, not a config.
                if serde_json::from_value::<StoreConfig>(value.clone()).is_err() {
                    value[key] = before;
                }
            }
            let mut c: StoreConfig = serde_json::from_value(value).unwrap();
            if c.sanitize().is_ok() {
                prop_assert!((MIN_MAPPED_FILE_SIZE..=MAX_MAPPED_FILE_SIZE).contains(&c.mapped_file_size_commit_log));
                prop_assert_eq!(c.mapped_file_size_consume_queue % 20, 0);
                prop_assert!(c.index_file_size() <= MAX_MAPPED_FILE_SIZE);
                prop_assert!((10..=95).contains(&c.disk_max_used_space_ratio));
                prop_assert!(c.access_message_in_memory_max_ratio <= 100);
                prop_assert!(!parse_delay_levels(&c.message_delay_level).unwrap().is_empty());
                let _ = c.max_record_size();
            }
        }
    }

    #[test]
    fn paths_derive_from_root() {
        let c = StoreConfig::with_root("/data/store");
        assert_eq!(c.commit_log_dir(), PathBuf::from("/data/store/commitlog"));
        assert_eq!(c.checkpoint_path(), PathBuf::from("/data/store/checkpoint"));
        assert_eq!(c.abort_path(), PathBuf::from("/data/store/abort"));
    }
}
