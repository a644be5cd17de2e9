//! `MessageStore`: the store as the broker sees it. Owns the root directory, the
//! `checkpoint`, the `abort` marker (present while running, so its presence at start
//! means the last run crashed), the CommitLog, the consume queues, the index, and the
//! service threads that dispatch, flush and clean.
//!
//! Opening recovers in this order: the CommitLog (its valid end), the consume queues
//! (cut to the CommitLog, last unit checked against its record), the index (entries of
//! records at or after the restart point removed), then every record from the restart
//! point on is dispatched again before `open` returns, and the CommitLog's queue
//! offsets are taken from the consume queues. The restart point is the end of the
//! index (the last record whose keys are all in) or of the consume queues, whichever
//! is earlier: consume-queue appends are idempotent, index entries past it were
//! removed, so every record reaches its queue and the index exactly once.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use message::properties::{self, keys};
use message::record::{self, Record};
use parking_lot::Mutex;
use tracing::{info, warn};

use crate::checkpoint::Checkpoint;
use crate::cleanup::{CleanReport, Cleaner, DiskUsage, DiskVerdict, StatvfsDiskUsage};
use crate::clock::{Clock, SystemClock};
use crate::commit_log::{CommitLog, FlushWait, PhyOffset, PutResult, RecordAt, refuse};
use crate::config::{StoreConfig, parse_delay_levels};
use crate::consume_queue::{ConsumeQueueTable, CqUnit};
use crate::dispatch::{DispatchListener, Dispatcher, tags_code};
use crate::error::{Result, StoreError};
use crate::index::IndexService;
use crate::lock::StoreLock;
use crate::mapped_file::sync_dir;
use crate::page_cache::PageCacheSampler;
use crate::put::{MessageBatch, MessageInner};
use crate::service_thread::{ServiceControl, ServiceThread};

mod read;
mod services;

pub use read::{GetMessageResult, GetMessageStatus, MatchAll, MessageFilter, QueryMessageResult};

/// The seams the store's services read time and disk usage through.
#[derive(Debug, Clone)]
pub struct StoreEnv {
    /// Clock for expiry, cleanup pacing and index file names.
    pub clock: Arc<dyn Clock>,
    /// Disk usage for the cleanup thresholds.
    pub disk: Arc<dyn DiskUsage>,
}

impl Default for StoreEnv {
    fn default() -> Self {
        StoreEnv {
            clock: Arc::new(SystemClock),
            disk: Arc::new(StatvfsDiskUsage),
        }
    }
}

/// Put and get counters for `runtime_info`.
#[derive(Debug, Default)]
struct Stats {
    put_times: AtomicU64,
    put_bytes: AtomicU64,
    put_failed: AtomicU64,
    put_max_ms: AtomicU64,
    get_found: AtomicU64,
    get_miss: AtomicU64,
    get_transferred: AtomicU64,
    get_max_ms: AtomicU64,
}

/// What the service threads share with the store.
#[derive(Debug)]
struct Inner {
    config: StoreConfig,
    checkpoint: Arc<Checkpoint>,
    commit_log: CommitLog,
    cqs: Arc<ConsumeQueueTable>,
    index: Option<Arc<IndexService>>,
    dispatcher: Dispatcher,
    cleaner: Cleaner,
    clock: Arc<dyn Clock>,
    stats: Stats,
    page_cache: PageCacheSampler,
    delay_levels: Vec<i64>,
    boot_ms: i64,
    /// Bytes of "in memory" data behind the CommitLog's end
    /// (`accessMessageInMemoryMaxRatio` of physical RAM).
    memory_window: u64,
}

/// What recovery of the consume queues and index did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogicsRecovery {
    /// Consume queues loaded.
    pub queues: usize,
    /// Units dropped because their records are past the CommitLog's end or do not
    /// match them.
    pub dropped_units: u64,
    /// Index entries removed to be rebuilt.
    pub removed_index_entries: u64,
    /// Where dispatch restarted.
    pub redispatch_from: u64,
    /// Records dispatched again during open.
    pub redispatched_records: u64,
    /// Time taken (consume queues, index and re-dispatch).
    pub elapsed: Duration,
}

/// The message store.
#[derive(Debug)]
pub struct MessageStore {
    inner: Arc<Inner>,
    logics_recovery: LogicsRecovery,
    services: Mutex<Vec<ServiceThread>>,
    shut_down: AtomicBool,
    /// Held from before the first read to the drop (last field: released last).
    _lock: StoreLock,
}

impl MessageStore {
    /// Opens (or creates) the store under `config.store_path_root_dir` with the system
    /// clock and disk; see [`open_with`](Self::open_with).
    ///
    /// # Errors
    /// As [`open_with`](Self::open_with).
    pub fn open(config: StoreConfig) -> Result<Self> {
        Self::open_with(config, StoreEnv::default())
    }

    /// Opens (or creates) the store: recovers (abnormally if an `abort` file is left
    /// from a crash), dispatches what the consume queues and index miss, starts the
    /// services, then creates `abort`.
    ///
    /// # Errors
    /// Invalid config, unreadable or inconsistent files, I/O errors, or a re-dispatch
    /// that cannot write (disk full).
    pub fn open_with(mut config: StoreConfig, env: StoreEnv) -> Result<Self> {
        config.sanitize()?;
        let root = config.store_path_root_dir.clone();
        fs::create_dir_all(&root).map_err(|e| StoreError::io("mkdir", &root, e))?;
        let lock = StoreLock::acquire(&root)?;
        let abort = config.abort_path();
        let abnormal = abort.exists();
        info!(root = %root.display(), abnormal, "opening message store");
        let checkpoint = Arc::new(Checkpoint::open(&config.checkpoint_path())?);
        let commit_log = CommitLog::open(config.clone(), Arc::clone(&checkpoint), abnormal)?;
        let started = Instant::now();
        let cqs = Arc::new(ConsumeQueueTable::load(
            &config.consume_queue_dir(),
            config.mapped_file_size_consume_queue as usize,
        )?);
        let index = if config.message_index_enable {
            Some(Arc::new(IndexService::load(
                &config.index_dir(),
                config.max_hash_slot_num,
                config.max_index_num,
                config.max_msgs_num_batch,
                Arc::clone(&env.clock),
            )?))
        } else {
            None
        };
        let delay_levels = parse_delay_levels(&config.message_delay_level)?;
        let memory_window = read::total_physical_memory() / 100
            * u64::from(config.access_message_in_memory_max_ratio);
        let inner = Arc::new(Inner {
            dispatcher: Dispatcher::new(Arc::clone(&cqs), index.clone(), delay_levels.clone(), 0),
            delay_levels,
            cleaner: Cleaner::new(Arc::clone(&env.clock), Arc::clone(&env.disk)),
            boot_ms: env.clock.now_ms(),
            clock: env.clock,
            config: config.clone(),
            checkpoint,
            commit_log,
            cqs,
            index,
            stats: Stats::default(),
            page_cache: PageCacheSampler::default(),
            memory_window,
        });
        let mut logics_recovery = recover_logics(&inner)?;
        logics_recovery.elapsed = started.elapsed();
        info!(
            queues = logics_recovery.queues,
            dropped_units = logics_recovery.dropped_units,
            removed_index_entries = logics_recovery.removed_index_entries,
            redispatch_from = logics_recovery.redispatch_from,
            redispatched = logics_recovery.redispatched_records,
            elapsed_ms = logics_recovery.elapsed.as_millis() as u64,
            "consume queues and index recovered"
        );
        let store = MessageStore {
            inner,
            logics_recovery,
            services: Mutex::new(Vec::new()),
            shut_down: AtomicBool::new(false),
            _lock: lock,
        };
        store.start_services()?;
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&abort)
            .map_err(|e| StoreError::io("create", &abort, e))?;
        sync_dir(&root)?;
        Ok(store)
    }

    fn start_services(&self) -> Result<()> {
        let mut services = self.services.lock();
        let i = Arc::clone(&self.inner);
        let readable = Arc::clone(self.inner.commit_log.readable_watch());
        services.push(
            ServiceThread::spawn(
                "store-reput",
                Arc::new(ServiceControl::default()),
                move |c| services::run_reput(c, &i.commit_log, &i.dispatcher),
            )?
            .with_nudge(Box::new(move || readable.interrupt())),
        );
        let i = Arc::clone(&self.inner);
        services.push(ServiceThread::spawn(
            "store-logics-flush",
            Arc::new(ServiceControl::default()),
            move |c| services::run_logics_flush(c, &i),
        )?);
        let i = Arc::clone(&self.inner);
        services.push(ServiceThread::spawn(
            "store-cleanup",
            Arc::new(ServiceControl::default()),
            move |c| services::run_cleanup(c, &i),
        )?);
        Ok(())
    }

    // ------------------------------------------------------------------ accessors

    /// The CommitLog.
    #[must_use]
    pub fn commit_log(&self) -> &CommitLog {
        &self.inner.commit_log
    }

    /// The consume queues.
    #[must_use]
    pub fn consume_queues(&self) -> &Arc<ConsumeQueueTable> {
        &self.inner.cqs
    }

    /// The index, if `messageIndexEnable`.
    #[must_use]
    pub fn index(&self) -> Option<&Arc<IndexService>> {
        self.inner.index.as_ref()
    }

    /// The checkpoint.
    #[must_use]
    pub fn checkpoint(&self) -> &Arc<Checkpoint> {
        &self.inner.checkpoint
    }

    /// The delay of each level in ms (`messageDelayLevel`), level 1 first; never empty.
    #[must_use]
    pub fn delay_levels(&self) -> &[i64] {
        &self.inner.delay_levels
    }

    /// The (sanitized) configuration.
    #[must_use]
    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// What recovery of the consume queues and index did at open.
    #[must_use]
    pub fn logics_recovery(&self) -> &LogicsRecovery {
        &self.logics_recovery
    }

    /// The store clock, in ms since the epoch.
    #[must_use]
    pub fn now_ms(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    // ------------------------------------------------------------------ puts

    /// Stores one message (see [`CommitLog::put`]); refused with
    /// `ServiceNotAvailable` when not writable and `DiskFull` above
    /// `diskSpaceWarningLevelRatio` ([`put_refusal_reason`](Self::put_refusal_reason)
    /// says why).
    pub fn put_message(&self, msg: &MessageInner) -> PutResult {
        let started = Instant::now();
        let r = self.inner.commit_log.put(msg);
        self.note_put(&r, started);
        self.help_dispatch(&r);
        r
    }

    /// Stores a client batch (see [`CommitLog::put_batch`]).
    pub fn put_messages(&self, batch: &MessageBatch) -> PutResult {
        let started = Instant::now();
        let r = self.inner.commit_log.put_batch(batch);
        self.note_put(&r, started);
        self.help_dispatch(&r);
        r
    }

    /// After a put, the putting thread dispatches what is readable if no one else is
    /// dispatching right now: under load records reach their consume queue (and wake
    /// long polls) without a hand-off to the reput thread — a futex wake and a context
    /// switch per put, a quarter of the broker's CPU at 30k puts/s. The reput thread
    /// still covers what this misses (replication, the transient pool, races).
    fn help_dispatch(&self, r: &PutResult) {
        if r.status.is_ok() {
            self.inner.dispatcher.try_dispatch(&self.inner.commit_log);
        }
    }

    fn note_put(&self, r: &PutResult, started: Instant) {
        let s = &self.inner.stats;
        match &r.append {
            Some(a) if r.status.is_ok() => {
                s.put_times.fetch_add(a.msg_num as u64, Ordering::Relaxed);
                s.put_bytes
                    .fetch_add(a.wrote_bytes as u64, Ordering::Relaxed);
            }
            _ => {
                s.put_failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        s.put_max_ms
            .fetch_max(started.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// The flush outcome of a put ending at `end` (see [`CommitLog::wait_flushed`]).
    #[must_use]
    pub fn wait_flushed(&self, end: PhyOffset) -> FlushWait {
        self.inner.commit_log.wait_flushed(end)
    }

    /// Makes the store accept (`true`) or refuse (`false`, puts answer
    /// `ServiceNotAvailable`) puts: the slave role and role switches. Refusing returns
    /// once no put is in progress, so the CommitLog's end read after it is final (a
    /// demotion cuts from there). Becoming writable first dispatches everything
    /// replicated so far and takes the queue offsets from the consume queues.
    ///
    /// # Errors
    /// Becoming writable: what was replicated cannot be dispatched; the store stays
    /// read-only (refusing never fails).
    pub fn set_writable(&self, writable: bool) -> Result<()> {
        let log = &self.inner.commit_log;
        if !writable {
            if !log.set_refusal(refuse::NOT_WRITABLE, true) {
                info!("store no longer accepts puts");
            }
            // A put that checked the flags before it was set may still be appending.
            log.put_barrier();
            return Ok(());
        }
        if !log.is_refusing(refuse::NOT_WRITABLE) {
            return Ok(());
        }
        // No put can be half done: every put checks the flag under the put lock.
        log.put_barrier();
        self.inner.dispatcher.drain(log, Duration::from_secs(30))?;
        log.set_queue_offsets(self.inner.cqs.max_offsets());
        log.set_refusal(refuse::NOT_WRITABLE, false);
        info!("store accepts puts");
        Ok(())
    }

    /// Why puts are refused right now (`None` if they are not).
    #[must_use]
    pub fn put_refusal_reason(&self) -> Option<String> {
        let log = &self.inner.commit_log;
        if let Some(p) = log.poisoned() {
            return Some(format!("commit log writer poisoned: {p}"));
        }
        if log.is_refusing(refuse::NOT_WRITABLE) {
            return Some("the store is not writable (slave role)".into());
        }
        if log.is_refusing(refuse::DISK_FULL) {
            return self
                .inner
                .cleaner
                .disk_full_reason()
                .or(Some("disk full".into()));
        }
        None
    }

    /// Appends replicated bytes at exactly `expected` (slave side; see
    /// [`CommitLog::append_raw`]); dispatch follows by itself.
    ///
    /// # Errors
    /// As [`CommitLog::append_raw`].
    pub fn append_raw(&self, expected: PhyOffset, data: &[u8]) -> Result<()> {
        self.inner.commit_log.append_raw(expected, data)?;
        self.inner.dispatcher.try_dispatch(&self.inner.commit_log);
        Ok(())
    }

    /// Cuts the CommitLog back to `offset` (a record boundary), and with it the
    /// consume queues and the index; dispatches what is left undispatched below it
    /// and takes the queue offsets from the consume queues. Puts are refused while it
    /// runs.
    ///
    /// # Errors
    /// `offset` is outside the log, readers hold the cut bytes, or I/O fails.
    pub fn truncate_dirty(&self, offset: PhyOffset) -> Result<()> {
        let i = &self.inner;
        let was_refusing = i.commit_log.set_refusal(refuse::NOT_WRITABLE, true);
        let r = (|| {
            {
                let _paused = i.dispatcher.pause();
                i.commit_log.truncate_dirty(offset)?;
                for cq in i.cqs.all() {
                    cq.truncate_to_commit_log(offset.0)?;
                }
                if let Some(ix) = &i.index {
                    ix.undo_from(offset.0);
                }
                if i.dispatcher.reput_from() > offset.0 {
                    i.dispatcher.set_reput_from(offset.0);
                }
            }
            i.dispatcher.drain(&i.commit_log, Duration::from_secs(30))?;
            i.commit_log.set_queue_offsets(i.cqs.max_offsets());
            Ok(())
        })();
        if !was_refusing {
            i.commit_log.set_refusal(refuse::NOT_WRITABLE, false);
        }
        r
    }

    // ------------------------------------------------------------------ dispatch

    /// Registers a listener called on the reput thread for every dispatched record,
    /// after its unit and index entries are written.
    pub fn add_dispatch_listener(&self, listener: Arc<dyn DispatchListener>) {
        self.inner.dispatcher.add_listener(listener);
    }

    /// Sampled page-cache residency of what pulls read (off until enabled).
    #[must_use]
    pub fn page_cache(&self) -> &PageCacheSampler {
        &self.inner.page_cache
    }

    /// Bytes of the CommitLog not yet dispatched.
    #[must_use]
    pub fn dispatch_behind_bytes(&self) -> u64 {
        self.inner
            .commit_log
            .max_offset()
            .0
            .saturating_sub(self.inner.dispatcher.reput_from())
    }

    /// Where dispatch stands (the next record to dispatch).
    #[must_use]
    pub fn reput_from(&self) -> u64 {
        self.inner.dispatcher.reput_from()
    }

    /// Blocks until everything readable now is dispatched, or `timeout` passes;
    /// returns whether it was.
    pub fn wait_dispatched(&self, timeout: Duration) -> bool {
        let target = self.inner.commit_log.max_offset().0;
        let deadline = Instant::now() + timeout;
        while self.inner.dispatcher.reput_from() < target {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        true
    }

    // ------------------------------------------------------------------ queues

    /// Next queue offset to be written in (topic, queue); 0 if there is no queue.
    #[must_use]
    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> u64 {
        self.inner
            .cqs
            .get(topic, queue_id)
            .map_or(0, |q| q.max_offset())
    }

    /// First readable queue offset of (topic, queue); 0 if there is no queue.
    #[must_use]
    pub fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> u64 {
        self.inner
            .cqs
            .get(topic, queue_id)
            .map_or(0, |q| q.min_offset())
    }

    /// Queue ids of `topic` that have a consume queue, ascending.
    #[must_use]
    pub fn queue_ids(&self, topic: &str) -> Vec<i32> {
        self.inner.cqs.queue_ids(topic)
    }

    /// Drops the consume queues of `topics` and forgets their queue offsets
    /// (`DELETE_TOPIC_IN_BROKER`). Their records stay in the CommitLog until expiry.
    pub fn delete_topics(&self, topics: &[String]) {
        let i = &self.inner;
        for topic in topics {
            for cq in i.cqs.remove_topic(topic) {
                if let Err(e) = cq.destroy() {
                    warn!(topic = %topic, queue_id = cq.queue_id(), error = %e, "cannot delete consume queue files");
                }
                i.commit_log.remove_queue(topic, cq.queue_id());
            }
            info!(topic = %topic, "deleted topic's consume queues");
        }
    }

    /// Drops every consume queue whose last message lies wholly below the CommitLog's first
    /// offset (`mqadmin cleanExpiredCQ`, RocketMQ's `cleanExpiredConsumerQueue`): all its
    /// messages are gone, and its queue offsets start again at 0. Returns how many went.
    pub fn clean_expired_consume_queues(&self) -> usize {
        let i = &self.inner;
        let min = i.commit_log.min_offset().0;
        let mut removed = 0;
        for cq in i.cqs.all() {
            // An empty queue may have been created a moment ago: kept, as RocketMQ does.
            let Some(last) = cq.last_unit() else {
                continue;
            };
            if last.commit_log_offset + u64::from(last.size) > min {
                continue;
            }
            i.cqs.remove_queue(&cq);
            if let Err(e) = cq.destroy() {
                warn!(topic = cq.topic(), queue_id = cq.queue_id(), error = %e, "cannot delete expired consume queue files");
            }
            i.commit_log.remove_queue(cq.topic(), cq.queue_id());
            info!(
                topic = cq.topic(),
                queue_id = cq.queue_id(),
                "expired consume queue removed"
            );
            removed += 1;
        }
        removed
    }

    // ------------------------------------------------------------------ positions

    /// First CommitLog offset held.
    #[must_use]
    pub fn min_phy_offset(&self) -> u64 {
        self.inner.commit_log.min_offset().0
    }

    /// End of the readable CommitLog.
    #[must_use]
    pub fn max_phy_offset(&self) -> u64 {
        self.inner.commit_log.max_offset().0
    }

    // ------------------------------------------------------------------ cleanup

    /// Runs one cleanup pass now (the cleanup thread runs one every
    /// `cleanResourceInterval`).
    ///
    /// # Errors
    /// An unlink failed.
    pub fn run_cleanup(&self) -> Result<CleanReport> {
        let i = &self.inner;
        i.cleaner
            .run(&i.commit_log, &i.cqs, i.index.as_deref(), &i.config)
    }

    /// Reads the disk usage now and sets or clears the disk-full refusal of puts (the
    /// cleanup thread does this every 10 s).
    pub fn check_disk_space(&self) -> DiskVerdict {
        self.inner
            .cleaner
            .check_disk(&self.inner.commit_log, &self.inner.config)
    }

    /// Makes the next 20 cleanup passes delete expired files whatever the hour
    /// (`mqadmin deleteExpiredCommitLog`).
    pub fn execute_delete_files_manually(&self) {
        self.inner.cleaner.delete_manually();
    }

    // ------------------------------------------------------------------ lifecycle

    /// Clean stop: puts refused, final commit and flush, everything dispatched,
    /// consume queues and index synced, checkpoint written, `abort` removed (kept if
    /// the writer is poisoned or dispatch could not finish, so the next start
    /// recovers abnormally). Idempotent; also run on drop.
    ///
    /// # Errors
    /// The checkpoint or the `abort` removal failed (the next start then recovers
    /// abnormally, which is safe).
    pub fn shutdown(&self) -> Result<()> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let i = &self.inner;
        let mut services = std::mem::take(&mut *self.services.lock());
        // Cleanup first, reput and flush after the CommitLog's final flush.
        if let Some(mut cleanup) = services.pop() {
            cleanup.stop();
        }
        i.commit_log.shutdown();
        while let Some(mut s) = services.pop() {
            s.stop();
        }
        let dispatched = match i.dispatcher.drain(&i.commit_log, Duration::from_secs(5)) {
            Ok(()) => i.dispatcher.reput_from() >= i.commit_log.max_offset().0,
            Err(e) => {
                warn!(error = %e, "cannot finish dispatch at shutdown");
                false
            }
        };
        services::flush_logics(i, true);
        if let Some(reason) = i.commit_log.poisoned() {
            info!(
                reason,
                "store was poisoned; keeping abort file for abnormal recovery"
            );
            return Ok(());
        }
        if !dispatched {
            warn!(
                reput_from = i.dispatcher.reput_from(),
                max_offset = i.commit_log.max_offset().0,
                "commit log not fully dispatched; keeping abort file"
            );
            return Ok(());
        }
        i.checkpoint.flush()?;
        let abort = i.config.abort_path();
        fs::remove_file(&abort).map_err(|e| StoreError::io("unlink", &abort, e))?;
        sync_dir(&i.config.store_path_root_dir)?;
        info!(root = %i.config.store_path_root_dir.display(), "message store shut down");
        Ok(())
    }

    // ------------------------------------------------------------------ stats

    /// Runtime figures under RocketMQ's `GET_BROKER_RUNTIME_INFO` keys that the store
    /// knows.
    #[must_use]
    pub fn runtime_info(&self) -> BTreeMap<String, String> {
        let i = &self.inner;
        let s = &i.stats;
        let mut m = BTreeMap::new();
        let mut put = |k: &str, v: String| {
            m.insert(k.to_owned(), v);
        };
        let now = i.clock.now_ms();
        put("bootTimestamp", i.boot_ms.to_string());
        put("runtime", format_runtime(now - i.boot_ms));
        let times = s.put_times.load(Ordering::Relaxed);
        let bytes = s.put_bytes.load(Ordering::Relaxed);
        put("putMessageTimesTotal", times.to_string());
        put("putMessageSizeTotal", bytes.to_string());
        put(
            "putMessageAverageSize",
            format!(
                "{:.1}",
                if times == 0 {
                    0.0
                } else {
                    bytes as f64 / times as f64
                }
            ),
        );
        put(
            "putMessageFailedTimes",
            s.put_failed.load(Ordering::Relaxed).to_string(),
        );
        put(
            "putMessageEntireTimeMax",
            s.put_max_ms.load(Ordering::Relaxed).to_string(),
        );
        put(
            "getMessageEntireTimeMax",
            s.get_max_ms.load(Ordering::Relaxed).to_string(),
        );
        put(
            "getMessageTimesTotalFound",
            s.get_found.load(Ordering::Relaxed).to_string(),
        );
        put(
            "getMessageTimesTotalMiss",
            s.get_miss.load(Ordering::Relaxed).to_string(),
        );
        put(
            "getMessageTransferedMsgCount",
            s.get_transferred.load(Ordering::Relaxed).to_string(),
        );
        put("dispatchMaxBuffer", "0".into());
        put(
            "dispatchBehindBytes",
            self.dispatch_behind_bytes().to_string(),
        );
        put(
            "pageCacheLockTimeMills",
            i.commit_log.lock_time_millis().to_string(),
        );
        put(
            "remainHowManyDataToFlush",
            human_bytes(i.commit_log.unflushed_bytes()),
        );
        put("commitLogMinOffset", self.min_phy_offset().to_string());
        put("commitLogMaxOffset", self.max_phy_offset().to_string());
        put(
            "earliestMessageTimeStamp",
            self.earliest_message_time_overall()
                .unwrap_or(-1)
                .to_string(),
        );
        let ratio = |p: &std::path::Path| i.cleaner.disk_ratio(p).map_or(-1.0, |r| r);
        put(
            "commitLogDiskRatio",
            ratio(&i.config.commit_log_dir()).to_string(),
        );
        put(
            "consumeQueueDiskRatio",
            ratio(&i.config.consume_queue_dir()).to_string(),
        );
        if i.config.transient_store_pool_enable {
            put(
                "remainHowManyDataToCommit",
                human_bytes(i.commit_log.uncommitted_bytes()),
            );
        }
        m
    }

    /// Store time of the oldest record in the CommitLog (RocketMQ
    /// `getEarliestMessageTime()`).
    #[must_use]
    pub fn earliest_message_time_overall(&self) -> Option<i64> {
        let log = &self.inner.commit_log;
        match log.record_at(log.min_offset()) {
            Ok(Some(RecordAt::Message(b))) => record::peek_store_timestamp(&b),
            _ => None,
        }
    }
}

impl Drop for MessageStore {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            warn!(error = %e, "unclean message store shutdown");
        }
    }
}

/// RocketMQ's `getFormatRuntime`.
fn format_runtime(ms: i64) -> String {
    let ms = ms.max(0);
    let (s, m, h, d) = (1000, 60_000, 3_600_000, 86_400_000);
    format!(
        "[ {} days, {} hours, {} minutes, {} seconds ]",
        ms / d,
        ms % d / h,
        ms % h / m,
        ms % m / s
    )
}

/// RocketMQ's `humanReadableByteCount(bytes, false)`.
fn human_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let exp = ((bytes as f64).ln() / 1024f64.ln()) as i32;
    let unit = ["K", "M", "G", "T", "P", "E"][(exp - 1).clamp(0, 5) as usize];
    format!("{:.1} {unit}iB", bytes as f64 / 1024f64.powi(exp))
}

/// Checks a consume-queue unit against the record it points at.
fn unit_matches(i: &Inner, topic: &str, queue_id: i32, u: &CqUnit, q: u64, cl: (u64, u64)) -> bool {
    let (cl_min, cl_end) = cl;
    if u.commit_log_offset < cl_min {
        return true;
    }
    if u.end() > cl_end {
        return false;
    }
    let Ok(Some(RecordAt::Message(b))) = i.commit_log.record_at(PhyOffset(u.commit_log_offset))
    else {
        return false;
    };
    let Ok(Some(Record::Message(m))) = record::decode(&b) else {
        return false;
    };
    let props = String::from_utf8_lossy(m.properties);
    let [tags, delay] = properties::get_many(&props, [keys::TAGS, keys::DELAY]);
    m.total_size == u.size
        && m.queue_offset == q
        && m.queue_id == queue_id
        && m.topic == topic
        && tags_code(m.topic, tags, delay, m.store_timestamp, &i.delay_levels) == u.tags_code
}

/// Recovers the consume queues and the index against the recovered CommitLog, then
/// dispatches again from the restart point.
fn recover_logics(i: &Inner) -> Result<LogicsRecovery> {
    let log = &i.commit_log;
    let (cl_min, cl_end) = (log.min_offset().0, log.max_offset().0);
    let mut rec = LogicsRecovery::default();
    let queues = i.cqs.all();
    rec.queues = queues.len();
    let mut cq_end = 0u64;
    for cq in &queues {
        rec.dropped_units += cq.truncate_to_commit_log(cl_end)?;
        rec.dropped_units += cq.drop_invalid_tail(|u, q| {
            unit_matches(i, cq.topic(), cq.queue_id(), u, q, (cl_min, cl_end))
        })?;
        cq.correct_min_offset(cl_min);
        cq_end = cq_end.max(cq.max_physic_offset());
    }
    let index_end = i.index.as_ref().and_then(|ix| ix.end_phy_offset());
    let restart = index_end
        .map_or(cq_end, |e| e.min(cq_end))
        .clamp(cl_min, cl_end.max(cl_min));
    if let Some(ix) = &i.index {
        rec.removed_index_entries = ix.undo_from(restart);
    }
    rec.redispatch_from = restart;
    i.dispatcher.set_reput_from(restart);
    let before = i.dispatcher.dispatched();
    i.dispatcher.drain(log, Duration::from_secs(60))?;
    rec.redispatched_records = i.dispatcher.dispatched() - before;
    log.set_queue_offsets(i.cqs.max_offsets());
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocketmq_formats() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
        assert_eq!(
            format_runtime(86_400_000 + 3_600_000 * 2 + 61_000),
            "[ 1 days, 2 hours, 1 minutes, 1 seconds ]"
        );
    }
}
