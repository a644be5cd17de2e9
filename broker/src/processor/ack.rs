//! ACK_MESSAGE (200051), BATCH_ACK_MESSAGE (200151) and CHANGE_MESSAGE_INVISIBLETIME
//! (200053), RocketMQ 5's `AckMessageProcessor` and `ChangeInvisibleTimeProcessor`: an
//! ack is a record in the revive log naming the checkpoint it acks (its start offset
//! and pop time come from the receipt handle); a change of invisible time is a new
//! one-message checkpoint followed by an ack of the old one.
//!
//! SUCCESS means the records are as durable as the role requires (RocketMQ answers as
//! soon as the ack is handed to its writer, and logs a failure it never reports): an
//! ack the client was told succeeded is never lost in a crash. Single acks of one burst
//! of requests share one record per checkpoint (`pop::ack_merge`). Orderly receipts
//! (revive queue 999) ack in the queue's batch (`pop::order_info`) and move the
//! group's offset to its first message not acked, as RocketMQ's `ackOrderly`.

use std::sync::Arc;

use remoting::protocol::pop::{
    AckMessageRequestHeader, BatchAckMessageRequestBody, ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader, ExtraInfo, RetryFlag,
};
use remoting::server::Reply;
use remoting::{Channel, RemotingCommand, ResponseCode};
use store::PutMessageStatus;
use tokio::sync::oneshot;

use super::{Refusal, success};
use crate::broker::Broker;
use crate::durability::Durable;
use crate::pop::PopService;
use crate::pop::ack_merge::{self, CheckpointKey};
use crate::pop::ck_buffer::Answer;
use crate::pop::order_info::OrderedAck;
use crate::pop::records::CheckPoint;
use crate::pop::revive_log::{self, ReviveLogError};

const FAQ_TIP: &str =
    "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.";

/// ACK_MESSAGE: an orderly ack is done at once; any other is queued to be written with
/// the other acks of its checkpoint at the end of the burst (`pop::ack_merge`), which
/// answers it.
pub fn ack(pop: &Arc<PopService>, channel: &Channel, request: &RemotingCommand) -> Reply {
    match prepare_ack(pop, request) {
        Ok(None) => Reply::Now(success()),
        Ok(Some((key, offset))) => {
            pop.submit_ack(key, offset, channel, request);
            Reply::Nothing
        }
        Err(refusal) => Reply::Now(refusal.into_response()),
    }
}

/// Checks an ack; the checkpoint and offset it acks unless it was an orderly one (done).
fn prepare_ack(
    pop: &PopService,
    request: &RemotingCommand,
) -> Result<Option<(CheckpointKey, i64)>, Refusal> {
    let broker = pop.broker();
    let h: AckMessageRequestHeader = request.decode_header()?;
    check_queue(broker, &h.topic, h.queue_id, &h.consumer_group)?;
    let (min, max) = queue_range(broker, &h.topic, h.queue_id);
    if h.offset < min || h.offset > max {
        return Err(Refusal::new(
            ResponseCode::NoMessage,
            format!(
                "offset is illegal, key:{}@{}, commit:{}, store:{}~{}",
                h.topic, h.queue_id, h.offset, min, max
            ),
        ));
    }
    let extra = parse_extra(&h.extra_info)?;
    if extra.is_order() {
        ack_orderly(
            pop,
            &h.topic,
            &h.consumer_group,
            h.queue_id,
            h.offset,
            extra.pop_time,
        )?;
        return Ok(None);
    }
    Ok(Some((
        checkpoint_key(&h.topic, &h.consumer_group, h.queue_id, &extra),
        h.offset,
    )))
}

/// The checkpoint the receipt `extra` of a message of `topic`'s queue names.
fn checkpoint_key(topic: &str, group: &str, queue_id: i32, extra: &ExtraInfo) -> CheckpointKey {
    CheckpointKey {
        topic: topic.to_owned(),
        group: group.to_owned(),
        queue_id,
        start_offset: extra.ck_queue_offset,
        pop_time: extra.pop_time,
        broker_name: extra.broker_name.clone(),
        revive_qid: extra.revive_qid,
        deliver_ms: extra.pop_time.saturating_add(extra.invisible_time),
    }
}

/// What settling an ack will answer: `Ok` once it is kept.
type Settled = oneshot::Receiver<Result<(), String>>;

/// Settles the ack of `offsets` of checkpoint `key` (`pop::ack_merge::settle`).
fn settle(pop: &PopService, key: &CheckpointKey, offsets: Vec<i64>) -> Settled {
    let (tx, rx) = oneshot::channel();
    let answer = Answer::new(move |outcome, _| {
        let _ = tx.send(outcome);
    });
    ack_merge::settle(pop.buffer(), key, offsets, vec![answer]);
    rx
}

/// BATCH_ACK_MESSAGE.
pub fn batch_ack(pop: &Arc<PopService>, request: &RemotingCommand) -> Reply {
    match prepare_batch_ack(pop, request) {
        Ok(settled) => answer_when_settled(settled, success()),
        Err(refusal) => Reply::Now(refusal.into_response()),
    }
}

fn prepare_batch_ack(pop: &PopService, request: &RemotingCommand) -> Result<Vec<Settled>, Refusal> {
    let broker = pop.broker();
    let bytes = request.body.to_bytes();
    let body: Option<BatchAckMessageRequestBody> = if bytes.is_empty() {
        None
    } else {
        Some(remoting::fastjson::from_slice(&bytes)?)
    };
    let Some(body) = body.filter(|b| !b.acks.is_empty()) else {
        return Err(Refusal::new(ResponseCode::NoMessage, ""));
    };
    let this_broker = broker.config().broker_name.clone();
    let mut waits = Vec::new();
    for entry in &body.acks {
        let Some(flag) = RetryFlag::parse(&entry.retry) else {
            continue;
        };
        let topic = flag.real_topic(&entry.topic, &entry.consumer_group);
        if !broker.topics.contains(&topic) {
            continue;
        }
        let (min, max) = queue_range(broker, &topic, entry.queue_id);
        let offsets: Vec<i64> = entry
            .bit_set
            .deltas()
            .map(|d| entry.start_offset.saturating_add(i64::from(d)))
            .filter(|o| *o >= min && *o <= max)
            .collect();
        if offsets.is_empty() {
            continue;
        }
        if entry.revive_queue_id == remoting::protocol::pop::POP_ORDER_REVIVE_QUEUE {
            for o in offsets {
                ack_orderly(
                    pop,
                    &topic,
                    &entry.consumer_group,
                    entry.queue_id,
                    o,
                    entry.pop_time,
                )?;
            }
            continue;
        }
        let key = CheckpointKey {
            topic,
            group: entry.consumer_group.clone(),
            queue_id: entry.queue_id,
            start_offset: entry.start_offset,
            pop_time: entry.pop_time,
            broker_name: body
                .broker_name
                .clone()
                .unwrap_or_else(|| this_broker.clone()),
            revive_qid: entry.revive_queue_id,
            deliver_ms: entry.pop_time.saturating_add(entry.invisible_time),
        };
        waits.push(settle(pop, &key, offsets));
    }
    Ok(waits)
}

/// A change of invisible time: done, or the new checkpoint to wait for before the old
/// receipt is acked.
enum Change {
    Done(RemotingCommand),
    Pending {
        checkpoint: Durable,
        old: CheckpointKey,
        offset: i64,
        response: RemotingCommand,
    },
}

/// CHANGE_MESSAGE_INVISIBLETIME.
pub fn change_invisible_time(pop: &Arc<PopService>, request: &RemotingCommand) -> Reply {
    match prepare_change(pop, request) {
        Ok(Change::Done(response)) => Reply::Now(response),
        Ok(Change::Pending {
            checkpoint,
            old,
            offset,
            response,
        }) => {
            let pop = Arc::clone(pop);
            Reply::later(async move {
                // The message is acked in its old batch only once its new checkpoint is
                // kept: never in neither.
                let status = checkpoint.await;
                if !status.is_ok() {
                    return Some(verdict(&[status], response));
                }
                let settled = settle(&pop, &old, vec![offset]);
                Some(settled_verdict(settled.await.ok(), response))
            })
        }
        Err(refusal) => Reply::Now(refusal.into_response()),
    }
}

fn prepare_change(pop: &PopService, request: &RemotingCommand) -> Result<Change, Refusal> {
    let broker = pop.broker();
    let h: ChangeInvisibleTimeRequestHeader = request.decode_header()?;
    check_queue(broker, &h.topic, h.queue_id, &h.consumer_group)?;
    let (min, max) = queue_range(broker, &h.topic, h.queue_id);
    if h.offset < min || h.offset >= max {
        return Err(Refusal::new(ResponseCode::NoMessage, ""));
    }
    let extra = parse_extra(&h.extra_info)?;
    let now = crate::clock::now_ms();
    if extra.is_order() {
        return Ok(Change::Done(change_orderly(pop, &h, &extra, now)));
    }
    // The message alone, due again after the new invisible time...
    let ck = CheckPoint {
        broker_name: Some(extra.broker_name.clone()),
        group: h.consumer_group.clone(),
        queue_offset_diff: Some(vec![0]),
        invisible_time: h.invisible_time,
        num: 1,
        pop_time: now,
        queue_id: h.queue_id,
        start_offset: h.offset,
        topic: h.topic.clone(),
        ..CheckPoint::default()
    };
    let ck_written = revive_log::put_checkpoint(broker, pop.timer(), &ck, extra.revive_qid)
        .map_err(put_refusal)?;
    // ...and no longer due with its old batch.
    let header = ChangeInvisibleTimeResponseHeader {
        pop_time: now,
        invisible_time: h.invisible_time,
        revive_qid: extra.revive_qid,
    };
    Ok(Change::Pending {
        checkpoint: ck_written.durable,
        old: checkpoint_key(&h.topic, &h.consumer_group, h.queue_id, &extra),
        offset: h.offset,
        response: success().with_header(&header),
    })
}

/// `response` once every ack is kept, else SYSTEM_ERROR naming the first failure.
fn answer_when_settled(settled: Vec<Settled>, response: RemotingCommand) -> Reply {
    let mut response = response;
    let mut waiting = Vec::new();
    for mut rx in settled {
        match rx.try_recv() {
            Ok(outcome) => response = settled_verdict(Some(outcome), response),
            Err(oneshot::error::TryRecvError::Empty) => waiting.push(rx),
            Err(oneshot::error::TryRecvError::Closed) => {
                response = settled_verdict(None, response);
            }
        }
    }
    if waiting.is_empty() {
        return Reply::Now(response);
    }
    Reply::later(async move {
        for rx in waiting {
            response = settled_verdict(rx.await.ok(), response);
        }
        Some(response)
    })
}

/// `response` when the ack was kept (and `response` is not a refusal already), else
/// SYSTEM_ERROR with the reason (`None`: dropped unanswered).
fn settled_verdict(
    outcome: Option<Result<(), String>>,
    response: RemotingCommand,
) -> RemotingCommand {
    if response.code() != ResponseCode::Success.code() {
        return response;
    }
    match outcome {
        Some(Ok(())) => response,
        Some(Err(remark)) => Refusal::system(remark).into_response(),
        None => Refusal::system("the ack was dropped before it was kept").into_response(),
    }
}

fn verdict(statuses: &[PutMessageStatus], response: RemotingCommand) -> RemotingCommand {
    match statuses.iter().find(|s| !s.is_ok()) {
        None => response,
        Some(s) => Refusal::system(format!(
            "ack record not stored as the broker's role requires: {}",
            s.rocketmq().as_str()
        ))
        .into_response(),
    }
}

fn put_refusal(e: ReviveLogError) -> Refusal {
    Refusal::system(e.to_string())
}

fn check_queue(broker: &Broker, topic: &str, queue_id: i32, group: &str) -> Result<(), Refusal> {
    let config = broker.topics.select(topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::TopicNotExist,
            format!("topic[{topic}] not exist, apply first please! {FAQ_TIP}"),
        )
    })?;
    if queue_id < 0 || queue_id >= config.read_queue_nums {
        return Err(Refusal::new(
            ResponseCode::MessageIllegal,
            format!(
                "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}] consumer:[{group}]",
                config.read_queue_nums
            ),
        ));
    }
    Ok(())
}

fn queue_range(broker: &Broker, topic: &str, queue_id: i32) -> (i64, i64) {
    (
        super::as_i64(broker.store.min_offset_in_queue(topic, queue_id)),
        super::as_i64(broker.store.max_offset_in_queue(topic, queue_id)),
    )
}

fn parse_extra(text: &str) -> Result<ExtraInfo, Refusal> {
    ExtraInfo::parse(text).map_err(|e| Refusal::new(ResponseCode::MessageIllegal, e.to_string()))
}

/// Takes the queue's pop lock, waiting for a pop under way (it holds it for one read).
fn lock_queue<'a>(
    pop: &'a PopService,
    topic: &str,
    group: &str,
    queue_id: i32,
) -> crate::pop::queues::QueueLock<'a> {
    loop {
        if let Some(lock) = pop.queues().try_lock(topic, group, queue_id) {
            return lock;
        }
        std::thread::yield_now();
    }
}

/// RocketMQ's `ackOrderly`: marks the offset acked in the queue's batch and commits the
/// first offset not acked; an ack below the committed offset is done already.
fn ack_orderly(
    pop: &PopService,
    topic: &str,
    group: &str,
    queue_id: i32,
    offset: i64,
    pop_time: i64,
) -> Result<(), Refusal> {
    let broker = pop.broker();
    let committed = || broker.offsets.query(group, topic, queue_id).unwrap_or(-1);
    if offset < committed() {
        return Ok(());
    }
    let _lock = lock_queue(pop, topic, group, queue_id);
    let old = committed();
    if offset < old {
        return Ok(());
    }
    match broker
        .order_info
        .ack(topic, group, queue_id, offset, pop_time)
    {
        OrderedAck::Commit(next) => {
            if !broker.offsets.has_pending_reset(group, topic, queue_id) {
                broker
                    .offsets
                    .commit_journaled(group, topic, queue_id, next);
            }
            if !broker.order_info.blocked(None, topic, group, queue_id) {
                // The queue is free: a pop waiting for it goes now.
                broker.pull_hold.wake_group(topic, queue_id, group);
                broker.pull_hold.wake_group(topic, -1, group);
            }
            Ok(())
        }
        OrderedAck::StaleBatch => Ok(()),
        OrderedAck::NotInBatch => Err(Refusal::new(
            ResponseCode::MessageIllegal,
            format!(
                "offset is illegal, key:{topic}@{group}@{queue_id}, old:{old}, commit:{offset}, next:-1, {}",
                broker.store_host()
            ),
        )),
    }
}

/// RocketMQ's `processChangeInvisibleTimeForOrder`: the message's own visible-again
/// time in its batch.
fn change_orderly(
    pop: &PopService,
    h: &ChangeInvisibleTimeRequestHeader,
    extra: &ExtraInfo,
    now: i64,
) -> RemotingCommand {
    let broker = pop.broker();
    let (topic, group) = (&h.topic, &h.consumer_group);
    let behind = || {
        broker
            .offsets
            .query(group, topic, h.queue_id)
            .is_some_and(|o| o > h.offset)
    };
    if behind() {
        return success();
    }
    let _lock = lock_queue(pop, topic, group, h.queue_id);
    if behind() {
        return success();
    }
    let next_visible = now.saturating_add(h.invisible_time);
    broker.order_info.set_next_visible(
        topic,
        group,
        h.queue_id,
        h.offset,
        extra.pop_time,
        next_visible,
    );
    success().with_header(&ChangeInvisibleTimeResponseHeader {
        pop_time: extra.pop_time,
        invisible_time: next_visible - extra.pop_time,
        revive_qid: extra.revive_qid,
    })
}
