//! The timer service: takes the messages parked in `rmq_sys_wheel_timer` into the timer
//! log and wheel (enqueue, every role), and delivers them to their real topic when due
//! (masters only). The files are RocketMQ's (`store::timer`), so a store with pending
//! timers moves between Apache RocketMQ and sluice.
//!
//! RocketMQ reads a slot once it is past and delivers all of it together, so a timer
//! fires up to one slot (1 s by default) after its time. sluice loads a slot into an
//! in-memory queue a little before the slot starts and fires every timer at its own
//! millisecond, sleeping until the next one; a timer enqueued into a slot already loaded
//! goes straight into the queue too. Only loaded slots are in memory, so a million
//! pending timers cost their 52 bytes of timer log each on disk, not RAM.
//!
//! Progress, and what a crash keeps:
//! - Every parked message becomes a unit in the timer log (written through the mapping)
//!   and its slot in the wheel points at it; there is no path that delivers from memory
//!   only. A unit whose slot the delivery has already passed is filed in the slot being
//!   delivered instead, so it is read again after a crash.
//! - The read time (checkpoint `lastReadTimeMs`) moves past a slot only when the slot is
//!   over and every timer of it was delivered and is as durable as the role requires
//!   ([`crate::durability`]). A crash re-delivers at most the slots after it: at least
//!   once, never early, never lost.
//! - Recovery rebuilds the wheel from the timer log after the last checkpoint and finds
//!   the enqueue offset from the last unit's message, as RocketMQ does.
//!
//! A slave enqueues what it replicates (so its files are ready) and takes its master's
//! read time from `GET_TIMER_CHECK_POINT`; promoted, it delivers from there.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use message::properties;
use message::properties::keys::{
    REAL_TOPIC, TIMER_DEL_UNIQKEY, TIMER_DEQUEUE_MS, TIMER_ENQUEUE_MS, TIMER_OUT_MS,
    TIMER_ROLL_TIMES, UNIQ_KEY, WAIT,
};
use message::record::{self, Record};
use parking_lot::Mutex;
use store::timer::checkpoint::TimerCheckpoint;
use store::timer::log_unit::{
    MAGIC_DEFAULT, MAGIC_DELETE, MAGIC_ROLL, TimerLogUnit, is_recall_marker,
};
use store::timer::timer_log::TimerLog;
use store::timer::wheel::{BLANK_SLOTS, SLOTS_TOTAL, TimerWheel};
use store::{DispatchListener, DispatchRequest, MessageInner, MessageStore, PhyOffset};
use tokio::sync::Notify;
use tracing::{debug, error, info, warn};

use super::delivered::{self, Delivered};
use super::metrics::TimerMetrics;
use super::{TIMER_TOPIC, TimerSettings, fire_ms};
use crate::broker::Broker;
use crate::properties::RealQueue;
use crate::service_switch::ServiceSwitch;

/// Slots are loaded into memory this long before they start.
const LOOKAHEAD_MS: i64 = 100;
/// At most this many loaded timers wait in memory (a backlog loads as it drains).
const MAX_LOADED: usize = 200_000;
/// Parked messages read per enqueue round.
const ENQUEUE_BATCH: u64 = 1024;
/// Timers delivered per round before progress is committed.
const DELIVER_BATCH: usize = 1024;
/// After a failed put or write, try again after this long.
const RETRY_AFTER: Duration = Duration::from_millis(100);
/// Expired timer log files are looked for this often.
const CLEAN_INTERVAL_MS: i64 = 30_000;

/// The timer service of a broker.
#[derive(Debug)]
pub struct TimerService {
    store: Arc<MessageStore>,
    settings: TimerSettings,
    precision_ms: i64,
    roll_window_ms: i64,
    flush_interval: Duration,
    stop_enqueue: bool,
    stop_dequeue: bool,
    checkpoint_path: PathBuf,
    /// `config/timerdelivered` (see [`super::delivered`]).
    delivered_path: PathBuf,
    /// The wheel, read without the lock (its words are atomic).
    wheel: Arc<TimerWheel>,
    state: Mutex<State>,
    enqueuing: ServiceSwitch,
    delivering: ServiceSwitch,
    /// Delivery runs (the master's `shouldRunningDequeue`).
    dequeue_on: AtomicBool,
    wake_enqueue: Arc<Notify>,
    wake_delivery: Notify,
    enqueued: AtomicU64,
    delivered: AtomicU64,
    rates: Mutex<Rates>,
    /// Pending timers per real topic.
    metrics: TimerMetrics,
}

/// The files and the progress, under one lock: enqueue and delivery both move them.
#[derive(Debug)]
struct State {
    /// Appended under this lock; synced without it.
    log: Arc<TimerLog>,
    /// Written under this lock; synced without it.
    wheel: Arc<TimerWheel>,
    /// The last checkpoint written (on a slave, with the master's read time).
    checkpoint: TimerCheckpoint,
    /// Next offset of `rmq_sys_wheel_timer` queue 0 to enqueue.
    queue_offset: u64,
    /// Start of the first slot not yet fully delivered.
    read_time: i64,
    /// Start of the first slot not loaded into `due` (delivery only).
    loaded_to: i64,
    due: BinaryHeap<Reverse<Due>>,
    /// Loaded slots' timers not yet delivered, by slot start.
    pending: BTreeMap<i64, usize>,
    /// Recalled `<topic>+<uniq key>`s of loaded slots.
    recalled: HashMap<i64, HashSet<String>>,
    /// Timers delivered in the slots from the read time on, by slot start (what
    /// `timerdelivered` holds).
    delivered: BTreeMap<i64, Vec<Delivered>>,
    /// Timers a previous run delivered in those slots: not delivered again.
    skip: HashSet<Delivered>,
}

/// One loaded timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Due {
    fire_ms: i64,
    pos: u64,
    slot: i64,
    unit: Unit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Unit {
    magic: i32,
    write_time_ms: i64,
    commit_log_offset: i64,
    size: i32,
}

impl From<&TimerLogUnit> for Unit {
    fn from(u: &TimerLogUnit) -> Self {
        Unit {
            magic: u.magic,
            write_time_ms: u.write_time_ms,
            commit_log_offset: u.commit_log_offset,
            size: u.size,
        }
    }
}

/// A parked message read for enqueue.
struct Request {
    real_topic: Option<String>,
    /// When the producer sent it (the delay's start, for `rocketmq_delay_message_latency`).
    born_ms: i64,
    commit_log_offset: u64,
    size: u32,
    out_ms: i64,
    topic_hash: i32,
    recall_key: Option<String>,
}

/// What became of one due timer.
enum Delivery {
    Put(PhyOffset),
    Skipped,
    Failed,
}

/// The figures `brokerStatus` shows (RocketMQ's `timer*` runtime keys).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimerFigures {
    /// How far the delivery is behind now (ms; RocketMQ shows seconds).
    pub read_behind_ms: i64,
    /// Parked messages not yet enqueued.
    pub offset_behind: i64,
    /// Timers in the wheel from the read time on (`timerCongestNum`).
    pub congest_num: i64,
    /// Timers loaded and waiting in memory.
    pub loaded: usize,
    /// Timers enqueued per second, over the last second or so.
    pub enqueue_tps: f64,
    /// Timers delivered per second, over the last second or so.
    pub dequeue_tps: f64,
}

/// What RocketMQ 5 exports of its timer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerGauges {
    /// Parked messages not yet taken into the wheel (`rocketmq_timer_enqueue_lag`).
    pub enqueue_lag: i64,
    /// Age of the oldest of them (`rocketmq_timer_enqueue_latency`).
    pub enqueue_latency_ms: i64,
    /// Timers due and not delivered yet (`rocketmq_timer_dequeue_lag`).
    pub dequeue_lag: i64,
    /// How far delivery is behind now (`rocketmq_timer_dequeue_latency`).
    pub dequeue_latency_ms: i64,
    /// Timers due within each asked bound, counted from the previous bound
    /// (`rocketmq_timer_message_snapshot`).
    pub distribution: Vec<i64>,
}

/// The counters behind the rates, sampled when the figures are asked for.
#[derive(Debug, Default)]
struct Rates {
    at_ms: i64,
    enqueued: u64,
    delivered: u64,
    enqueue_tps: f64,
    dequeue_tps: f64,
    /// `timerCongestNum` as last counted (a scan of the roll window's slots).
    congest_num: i64,
}

impl TimerService {
    /// Opens the timer files under the store's root and recovers them.
    ///
    /// # Errors
    /// The files cannot be opened, or have the wrong layout.
    pub fn open(store: Arc<MessageStore>) -> Result<Arc<Self>, store::StoreError> {
        let config = store.config().clone();
        let root = config.store_path_root_dir.clone();
        let precision_ms = i64::try_from(config.timer_precision_ms)
            .unwrap_or(1000)
            .max(1);
        let checkpoint_path = root.join("config").join("timercheck");
        let saved = TimerCheckpoint::load(&checkpoint_path)?;
        let file_size = usize::try_from(config.mapped_file_size_timer_log).unwrap_or(100 << 20);
        let log = TimerLog::load(&root.join("timerlog"), file_size)?;
        let wheel = TimerWheel::open(&root.join("timerwheel"), precision_ms)?;
        let checkpoint = saved.unwrap_or_default();
        let from = u64::try_from(checkpoint.last_timer_log_flush_pos)
            .unwrap_or(0)
            .saturating_sub(file_size as u64);
        let mut last = None;
        let mut revised = 0u64;
        let end = log.recover(from, |pos, unit| {
            last = Some(*unit);
            if revise(&wheel, pos, unit) {
                revised += 1;
            }
        })?;
        let now = crate::clock::now_ms();
        let queue_offset = last
            .and_then(|u| enqueued_offset(&store, &u))
            .unwrap_or_else(|| u64::try_from(checkpoint.last_timer_queue_offset).unwrap_or(0));
        let oldest = wheel.period_start(now) - (SLOTS_TOTAL - BLANK_SLOTS) * precision_ms;
        let read_time = if saved.is_none() && end == 0 {
            wheel.period_start(now)
        } else {
            wheel.period_start(checkpoint.last_read_time_ms).max(oldest)
        };
        info!(
            read_time,
            queue_offset,
            timer_log_end = end,
            revised,
            "timer store recovered"
        );
        let delivered_path = root.join("config").join("timerdelivered");
        let skip = delivered::load(&delivered_path, read_time);
        let mut delivered_by_slot = BTreeMap::<i64, Vec<Delivered>>::new();
        for &(pos, offset) in &skip {
            if let Some(unit) = log.unit_at(pos).filter(|u| u.commit_log_offset == offset) {
                let slot = wheel.period_start(unit.delivery_ms());
                if slot >= read_time {
                    delivered_by_slot
                        .entry(slot)
                        .or_default()
                        .push((pos, offset));
                }
            }
        }
        if !skip.is_empty() {
            info!(
                timers = skip.len(),
                "timers delivered before the restart will not be delivered again"
            );
        }
        let window_slots = i64::try_from(config.timer_roll_window_slot).unwrap_or(SLOTS_TOTAL);
        let wheel = Arc::new(wheel);
        let metrics = TimerMetrics::load(&root).map_err(|e| store::StoreError::Corrupt {
            file: root.join("config").join(super::metrics::TIMER_METRICS),
            offset: 0,
            reason: if matches!(e, remoting::config_file::ConfigFileError::Corrupt { .. }) {
                "timermetrics does not parse"
            } else {
                "timermetrics cannot be read"
            },
        })?;
        Ok(Arc::new(TimerService {
            settings: TimerSettings::of(&config),
            store,
            precision_ms,
            roll_window_ms: window_slots.saturating_mul(precision_ms),
            flush_interval: Duration::from_millis(config.timer_flush_interval_ms.max(1)),
            stop_enqueue: config.timer_stop_enqueue,
            stop_dequeue: config.timer_stop_dequeue,
            checkpoint_path,
            delivered_path,
            wheel: Arc::clone(&wheel),
            state: Mutex::new(State {
                log: Arc::new(log),
                wheel,
                checkpoint,
                queue_offset,
                read_time,
                loaded_to: read_time,
                due: BinaryHeap::new(),
                pending: BTreeMap::new(),
                recalled: HashMap::new(),
                delivered: delivered_by_slot,
                skip,
            }),
            enqueuing: ServiceSwitch::default(),
            delivering: ServiceSwitch::default(),
            dequeue_on: AtomicBool::new(false),
            wake_enqueue: Arc::new(Notify::new()),
            wake_delivery: Notify::new(),
            enqueued: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            rates: Mutex::new(Rates::default()),
            metrics,
        }))
    }

    /// The send path's settings.
    #[must_use]
    pub fn settings(&self) -> &TimerSettings {
        &self.settings
    }

    /// Every timer due before this time (ms) has been delivered, durably (the start
    /// of the slot being delivered).
    #[must_use]
    pub fn read_time(&self) -> i64 {
        self.state.lock().read_time
    }

    /// A dispatch listener that wakes the enqueue when a message is parked.
    #[must_use]
    pub fn listener(self: &Arc<Self>) -> Arc<dyn DispatchListener> {
        Arc::new(Parked(Arc::clone(&self.wake_enqueue)))
    }

    /// Timers in the slot of `out_ms` (flow control).
    #[must_use]
    pub fn congestion(&self, out_ms: i64) -> i64 {
        i64::from(self.wheel.slot(out_ms).num)
    }

    /// Starts the enqueue (every role). Returns false if it was running.
    pub fn start_enqueue(self: &Arc<Self>) -> bool {
        let me = Arc::clone(self);
        self.enqueuing
            .start(|| tokio::spawn(async move { me.enqueue_loop().await }))
    }

    /// Starts delivering (masters) for `broker`. Returns false if it was running.
    pub fn start_delivery(self: &Arc<Self>, broker: &Arc<Broker>) -> bool {
        let me = Arc::clone(self);
        let weak = Arc::downgrade(broker);
        let started = self.delivering.start(|| {
            {
                let mut st = self.state.lock();
                st.loaded_to = st.read_time;
                st.due.clear();
                st.pending.clear();
                st.recalled.clear();
            }
            self.dequeue_on.store(true, Ordering::Release);
            tokio::spawn(async move { me.delivery_loop(weak).await })
        });
        if started {
            info!(
                read_time = self.state.lock().read_time,
                "timer delivery started"
            );
        }
        started
    }

    /// Stops delivering; what was loaded is dropped (the files still hold it).
    pub fn stop_delivery(&self) -> bool {
        if !self.delivering.stop() {
            return false;
        }
        self.dequeue_on.store(false, Ordering::Release);
        let mut st = self.state.lock();
        st.due.clear();
        st.pending.clear();
        st.recalled.clear();
        st.loaded_to = st.read_time;
        drop(st);
        info!("timer delivery stopped");
        true
    }

    /// Stops everything and writes a last checkpoint.
    pub fn shutdown(&self) {
        self.stop_delivery();
        self.enqueuing.stop();
        if let Err(e) = self.checkpoint() {
            error!(error = %e, "cannot write the timer checkpoint at shutdown");
        }
    }

    /// The checkpoint as `GET_TIMER_CHECK_POINT` answers it.
    #[must_use]
    pub fn current_checkpoint(&self) -> TimerCheckpoint {
        let st = self.state.lock();
        let mut cp = st.checkpoint;
        cp.last_read_time_ms = st.read_time;
        cp.last_timer_queue_offset = i64::try_from(st.queue_offset).unwrap_or(i64::MAX);
        if self.dequeue_on.load(Ordering::Acquire) {
            cp.master_timer_queue_offset = cp.last_timer_queue_offset;
        }
        cp
    }

    /// A slave takes its master's checkpoint: delivery, once promoted, starts at the
    /// master's read time.
    pub fn follow_master(&self, master: &TimerCheckpoint) {
        if self.dequeue_on.load(Ordering::Acquire) {
            return;
        }
        let mut st = self.state.lock();
        st.read_time = st.wheel.period_start(master.last_read_time_ms);
        st.loaded_to = st.read_time;
        let read_time = st.read_time;
        st.delivered.retain(|slot, _| *slot >= read_time);
        st.checkpoint.last_read_time_ms = master.last_read_time_ms;
        st.checkpoint.master_timer_queue_offset = master.master_timer_queue_offset;
        st.checkpoint.state_version = master.state_version;
        st.checkpoint.timestamp = master.timestamp;
        st.checkpoint.counter = master.counter;
    }

    /// Pending timers per real topic.
    #[must_use]
    pub fn metrics(&self) -> &TimerMetrics {
        &self.metrics
    }

    /// The figures of `brokerStatus`.
    #[must_use]
    pub fn figures(&self) -> TimerFigures {
        let now = crate::clock::now_ms();
        let (read_time, queue_offset, loaded) = {
            let st = self.state.lock();
            (st.read_time, st.queue_offset, st.due.len())
        };
        let max = self
            .store
            .consume_queues()
            .get(TIMER_TOPIC, 0)
            .map_or(0, |cq| cq.max_offset());
        let (enqueue_tps, dequeue_tps, congest_num) = {
            let mut r = self.rates.lock();
            let (enq, deq) = (
                self.enqueued.load(Ordering::Relaxed),
                self.delivered.load(Ordering::Relaxed),
            );
            let span = now - r.at_ms;
            if span >= 1000 {
                r.congest_num = self
                    .wheel
                    .pending_between(read_time, now + self.roll_window_ms + self.precision_ms);
                #[allow(clippy::cast_precision_loss, reason = "a rate")]
                {
                    let secs = span as f64 / 1000.0;
                    r.enqueue_tps = (enq - r.enqueued) as f64 / secs;
                    r.dequeue_tps = (deq - r.delivered) as f64 / secs;
                }
                (r.at_ms, r.enqueued, r.delivered) = (now, enq, deq);
            }
            (r.enqueue_tps, r.dequeue_tps, r.congest_num)
        };
        TimerFigures {
            read_behind_ms: (now - read_time).max(0),
            offset_behind: i64::try_from(max.saturating_sub(queue_offset)).unwrap_or(0),
            congest_num,
            loaded,
            enqueue_tps,
            dequeue_tps,
        }
    }

    /// The gauges RocketMQ 5 exports for its timer (`rocketmq_timer_*`), read now.
    #[must_use]
    pub fn gauges(&self, bounds_s: &[i64]) -> TimerGauges {
        let now = crate::clock::now_ms();
        let (read_time, queue_offset) = {
            let st = self.state.lock();
            (st.read_time, st.queue_offset)
        };
        let max = self
            .store
            .consume_queues()
            .get(TIMER_TOPIC, 0)
            .map_or(0, |cq| cq.max_offset());
        let enqueue_lag = max.saturating_sub(queue_offset);
        let enqueue_latency_ms = if enqueue_lag == 0 {
            0
        } else {
            self.store
                .message_store_timestamp(TIMER_TOPIC, 0, queue_offset)
                .map_or(0, |stored| (now - stored).max(0))
        };
        // Timers due by now and not delivered yet.
        let dequeue_lag = if read_time < now {
            self.wheel.pending_between(read_time, now)
        } else {
            0
        };
        // Timers due within each bound (from the previous one), one pass over the wheel.
        let mut distribution = Vec::with_capacity(bounds_s.len());
        let mut from = now;
        for bound in bounds_s {
            let to = now + bound * 1000;
            distribution.push(if to > from {
                self.wheel.pending_between(from, to - 1)
            } else {
                0
            });
            from = to;
        }
        TimerGauges {
            enqueue_lag: i64::try_from(enqueue_lag).unwrap_or(i64::MAX),
            enqueue_latency_ms,
            dequeue_lag,
            dequeue_latency_ms: (now - read_time).max(0),
            distribution,
        }
    }

    /// Syncs the log and the wheel, then writes the checkpoint.
    fn checkpoint(&self) -> Result<(), store::StoreError> {
        let (mut cp, end, log, wheel, delivered) = {
            let st = self.state.lock();
            let mut cp = st.checkpoint;
            cp.last_read_time_ms = st.read_time;
            cp.last_timer_queue_offset = i64::try_from(st.queue_offset).unwrap_or(i64::MAX);
            if self.dequeue_on.load(Ordering::Acquire) {
                cp.master_timer_queue_offset = cp.last_timer_queue_offset;
            }
            (
                cp,
                st.log.end(),
                Arc::clone(&st.log),
                Arc::clone(&st.wheel),
                st.delivered_entries(),
            )
        };
        // Synced after `end` was taken, the log and the wheel both hold every unit
        // before it.
        log.flush()?;
        wheel.flush()?;
        cp.last_timer_log_flush_pos = i64::try_from(end).unwrap_or(i64::MAX);
        cp.store(&self.checkpoint_path)?;
        if let Err(e) =
            delivered::store(&self.delivered_path, cp.last_read_time_ms, &delivered, true)
        {
            log_limit::limited!(warn!(error = %e, "cannot write timerdelivered"));
        }
        if let Err(e) = self.metrics.persist() {
            log_limit::limited!(warn!(error = %e, "cannot write timermetrics"));
        }
        self.state.lock().checkpoint = cp;
        Ok(())
    }

    /// Writes the new read time into the checkpoint file (unsynced: the periodic
    /// checkpoint syncs it), so a restarted process re-delivers as little as it can.
    /// The rest of the checkpoint stays as last synced; a read time ahead of it is safe,
    /// since it moves only past copies already durable.
    fn note_read_time(&self) {
        let (cp, delivered) = {
            let st = self.state.lock();
            (
                TimerCheckpoint {
                    last_read_time_ms: st.read_time,
                    ..st.checkpoint
                },
                st.delivered_entries(),
            )
        };
        if let Err(e) = cp.store_unsynced(&self.checkpoint_path) {
            log_limit::limited!(warn!(error = %e, "cannot note the timer read time"));
        }
        if let Err(e) = delivered::store(
            &self.delivered_path,
            cp.last_read_time_ms,
            &delivered,
            false,
        ) {
            log_limit::limited!(warn!(error = %e, "cannot write timerdelivered"));
        }
    }

    async fn enqueue_loop(self: Arc<Self>) {
        let mut last_flush = tokio::time::Instant::now();
        let mut last_clean = crate::clock::now_ms();
        loop {
            let progressed = if self.stop_enqueue {
                false
            } else {
                match self.enqueue_round() {
                    Ok(n) => n > 0,
                    Err(e) => {
                        log_limit::limited!(
                            error!(error = %e, "cannot enqueue timer messages; will retry")
                        );
                        tokio::time::sleep(RETRY_AFTER).await;
                        false
                    }
                }
            };
            if last_flush.elapsed() >= self.flush_interval {
                last_flush = tokio::time::Instant::now();
                if let Err(e) = self.checkpoint() {
                    log_limit::limited!(error!(error = %e, "cannot write the timer checkpoint"));
                }
            }
            let now = crate::clock::now_ms();
            if now - last_clean >= CLEAN_INTERVAL_MS {
                last_clean = now;
                let min = self.store.min_phy_offset();
                let log = Arc::clone(&self.state.lock().log);
                if let Err(e) = log.delete_expired(min) {
                    warn!(error = %e, "cannot delete expired timer log files");
                }
            }
            if !progressed {
                tokio::select! {
                    () = self.wake_enqueue.notified() => {}
                    () = tokio::time::sleep(self.flush_interval) => {}
                }
            }
        }
    }

    /// Enqueues the parked messages after the enqueue offset; returns how many.
    fn enqueue_round(&self) -> Result<u64, store::StoreError> {
        let Some(cq) = self.store.consume_queues().get(TIMER_TOPIC, 0) else {
            return Ok(0);
        };
        let from = {
            let mut st = self.state.lock();
            let min = cq.min_offset();
            if st.queue_offset < min {
                warn!(
                    offset = st.queue_offset,
                    min, "timer enqueue offset below the queue's first; skipping ahead"
                );
                st.queue_offset = min;
            }
            st.queue_offset
        };
        let units: Vec<_> = (from..from + ENQUEUE_BATCH)
            .map_while(|q| cq.unit_at(q))
            .collect();
        if units.is_empty() {
            return Ok(0);
        }
        let requests: Vec<Option<Request>> = units
            .iter()
            .map(|u| self.read_request(u.commit_log_offset, u.size))
            .collect();
        let now = crate::clock::now_ms();
        let mut done = 0;
        let mut woke = false;
        let mut st = self.state.lock();
        if st.queue_offset != from {
            return Ok(0);
        }
        let delivering = self.dequeue_on.load(Ordering::Acquire);
        for request in requests {
            if let Some(r) = request {
                woke |= st.enqueue(&r, now, self.roll_window_ms, delivering)?;
                if let Some(topic) = &r.real_topic {
                    let delta = if r.recall_key.is_some() { -1 } else { 1 };
                    self.metrics.add(topic, delta, now);
                    if delta > 0 {
                        self.metrics.count_enqueue(topic, r.out_ms - r.born_ms);
                    }
                }
            }
            st.queue_offset += 1;
            done += 1;
        }
        drop(st);
        self.enqueued.fetch_add(done, Ordering::Relaxed);
        if woke {
            self.wake_delivery.notify_one();
        }
        Ok(done)
    }

    /// The parked message at `offset` as an enqueue request; `None` (skipped, with a
    /// warning) when it is gone or has no due time.
    fn read_request(&self, offset: u64, size: u32) -> Option<Request> {
        let bytes = self
            .store
            .look_message_by_offset_and_size(offset, size as usize)?;
        let Ok(Some(Record::Message(m))) = record::decode(&bytes) else {
            warn!(offset, "parked timer message does not decode; skipped");
            return None;
        };
        let props = m.properties_str();
        let [out, real, recall] =
            properties::get_many(&props, [TIMER_OUT_MS, REAL_TOPIC, TIMER_DEL_UNIQKEY]);
        let Some(out_ms) = out.and_then(|v| v.trim().parse::<i64>().ok()) else {
            warn!(offset, "parked timer message without TIMER_OUT_MS; skipped");
            return None;
        };
        Some(Request {
            real_topic: real.map(str::to_owned),
            born_ms: m.born_timestamp,
            commit_log_offset: offset,
            size,
            out_ms,
            topic_hash: real.map_or(0, message::tags::hash_code),
            recall_key: recall.map(str::to_owned),
        })
    }

    async fn delivery_loop(self: Arc<Self>, broker: Weak<Broker>) {
        let mut failed_waits = 0u64;
        while self.delivering.is_running() {
            let now = crate::clock::now_ms();
            let (batch, next) = if self.stop_dequeue {
                (Vec::new(), now + 1000)
            } else {
                self.state
                    .lock()
                    .take_due(now, &self.store, self.precision_ms)
            };
            if !batch.is_empty() {
                let mut end = None;
                let mut settled = Vec::with_capacity(batch.len());
                let mut failed = Vec::new();
                for d in batch {
                    match self.deliver(&d) {
                        Delivery::Put(e) => {
                            end = Some(end.map_or(e, |x: PhyOffset| x.max(e)));
                            settled.push(d);
                        }
                        Delivery::Skipped => settled.push(d),
                        Delivery::Failed => failed.push(d),
                    }
                }
                if let Some(end) = end {
                    // Progress moves only once the copies are durable.
                    loop {
                        let Some(b) = broker.upgrade() else { return };
                        let status = b.durable_to(end).await;
                        drop(b);
                        if status.is_ok() {
                            break;
                        }
                        if !self.delivering.is_running() {
                            return;
                        }
                        failed_waits += 1;
                        if failed_waits.is_power_of_two() {
                            warn!(%status, failed_waits, "delivered timer messages are not durable yet; the timer's read time waits");
                        }
                        tokio::time::sleep(RETRY_AFTER).await;
                    }
                }
                let n = settled.len() as u64;
                let moved = {
                    let mut st = self.state.lock();
                    let before = st.read_time;
                    for d in &settled {
                        st.settle(d);
                    }
                    for d in failed.iter().copied() {
                        st.due.push(Reverse(Due {
                            fire_ms: crate::clock::now_ms()
                                + i64::try_from(RETRY_AFTER.as_millis()).unwrap_or(100),
                            ..d
                        }));
                    }
                    st.advance(crate::clock::now_ms(), self.precision_ms);
                    st.read_time != before
                };
                self.delivered.fetch_add(n, Ordering::Relaxed);
                if moved {
                    self.note_read_time();
                }
                continue;
            }
            let moved = {
                let mut st = self.state.lock();
                let before = st.read_time;
                st.advance(crate::clock::now_ms(), self.precision_ms);
                st.read_time != before
            };
            if moved {
                self.note_read_time();
            }
            let wait = Duration::from_millis(u64::try_from(next - now).unwrap_or(0).clamp(1, 1000));
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.wake_delivery.notified() => {}
            }
        }
    }

    /// Puts the message of a due timer: into its real topic, or back into the timer
    /// topic when it was rolled (its time is beyond the window).
    fn deliver(&self, due: &Due) -> Delivery {
        let Ok(offset) = u64::try_from(due.unit.commit_log_offset) else {
            return Delivery::Skipped;
        };
        let size = usize::try_from(due.unit.size).unwrap_or(0);
        let Some(bytes) = self.store.look_message_by_offset_and_size(offset, size) else {
            warn!(offset, "timer message is gone from the commit log; skipped");
            return Delivery::Skipped;
        };
        let Ok(Some(Record::Message(parked))) = record::decode(&bytes) else {
            warn!(offset, "timer message does not decode; skipped");
            return Delivery::Skipped;
        };
        let props = parked.properties_str();
        let roll = due.unit.magic & MAGIC_ROLL != 0;
        let [recall, uniq, rolls] =
            properties::get_many(&props, [TIMER_DEL_UNIQKEY, UNIQ_KEY, TIMER_ROLL_TIMES]);
        if recall.is_some() && !roll {
            // A recall marker is never delivered.
            return Delivery::Skipped;
        }
        let Some(real) = RealQueue::of(&props) else {
            warn!(offset, "timer message has no REAL_TOPIC/REAL_QID; skipped");
            return Delivery::Skipped;
        };
        if !roll {
            if let Some(uniq) = uniq {
                let key = format!("{}+{uniq}", real.topic);
                if self
                    .state
                    .lock()
                    .recalled
                    .get(&due.slot)
                    .is_some_and(|keys| keys.contains(&key))
                {
                    info!(
                        topic = real.topic,
                        uniq, "recalled timer message not delivered"
                    );
                    return Delivery::Skipped;
                }
            }
        }
        let now = crate::clock::now_ms().to_string();
        let enqueue = due.unit.write_time_ms.to_string();
        let msg = if roll {
            let times = rolls.and_then(|r| r.parse::<i64>().ok()).unwrap_or(0) + 1;
            MessageInner::copy_of(
                &parked,
                &bytes,
                TIMER_TOPIC,
                parked.queue_id,
                properties::set(
                    &props,
                    &[
                        (TIMER_ENQUEUE_MS, &enqueue),
                        (TIMER_ROLL_TIMES, &times.to_string()),
                        (TIMER_DEQUEUE_MS, &now),
                        (WAIT, "false"),
                    ],
                ),
            )
        } else {
            // RocketMQ clears REAL_TOPIC / REAL_QID from the copy after it encoded its
            // properties, so consumers see them; they are kept here too.
            MessageInner::copy_of(
                &parked,
                &bytes,
                real.topic,
                real.queue_id,
                properties::set(
                    &props,
                    &[
                        (TIMER_ENQUEUE_MS, &enqueue),
                        (TIMER_DEQUEUE_MS, &now),
                        (WAIT, "false"),
                    ],
                ),
            )
        };
        let result = self.store.put_message(&msg);
        match result.append.filter(|_| result.status.is_ok()) {
            Some(append) => {
                debug!(topic = %msg.topic, roll, "timer message delivered");
                self.metrics.add(real.topic, -1, crate::clock::now_ms());
                self.metrics.count_dequeue(real.topic);
                Delivery::Put(append.end_offset())
            }
            None => {
                log_limit::limited!(
                    error!(status = %result.status, topic = %msg.topic, "cannot deliver a timer message; will retry")
                );
                Delivery::Failed
            }
        }
    }
}

impl State {
    /// Files one request: a unit in the log, the wheel's slot at it, and into memory
    /// when its slot is loaded. Returns whether the delivery should wake.
    fn enqueue(
        &mut self,
        r: &Request,
        now: i64,
        roll_window_ms: i64,
        delivering: bool,
    ) -> Result<bool, store::StoreError> {
        let precision = self.wheel.precision_ms();
        let write = self.wheel.period_start(now);
        let mut at = r.out_ms;
        let mut magic = MAGIC_DEFAULT;
        if at - write >= roll_window_ms {
            // Beyond the window: parked again when the window reaches it (RocketMQ's
            // roll, with its half-window step when the rest would be short).
            magic |= MAGIC_ROLL;
            at = if at - write - roll_window_ms < roll_window_ms / 3 {
                write + roll_window_ms / 2 / precision * precision
            } else {
                write + roll_window_ms
            };
        }
        if r.recall_key.is_some() {
            magic |= MAGIC_DELETE;
        }
        if self.wheel.period_start(at) < self.read_time {
            // Its slot was delivered already: file it in the slot being delivered, where
            // it is read again after a crash; it is due anyway.
            at = self.read_time;
        }
        let slot = self.wheel.slot(at);
        let unit = TimerLogUnit {
            prev_pos: slot.last_pos,
            magic,
            write_time_ms: write,
            delayed_ms: i32::try_from(at - write).unwrap_or(i32::MAX),
            commit_log_offset: i64::try_from(r.commit_log_offset).unwrap_or(i64::MAX),
            size: i32::try_from(r.size).unwrap_or(i32::MAX),
            topic_hash: r.topic_hash,
            reserved: 0,
        };
        let pos = self.log.append(&unit)?;
        let recall = is_recall_marker(magic);
        self.wheel
            .link(at, i64::try_from(pos).unwrap_or(i64::MAX), recall);
        let slot_start = self.wheel.period_start(at);
        if !delivering || slot_start >= self.loaded_to {
            return Ok(false);
        }
        if recall {
            if let Some(key) = &r.recall_key {
                self.recalled
                    .entry(slot_start)
                    .or_default()
                    .insert(key.clone());
            }
            return Ok(false);
        }
        self.due.push(Reverse(Due {
            fire_ms: fire_ms(unit.delivery_ms(), precision),
            pos,
            slot: slot_start,
            unit: Unit::from(&unit),
        }));
        *self.pending.entry(slot_start).or_default() += 1;
        Ok(true)
    }

    /// Loads the slots starting within the lookahead, then takes the timers due at `now`.
    /// Returns them and when to look again.
    fn take_due(&mut self, now: i64, store: &MessageStore, precision: i64) -> (Vec<Due>, i64) {
        while self.loaded_to <= now + LOOKAHEAD_MS && self.due.len() < MAX_LOADED {
            let start = self.loaded_to;
            self.load_slot(start, store);
            self.loaded_to += precision;
        }
        let mut batch = Vec::new();
        while let Some(Reverse(d)) = self.due.peek() {
            if d.fire_ms > now || batch.len() >= DELIVER_BATCH {
                break;
            }
            if let Some(Reverse(d)) = self.due.pop() {
                batch.push(d);
            }
        }
        let next_load = self.loaded_to - LOOKAHEAD_MS;
        let next = self
            .due
            .peek()
            .map_or(next_load, |Reverse(d)| d.fire_ms.min(next_load));
        (batch, next)
    }

    /// Reads one slot's timers (oldest first) into memory.
    fn load_slot(&mut self, start: i64, store: &MessageStore) {
        let slot = self.wheel.slot(start);
        if slot.last_pos < 0 {
            return;
        }
        let precision = self.wheel.precision_ms();
        let min = i64::try_from(self.log.min_offset()).unwrap_or(0);
        let mut units = Vec::new();
        let mut pos = slot.last_pos;
        // The list is bounded by the log; a garbled pointer cannot loop forever.
        let limit = usize::try_from(slot.num.max(0)).unwrap_or(0) * 2 + 1024;
        while pos >= min && units.len() < limit {
            let Ok(p) = u64::try_from(pos) else { break };
            let Some(unit) = self.log.unit_at(p) else {
                warn!(
                    pos,
                    "timer log unit unreadable; the rest of its slot is lost"
                );
                break;
            };
            if self.wheel.period_start(unit.delivery_ms()) != start {
                break;
            }
            units.push((p, unit));
            if unit.prev_pos >= pos {
                break;
            }
            pos = unit.prev_pos;
        }
        let mut count = 0;
        for (p, unit) in units.into_iter().rev() {
            if self.skip.contains(&(p, unit.commit_log_offset)) {
                continue;
            }
            if is_recall_marker(unit.magic) {
                if let Some(key) = recall_key(store, &unit) {
                    self.recalled.entry(start).or_default().insert(key);
                }
                continue;
            }
            self.due.push(Reverse(Due {
                fire_ms: fire_ms(unit.delivery_ms(), precision),
                pos: p,
                slot: start,
                unit: Unit::from(&unit),
            }));
            count += 1;
        }
        if count > 0 {
            *self.pending.entry(start).or_default() += count;
        }
    }

    /// A loaded timer is done (delivered, durable, or passed over).
    fn settle(&mut self, due: &Due) {
        if let Some(n) = self.pending.get_mut(&due.slot) {
            *n = n.saturating_sub(1);
        }
        self.delivered
            .entry(due.slot)
            .or_default()
            .push((due.pos, due.unit.commit_log_offset));
    }

    /// What `timerdelivered` is to hold now.
    fn delivered_entries(&self) -> Vec<Delivered> {
        self.delivered.values().flatten().copied().collect()
    }

    /// Moves the read time past slots that are over and fully delivered.
    fn advance(&mut self, now: i64, precision: i64) {
        while self.read_time < self.loaded_to
            && self.read_time + precision <= now
            && self.pending.get(&self.read_time).is_none_or(|n| *n == 0)
        {
            self.pending.remove(&self.read_time);
            self.recalled.remove(&self.read_time);
            self.delivered.remove(&self.read_time);
            self.read_time += precision;
        }
    }
}

/// The key a recall marker recalls (`TIMER_DEL_UNIQKEY`).
fn recall_key(store: &MessageStore, unit: &TimerLogUnit) -> Option<String> {
    let bytes = store.look_message_by_offset_and_size(
        u64::try_from(unit.commit_log_offset).ok()?,
        usize::try_from(unit.size).ok()?,
    )?;
    let Ok(Some(Record::Message(m))) = record::decode(&bytes) else {
        return None;
    };
    properties::get(&m.properties_str(), TIMER_DEL_UNIQKEY).map(str::to_owned)
}

/// Points the wheel at a recovered unit it does not know yet.
fn revise(wheel: &TimerWheel, pos: u64, unit: &TimerLogUnit) -> bool {
    let at = unit.delivery_ms();
    let slot = wheel.slot(at);
    let pos = i64::try_from(pos).unwrap_or(i64::MAX);
    if slot.last_pos >= pos {
        return false;
    }
    wheel.link(at, pos, is_recall_marker(unit.magic));
    true
}

/// The queue offset after the parked message of the last unit, if the consume queue
/// agrees that the message is there.
fn enqueued_offset(store: &MessageStore, last: &TimerLogUnit) -> Option<u64> {
    let offset = u64::try_from(last.commit_log_offset).ok()?;
    let bytes = store.look_message_by_offset_and_size(offset, usize::try_from(last.size).ok()?)?;
    let Ok(Some(Record::Message(m))) = record::decode(&bytes) else {
        return None;
    };
    let cq = store.consume_queues().get(TIMER_TOPIC, 0)?;
    (cq.unit_at(m.queue_offset)?.commit_log_offset == offset).then_some(m.queue_offset + 1)
}

/// Wakes the enqueue when dispatch parks a message.
#[derive(Debug)]
struct Parked(Arc<Notify>);

impl DispatchListener for Parked {
    fn on_dispatch(&self, d: &DispatchRequest<'_>) {
        if d.topic == TIMER_TOPIC {
            self.0.notify_one();
        }
    }
}
