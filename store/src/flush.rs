//! Background services of the CommitLog, each a named std thread built from
//! [`ServiceThread`]: group commit (`SYNC_FLUSH`), periodic flush (`ASYNC_FLUSH`), the
//! transient pool's commit, the flush-timeout watcher, and the allocator that prepares
//! the next file so a roll never waits for `fallocate`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tracing::{debug, error, info, info_span, warn};

use crate::commit_log::Shared;
use crate::config::FlushDiskType;
use crate::error::{Result, StoreError};
use crate::mapped_file::{MappedFile, TransientStorePool};

/// Stop flag plus a condvar wake-up that costs one atomic swap when already pending.
#[derive(Debug, Default)]
pub(crate) struct ServiceControl {
    stopped: AtomicBool,
    notified: AtomicBool,
    lock: Mutex<()>,
    cvar: Condvar,
}

impl ServiceControl {
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Wakes the service if it is waiting (or makes its next wait return at once).
    pub(crate) fn wakeup(&self) {
        if !self.notified.swap(true, Ordering::AcqRel) {
            let _g = self.lock.lock();
            self.cvar.notify_one();
        }
    }

    /// Waits until woken, stopped, or `timeout`.
    pub(crate) fn wait(&self, timeout: Duration) {
        if self.notified.swap(false, Ordering::AcqRel) {
            return;
        }
        let mut g = self.lock.lock();
        if self.notified.swap(false, Ordering::AcqRel) || self.is_stopped() {
            return;
        }
        self.cvar.wait_for(&mut g, timeout);
        self.notified.store(false, Ordering::Release);
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        self.notified.store(false, Ordering::Release);
        self.wakeup();
    }
}

/// Wakes a service that sleeps on something other than its [`ServiceControl`].
pub(crate) type Nudge = Box<dyn Fn() + Send>;

/// A named thread with a [`ServiceControl`]; stopping sets the flag, wakes and joins.
pub(crate) struct ServiceThread {
    name: &'static str,
    ctl: Arc<ServiceControl>,
    nudge: Option<Nudge>,
    handle: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ServiceThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceThread")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ServiceThread {
    pub(crate) fn spawn(
        name: &'static str,
        ctl: Arc<ServiceControl>,
        body: impl FnOnce(&ServiceControl) + Send + 'static,
    ) -> Result<Self> {
        let c = Arc::clone(&ctl);
        let handle = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let span = info_span!("service", service = name);
                let _e = span.enter();
                debug!("service started");
                body(&c);
                debug!("service stopped");
            })
            .map_err(|e| StoreError::io("spawn", name, e))?;
        Ok(ServiceThread {
            name,
            ctl,
            nudge: None,
            handle: Some(handle),
        })
    }

    /// Also runs `nudge` when stopping, after the stop flag is set.
    pub(crate) fn with_nudge(mut self, nudge: Nudge) -> Self {
        self.nudge = Some(nudge);
        self
    }

    pub(crate) fn stop(&mut self) {
        self.ctl.stop();
        if let Some(n) = &self.nudge {
            n();
        }
        if let Some(h) = self.handle.take() {
            if h.join().is_err() {
                error!(service = self.name, "service thread panicked");
            }
        }
    }
}

impl Drop for ServiceThread {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How often the checkpoint is written at most.
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);
/// Group commit's idle wait (RocketMQ `GroupCommitService` waits 10 ms).
const GROUP_COMMIT_WAIT: Duration = Duration::from_millis(10);

fn note_checkpoint(s: &Shared, store_timestamp: i64, last: &mut (Instant, i64), force: bool) {
    if store_timestamp > 0 {
        // logicsMsgTimestamp and indexMsgTimestamp belong to the consume-queue flush.
        s.checkpoint.set_physic_msg_timestamp(store_timestamp);
    }
    let changed = store_timestamp > last.1;
    if force || (changed && last.0.elapsed() >= CHECKPOINT_INTERVAL) {
        *last = (Instant::now(), store_timestamp.max(last.1));
        if let Err(e) = s.checkpoint.flush() {
            warn!(error = %e, "cannot write checkpoint");
        }
    }
}

/// Commits (pool) and syncs everything written; publishes the durable offset.
fn flush_all(s: &Shared, least_pages: usize) -> Option<(i64, usize)> {
    let _io = s.io_lock.lock();
    if s.is_poisoned() {
        return None;
    }
    if s.queue.pool().is_some() {
        match s.queue.commit(0) {
            Ok(_) => {
                s.readable.advance(s.queue.max_offset());
            }
            Err(e) => {
                s.poison(&e);
                return None;
            }
        }
    }
    // Read before the sync: the sync covers at least the record with this timestamp.
    let ts = s.queue.store_timestamp();
    match s.queue.flush(least_pages) {
        Ok(flushed) => Some((ts, s.durable.advance(flushed))),
        Err(e) => {
            s.poison(&e);
            None
        }
    }
}

/// `SYNC_FLUSH`: woken by puts; every sync covers all puts that arrived meanwhile.
pub(crate) fn run_group_commit(ctl: &ServiceControl, s: &Shared) {
    let mut last_cp = (Instant::now(), 0i64);
    let mut last_group = 0usize;
    while !ctl.is_stopped() {
        ctl.wait(GROUP_COMMIT_WAIT);
        gather(s, last_group);
        last_group = 0;
        if let Some((ts, woken)) = flush_all(s, 0) {
            note_checkpoint(s, ts, &mut last_cp, false);
            last_group = woken;
        }
        s.durable.expire(Instant::now());
    }
    if let Some((ts, _)) = flush_all(s, 0) {
        note_checkpoint(s, ts, &mut last_cp, true);
    }
    info!(
        flushed = s.queue.flushed_where(),
        "group commit service stopped"
    );
}

/// How long a group commit may wait for the writers its last sync released.
const GATHER_MAX: Duration = Duration::from_micros(300);

/// Writers released by a sync come back with their next put within microseconds;
/// syncing before they do splits one group into several syncs. So wait (briefly, and
/// only while fewer waiters are queued than the last sync released) for them.
fn gather(s: &Shared, last_group: usize) {
    if last_group < 2 {
        return;
    }
    let deadline = Instant::now() + GATHER_MAX;
    while s.durable.pending() < last_group && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(30));
    }
}

/// `ASYNC_FLUSH`: every `flushIntervalCommitLog`, sync once `flushCommitLogLeastPages`
/// are dirty, and everything every `flushCommitLogThoroughInterval`.
pub(crate) fn run_async_flush(ctl: &ServiceControl, s: &Shared) {
    let interval = Duration::from_millis(s.config.flush_interval_commit_log);
    let thorough = Duration::from_millis(s.config.flush_commit_log_thorough_interval);
    let mut last_thorough = Instant::now();
    let mut last_cp = (Instant::now(), 0i64);
    while !ctl.is_stopped() {
        ctl.wait(interval);
        let mut least = s.config.flush_commit_log_least_pages as usize;
        if last_thorough.elapsed() >= thorough {
            last_thorough = Instant::now();
            least = 0;
        }
        if s.is_poisoned() {
            continue;
        }
        // With the pool the commit service moves bytes into the file; we only sync.
        let _io = s.io_lock.lock();
        let ts = s.queue.store_timestamp();
        match s.queue.flush(least) {
            Ok(flushed) => {
                s.durable.advance(flushed);
                note_checkpoint(s, ts, &mut last_cp, false);
            }
            Err(e) => s.poison(&e),
        }
    }
    if let Some((ts, _)) = flush_all(s, 0) {
        note_checkpoint(s, ts, &mut last_cp, true);
    }
    info!(flushed = s.queue.flushed_where(), "flush service stopped");
}

/// Transient pool: every `commitIntervalCommitLog`, copy pending buffer bytes into the
/// file once `commitCommitLogLeastPages` are pending (any amount every
/// `commitCommitLogThoroughInterval`).
pub(crate) fn run_commit(ctl: &ServiceControl, s: &Shared) {
    let interval = Duration::from_millis(s.config.commit_interval_commit_log);
    let thorough = Duration::from_millis(s.config.commit_commit_log_thorough_interval);
    let mut last_thorough = Instant::now();
    while !ctl.is_stopped() {
        ctl.wait(interval);
        let mut least = s.config.commit_commit_log_least_pages as usize;
        if last_thorough.elapsed() >= thorough {
            last_thorough = Instant::now();
            least = 0;
        }
        if s.is_poisoned() {
            continue;
        }
        let _io = s.io_lock.lock();
        match s.queue.commit(least) {
            Ok(_) => {
                s.readable.advance(s.queue.max_offset());
            }
            Err(e) => s.poison(&e),
        }
    }
    let _io = s.io_lock.lock();
    if !s.is_poisoned() {
        match s.queue.commit(0) {
            Ok(_) => {
                s.readable.advance(s.queue.max_offset());
            }
            Err(e) => s.poison(&e),
        }
    }
}

/// Ends `SYNC_FLUSH` waits that pass `syncFlushTimeout`, even while a sync hangs
/// (RocketMQ `FlushDiskWatcher`).
pub(crate) fn run_flush_watcher(ctl: &ServiceControl, s: &Shared) {
    while !ctl.is_stopped() {
        let now = Instant::now();
        let wait = match s.durable.expire(now) {
            Some(next) => next
                .saturating_duration_since(now)
                .clamp(Duration::from_millis(1), GROUP_COMMIT_WAIT),
            None => GROUP_COMMIT_WAIT,
        };
        ctl.wait(wait);
    }
}

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

/// Whether puts wait for a sync in this configuration.
pub(crate) fn is_sync(t: FlushDiskType) -> bool {
    t == FlushDiskType::SYNC_FLUSH
}
