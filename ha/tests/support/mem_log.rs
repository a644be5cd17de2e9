//! An in-memory CommitLog for `ha`'s tests and bench: fixed-size files named by their first
//! offset, appends at the end only, zero-copy reads that never cross a file end, and growth
//! waits that wake. The one in-memory [`HaLog`]: `ha`'s integration tests and bench include it
//! through `tests/support/mod.rs`, its unit tests through `src/test_util.rs`; each includer
//! brings `Bytes`, `BytesMut`, `Mutex` (parking_lot) and `GrowthWait`, `HaLog`, `LogError`
//! into scope for `use super::...` below.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use super::{Bytes, BytesMut, GrowthWait, HaLog, LogError, Mutex};
/// Filler written at the end of a file when a record does not fit (the store's
/// BLANK end-of-file record, as far as replication cares: bytes like any other).
pub const BLANK: u8 = 0xBB;

#[derive(Debug)]
struct MemFile {
    start: u64,
    /// Sealed, contiguous segments handed out as zero-copy slices.
    sealed: Vec<Bytes>,
    /// File-relative start of each sealed segment.
    seg_starts: Vec<usize>,
    sealed_len: usize,
    /// Written but not yet read; sealed on first read.
    tail: BytesMut,
}

impl MemFile {
    fn new(start: u64, size: u64) -> Self {
        MemFile {
            start,
            sealed: Vec::new(),
            seg_starts: Vec::new(),
            sealed_len: 0,
            tail: BytesMut::with_capacity(size as usize),
        }
    }

    fn len(&self) -> usize {
        self.sealed_len + self.tail.len()
    }

    fn seal(&mut self) {
        if !self.tail.is_empty() {
            let seg = self.tail.split().freeze();
            self.seg_starts.push(self.sealed_len);
            self.sealed_len += seg.len();
            self.sealed.push(seg);
        }
    }

    fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        for s in &self.sealed {
            v.extend_from_slice(s);
        }
        v.extend_from_slice(&self.tail);
        v
    }
}

#[derive(Debug, Default)]
struct State {
    files: Vec<MemFile>,
}

#[derive(Debug)]
struct Inner {
    file_size: u64,
    state: Mutex<State>,
    watchers: Mutex<Vec<(u64, u64, Waker)>>,
    next_watch: std::sync::atomic::AtomicU64,
}

/// An in-memory CommitLog: fixed-size files named by their first offset, appends at
/// the end only, reads as zero-copy `Bytes` that never cross a file end.
#[derive(Debug, Clone)]
pub struct MemLog {
    inner: Arc<Inner>,
}

impl MemLog {
    pub fn new(file_size: u64) -> Self {
        MemLog {
            inner: Arc::new(Inner {
                file_size,
                state: Mutex::new(State::default()),
                watchers: Mutex::new(Vec::new()),
                next_watch: std::sync::atomic::AtomicU64::new(0),
            }),
        }
    }

    /// As a trait object for `HaService`.
    pub fn dyn_log(&self) -> Arc<dyn HaLog> {
        Arc::new(self.clone())
    }

    fn end(st: &State) -> u64 {
        st.files.last().map_or(0, |f| f.start + f.len() as u64)
    }

    fn write_at(&self, st: &mut State, mut offset: u64, mut data: &[u8]) {
        let size = self.inner.file_size;
        while !data.is_empty() {
            let need_file = st.files.last().is_none_or(|f| f.len() as u64 == size);
            if need_file {
                st.files.push(MemFile::new(offset, size));
            }
            let f = st.files.last_mut().unwrap();
            let room = (size - f.len() as u64) as usize;
            let n = room.min(data.len());
            f.tail.extend_from_slice(&data[..n]);
            data = &data[n..];
            offset += n as u64;
        }
    }

    fn notify(&self, max: u64) {
        let mut w = self.inner.watchers.lock();
        let mut wake = Vec::new();
        w.retain(|(_, at, waker)| {
            if *at < max {
                wake.push(waker.clone());
                false
            } else {
                true
            }
        });
        drop(w);
        for waker in wake {
            waker.wake();
        }
    }

    /// Puts one record the way the store does: a record never spans files, so when
    /// it does not fit the rest of the file is filled with BLANK and it goes to the
    /// next file. Returns the new end.
    pub fn put(&self, record: &[u8]) -> u64 {
        let size = self.inner.file_size;
        assert!(record.len() as u64 <= size);
        let mut st = self.inner.state.lock();
        let mut end = Self::end(&st);
        let room = size - end % size;
        if (record.len() as u64) > room && room < size {
            let pad = vec![BLANK; room as usize];
            self.write_at(&mut st, end, &pad);
            end += room;
        }
        self.write_at(&mut st, end, record);
        let max = Self::end(&st);
        drop(st);
        self.notify(max);
        max
    }

    /// Bytes `[from, to)`.
    pub fn bytes(&self, from: u64, to: u64) -> Vec<u8> {
        let st = self.inner.state.lock();
        let mut out = Vec::new();
        for f in &st.files {
            let v = f.to_vec();
            let fs = f.start;
            let fe = fs + v.len() as u64;
            let s = from.max(fs);
            let e = to.min(fe);
            if s < e {
                out.extend_from_slice(&v[(s - fs) as usize..(e - fs) as usize]);
            }
        }
        out
    }

    /// Number of files.
    pub fn files(&self) -> usize {
        self.inner.state.lock().files.len()
    }
}

impl HaLog for MemLog {
    fn max_offset(&self) -> u64 {
        Self::end(&self.inner.state.lock())
    }

    fn min_offset(&self) -> u64 {
        self.inner.state.lock().files.first().map_or(0, |f| f.start)
    }

    fn file_size(&self) -> u64 {
        self.inner.file_size
    }

    fn read(&self, offset: u64, max_len: usize) -> Option<Bytes> {
        let mut st = self.inner.state.lock();
        let idx = st
            .files
            .partition_point(|f| f.start + self.inner.file_size <= offset);
        let f = st.files.get_mut(idx)?;
        let rel = usize::try_from(offset.checked_sub(f.start)?).ok()?;
        if rel >= f.len() {
            return None;
        }
        if rel >= f.sealed_len {
            f.seal();
        }
        let seg = f.seg_starts.partition_point(|s| *s <= rel) - 1;
        let seg_start = f.seg_starts[seg];
        let b = &f.sealed[seg];
        let from = rel - seg_start;
        let to = b.len().min(from + max_len);
        Some(b.slice(from..to))
    }

    fn wait_beyond(&self, offset: u64) -> GrowthWait {
        let id = self
            .inner
            .next_watch
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Box::pin(Grow {
            log: self.clone(),
            offset,
            id,
        })
    }

    fn append(&self, offset: u64, data: &[u8]) -> Result<(), LogError> {
        let mut st = self.inner.state.lock();
        let end = Self::end(&st);
        let ok = if st.files.is_empty() {
            offset % self.inner.file_size == 0
        } else {
            offset == end
        };
        if !ok {
            return Err(LogError::OffsetMismatch {
                requested: offset,
                actual: end,
            });
        }
        self.write_at(&mut st, offset, data);
        let max = Self::end(&st);
        drop(st);
        self.notify(max);
        Ok(())
    }

    fn truncate(&self, offset: u64) -> Result<(), LogError> {
        let mut st = self.inner.state.lock();
        let min = st.files.first().map_or(0, |f| f.start);
        let max = Self::end(&st);
        if offset < min || offset > max {
            return Err(LogError::OutOfRange { offset, min, max });
        }
        st.files.retain(|f| f.start < offset);
        if let Some(f) = st.files.last_mut() {
            let keep = (offset - f.start) as usize;
            if keep < f.len() {
                let v = f.to_vec();
                let start = f.start;
                *f = MemFile::new(start, self.inner.file_size);
                f.tail.extend_from_slice(&v[..keep]);
            }
        }
        Ok(())
    }
}

struct Grow {
    log: MemLog,
    offset: u64,
    id: u64,
}

impl Drop for Grow {
    fn drop(&mut self) {
        self.log
            .inner
            .watchers
            .lock()
            .retain(|(id, _, _)| *id != self.id);
    }
}

impl Future for Grow {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.log.max_offset() > self.offset {
            return Poll::Ready(());
        }
        {
            let mut w = self.log.inner.watchers.lock();
            match w.iter_mut().find(|(id, _, _)| *id == self.id) {
                Some(e) => e.2 = cx.waker().clone(),
                None => w.push((self.id, self.offset, cx.waker().clone())),
            }
        }
        if self.log.max_offset() > self.offset {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}
