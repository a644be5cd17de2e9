//! The store's service threads beyond the CommitLog's own: reput (dispatch), the
//! consume-queue and index flush, and cleanup.

use std::time::{Duration, Instant};

use tracing::{error, warn};

use super::Inner;
use crate::commit_log::CommitLog;
use crate::dispatch::Dispatcher;
use crate::service_thread::ServiceControl;

/// How often the disk usage is checked. RocketMQ checks every 10 s; a check is two
/// `statvfs` calls, and each second saved is a second of refused sends once space is
/// free again (or of puts failing one by one on a disk that just filled up).
const DISK_CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// First disk check after start.
const DISK_CHECK_FIRST: Duration = Duration::from_secs(1);
/// First cleanup pass after start (RocketMQ waits a minute).
const CLEAN_FIRST: Duration = Duration::from_secs(60);

pub(super) fn run_reput(ctl: &ServiceControl, log: &CommitLog, dispatcher: &Dispatcher) {
    dispatcher.run(log, &|| ctl.is_stopped());
}

/// Syncs the consume queues (those with `flushConsumeQueueLeastPages` dirty pages, or
/// all if `all`) and the index files that filled up (and the current one if `all`).
/// After a full sync the checkpoint's logics and index timestamps advance to the last
/// record dispatched before it started (RocketMQ `FlushConsumeQueueService`).
pub(super) fn flush_logics(i: &Inner, all: bool) {
    let dispatched_ts = i.dispatcher.last_store_timestamp();
    let least = if all {
        0
    } else {
        i.config.flush_consume_queue_least_pages as usize
    };
    let mut ok = true;
    for cq in i.cqs.all() {
        if let Err(e) = cq.flush(least) {
            error!(topic = cq.topic(), queue_id = cq.queue_id(), error = %e, "cannot flush consume queue");
            ok = false;
        }
    }
    let index_ts = match i.index.as_ref().map(|ix| ix.flush(all)) {
        Some(Ok(ts)) => ts,
        Some(Err(e)) => {
            error!(error = %e, "cannot flush index file");
            ok = false;
            None
        }
        None => None,
    };
    let mut write = false;
    if all && ok && dispatched_ts > 0 {
        i.checkpoint.set_logics_msg_timestamp(dispatched_ts);
        write = true;
    }
    if let Some(ts) = index_ts.filter(|_| ok) {
        i.checkpoint.set_index_msg_timestamp(ts);
        write = true;
    }
    if write {
        if let Err(e) = i.checkpoint.flush() {
            warn!(error = %e, "cannot write checkpoint");
        }
    }
}

pub(super) fn run_logics_flush(ctl: &ServiceControl, i: &Inner) {
    let interval = Duration::from_millis(i.config.flush_interval_consume_queue);
    let thorough = Duration::from_millis(i.config.flush_consume_queue_thorough_interval);
    // The first pass is thorough, so a young store has a checkpoint early.
    let mut last_thorough: Option<Instant> = None;
    while !ctl.is_stopped() {
        ctl.wait(interval);
        if ctl.is_stopped() {
            break;
        }
        let all = last_thorough.is_none_or(|t| t.elapsed() >= thorough);
        if all {
            last_thorough = Some(Instant::now());
        }
        flush_logics(i, all);
    }
}

pub(super) fn run_cleanup(ctl: &ServiceControl, i: &Inner) {
    let start = Instant::now();
    let clean_interval = Duration::from_millis(i.config.clean_resource_interval);
    let mut next_disk = start + DISK_CHECK_FIRST;
    let mut next_clean = start + CLEAN_FIRST;
    while !ctl.is_stopped() {
        let now = Instant::now();
        if now >= next_disk {
            i.cleaner.check_disk(&i.commit_log, &i.config);
            next_disk = now + DISK_CHECK_INTERVAL;
        }
        if now >= next_clean {
            if let Err(e) = i
                .cleaner
                .run(&i.commit_log, &i.cqs, i.index.as_deref(), &i.config)
            {
                error!(error = %e, "cleanup pass failed");
            }
            next_clean = Instant::now() + clean_interval;
        }
        let wake = next_disk.min(next_clean);
        ctl.wait(wake.saturating_duration_since(Instant::now()));
    }
}
