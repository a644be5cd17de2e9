//! The list of index files: building entries for each dispatched record, a new file
//! when one is full, queries across files, recovery and expiry.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tracing::{error, info, warn};

use super::{Files, IndexFile, file_size, key_hash, list_files, next_file_name};
use crate::clock::Clock;
use crate::error::{Result, StoreError};

/// What a key query found (RocketMQ `QueryOffsetResult`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryOffsetResult {
    /// CommitLog offsets, newest file first, newest entry first within a file.
    pub phy_offsets: Vec<u64>,
    /// `endTimestamp` of the newest index file.
    pub index_last_update_timestamp: i64,
    /// `endPhyOffset` of the newest index file.
    pub index_last_update_phy_offset: i64,
}

/// The index files of a store.
#[derive(Debug)]
pub struct IndexService {
    dir: PathBuf,
    slot_num: u32,
    index_num: u32,
    max_msgs_num_batch: usize,
    files: Files,
    /// Files that filled up and still need a sync.
    full_unflushed: Mutex<Vec<Arc<IndexFile>>>,
    clock: Arc<dyn Clock>,
}

impl IndexService {
    /// Loads the index files of `dir` (files of another size than the configured
    /// dimensions are left alone with a warning) and repairs the newest one.
    ///
    /// # Errors
    /// The directory cannot be read or a file cannot be mapped.
    pub fn load(
        dir: &Path,
        slot_num: u32,
        index_num: u32,
        max_msgs_num_batch: usize,
        clock: Arc<dyn Clock>,
    ) -> Result<Self> {
        let mut files = Vec::new();
        for path in list_files(dir)? {
            match IndexFile::open(&path, slot_num, index_num) {
                Ok(f) => files.push(Arc::new(f)),
                Err(StoreError::FileSize {
                    actual, expected, ..
                }) => {
                    warn!(file = %path.display(), actual, expected, "index file does not match maxHashSlotNum/maxIndexNum; not used");
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(last) = files.last() {
            last.repair();
        }
        info!(dir = %dir.display(), files = files.len(), "loaded index files");
        Ok(IndexService {
            dir: dir.to_owned(),
            slot_num,
            index_num,
            max_msgs_num_batch,
            files: RwLock::new(files),
            full_unflushed: Mutex::new(Vec::new()),
            clock,
        })
    }

    /// The files, oldest first.
    #[must_use]
    pub fn files(&self) -> Vec<Arc<IndexFile>> {
        self.files.read().clone()
    }

    /// Size of each file.
    #[must_use]
    pub fn file_size(&self) -> usize {
        file_size(self.slot_num, self.index_num)
    }

    /// `endPhyOffset` of the newest file: dispatch is complete before it (`None`
    /// without files).
    #[must_use]
    pub fn end_phy_offset(&self) -> Option<u64> {
        self.files
            .read()
            .last()
            .map(|f| f.end_phy_offset().max(0) as u64)
    }

    fn current(&self) -> Result<Arc<IndexFile>> {
        if let Some(f) = self.files.read().last() {
            if !f.is_write_full() {
                return Ok(Arc::clone(f));
            }
        }
        self.create_next()
    }

    fn create_next(&self) -> Result<Arc<IndexFile>> {
        let mut files = self.files.write();
        let prev = files.last().cloned();
        if let Some(p) = &prev {
            if !p.is_write_full() {
                return Ok(Arc::clone(p));
            }
        }
        let (end_phy, end_ts) = prev
            .as_ref()
            .map_or((0, 0), |p| (p.end_phy_offset(), p.end_timestamp()));
        let name = next_file_name(self.clock.now_ms(), prev.as_ref().map(|p| p.name()));
        let f = Arc::new(IndexFile::create(
            &self.dir,
            &name,
            self.slot_num,
            self.index_num,
            end_phy,
            end_ts,
        )?);
        files.push(Arc::clone(&f));
        drop(files);
        if let Some(p) = prev {
            warn!(file = %p.path().display(), "index file is full; continuing in a new one");
            self.full_unflushed.lock().push(p);
        }
        Ok(f)
    }

    /// Indexes one dispatched record (RocketMQ `buildIndex`): `topic#UNIQ_KEY`, then
    /// `topic#key` for each space-separated key of `KEYS`; then records the record as
    /// the index's end. `index_keys` is false for rollback records, which only move
    /// the end. Records before the end are skipped (already indexed).
    ///
    /// # Errors
    /// A new file cannot be created, or disk space cannot be reserved.
    pub fn build(
        &self,
        topic: &str,
        uniq_key: Option<&str>,
        keys: Option<&str>,
        phy_offset: u64,
        store_timestamp: i64,
        index_keys: bool,
    ) -> Result<()> {
        let mut file = self.current()?;
        if (phy_offset as i64) < file.end_phy_offset() {
            return Ok(());
        }
        if index_keys {
            let all = uniq_key
                .into_iter()
                .chain(keys.into_iter().flat_map(|k| k.split(' ')))
                .filter(|k| !k.is_empty());
            for key in all {
                let hash = key_hash(topic, key);
                while !file.put_key(hash, phy_offset, store_timestamp)? {
                    file = self.create_next()?;
                }
            }
        }
        file.finish_record(phy_offset, store_timestamp);
        Ok(())
    }

    /// Offsets of messages with `key` in `topic` stored within `[begin, end]`, at most
    /// `min(max_num, maxMsgsNumBatch)` (RocketMQ `queryOffset`): newest file first,
    /// stopping at the first file that begins before `begin`.
    #[must_use]
    pub fn query(
        &self,
        topic: &str,
        key: &str,
        max_num: usize,
        begin: i64,
        end: i64,
    ) -> QueryOffsetResult {
        let max_num = max_num.min(self.max_msgs_num_batch);
        let hash = key_hash(topic, key);
        let files = self.files();
        let mut r = QueryOffsetResult::default();
        if let Some(last) = files.last() {
            r.index_last_update_timestamp = last.end_timestamp();
            r.index_last_update_phy_offset = last.end_phy_offset();
        }
        for f in files.iter().rev() {
            if f.is_time_matched(begin, end) {
                f.select(hash, max_num, begin, end, &mut r.phy_offsets);
            }
            if f.begin_timestamp() < begin || r.phy_offsets.len() >= max_num {
                break;
            }
        }
        r
    }

    /// Removes every entry of records at or after `phy_offset` (newest file first),
    /// and sets the end there. Returns how many entries went.
    pub fn undo_from(&self, phy_offset: u64) -> u64 {
        let files = self.files();
        let mut removed = 0u64;
        for (i, f) in files.iter().enumerate().rev() {
            let (n, stopped) = f.undo_from(phy_offset);
            removed += u64::from(n);
            if stopped || (i + 1 < files.len() && n == 0) {
                break;
            }
        }
        if removed > 0 {
            info!(
                from = phy_offset,
                removed, "removed index entries to be rebuilt by dispatch"
            );
        }
        removed
    }

    /// Deletes files (never the newest) whose records all lie before `cl_min`
    /// (RocketMQ `deleteExpiredFile`). Returns how many went.
    pub fn delete_expired_files(&self, cl_min: u64) -> usize {
        let cl_min = i64::try_from(cl_min).unwrap_or(i64::MAX);
        let expired: Vec<Arc<IndexFile>> = {
            let files = self.files.read();
            files
                .iter()
                .take(files.len().saturating_sub(1))
                .take_while(|f| f.end_phy_offset() < cl_min)
                .cloned()
                .collect()
        };
        let mut deleted = 0;
        for f in expired {
            if let Err(e) = f.destroy() {
                error!(file = %f.path().display(), error = %e, "cannot delete expired index file");
                break;
            }
            self.files.write().retain(|x| !Arc::ptr_eq(x, &f));
            self.full_unflushed.lock().retain(|x| !Arc::ptr_eq(x, &f));
            deleted += 1;
        }
        deleted
    }

    /// Syncs the files that filled up and, if `current`, the newest one too. Returns
    /// the end timestamp now durable (for the checkpoint's `indexMsgTimestamp`).
    ///
    /// # Errors
    /// A sync failed.
    pub fn flush(&self, current: bool) -> Result<Option<i64>> {
        let full = std::mem::take(&mut *self.full_unflushed.lock());
        let mut durable = None;
        for f in full {
            f.flush()?;
            durable = Some(f.end_timestamp());
        }
        if current {
            if let Some(f) = self.files.read().last().cloned() {
                let ts = f.end_timestamp();
                f.flush()?;
                durable = Some(ts);
            }
        }
        Ok(durable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn service(dir: &Path, slots: u32, entries: u32) -> IndexService {
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        IndexService::load(dir, slots, entries, 64, clock).unwrap()
    }

    #[test]
    fn keys_uniq_roll_and_query_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let s = service(dir.path(), 8, 4);
        let t0 = 1_700_000_000_000;
        // 3 entries per file (entry 0 unused).
        s.build("T", Some("U1"), Some("a b"), 0, t0, true).unwrap();
        s.build("T", Some("U2"), Some("a"), 100, t0 + 1000, true)
            .unwrap();
        s.build("T", None, Some("  "), 200, t0 + 2000, true)
            .unwrap();
        s.build("T", Some("U3"), None, 300, t0 + 3000, false)
            .unwrap();
        assert_eq!(s.files().len(), 2);
        assert_eq!(s.end_phy_offset(), Some(300));
        let r = s.query("T", "a", 32, 0, i64::MAX);
        assert_eq!(r.phy_offsets, vec![100, 0]);
        assert_eq!(r.index_last_update_phy_offset, 300);
        assert_eq!(s.query("T", "U2", 32, 0, i64::MAX).phy_offsets, vec![100]);
        assert!(
            s.query("T", "U3", 32, 0, i64::MAX).phy_offsets.is_empty(),
            "rollback"
        );
        assert!(s.query("X", "a", 32, 0, i64::MAX).phy_offsets.is_empty());
        assert_eq!(s.query("T", "a", 1, 0, i64::MAX).phy_offsets, vec![100]);
        assert_eq!(s.flush(true).unwrap(), Some(t0 + 3000));
        // Reload: same answers.
        drop(s);
        let s = service(dir.path(), 8, 4);
        assert_eq!(s.query("T", "a", 32, 0, i64::MAX).phy_offsets, vec![100, 0]);
        // Re-dispatch of old records is skipped.
        s.build("T", Some("U1"), None, 0, t0, true).unwrap();
        assert_eq!(s.query("T", "U1", 32, 0, i64::MAX).phy_offsets, vec![0]);
        // Undo from 100: both files lose their entries at or after it.
        assert_eq!(s.undo_from(100), 2);
        assert_eq!(s.query("T", "a", 32, 0, i64::MAX).phy_offsets, vec![0]);
        assert_eq!(s.end_phy_offset(), Some(100));
        s.build("T", Some("U2"), Some("a"), 100, t0 + 1000, true)
            .unwrap();
        assert_eq!(s.query("T", "a", 32, 0, i64::MAX).phy_offsets, vec![100, 0]);
    }

    #[test]
    fn expired_files_go_but_not_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let s = service(dir.path(), 8, 2);
        for i in 0..4u64 {
            s.build("T", Some("u"), None, i * 100, 1000, true).unwrap();
        }
        assert_eq!(s.files().len(), 4);
        assert_eq!(s.delete_expired_files(150), 2);
        assert_eq!(s.delete_expired_files(u64::MAX), 1);
        assert_eq!(s.files().len(), 1);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
