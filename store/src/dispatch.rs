//! Reput (dispatch): follows the CommitLog's readable end and, for each new record,
//! appends its consume-queue unit, adds its index entries, then tells the registered
//! listeners (the broker's long polling and schedule service), in that order, so a
//! woken pull finds the unit.
//!
//! RocketMQ's reput thread polls every millisecond; ours blocks on the CommitLog's
//! readable watch, which every put advances, so dispatch follows a put within
//! microseconds and an idle store does not spin.
//!
//! The same [`Dispatcher::dispatch_available`] runs synchronously at open (recovery
//! re-dispatch) and on truncation or a role switch, under the dispatch lock that the
//! reput thread holds while it works, so there is only ever one dispatcher.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use message::properties::{self, keys};
use message::record::{self, Record, StoredMessage, sys_flag};
use message::tags;
use parking_lot::{Mutex, MutexGuard, RwLock};
use tracing::{error, warn};

use crate::commit_log::{CommitLog, PhyOffset};
use crate::consume_queue::{ConsumeQueueTable, CqUnit, is_safe_dir_name};
use crate::error::{Result, StoreError};
use crate::index::IndexService;
use crate::recovery::takes_queue_offset;

/// While busy, the reput thread looks for new records this often (puts dispatch for
/// themselves; this catches what they miss)...
const BUSY_POLL_INTERVAL: Duration = Duration::from_millis(1);
/// ...for this many empty looks (50 ms) before it blocks until a put wakes it.
const BUSY_POLLS: u32 = 50;

/// The delay topic (RocketMQ `TopicValidator.RMQ_SYS_SCHEDULE_TOPIC`).
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";

/// One dispatched record, as listeners see it (RocketMQ `DispatchRequest`).
#[derive(Debug, Clone, Copy)]
pub struct DispatchRequest<'a> {
    /// Topic.
    pub topic: &'a str,
    /// Queue id.
    pub queue_id: i32,
    /// Queue offset (the unit's index; 0 for prepared/rollback records, which get no
    /// unit).
    pub queue_offset: u64,
    /// CommitLog offset.
    pub commit_log_offset: u64,
    /// Record size.
    pub size: usize,
    /// Tags code as written into the unit.
    pub tags_code: i64,
    /// Store timestamp.
    pub store_timestamp: i64,
    /// Properties string.
    pub properties: &'a str,
    /// sysFlag.
    pub sys_flag: i32,
}

/// Told about every dispatched record, on the reput thread, after its unit and index
/// entries are written. Must stay cheap: it holds up dispatch.
pub trait DispatchListener: Send + Sync {
    /// One record was dispatched.
    fn on_dispatch(&self, d: &DispatchRequest<'_>);
}

/// The consume-queue tags code: [`tags::tags_code`] of `TAGS`; for [`SCHEDULE_TOPIC`] records with a `DELAY` level, the deliver time
/// `store_timestamp + delay(level)`, the level clamped to the highest configured
/// (RocketMQ `checkMessageAndReturnSize` + `computeDeliverTimestamp`).
#[must_use]
pub fn tags_code(
    topic: &str,
    tags: Option<&str>,
    delay: Option<&str>,
    store_timestamp: i64,
    delay_levels: &[i64],
) -> i64 {
    let mut code = tags::tags_code(tags);
    if topic == SCHEDULE_TOPIC {
        if let Some(level) = delay.and_then(|d| d.parse::<i64>().ok()) {
            let level = level.min(delay_levels.len() as i64);
            if level > 0 {
                let delay = delay_levels
                    .get(level as usize - 1)
                    .copied()
                    .unwrap_or(1000);
                code = store_timestamp.saturating_add(delay);
            }
        }
    }
    code
}

/// The properties dispatch looks at, found in one pass.
#[derive(Debug, Default, Clone, Copy)]
struct Props<'a> {
    tags: Option<&'a str>,
    keys: Option<&'a str>,
    uniq_key: Option<&'a str>,
    delay: Option<&'a str>,
}

fn scan_props(s: &str) -> Props<'_> {
    let [tags, keys, uniq_key, delay] =
        properties::get_many(s, [keys::TAGS, keys::KEYS, keys::UNIQ_KEY, keys::DELAY]);
    Props {
        tags,
        keys,
        uniq_key,
        delay,
    }
}

type Listeners = Arc<Vec<Arc<dyn DispatchListener>>>;

/// The dispatcher: the consume queues and index it writes, its listeners, and how far
/// it got.
pub(crate) struct Dispatcher {
    cqs: Arc<ConsumeQueueTable>,
    index: Option<Arc<IndexService>>,
    listeners: RwLock<Listeners>,
    delay_levels: Vec<i64>,
    /// Where dispatch continues.
    reput_from: AtomicU64,
    /// Store timestamp of the last record dispatched (for the checkpoint).
    last_store_timestamp: AtomicI64,
    dispatched: AtomicU64,
    /// Held while dispatching; taken to pause dispatch.
    lock: Mutex<()>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("reput_from", &self.reput_from())
            .field("listeners", &self.listeners.read().len())
            .finish_non_exhaustive()
    }
}

/// What one dispatch pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Progress {
    /// Records dispatched.
    pub records: u64,
    /// Where dispatch stands now.
    pub reput_from: u64,
}

impl Dispatcher {
    pub(crate) fn new(
        cqs: Arc<ConsumeQueueTable>,
        index: Option<Arc<IndexService>>,
        delay_levels: Vec<i64>,
        reput_from: u64,
    ) -> Self {
        Dispatcher {
            cqs,
            index,
            listeners: RwLock::new(Arc::new(Vec::new())),
            delay_levels,
            reput_from: AtomicU64::new(reput_from),
            last_store_timestamp: AtomicI64::new(0),
            dispatched: AtomicU64::new(0),
            lock: Mutex::new(()),
        }
    }

    pub(crate) fn add_listener(&self, l: Arc<dyn DispatchListener>) {
        let mut w = self.listeners.write();
        let mut v: Vec<_> = w.iter().cloned().collect();
        v.push(l);
        *w = Arc::new(v);
    }

    pub(crate) fn reput_from(&self) -> u64 {
        self.reput_from.load(Ordering::Acquire)
    }

    pub(crate) fn set_reput_from(&self, v: u64) {
        self.reput_from.store(v, Ordering::Release);
    }

    pub(crate) fn last_store_timestamp(&self) -> i64 {
        self.last_store_timestamp.load(Ordering::Acquire)
    }

    pub(crate) fn dispatched(&self) -> u64 {
        self.dispatched.load(Ordering::Relaxed)
    }

    /// Pauses dispatch while the guard lives.
    pub(crate) fn pause(&self) -> MutexGuard<'_, ()> {
        self.lock.lock()
    }

    /// Dispatches what is readable unless dispatch is running (or paused) elsewhere;
    /// never waits. Errors are left for the reput thread to retry and report.
    pub(crate) fn try_dispatch(&self, log: &CommitLog) {
        if let Some(_g) = self.lock.try_lock() {
            let _ = self.dispatch_available(log);
        }
    }

    /// Dispatches every readable record from `reput_from` on; the caller holds the
    /// dispatch lock ([`pause`](Self::pause)). Stops at the readable end, at an
    /// incomplete record (replication mid-record), or at the first record whose
    /// consume queue or index cannot be written (disk full), which is retried later.
    ///
    /// # Errors
    /// A consume-queue or index write failed; `reput_from` stays at that record.
    pub(crate) fn dispatch_available(&self, log: &CommitLog) -> Result<Progress> {
        let file_size = log.config().mapped_file_size_commit_log;
        let mut at = self.reput_from();
        let min = log.min_offset().0;
        if at < min {
            warn!(
                reput_from = at,
                min_offset = min,
                "dispatch fell behind the oldest commit log file; skipping to it"
            );
            at = min;
            self.set_reput_from(at);
        }
        let listeners = Arc::clone(&self.listeners.read());
        let mut records = 0u64;
        loop {
            let Some(bytes) = log.read_from(PhyOffset(at)) else {
                break;
            };
            let mut pos = 0usize;
            let mut next_file = false;
            while pos < bytes.len() {
                match record::decode(&bytes[pos..]) {
                    Ok(Some(Record::Message(m))) => {
                        let phy = at + pos as u64;
                        if let Err(e) = self.dispatch_one(&m, phy, &listeners) {
                            self.set_reput_from(phy);
                            return Err(e);
                        }
                        pos += m.total_size as usize;
                        records += 1;
                    }
                    Ok(Some(Record::Blank { .. })) => {
                        next_file = true;
                        break;
                    }
                    Ok(None) => break,
                    Err(e) => {
                        error!(
                            offset = at + pos as u64,
                            error = %e,
                            "commit log bytes are not a record; dispatch skips to the next file"
                        );
                        next_file = true;
                        break;
                    }
                }
            }
            at += pos as u64;
            if next_file {
                at = at - at % file_size + file_size;
            }
            self.set_reput_from(at);
            if pos == 0 && !next_file {
                break;
            }
        }
        self.dispatched.fetch_add(records, Ordering::Relaxed);
        Ok(Progress {
            records,
            reput_from: at,
        })
    }

    fn dispatch_one(&self, m: &StoredMessage<'_>, phy: u64, listeners: &Listeners) -> Result<()> {
        let props: Cow<'_, str> = String::from_utf8_lossy(m.properties);
        let p = scan_props(&props);
        let code = tags_code(
            m.topic,
            p.tags,
            p.delay,
            m.store_timestamp,
            &self.delay_levels,
        );
        if takes_queue_offset(m.sys_flag) {
            if is_safe_dir_name(m.topic) {
                let unit = CqUnit {
                    commit_log_offset: phy,
                    size: m.total_size,
                    tags_code: code,
                };
                let cq = self.cqs.get_or_create(m.topic, m.queue_id);
                let r = match cq.put(unit, m.queue_offset, m.store_timestamp) {
                    Err(StoreError::Closed) => {
                        // The topic was deleted and gets new messages: it starts over.
                        self.cqs.remove_queue(&cq);
                        self.cqs.get_or_create(m.topic, m.queue_id).put(
                            unit,
                            m.queue_offset,
                            m.store_timestamp,
                        )
                    }
                    other => other,
                };
                if let Err(e) = r {
                    error!(topic = m.topic, queue_id = m.queue_id, offset = phy, error = %e, "cannot write consume queue unit; dispatch retries");
                    return Err(e);
                }
            } else {
                error!(
                    topic = m.topic,
                    offset = phy,
                    "topic cannot be a directory name; no consume queue unit"
                );
            }
        }
        if let Some(ix) = &self.index {
            let keys =
                sys_flag::transaction_type(m.sys_flag) != sys_flag::TRANSACTION_ROLLBACK_TYPE;
            if let Err(e) = ix.build(m.topic, p.uniq_key, p.keys, phy, m.store_timestamp, keys) {
                error!(offset = phy, error = %e, "cannot write index entries; dispatch retries");
                ix.undo_from(phy);
                return Err(e);
            }
        }
        self.last_store_timestamp
            .store(m.store_timestamp, Ordering::Release);
        if !listeners.is_empty() {
            let d = DispatchRequest {
                topic: m.topic,
                queue_id: m.queue_id,
                queue_offset: m.queue_offset,
                commit_log_offset: phy,
                size: m.total_size as usize,
                tags_code: code,
                store_timestamp: m.store_timestamp,
                properties: &props,
                sys_flag: m.sys_flag,
            };
            for l in listeners.iter() {
                l.on_dispatch(&d);
            }
        }
        Ok(())
    }

    /// Dispatches until nothing is left (truncation, role switch, shutdown), giving up
    /// after `patience` of failed attempts.
    ///
    /// # Errors
    /// Writes kept failing.
    pub(crate) fn drain(&self, log: &CommitLog, patience: Duration) -> Result<()> {
        let deadline = std::time::Instant::now() + patience;
        loop {
            let _g = self.pause();
            match self.dispatch_available(log) {
                Ok(p) if p.records == 0 => return Ok(()),
                Ok(_) => {}
                Err(e) if std::time::Instant::now() >= deadline => return Err(e),
                Err(_) => {
                    drop(_g);
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    /// The reput thread's body: dispatch, then sleep on the readable watch until the
    /// log grows.
    pub(crate) fn run(&self, log: &CommitLog, stopped: &dyn Fn() -> bool) {
        let readable = Arc::clone(log.readable_watch());
        let mut idle_polls = 0u32;
        loop {
            // Read before the stop flag: a stop plus `interrupt` after it ends the wait.
            let epoch = readable.epoch();
            if stopped() {
                break;
            }
            let seen = readable.get();
            let r = {
                let _g = self.pause();
                self.dispatch_available(log)
            };
            match r {
                Ok(p) if p.records > 0 => idle_polls = 0,
                // While puts keep coming, poll: a blocked wait would make every put pay
                // a futex wake and this thread a context switch per record. Puts
                // dispatch for themselves; polling every 1 ms picks up what they miss
                // (replicated bytes, pool commits, a put racing a dispatch). After a
                // quiet spell the thread blocks and the next put wakes it.
                Ok(_) if idle_polls < BUSY_POLLS => {
                    idle_polls += 1;
                    std::thread::sleep(BUSY_POLL_INTERVAL);
                }
                Ok(_) => {
                    idle_polls = 0;
                    readable.wait_blocking_since(seen + 1, Duration::from_millis(500), epoch);
                }
                Err(_) => std::thread::sleep(Duration::from_secs(1)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DEFAULT_MESSAGE_DELAY_LEVEL, parse_delay_levels};

    #[test]
    fn deliver_time_saturates_instead_of_overflowing() {
        // A slave dispatches the master's bytes: the store timestamp is network input,
        // and a level may be as long as i64::MAX ms.
        let levels = [1_000, i64::MAX];
        assert_eq!(
            tags_code(SCHEDULE_TOPIC, None, Some("1"), i64::MAX - 1, &levels),
            i64::MAX
        );
        assert_eq!(
            tags_code(SCHEDULE_TOPIC, None, Some("2"), 1_700_000_000_000, &levels),
            i64::MAX
        );
        assert_eq!(
            tags_code(SCHEDULE_TOPIC, None, Some("1"), i64::MIN, &levels),
            i64::MIN + 1_000
        );
    }

    #[test]
    fn tags_codes_follow_rocketmq() {
        let levels = parse_delay_levels(DEFAULT_MESSAGE_DELAY_LEVEL).unwrap();
        assert_eq!(tags_code("T", None, None, 5, &levels), 0);
        assert_eq!(tags_code("T", Some(""), None, 5, &levels), 0);
        assert_eq!(tags_code("T", Some("TagA"), None, 5, &levels), 2_598_919);
        // Negative hashes are sign-extended.
        let neg = tags::hash_code("polygenelubricants");
        assert_eq!(
            tags_code("T", Some("polygenelubricants"), None, 5, &levels),
            i64::from(neg)
        );
        assert!(tags_code("T", Some("polygenelubricants"), None, 5, &levels) < 0);
        // Delay levels only count on the schedule topic.
        assert_eq!(
            tags_code("T", Some("TagA"), Some("3"), 5, &levels),
            2_598_919
        );
        assert_eq!(
            tags_code(SCHEDULE_TOPIC, Some("TagA"), Some("3"), 1_000, &levels),
            11_000
        );
        assert_eq!(
            tags_code(SCHEDULE_TOPIC, None, Some("99"), 0, &levels),
            7_200_000,
            "clamped to 2h"
        );
        assert_eq!(
            tags_code(SCHEDULE_TOPIC, Some("TagA"), Some("0"), 0, &levels),
            2_598_919
        );
        assert_eq!(
            tags_code(SCHEDULE_TOPIC, Some("TagA"), Some("x"), 0, &levels),
            2_598_919
        );
    }

    #[test]
    fn props_scan_finds_the_dispatch_keys() {
        let s = properties::build([
            ("KEYS", "k1 k2"),
            ("UNIQ_KEY", "U"),
            ("TAGS", "t"),
            ("DELAY", "2"),
            ("X", "y"),
        ]);
        let p = scan_props(&s);
        assert_eq!(
            (p.keys, p.uniq_key, p.tags, p.delay),
            (Some("k1 k2"), Some("U"), Some("t"), Some("2"))
        );
    }
}
