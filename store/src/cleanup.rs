//! Expiry cleanup (RocketMQ `CleanCommitLogService` + `CleanConsumeQueueService`):
//! CommitLog files older than `fileReservedTime` go when the local hour is in
//! `deleteWhen`, or at once when the disk is fuller than `diskMaxUsedSpaceRatio`;
//! above `diskSpaceCleanForciblyRatio` they go regardless of age; above
//! `diskSpaceWarningLevelRatio` puts are refused until usage falls again. Consume
//! queue and index files follow the CommitLog's new minimum offset.
//!
//! Deletion is paced (`deleteCommitLogFilesInterval` between files, at most 10 per
//! pass) and never pulls a file from under a reader: a file being read is only marked
//! (no new readers; pulls there see `MESSAGE_WAS_REMOVING`) and deleted by a later
//! pass, or after `destroyMapedFileIntervalForcibly`, when its readers keep their
//! bytes anyway (see [`MappedFile::destroy_when_unused`]).
//!
//! Like RocketMQ, expiry does not look at consumer progress: unconsumed messages in an
//! expired file are deleted with it, and the log says so.
//!
//! Decisions read the [`Clock`] and the [`DiskUsage`] seam, so the tests run them with
//! a manual clock and a fake disk.
//!
//! [`MappedFile::destroy_when_unused`]: crate::mapped_file::MappedFile::destroy_when_unused

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tracing::{error, info, warn};

use crate::clock::{Clock, local_hour};
use crate::commit_log::{CommitLog, refuse};
use crate::config::{StoreConfig, parse_delete_when};
use crate::consume_queue::ConsumeQueueTable;
use crate::error::Result;
use crate::index::IndexService;

/// At most this many CommitLog files are deleted per pass (RocketMQ
/// `DELETE_FILES_BATCH_MAX`).
pub const DELETE_FILES_BATCH_MAX: usize = 10;
/// Passes a manual delete request (`mqadmin deleteExpiredCommitLog`) lasts.
pub const MAX_MANUAL_DELETE_FILE_TIMES: u32 = 20;

/// How full a file system is.
pub trait DiskUsage: Send + Sync + Debug {
    /// Used fraction (0.0 ..= 1.0) of the file system holding `path`; `None` if it
    /// cannot be read.
    fn used_ratio(&self, path: &Path) -> Option<f64>;
}

/// `statvfs`, as RocketMQ's `UtilAll.getDiskPartitionSpaceUsedPercent` measures it: see
/// [`used_ratio_of`].
#[derive(Debug, Default, Clone, Copy)]
pub struct StatvfsDiskUsage;

impl DiskUsage for StatvfsDiskUsage {
    fn used_ratio(&self, path: &Path) -> Option<f64> {
        let s = rustix::fs::statvfs(path).ok()?;
        used_ratio_of(s.f_blocks, s.f_bfree, s.f_bavail)
    }
}

/// The used share of a file system of `blocks`, `free` of them free and `available` of those
/// free to an unprivileged writer: used / (used + available), rounded up to a whole percent,
/// as RocketMQ (4.9 and 5.x) computes it. Blocks only root may take count as neither, so a
/// disk whose last free blocks are reserved for root reads as full: that is when our writes
/// would fail. `None` for an empty file system.
#[must_use]
pub fn used_ratio_of(blocks: u64, free: u64, available: u64) -> Option<f64> {
    let used = u128::from(blocks.saturating_sub(free));
    let entire = used + u128::from(available);
    if entire == 0 {
        return None;
    }
    let percent = (used * 100).div_ceil(entire);
    Some(percent as f64 / 100.0)
}

/// Bytes used on the file system holding `path` (blocks − free blocks, the used part of
/// [`used_ratio_of`]; RocketMQ's `rocketmq_storage_size`), `None` if it
/// cannot be read.
#[must_use]
pub fn used_bytes(path: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(path).ok()?;
    s.f_blocks.saturating_sub(s.f_bfree).checked_mul(s.f_frsize)
}

/// A disk whose usage is whatever it was last set to (tests).
#[derive(Debug)]
pub struct ManualDiskUsage(Mutex<Option<f64>>);

impl ManualDiskUsage {
    /// A disk `ratio` full.
    #[must_use]
    pub fn new(ratio: f64) -> Self {
        ManualDiskUsage(Mutex::new(Some(ratio)))
    }

    /// Sets the usage (`None`: unreadable).
    pub fn set(&self, ratio: Option<f64>) {
        *self.0.lock() = ratio;
    }
}

impl DiskUsage for ManualDiskUsage {
    fn used_ratio(&self, _path: &Path) -> Option<f64> {
        *self.0.lock()
    }
}

/// What the disk usage calls for (RocketMQ `isSpaceToDelete`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskVerdict {
    /// The usage read (the larger of the CommitLog's and the consume queues' file
    /// systems; `None` if unreadable).
    pub ratio: Option<f64>,
    /// Above `diskMaxUsedSpaceRatio` (or unreadable): delete expired files now,
    /// whatever the hour.
    pub space_to_delete: bool,
    /// Above `diskSpaceCleanForciblyRatio`: delete regardless of age (if allowed).
    pub clean_immediately: bool,
    /// Above `diskSpaceWarningLevelRatio`: refuse puts.
    pub disk_full: bool,
}

/// Judges a usage ratio by the config's thresholds.
#[must_use]
pub fn judge(ratio: Option<f64>, c: &StoreConfig) -> DiskVerdict {
    let pct = |p: u32| f64::from(p) / 100.0;
    match ratio {
        None => DiskVerdict {
            ratio,
            space_to_delete: true,
            clean_immediately: false,
            disk_full: false,
        },
        Some(r) => DiskVerdict {
            ratio,
            space_to_delete: r > pct(c.disk_max_used_space_ratio),
            clean_immediately: r > pct(c.disk_space_clean_forcibly_ratio),
            disk_full: r > pct(c.disk_space_warning_level_ratio),
        },
    }
}

/// What one cleanup pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanReport {
    /// CommitLog files deleted.
    pub commit_log_files: usize,
    /// Consume-queue files deleted.
    pub consume_queue_files: usize,
    /// Index files deleted.
    pub index_files: usize,
}

/// The cleanup state and its passes; the store's cleanup thread calls
/// [`check_disk`](Self::check_disk) every 10 s and [`run`](Self::run) every
/// `cleanResourceInterval`.
#[derive(Debug)]
pub(crate) struct Cleaner {
    clock: Arc<dyn Clock>,
    disk: Arc<dyn DiskUsage>,
    manual_times: AtomicU32,
    last_redelete_ms: AtomicI64,
    last_physical_min: AtomicU64,
    disk_full_reason: Mutex<Option<String>>,
    /// One pass at a time.
    pass: Mutex<()>,
}

impl Cleaner {
    pub(crate) fn new(clock: Arc<dyn Clock>, disk: Arc<dyn DiskUsage>) -> Self {
        Cleaner {
            clock,
            disk,
            manual_times: AtomicU32::new(0),
            last_redelete_ms: AtomicI64::new(0),
            last_physical_min: AtomicU64::new(0),
            disk_full_reason: Mutex::new(None),
            pass: Mutex::new(()),
        }
    }

    /// Makes the next 20 passes delete expired files whatever the hour
    /// (`executeDeleteFilesManually`).
    pub(crate) fn delete_manually(&self) {
        self.manual_times
            .store(MAX_MANUAL_DELETE_FILE_TIMES, Ordering::Release);
        info!("manual deletion of expired files requested");
    }

    /// Used fraction of the file system holding `path`.
    pub(crate) fn disk_ratio(&self, path: &Path) -> Option<f64> {
        self.disk.used_ratio(path)
    }

    /// Why puts are refused for lack of disk, if they are.
    pub(crate) fn disk_full_reason(&self) -> Option<String> {
        self.disk_full_reason.lock().clone()
    }

    /// Reads the disk usage and sets or clears the disk-full refusal of puts.
    pub(crate) fn check_disk(&self, log: &CommitLog, c: &StoreConfig) -> DiskVerdict {
        let cl_dir = c.commit_log_dir();
        let cq_dir = c.consume_queue_dir();
        let physic = self.disk.used_ratio(&cl_dir);
        let logics = if cq_dir.exists() {
            self.disk.used_ratio(&cq_dir)
        } else {
            physic
        };
        let ratio = match (physic, logics) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let v = judge(ratio, c);
        let mut reason = self.disk_full_reason.lock();
        if v.disk_full {
            let pct = ratio.unwrap_or(1.0) * 100.0;
            let text = format!(
                "disk of {} is {pct:.1}% full, above diskSpaceWarningLevelRatio {}%: puts are refused until cleanup frees space",
                cl_dir.display(),
                c.disk_space_warning_level_ratio
            );
            if !log.set_refusal(refuse::DISK_FULL, true) {
                error!(ratio = pct, dir = %cl_dir.display(), "disk almost full; refusing puts");
            }
            *reason = Some(text);
        } else {
            if log.set_refusal(refuse::DISK_FULL, false) {
                info!(
                    ratio = ratio.map(|r| r * 100.0),
                    "disk space OK again; accepting puts"
                );
            }
            *reason = None;
        }
        v
    }

    /// One cleanup pass: CommitLog files by age/hour/disk, a retry of a file that
    /// waited for readers, then the consume-queue and index files behind the new
    /// minimum offset.
    pub(crate) fn run(
        &self,
        log: &CommitLog,
        cqs: &ConsumeQueueTable,
        index: Option<&IndexService>,
        c: &StoreConfig,
    ) -> Result<CleanReport> {
        let _pass = self.pass.lock();
        let mut report = CleanReport {
            commit_log_files: self.delete_expired_commit_log(log, c)?,
            ..CleanReport::default()
        };
        self.redelete_hanged(log, c)?;
        let (cq, ix) = self.delete_logics(log, cqs, index, c)?;
        report.consume_queue_files = cq;
        report.index_files = ix;
        Ok(report)
    }

    fn delete_expired_commit_log(&self, log: &CommitLog, c: &StoreConfig) -> Result<usize> {
        let now = self.clock.now_ms();
        let timeup = parse_delete_when(&c.delete_when).contains(&local_hour(now));
        let v = self.check_disk(log, c);
        let manual = self
            .manual_times
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if !(timeup || v.space_to_delete || manual) {
            return Ok(0);
        }
        let at_once = c.clean_file_forcibly_enable && v.clean_immediately;
        let reserved_ms = i64::try_from(c.file_reserved_time)
            .unwrap_or(i64::MAX / 3_600_000)
            .saturating_mul(3_600_000);
        info!(
            file_reserved_hours = c.file_reserved_time,
            timeup,
            space_to_delete = v.space_to_delete,
            manual,
            at_once,
            disk_ratio = v.ratio,
            "deleting expired commit log files"
        );
        let files = log.files();
        let mut deleted = 0;
        let candidates = files.len().saturating_sub(1);
        for (i, f) in files.iter().take(candidates).enumerate() {
            let modified = f.last_modified_ms();
            let expired = now >= modified.saturating_add(reserved_ms);
            if !(expired || at_once) {
                break;
            }
            if !f.destroy_when_unused(now, c.destroy_maped_file_interval_forcibly)? {
                info!(file = %f.path().display(), "expired commit log file is being read; deleting it later");
                break;
            }
            log.drop_first_file(f.from());
            deleted += 1;
            let age_h = (now - modified) as f64 / 3_600_000.0;
            if expired {
                info!(
                    file = %f.path().display(),
                    age_hours = age_h,
                    "deleted expired commit log file; consumer progress is not checked, unconsumed messages in it are gone"
                );
            } else {
                warn!(
                    file = %f.path().display(),
                    age_hours = age_h,
                    disk_ratio = v.ratio,
                    "disk nearly full: deleted an unexpired commit log file; consumer progress is not checked, unconsumed messages in it are gone"
                );
            }
            if deleted >= DELETE_FILES_BATCH_MAX {
                break;
            }
            if c.delete_commit_log_files_interval > 0 && i + 1 < candidates {
                self.clock
                    .sleep(Duration::from_millis(c.delete_commit_log_files_interval));
            }
        }
        if deleted == 0 && v.space_to_delete {
            warn!(
                disk_ratio = v.ratio,
                "disk space will be full soon, but no commit log file could be deleted"
            );
        }
        Ok(deleted)
    }

    /// Retries the oldest file if its deletion waited for readers (RocketMQ
    /// `redeleteHangedFile`, every `redeleteHangedFileInterval`).
    fn redelete_hanged(&self, log: &CommitLog, c: &StoreConfig) -> Result<()> {
        let now = self.clock.now_ms();
        let last = self.last_redelete_ms.load(Ordering::Acquire);
        let interval = i64::try_from(c.redelete_hanged_file_interval).unwrap_or(i64::MAX);
        if now.saturating_sub(last) <= interval {
            return Ok(());
        }
        self.last_redelete_ms.store(now, Ordering::Release);
        if let Some(first) = log.files().first() {
            if !first.is_available()
                && first.destroy_when_unused(now, c.destroy_maped_file_interval_forcibly)?
            {
                log.drop_first_file(first.from());
                info!(file = %first.path().display(), "deleted a commit log file that had waited for readers");
            }
        }
        Ok(())
    }

    fn delete_logics(
        &self,
        log: &CommitLog,
        cqs: &ConsumeQueueTable,
        index: Option<&IndexService>,
        c: &StoreConfig,
    ) -> Result<(usize, usize)> {
        let min = log.min_offset().0;
        if min <= self.last_physical_min.load(Ordering::Acquire) {
            return Ok((0, 0));
        }
        self.last_physical_min.store(min, Ordering::Release);
        let mut cq_files = 0;
        for cq in cqs.all() {
            let n = cq.delete_expired_files(min, self.clock.now_ms())?;
            cq_files += n;
            if n > 0 && c.delete_consume_queue_files_interval > 0 {
                self.clock
                    .sleep(Duration::from_millis(c.delete_consume_queue_files_interval));
            }
        }
        let ix = index.map_or(0, |i| i.delete_expired_files(min));
        Ok((cq_files, ix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_follow_rocketmq() {
        let c = StoreConfig::with_root("/tmp/x");
        let v = judge(Some(0.5), &c);
        assert!(!v.space_to_delete && !v.clean_immediately && !v.disk_full);
        let v = judge(Some(0.76), &c);
        assert!(v.space_to_delete && !v.clean_immediately && !v.disk_full);
        let v = judge(Some(0.86), &c);
        assert!(v.space_to_delete && v.clean_immediately && !v.disk_full);
        let v = judge(Some(0.91), &c);
        assert!(v.space_to_delete && v.clean_immediately && v.disk_full);
        let v = judge(None, &c);
        assert!(
            v.space_to_delete && !v.disk_full,
            "unreadable counts as full-ish, like RocketMQ's -1"
        );
    }

    #[test]
    fn used_share_counts_only_what_a_writer_may_take() {
        // A disk read on a build machine: 252 GiB, 191 GiB free, of which 30 GiB available
        // (the rest reserved): RocketMQ's 68%, not the 25% blocks alone would say.
        let gib = 1 << 18; // 4 KiB blocks
        assert_eq!(
            used_ratio_of(252 * gib, 191 * gib, 30 * gib),
            Some(0.68),
            "61 / (61 + 30), rounded up"
        );
        // Every available block taken: full, though root's reserve is still free.
        assert_eq!(used_ratio_of(100, 5, 0), Some(1.0));
        assert_eq!(used_ratio_of(100, 100, 100), Some(0.0));
        assert_eq!(used_ratio_of(100, 10, 10), Some(0.9));
        assert_eq!(used_ratio_of(0, 0, 0), None);
        assert_eq!(
            used_ratio_of(u64::MAX, 0, u64::MAX),
            Some(0.5),
            "no overflow"
        );
    }

    #[test]
    fn statvfs_reads_a_ratio() {
        let r = StatvfsDiskUsage.used_ratio(Path::new("/")).unwrap();
        assert!((0.0..=1.0).contains(&r));
        assert!(
            StatvfsDiskUsage
                .used_ratio(Path::new("/nonexistent/x"))
                .is_none()
        );
    }
}
