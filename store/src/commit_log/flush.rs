//! The CommitLog's flush services, each on a [`ServiceThread`](crate::service_thread):
//! group commit (`SYNC_FLUSH`: puts wait for it), periodic flush (`ASYNC_FLUSH`), the
//! transient pool's commit, and the flush-timeout watcher that ends sync waits past
//! `syncFlushTimeout`. They also keep the checkpoint's CommitLog timestamp.

use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::Shared;
use crate::service_thread::ServiceControl;

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
    match timed_flush(s, least_pages) {
        Ok(flushed) => Some((ts, s.durable.advance(flushed))),
        Err(e) => {
            s.poison(&e);
            None
        }
    }
}

/// Syncs (as `MappedFileQueue::flush`), timing the syncs that wrote something.
fn timed_flush(s: &Shared, least_pages: usize) -> crate::Result<u64> {
    let before = s.queue.flushed_where();
    let started = Instant::now();
    let flushed = s.queue.flush(least_pages)?;
    if flushed > before {
        let us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        s.flush_meters.fsync_us.observe(us);
    }
    Ok(flushed)
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
            if woken > 0 {
                s.flush_meters.group_size.observe(woken as u64);
            }
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

/// RocketMQ's "thorough" rounds: a flush or commit waits for `least` dirty pages, except
/// once every `thoroughInterval`, when any amount goes.
struct Thorough {
    every: Duration,
    last: Instant,
}

impl Thorough {
    fn every(ms: u64) -> Self {
        Thorough {
            every: Duration::from_millis(ms),
            last: Instant::now(),
        }
    }

    /// The least pages this round waits for: `least`, or 0 when a thorough round is due.
    fn least_pages(&mut self, least: usize) -> usize {
        if self.last.elapsed() >= self.every {
            self.last = Instant::now();
            return 0;
        }
        least
    }
}

/// `ASYNC_FLUSH`: every `flushIntervalCommitLog`, sync once `flushCommitLogLeastPages`
/// are dirty, and everything every `flushCommitLogThoroughInterval`.
pub(crate) fn run_async_flush(ctl: &ServiceControl, s: &Shared) {
    let interval = Duration::from_millis(s.config.flush_interval_commit_log);
    let mut thorough = Thorough::every(s.config.flush_commit_log_thorough_interval);
    let mut last_cp = (Instant::now(), 0i64);
    while !ctl.is_stopped() {
        ctl.wait(interval);
        let least = thorough.least_pages(s.config.flush_commit_log_least_pages as usize);
        if s.is_poisoned() {
            continue;
        }
        // With the pool the commit service moves bytes into the file; we only sync.
        let _io = s.io_lock.lock();
        let ts = s.queue.store_timestamp();
        match timed_flush(s, least) {
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
    let mut thorough = Thorough::every(s.config.commit_commit_log_thorough_interval);
    while !ctl.is_stopped() {
        ctl.wait(interval);
        let least = thorough.least_pages(s.config.commit_commit_log_least_pages as usize);
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
