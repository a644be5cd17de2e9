//! POP consumption (RocketMQ 5, RIP-19): the broker, not the client, owns the queue
//! position. A pop reads from any queue of a topic, records a checkpoint of what it
//! handed out in the revive log, and moves the group's offset past it at once; each
//! message is invisible to other pops until acked or until its invisible time passes,
//! when the revive service puts it into the group's retry topic for another pop.
//!
//! The records are RocketMQ's own, so a store moves between Apache RocketMQ and sluice
//! with pops in flight: checkpoints (`ck`) and acks (`ack`, `bAck`) in
//! `rmq_sys_REVIVE_LOG_<cluster>` ([`records`]), parked in the timer wheel until shortly
//! before the batch's revive time ([`revive_log`]), so the revive log comes out in
//! time order and a checkpoint's acks follow it within about a second.
//!
//! Where sluice differs (see also [`revive`]):
//! - with `enablePopBufferMerge` (on by default; off in RocketMQ) a checkpoint is kept
//!   in memory while its batch is likely to be acked soon ([`ck_buffer`]): a batch acked
//!   in time writes no record at all, one that is not is written with what was acked;
//!   each buffered batch has a line in the offset journal, so a crash does not forget
//!   it (`consumer_offset::kept`: the restart writes its checkpoint);
//! - an ack is answered once it is kept — its record as durable as the role requires,
//!   or the group's offset past its batch (RocketMQ answers before either);
//! - the offset passes a batch only once it is acked or its checkpoint is durable, in
//!   queue order, so a committed offset never covers messages a crash could lose; and
//!   a crash after a checkpoint reached the log but before the offset passed its batch
//!   does not hand the batch out again under a second checkpoint (whose twin would
//!   revive it though it was acked): the move is journaled as handed out with the
//!   checkpoint's log position and counts after a restart whose log holds the
//!   checkpoint (`consumer_offset`);
//! - the revive service keeps the checkpoints it has read in memory until they are
//!   acked or due, instead of re-reading windows of the log.
//!
//! Layout: [`queues`] the per-queue pop locks and in-flight ends, [`order_info`] the
//! batches of orderly pops, [`ck_buffer`] the checkpoints in memory and the offset
//! commits, [`revive_log`] writes, [`ack_merge`] the single acks of a burst merged per
//! checkpoint, [`revive`] the master-only revive service; the request handlers are
//! `processor::pop` and `processor::ack`.

pub mod ack_merge;
pub mod ck_buffer;
pub mod order_info;
pub mod queues;
pub mod records;
pub mod revive;
pub mod revive_log;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::broker::Broker;
use crate::timer::TimerService;

pub use queues::PopQueues;

/// The POP state of a broker: queue locks, in-flight offsets, the revive service.
#[derive(Debug)]
pub struct PopService {
    broker: Arc<Broker>,
    timer: Arc<TimerService>,
    queues: PopQueues,
    next_revive_queue: AtomicU32,
    revive: revive::ReviveService,
    acks: ack_merge::AckMerger,
    buffer: Arc<ck_buffer::CheckpointBuffer>,
}

impl PopService {
    /// The service over `broker`, writing its records through `timer`.
    #[must_use]
    pub fn new(broker: Arc<Broker>, timer: Arc<TimerService>) -> Arc<Self> {
        Arc::new(PopService {
            revive: revive::ReviveService::default(),
            buffer: ck_buffer::CheckpointBuffer::new(Arc::clone(&broker), Arc::clone(&timer)),
            broker,
            timer,
            queues: PopQueues::default(),
            next_revive_queue: AtomicU32::new(0),
            acks: ack_merge::AckMerger::default(),
        })
    }

    /// The broker.
    #[must_use]
    pub fn broker(&self) -> &Arc<Broker> {
        &self.broker
    }

    /// The timer service the records are parked with.
    #[must_use]
    pub fn timer(&self) -> &Arc<TimerService> {
        &self.timer
    }

    /// The checkpoints kept in memory and the pop offsets' committer.
    #[must_use]
    pub fn buffer(&self) -> &Arc<ck_buffer::CheckpointBuffer> {
        &self.buffer
    }

    /// The per-queue pop state.
    #[must_use]
    pub fn queues(&self) -> &PopQueues {
        &self.queues
    }

    /// The revive queue of the next pop (round robin, as RocketMQ).
    #[must_use]
    pub fn next_revive_queue(&self) -> i32 {
        let n = u32::try_from(self.broker.config().revive_queue_num.max(1)).unwrap_or(1);
        let i = self.next_revive_queue.fetch_add(1, Ordering::Relaxed) % n;
        i32::try_from(i).unwrap_or(0)
    }

    /// Queues a single ack for the end of the burst (see [`ack_merge`]).
    pub fn submit_ack(
        &self,
        key: ack_merge::CheckpointKey,
        offset: i64,
        channel: &remoting::Channel,
        request: &remoting::RemotingCommand,
    ) {
        self.acks
            .submit(&self.buffer, key, offset, channel, request);
    }

    /// A burst of requests ended: writes and answers the acks it brought.
    pub fn end_burst(&self) {
        self.acks.flush(&self.buffer);
    }

    /// Starts reviving (a master's job).
    pub fn start_revive(self: &Arc<Self>) {
        self.buffer.recover(|key, end| {
            self.queues
                .resume_at(&key.topic, &key.group, key.queue_id, end);
        });
        self.buffer.start();
        self.revive.start(self);
    }

    /// Stops reviving (demotion, shutdown), writing the checkpoints kept in memory.
    pub fn stop_revive(&self) {
        self.buffer.stop();
        self.revive.stop();
    }
}
