//! Checkpoints kept in memory while their batch is likely to be acked soon (RocketMQ's
//! `PopBufferMergeService` idea, with sluice's durability rules), and the one owner of
//! every non-orderly pop offset commit.
//!
//! Why: a checkpoint written for every pop, and an ack record for every ack, cost four
//! appends (each record goes to the timer wheel, then to the revive queue), two
//! timer-log entries and two reads by the revive service — several times the pop
//! itself. Most batches are acked within milliseconds; for those, nothing needs to be
//! written at all: once every message of a batch is acked, the group's offset may pass
//! it, and the offset (journaled, see `consumer_offset`) is the only record needed.
//!
//! The rules that keep this as safe as writing everything:
//! - **Nothing un-acked is lost.** The offset passes a batch only when it is fully
//!   acked or its checkpoint is durable, and only in queue order. A crash forgets the
//!   buffer; the offset is then at or before the first batch that was only in memory,
//!   and its messages are popped again.
//! - **An ack's SUCCESS is kept.** An ack of a buffered batch is answered only once the
//!   offset has passed the batch (its journal line written), or once its checkpoint and
//!   an ack record of it are durable and the offset has passed it. Acks that cannot be
//!   settled within [`ANSWER_HOLD_MS`] (the batch's other messages, or an earlier batch
//!   of the queue, are not acked yet) write the records.
//! - **No checkpoint is written behind a batch only in memory.** Writing a batch writes
//!   every earlier buffered batch of its queue first, so an offset stuck behind one
//!   never makes a durable checkpoint revive messages that will be popped again.
//! - A batch not fully acked after `popCkStayBufferTime` (and in time before its revive
//!   time) is written as it would have been at its pop, with a `bAck` of what was acked.
//!
//! Batches written at once (the buffer off or full, a short invisible time) and
//! positions moved past filtered messages go through the same per-queue order, so one
//! place commits pop offsets.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use store::PutMessageStatus;
use tracing::{info, warn};

use super::records::{AckRecord, CheckPoint};
use super::revive_log::{self, CK_AHEAD_MS, ReviveLogError};
use crate::broker::Broker;
use crate::consumer_offset::KeptBatch;
use crate::durability::Durable;
use crate::service_switch::ServiceSwitch;
use crate::timer::TimerService;

/// How long an ack answer may wait for the rest of its batch, or for earlier batches of
/// its queue, before the records are written instead.
pub const ANSWER_HOLD_MS: i64 = 5;
/// A buffered checkpoint is written at least this long before its revive time (the
/// timer wheel must have it before the second ahead of its revive time).
const WRITE_MARGIN_MS: i64 = CK_AHEAD_MS + 2_000;
/// Batches shorter-lived than this in the buffer are written at once.
const MIN_STAY_MS: i64 = 500;
/// A failed write is tried again after this long.
const RETRY_MS: i64 = 1_000;
/// The flusher sleeps at most this long.
const MAX_SLEEP_MS: i64 = 100;

/// What an ack is answered with: `Ok` once its ack is kept, else why not. `late`: the
/// answer comes after the request's burst (a completion, the flusher).
pub struct Answer(Box<dyn FnOnce(Result<(), String>, bool) + Send>);

impl Answer {
    /// An answer calling `f`.
    pub fn new(f: impl FnOnce(Result<(), String>, bool) + Send + 'static) -> Self {
        Answer(Box::new(f))
    }

    /// Sends it.
    pub fn send(self, outcome: Result<(), String>, late: bool) {
        (self.0)(outcome, late);
    }
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Answer")
    }
}

/// A queue popped by a group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueKey {
    /// The topic (a retry topic for retried messages).
    pub topic: String,
    /// The consumer group.
    pub group: String,
    /// The queue.
    pub queue_id: i32,
}

/// A checkpoint only in memory.
#[derive(Debug)]
struct Held {
    ck: CheckPoint,
    revive_qid: i32,
    /// Ack bits by message index.
    acked: u64,
    /// When it is written if not fully acked by then.
    write_at: i64,
}

impl Held {
    fn all_acked(&self) -> bool {
        let n = u32::from(self.ck.num).min(64);
        let all = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        self.acked & all == all
    }

    fn acked_offsets(&self) -> Vec<i64> {
        (0..usize::from(self.ck.num).min(64))
            .filter(|i| self.acked & (1u64 << i) != 0)
            .filter_map(|i| self.ck.queue_offset(i))
            .collect()
    }

    /// Marks `offset` acked (nothing when it is not one of the batch's).
    fn ack(&mut self, offset: i64) {
        let n = usize::from(self.ck.num).min(64);
        // Most batches are contiguous: the message at `offset - start` first.
        let guess = usize::try_from(offset - self.ck.start_offset)
            .ok()
            .filter(|i| *i < n && self.ck.queue_offset(*i) == Some(offset));
        let index = guess.or_else(|| (0..n).find(|i| self.ck.queue_offset(*i) == Some(offset)));
        if let Some(i) = index {
            self.acked |= 1u64 << i;
        }
    }
}

#[derive(Debug)]
enum State {
    /// Only in memory.
    Buffered(Box<Held>),
    /// Its records are written; their durability is awaited.
    Writing,
    /// The offset may pass it: fully acked, its checkpoint durable, or nothing to ack.
    Passable,
}

#[derive(Debug)]
struct Batch {
    id: u64,
    start: i64,
    end: i64,
    pop_time: i64,
    state: State,
    /// Acks answered when the offset passes the batch.
    answers: Vec<Answer>,
    /// When the oldest of `answers` arrived.
    held_since: Option<i64>,
    /// The CommitLog end of its checkpoint once put (of the log, for a skipped range).
    logged_at: Option<u64>,
}

/// A buffered batch to write, taken out of the buffer (its state is `Writing`).
#[derive(Debug)]
struct Job {
    key: Arc<QueueKey>,
    id: u64,
    held: Box<Held>,
}

/// What an ack of the buffer found.
#[derive(Debug)]
pub enum Acked {
    /// Taken: the answers are sent when the ack is kept.
    Taken {
        /// Answers were left waiting for the rest of the batch or the queue.
        waiting: bool,
    },
    /// The batch's checkpoint is in the log (or the offset passed it): write an ack
    /// record.
    NotBuffered(Vec<Answer>),
    /// The batch is unknown and the offset has not passed it: popped before a crash
    /// with its checkpoint only in memory, it is being handed out again from the queue.
    /// The ack cannot be kept; refuse it.
    Lost(Vec<Answer>),
}

/// One queue's batches not yet passed, in pop order.
#[derive(Debug)]
struct Queue {
    batches: VecDeque<Batch>,
    /// How far the offset was passed (its journal line may still be on its way).
    passed_to: i64,
}

impl Default for Queue {
    fn default() -> Self {
        Queue {
            batches: VecDeque::new(),
            passed_to: -1,
        }
    }
}

impl Queue {
    /// Takes the answers waiting at batch `i` or behind it (they cannot be kept now).
    fn refuse_from(&mut self, i: usize) -> Vec<Answer> {
        self.batches
            .iter_mut()
            .skip(i)
            .flat_map(|b| {
                b.held_since = None;
                std::mem::take(&mut b.answers)
            })
            .collect()
    }
}

/// The queues stay once popped (a few per group), so a pop allocates no key.
#[derive(Debug, Default)]
struct Inner {
    queues: HashMap<Arc<QueueKey>, Queue>,
    /// (due time, batch id, queue): when a batch is looked at again. Stale entries
    /// (the batch written or passed meanwhile) are skipped.
    due: BinaryHeap<Reverse<(i64, u64, Arc<QueueKey>)>>,
    buffered: usize,
    next_id: u64,
}

/// An offset to commit and the answers to send once it is.
type Passed = Option<(i64, Vec<Answer>)>;

impl Inner {
    /// Appends a batch to its queue: the queue's shared key and the batch's id.
    fn push(
        &mut self,
        key: &QueueKey,
        start: i64,
        end: i64,
        pop_time: i64,
        state: State,
    ) -> (Arc<QueueKey>, u64) {
        let k = match self.queues.get_key_value(key) {
            Some((k, _)) => Arc::clone(k),
            None => {
                let k = Arc::new(key.clone());
                self.queues.insert(Arc::clone(&k), Queue::default());
                k
            }
        };
        self.next_id += 1;
        let id = self.next_id;
        if let State::Buffered(h) = &state {
            self.buffered += 1;
            self.due.push(Reverse((h.write_at, id, Arc::clone(&k))));
        }
        if let Some(q) = self.queues.get_mut(&k) {
            q.batches.push_back(Batch {
                id,
                start,
                end,
                pop_time,
                state,
                answers: Vec::new(),
                held_since: None,
                logged_at: None,
            });
        }
        (k, id)
    }

    /// Takes every buffered batch of the queue up to and including `through` (all when
    /// `None`) out for writing, in queue order.
    fn take_through(&mut self, key: &Arc<QueueKey>, through: Option<u64>) -> Vec<Job> {
        let mut jobs = Vec::new();
        let Some(q) = self.queues.get_mut(key) else {
            return jobs;
        };
        for b in &mut q.batches {
            if matches!(b.state, State::Buffered(_)) {
                if let State::Buffered(held) = std::mem::replace(&mut b.state, State::Writing) {
                    self.buffered -= 1;
                    jobs.push(Job {
                        key: Arc::clone(key),
                        id: b.id,
                        held,
                    });
                }
            }
            if Some(b.id) == through {
                break;
            }
        }
        jobs
    }

    /// The checkpoint of batch `id` was put, ending at `log_end` in the CommitLog: the
    /// batch's end when a restart over a log holding that checkpoint may start past the
    /// batch — every batch before it acked, durable, or with its checkpoint earlier in
    /// the log — else `None`.
    fn logged(&mut self, key: &QueueKey, id: u64, log_end: u64) -> Option<i64> {
        let q = &mut self.queues.get_mut(key)?.batches;
        let i = q.iter().position(|b| b.id == id)?;
        let b = q.get_mut(i)?;
        b.logged_at = Some(log_end);
        let end = b.end;
        q.iter()
            .take(i)
            .all(|b| match b.state {
                State::Passable => true,
                State::Writing => b.logged_at.is_some_and(|at| at <= log_end),
                State::Buffered(_) => false,
            })
            .then_some(end)
    }

    /// Pops the passable batches at the queue's front: the offset past them and their
    /// answers.
    fn advance(&mut self, key: &QueueKey) -> Passed {
        let q = self.queues.get_mut(key)?;
        let mut end = None;
        let mut answers = Vec::new();
        while q
            .batches
            .front()
            .is_some_and(|b| matches!(b.state, State::Passable))
        {
            let Some(b) = q.batches.pop_front() else {
                break;
            };
            end = Some(b.end);
            answers.extend(b.answers);
        }
        let end = end?;
        q.passed_to = q.passed_to.max(end);
        Some((end, answers))
    }

    fn ack(
        &mut self,
        key: &QueueKey,
        start: i64,
        pop_time: i64,
        offsets: &[i64],
        answers: Vec<Answer>,
        now: i64,
    ) -> (Acked, Passed) {
        let Some((k, q)) = self.queues.get_key_value(key) else {
            return (Acked::Lost(answers), None);
        };
        let k = Arc::clone(k);
        let passed_to = q.passed_to;
        let Some(b) = self.queues.get_mut(&k).and_then(|q| {
            q.batches
                .iter_mut()
                .find(|b| b.start == start && b.pop_time == pop_time)
        }) else {
            // Not in memory: passed already, or lost in a restart.
            let passed = offsets.iter().all(|o| *o < passed_to);
            let acked = if passed {
                Acked::NotBuffered(answers)
            } else {
                Acked::Lost(answers)
            };
            return (acked, None);
        };
        let State::Buffered(held) = &mut b.state else {
            return (Acked::NotBuffered(answers), None);
        };
        for o in offsets {
            held.ack(*o);
        }
        let all = held.all_acked();
        b.answers.extend(answers);
        let id = b.id;
        if all {
            b.state = State::Passable;
            self.buffered -= 1;
        }
        let passed = if all { self.advance(&k) } else { None };
        // Answers left waiting (the rest of the batch, or an earlier batch, not acked):
        // the flusher must look at them in time.
        let mut waiting = false;
        if let Some(b) = self
            .queues
            .get_mut(&k)
            .and_then(|q| q.batches.iter_mut().find(|b| b.id == id))
        {
            if !b.answers.is_empty() && b.held_since.is_none() {
                b.held_since = Some(now);
                waiting = true;
                self.due
                    .push(Reverse((now + ANSWER_HOLD_MS, id, Arc::clone(&k))));
            }
        }
        (Acked::Taken { waiting }, passed)
    }

    /// The batches due by `now`, taken for writing (with the buffered ones before them),
    /// and when the next one falls due.
    fn take_due(&mut self, now: i64) -> (Vec<Job>, Option<i64>) {
        let mut jobs = Vec::new();
        while let Some(Reverse((at, id, key))) = self.due.peek().cloned() {
            if at > now {
                return (jobs, Some(at));
            }
            self.due.pop();
            let Some(b) = self
                .queues
                .get(&key)
                .and_then(|q| q.batches.iter().find(|b| b.id == id))
            else {
                continue;
            };
            let due = match &b.state {
                State::Buffered(h) => {
                    h.write_at <= now || b.held_since.is_some_and(|t| t + ANSWER_HOLD_MS <= now)
                }
                // Settled itself; what it waits for is earlier in the queue.
                State::Passable => b.held_since.is_some_and(|t| t + ANSWER_HOLD_MS <= now),
                State::Writing => false,
            };
            if due {
                jobs.extend(self.take_through(&key, Some(id)));
            }
        }
        (jobs, None)
    }

    /// A batch's records are durable (`ok`) or could not be made so.
    fn written(&mut self, key: &QueueKey, id: u64, ok: bool) -> (Passed, Vec<Answer>) {
        let Some(q) = self.queues.get_mut(key) else {
            return (None, Vec::new());
        };
        let Some(i) = q.batches.iter().position(|b| b.id == id) else {
            return (None, Vec::new());
        };
        if !ok {
            return (None, q.refuse_from(i));
        }
        if let Some(b) = q.batches.get_mut(i) {
            b.state = State::Passable;
        }
        (self.advance(key), Vec::new())
    }

    /// A job's checkpoint could not be put: back in memory, tried again later; the acks
    /// waiting at or behind it are refused.
    fn put_back(&mut self, job: Job, now: i64) -> Vec<Answer> {
        let Some(q) = self.queues.get_mut(&job.key) else {
            return Vec::new();
        };
        let Some(i) = q.batches.iter().position(|b| b.id == job.id) else {
            return Vec::new();
        };
        let mut held = job.held;
        held.write_at = now + RETRY_MS;
        self.due
            .push(Reverse((held.write_at, job.id, Arc::clone(&job.key))));
        if let Some(b) = q.batches.get_mut(i) {
            b.state = State::Buffered(held);
        }
        self.buffered += 1;
        q.refuse_from(i)
    }

    /// Removes a batch that was never handed out.
    fn remove(&mut self, key: &QueueKey, id: u64) {
        if let Some(q) = self.queues.get_mut(key) {
            q.batches.retain(|b| b.id != id);
        }
    }

    /// Forgets a queue (its offset was moved): its buffered batches to write, the
    /// answers waiting on it.
    fn detach(&mut self, key: &QueueKey) -> (Vec<Job>, Vec<Answer>) {
        let Some(k) = self.queues.get_key_value(key).map(|(k, _)| Arc::clone(k)) else {
            return (Vec::new(), Vec::new());
        };
        let jobs = self.take_through(&k, None);
        let answers = self
            .queues
            .remove(&k)
            .map(|q| q.batches.into_iter().flat_map(|b| b.answers).collect())
            .unwrap_or_default();
        (jobs, answers)
    }

    /// Forgets every queue with a batch still only in memory (the broker stops
    /// popping and could not write it): the answers waiting there.
    fn drain_buffered(&mut self) -> Vec<Answer> {
        self.due.clear();
        self.buffered = 0;
        let stuck: Vec<Arc<QueueKey>> = self
            .queues
            .iter()
            .filter(|(_, q)| {
                q.batches
                    .iter()
                    .any(|b| matches!(b.state, State::Buffered(_)))
            })
            .map(|(k, _)| Arc::clone(k))
            .collect();
        stuck
            .iter()
            .filter_map(|k| self.queues.remove(k))
            .flat_map(|q| q.batches.into_iter().flat_map(|b| b.answers))
            .collect()
    }
}

/// The buffer's settings at a pop.
#[derive(Debug, Clone, Copy)]
pub struct BufferSettings {
    /// `enablePopBufferMerge`.
    pub enabled: bool,
    /// `popCkStayBufferTime`, ms.
    pub stay_ms: i64,
    /// `popCkMaxBufferSize`: most batches only in memory.
    pub max_batches: usize,
}

/// The checkpoint buffer and pop offset committer of a broker (see the module docs).
pub struct CheckpointBuffer {
    broker: Arc<Broker>,
    timer: Arc<TimerService>,
    inner: Mutex<Inner>,
    wake: tokio::sync::Notify,
    /// When the flusher wakes next (ms; `i64::MAX` when idle).
    wakes_at: AtomicI64,
    switch: ServiceSwitch,
}

impl std::fmt::Debug for CheckpointBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.lock();
        f.debug_struct("CheckpointBuffer")
            .field("queues", &inner.queues.len())
            .field("buffered", &inner.buffered)
            .finish_non_exhaustive()
    }
}

impl CheckpointBuffer {
    /// The buffer of `broker`, writing through `timer`.
    #[must_use]
    pub fn new(broker: Arc<Broker>, timer: Arc<TimerService>) -> Arc<Self> {
        Arc::new(CheckpointBuffer {
            broker,
            timer,
            inner: Mutex::new(Inner::default()),
            wake: tokio::sync::Notify::new(),
            wakes_at: AtomicI64::new(i64::MAX),
            switch: ServiceSwitch::default(),
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

    /// Batches only in memory.
    #[must_use]
    pub fn buffered(&self) -> usize {
        self.inner.lock().buffered
    }

    /// A batch was popped (under its queue's pop lock): kept in memory, or written at
    /// once (the buffer off or full, its invisible time too short). The offset passes it
    /// once it is acked or its checkpoint durable.
    ///
    /// # Errors
    /// Written at once and refused: the batch must not be handed out.
    pub fn popped(
        self: &Arc<Self>,
        ck: CheckPoint,
        revive_qid: i32,
        end: i64,
        settings: BufferSettings,
    ) -> Result<(), ReviveLogError> {
        let key = QueueKey {
            topic: ck.topic.clone(),
            group: ck.group.clone(),
            queue_id: ck.queue_id,
        };
        let (start, pop_time) = (ck.start_offset, ck.pop_time);
        let stay = settings.stay_ms.min(ck.invisible_time - WRITE_MARGIN_MS);
        let mut inner = self.inner.lock();
        if settings.enabled && stay >= MIN_STAY_MS && inner.buffered < settings.max_batches {
            let write_at = pop_time + stay;
            // Journaled before the pop is answered: a crash does not forget it.
            self.broker.offsets.journal_kept(KeptBatch {
                group: key.group.clone(),
                topic: key.topic.clone(),
                queue_id: key.queue_id,
                start,
                end,
                pop_time,
                revive_qid,
                checkpoint: String::from_utf8(ck.to_json()).unwrap_or_default(),
                logged: false,
            });
            let held = Held {
                ck,
                revive_qid,
                acked: 0,
                write_at,
            };
            inner.push(&key, start, end, pop_time, State::Buffered(Box::new(held)));
            drop(inner);
            self.wake_by(write_at);
            return Ok(());
        }
        // Written now, after any batch of the queue still in memory.
        let (k, id) = inner.push(&key, start, end, pop_time, State::Writing);
        let jobs = inner.take_through(&k, Some(id));
        drop(inner);
        self.write_jobs(jobs);
        match revive_log::put_checkpoint(&self.broker, &self.timer, &ck, revive_qid) {
            Ok(w) => {
                self.handed_out(&k, id, w.end, &w.durable);
                self.when_durable(k, id, w.durable);
                Ok(())
            }
            Err(e) => {
                self.inner.lock().remove(&key, id);
                Err(e)
            }
        }
    }

    /// A pop moved past `start..end` without handing anything out (filtered or holey
    /// units): the offset passes it once the log to its end is durable.
    pub fn skipped(self: &Arc<Self>, key: &QueueKey, start: i64, end: i64) {
        let log_end = self.broker.store.commit_log().max_offset();
        let (k, id) = {
            let mut inner = self.inner.lock();
            let (k, id) = inner.push(key, start, end, 0, State::Writing);
            // Nothing to revive in it: as good as a checkpoint in the log so far.
            inner.logged(key, id, log_end.0);
            (k, id)
        };
        self.when_durable(k, id, self.broker.durable_to(log_end));
    }

    /// Acks `offsets` of the batch of `key` that started at `start` at `pop_time`.
    pub fn ack(
        self: &Arc<Self>,
        key: &QueueKey,
        start: i64,
        pop_time: i64,
        offsets: &[i64],
        answers: Vec<Answer>,
    ) -> Acked {
        let now = crate::clock::now_ms();
        let (mut acked, passed) = self
            .inner
            .lock()
            .ack(key, start, pop_time, offsets, answers, now);
        if let Acked::Lost(answers) = acked {
            // Passed before this broker's start, its checkpoint is in the log.
            let committed = self
                .broker
                .offsets
                .query(&key.group, &key.topic, key.queue_id)
                .unwrap_or(-1);
            acked = if offsets.iter().all(|o| *o < committed) {
                Acked::NotBuffered(answers)
            } else {
                Acked::Lost(answers)
            };
        }
        if let Acked::Taken { waiting } = acked {
            self.commit(key, passed, false);
            if waiting {
                self.wake_by(now + ANSWER_HOLD_MS);
            }
        }
        acked
    }

    /// The queue's offset was moved (a reset, an expired position): its buffered
    /// batches are written, and it starts afresh.
    pub fn reset_queue(self: &Arc<Self>, key: &QueueKey) {
        let (jobs, answers) = self.inner.lock().detach(key);
        self.write_jobs(jobs);
        for a in answers {
            a.send(Err("the queue's offset was reset".into()), true);
        }
    }

    /// Takes back the batches that were only in memory when the broker last stopped
    /// without writing them (a crash), as the offset journal recovered them: their
    /// checkpoints are written (unless the log holds them already) and the offsets pass
    /// them once durable, so they stay handed out under their receipts; `resume` is told
    /// where each queue's next pop starts. A batch whose checkpoint cannot be written
    /// ends its queue's run: it and the rest are popped again from the queue.
    pub fn recover(self: &Arc<Self>, resume: impl Fn(&QueueKey, i64)) {
        let batches = self.broker.offsets.take_recovered_kept();
        if batches.is_empty() {
            return;
        }
        let (mut written, mut failed) = (0usize, 0usize);
        let mut broken: Option<QueueKey> = None;
        for b in batches {
            let key = QueueKey {
                topic: b.topic.clone(),
                group: b.group.clone(),
                queue_id: b.queue_id,
            };
            if broken.as_ref() == Some(&key) {
                continue;
            }
            let (k, id) = self
                .inner
                .lock()
                .push(&key, b.start, b.end, b.pop_time, State::Writing);
            let durable = if b.logged {
                let log_end = self.broker.store.commit_log().max_offset();
                Ok(self.broker.durable_to(log_end))
            } else {
                remoting::fastjson::from_slice::<CheckPoint>(b.checkpoint.as_bytes())
                    .map_err(|e| e.to_string())
                    .and_then(|ck| {
                        revive_log::put_checkpoint(&self.broker, &self.timer, &ck, b.revive_qid)
                            .map_err(|e| e.to_string())
                    })
                    .map(|w| {
                        self.broker.offsets.journal_kept_written(
                            &b.group, &b.topic, b.queue_id, b.start, b.pop_time, w.end,
                        );
                        self.handed_out(&k, id, w.end, &w.durable);
                        w.durable
                    })
            };
            match durable {
                Ok(durable) => {
                    written += 1;
                    resume(&key, b.end);
                    self.when_durable(k, id, durable);
                }
                Err(e) => {
                    failed += 1;
                    warn!(topic = %b.topic, group = %b.group, queue_id = b.queue_id, start = b.start, error = %e, "checkpoint of a pop batch kept before the restart not written; the queue is popped again from there");
                    self.inner.lock().remove(&key, id);
                    broken = Some(key);
                }
            }
        }
        info!(
            batches = written,
            failed, "pop batches kept in memory before the restart written back"
        );
    }

    /// Starts the flusher (a master's job).
    pub fn start(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        self.switch.start(|| tokio::spawn(flusher(weak)));
    }

    /// Writes every batch still only in memory to the revive log now (`mqadmin
    /// exportPopRecord`, before a store moves to RocketMQ, whose revive service knows only
    /// the log); their offsets pass them once durable. The CommitLog end after the
    /// writes, and how many were written.
    pub fn write_all(self: &Arc<Self>) -> (store::PhyOffset, usize) {
        let jobs = {
            let mut inner = self.inner.lock();
            let keys: Vec<Arc<QueueKey>> = inner.queues.keys().cloned().collect();
            keys.iter()
                .flat_map(|k| inner.take_through(k, None))
                .collect::<Vec<_>>()
        };
        let n = jobs.len();
        self.write_jobs(jobs);
        (self.broker.store.commit_log().max_offset(), n)
    }

    /// Stops it (demotion, shutdown): every batch still in memory is written, so its
    /// messages stay invisible across a restart or a move of the store, and the offsets
    /// pass them once durable. What cannot be written (a slave's store) is forgotten:
    /// popped again from the committed offsets, its waiting acks refused.
    pub fn stop(self: &Arc<Self>) {
        self.switch.stop();
        self.write_all();
        let answers = self.inner.lock().drain_buffered();
        for a in answers {
            a.send(Err("the broker stopped serving pops".into()), true);
        }
    }

    fn wake_by(&self, at: i64) {
        if at < self.wakes_at.load(Ordering::Acquire) {
            self.wake.notify_one();
        }
    }

    /// Commits a passed offset (its journal line), then sends the answers it settled.
    fn commit(&self, key: &QueueKey, passed: Passed, late: bool) {
        let Some((offset, answers)) = passed else {
            return;
        };
        self.broker
            .offsets
            .advance_journaled(&key.group, &key.topic, key.queue_id, offset);
        for a in answers {
            a.send(Ok(()), late);
        }
    }

    /// The checkpoint of batch `id` reached the log at `log_end`: journaled as handed
    /// out (`ConsumerOffsetManager::journal_handed_out`), so that a crash before the
    /// offset passes the batch does not hand it out again under a second checkpoint,
    /// whose twin would revive it though it was acked — unless a batch before it could
    /// still be lost by a crash (only in memory, or its checkpoint not in the log yet).
    /// Nothing is journaled when the checkpoint is durable already: the offset passes
    /// the batch right away (`when_durable`; once the batches before it are, which are
    /// durable too unless another thread's put is still returning), and that journal
    /// line is the record.
    fn handed_out(&self, key: &QueueKey, id: u64, log_end: u64, durable: &Durable) {
        if durable.ready().is_some_and(|s| s.is_ok()) {
            return;
        }
        let end = self.inner.lock().logged(key, id, log_end);
        if let Some(end) = end {
            self.broker.offsets.journal_handed_out(
                &key.group,
                &key.topic,
                key.queue_id,
                end,
                log_end,
            );
        }
    }

    fn when_durable(self: &Arc<Self>, key: Arc<QueueKey>, id: u64, durable: Durable) {
        if let Some(status) = durable.ready() {
            self.written(&key, id, status, false);
            return;
        }
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let status = durable.await;
            me.written(&key, id, status, true);
        });
    }

    fn written(
        self: &Arc<Self>,
        key: &Arc<QueueKey>,
        id: u64,
        status: PutMessageStatus,
        late: bool,
    ) {
        let (passed, failed) = self.inner.lock().written(key, id, status.is_ok());
        self.commit(key, passed, late);
        if status.is_ok() {
            return;
        }
        let remark = format!(
            "pop checkpoint not stored as the broker's role requires: {}",
            status.rocketmq().as_str()
        );
        for a in failed {
            a.send(Err(remark.clone()), late);
        }
        // The record is in the log: wait for it again.
        let me = Arc::clone(self);
        let key = Arc::clone(key);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(RETRY_MS.unsigned_abs())).await;
            let log_end = me.broker.store.commit_log().max_offset();
            let status = me.broker.durable_to(log_end).await;
            me.written(&key, id, status, true);
        });
    }

    /// Writes taken batches: checkpoint, then a `bAck` of what was acked.
    fn write_jobs(self: &Arc<Self>, jobs: Vec<Job>) {
        for job in jobs {
            let ck_put = revive_log::put_checkpoint(
                &self.broker,
                &self.timer,
                &job.held.ck,
                job.held.revive_qid,
            );
            let durable = match ck_put {
                Err(e) => {
                    log_limit::limited!(
                        warn!(topic = %job.key.topic, queue_id = job.key.queue_id, error = %e, "buffered pop checkpoint not written; tried again")
                    );
                    let refused = self.inner.lock().put_back(job, crate::clock::now_ms());
                    for a in refused {
                        a.send(Err(e.to_string()), true);
                    }
                    continue;
                }
                Ok(w) => {
                    self.broker.offsets.journal_kept_written(
                        &job.key.group,
                        &job.key.topic,
                        job.key.queue_id,
                        job.held.ck.start_offset,
                        job.held.ck.pop_time,
                        w.end,
                    );
                    self.handed_out(&job.key, job.id, w.end, &w.durable);
                    w.durable
                }
            };
            let held = &job.held;
            let acked = held.acked_offsets();
            let durable = if acked.is_empty() {
                durable
            } else {
                let ack = AckRecord::of_checkpoint(&held.ck, acked);
                match revive_log::put_ack(
                    &self.broker,
                    &self.timer,
                    &ack,
                    held.revive_qid,
                    held.ck.revive_time(),
                ) {
                    // The later record: durable, the checkpoint is too.
                    Ok(w) => w.durable,
                    Err(e) => {
                        // Its acked messages revive; the acks waiting are refused.
                        log_limit::limited!(
                            warn!(topic = %job.key.topic, error = %e, "ack record of a buffered pop checkpoint not written")
                        );
                        let (_, refused) = self.inner.lock().written(&job.key, job.id, false);
                        for a in refused {
                            a.send(Err(e.to_string()), true);
                        }
                        durable
                    }
                }
            };
            self.when_durable(job.key, job.id, durable);
        }
    }
}

async fn flusher(buffer: std::sync::Weak<CheckpointBuffer>) {
    loop {
        let Some(me) = buffer.upgrade() else { return };
        let now = crate::clock::now_ms();
        let (jobs, next) = me.inner.lock().take_due(now);
        if !jobs.is_empty() {
            me.write_jobs(jobs);
        }
        let until = next.unwrap_or(i64::MAX).min(now + MAX_SLEEP_MS);
        me.wakes_at.store(until, Ordering::Release);
        let wait = Duration::from_millis(u64::try_from(until - now).unwrap_or(0).max(1));
        let woken = me.wake.notified();
        tokio::select! {
            () = woken => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn key(q: i32) -> QueueKey {
        QueueKey {
            topic: "T".into(),
            group: "G".into(),
            queue_id: q,
        }
    }

    fn held(start: i64, n: u8, pop_time: i64) -> State {
        State::Buffered(Box::new(Held {
            ck: CheckPoint {
                group: "G".into(),
                topic: "T".into(),
                start_offset: start,
                num: n,
                queue_offset_diff: Some((0..i32::from(n)).collect()),
                pop_time,
                invisible_time: 60_000,
                ..CheckPoint::default()
            },
            revive_qid: 0,
            acked: 0,
            write_at: pop_time + 10_000,
        }))
    }

    fn counting() -> (Arc<AtomicUsize>, impl Fn() -> Answer) {
        let n = Arc::new(AtomicUsize::new(0));
        let m = Arc::clone(&n);
        (n, move || {
            let m = Arc::clone(&m);
            Answer::new(move |r, _| {
                if r.is_ok() {
                    m.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
    }

    fn send_all(passed: Passed) -> Option<i64> {
        passed.map(|(o, answers)| {
            for a in answers {
                a.send(Ok(()), false);
            }
            o
        })
    }

    #[test]
    fn a_fully_acked_front_batch_is_passed_at_once_and_its_acks_answered() {
        let mut inner = Inner::default();
        inner.push(&key(0), 100, 104, 1_000, held(100, 4, 1_000));
        let (ok, answer) = counting();
        let (a, p) = inner.ack(&key(0), 100, 1_000, &[100, 101], vec![answer()], 1_001);
        assert!(matches!(a, Acked::Taken { waiting: true }));
        assert!(p.is_none(), "half acked: nothing passes");
        let (_, p) = inner.ack(&key(0), 100, 1_000, &[102, 103], vec![answer()], 1_002);
        assert_eq!(send_all(p), Some(104));
        assert_eq!(ok.load(Ordering::Relaxed), 2);
        assert_eq!(inner.buffered, 0);
        assert!(inner.queues.values().all(|q| q.batches.is_empty()));
    }

    #[test]
    fn a_later_batch_waits_for_the_earlier_one_then_both_pass() {
        let mut inner = Inner::default();
        inner.push(&key(0), 0, 2, 1_000, held(0, 2, 1_000));
        inner.push(&key(0), 2, 4, 1_001, held(2, 2, 1_001));
        let (ok, answer) = counting();
        let (_, p) = inner.ack(&key(0), 2, 1_001, &[2, 3], vec![answer()], 1_002);
        assert!(p.is_none());
        let (_, p) = inner.ack(&key(0), 0, 1_000, &[0, 1], vec![answer()], 1_003);
        assert_eq!(send_all(p), Some(4));
        assert_eq!(ok.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn held_acks_past_the_hold_write_the_earlier_batches_too() {
        let mut inner = Inner::default();
        inner.push(&key(0), 0, 2, 1_000, held(0, 2, 1_000));
        inner.push(&key(0), 2, 4, 1_000, held(2, 2, 1_000));
        inner.push(&key(0), 4, 6, 1_000, held(4, 2, 1_000));
        let (_, answer) = counting();
        inner.ack(&key(0), 2, 1_000, &[2], vec![answer()], 1_000);
        let (jobs, next) = inner.take_due(1_000 + ANSWER_HOLD_MS - 1);
        assert!(jobs.is_empty());
        assert_eq!(next, Some(1_000 + ANSWER_HOLD_MS));
        let (jobs, _) = inner.take_due(1_000 + ANSWER_HOLD_MS);
        let ids: Vec<i64> = jobs.iter().map(|j| j.held.ck.start_offset).collect();
        assert_eq!(
            ids,
            vec![0, 2],
            "the batch and every buffered one before it"
        );
        assert_eq!(jobs[1].held.acked_offsets(), vec![2]);
        assert_eq!(inner.buffered, 1);
        // The written ones pass once durable, in order.
        assert!(inner.written(&key(0), jobs[1].id, true).0.is_none());
        let (p, _) = inner.written(&key(0), jobs[0].id, true);
        assert_eq!(send_all(p), Some(4));
    }

    #[test]
    fn an_unacked_batch_is_written_at_its_write_time() {
        let mut inner = Inner::default();
        inner.push(&key(1), 0, 3, 1_000, held(0, 3, 1_000));
        assert!(inner.take_due(10_999).0.is_empty());
        let (jobs, next) = inner.take_due(11_000);
        assert_eq!(jobs.len(), 1);
        assert_eq!(next, None);
        assert!(jobs[0].held.acked_offsets().is_empty());
    }

    #[test]
    fn a_failed_write_refuses_the_acks_behind_it_and_keeps_the_batch() {
        let mut inner = Inner::default();
        inner.push(&key(0), 0, 1, 1_000, held(0, 1, 1_000));
        inner.push(&key(0), 1, 2, 1_000, held(1, 1, 1_000));
        let (ok, answer) = counting();
        let (_, p) = inner.ack(&key(0), 1, 1_000, &[1], vec![answer()], 1_000);
        assert!(p.is_none());
        let (mut jobs, _) = inner.take_due(1_000 + ANSWER_HOLD_MS);
        assert_eq!(jobs.len(), 1);
        let refused = inner.put_back(jobs.remove(0), 2_000);
        assert_eq!(refused.len(), 1, "the ack behind the failed batch");
        assert_eq!(ok.load(Ordering::Relaxed), 0);
        assert_eq!(inner.buffered, 1);
        let (jobs, _) = inner.take_due(2_000 + RETRY_MS);
        assert_eq!(jobs.len(), 1, "tried again");
    }

    #[test]
    fn acks_of_batches_not_in_memory_are_given_back() {
        let mut inner = Inner::default();
        let (_, answer) = counting();
        let (a, _) = inner.ack(&key(0), 0, 1, &[0], vec![answer()], 1);
        assert!(
            matches!(a, Acked::Lost(v) if v.len() == 1),
            "unknown, and the offset not past it: lost in a restart"
        );
        let (_, w) = inner.push(&key(0), 0, 1, 1, State::Writing);
        let (a, _) = inner.ack(&key(0), 0, 1, &[0], vec![answer()], 1);
        assert!(matches!(a, Acked::NotBuffered(_)), "written already");
        inner.written(&key(0), w, true);
        let (a, _) = inner.ack(&key(0), 0, 1, &[0], vec![answer()], 1);
        assert!(matches!(a, Acked::NotBuffered(_)), "passed already");
    }

    #[test]
    fn skipped_ranges_pass_in_order_with_the_batches() {
        let mut inner = Inner::default();
        inner.push(&key(0), 0, 2, 1_000, held(0, 2, 1_000));
        let (_, skip) = inner.push(&key(0), 2, 9, 0, State::Writing);
        assert!(
            inner.written(&key(0), skip, true).0.is_none(),
            "behind a buffered batch"
        );
        let (_, p) = inner.ack(&key(0), 0, 1_000, &[0, 1], Vec::new(), 1_001);
        assert_eq!(send_all(p), Some(9));
    }

    #[test]
    fn a_batch_counts_as_handed_out_only_behind_batches_a_crash_cannot_lose() {
        let mut inner = Inner::default();
        inner.push(&key(0), 0, 2, 1_000, held(0, 2, 1_000));
        let (_, a) = inner.push(&key(0), 2, 4, 1_000, State::Writing);
        assert_eq!(
            inner.logged(&key(0), a, 500),
            None,
            "behind a batch only in memory"
        );
        let (jobs, _) = inner.take_due(11_000);
        assert_eq!(jobs.len(), 1);
        let (_, b) = inner.push(&key(0), 4, 6, 1_001, State::Writing);
        assert_eq!(
            inner.logged(&key(0), b, 600),
            None,
            "behind a checkpoint not in the log yet"
        );
        assert_eq!(inner.logged(&key(0), jobs[0].id, 700), Some(2));
        assert_eq!(
            inner.logged(&key(0), b, 800),
            Some(6),
            "every checkpoint before it is earlier in the log"
        );
    }
}
