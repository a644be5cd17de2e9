//! `timercheck` (RocketMQ `TimerCheckpoint`): big-endian longs at the start of a
//! page-sized file. The last three (a data version) were added in 5.x; a file without
//! them reads as version 0.
//!
//! | offset | field |
//! |---|---|
//! | 0 | last read time (ms): how far the dequeue has delivered |
//! | 8 | timer log position flushed |
//! | 16 | queue offset of `rmq_sys_wheel_timer` enqueued so far |
//! | 24 | the master's such offset (slaves) |
//! | 32, 40, 48 | data version: state version, timestamp, counter |

use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::{Result, StoreError};

/// Size of the `timercheck` file (one OS page, as RocketMQ maps it).
const FILE_SIZE: u64 = 4096;
/// Bytes the checkpoint occupies.
pub const CHECKPOINT_SIZE: usize = 56;
/// Bytes of a checkpoint without the data version.
const LEGACY_SIZE: usize = 32;

/// The decoded checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimerCheckpoint {
    /// How far the dequeue has delivered (ms).
    pub last_read_time_ms: i64,
    /// Timer log position flushed.
    pub last_timer_log_flush_pos: i64,
    /// Queue offset of the timer topic enqueued so far.
    pub last_timer_queue_offset: i64,
    /// The master's such offset (slaves).
    pub master_timer_queue_offset: i64,
    /// Data version: state version.
    pub state_version: i64,
    /// Data version: timestamp.
    pub timestamp: i64,
    /// Data version: counter.
    pub counter: i64,
}

impl TimerCheckpoint {
    /// The 56 bytes of the checkpoint.
    #[must_use]
    pub fn encode(&self) -> [u8; CHECKPOINT_SIZE] {
        let mut b = [0u8; CHECKPOINT_SIZE];
        let fields = [
            self.last_read_time_ms,
            self.last_timer_log_flush_pos,
            self.last_timer_queue_offset,
            self.master_timer_queue_offset,
            self.state_version,
            self.timestamp,
            self.counter,
        ];
        for (i, v) in fields.iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_be_bytes());
        }
        b
    }

    /// The checkpoint at the start of `bytes`; the data version is 0 when `bytes` ends
    /// before it. `None` when shorter than the four offsets.
    #[must_use]
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        if bytes.len() < LEGACY_SIZE {
            return None;
        }
        let at = |i: usize| -> i64 {
            bytes.get(i * 8..i * 8 + 8).map_or(0, |s| {
                let mut x = [0u8; 8];
                x.copy_from_slice(s);
                i64::from_be_bytes(x)
            })
        };
        Some(TimerCheckpoint {
            last_read_time_ms: at(0),
            last_timer_log_flush_pos: at(1),
            last_timer_queue_offset: at(2),
            master_timer_queue_offset: at(3),
            state_version: at(4),
            timestamp: at(5),
            counter: at(6),
        })
    }

    /// Reads the checkpoint file at `path`; `None` when there is none yet.
    ///
    /// # Errors
    /// The file exists but cannot be read, or is shorter than the four offsets.
    pub fn load(path: &Path) -> Result<Option<Self>> {
        match fs::read(path) {
            Ok(bytes) => Self::decode(&bytes).map(Some).ok_or(StoreError::Corrupt {
                file: path.to_owned(),
                offset: 0,
                reason: "timer checkpoint shorter than its four offsets",
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io("read", path, e)),
        }
    }

    /// Writes the checkpoint in place at the start of the page-sized file at `path`
    /// (created if absent) and syncs it, as RocketMQ's mapped checkpoint does.
    ///
    /// # Errors
    /// I/O errors.
    pub fn store(&self, path: &Path) -> Result<()> {
        self.write(path, true)
    }

    /// [`store`](Self::store) without the sync: it survives the process (`kill -9`),
    /// not the machine.
    ///
    /// # Errors
    /// I/O errors.
    pub fn store_unsynced(&self, path: &Path) -> Result<()> {
        self.write(path, false)
    }

    fn write(&self, path: &Path, sync: bool) -> Result<()> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| StoreError::io("mkdir", dir, e))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| StoreError::io("open", path, e))?;
        let len = file
            .metadata()
            .map_err(|e| StoreError::io("stat", path, e))?
            .len();
        if len < FILE_SIZE {
            file.set_len(FILE_SIZE)
                .map_err(|e| StoreError::io("ftruncate", path, e))?;
        }
        file.write_all_at(&self.encode(), 0)
            .map_err(|e| StoreError::io("write", path, e))?;
        if sync {
            file.sync_data()
                .map_err(|e| StoreError::io("fdatasync", path, e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkpoint_has_the_java_layout_and_reads_the_4_field_form() {
        let c = TimerCheckpoint {
            last_read_time_ms: 1_764_600_000_000,
            last_timer_log_flush_pos: 5_200,
            last_timer_queue_offset: 100,
            master_timer_queue_offset: 99,
            state_version: 2,
            timestamp: 1_764_600_000_001,
            counter: 7,
        };
        let b = c.encode();
        assert_eq!(&b[8..16], &5_200i64.to_be_bytes());
        assert_eq!(&b[48..56], &7i64.to_be_bytes());
        // A page of the file, as RocketMQ maps it.
        let mut page = vec![0u8; 4096];
        page[..CHECKPOINT_SIZE].copy_from_slice(&b);
        assert_eq!(TimerCheckpoint::decode(&page), Some(c));
        let legacy = TimerCheckpoint::decode(&b[..32]).unwrap();
        assert_eq!(legacy.master_timer_queue_offset, 99);
        assert_eq!(legacy.counter, 0);
        assert_eq!(TimerCheckpoint::decode(&b[..31]), None);
    }

    #[test]
    fn the_file_is_a_page_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config").join("timercheck");
        assert_eq!(TimerCheckpoint::load(&path).unwrap(), None);
        let cp = TimerCheckpoint {
            last_read_time_ms: 1_764_600_000_000,
            last_timer_log_flush_pos: 520,
            last_timer_queue_offset: 10,
            master_timer_queue_offset: 10,
            ..TimerCheckpoint::default()
        };
        cp.store(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096);
        assert_eq!(TimerCheckpoint::load(&path).unwrap(), Some(cp));
        std::fs::write(&path, [0u8; 8]).unwrap();
        assert!(TimerCheckpoint::load(&path).is_err());
    }
}
