//! CONSUMER_SEND_MSG_BACK (36): a consumer could not process a message; the broker
//! stores a copy in `%RETRY%<group>` with delay level 3 + reconsumeTimes (first retry
//! after 10 s), or in `%DLQ%<group>` once it has been retried `maxReconsumeTimes`
//! times (or the client asked with delayLevel < 0).

use message::id::OffsetMsgId;
use message::properties;
use message::properties::keys::{DELAY, ORIGIN_MESSAGE_ID, RETRY_TOPIC, WAIT};
use message::record::{self, Record};
use remoting::protocol::broker::ConsumerSendMsgBackRequestHeader;
use remoting::protocol::constants::{perm, system, topic_sys_flag, version};
use remoting::server::Reply;
use remoting::{RemotingCommand, ResponseCode};
use store::{MessageInner, PutMessageStatus};

use super::send::{DLQ_NUMS_PER_GROUP, delay_rewrite, random_queue};
use super::{Refusal, success};
use crate::broker::Broker;

const FAQ_TIP: &str = "\nSee http://rocketmq.apache.org/docs/faq/ for further details.";

/// Handles one send-back.
pub fn process(broker: &Broker, request: &RemotingCommand) -> Reply {
    match prepare(broker, request) {
        Ok(None) => Reply::Now(success()),
        Ok(Some(msg)) => {
            let result = broker.store.put_message(&msg);
            broker.stats.record_put(&msg.topic, &result);
            if result.status.is_ok() {
                broker.metrics.stored_maybe_dead(&msg);
            }
            // The consumer moves its offset past the original once this succeeds: the
            // copy must be as durable as a send would be (RocketMQ answers as soon as it
            // is appended). Anything short of that is refused; the client then sends the
            // copy itself.
            let durable = broker.durable(&result);
            match durable.ready() {
                Some(status) => Reply::Now(answer(status)),
                None => Reply::later(async move { Some(answer(durable.await)) }),
            }
        }
        Err(refusal) => Reply::Now(refusal.into_response()),
    }
}

/// SUCCESS once durable, else SYSTEM_ERROR naming the status (RocketMQ's answer to a
/// send-back that did not put).
fn answer(status: PutMessageStatus) -> RemotingCommand {
    if status.is_ok() {
        success()
    } else {
        Refusal::system(status.rocketmq().as_str()).into_response()
    }
}

/// The message to store, or `None` when the group keeps no retries.
fn prepare(broker: &Broker, request: &RemotingCommand) -> Result<Option<MessageInner>, Refusal> {
    let h: ConsumerSendMsgBackRequestHeader = request.decode_header()?;
    let group = broker.groups.find_or_create(&h.group).ok_or_else(|| {
        Refusal::new(
            ResponseCode::SubscriptionGroupNotExist,
            format!("subscription group not exist, {} {FAQ_TIP}", h.group),
        )
    })?;
    if !perm::is_writeable(broker.config().broker_permission) {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!(
                "the broker[{}] sending message is forbidden",
                broker.config().broker_ip1()
            ),
        ));
    }
    if group.retry_queue_nums <= 0 {
        return Ok(None);
    }
    let sys_flag = if h.unit_mode == Some(true) {
        topic_sys_flag::UNIT_SUB
    } else {
        0
    };
    let mut topic = system::retry_topic(&h.group);
    let mut queue_id = random_queue(group.retry_queue_nums);
    let retry = broker.topics.create_in_send_back(
        &topic,
        group.retry_queue_nums,
        perm::READ | perm::WRITE,
        sys_flag,
    );
    if !perm::is_writeable(retry.perm) {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("the topic[{topic}] sending message is forbidden"),
        ));
    }
    let bytes = u64::try_from(h.offset)
        .ok()
        .and_then(|o| broker.store.look_message_by_offset(o))
        .ok_or_else(|| Refusal::system(format!("look message by offset failed, {}", h.offset)))?;
    let Ok(Some(Record::Message(original))) = record::decode(&bytes) else {
        return Err(Refusal::system(format!(
            "look message by offset failed, {}",
            h.offset
        )));
    };
    let original_props = original.properties_str().into_owned();
    let mut props = original_props.clone();
    if properties::get(&props, RETRY_TOPIC).is_none() {
        props = properties::set(&props, &[(RETRY_TOPIC, original.topic)]);
    }
    props = properties::set(&props, &[(WAIT, "false")]);
    let max_reconsume = if request.header.version >= version::V3_4_9 {
        h.max_reconsume_times.unwrap_or(group.retry_max_times)
    } else {
        group.retry_max_times
    };
    let mut delay = h.delay_level;
    if original.reconsume_times >= max_reconsume || delay < 0 {
        topic = system::dlq_topic(&h.group);
        queue_id = random_queue(DLQ_NUMS_PER_GROUP);
        broker
            .topics
            .create_in_send_back(&topic, DLQ_NUMS_PER_GROUP, perm::READ | perm::WRITE, 0);
        delay = 0;
        // As RocketMQ: the dead letter carries delay level 0.
        props = properties::set(&props, &[(DELAY, "0")]);
    } else if delay == 0 {
        delay = 3 + original.reconsume_times;
    }
    if properties::get(&props, ORIGIN_MESSAGE_ID).is_none_or(str::is_empty) {
        let origin = OffsetMsgId {
            addr: original.store_host,
            offset: original.physical_offset,
        }
        .encode();
        props = properties::set(&props, &[(ORIGIN_MESSAGE_ID, &origin)]);
    }
    if delay > 0 {
        (topic, queue_id, props) = delay_rewrite(broker, &topic, queue_id, &props, delay);
    }
    Ok(Some(MessageInner {
        topic,
        queue_id,
        flag: original.flag,
        body: bytes.slice_ref(original.body),
        properties: props,
        sys_flag: original.sys_flag,
        born_timestamp: original.born_timestamp,
        born_host: original.born_host,
        store_host: original.store_host,
        reconsume_times: original.reconsume_times + 1,
        prepared_transaction_offset: 0,
    }))
}
