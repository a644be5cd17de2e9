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

use super::{Refusal, success};
use crate::broker::Broker;
use crate::durability::Durable;
use crate::pop::PopService;
use crate::pop::ack_merge::CheckpointKey;
use crate::pop::order_info::OrderedAck;
use crate::pop::records::{AckRecord, CheckPoint};
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

/// BATCH_ACK_MESSAGE.
pub fn batch_ack(pop: &Arc<PopService>, request: &RemotingCommand) -> Reply {
    match prepare_batch_ack(pop, request) {
        Ok(waits) => answer_when_durable(waits, success()),
        Err(refusal) => Reply::Now(refusal.into_response()),
    }
}

fn prepare_batch_ack(pop: &PopService, request: &RemotingCommand) -> Result<Vec<Durable>, Refusal> {
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
        let ack = AckRecord {
            ack_offset: -1,
            ack_offset_list: Some(offsets),
            broker_name: Some(
                body.broker_name
                    .clone()
                    .unwrap_or_else(|| this_broker.clone()),
            ),
            group: entry.consumer_group.clone(),
            pop_time: entry.pop_time,
            queue_id: entry.queue_id,
            start_offset: entry.start_offset,
            topic,
        };
        let deliver = entry.pop_time.saturating_add(entry.invisible_time);
        let written =
            revive_log::put_ack(broker, pop.timer(), &ack, entry.revive_queue_id, deliver)
                .map_err(put_refusal)?;
        waits.push(written.durable);
    }
    Ok(waits)
}

/// CHANGE_MESSAGE_INVISIBLETIME.
pub fn change_invisible_time(pop: &Arc<PopService>, request: &RemotingCommand) -> Reply {
    match prepare_change(pop, request) {
        Ok((waits, response)) => answer_when_durable(waits, response),
        Err(refusal) => Reply::Now(refusal.into_response()),
    }
}

fn prepare_change(
    pop: &PopService,
    request: &RemotingCommand,
) -> Result<(Vec<Durable>, RemotingCommand), Refusal> {
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
        return Ok((Vec::new(), change_orderly(pop, &h, &extra, now)));
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
    let ack_written = ack_receipt(
        pop,
        &h.topic,
        &h.consumer_group,
        h.queue_id,
        h.offset,
        &extra,
    )?;
    let header = ChangeInvisibleTimeResponseHeader {
        pop_time: now,
        invisible_time: h.invisible_time,
        revive_qid: extra.revive_qid,
    };
    Ok((
        vec![ck_written.durable, ack_written],
        success().with_header(&header),
    ))
}

/// Writes the ack of `offset` of the batch `extra` names, due with its checkpoint.
fn ack_receipt(
    pop: &PopService,
    topic: &str,
    group: &str,
    queue_id: i32,
    offset: i64,
    extra: &ExtraInfo,
) -> Result<Durable, Refusal> {
    let ack = AckRecord {
        ack_offset: offset,
        ack_offset_list: None,
        broker_name: Some(extra.broker_name.clone()),
        group: group.to_owned(),
        pop_time: extra.pop_time,
        queue_id,
        start_offset: extra.ck_queue_offset,
        topic: topic.to_owned(),
    };
    let deliver = extra.pop_time.saturating_add(extra.invisible_time);
    revive_log::put_ack(pop.broker(), pop.timer(), &ack, extra.revive_qid, deliver)
        .map(|w| w.durable)
        .map_err(put_refusal)
}

/// `response` once every wait succeeded, else SYSTEM_ERROR naming the first failure.
fn answer_when_durable(waits: Vec<Durable>, response: RemotingCommand) -> Reply {
    let ready: Option<Vec<PutMessageStatus>> = waits.iter().map(Durable::ready).collect();
    if let Some(statuses) = ready {
        return Reply::Now(verdict(&statuses, response));
    }
    Reply::later(async move {
        let mut statuses = Vec::with_capacity(waits.len());
        for w in waits {
            statuses.push(w.await);
        }
        Some(verdict(&statuses, response))
    })
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
