//! The CommitLog's file allocator and pre-faulter (RocketMQ `AllocateMappedFileService`):
//! a background thread that creates the next CommitLog file before the writer needs it,
//! so a roll never waits for `fallocate`, and meanwhile touches the pages just ahead of
//! the writer, so puts take no page faults.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tracing::{debug, warn};

use crate::error::{Result, StoreError};
use crate::mapped_file::{MappedFile, TransientStorePool};

/// How far ahead of the writer pages are pre-faulted. 16 MiB is 16 ms of lead at
/// 1 GB/s of puts, and bounds what an idle broker keeps resident for the log's head
/// (the next file's head too): 64 MiB made an idle broker's RSS 72 MB.
const PREFAULT_AHEAD: usize = 16 << 20;
/// Pre-fault step: short enough not to hold the mapping lock for long.
const PREFAULT_CHUNK: usize = 4 << 20;
/// How often the allocator checks the writer's progress while pre-faulting...
const PREFAULT_POLL: Duration = Duration::from_millis(2);
/// ...and at most, while the writer is idle.
const PREFAULT_POLL_MAX: Duration = Duration::from_millis(64);

#[derive(Debug, Default)]
struct AllocState {
    /// The file being written and how far it is pre-faulted.
    current: Option<(MappedFile, usize)>,
    /// Offset the thread should create next.
    want: Option<u64>,
    /// Offset being created right now.
    busy: Option<u64>,
    ready: Option<(u64, Result<MappedFile>)>,
    stopped: bool,
}

/// Prepares the next CommitLog file in the background (RocketMQ
/// `AllocateMappedFileService`); the only creator of CommitLog files. Between
/// creations it pre-faults the file being written, a few MiB at a time and at most
/// 64 MiB ahead of the writer, so puts take no page faults without dirtying (and
/// later writing back) whole files of zeros.
#[derive(Debug)]
pub(crate) struct Allocator {
    dir: PathBuf,
    file_size: usize,
    prefault: bool,
    warm: bool,
    pool: Option<Arc<TransientStorePool>>,
    state: Mutex<AllocState>,
    cvar: Condvar,
}

/// How long a roll waits for its file.
const ALLOCATE_TIMEOUT: Duration = Duration::from_secs(5);

impl Allocator {
    pub(crate) fn new(
        dir: PathBuf,
        file_size: usize,
        prefault: bool,
        warm: bool,
        pool: Option<Arc<TransientStorePool>>,
    ) -> Self {
        Allocator {
            dir,
            file_size,
            prefault,
            warm,
            pool,
            state: Mutex::new(AllocState::default()),
            cvar: Condvar::new(),
        }
    }

    fn discard_ready(st: &mut AllocState) {
        if let Some((from, Ok(f))) = st.ready.take() {
            debug!(from, "discarding prepared commit log file");
            if let Err(e) = f.destroy() {
                warn!(error = %e, "cannot delete unused prepared file");
            }
        }
    }

    /// Asks for the file at `from` to be prepared.
    pub(crate) fn request(&self, from: u64) {
        let mut st = self.state.lock();
        if st.busy == Some(from)
            || st.want == Some(from)
            || st.ready.as_ref().is_some_and(|(f, _)| *f == from)
        {
            return;
        }
        Self::discard_ready(&mut st);
        st.want = Some(from);
        self.cvar.notify_all();
    }

    /// The file at `from`, prepared or created now (waiting up to 5 s).
    pub(crate) fn take(&self, from: u64) -> Result<MappedFile> {
        let deadline = Instant::now() + ALLOCATE_TIMEOUT;
        let mut st = self.state.lock();
        loop {
            if st.ready.as_ref().is_some_and(|(f, _)| *f == from) {
                if let Some((_, r)) = st.ready.take() {
                    return r;
                }
            }
            if st.stopped {
                return Err(StoreError::io(
                    "allocate",
                    &self.dir,
                    std::io::Error::other("store is shutting down"),
                ));
            }
            if st.busy != Some(from) && st.want != Some(from) {
                Self::discard_ready(&mut st);
                st.want = Some(from);
                self.cvar.notify_all();
            }
            if self.cvar.wait_until(&mut st, deadline).timed_out() {
                return Err(StoreError::io(
                    "allocate",
                    &self.dir,
                    std::io::Error::from(std::io::ErrorKind::TimedOut),
                ));
            }
        }
    }

    /// The file the writer now appends to, written up to `pos`.
    pub(crate) fn set_current(&self, file: &MappedFile, pos: usize) {
        if !self.prefault || self.warm || !file.is_mapped_write_target() {
            return;
        }
        let mut st = self.state.lock();
        st.current = Some((file.clone(), pos));
        self.cvar.notify_all();
    }

    /// Cancels preparation and deletes a prepared file (truncation).
    pub(crate) fn discard(&self) {
        let mut st = self.state.lock();
        st.want = None;
        while st.busy.is_some() {
            self.cvar.wait(&mut st);
        }
        Self::discard_ready(&mut st);
    }

    pub(crate) fn shutdown(&self) {
        let mut st = self.state.lock();
        st.stopped = true;
        st.current = None;
        self.cvar.notify_all();
    }

    /// One pre-fault step for the current file, if it is due; `false` if none is.
    fn prefault_step(&self) -> bool {
        let (file, from) = {
            let st = self.state.lock();
            let Some((f, done)) = &st.current else {
                return false;
            };
            let want = f
                .wrote_position()
                .saturating_add(PREFAULT_AHEAD)
                .min(f.size());
            if *done >= want {
                return false;
            }
            (f.clone(), *done)
        };
        let to = file.prefault(from, PREFAULT_CHUNK);
        let mut st = self.state.lock();
        if let Some((f, done)) = &mut st.current {
            if f.from() == file.from() {
                *done = (*done).max(to);
            }
        }
        true
    }

    /// The allocator thread's body.
    pub(crate) fn run(&self) {
        let mut idle = PREFAULT_POLL;
        loop {
            let from = {
                let mut st = self.state.lock();
                loop {
                    if st.stopped {
                        return;
                    }
                    if let Some(w) = st.want.take() {
                        st.busy = Some(w);
                        break w;
                    }
                    if st.current.is_some() {
                        drop(st);
                        if self.prefault_step() {
                            idle = PREFAULT_POLL;
                        } else {
                            // Caught up: poll the writer's progress, backing off while idle.
                            std::thread::sleep(idle);
                            idle = (idle * 2).min(PREFAULT_POLL_MAX);
                        }
                        st = self.state.lock();
                        if st
                            .current
                            .as_ref()
                            .is_some_and(|(f, done)| *done >= f.size())
                        {
                            st.current = None;
                        }
                        continue;
                    }
                    self.cvar.wait(&mut st);
                }
            };
            let started = Instant::now();
            let r = MappedFile::create(&self.dir, from, self.file_size, self.pool.as_ref());
            match &r {
                Ok(f) => {
                    if self.warm {
                        f.warm();
                    } else if self.prefault && f.is_mapped_write_target() {
                        // The head of the file, so a roll lands on pre-faulted pages.
                        let mut at = 0;
                        while at < PREFAULT_AHEAD.min(f.size()) {
                            at = f.prefault(at, PREFAULT_CHUNK);
                        }
                    }
                    debug!(
                        from,
                        elapsed_us = started.elapsed().as_micros() as u64,
                        "prepared commit log file"
                    );
                }
                Err(e) => {
                    log_limit::limited!(error!(from, error = %e, "cannot create commit log file"));
                }
            }
            let mut st = self.state.lock();
            st.busy = None;
            Self::discard_ready(&mut st);
            st.ready = Some((from, r));
            self.cvar.notify_all();
        }
    }
}
