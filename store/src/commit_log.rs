//! The CommitLog: the put path (one lock; records encoded straight into the mapping;
//! queue offsets assigned under the lock), flush completion, reads by physical offset,
//! and the raw append/truncate the HA side needs.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use message::batch::{BatchDecodeError, EntrySpan};
use message::properties::PROPERTY_SEPARATOR;
use message::record::{
    self, END_FILE_MIN_BLANK_LENGTH, MAX_PROPERTIES_LEN, Record, RecordFields, sys_flag,
};
use parking_lot::Mutex;
use tracing::{error, info, warn};

use crate::checkpoint::Checkpoint;
use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::file_allocator::Allocator;
use crate::mapped_file::{FileWriter, TransientStorePool};
use crate::mapped_file_queue::MappedFileQueue;
use crate::offset_watch::{OffsetWatch, WaitError, WaitOffset};
use crate::put::{MessageBatch, MessageInner};
use crate::recovery::{self, QueueOffsetTable, RecoveryReport};
use crate::service_thread::{ServiceControl, ServiceThread};

mod flush;
mod ha;
mod status;

pub use status::{AppendResult, PhyOffset, PutMessageStatus, PutResult, QueueOffset, RecordAt};

/// State shared with the service threads.
#[derive(Debug)]
pub(crate) struct Shared {
    pub config: StoreConfig,
    pub queue: MappedFileQueue,
    pub checkpoint: Arc<Checkpoint>,
    /// Durable end (flushed).
    pub durable: Arc<OffsetWatch>,
    /// Readable end (written, or committed with the pool).
    pub readable: Arc<OffsetWatch>,
    pub allocator: Allocator,
    pub flush_ctl: Arc<ServiceControl>,
    poisoned: AtomicBool,
    poison_reason: Mutex<Option<String>>,
    begin_time_in_lock: AtomicI64,
    /// Set (under the put lock) by `shutdown`: no more writes.
    closed: AtomicBool,
    /// Why puts are refused ([`refuse`] bits), checked before the put lock.
    refuse: AtomicU8,
    /// `maxMessageSize`, changeable at run time ([`CommitLog::set_max_message_size`]).
    max_message_size: AtomicUsize,
    /// Held by the services around commit/flush and the publication of their
    /// offsets, and by `truncate_dirty`, so a sync that started before a truncation
    /// cannot publish a durable offset past it.
    pub io_lock: Mutex<()>,
    /// How the flushes go (metrics).
    pub flush_meters: FlushMeters,
}

/// What the flush services measure: each sync's time, and how many waiting puts one
/// group commit made durable.
#[derive(Debug)]
pub struct FlushMeters {
    /// Time of each sync that wrote something, microseconds.
    pub fsync_us: metrics::Histogram,
    /// Puts released by each group commit (`SYNC_FLUSH`).
    pub group_size: metrics::Histogram,
}

impl Default for FlushMeters {
    fn default() -> Self {
        FlushMeters {
            fsync_us: metrics::Histogram::new(metrics::meter::LATENCY_US),
            group_size: metrics::Histogram::new(metrics::meter::GROUP_SIZE),
        }
    }
}

impl Shared {
    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// Makes the writer refuse further writes and fails every flush wait.
    pub(crate) fn poison(&self, e: &StoreError) {
        let mut reason = self.poison_reason.lock();
        if reason.is_none() {
            error!(error = %e, "commit log write or sync failed; refusing further writes until reopened");
            *reason = Some(e.to_string());
        }
        self.poisoned.store(true, Ordering::Release);
        drop(reason);
        self.durable.fail();
    }
}

struct PutState {
    writer: Option<FileWriter>,
    table: QueueOffsetTable,
}

/// Reasons to refuse puts (bits of `Shared::refuse`).
pub(crate) mod refuse {
    /// The store is not writable (slave role).
    pub const NOT_WRITABLE: u8 = 1;
    /// The disk is above `diskSpaceWarningLevelRatio`.
    pub const DISK_FULL: u8 = 2;
}

/// The CommitLog. Open it through [`crate::MessageStore`].
pub struct CommitLog {
    shared: Arc<Shared>,
    put: Mutex<PutState>,
    services: Mutex<Vec<ServiceThread>>,
    recovery: RecoveryReport,
}

impl fmt::Debug for CommitLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommitLog")
            .field("dir", &self.shared.queue.dir())
            .field("max_offset", &self.max_offset())
            .field("flushed_offset", &self.flushed_offset())
            .finish_non_exhaustive()
    }
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A future resolving to the flush outcome of a put: `PutOk`, `FlushDiskTimeout`, or
/// `WriterPoisoned`.
#[derive(Debug)]
pub struct FlushWait(WaitOffset);

impl Future for FlushWait {
    type Output = PutMessageStatus;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<PutMessageStatus> {
        Pin::new(&mut self.0).poll(cx).map(|r| match r {
            Ok(()) => PutMessageStatus::PutOk,
            Err(WaitError::Timeout) => PutMessageStatus::FlushDiskTimeout,
            Err(WaitError::Failed) => PutMessageStatus::WriterPoisoned,
        })
    }
}

impl CommitLog {
    /// Opens the CommitLog: loads its files, recovers (abnormally if `abnormal`), and
    /// starts its services.
    ///
    /// # Errors
    /// Files that violate the layout, I/O errors, or thread spawn failures.
    pub fn open(config: StoreConfig, checkpoint: Arc<Checkpoint>, abnormal: bool) -> Result<Self> {
        let file_size = config.mapped_file_size_commit_log as usize;
        let pool = if config.transient_store_pool_enable {
            Some(Arc::new(TransientStorePool::new(
                config.transient_store_pool_size,
                file_size,
            )?))
        } else {
            None
        };
        let dir = config.commit_log_dir();
        let queue = MappedFileQueue::load(&dir, file_size, pool.clone())?;
        let rec = recovery::recover(
            &queue,
            &checkpoint,
            abnormal,
            config.check_crc_on_recover,
            config.message_index_enable && config.message_index_safe,
        )?;
        let end = rec.report.end_offset;
        let next_file = match (&rec.writer, queue.last()) {
            (Some(w), _) => w.file().from() + file_size as u64,
            (None, Some(last)) => last.from() + file_size as u64,
            (None, None) => 0,
        };
        let shared = Arc::new(Shared {
            allocator: Allocator::new(
                dir,
                file_size,
                config.prefault_mapped_file_enable,
                config.warm_maped_file_enable,
                pool,
            ),
            max_message_size: AtomicUsize::new(config.max_message_size),
            config,
            queue,
            checkpoint,
            durable: Arc::new(OffsetWatch::new(end)),
            readable: Arc::new(OffsetWatch::new(end)),
            flush_ctl: Arc::new(ServiceControl::default()),
            poisoned: AtomicBool::new(false),
            poison_reason: Mutex::new(None),
            begin_time_in_lock: AtomicI64::new(0),
            closed: AtomicBool::new(false),
            refuse: AtomicU8::new(0),
            io_lock: Mutex::new(()),
            flush_meters: FlushMeters::default(),
        });
        info!(dir = %shared.queue.dir().display(), files = shared.queue.len(), "loaded commit log files");
        let log = CommitLog {
            put: Mutex::new(PutState {
                writer: rec.writer,
                table: QueueOffsetTable::new(),
            }),
            services: Mutex::new(Vec::new()),
            recovery: rec.report,
            shared,
        };
        log.start_services()?;
        if let Some(w) = &log.put.lock().writer {
            log.shared.allocator.set_current(w.file(), w.position());
        }
        log.shared.allocator.request(next_file);
        Ok(log)
    }

    fn start_services(&self) -> Result<()> {
        let mut services = self.services.lock();
        let s = Arc::clone(&self.shared);
        let alloc_ctl = Arc::new(ServiceControl::default());
        services.push(ServiceThread::spawn(
            "commitlog-allocate",
            alloc_ctl,
            move |_| s.allocator.run(),
        )?);
        if self.shared.config.transient_store_pool_enable {
            let s = Arc::clone(&self.shared);
            services.push(ServiceThread::spawn(
                "commitlog-commit",
                Arc::new(ServiceControl::default()),
                move |c| flush::run_commit(c, &s),
            )?);
        }
        let s = Arc::clone(&self.shared);
        let ctl = Arc::clone(&self.shared.flush_ctl);
        if self.shared.config.flush_disk_type.is_sync() {
            services.push(ServiceThread::spawn(
                "commitlog-group-commit",
                ctl,
                move |c| flush::run_group_commit(c, &s),
            )?);
            let s = Arc::clone(&self.shared);
            services.push(ServiceThread::spawn(
                "commitlog-flush-watcher",
                Arc::new(ServiceControl::default()),
                move |c| flush::run_flush_watcher(c, &s),
            )?);
        } else {
            services.push(ServiceThread::spawn("commitlog-flush", ctl, move |c| {
                flush::run_async_flush(c, &s)
            })?);
        }
        Ok(())
    }

    /// Refuses further writes, then stops the services after a final commit and
    /// flush (which covers every put made before). Idempotent.
    pub fn shutdown(&self) {
        {
            // Under the put lock, so no put is half done when the final flush runs.
            let _st = self.put.lock();
            self.shared.closed.store(true, Ordering::Release);
        }
        let mut services = std::mem::take(&mut *self.services.lock());
        if services.is_empty() {
            return;
        }
        self.shared.allocator.shutdown();
        // Commit before flush, flush before the allocator goes: stop in reverse order.
        while let Some(mut s) = services.pop() {
            s.stop();
        }
        info!(
            max_offset = self.max_offset().0,
            flushed = self.flushed_offset().0,
            "commit log shut down"
        );
    }

    /// What recovery found when the log was opened.
    #[must_use]
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &StoreConfig {
        &self.shared.config
    }

    fn file_size(&self) -> u64 {
        self.shared.config.mapped_file_size_commit_log
    }

    // ------------------------------------------------------------------ put path

    fn check_sizes(&self, len: Option<usize>) -> std::result::Result<usize, PutMessageStatus> {
        let len = len.ok_or(PutMessageStatus::MessageIllegal)?;
        if len > self.max_record_size()
            || (len + END_FILE_MIN_BLANK_LENGTH) as u64 > self.file_size()
        {
            return Err(PutMessageStatus::MessageIllegal);
        }
        Ok(len)
    }

    /// Makes sure the writer has room for `len` bytes plus a BLANK marker, rolling to
    /// the next file (after writing the marker) if not.
    fn writer_for<'a>(
        &self,
        writer: &'a mut Option<FileWriter>,
        len: usize,
        now: i64,
    ) -> std::result::Result<&'a mut FileWriter, PutMessageStatus> {
        let size = self.file_size();
        let fits = writer
            .as_ref()
            .is_some_and(|w| w.remaining() >= len + END_FILE_MIN_BLANK_LENGTH);
        if !fits {
            let next = match writer.take() {
                Some(mut w) => {
                    let rem = w.remaining();
                    if rem >= END_FILE_MIN_BLANK_LENGTH {
                        record::encode_blank(w.reserve(rem), rem as u32);
                        w.publish(rem, now);
                    }
                    // Expiry ages a file by its modification time, as RocketMQ does.
                    w.file().set_modified_ms(now);
                    w.file().from() + size
                }
                None => self.shared.queue.last().map_or(0, |l| l.from() + size),
            };
            let file = self.shared.allocator.take(next).map_err(|e| {
                // Every put tries again while the disk is full: one line per interval.
                log_limit::limited!(
                    error!(from = next, error = %e, "cannot roll to the next commit log file")
                );
                PutMessageStatus::CreateMappedFileFailed
            })?;
            self.shared.queue.push(file.clone());
            self.shared.allocator.set_current(&file, 0);
            self.shared.allocator.request(next + size);
            info!(file = %file.path().display(), "rolled to a new commit log file");
            *writer = Some(file.writer().ok_or(PutMessageStatus::UnknownError)?);
        }
        writer.as_mut().ok_or(PutMessageStatus::UnknownError)
    }

    /// Publishes the readable end; called under the put lock so a truncation cannot
    /// interleave and see it raised past its cut.
    fn publish_readable(&self, end: u64) {
        if self.shared.queue.pool().is_none() {
            self.shared.readable.advance(end);
        }
    }

    /// After the put lock is released: wake the group commit.
    fn after_append(&self) {
        if self.shared.config.flush_disk_type.is_sync() {
            self.shared.flush_ctl.wakeup();
        }
    }

    /// Why a put would be refused now, if it would.
    fn refusal(&self) -> Option<PutMessageStatus> {
        if self.shared.is_poisoned() {
            return Some(PutMessageStatus::WriterPoisoned);
        }
        let r = self.shared.refuse.load(Ordering::Acquire);
        if r & refuse::NOT_WRITABLE != 0 {
            Some(PutMessageStatus::ServiceNotAvailable)
        } else if r & refuse::DISK_FULL != 0 {
            Some(PutMessageStatus::DiskFull)
        } else {
            None
        }
    }

    /// Whether puts are refused for `bit`.
    pub(crate) fn is_refusing(&self, bit: u8) -> bool {
        self.shared.refuse.load(Ordering::Acquire) & bit != 0
    }

    /// Returns once no put is in progress (puts check the refusal flags under the
    /// put lock, so after a flag is set and this returns, no put passes).
    pub(crate) fn put_barrier(&self) {
        drop(self.put.lock());
    }

    /// Bytes written into transient pool buffers but not yet committed to the files.
    #[must_use]
    pub fn uncommitted_bytes(&self) -> u64 {
        self.shared
            .queue
            .max_wrote_offset()
            .saturating_sub(self.shared.queue.max_offset())
    }

    /// Sets or clears a reason to refuse puts ([`refuse`] bits); returns whether it
    /// was set before.
    pub(crate) fn set_refusal(&self, bit: u8, on: bool) -> bool {
        let before = if on {
            self.shared.refuse.fetch_or(bit, Ordering::AcqRel)
        } else {
            self.shared.refuse.fetch_and(!bit, Ordering::AcqRel)
        };
        before & bit != 0
    }

    /// Appends one message. Short and synchronous: lock, encode into the mapping,
    /// unlock. Durability is awaited separately with [`wait_flushed`](Self::wait_flushed).
    pub fn put(&self, msg: &MessageInner) -> PutResult {
        let sys = sys_flag::with_host_bits(msg.sys_flag, &msg.born_host, &msg.store_host);
        if msg.body.len() > self.max_message_size() {
            warn!(topic = %msg.topic, body = msg.body.len(), "message body exceeds maxMessageSize");
            return PutResult::failed(PutMessageStatus::MessageIllegal);
        }
        if msg.properties.len() > MAX_PROPERTIES_LEN {
            return PutResult::failed(PutMessageStatus::PropertiesSizeExceeded);
        }
        let mut f = RecordFields {
            body_crc: record::body_crc(&msg.body),
            queue_id: msg.queue_id,
            flag: msg.flag,
            queue_offset: 0,
            physical_offset: 0,
            sys_flag: sys,
            born_timestamp: msg.born_timestamp,
            born_host: msg.born_host,
            store_timestamp: 0,
            store_host: msg.store_host,
            reconsume_times: msg.reconsume_times,
            prepared_transaction_offset: msg.prepared_transaction_offset,
            body: &msg.body,
            topic: msg.topic.as_bytes(),
            properties: [msg.properties.as_bytes(), &[], &[]],
        };
        let len = match self.check_sizes(f.encoded_len()) {
            Ok(l) => l,
            Err(s) => return PutResult::failed(s),
        };
        if let Some(s) = self.refusal() {
            return PutResult::failed(s);
        }
        let takes_offset = recovery::takes_queue_offset(sys);

        let mut guard = self.put.lock();
        if self.shared.closed.load(Ordering::Acquire) {
            return PutResult::failed(PutMessageStatus::ServiceNotAvailable);
        }
        if let Some(s) = self.refusal() {
            return PutResult::failed(s);
        }
        let st = &mut *guard;
        let now = now_millis();
        self.shared.begin_time_in_lock.store(now, Ordering::Relaxed);
        let writer = match self.writer_for(&mut st.writer, len, now) {
            Ok(w) => w,
            Err(s) => {
                self.shared.begin_time_in_lock.store(0, Ordering::Relaxed);
                return PutResult::failed(s);
            }
        };
        let slot = if takes_offset {
            Some(queue_slot(&mut st.table, &msg.topic, msg.queue_id))
        } else {
            None
        };
        let queue_offset = slot.as_ref().map_or(0, |s| **s);
        let wrote_offset = writer.file().from() + writer.position() as u64;
        f.queue_offset = queue_offset;
        f.physical_offset = wrote_offset;
        f.store_timestamp = now;
        record::encode(writer.reserve(len), &f);
        writer.publish(len, now);
        if let Some(s) = slot {
            *s += 1;
        }
        self.shared.begin_time_in_lock.store(0, Ordering::Relaxed);
        let end = wrote_offset + len as u64;
        self.publish_readable(end);
        drop(guard);
        self.after_append();
        PutResult {
            status: PutMessageStatus::PutOk,
            append: Some(AppendResult {
                wrote_offset: PhyOffset(wrote_offset),
                wrote_bytes: len,
                queue_offset: QueueOffset(queue_offset),
                store_timestamp: now,
                msg_num: 1,
                record_offsets: Vec::new(),
                store_host: msg.store_host,
            }),
        }
    }

    /// Appends a client batch: every entry becomes a record, all under one lock
    /// acquisition, in one file, with consecutive queue offsets.
    pub fn put_batch(&self, batch: &MessageBatch) -> PutResult {
        let sys = sys_flag::with_host_bits(batch.sys_flag, &batch.born_host, &batch.store_host);
        if sys_flag::transaction_type(sys) != sys_flag::TRANSACTION_NOT_TYPE
            || batch.body.len() > self.max_message_size()
        {
            return PutResult::failed(PutMessageStatus::MessageIllegal);
        }
        let entries = match message::batch::decode(&batch.body, batch.properties.len()) {
            Ok(e) => e,
            Err(BatchDecodeError::PropertiesTooLong) => {
                return PutResult::failed(PutMessageStatus::PropertiesSizeExceeded);
            }
            Err(_) => {
                return PutResult::failed(PutMessageStatus::MessageIllegal);
            }
        };
        let sep = [PROPERTY_SEPARATOR as u8];
        let fields = |e: &EntrySpan| RecordFields {
            body_crc: e.body_crc,
            queue_id: batch.queue_id,
            flag: e.flag,
            queue_offset: 0,
            physical_offset: 0,
            sys_flag: sys,
            born_timestamp: batch.born_timestamp,
            born_host: batch.born_host,
            store_timestamp: 0,
            store_host: batch.store_host,
            reconsume_times: batch.reconsume_times,
            prepared_transaction_offset: 0,
            body: &batch.body[e.body.clone()],
            topic: batch.topic.as_bytes(),
            properties: [
                &batch.body[e.properties.clone()],
                if e.separator { &sep } else { &[] },
                batch.properties.as_bytes(),
            ],
        };
        let mut lens = Vec::with_capacity(entries.len());
        for e in &entries {
            match fields(e).encoded_len() {
                Some(l) if l <= self.max_record_size() => lens.push(l),
                _ => return PutResult::failed(PutMessageStatus::MessageIllegal),
            }
        }
        let total: usize = lens.iter().sum();
        if (total + END_FILE_MIN_BLANK_LENGTH) as u64 > self.file_size() {
            return PutResult::failed(PutMessageStatus::MessageIllegal);
        }
        if let Some(s) = self.refusal() {
            return PutResult::failed(s);
        }

        let mut guard = self.put.lock();
        if self.shared.closed.load(Ordering::Acquire) {
            return PutResult::failed(PutMessageStatus::ServiceNotAvailable);
        }
        if let Some(s) = self.refusal() {
            return PutResult::failed(s);
        }
        let st = &mut *guard;
        let now = now_millis();
        self.shared.begin_time_in_lock.store(now, Ordering::Relaxed);
        let writer = match self.writer_for(&mut st.writer, total, now) {
            Ok(w) => w,
            Err(s) => {
                self.shared.begin_time_in_lock.store(0, Ordering::Relaxed);
                return PutResult::failed(s);
            }
        };
        let slot = queue_slot(&mut st.table, &batch.topic, batch.queue_id);
        let first_queue_offset = *slot;
        let wrote_offset = writer.file().from() + writer.position() as u64;
        let mut offsets = Vec::with_capacity(entries.len());
        {
            let buf = writer.reserve(total);
            let mut pos = 0usize;
            for (i, (e, &len)) in entries.iter().zip(&lens).enumerate() {
                let mut f = fields(e);
                f.queue_offset = first_queue_offset + i as u64;
                f.physical_offset = wrote_offset + pos as u64;
                f.store_timestamp = now;
                record::encode(&mut buf[pos..pos + len], &f);
                offsets.push(PhyOffset(f.physical_offset));
                pos += len;
            }
        }
        writer.publish(total, now);
        *slot += entries.len() as u64;
        self.shared.begin_time_in_lock.store(0, Ordering::Relaxed);
        self.publish_readable(wrote_offset + total as u64);
        drop(guard);
        self.after_append();
        PutResult {
            status: PutMessageStatus::PutOk,
            append: Some(AppendResult {
                wrote_offset: PhyOffset(wrote_offset),
                wrote_bytes: total,
                queue_offset: QueueOffset(first_queue_offset),
                store_timestamp: now,
                msg_num: entries.len(),
                record_offsets: offsets,
                store_host: batch.store_host,
            }),
        }
    }

    /// The flush outcome of a put ending at `end` ([`AppendResult::end_offset`]).
    /// Under `ASYNC_FLUSH` it is ready at once (`PutOk`), as in RocketMQ; under
    /// `SYNC_FLUSH` it resolves when a sync covers `end`, or `FlushDiskTimeout` after
    /// `syncFlushTimeout`. Runtime-agnostic; never blocks a thread.
    #[must_use]
    pub fn wait_flushed(&self, end: PhyOffset) -> FlushWait {
        if !self.shared.config.flush_disk_type.is_sync() {
            return FlushWait(OffsetWatch::ready(Ok(())));
        }
        self.shared.flush_ctl.wakeup();
        FlushWait(self.shared.durable.wait(
            end.0,
            Duration::from_millis(self.shared.config.sync_flush_timeout),
        ))
    }

    /// How long the current put has held the lock (0 if none), for the broker's
    /// `OS_PAGE_CACHE_BUSY` check.
    #[must_use]
    pub fn lock_time_millis(&self) -> u64 {
        let begin = self.shared.begin_time_in_lock.load(Ordering::Relaxed);
        if begin <= 0 {
            return 0;
        }
        (now_millis() - begin).max(0) as u64
    }

    /// Whether the put lock has been held longer than `osPageCacheBusyTimeOutMills`.
    #[must_use]
    pub fn is_os_page_cache_busy(&self) -> bool {
        self.lock_time_millis() > self.shared.config.os_page_cache_busy_time_out_mills
    }

    /// Why the writer is poisoned, if it is.
    #[must_use]
    pub fn poisoned(&self) -> Option<String> {
        self.shared.poison_reason.lock().clone()
    }

    /// Poisons the writer as a failed sync would (tests of the failure path).
    #[doc(hidden)]
    pub fn poison_for_test(&self, reason: &str) {
        self.shared.poison(&StoreError::Poisoned(reason.to_owned()));
    }

    // ------------------------------------------------------------------ positions

    /// End of readable bytes: where the next record goes (with the transient pool,
    /// bytes become readable when committed).
    #[must_use]
    pub fn max_offset(&self) -> PhyOffset {
        PhyOffset(self.shared.queue.max_offset())
    }

    /// First offset held; past the oldest file once its deletion has started
    /// (RocketMQ `getMinOffset`).
    #[must_use]
    pub fn min_offset(&self) -> PhyOffset {
        match self.shared.queue.first() {
            Some(f) if !f.is_available() => PhyOffset(f.from() + f.size() as u64),
            Some(f) => PhyOffset(f.from()),
            None => PhyOffset(0),
        }
    }

    /// The largest body a put takes (`maxMessageSize`).
    #[must_use]
    pub fn max_message_size(&self) -> usize {
        self.shared.max_message_size.load(Ordering::Relaxed)
    }

    /// The largest record a put writes: the largest body plus room for its other fields.
    fn max_record_size(&self) -> usize {
        self.max_message_size()
            .saturating_add(crate::config::RECORD_OVERHEAD_MAX)
    }

    /// Changes `maxMessageSize` at run time (`mqadmin updateBrokerConfig`), with the
    /// checks it has at start: positive, at most `i32::MAX`, and a record of that size
    /// still fits a CommitLog file.
    ///
    /// # Errors
    /// The value breaks one of them (nothing is changed).
    pub fn set_max_message_size(&self, size: usize) -> std::result::Result<(), String> {
        let record = size.saturating_add(crate::config::RECORD_OVERHEAD_MAX) as u64;
        if size == 0 || size > i32::MAX as usize || record + 8 > self.file_size() {
            return Err(format!(
                "maxMessageSize={size} is out of range: more than 0, at most {}, and a record of that size must fit a {} byte CommitLog file",
                i32::MAX,
                self.file_size()
            ));
        }
        self.shared.max_message_size.store(size, Ordering::Relaxed);
        info!(max_message_size = size, "maxMessageSize changed");
        Ok(())
    }

    /// Fault readahead on or off for the CommitLog's files, now and later
    /// (`mqadmin setCommitLogReadAheadMode`; RocketMQ's `dataReadAheadEnable`).
    pub fn set_read_ahead(&self, enabled: bool) {
        self.shared.queue.set_read_ahead(enabled);
    }

    /// Whether fault readahead is on.
    #[must_use]
    pub fn read_ahead(&self) -> bool {
        self.shared.queue.read_ahead()
    }

    /// The files (oldest first), for expiry and diagnostics.
    #[must_use]
    pub fn files(&self) -> Vec<crate::mapped_file::MappedFile> {
        self.shared.queue.files()
    }

    /// Forgets the oldest file once it was deleted (expiry).
    pub(crate) fn drop_first_file(&self, from: u64) -> bool {
        self.shared.queue.drop_first(from)
    }

    /// How the flushes go (sync times, group commit sizes).
    #[must_use]
    pub fn flush_meters(&self) -> &FlushMeters {
        &self.shared.flush_meters
    }

    /// Bytes written but not yet durable (RocketMQ `remainHowManyDataToFlush`).
    #[must_use]
    pub fn unflushed_bytes(&self) -> u64 {
        self.shared
            .queue
            .max_wrote_offset()
            .saturating_sub(self.flushed_offset().0)
    }

    /// End of durable bytes.
    #[must_use]
    pub fn flushed_offset(&self) -> PhyOffset {
        PhyOffset(self.shared.durable.get())
    }

    /// Watch of the readable end, for dispatch (reput) and HA to wait for new data:
    /// `wait_blocking(offset, timeout)` from a thread, `.wait(..)` from async code.
    #[must_use]
    pub fn readable_watch(&self) -> &Arc<OffsetWatch> {
        &self.shared.readable
    }

    /// Watch of the durable end.
    #[must_use]
    pub fn durable_watch(&self) -> &Arc<OffsetWatch> {
        &self.shared.durable
    }

    // ------------------------------------------------------------------ reads

    /// `len` readable bytes at `offset` as a zero-copy slice of the mapping; `None`
    /// unless they all lie in one file and are readable.
    #[must_use]
    pub fn read(&self, offset: PhyOffset, len: usize) -> Option<Bytes> {
        let f = self.shared.queue.find(offset.0)?;
        f.slice((offset.0 - f.from()) as usize, len)
    }

    /// Whether the `len` bytes at `offset` are all in the page cache; `None` if no file
    /// holds them or the kernel cannot tell.
    #[must_use]
    pub fn is_resident(&self, offset: PhyOffset, len: usize) -> Option<bool> {
        let f = self.shared.queue.find(offset.0)?;
        f.is_resident((offset.0 - f.from()) as usize, len)
    }

    /// All readable bytes from `offset` to the end of its file (HA transfer, dispatch).
    #[must_use]
    pub fn read_from(&self, offset: PhyOffset) -> Option<Bytes> {
        let f = self.shared.queue.find(offset.0)?;
        f.slice_from((offset.0 - f.from()) as usize)
    }

    /// The record at `offset`: `Ok(None)` if nothing is readable there yet.
    ///
    /// # Errors
    /// `offset` is below the log or past its end, or the bytes there are not a
    /// record (a wrong offset from the caller).
    pub fn record_at(&self, offset: PhyOffset) -> Result<Option<RecordAt>> {
        let (min, max) = (self.min_offset().0, self.max_offset().0);
        let Some(f) = self.shared.queue.find(offset.0) else {
            if offset.0 == max {
                return Ok(None);
            }
            return Err(StoreError::OutOfRange {
                offset: offset.0,
                min,
                max,
            });
        };
        let rel = (offset.0 - f.from()) as usize;
        if rel >= f.read_position() {
            return Ok(None);
        }
        let corrupt = |reason| StoreError::Corrupt {
            file: f.path().to_owned(),
            offset: offset.0,
            reason,
        };
        let head = f
            .slice(rel, END_FILE_MIN_BLANK_LENGTH)
            .ok_or_else(|| corrupt("truncated record head"))?;
        let total = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let magic = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        if magic == record::BLANK_MAGIC_CODE {
            return Ok(Some(RecordAt::EndOfFile {
                next: PhyOffset(f.from() + f.size() as u64),
            }));
        }
        let bytes = f
            .slice(rel, total)
            .ok_or_else(|| corrupt("record runs past the readable end"))?;
        match record::decode(&bytes) {
            Ok(Some(Record::Message(_))) => Ok(Some(RecordAt::Message(bytes))),
            _ => Err(corrupt("not a record boundary")),
        }
    }

    // ------------------------------------------------------------------ queue offsets

    /// Next queue offset of (topic, queue).
    #[must_use]
    pub fn queue_offset(&self, topic: &str, queue_id: i32) -> QueueOffset {
        let st = self.put.lock();
        QueueOffset(
            st.table
                .get(topic)
                .and_then(|q| q.get(&queue_id))
                .copied()
                .unwrap_or(0),
        )
    }

    /// Sets the next queue offset of (topic, queue) (consume queue recovery).
    pub fn set_queue_offset(&self, topic: &str, queue_id: i32, next: QueueOffset) {
        let mut st = self.put.lock();
        *queue_slot(&mut st.table, topic, queue_id) = next.0;
    }

    /// Forgets (topic, queue) (topic deletion).
    pub fn remove_queue(&self, topic: &str, queue_id: i32) {
        let mut st = self.put.lock();
        if let Some(q) = st.table.get_mut(topic) {
            q.remove(&queue_id);
            if q.is_empty() {
                st.table.remove(topic);
            }
        }
    }

    /// A copy of the queue offset table.
    #[must_use]
    pub fn queue_offsets(&self) -> QueueOffsetTable {
        self.put.lock().table.clone()
    }

    /// Replaces the queue offset table (with the consume queues' max offsets, after
    /// recovery, truncation, or before a slave becomes master).
    pub(crate) fn set_queue_offsets(&self, table: QueueOffsetTable) {
        self.put.lock().table = table;
    }
}

impl Drop for CommitLog {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn queue_slot<'a>(table: &'a mut QueueOffsetTable, topic: &str, queue_id: i32) -> &'a mut u64 {
    // Look up by &str first so the common case allocates nothing.
    if !table.contains_key(topic) {
        table.insert(topic.to_owned(), Default::default());
    }
    table
        .get_mut(topic)
        .expect("topic inserted above")
        .entry(queue_id)
        .or_insert(0)
}
