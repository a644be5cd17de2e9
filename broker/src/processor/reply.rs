//! SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325) (RocketMQ's
//! ReplyMessageProcessor): request-reply. A requester (`DefaultMQProducer.request`) sends
//! an ordinary message carrying its client id in REPLY_TO_CLIENT; the responder answers
//! with a reply to `<cluster>_REPLY_TOPIC`, which the broker pushes to the requester's
//! connection (PUSH_REPLY_MESSAGE_TO_CLIENT, 326, found by that client id among the
//! producers' heartbeats) and, with `storeReplyMessageEnable`, stores in the reply topic.
//!
//! Success means both: the requester took the push, and the stored copy (when kept) is
//! durable as the role requires. Apache answers SUCCESS once the push succeeded, whatever
//! the put did; here a failed put answers its own code, so SUCCESS always means "delivered
//! and kept". A failed push answers SYSTEM_ERROR with Apache's remark, stored or not.

use std::time::Duration;

use message::properties;
use message::properties::keys::{PUSH_REPLY_TIME, REPLY_TO_CLIENT};
use remoting::protocol::broker::{
    ReplyMessageRequestHeader, SendMessageRequestHeader, SendMessageResponseHeader,
};
use remoting::server::Reply;
use remoting::{Body, Channel, RemotingCommand, RequestCode, ResponseCode};
use store::{MessageInner, PutResult};
use tracing::warn;

use super::send::{self, Ids};
use crate::broker::Broker;
use crate::clock::now_ms;
use crate::properties::SendFlags;

/// How long the requester has to answer the push (`Broker2Client.callClient`).
const PUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// Handles one reply.
pub fn process(broker: &Broker, channel: &Channel, request: &RemotingCommand) -> Reply {
    let header = match send::decode_header(request) {
        Ok(h) => h,
        Err(refusal) => return Reply::Now(send::refuse(broker, refusal)),
    };
    let topic_config = match send::check(broker, channel, &header) {
        Ok(t) => t,
        Err(refusal) => return Reply::Now(send::refuse(broker, refusal)),
    };
    let queue_id = if header.queue_id < 0 {
        send::random_queue(topic_config.write_queue_nums)
    } else {
        header.queue_id
    };
    let props = header.properties.clone().unwrap_or_default();
    let stored = broker.config().store_reply_message_enable.then(|| {
        let msg = MessageInner {
            topic: header.topic.clone(),
            queue_id,
            flag: header.flag,
            body: request.body.to_bytes(),
            properties: props.clone(),
            sys_flag: header.sys_flag,
            born_timestamp: header.born_timestamp,
            born_host: channel.peer_addr(),
            store_host: broker.store_host(),
            reconsume_times: header.reconsume_times.unwrap_or(0),
            prepared_transaction_offset: 0,
        };
        let result = broker.store.put_message(&msg);
        broker.stats.record_put(&header.topic, &result);
        result
    });
    let durable = stored
        .as_ref()
        .filter(|r| r.status.is_ok() && SendFlags::scan(&props).wait_store)
        .map(|r| broker.durable(r));
    let push = push(
        broker,
        channel,
        &header,
        queue_id,
        &props,
        request.body.clone(),
    );
    let base = send::send_response_extras(
        broker,
        RemotingCommand::response(ResponseCode::Success, None),
    );
    Reply::later(async move {
        let pushed = match push {
            Ok((target, command, client_id)) => deliver(&target, command, &client_id).await,
            Err(remark) => Err(remark),
        };
        let stored = match (stored, durable) {
            (Some(result), Some(durable)) => Some(PutResult {
                status: durable.await,
                ..result
            }),
            (stored, _) => stored,
        };
        Some(respond(base, pushed, stored.as_ref(), queue_id))
    })
}

/// The push to the requester, ready to go, or why there is none.
fn push(
    broker: &Broker,
    from: &Channel,
    header: &SendMessageRequestHeader,
    queue_id: i32,
    props: &str,
    body: Body,
) -> Result<(Channel, RemotingCommand, String), String> {
    let Some(client_id) = properties::get(props, REPLY_TO_CLIENT) else {
        warn!("{REPLY_TO_CLIENT} is null, can not reply message");
        return Err(format!(
            "reply message properties[{REPLY_TO_CLIENT}] is null"
        ));
    };
    let Some(target) = broker.producers.find_channel(client_id) else {
        let remark = format!("push reply message fail, channel of <{client_id}> not found.");
        warn!("{remark}");
        return Err(remark);
    };
    let now = now_ms();
    let push_header = ReplyMessageRequestHeader {
        producer_group: header.producer_group.clone(),
        topic: header.topic.clone(),
        default_topic: header.default_topic.clone(),
        default_topic_queue_nums: header.default_topic_queue_nums,
        queue_id,
        sys_flag: header.sys_flag,
        born_timestamp: header.born_timestamp,
        flag: header.flag,
        properties: Some(properties::set(
            props,
            &[(PUSH_REPLY_TIME, &now.to_string())],
        )),
        reconsume_times: header.reconsume_times,
        unit_mode: header.unit_mode.unwrap_or(false),
        born_host: from.peer_addr().to_string(),
        store_host: broker.store_host().to_string(),
        store_timestamp: now,
    };
    let command =
        RemotingCommand::request_with(RequestCode::PushReplyMessageToClient, &push_header)
            .with_body(body);
    Ok((target, command, client_id.to_owned()))
}

/// Pushes the reply and waits for the requester's answer.
async fn deliver(
    target: &Channel,
    command: RemotingCommand,
    client_id: &str,
) -> Result<(), String> {
    let failed = || format!("push reply message to {client_id}fail.");
    match target.invoke(command, PUSH_TIMEOUT).await {
        Ok(answer) if answer.header.code == ResponseCode::Success.code() => Ok(()),
        Ok(answer) => {
            warn!(client_id, remark = ?answer.header.remark, "push reply message returned a failure");
            Err(failed())
        }
        Err(e) => {
            warn!(client_id, error = %e, "push reply message failed");
            Err(failed())
        }
    }
}

/// The responder's answer: the push's failure first (as Apache), then the put's.
fn respond(
    base: RemotingCommand,
    pushed: Result<(), String>,
    stored: Option<&PutResult>,
    queue_id: i32,
) -> RemotingCommand {
    if let Err(remark) = pushed {
        let mut response = base;
        response.header.code = ResponseCode::SystemError.code();
        response.header.remark = Some(remark);
        return response;
    }
    match stored {
        Some(result) => send::put_response(
            base,
            result,
            queue_id,
            Ids {
                unique_key: None,
                recall_handle: None,
            },
        ),
        // Not stored: nothing to name ("0" keeps the client's decoder happy, as Apache).
        None => base.with_header(&SendMessageResponseHeader {
            msg_id: "0".to_owned(),
            queue_id,
            queue_offset: 0,
            transaction_id: None,
            batch_uniq_id: None,
            recall_handle: None,
        }),
    }
}
