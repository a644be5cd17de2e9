//! The ordered, consecutive mapped files of one log (the CommitLog, or one consume
//! queue): load from disk, find by offset, flush and commit across file boundaries,
//! drop a dirty tail, drop expired files at the front.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::RwLock;
use tracing::{debug, warn};

use crate::error::{Result, StoreError};
use crate::mapped_file::{MappedFile, TransientStorePool, parse_file_name, sync_dir};

/// Consecutive fixed-size files named by their first offset.
#[derive(Debug)]
pub struct MappedFileQueue {
    dir: PathBuf,
    file_size: usize,
    files: RwLock<Vec<MappedFile>>,
    flushed_where: AtomicU64,
    committed_where: AtomicU64,
    pool: Option<Arc<TransientStorePool>>,
    /// Cleared by [`set_read_ahead`](Self::set_read_ahead): files are read without fault
    /// readahead (`MADV_RANDOM`), those added later too.
    no_read_ahead: AtomicBool,
}

impl MappedFileQueue {
    /// Loads the files of `dir` (created if absent). Leftover `*.tmp` files from an
    /// interrupted creation are deleted; other foreign names are ignored with a warning.
    /// Every file starts out "full"; recovery sets the real positions.
    ///
    /// # Errors
    /// A file has the wrong size, files are not consecutive, or I/O fails.
    pub fn load(
        dir: &Path,
        file_size: usize,
        pool: Option<Arc<TransientStorePool>>,
    ) -> Result<Self> {
        fs::create_dir_all(dir).map_err(|e| StoreError::io("mkdir", dir, e))?;
        let mut found = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| StoreError::io("readdir", dir, e))? {
            let entry = entry.map_err(|e| StoreError::io("readdir", dir, e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if let Some(from) = parse_file_name(&name) {
                found.push((from, entry.path()));
            } else if name.ends_with(".tmp") {
                warn!(file = %entry.path().display(), "removing leftover temporary file");
                fs::remove_file(entry.path())
                    .map_err(|e| StoreError::io("unlink", entry.path(), e))?;
            } else {
                warn!(file = %entry.path().display(), "ignoring foreign file in commit log directory");
            }
        }
        found.sort();
        let mut files: Vec<MappedFile> = Vec::with_capacity(found.len());
        for (from, path) in found {
            // Offsets are Java longs on the wire and in RocketMQ's files.
            if from > (i64::MAX as u64).saturating_sub(file_size as u64) {
                return Err(StoreError::Corrupt {
                    file: path,
                    offset: from,
                    reason: "file offset is past the largest offset (i64::MAX)",
                });
            }
            if from % file_size as u64 != 0 {
                return Err(StoreError::Corrupt {
                    file: path,
                    offset: from,
                    reason: "file offset is not a multiple of the file size",
                });
            }
            if let Some(prev) = files.last() {
                if prev.from() + file_size as u64 != from {
                    return Err(StoreError::NotContiguous {
                        prev: prev.path().to_owned(),
                        next: path,
                    });
                }
            }
            files.push(MappedFile::open(&path, from, file_size)?);
        }
        debug!(dir = %dir.display(), files = files.len(), "loaded mapped files");
        Ok(MappedFileQueue {
            dir: dir.to_owned(),
            file_size,
            files: RwLock::new(files),
            flushed_where: AtomicU64::new(0),
            committed_where: AtomicU64::new(0),
            pool,
            no_read_ahead: AtomicBool::new(false),
        })
    }

    /// A queue of no files in `dir`, which is not touched (created with the first file).
    #[must_use]
    pub fn empty(dir: &Path, file_size: usize) -> Self {
        MappedFileQueue {
            dir: dir.to_owned(),
            file_size,
            files: RwLock::new(Vec::new()),
            flushed_where: AtomicU64::new(0),
            committed_where: AtomicU64::new(0),
            pool: None,
            no_read_ahead: AtomicBool::new(false),
        }
    }

    /// The oldest file.
    #[must_use]
    pub fn first(&self) -> Option<MappedFile> {
        self.files.read().first().cloned()
    }

    /// Number of files.
    #[must_use]
    pub fn len(&self) -> usize {
        self.files.read().len()
    }

    /// Whether there are no files.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.files.read().is_empty()
    }

    /// Forgets the oldest file if it starts at `from` (after it was deleted).
    pub(crate) fn drop_first(&self, from: u64) -> bool {
        let mut files = self.files.write();
        if files.first().is_some_and(|f| f.from() == from) {
            files.remove(0);
            true
        } else {
            false
        }
    }

    /// Directory of the files.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Size of every file.
    #[must_use]
    pub fn file_size(&self) -> usize {
        self.file_size
    }

    /// The transient store pool, if enabled.
    #[must_use]
    pub fn pool(&self) -> Option<&Arc<TransientStorePool>> {
        self.pool.as_ref()
    }

    /// A snapshot of the files, oldest first.
    #[must_use]
    pub fn files(&self) -> Vec<MappedFile> {
        self.files.read().clone()
    }

    /// The newest file.
    #[must_use]
    pub fn last(&self) -> Option<MappedFile> {
        self.files.read().last().cloned()
    }

    /// Start offset of the file holding `offset`.
    #[must_use]
    pub fn file_start(&self, offset: u64) -> u64 {
        offset - offset % self.file_size as u64
    }

    /// The file holding `offset`.
    #[must_use]
    pub fn find(&self, offset: u64) -> Option<MappedFile> {
        let files = self.files.read();
        let first = files.first()?.from();
        if offset < first {
            return None;
        }
        let idx = ((offset - first) / self.file_size as u64) as usize;
        files.get(idx).cloned()
    }

    /// Adds a new newest file, which must directly follow the current one.
    pub(crate) fn push(&self, file: MappedFile) {
        let mut files = self.files.write();
        debug_assert!(
            files
                .last()
                .is_none_or(|l| l.from() + self.file_size as u64 == file.from())
        );
        if self.no_read_ahead.load(Ordering::Acquire) {
            file.advise_random(true);
        }
        files.push(file);
    }

    /// Fault readahead on (`MADV_NORMAL`, the default) or off (`MADV_RANDOM`) for every
    /// file, now and later (`mqadmin setCommitLogReadAheadMode`).
    pub fn set_read_ahead(&self, enabled: bool) {
        let files = self.files.write();
        self.no_read_ahead.store(!enabled, Ordering::Release);
        for file in files.iter() {
            file.advise_random(!enabled);
        }
    }

    /// Whether fault readahead is on ([`set_read_ahead`](Self::set_read_ahead)).
    #[must_use]
    pub fn read_ahead(&self) -> bool {
        !self.no_read_ahead.load(Ordering::Acquire)
    }

    /// First offset held (0 if empty).
    #[must_use]
    pub fn min_offset(&self) -> u64 {
        self.files.read().first().map_or(0, MappedFile::from)
    }

    /// End of readable bytes.
    #[must_use]
    pub fn max_offset(&self) -> u64 {
        self.last()
            .map_or(0, |f| f.from() + f.read_position() as u64)
    }

    /// End of written bytes (ahead of [`max_offset`](Self::max_offset) with the pool).
    #[must_use]
    pub fn max_wrote_offset(&self) -> u64 {
        self.last()
            .map_or(0, |f| f.from() + f.wrote_position() as u64)
    }

    /// Where durable bytes end.
    #[must_use]
    pub fn flushed_where(&self) -> u64 {
        self.flushed_where.load(Ordering::Acquire)
    }

    /// Where committed bytes end.
    #[must_use]
    pub fn committed_where(&self) -> u64 {
        self.committed_where.load(Ordering::Acquire)
    }

    pub(crate) fn set_where(&self, offset: u64) {
        self.flushed_where.store(offset, Ordering::Release);
        self.committed_where.store(offset, Ordering::Release);
    }

    /// Store timestamp of the last record of the newest file.
    #[must_use]
    pub fn store_timestamp(&self) -> i64 {
        self.last().map_or(0, |f| f.store_timestamp())
    }

    /// Syncs from the flushed position on, crossing into following files when a file
    /// is complete. `least_pages` as in [`MappedFile::flush`]. Returns the new
    /// flushed offset.
    ///
    /// # Errors
    /// A sync failed.
    pub fn flush(&self, least_pages: usize) -> Result<u64> {
        loop {
            let at = self.flushed_where();
            let Some(file) = self.find(at).or_else(|| self.find_first_if_empty(at)) else {
                return Ok(at);
            };
            let pos = file.flush(least_pages)?;
            let now = file.from() + pos as u64;
            self.flushed_where.fetch_max(now, Ordering::AcqRel);
            if now == at || pos < file.size() {
                return Ok(self.flushed_where());
            }
        }
    }

    /// Copies pool buffers into files, crossing file boundaries. Returns the new
    /// committed offset.
    ///
    /// # Errors
    /// A write failed.
    pub fn commit(&self, least_pages: usize) -> Result<u64> {
        loop {
            let at = self.committed_where();
            let Some(file) = self.find(at).or_else(|| self.find_first_if_empty(at)) else {
                return Ok(at);
            };
            let pos = file.commit(least_pages)?;
            let now = file.from() + pos as u64;
            self.committed_where.fetch_max(now, Ordering::AcqRel);
            if now == at || pos < file.size() {
                return Ok(self.committed_where());
            }
        }
    }

    // A fresh store's first file may start above 0 (HA slave); `where` starts at 0.
    fn find_first_if_empty(&self, at: u64) -> Option<MappedFile> {
        let files = self.files.read();
        let first = files.first()?;
        (at < first.from() && self.flushed_where() <= first.from()).then(|| first.clone())
    }

    /// Removes (and deletes) every file starting at or after `offset`. Returns them.
    ///
    /// # Errors
    /// An unlink failed.
    pub(crate) fn remove_from(&self, offset: u64) -> Result<Vec<MappedFile>> {
        let removed: Vec<MappedFile> = {
            let mut files = self.files.write();
            let keep = files
                .iter()
                .position(|f| f.from() >= offset)
                .unwrap_or(files.len());
            files.split_off(keep)
        };
        for f in &removed {
            f.destroy()?;
        }
        if !removed.is_empty() {
            sync_dir(&self.dir)?;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_checks_names_sizes_and_order() {
        let dir = tempfile::tempdir().unwrap();
        for from in [0u64, 4096, 8192] {
            MappedFile::create(dir.path(), from, 4096, None).unwrap();
        }
        std::fs::write(dir.path().join("00000000000000012288.tmp"), b"x").unwrap();
        let q = MappedFileQueue::load(dir.path(), 4096, None).unwrap();
        assert_eq!(q.files().len(), 3);
        assert!(!dir.path().join("00000000000000012288.tmp").exists());
        assert_eq!(q.find(5000).unwrap().from(), 4096);
        assert_eq!(q.find(12288).map(|f| f.from()), None);
        assert_eq!(q.max_offset(), 12288);
        q.remove_from(4096).unwrap();
        assert_eq!(q.files().len(), 1);
        drop(q);

        MappedFile::create(dir.path(), 8192, 4096, None).unwrap();
        assert!(matches!(
            MappedFileQueue::load(dir.path(), 4096, None),
            Err(StoreError::NotContiguous { .. })
        ));
        assert!(matches!(
            MappedFileQueue::load(dir.path(), 8192, None),
            Err(StoreError::FileSize { .. })
        ));
    }

    #[test]
    fn file_named_past_the_largest_offset_is_refused() {
        // RocketMQ's offsets are Java longs: a file starting above i64::MAX - size
        // cannot be one of its files, and its end offset overflowed u64 arithmetic.
        let dir = tempfile::tempdir().unwrap();
        let from = u64::MAX - 4095;
        std::fs::write(
            dir.path().join(crate::mapped_file::file_name(from)),
            [0u8; 4096],
        )
        .unwrap();
        let e = MappedFileQueue::load(dir.path(), 4096, None)
            .map(|q| q.max_offset())
            .unwrap_err();
        assert!(e.to_string().contains("18446744073709547520"), "{e}");
    }

    #[test]
    fn flush_crosses_full_files() {
        let dir = tempfile::tempdir().unwrap();
        let q = MappedFileQueue::load(dir.path(), 4096, None).unwrap();
        let a = MappedFile::create(dir.path(), 0, 4096, None).unwrap();
        let b = MappedFile::create(dir.path(), 4096, 4096, None).unwrap();
        q.push(a.clone());
        q.push(b.clone());
        a.writer().unwrap().append(&[1u8; 4096], 1);
        b.writer().unwrap().append(&[2u8; 10], 2);
        assert_eq!(q.flush(0).unwrap(), 4106);
        assert_eq!(q.commit(0).unwrap(), 4106);
    }
}
