//! Helpers for unit tests: a tiny executor and a copying in-memory log.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::error::LogError;
use crate::log::{GrowthWait, HaLog};

/// Polls `fut` on the current thread, parking between polls.
pub(crate) fn block_on<F: Future>(fut: F) -> F::Output {
    struct ThreadWaker(std::thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

/// A log of `data` starting at `base`, cut into files of `file_size`.
#[derive(Debug)]
pub(crate) struct VecLog {
    pub(crate) base: u64,
    pub(crate) file_size: u64,
    pub(crate) data: Mutex<Vec<u8>>,
}

impl VecLog {
    pub(crate) fn new(base: u64, file_size: u64, data: Vec<u8>) -> Self {
        VecLog {
            base,
            file_size,
            data: Mutex::new(data),
        }
    }
}

impl HaLog for VecLog {
    fn max_offset(&self) -> u64 {
        self.base + self.data.lock().len() as u64
    }

    fn min_offset(&self) -> u64 {
        self.base
    }

    fn file_size(&self) -> u64 {
        self.file_size
    }

    fn read(&self, offset: u64, max_len: usize) -> Option<Bytes> {
        let data = self.data.lock();
        let rel = usize::try_from(offset.checked_sub(self.base)?).ok()?;
        let file_end = (offset / self.file_size + 1) * self.file_size;
        let in_file = usize::try_from(file_end - offset).ok()?;
        let end = data.len().min(rel + max_len.min(in_file));
        (rel < end).then(|| Bytes::copy_from_slice(&data[rel..end]))
    }

    fn wait_beyond(&self, _offset: u64) -> GrowthWait {
        Box::pin(std::future::pending())
    }

    fn append(&self, offset: u64, bytes: &[u8]) -> Result<(), LogError> {
        let mut data = self.data.lock();
        let end = self.base + data.len() as u64;
        if offset != end {
            return Err(LogError::OffsetMismatch {
                requested: offset,
                actual: end,
            });
        }
        data.extend_from_slice(bytes);
        Ok(())
    }

    fn truncate(&self, offset: u64) -> Result<(), LogError> {
        let mut data = self.data.lock();
        let rel = offset
            .checked_sub(self.base)
            .and_then(|r| usize::try_from(r).ok())
            .filter(|r| *r <= data.len())
            .ok_or(LogError::OutOfRange {
                offset,
                min: self.base,
                max: self.base + data.len() as u64,
            })?;
        data.truncate(rel);
        Ok(())
    }
}
