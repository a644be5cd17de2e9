//! The POP family's side requests (RocketMQ 5's `PeekMessageProcessor`,
//! `NotificationProcessor`, `PollingInfoProcessor`): PEEK_MESSAGE (200052) reads what
//! a pop would get without taking it; NOTIFICATION (200054) answers whether there is
//! something to pop, held until there is or its poll time passes; POLLING_INFO
//! (200055) counts the pops held for a queue; POP_ROLLBACK (200056, `mqadmin
//! exportPopRecord`) puts the pop records kept outside the revive log into it — in
//! RocketMQ its RocksDB pop store's, here the checkpoints kept in memory.

use std::sync::Arc;

use bytes::Bytes;
use remoting::protocol::constants::perm;
use remoting::protocol::pop::{
    NotificationRequestHeader, NotificationResponseHeader, PeekMessageRequestHeader,
    PollingInfoRequestHeader, PollingInfoResponseHeader, PopMessageResponseHeader, pop_retry_topic,
};
use remoting::server::Reply;
use remoting::{Body, Channel, RemotingCommand, ResponseCode};
use store::{GetMessageStatus, MatchAll};

use super::pop::check_target;
use super::{Refusal, as_i64, success};
use crate::broker::Broker;
use crate::filter::{SubscriptionFilter, TagFilter};
use crate::pop::PopService;
use crate::pull_hold::HeldPull;

/// Where a pop of the queue would start (nothing is committed).
fn peek_offset(pop: &PopService, topic: &str, group: &str, queue_id: i32) -> i64 {
    let broker = pop.broker();
    let committed = broker
        .offsets
        .query(group, topic, queue_id)
        .filter(|o| *o >= 0)
        .unwrap_or_else(|| as_i64(broker.store.min_offset_in_queue(topic, queue_id)));
    pop.queues()
        .in_flight_end(topic, group, queue_id)
        .map_or(committed, |end| end.max(committed))
}

/// The queues a request names: `queue_id`, or every read queue of the topic for −1.
fn queues(broker: &Broker, topic: &str, queue_id: i32) -> Vec<i32> {
    if queue_id >= 0 {
        return vec![queue_id];
    }
    broker
        .topics
        .select(topic)
        .map(|t| (0..t.read_queue_nums.max(0)).collect())
        .unwrap_or_default()
}

fn retry_topic(broker: &Broker, topic: &str, group: &str) -> String {
    pop_retry_topic(topic, group, broker.config().enable_retry_topic_v2)
}

fn broker_readable(broker: &Broker, what: &str) -> Result<(), Refusal> {
    let config = broker.config();
    if perm::is_readable(config.broker_permission) {
        return Ok(());
    }
    Err(Refusal::new(
        ResponseCode::NoPermission,
        format!("the broker[{}] {what} is forbidden", config.broker_ip1()),
    ))
}

/// PEEK_MESSAGE: the messages a pop would get, left where they are.
pub fn peek(pop: &Arc<PopService>, channel: &Channel, request: &RemotingCommand) -> Reply {
    Reply::Now(match peek_inner(pop, channel, request) {
        Ok(r) => r,
        Err(refusal) => refusal.into_response(),
    })
}

fn peek_inner(
    pop: &PopService,
    channel: &Channel,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Refusal> {
    let broker = pop.broker();
    let h: PeekMessageRequestHeader = request.decode_header()?;
    broker_readable(broker, "peeking message")?;
    check_target(broker, channel, &h.topic, h.queue_id, &h.consumer_group)?;
    let want = usize::try_from(h.max_msg_nums).unwrap_or(0).max(1);
    let mut body: Vec<Bytes> = Vec::new();
    let mut rest = 0;
    let retry = retry_topic(broker, &h.topic, &h.consumer_group);
    for (topic, queue_ids) in [
        (h.topic.clone(), queues(broker, &h.topic, h.queue_id)),
        (retry.clone(), queues(broker, &retry, -1)),
    ] {
        for queue_id in queue_ids {
            let offset = peek_offset(pop, &topic, &h.consumer_group, queue_id);
            let max = as_i64(broker.store.max_offset_in_queue(&topic, queue_id));
            rest += (max - offset).max(0);
            if body.len() >= want {
                continue;
            }
            let r = broker.store.get_message(
                &topic,
                queue_id,
                u64::try_from(offset).unwrap_or(0),
                want - body.len(),
                None,
                &MatchAll,
            );
            if r.status == GetMessageStatus::Found {
                body.extend(r.messages);
            }
        }
    }
    let header = PopMessageResponseHeader {
        rest_num: rest,
        ..PopMessageResponseHeader::default()
    };
    let mut response = success().with_header(&header);
    if body.is_empty() {
        response.header.code = ResponseCode::PullNotFound.code();
    } else {
        response.body = Body::Parts(body);
    }
    Ok(response)
}

/// Whether a pop of the request's queues (and the retry topic) would find something.
fn has_message(pop: &PopService, h: &NotificationRequestHeader) -> bool {
    let broker = pop.broker();
    let group = &h.consumer_group;
    let orderly = h.order == Some(true);
    let check = |topic: &str, queue_id: i32| {
        if orderly
            && broker
                .order_info
                .blocked(h.attempt_id.as_deref(), topic, group, queue_id)
        {
            return false;
        }
        let max = as_i64(broker.store.max_offset_in_queue(topic, queue_id));
        max - peek_offset(pop, topic, group, queue_id) > 0
    };
    if queues(broker, &h.topic, h.queue_id)
        .into_iter()
        .any(|q| check(&h.topic, q))
    {
        return true;
    }
    let retry = retry_topic(broker, &h.topic, group);
    !orderly
        && queues(broker, &retry, -1)
            .into_iter()
            .any(|q| check(&retry, q))
}

/// NOTIFICATION: `hasMsg` now, or once a message arrives before the poll time.
pub fn notification(pop: &Arc<PopService>, channel: &Channel, request: &RemotingCommand) -> Reply {
    let mut request = request.clone();
    super::pop::stamp_born_time(&mut request);
    match notification_inner(pop, channel, &request, true) {
        Ok(Some(r)) => Reply::Now(r),
        Ok(None) => Reply::Nothing,
        Err(refusal) => Reply::Now(refusal.into_response()),
    }
}

/// A held notification woken (an arrival, or its deadline): answered either way.
pub fn rerun_notification(pop: &Arc<PopService>, held: &HeldPull) -> RemotingCommand {
    match notification_inner(pop, &held.channel, &held.request, false) {
        Ok(Some(r)) => r,
        Ok(None) => answer(false, false),
        Err(refusal) => refusal.into_response(),
    }
}

fn answer(has_msg: bool, polling_full: bool) -> RemotingCommand {
    success().with_header(&NotificationResponseHeader {
        has_msg,
        polling_full: Some(polling_full),
    })
}

fn notification_inner(
    pop: &PopService,
    channel: &Channel,
    request: &RemotingCommand,
    may_hold: bool,
) -> Result<Option<RemotingCommand>, Refusal> {
    let broker = pop.broker();
    let h: NotificationRequestHeader = request.decode_header()?;
    broker_readable(broker, "receiving notification")?;
    check_target(broker, channel, &h.topic, h.queue_id, &h.consumer_group)?;
    if has_message(pop, &h) {
        return Ok(Some(answer(true, false)));
    }
    let now = crate::clock::now_ms();
    let born = h.born_time.filter(|b| *b != 0).unwrap_or(now);
    let wait = born + h.poll_time - now;
    if !may_hold || h.poll_time <= 0 || wait <= 0 {
        return Ok(Some(answer(false, false)));
    }
    if broker.pull_hold.held() >= broker.config().max_pop_polling_size {
        return Ok(Some(answer(false, true)));
    }
    broker.pull_hold.suspend(
        &h.topic,
        h.queue_id,
        HeldPull {
            channel: channel.clone(),
            request: request.clone(),
            offset: None,
            filter: SubscriptionFilter::Tag(TagFilter::all()),
            since: std::time::Instant::now(),
        },
        u64::try_from(wait).unwrap_or(0),
    );
    Ok(None)
}

/// POLLING_INFO: how many pops wait on the queue.
pub fn polling_info(pop: &Arc<PopService>, channel: &Channel, request: &RemotingCommand) -> Reply {
    let result = (|| {
        let broker = pop.broker();
        let h: PollingInfoRequestHeader = request.decode_header()?;
        broker_readable(broker, "receiving notification")?;
        check_target(broker, channel, &h.topic, h.queue_id, &h.consumer_group)?;
        let n = broker
            .pull_hold
            .pops_held(&h.topic, h.queue_id, &h.consumer_group);
        Ok::<_, Refusal>(success().with_header(&PollingInfoResponseHeader {
            polling_num: i32::try_from(n).unwrap_or(i32::MAX),
        }))
    })();
    Reply::Now(result.unwrap_or_else(Refusal::into_response))
}

/// POP_ROLLBACK: writes the checkpoints kept in memory to the revive log, answered once
/// they are as durable as the role requires (a slave keeps none: SUCCESS at once).
pub fn export_pop_records(pop: &Arc<PopService>) -> Reply {
    let (log_end, written) = pop.buffer().write_all();
    tracing::info!(
        checkpoints = written,
        "exportPopRecord: pop checkpoints kept in memory written to the revive log"
    );
    let durable = pop.broker().durable_to(log_end);
    Reply::later(async move {
        let status = durable.await;
        Some(if status.is_ok() {
            success()
        } else {
            RemotingCommand::response(
                ResponseCode::SystemError,
                format!(
                    "pop checkpoints not stored as the broker's role requires: {}",
                    status.rocketmq().as_str()
                ),
            )
        })
    })
}
