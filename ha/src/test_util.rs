//! Helpers for unit tests: the in-memory log of the integration tests (the same file,
//! included) and the executor every crate's tests share.

#[allow(dead_code, reason = "each unit test uses a part of it")]
#[path = "../tests/support/mem_log.rs"]
mod mem_log;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;

use crate::error::LogError;
use crate::log::{GrowthWait, HaLog};

pub(crate) use mem_log::MemLog;
pub(crate) use test_support::block_on;

/// A log of `data` starting at `base` (a multiple of `file_size`), in files of `file_size`.
pub(crate) fn log_of(base: u64, file_size: u64, data: &[u8]) -> MemLog {
    let log = MemLog::new(file_size);
    log.append(base, data).expect("base is a file start");
    log
}
