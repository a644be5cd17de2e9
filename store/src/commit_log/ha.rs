//! What HA needs from the CommitLog: appending replicated bytes at exactly the end of
//! the log (slave) and cutting a dirty tail (role switch).

use std::sync::atomic::Ordering;
use std::time::Duration;

use tracing::warn;

use super::{CommitLog, PhyOffset, now_millis};
use crate::error::{Result, StoreError};

impl CommitLog {
    /// Appends replicated bytes at exactly `expected`, the current end of the log
    /// (slave side). Bytes are copied as they are; they may span file boundaries.
    ///
    /// # Errors
    /// `expected` is not the end of the log (or, on an empty log, not a file
    /// boundary), the writer is poisoned, or the next file cannot be created.
    pub fn append_raw(&self, expected: PhyOffset, data: &[u8]) -> Result<()> {
        if let Some(r) = self.poisoned() {
            return Err(StoreError::Poisoned(r));
        }
        let size = self.file_size();
        let mut st = self.put.lock();
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        let end = match &st.writer {
            Some(w) => w.file().from() + w.position() as u64,
            None => self
                .shared
                .queue
                .last()
                .map_or(expected.0, |l| l.from() + size),
        };
        if expected.0 != end || (st.writer.is_none() && end % size != 0) {
            return Err(StoreError::OffsetMismatch {
                requested: expected.0,
                actual: end,
            });
        }
        let mut rest = data;
        let mut at = end;
        let now = now_millis();
        while !rest.is_empty() {
            if st.writer.as_ref().is_none_or(|w| w.remaining() == 0) {
                st.writer = None;
                let file = self.shared.allocator.take(at)?;
                self.shared.queue.push(file.clone());
                self.shared.allocator.set_current(&file, 0);
                self.shared.allocator.request(at + size);
                st.writer = file.writer();
            }
            let Some(w) = st.writer.as_mut() else {
                return Err(StoreError::Poisoned("no writer for the new file".into()));
            };
            let n = rest.len().min(w.remaining());
            w.append(&rest[..n], now);
            rest = &rest[n..];
            at += n as u64;
        }
        self.publish_readable(at);
        drop(st);
        self.after_append();
        Ok(())
    }

    /// Cuts the log back to `offset` (a record boundary): later files are deleted, the
    /// rest of its file is zero-filled and synced (slave turning master, or a slave
    /// following a new master). Waits up to 1 s for readers of the cut bytes. Consume
    /// queues, index and queue offsets are not touched: use
    /// [`MessageStore::truncate_dirty`](crate::MessageStore::truncate_dirty), which
    /// also cuts those.
    ///
    /// # Errors
    /// `offset` is outside the log, readers hold the bytes, or I/O fails.
    pub fn truncate_dirty(&self, offset: PhyOffset) -> Result<()> {
        let size = self.file_size();
        let mut st = self.put.lock();
        let max = match &st.writer {
            Some(w) => w.file().from() + w.position() as u64,
            None => self.shared.queue.max_wrote_offset(),
        };
        let min = self.shared.queue.min_offset();
        if offset.0 > max || offset.0 < min {
            return Err(StoreError::OutOfRange {
                offset: offset.0,
                min,
                max,
            });
        }
        // Lock order: put lock, then io lock (the services take only the io lock).
        let _io = self.shared.io_lock.lock();
        self.shared.allocator.discard();
        st.writer = None;
        let file_from = if offset.0 == max && offset.0 % size == 0 && offset.0 > min {
            offset.0 - size
        } else {
            offset.0 - offset.0 % size
        };
        let removed = self.shared.queue.remove_from(file_from + size)?;
        if let Some(f) = self.shared.queue.find(file_from) {
            let rel = (offset.0 - f.from()) as usize;
            let old_end = f.wrote_position();
            let mut w = f
                .writer()
                .ok_or(StoreError::Poisoned("file writer busy".into()))?;
            w.truncate_to(rel, old_end, Duration::from_secs(1))?;
            if rel < f.size() {
                self.shared.allocator.set_current(&f, rel);
                st.writer = Some(w);
            }
        }
        let new_flushed = self.shared.queue.flushed_where().min(offset.0);
        self.shared.queue.set_where(new_flushed);
        self.shared.durable.reset(new_flushed);
        self.shared.readable.reset(offset.0);
        self.shared.allocator.request(file_from + size);
        warn!(
            offset = offset.0,
            removed_files = removed.len(),
            "truncated commit log dirty tail"
        );
        Ok(())
    }
}
