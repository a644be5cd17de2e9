//! RECALL_MESSAGE (370, RocketMQ 5.x): recalls a timer message not yet delivered, by the
//! handle its send answered. As RocketMQ does it (`RecallMessageProcessor`): a marker
//! message — `TIMER_DEL_UNIQKEY` = `<topic>+<UNIQ_KEY>`, due at the same time — is parked
//! in the wheel like the message; the timer service, loading that slot, drops the
//! message the marker names and never delivers the marker itself.
//!
//! One difference: RocketMQ answers SUCCESS even when the marker could not be flushed or
//! replicated in time. sluice answers what happened (FLUSH_DISK_TIMEOUT,
//! SLAVE_NOT_AVAILABLE, ...), since the recall may then be lost with the master.

use message::properties;
use message::properties::keys::{PGROUP, TAGS, TIMER_DEL_UNIQKEY, TIMER_DELIVER_MS, UNIQ_KEY};
use remoting::protocol::constants::perm;
use remoting::protocol::timer::{
    RecallHandle, RecallMessageRequestHeader, RecallMessageResponseHeader,
};
use remoting::server::Reply;
use remoting::{Channel, RemotingCommand, ResponseCode};
use store::{MessageInner, PutResult};

use super::Refusal;
use super::send::{park_timer, status_response};
use crate::broker::Broker;
use crate::timer::TimerService;

/// The tag of a recall marker (`RECALL_MESSAGE_TAG`).
const RECALL_TAG: &str = "_RECALL_TAG_";

/// Handles RECALL_MESSAGE.
pub fn process(
    broker: &Broker,
    timer: &TimerService,
    channel: &Channel,
    request: &RemotingCommand,
) -> Reply {
    let (marker, message_id) = match prepare(broker, timer, channel, request) {
        Ok(m) => m,
        Err(refusal) => return Reply::Now(refusal.into_response()),
    };
    let result = broker.store.put_message(&marker);
    broker.stats.record_put(&marker.topic, &result);
    if !result.status.is_ok() {
        return Reply::Now(
            Refusal::new(ResponseCode::SystemError, "recall failed, execute error").into_response(),
        );
    }
    let durable = broker.durable(&result);
    if let Some(status) = durable.ready() {
        return Reply::Now(answer(&PutResult { status, ..result }, message_id));
    }
    Reply::later(async move {
        let status = durable.await;
        Some(answer(&PutResult { status, ..result }, message_id))
    })
}

fn answer(result: &PutResult, message_id: String) -> RemotingCommand {
    let (code, _) = status_response(result.status);
    if code != ResponseCode::Success {
        return RemotingCommand::response(
            code,
            Some(format!(
                "recall stored but not {} yet ({}); it may still be lost",
                if code == ResponseCode::FlushDiskTimeout {
                    "flushed"
                } else {
                    "replicated"
                },
                code.name()
            )),
        );
    }
    RemotingCommand::response(ResponseCode::Success, None).with_header(
        &RecallMessageResponseHeader {
            msg_id: Some(message_id),
        },
    )
}

/// RocketMQ's checks, then the parked marker and the recalled message's id.
fn prepare(
    broker: &Broker,
    timer: &TimerService,
    channel: &Channel,
    request: &RemotingCommand,
) -> Result<(MessageInner, String), Refusal> {
    let h: RecallMessageRequestHeader = request.decode_header()?;
    let unavailable = || {
        Refusal::new(
            ResponseCode::ServiceNotAvailable,
            "recall failed, broker service not available",
        )
    };
    {
        let config = broker.config();
        if !config.recall_message_enable {
            return Err(Refusal::new(
                ResponseCode::NoPermission,
                "recall failed, operation is forbidden",
            ));
        }
        if !config.broker_role.is_master() {
            return Err(Refusal::new(
                ResponseCode::SlaveNotAvailable,
                "recall failed, broker service not available",
            ));
        }
        if !perm::is_writeable(config.broker_permission)
            && !config.allow_recall_when_broker_not_writeable
        {
            return Err(unavailable());
        }
    }
    if broker.topics.select(&h.topic).is_none() {
        return Err(Refusal::new(
            ResponseCode::TopicNotExist,
            format!("recall failed, the topic[{}] not exist", h.topic),
        ));
    }
    let handle = RecallHandle::decode(&h.recall_handle)
        .map_err(|e| Refusal::new(ResponseCode::IllegalOperation, e.to_string()))?;
    if handle.topic != h.topic {
        return Err(Refusal::new(
            ResponseCode::IllegalOperation,
            "recall failed, topic not match",
        ));
    }
    if handle.broker_name != broker.config().broker_name {
        return Err(Refusal::new(
            ResponseCode::IllegalOperation,
            "recall failed, broker service not available",
        ));
    }
    let now = crate::clock::now_ms();
    let left = handle.timestamp.parse::<i64>().unwrap_or(-1) - now;
    if left <= 0 || left >= timer.settings().max_delay_sec.saturating_mul(1000) {
        return Err(Refusal::new(
            ResponseCode::IllegalOperation,
            "recall failed, timestamp invalid",
        ));
    }
    let props = properties::set(
        "",
        &[
            (TAGS, RECALL_TAG),
            (
                TIMER_DEL_UNIQKEY,
                &format!("{}+{}", handle.topic, handle.message_id),
            ),
            (UNIQ_KEY, &handle.message_id),
            (TIMER_DELIVER_MS, &handle.timestamp),
            (PGROUP, h.producer_group.as_deref().unwrap_or("")),
        ],
    );
    let parked = park_timer(timer, &handle.topic, 0, &props)?.ok_or_else(|| {
        Refusal::new(
            ResponseCode::IllegalOperation,
            "recall failed, timestamp invalid",
        )
    })?;
    let marker = MessageInner {
        topic: parked.topic,
        queue_id: parked.queue_id,
        flag: 0,
        body: bytes::Bytes::from_static(b"0"),
        properties: parked.properties,
        sys_flag: 0,
        born_timestamp: now,
        born_host: channel.peer_addr(),
        store_host: broker.store_host(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    };
    Ok((marker, handle.message_id))
}
