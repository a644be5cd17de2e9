//! SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320)
//! (RocketMQ's SendMessageProcessor): checks, topic auto-creation, retry → DLQ, delay
//! levels → SCHEDULE_TOPIC_XXXX, transactional sends → half messages, the put, and the
//! wait for flush (group commit).
//!
//! The put is synchronous and short, so it runs in the connection's request task and
//! keeps a connection's sends in order; waiting for durability is a future.

use message::properties;
use message::properties::keys::{self, CLUSTER, DELAY, MSG_REGION, REAL_QID, REAL_TOPIC, TRACE_ON};
use message::record::sys_flag;
use remoting::protocol::broker::{
    SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use remoting::protocol::constants::{perm, system, validate_topic, version};
use remoting::protocol::topic::{TopicConfig, TopicFilterType};
use remoting::server::Reply;
use remoting::{Channel, RemotingCommand, RequestCode, ResponseCode};
use store::{MessageBatch, MessageInner, PutMessageStatus, PutResult};
use tracing::debug;

use super::{Refusal, respond};
use crate::broker::Broker;
use crate::properties::SendFlags;
use crate::timer::TimerService;
use crate::topic_attributes::{PRIORITY_PROPERTY, PriorityRoute};
use crate::transaction;

/// Queues of a DLQ topic (`DLQ_NUMS_PER_GROUP`).
pub const DLQ_NUMS_PER_GROUP: i32 = 1;

/// `FAQUrl.suggestTodo(APPLY_TOPIC_URL)` as 4.9.8 writes it.
const APPLY_TOPIC_TIP: &str = "\nSee http://rocketmq.apache.org/docs/faq/ for further details.";

/// Handles one send request.
pub fn process(
    broker: &Broker,
    timer: &TimerService,
    channel: &Channel,
    request: &RemotingCommand,
) -> Reply {
    // Flow control where RocketMQ has it: a put holding the lock longer than
    // osPageCacheBusyTimeOutMills means the page cache is thrashing; refuse instead of
    // queueing behind it (the 5.x producer retries on SYSTEM_BUSY).
    if broker.store.commit_log().is_os_page_cache_busy() {
        return Reply::Now(send_response_extras(
            broker,
            Refusal::new(
                ResponseCode::SystemBusy,
                "[REJECTREQUEST]system busy, start flow control for a while",
            )
            .into_response(),
        ));
    }
    let header = match decode_header(request) {
        Ok(h) => h,
        Err(refusal) => return Reply::Now(refusal.into_response()),
    };
    let batch =
        request.code() == RequestCode::SendBatchMessage.code() || header.batch == Some(true);
    let flags = SendFlags::scan(header.properties.as_deref().unwrap_or(""));
    let prepared = match prepare(broker, timer, channel, request, &header, &flags, batch) {
        Ok(p) => p,
        Err(refusal) => return Reply::Now(send_response_extras(broker, refusal.into_response())),
    };
    let result = match &prepared {
        Prepared::One(msg, _) | Prepared::Half(msg, _) => broker.store.put_message(msg),
        Prepared::Batch(b) => broker.store.put_messages(b),
    };
    broker.stats.record_put(&header.topic, &result);
    if broker.metrics.on()
        && result.status.is_ok()
        && let Some(a) = &result.append
    {
        let kind = flags.message_type();
        broker
            .metrics
            .messages_in(&header.topic, kind, a.msg_num as u64, a.wrote_bytes as u64);
        match &prepared {
            Prepared::Half(..) => broker.metrics.half_stored(&header.topic),
            Prepared::One(msg, _) => broker.metrics.stored_maybe_dead(msg),
            Prepared::Batch(_) => {}
        }
    }
    let wait = result.status.is_ok() && flags.wait_store;
    let queue_id = prepared.queue_id();
    let unique_key = match &prepared {
        Prepared::One(..) | Prepared::Half(..) => flags.unique_key.map(str::to_owned),
        Prepared::Batch(_) => None,
    };
    let ids = Ids {
        recall_handle: match &prepared {
            Prepared::One(msg, _) => recall_handle(broker, msg),
            _ => None,
        },
        unique_key,
    };
    let base = send_response_extras(
        broker,
        RemotingCommand::response(ResponseCode::Success, None),
    );
    if !wait {
        return Reply::Now(put_response(base, &result, queue_id, ids));
    }
    // Group commit, then (SYNC_MASTER) a slave's ack: both are futures, no thread waits.
    let durable = broker.durable(&result);
    if let Some(status) = durable.ready() {
        return Reply::Now(put_response(
            base,
            &PutResult { status, ..result },
            queue_id,
            ids,
        ));
    }
    Reply::later(async move {
        let status = durable.await;
        Some(put_response(
            base,
            &PutResult { status, ..result },
            queue_id,
            ids,
        ))
    })
}

/// The send header of a send or reply: the long form for SEND_MESSAGE and
/// SEND_REPLY_MESSAGE, the one-letter form (V2) otherwise.
pub(super) fn decode_header(
    request: &RemotingCommand,
) -> Result<SendMessageRequestHeader, Refusal> {
    let code = request.code();
    if code == RequestCode::SendMessage.code() || code == RequestCode::SendReplyMessage.code() {
        Ok(request.decode_header::<SendMessageRequestHeader>()?)
    } else {
        Ok(request
            .decode_header::<SendMessageRequestHeaderV2>()?
            .into())
    }
}

/// What goes to the store.
enum Prepared {
    /// One message, and the queue the response names: the producer's, also when the
    /// message is parked (delay level, timer) in a system queue, as RocketMQ answers.
    One(MessageInner, i32),
    /// A transactional half message, and the real queue the producer chose.
    Half(MessageInner, i32),
    Batch(MessageBatch),
}

impl Prepared {
    /// The queue id the response names.
    fn queue_id(&self) -> i32 {
        match self {
            Prepared::One(_, answered) | Prepared::Half(_, answered) => *answered,
            Prepared::Batch(b) => b.queue_id,
        }
    }
}

/// MSG_REGION and TRACE_ON go on every send response, refusals included.
pub(super) fn send_response_extras(
    broker: &Broker,
    mut response: RemotingCommand,
) -> RemotingCommand {
    let config = broker.config();
    response
        .header
        .ext_fields
        .insert(MSG_REGION, config.region_id.clone());
    response
        .header
        .ext_fields
        .insert(TRACE_ON, config.trace_on.to_string());
    response
}

fn prepare(
    broker: &Broker,
    timer: &TimerService,
    channel: &Channel,
    request: &RemotingCommand,
    header: &SendMessageRequestHeader,
    flags: &SendFlags<'_>,
    batch: bool,
) -> Result<Prepared, Refusal> {
    let topic_config = check(broker, channel, header)?;
    let mut topic = header.topic.clone();
    let mut queue_id = if header.queue_id < 0 {
        random_queue(topic_config.write_queue_nums)
    } else {
        header.queue_id
    };
    // As RocketMQ's buildMsgContext: every stored message carries the region and the
    // trace switch (and the response repeats them).
    let props = {
        let config = broker.config();
        let trace = if config.trace_on { "true" } else { "false" };
        properties::set(
            header.properties.as_deref().unwrap_or(""),
            &[
                (MSG_REGION, config.region_id.as_str()),
                (TRACE_ON, trace),
                (CLUSTER, config.broker_cluster_name.as_str()),
            ],
        )
    };
    let reconsume_times = header.reconsume_times.unwrap_or(0);
    let mut delay = flags.delay_level;
    // A message sent to a retry topic too often goes to the group's DLQ.
    if let Some(group) = topic.strip_prefix(system::RETRY_GROUP_TOPIC_PREFIX) {
        let group_config = broker.groups.find_or_create(group).ok_or_else(|| {
            Refusal::new(
                ResponseCode::SubscriptionGroupNotExist,
                format!("subscription group not exist, {group}{APPLY_TOPIC_TIP}"),
            )
        })?;
        let max = if request.header.version >= version::V3_4_9 {
            header
                .max_reconsume_times
                .unwrap_or(group_config.retry_max_times)
        } else {
            group_config.retry_max_times
        };
        if reconsume_times >= max {
            let dlq = system::dlq_topic(group);
            broker.topics.create_in_send_back(
                &dlq,
                DLQ_NUMS_PER_GROUP,
                perm::READ | perm::WRITE,
                0,
            );
            topic = dlq;
            queue_id = random_queue(DLQ_NUMS_PER_GROUP);
            delay = 0;
        }
    }
    let mut sys = header.sys_flag;
    if topic_config.topic_filter_type == TopicFilterType::MultiTag {
        sys |= sys_flag::MULTI_TAGS;
    }
    let born_host = channel.peer_addr();
    let store_host = broker.store_host();
    let body = request.body.to_bytes();
    if batch {
        if topic.starts_with(system::RETRY_GROUP_TOPIC_PREFIX) {
            return Err(Refusal::new(
                ResponseCode::MessageIllegal,
                format!("batch request does not support retry group {topic}"),
            ));
        }
        return Ok(Prepared::Batch(MessageBatch {
            topic,
            queue_id,
            sys_flag: sys,
            born_timestamp: header.born_timestamp,
            born_host,
            store_host,
            reconsume_times,
            body,
            properties: props,
        }));
    }
    let transaction =
        sys_flag::transaction_type(sys) == sys_flag::TRANSACTION_PREPARED_TYPE || flags.transaction;
    if transaction && broker.config().reject_transaction_message {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!(
                "the broker[{}] sending transaction message is forbidden",
                broker.config().broker_ip1()
            ),
        ));
    }
    let mut properties = props;
    // RocketMQ 5.4: a priority message goes to the queue of its priority (the client's
    // choice is overruled); a priority on another kind of message is dropped.
    match crate::topic_attributes::priority_route(&properties, topic_config.write_queue_nums) {
        PriorityRoute::Queue(q) => queue_id = q,
        PriorityRoute::None => {}
        PriorityRoute::Drop => {
            properties = properties::without(&properties, &[PRIORITY_PROPERTY]);
        }
    }
    let answered_queue = queue_id;
    // A timer message is parked for the wheel; a half message is parked at its commit.
    if !transaction && crate::timer::is_timer_message(&topic, flags, delay) {
        if let Some(parked) = park_timer(timer, &topic, queue_id, &properties)? {
            (topic, queue_id, properties) = (parked.topic, parked.queue_id, parked.properties);
        }
    }
    // A half message is never parked: RocketMQ's store would park it (its sysFlag is
    // NOT_TYPE by then) and overwrite REAL_TOPIC with the half topic, so its commit
    // would never reach the real topic. The Java producer drops DELAY from
    // transactional messages anyway; a DELAY that gets here applies at commit.
    if delay > 0 && !transaction {
        (topic, queue_id, properties) = delay_rewrite(broker, &topic, queue_id, &properties, delay);
    }
    let msg = MessageInner {
        topic,
        queue_id,
        flag: header.flag,
        body,
        properties,
        sys_flag: sys,
        born_timestamp: header.born_timestamp,
        born_host,
        store_host,
        reconsume_times,
        prepared_transaction_offset: 0,
    };
    if transaction {
        // The response names the real queue, as RocketMQ's does.
        return Ok(Prepared::Half(transaction::half_message(msg), queue_id));
    }
    Ok(Prepared::One(msg, answered_queue))
}

/// Parks a timer message for the wheel (see [`crate::timer::park`]); `None` when it is
/// due already.
///
/// # Errors
/// RocketMQ's refusals of a timer message.
pub fn park_timer(
    timer: &TimerService,
    topic: &str,
    queue_id: i32,
    properties: &str,
) -> Result<Option<crate::timer::Parked>, Refusal> {
    Ok(crate::timer::park(
        timer.settings(),
        topic,
        queue_id,
        properties,
        crate::clock::now_ms(),
        |out| timer.congestion(out),
    )?)
}

/// Parks a message with delay `level` in SCHEDULE_TOPIC_XXXX: queue `level − 1`
/// (clamped to the highest level), the real topic and queue kept in REAL_TOPIC /
/// REAL_QID. Timer properties go: the level wins (RocketMQ's `checkIfTimerMessage`
/// clears them), so a retry of a delivered timer message is not timed again. Returns the
/// new topic, queue and properties.
#[must_use]
pub fn delay_rewrite(
    broker: &Broker,
    topic: &str,
    queue_id: i32,
    properties: &str,
    level: i32,
) -> (String, i32, String) {
    let max_level = i32::try_from(broker.store.delay_levels().len()).unwrap_or(i32::MAX);
    let level = level.clamp(1, max_level);
    let untimed = properties::without(
        properties,
        &[
            keys::TIMER_DELIVER_MS,
            keys::TIMER_DELAY_SEC,
            keys::TIMER_DELAY_MS,
        ],
    );
    let props = properties::set(
        &untimed,
        &[
            (REAL_TOPIC, topic),
            (REAL_QID, &queue_id.to_string()),
            (DELAY, &level.to_string()),
        ],
    );
    (system::SCHEDULE_TOPIC.to_owned(), level - 1, props)
}

/// RocketMQ's `msgCheck`: broker and topic permissions, topic name, auto-creation,
/// queue id range.
pub(super) fn check(
    broker: &Broker,
    channel: &Channel,
    header: &SendMessageRequestHeader,
) -> Result<TopicConfig, Refusal> {
    let config = broker.config();
    if !perm::is_writeable(config.broker_permission)
        && broker.topics.select(&header.topic).is_some_and(|t| t.order)
    {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!(
                "the broker[{}] sending message is forbidden",
                config.broker_ip1()
            ),
        ));
    }
    drop(config);
    if let Err(e) = validate_topic(&header.topic) {
        return Err(Refusal::system(e.to_string()));
    }
    if system::is_send_forbidden(&header.topic) {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("Sending message to topic[{}] is forbidden.", header.topic),
        ));
    }
    let topic_config = match broker.topics.select(&header.topic) {
        Some(t) => t,
        None => {
            let remote = channel.peer_addr().to_string();
            let (created, _) = broker.topics.create_in_send(
                &header.topic,
                &header.default_topic,
                &remote,
                header.default_topic_queue_nums,
                0,
            );
            let created = created.or_else(|| {
                header
                    .topic
                    .starts_with(system::RETRY_GROUP_TOPIC_PREFIX)
                    .then(|| {
                        broker.topics.create_in_send_back(
                            &header.topic,
                            1,
                            perm::READ | perm::WRITE,
                            0,
                        )
                    })
            });
            created.ok_or_else(|| {
                Refusal::new(
                    ResponseCode::TopicNotExist,
                    format!(
                        "topic[{}] not exist, apply first please!{APPLY_TOPIC_TIP}",
                        header.topic
                    ),
                )
            })?
        }
    };
    let valid = topic_config
        .write_queue_nums
        .max(topic_config.read_queue_nums);
    if header.queue_id >= valid {
        return Err(Refusal::system(format!(
            "request queueId[{}] is illegal, {:?} Producer: {}",
            header.queue_id,
            topic_config,
            channel.peer_addr()
        )));
    }
    Ok(topic_config)
}

/// A random queue id below `queues`.
#[must_use]
pub fn random_queue(queues: i32) -> i32 {
    if queues <= 0 {
        return 0;
    }
    let r = crate::clock::random_u32() % 99_999_999;
    i32::try_from(r).unwrap_or(0) % queues
}

/// The ids a send response names besides the offset message id.
pub(crate) struct Ids {
    /// `UNIQ_KEY` (the transaction id clients show).
    pub unique_key: Option<String>,
    /// A parked timer message's recall handle.
    pub recall_handle: Option<String>,
}

/// RocketMQ's `attachRecallHandle`: a message parked for the timer wheel (not a retry)
/// answers the handle that recalls it — its real topic, this broker, `TIMER_OUT_MS` + 1
/// and its `UNIQ_KEY`.
fn recall_handle(broker: &Broker, msg: &MessageInner) -> Option<String> {
    use message::properties::keys::{TIMER_OUT_MS, UNIQ_KEY};
    if msg.topic != crate::timer::TIMER_TOPIC {
        return None;
    }
    let [out, real, uniq] =
        properties::get_many(&msg.properties, [TIMER_OUT_MS, REAL_TOPIC, UNIQ_KEY]);
    let real = real.filter(|t| !t.starts_with(system::RETRY_GROUP_TOPIC_PREFIX))?;
    let timestamp = out?.parse::<i64>().ok()?.checked_add(1)?;
    Some(
        remoting::protocol::timer::RecallHandle {
            topic: real.to_owned(),
            broker_name: broker.config().broker_name.clone(),
            timestamp: timestamp.to_string(),
            message_id: uniq.unwrap_or("").to_owned(),
        }
        .encode(),
    )
}

/// Turns a put result into the send response (`handlePutMessageResult`).
pub(crate) fn put_response(
    mut response: RemotingCommand,
    result: &PutResult,
    queue_id: i32,
    ids: Ids,
) -> RemotingCommand {
    let (code, remark) = status_response(result.status);
    response.header.code = code.code();
    response.header.remark = remark.map(str::to_owned);
    let stored = matches!(
        code,
        ResponseCode::Success
            | ResponseCode::FlushDiskTimeout
            | ResponseCode::FlushSlaveTimeout
            | ResponseCode::SlaveNotAvailable
    );
    if let (true, Some(append)) = (stored, &result.append) {
        let header = SendMessageResponseHeader {
            msg_id: append.msg_id(),
            queue_id,
            queue_offset: i64::try_from(append.queue_offset.0).unwrap_or(i64::MAX),
            // As 5.x: the UNIQ_KEY (clients show it as the transaction id).
            transaction_id: ids.unique_key,
            batch_uniq_id: None,
            recall_handle: ids.recall_handle,
        };
        response = response.with_header(&header);
    } else {
        debug!(status = %result.status, "put refused");
    }
    response
}

/// The response code and remark of a put's final status (`handlePutMessageResult`).
pub(crate) fn status_response(status: PutMessageStatus) -> (ResponseCode, Option<&'static str>) {
    match status.rocketmq() {
        PutMessageStatus::PutOk => (ResponseCode::Success, None),
        PutMessageStatus::FlushDiskTimeout => (ResponseCode::FlushDiskTimeout, None),
        PutMessageStatus::FlushSlaveTimeout => (ResponseCode::FlushSlaveTimeout, None),
        PutMessageStatus::SlaveNotAvailable => (ResponseCode::SlaveNotAvailable, None),
        PutMessageStatus::CreateMappedFileFailed => (
            ResponseCode::SystemError,
            Some("create mapped file failed, server is busy or broken."),
        ),
        PutMessageStatus::MessageIllegal | PutMessageStatus::PropertiesSizeExceeded => (
            ResponseCode::MessageIllegal,
            Some(
                "the message is illegal, maybe msg body or properties length not matched. msg body length limit 4M, msg properties length limit 32k.",
            ),
        ),
        PutMessageStatus::ServiceNotAvailable => (
            ResponseCode::ServiceNotAvailable,
            Some(
                "service not available now. It may be caused by one of the following reasons: the broker's disk is full, messages are put to the slave, message store has been shut down, etc.",
            ),
        ),
        PutMessageStatus::OsPageCacheBusy => (
            ResponseCode::SystemError,
            Some("[PC_SYNCHRONIZED]broker busy, start flow control for a while"),
        ),
        _ => (ResponseCode::SystemError, Some("UNKNOWN_ERROR")),
    }
}

/// Respond to a send that could not even be decoded.
#[must_use]
pub fn refuse(broker: &Broker, refusal: Refusal) -> RemotingCommand {
    send_response_extras(broker, respond(Err(refusal)))
}
