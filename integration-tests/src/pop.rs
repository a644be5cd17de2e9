//! POP over the remoting protocol as a RocketMQ 5 client does it
//! (`MQClientAPIImpl.popMessageAsync` / `ackMessageAsync`): the requests, and the
//! messages of a response with the receipts a client builds from its header, and the acks
//! (one ACK_MESSAGE per message, or one BATCH_ACK_MESSAGE of many).

use bytes::Bytes;
use message::properties;
use message::properties::keys::UNIQ_KEY;
use message::record::{self, Record};
use remoting::fastjson::{self, KeyStyle};
use remoting::protocol::pop::{
    AckMessageRequestHeader, BatchAckMessageRequestBody, ExtraInfo, POP_CK,
    PopMessageRequestHeader, PopMessageResponseHeader, RetryFlag, parse_msg_offset_info,
    parse_start_offset_info,
};
use remoting::{RemotingCommand, RequestCode, ResponseCode};

/// One popped message with its receipt.
#[derive(Debug, Clone)]
pub struct PoppedMessage {
    /// The receipt (`POP_CK`).
    pub extra: ExtraInfo,
    /// The topic to ack on (the retry topic for a retried message).
    pub ack_topic: String,
    /// The queue to ack on.
    pub queue_id: i32,
    /// The queue offset to ack.
    pub offset: i64,
    /// The body (a slice of the response).
    pub body: Bytes,
    /// Deliveries before this one.
    pub reconsume_times: i32,
    /// The producer's message id (`UNIQ_KEY`), kept by a redelivery.
    pub uniq_key: Option<String>,
}

/// A POP_MESSAGE of `group` on `topic` (queue −1: every queue), TAG `*`, init mode MIN.
#[must_use]
pub fn pop_request(
    group: &str,
    topic: &str,
    max: i32,
    invisible_ms: i64,
    poll_ms: i64,
    now_ms: i64,
) -> RemotingCommand {
    RemotingCommand::request_with(
        RequestCode::PopMessage,
        &PopMessageRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id: -1,
            max_msg_nums: max,
            invisible_time: invisible_ms,
            poll_time: poll_ms,
            born_time: Some(now_ms),
            init_mode: 0,
            exp_type: Some("TAG".into()),
            exp: Some("*".into()),
            order: Some(false),
            attempt_id: None,
        },
    )
}

/// The messages of a pop response (none unless it is SUCCESS) from `broker_name`.
///
/// # Errors
/// The header or body does not parse.
pub fn popped(
    response: &RemotingCommand,
    group: &str,
    broker_name: &str,
) -> Result<Vec<PoppedMessage>, String> {
    if response.code() != ResponseCode::Success.code() {
        return Ok(Vec::new());
    }
    let h: PopMessageResponseHeader = response.decode_header().map_err(|e| e.to_string())?;
    let starts = parse_start_offset_info(h.start_offset_info.as_deref().unwrap_or(""))
        .map_err(|e| e.to_string())?;
    let msgs = parse_msg_offset_info(h.msg_offset_info.as_deref().unwrap_or(""))
        .map_err(|e| e.to_string())?;
    let body = response.body.to_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    // The offset-info key of the last message's queue (most pops read one or two).
    let mut last_key: Option<(RetryFlag, i32, String)> = None;
    while at < body.len() {
        let Ok(Some(Record::Message(m))) = record::decode(&body[at..]) else {
            return Err(format!("pop body does not decode at {at}"));
        };
        // Where the body lies in the response, to hand it out without a copy.
        let body_at = at + (m.body.as_ptr().addr() - body[at..].as_ptr().addr());
        at += m.total_size as usize;
        let props = m.properties_str();
        let offset = i64::try_from(m.queue_offset).map_err(|e| e.to_string())?;
        let extra = match properties::get(&props, POP_CK) {
            Some(ck) => ExtraInfo::parse(ck).map_err(|e| e.to_string())?,
            None => {
                let flag = RetryFlag::of_topic(m.topic);
                let key = match &last_key {
                    Some((f, q, k)) if *f == flag && *q == m.queue_id => k.as_str(),
                    _ => {
                        let k = format!("{}@{}", flag.as_str(), m.queue_id);
                        &last_key.insert((flag, m.queue_id, k)).2
                    }
                };
                if !msgs.get(key).is_some_and(|o| o.contains(&offset)) {
                    return Err(format!("offset {offset} not in msgOffsetInfo {key}"));
                }
                ExtraInfo {
                    ck_queue_offset: *starts.get(key).ok_or("no startOffsetInfo")?,
                    pop_time: h.pop_time,
                    invisible_time: h.invisible_time,
                    revive_qid: h.revive_qid,
                    retry: flag,
                    broker_name: broker_name.into(),
                    queue_id: m.queue_id,
                    queue_offset: Some(offset),
                }
            }
        };
        out.push(PoppedMessage {
            ack_topic: extra.real_topic(m.topic, group),
            queue_id: extra.queue_id,
            offset: extra.queue_offset.unwrap_or(offset),
            extra,
            body: body.slice(body_at..body_at + m.body.len()),
            reconsume_times: m.reconsume_times,
            uniq_key: properties::get(&props, UNIQ_KEY).map(str::to_owned),
        });
    }
    Ok(out)
}

/// An ACK_MESSAGE of `m`.
#[must_use]
pub fn ack_request(group: &str, m: &PoppedMessage) -> RemotingCommand {
    RemotingCommand::request_with(
        RequestCode::AckMessage,
        &AckMessageRequestHeader {
            consumer_group: group.into(),
            topic: m.ack_topic.clone(),
            queue_id: m.queue_id,
            extra_info: m.extra.encode(),
            offset: m.offset,
        },
    )
}

/// A BATCH_ACK_MESSAGE of `messages` of `topic` (the original topic, as the 5.3.3 client
/// names it: each handle's retry flag says which topic was read), grouped by pop and queue.
///
/// # Errors
/// A handle without a queue offset at or above its checkpoint's start, or a body that does
/// not encode.
pub fn batch_ack_request(
    group: &str,
    topic: &str,
    messages: &[PoppedMessage],
) -> Result<RemotingCommand, String> {
    let handles: Vec<ExtraInfo> = messages.iter().map(|m| m.extra.clone()).collect();
    let body = BatchAckMessageRequestBody::from_handles(group, topic, &handles)
        .map_err(|e| e.to_string())?;
    let bytes = fastjson::to_vec(&body, KeyStyle::Fastjson).map_err(|e| e.to_string())?;
    Ok(RemotingCommand::request(RequestCode::BatchAckMessage).with_body(bytes))
}
