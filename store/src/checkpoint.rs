//! The `checkpoint` file: when the CommitLog, the consume queues and the index were
//! last made durable, so abnormal recovery knows where it can start.
//!
//! Layout (RocketMQ `StoreCheckpoint`; one 4 KiB page, big-endian):
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 8 | physicMsgTimestamp: store time of the last CommitLog record made durable |
//! | 8 | 8 | logicsMsgTimestamp: same for the consume queues |
//! | 16 | 8 | indexMsgTimestamp: same for the index |
//! | 24 | 8 | masterFlushedOffset (5.x) |
//! | 32 | 8 | confirmPhyOffset (5.x) |
//! | 40 | 4056 | zero |
//!
//! Written with `pwrite` + `fdatasync` rather than a mapping: 40 bytes in one sector.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};

use tracing::info;

use crate::error::{Result, StoreError};

/// Abnormal recovery starts this much before the checkpoint's timestamps (ms).
pub const RECOVERY_SAFETY_MARGIN_MS: i64 = 3000;

/// The checkpoint, kept in memory and written by [`flush`](Checkpoint::flush).
#[derive(Debug)]
pub struct Checkpoint {
    path: PathBuf,
    file: File,
    physic_msg_timestamp: AtomicI64,
    logics_msg_timestamp: AtomicI64,
    index_msg_timestamp: AtomicI64,
    master_flushed_offset: AtomicI64,
    confirm_phy_offset: AtomicI64,
}

/// Parses the five fields; missing bytes read as zero.
#[must_use]
pub fn decode(bytes: &[u8]) -> [i64; 5] {
    let mut out = [0i64; 5];
    for (i, v) in out.iter_mut().enumerate() {
        if let Some(b) = bytes.get(i * 8..i * 8 + 8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            *v = i64::from_be_bytes(a);
        }
    }
    out
}

/// Encodes the five fields.
#[must_use]
pub fn encode(fields: [i64; 5]) -> [u8; 40] {
    let mut out = [0u8; 40];
    for (i, v) in fields.iter().enumerate() {
        out[i * 8..i * 8 + 8].copy_from_slice(&v.to_be_bytes());
    }
    out
}

impl Checkpoint {
    /// Opens the checkpoint at `path`, creating a zeroed 4 KiB file if it is absent.
    ///
    /// # Errors
    /// The file cannot be created, read or sized.
    pub fn open(path: &Path) -> Result<Self> {
        let (file, exists) = crate::page_file::open(path)?;
        let mut buf = [0u8; 40];
        let mut read = 0;
        if exists {
            while read < buf.len() {
                match file.read_at(&mut buf[read..], read as u64) {
                    Ok(0) => break,
                    Ok(n) => read += n,
                    Err(e) => return Err(StoreError::io("read", path, e)),
                }
            }
        }
        let f = decode(&buf[..read]);
        info!(
            file = %path.display(),
            exists,
            physic_msg_timestamp = f[0],
            logics_msg_timestamp = f[1],
            index_msg_timestamp = f[2],
            "loaded checkpoint"
        );
        Ok(Checkpoint {
            path: path.to_owned(),
            file,
            physic_msg_timestamp: AtomicI64::new(f[0]),
            logics_msg_timestamp: AtomicI64::new(f[1]),
            index_msg_timestamp: AtomicI64::new(f[2]),
            master_flushed_offset: AtomicI64::new(f[3]),
            confirm_phy_offset: AtomicI64::new(f[4]),
        })
    }

    /// Writes the fields and `fdatasync`s them.
    ///
    /// # Errors
    /// The write or sync failed.
    pub fn flush(&self) -> Result<()> {
        let bytes = encode(self.fields());
        self.file
            .write_all_at(&bytes, 0)
            .map_err(|e| StoreError::io("pwrite", &self.path, e))?;
        self.file
            .sync_data()
            .map_err(|e| StoreError::io("fdatasync", &self.path, e))
    }

    /// The five fields in file order.
    #[must_use]
    pub fn fields(&self) -> [i64; 5] {
        [
            self.physic_msg_timestamp(),
            self.logics_msg_timestamp(),
            self.index_msg_timestamp(),
            self.master_flushed_offset.load(Ordering::Acquire),
            self.confirm_phy_offset.load(Ordering::Acquire),
        ]
    }

    /// `physicMsgTimestamp`.
    #[must_use]
    pub fn physic_msg_timestamp(&self) -> i64 {
        self.physic_msg_timestamp.load(Ordering::Acquire)
    }
    /// Sets `physicMsgTimestamp` (written at the next flush).
    pub fn set_physic_msg_timestamp(&self, v: i64) {
        self.physic_msg_timestamp.store(v, Ordering::Release);
    }
    /// `logicsMsgTimestamp`.
    #[must_use]
    pub fn logics_msg_timestamp(&self) -> i64 {
        self.logics_msg_timestamp.load(Ordering::Acquire)
    }
    /// Sets `logicsMsgTimestamp`.
    pub fn set_logics_msg_timestamp(&self, v: i64) {
        self.logics_msg_timestamp.store(v, Ordering::Release);
    }
    /// `indexMsgTimestamp`.
    #[must_use]
    pub fn index_msg_timestamp(&self) -> i64 {
        self.index_msg_timestamp.load(Ordering::Acquire)
    }
    /// Sets `indexMsgTimestamp`.
    pub fn set_index_msg_timestamp(&self, v: i64) {
        self.index_msg_timestamp.store(v, Ordering::Release);
    }
    /// `masterFlushedOffset`: the master's flushed offset a slave was last told.
    #[must_use]
    pub fn master_flushed_offset(&self) -> i64 {
        self.master_flushed_offset.load(Ordering::Acquire)
    }

    /// Sets `masterFlushedOffset`.
    pub fn set_master_flushed_offset(&self, v: i64) {
        self.master_flushed_offset.store(v, Ordering::Release);
    }

    /// Sets `confirmPhyOffset`.
    pub fn set_confirm_phy_offset(&self, v: i64) {
        self.confirm_phy_offset.store(v, Ordering::Release);
    }

    /// `min(physic, logics) - 3 s`, at least 0: records stored at or before this
    /// time are durable everywhere (RocketMQ `getMinTimestamp`).
    #[must_use]
    pub fn min_timestamp(&self) -> i64 {
        let min = self.physic_msg_timestamp().min(self.logics_msg_timestamp());
        (min - RECOVERY_SAFETY_MARGIN_MS).max(0)
    }

    /// [`min_timestamp`](Self::min_timestamp) also bounded by the index timestamp
    /// (`messageIndexSafe`).
    #[must_use]
    pub fn min_timestamp_index(&self) -> i64 {
        self.min_timestamp().min(self.index_msg_timestamp())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("checkpoint");
        let c = Checkpoint::open(&p).unwrap();
        assert_eq!(c.fields(), [0; 5]);
        c.set_physic_msg_timestamp(10_000);
        c.set_logics_msg_timestamp(20_000);
        c.set_index_msg_timestamp(5_000);
        c.flush().unwrap();
        let raw = std::fs::read(&p).unwrap();
        assert_eq!(raw.len(), 4096);
        assert_eq!(&raw[0..8], &10_000i64.to_be_bytes());
        assert_eq!(&raw[8..16], &20_000i64.to_be_bytes());
        assert_eq!(&raw[16..24], &5_000i64.to_be_bytes());
        drop(c);
        let c = Checkpoint::open(&p).unwrap();
        assert_eq!(c.min_timestamp(), 7_000);
        assert_eq!(c.min_timestamp_index(), 5_000);
    }

    #[test]
    fn short_file_reads_as_zero() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("checkpoint");
        std::fs::write(&p, 99i64.to_be_bytes()).unwrap();
        let c = Checkpoint::open(&p).unwrap();
        assert_eq!(c.fields(), [99, 0, 0, 0, 0]);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 4096);
    }
}
