//! Delay messages: the schedule service that delivers messages parked in
//! `SCHEDULE_TOPIC_XXXX` to their real topic once due. The levels
//! (`messageDelayLevel`) are the store's: its dispatch computes the deliver times.
//!
//! The send path parks a message with delay level L in queue L − 1 of
//! SCHEDULE_TOPIC_XXXX; dispatch gives its consume-queue unit the deliver time as
//! tagsCode. The service keeps, per level, the next queue offset to deliver
//! (delayOffset.json) and sleeps until the earliest due time among the levels' heads
//! — woken early when dispatch parks a message due sooner — instead of RocketMQ's
//! 100 ms polling, so messages arrive within a millisecond or two of their time.
//!
//! A level's offset moves past delivered messages only once their copies are as
//! durable as the role requires (flushed, held by a slave: [`crate::durability`]).
//! RocketMQ delivers without waiting; but delayOffset.json is persisted and copied to the
//! slave on its own schedule, and an offset that a crash or a failover keeps while the
//! copy behind it is lost loses the message. Until the wait succeeds the service waits
//! on the same copies again — it never puts them twice.
//!
//! It runs on masters only. [`ScheduleService::start`] and [`ScheduleService::stop`]
//! are idempotent through one `AtomicBool` compare-exchange: role switches may call
//! them repeatedly and in races, and at most one delivery loop ever runs.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use message::properties;
use message::properties::keys::WAIT;
use message::record::{self, Record};
use remoting::protocol::constants::system;
use store::{DispatchListener, DispatchRequest, MessageInner, MessageStore, PhyOffset};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

use crate::broker::Broker;
use crate::delay_offset::DelayOffsets;
use crate::properties::RealQueue;
use crate::service_switch::ServiceSwitch;

/// Delay offsets are persisted this often while running.
const FLUSH_DELAY_OFFSET_INTERVAL: Duration = Duration::from_secs(10);
/// Units read per level per round.
const BATCH: usize = 64;
/// When a put fails, try again after this long.
const RETRY_AFTER: Duration = Duration::from_millis(100);

/// The schedule (delay) service of a broker.
#[derive(Debug)]
pub struct ScheduleService {
    store: Arc<MessageStore>,
    offsets: Arc<DelayOffsets>,
    /// Start/stop, idempotent through one atomic flag (role switches call both).
    switch: ServiceSwitch,
    wake: Arc<Notify>,
}

impl ScheduleService {
    /// A stopped service over `store` (and its delay levels), advancing `offsets`.
    #[must_use]
    pub fn new(store: Arc<MessageStore>, offsets: Arc<DelayOffsets>) -> Arc<Self> {
        Arc::new(ScheduleService {
            store,
            offsets,
            switch: ServiceSwitch::default(),
            wake: Arc::new(Notify::new()),
        })
    }

    /// Whether the delivery loop runs.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.switch.is_running()
    }

    /// Starts delivering (masters) for `broker`, whose role says how durable a
    /// delivered copy must be. Returns false if it was already running.
    pub fn start(self: &Arc<Self>, broker: &Arc<Broker>) -> bool {
        let me = Arc::clone(self);
        let weak = Arc::downgrade(broker);
        let started = self
            .switch
            .start(|| tokio::spawn(async move { me.run(weak).await }));
        if started {
            info!(
                levels = self.store.delay_levels().len(),
                "schedule service started"
            );
        }
        started
    }

    /// Stops delivering and persists the offsets. Returns false if it was not running.
    pub fn stop(&self) -> bool {
        if !self.switch.stop() {
            return false;
        }
        self.offsets.persist();
        info!("schedule service stopped");
        true
    }

    /// A dispatch listener that wakes the service when a message is parked.
    #[must_use]
    pub fn listener(self: &Arc<Self>) -> Arc<dyn DispatchListener> {
        Arc::new(Parked(Arc::clone(&self.wake)))
    }

    async fn run(self: Arc<Self>, broker: Weak<Broker>) {
        let mut last_flush = tokio::time::Instant::now();
        let mut failed_waits = 0u64;
        while self.is_running() {
            let round = self.deliver_due();
            if let Some(end) = round.delivered_to {
                // Offsets move only once the copies are durable; until then wait again
                // on the same copies.
                loop {
                    let Some(b) = broker.upgrade() else { return };
                    let status = b.durable_to(end).await;
                    drop(b);
                    if status.is_ok() || !self.is_running() {
                        if status.is_ok() {
                            self.offsets.set(round.offsets.clone());
                        }
                        break;
                    }
                    failed_waits += 1;
                    if failed_waits.is_power_of_two() {
                        warn!(%status, failed_waits, "delivered delayed messages are not durable yet; their delay offsets wait");
                    }
                    tokio::time::sleep(RETRY_AFTER).await;
                }
            } else {
                self.offsets.set(round.offsets);
            }
            if last_flush.elapsed() >= FLUSH_DELAY_OFFSET_INTERVAL {
                self.offsets.persist();
                last_flush = tokio::time::Instant::now();
            }
            let wait = round.next_due.map_or(FLUSH_DELAY_OFFSET_INTERVAL, |due| {
                let now = crate::clock::now_ms();
                Duration::from_millis(u64::try_from(due - now).unwrap_or(0))
                    .min(FLUSH_DELAY_OFFSET_INTERVAL)
            });
            if wait.is_zero() {
                tokio::task::yield_now().await;
                continue;
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.wake.notified() => {}
            }
        }
    }

    /// Delivers every due message of every level, from the committed offsets, into a
    /// round whose offsets are committed by the caller.
    fn deliver_due(&self) -> Round {
        let mut round = Round {
            offsets: self.offsets.table(),
            next_due: None,
            delivered_to: None,
        };
        for level in 1..=i32::try_from(self.store.delay_levels().len()).unwrap_or(0) {
            let due = match self.deliver_level(level, &mut round) {
                LevelState::Waiting(due) => due,
                LevelState::Retry => {
                    crate::clock::now_ms() + i64::try_from(RETRY_AFTER.as_millis()).unwrap_or(100)
                }
                LevelState::Drained => continue,
            };
            round.next_due = Some(round.next_due.map_or(due, |e: i64| e.min(due)));
        }
        round
    }

    fn deliver_level(&self, level: i32, round: &mut Round) -> LevelState {
        let queue_id = level - 1;
        let delay_ms = self
            .store
            .delay_levels()
            .get(usize::try_from(queue_id).unwrap_or(usize::MAX))
            .copied()
            .unwrap_or(0);
        let mut offset = round.offsets.get(&level).copied().unwrap_or(0);
        let min = i64::try_from(
            self.store
                .min_offset_in_queue(system::SCHEDULE_TOPIC, queue_id),
        )
        .unwrap_or(0);
        if offset < min {
            warn!(
                level,
                offset, min, "delay offset below the queue's min offset; skipping ahead"
            );
            offset = min;
        }
        let state = loop {
            let units = self.units(queue_id, u64::try_from(offset).unwrap_or(0));
            if units.is_empty() {
                break LevelState::Drained;
            }
            let now = crate::clock::now_ms();
            let mut stopped = None;
            for unit in &units {
                // A deliver time further ahead than the level's delay means the clock
                // went back: deliver now rather than late (as RocketMQ corrects it).
                let due = if unit.tags_code > now.saturating_add(delay_ms) {
                    now
                } else {
                    unit.tags_code
                };
                if due > now {
                    stopped = Some(LevelState::Waiting(due));
                    break;
                }
                match self.deliver(unit.commit_log_offset, unit.size as usize) {
                    Delivery::Put(end) => {
                        round.delivered_to = Some(round.delivered_to.map_or(end, |e| e.max(end)));
                    }
                    Delivery::Skipped => {}
                    Delivery::Failed => {
                        stopped = Some(LevelState::Retry);
                        break;
                    }
                }
                offset += 1;
            }
            if let Some(state) = stopped {
                break state;
            }
        };
        round.offsets.insert(level, offset);
        state
    }

    /// Up to `BATCH` consume-queue units of the level's queue from `from`.
    fn units(&self, queue_id: i32, from: u64) -> Vec<store::consume_queue::CqUnit> {
        let Some(cq) = self
            .store
            .consume_queues()
            .get(system::SCHEDULE_TOPIC, queue_id)
        else {
            return Vec::new();
        };
        (from..from + BATCH as u64)
            .map_while(|q| cq.unit_at(q))
            .collect()
    }

    /// Puts the real message of the parked record.
    fn deliver(&self, phy_offset: u64, size: usize) -> Delivery {
        let Some(bytes) = self.store.look_message_by_offset_and_size(phy_offset, size) else {
            warn!(phy_offset, "parked message is gone; skipping");
            return Delivery::Skipped;
        };
        let Ok(Some(Record::Message(parked))) = record::decode(&bytes) else {
            warn!(phy_offset, "parked message does not decode; skipping");
            return Delivery::Skipped;
        };
        let props = parked.properties_str();
        let Some(RealQueue { topic, queue_id }) = RealQueue::of(&props) else {
            warn!(
                phy_offset,
                "parked message has no REAL_TOPIC/REAL_QID; skipping"
            );
            return Delivery::Skipped;
        };
        // RocketMQ leaves DELAY on the delivered copy (it encodes the properties
        // before clearing the level); clients see it, so it is kept.
        let properties = properties::set(&props, &[(WAIT, "false")]);
        let msg = MessageInner::copy_of(&parked, &bytes, topic, queue_id, properties);
        let result = self.store.put_message(&msg);
        match result.append.filter(|_| result.status.is_ok()) {
            Some(append) => {
                debug!(topic, queue_id, "delayed message delivered");
                Delivery::Put(append.end_offset())
            }
            None => {
                log_limit::limited!(
                    error!(status = %result.status, topic, "cannot deliver a delayed message; will retry")
                );
                Delivery::Failed
            }
        }
    }
}

/// One pass over the levels: the offsets it reached, and how far the log must be
/// durable before they may be committed.
struct Round {
    offsets: BTreeMap<i32, i64>,
    /// The earliest deliver time still ahead.
    next_due: Option<i64>,
    /// The end of the last copy put, if any was.
    delivered_to: Option<PhyOffset>,
}

/// What became of one parked message.
enum Delivery {
    /// Its copy was put, ending here.
    Put(PhyOffset),
    /// It cannot be delivered (gone, garbled): passed over.
    Skipped,
    /// The put failed: try again later.
    Failed,
}

enum LevelState {
    /// The head is due at this time.
    Waiting(i64),
    /// Nothing parked.
    Drained,
    /// A put failed; try again soon.
    Retry,
}

/// Wakes the service when dispatch parks a message.
#[derive(Debug)]
struct Parked(Arc<Notify>);

impl DispatchListener for Parked {
    fn on_dispatch(&self, d: &DispatchRequest<'_>) {
        if d.topic == system::SCHEDULE_TOPIC {
            self.0.notify_one();
        }
    }
}
