//! The revive service (RocketMQ's `PopReviveService`, one per revive queue, masters
//! only): reads the revive log in order, matches acks to their checkpoints, and puts
//! every message of a checkpoint that was not acked by its revive time into the group's
//! retry topic, with its reconsume times one higher, for the next pop.
//!
//! Unlike RocketMQ, which re-reads a window of the log each round and guesses how long
//! to wait for acks (2 s past the newest record read), the service keeps the
//! checkpoints it has read in memory until they are settled, and revives one only when
//! the timer wheel has delivered every record due up to its revive time
//! (`TimerService::read_time` past it) and dispatch has caught up: its acks, due at the
//! revive time, are then all read. A round runs every `reviveInterval`, or sooner when
//! a checkpoint falls due, and wakes the group's held pops when it revived anything. The revive offset (the consumer offset of
//! `CID_RMQ_SYS_REVIVE_GROUP` on the revive queue, RocketMQ's "last record done") is
//! the record before the oldest unsettled checkpoint, so a restart reads every
//! unsettled checkpoint and its acks again: a crash can revive a message twice, never
//! lose one, and never revive an ack it had read unless the ack itself was lost.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use message::properties;
use message::record::{self, Record};
use parking_lot::Mutex;
use remoting::protocol::constants::{perm, system};
use remoting::protocol::pop::{
    ACK_TAG, BATCH_ACK_TAG, CK_TAG, FIRST_POP_TIME, REVIVE_GROUP, normal_topic, pop_retry_topic,
    revive_topic,
};
use store::{GetMessageStatus, MatchAll, MessageInner};
use tracing::{debug, info, warn};

use super::PopService;
use super::records::{AckRecord, CheckPoint};
use crate::service_switch::ServiceSwitch;

/// Records read from a revive queue per store read.
const READ_BATCH: usize = 32;
/// How long a round waits for dispatch to catch up with the log.
const DISPATCH_WAIT: Duration = Duration::from_millis(500);
/// The shortest pause between rounds.
const MIN_PAUSE: Duration = Duration::from_millis(20);
/// How long after a slot ends its records are looked for (the wheel's delivery and
/// dispatch of the slot's last records).
const DUE_SLACK_MS: i64 = 20;

/// Starts and stops the revive task with the role.
#[derive(Debug, Default)]
pub struct ReviveService {
    switch: ServiceSwitch,
    state: Arc<Mutex<Vec<QueueRevive>>>,
}

impl ReviveService {
    /// Starts reviving every revive queue (idempotent).
    pub fn start(&self, pop: &Arc<PopService>) {
        let weak = Arc::downgrade(pop);
        let state = Arc::clone(&self.state);
        let started = self.switch.start(|| tokio::spawn(run(weak, state)));
        if started {
            info!(
                queues = pop.broker().config().revive_queue_num,
                "pop revive service started"
            );
        }
    }

    /// Stops it; what it had read in memory is read again from the log next start.
    pub fn stop(&self) {
        if self.switch.stop() {
            self.state.lock().clear();
            info!("pop revive service stopped");
        }
    }
}

async fn run(pop: std::sync::Weak<PopService>, state: Arc<Mutex<Vec<QueueRevive>>>) {
    loop {
        let Some(p) = pop.upgrade() else { return };
        let interval = Duration::from_millis(p.broker().config().revive_interval);
        let s = Arc::clone(&state);
        // Store reads and durable puts block: off the runtime's workers.
        let next_due = match tokio::task::spawn_blocking(move || round(&p, &s)).await {
            Ok(due) => due,
            Err(e) => {
                warn!(error = %e, "pop revive round failed");
                None
            }
        };
        // Until the next checkpoint falls due (its acks then read, a slot later at most),
        // but at least every interval.
        let pause = next_due.map_or(interval, |due| {
            let wait = due - crate::clock::now_ms();
            Duration::from_millis(u64::try_from(wait).unwrap_or(0)).min(interval)
        });
        tokio::time::sleep(pause.max(MIN_PAUSE)).await;
    }
}

/// One revive queue: where it is read to, and the checkpoints read and not settled.
#[derive(Debug)]
struct QueueRevive {
    queue_id: i32,
    /// The next revive-queue offset to read.
    next: i64,
    /// Unsettled checkpoints by their revive-queue offset.
    pending: BTreeMap<i64, CheckPoint>,
    /// Merge key → revive-queue offset of the checkpoint.
    by_key: HashMap<String, i64>,
    committed: i64,
}

/// One round over every revive queue; when the next pending checkpoint falls due.
fn round(pop: &PopService, state: &Mutex<Vec<QueueRevive>>) -> Option<i64> {
    let broker = pop.broker();
    let (cluster, queues) = {
        let c = broker.config();
        (c.broker_cluster_name.clone(), c.revive_queue_num)
    };
    let topic = revive_topic(&cluster);
    // What the wheel has delivered, then dispatch of at least that much: every ack
    // due before `delivered_before` is readable after this.
    let delivered_before = pop.timer().read_time();
    broker.store.wait_dispatched(DISPATCH_WAIT);
    let mut state = state.lock();
    if state.len() != usize::try_from(queues).unwrap_or(0) {
        *state = (0..queues)
            .map(|queue_id| {
                let committed = broker
                    .offsets
                    .query(REVIVE_GROUP, &topic, queue_id)
                    .unwrap_or(-1)
                    .max(-1);
                QueueRevive {
                    queue_id,
                    next: committed + 1,
                    pending: BTreeMap::new(),
                    by_key: HashMap::new(),
                    committed,
                }
            })
            .collect();
    }
    let can_put = broker.can_be_durable();
    let mut woken: Vec<(String, String)> = Vec::new();
    for q in state.iter_mut() {
        scan(pop, &topic, q);
        if can_put {
            revive_due(pop, q, delivered_before, &mut woken);
        }
        let done_to = q
            .pending
            .keys()
            .next()
            .map_or(q.next - 1, |oldest| oldest - 1);
        if done_to != q.committed {
            broker
                .offsets
                .commit_journaled(REVIVE_GROUP, &topic, q.queue_id, done_to);
            q.committed = done_to;
        }
    }
    // A checkpoint is due once the wheel is past the slot of its revive time.
    let precision = pop.timer().settings().precision_ms.max(1);
    let next_due = state
        .iter()
        .flat_map(|q| q.pending.values())
        .map(|ck| (ck.revive_time().div_euclid(precision) + 1) * precision + DUE_SLACK_MS)
        .min();
    drop(state);
    for (topic, group) in woken {
        wake_pops(pop, &topic, &group);
    }
    next_due
}

/// Tells the group's held pops of `topic` that its retry topic has messages (an arrival
/// in a retry topic wakes nobody by itself: pops wait on the topic they pop).
fn wake_pops(pop: &PopService, topic: &str, group: &str) {
    let broker = pop.broker();
    broker.pull_hold.wake_group(topic, -1, group);
    if let Some(config) = broker.topics.select(topic) {
        for queue_id in 0..config.read_queue_nums {
            broker.pull_hold.wake_group(topic, queue_id, group);
        }
    }
}

/// Reads the queue's new records: checkpoints into `pending`, acks onto them.
fn scan(pop: &PopService, topic: &str, q: &mut QueueRevive) {
    let broker = pop.broker();
    let this_broker = broker.config().broker_name.clone();
    loop {
        let r = broker.store.get_message(
            topic,
            q.queue_id,
            u64::try_from(q.next).unwrap_or(0),
            READ_BATCH,
            None,
            &MatchAll,
        );
        if r.status != GetMessageStatus::Found {
            if matches!(
                r.status,
                GetMessageStatus::OffsetTooSmall | GetMessageStatus::OffsetOverflowBadly
            ) {
                // Expired from under us, or the queue was cut: go where it is.
                q.next = crate::processor::as_i64(r.next_begin_offset);
            }
            return;
        }
        let n = r.messages.len();
        for (bytes, offset) in r.messages.iter().zip(&r.queue_offsets) {
            let offset = crate::processor::as_i64(*offset);
            read_record(broker, bytes, offset, &this_broker, q);
        }
        q.next = crate::processor::as_i64(r.next_begin_offset);
        if n < READ_BATCH {
            return;
        }
    }
}

fn read_record(
    broker: &crate::broker::Broker,
    bytes: &[u8],
    offset: i64,
    this_broker: &str,
    q: &mut QueueRevive,
) {
    let Ok(Some(Record::Message(m))) = record::decode(bytes) else {
        return;
    };
    let props = m.properties_str();
    let tag = properties::get(&props, properties::keys::TAGS).unwrap_or_default();
    match tag {
        CK_TAG => {
            let Ok(mut ck) = remoting::fastjson::from_slice::<CheckPoint>(m.body) else {
                log_limit::limited!(warn!(offset, "unreadable pop checkpoint in the revive log"));
                return;
            };
            ck.revive_offset = offset;
            broker
                .metrics
                .revive_read(&ck.group, &ck.topic, q.queue_id, true);
            let key = ck.merge_key();
            if let std::collections::hash_map::Entry::Vacant(e) = q.by_key.entry(key) {
                e.insert(offset);
                q.pending.insert(offset, ck);
            }
        }
        ACK_TAG | BATCH_ACK_TAG => {
            let Ok(ack) = remoting::fastjson::from_slice::<AckRecord>(m.body) else {
                log_limit::limited!(warn!(offset, "unreadable pop ack in the revive log"));
                return;
            };
            broker
                .metrics
                .revive_read(&ack.group, &ack.topic, q.queue_id, false);
            let Some(ck_offset) = q.by_key.get(&ack.merge_key(this_broker)).copied() else {
                // Its checkpoint was settled already (or lies before the revive offset).
                return;
            };
            let Some(ck) = q.pending.get_mut(&ck_offset) else {
                return;
            };
            for o in ack.offsets() {
                if let Some(i) = ck.index_of(o) {
                    ck.set_acked(i);
                }
            }
            if ck.all_acked() {
                let key = ck.merge_key();
                q.pending.remove(&ck_offset);
                q.by_key.remove(&key);
            }
        }
        _ => {}
    }
}

/// Revives the checkpoints whose acks have all been read; keeps one whose revive
/// failed for the next round.
fn revive_due(
    pop: &PopService,
    q: &mut QueueRevive,
    delivered_before: i64,
    woken: &mut Vec<(String, String)>,
) {
    let due: Vec<i64> = q
        .pending
        .iter()
        .filter(|(_, ck)| ck.revive_time() < delivered_before)
        .map(|(ro, _)| *ro)
        .collect();
    for ro in due {
        let Some(ck) = q.pending.get(&ro) else {
            continue;
        };
        match revive_checkpoint(pop, ck) {
            Ok(n) => {
                if n > 0 {
                    let target = (
                        normal_topic(&ck.topic, &ck.group).to_owned(),
                        ck.group.clone(),
                    );
                    if !woken.contains(&target) {
                        woken.push(target);
                    }
                    debug!(topic = %ck.topic, group = %ck.group, queue_id = ck.queue_id, start = ck.start_offset, revived = n, "pop checkpoint revived");
                }
                let key = ck.merge_key();
                q.pending.remove(&ro);
                q.by_key.remove(&key);
            }
            Err(e) => {
                log_limit::limited!(
                    warn!(topic = %ck.topic, group = %ck.group, error = %e, "pop revive failed; retried next round")
                );
                return;
            }
        }
    }
}

/// Why a revive did not complete.
#[derive(Debug, thiserror::Error)]
enum ReviveError {
    #[error("retry put failed: {0}")]
    Put(&'static str),
}

/// Puts the un-acked messages of `ck` into the retry topic; how many.
fn revive_checkpoint(pop: &PopService, ck: &CheckPoint) -> Result<usize, ReviveError> {
    let broker = pop.broker();
    let normal = normal_topic(&ck.topic, &ck.group);
    if !broker.topics.contains(normal) || !broker.groups.contains(&ck.group) {
        // Nobody left to consume it.
        return Ok(0);
    }
    let retry_topic = if ck.topic.starts_with(system::RETRY_GROUP_TOPIC_PREFIX) {
        ck.topic.clone()
    } else {
        pop_retry_topic(&ck.topic, &ck.group, broker.config().enable_retry_topic_v2)
    };
    let mut revived = 0;
    for i in 0..usize::from(ck.num) {
        if ck.is_acked(i) {
            continue;
        }
        let Some(offset) = ck.queue_offset(i).and_then(|o| u64::try_from(o).ok()) else {
            continue;
        };
        let r = broker
            .store
            .get_message(&ck.topic, ck.queue_id, offset, 1, None, &MatchAll);
        let (Some(bytes), Some(found)) = (r.messages.first(), r.queue_offsets.first()) else {
            // Gone from the store (expired): nothing to bring back.
            continue;
        };
        if *found != offset {
            continue;
        }
        let Ok(Some(Record::Message(m))) = record::decode(bytes) else {
            continue;
        };
        // RocketMQ 5.4's useSeparateRetryQueue: a retry keeps its queue (a priority
        // topic's order survives the retry), in a retry topic of as many queues.
        let separate = broker.config().use_separate_retry_queue;
        let queues = if separate {
            broker
                .topics
                .select(normal)
                .map_or(1, |t| t.write_queue_nums.max(1))
        } else {
            1
        };
        let retry_queue = if separate && ck.queue_id < queues {
            ck.queue_id
        } else {
            0
        };
        if revived == 0 {
            ensure_retry_topic(pop, &retry_topic, &ck.group, queues);
        }
        let mut props = m.properties_str().into_owned();
        if m.reconsume_times == 0 || properties::get(&props, FIRST_POP_TIME).is_none() {
            props = properties::set(&props, &[(FIRST_POP_TIME, &ck.pop_time.to_string())]);
        }
        let msg = MessageInner {
            topic: retry_topic.clone(),
            queue_id: retry_queue,
            flag: m.flag,
            body: bytes.slice_ref(m.body),
            properties: props,
            sys_flag: m.sys_flag,
            born_timestamp: m.born_timestamp,
            born_host: m.born_host,
            store_host: broker.store_host(),
            reconsume_times: m.reconsume_times.saturating_add(1),
            prepared_transaction_offset: 0,
        };
        let result = broker.store.put_message(&msg);
        broker.stats.record_put(&msg.topic, &result);
        let status = broker.durable(&result).wait_blocking();
        broker.metrics.revive_retry(&ck.group, &ck.topic, status);
        if !status.is_ok() {
            return Err(ReviveError::Put(status.rocketmq().as_str()));
        }
        revived += 1;
    }
    Ok(revived)
}

/// RocketMQ creates a missing pop retry topic with one queue (`queues` with separate
/// retry queues, grown when the topic grew) and starts the group at its beginning.
fn ensure_retry_topic(pop: &PopService, topic: &str, group: &str, queues: i32) {
    let broker = pop.broker();
    let config = broker
        .topics
        .create_in_send_back(topic, queues, perm::READ | perm::WRITE, 0);
    if config.write_queue_nums < queues {
        // Written with the next topics.json write, as a topic created by a send-back.
        let _generation = broker
            .topics
            .update(remoting::protocol::topic::TopicConfig {
                read_queue_nums: queues,
                write_queue_nums: queues,
                ..config
            });
    }
    for queue_id in 0..queues {
        if broker
            .offsets
            .query(group, topic, queue_id)
            .is_none_or(|o| o < 0)
        {
            broker.offsets.commit_journaled(group, topic, queue_id, 0);
        }
    }
}
