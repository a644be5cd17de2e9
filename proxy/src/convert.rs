//! gRPC messages to RocketMQ messages and back: what a 5.x SDK sends becomes the properties,
//! sys flag and body a broker stores, as Apache's proxy builds them
//! (`SendMessageActivity.buildMessageProperty`, `ProducerProcessor
//! .buildSendMessageRequestHeader`); the broker's answer becomes the send's result entries;
//! a route becomes QueryRoute's queues (`RouteActivity`); a stored message becomes the gRPC
//! message a consumer receives or a transaction check carries (`GrpcConverter.buildMessage`,
//! [`stored_message`]).
//!
//! A published message's properties:
//!
//! | gRPC | property |
//! |---|---|
//! | `user_properties` | themselves (none of RocketMQ's reserved names) |
//! | `system_properties.tag` | `TAGS` |
//! | `keys` | `KEYS`, space-separated |
//! | `message_id` | `UNIQ_KEY` (required) |
//! | `message_type` TRANSACTION | `TRAN_MSG=true`, `orphaned_transaction_recovery_duration` → `CHECK_IMMUNITY_TIME_IN_SECONDS` |
//! | `delivery_timestamp` | `TIMER_DELIVER_MS` (epoch ms) |
//! | `delivery_attempt` (0 when absent) | `RECONSUME_TIME` |
//! | the producer group (the topic's name, as Apache uses) | `PGROUP` |
//! | `message_group` | `__SHARDINGKEY` |
//! | `trace_context` | `TRACE_CONTEXT` |
//! | `born_host`, else the client's address | `__BORNHOST` |
//! | `born_timestamp` | `BORN_TIMESTAMP` (epoch ms; also the request's born time) |
//! | `priority` (RocketMQ 5.4) | `_SYS_MSG_PRIORITY_` |
//!
//! `body_encoding` GZIP sets the COMPRESSED sys flag, TRANSACTION the prepared one.

use bytes::{Bytes, BytesMut};
use message::id::hex_upper;
use message::properties::{self, keys};
use message::record::{StoredMessage, sys_flag};
use remoting::protocol::broker::{SendMessageRequestHeaderV2, SendMessageResponseHeader};
use remoting::protocol::constants::{perm, system};
use remoting::{RemotingCommand, RequestCode, ResponseCode};

use crate::metadata::TopicMessageType;
use sha1::{Digest as _, Sha1};

use crate::pb::{self, Code, DigestType, Encoding, MessageType, Permission};
use crate::route::TopicRoute;
use crate::status::{self, Refusal};

/// What a published message may be (Apache's `ProxyConfig` defaults, same names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `maxMessageSize`: largest body, bytes (4 MiB; 0: no limit).
    pub max_message_size: usize,
    /// `enableMessageBodyEmptyCheck`: an empty body is refused (true).
    pub enable_message_body_empty_check: bool,
    /// `maxUserPropertySize`: user properties, tag and keys together, bytes (16 KiB).
    pub max_user_property_size: usize,
    /// `userPropertyMaxNum`: user properties per message (128).
    pub user_property_max_num: usize,
    /// `maxMessageGroupSize`: a message group is shorter than this, bytes (64; 0: no limit).
    pub max_message_group_size: usize,
    /// `maxDelayTimeMills`: furthest delivery time from now, ms (1 day; 0: no limit).
    pub max_delay_time_mills: i64,
    /// `maxTransactionRecoverySecond`: longest orphaned-transaction recovery (1 h; 0: none).
    pub max_transaction_recovery_second: i64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_size: 4 * 1024 * 1024,
            enable_message_body_empty_check: true,
            max_user_property_size: 16 * 1024,
            user_property_max_num: 128,
            max_message_group_size: 64,
            max_delay_time_mills: 24 * 3600 * 1000,
            max_transaction_recovery_second: 3600,
        }
    }
}

/// One message ready for the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// Its topic.
    pub topic: String,
    /// Body, as the client sent it.
    pub body: Bytes,
    /// The properties string.
    pub properties: String,
    /// COMPRESSED / TRANSACTION_PREPARED bits.
    pub sys_flag: i32,
    /// `UNIQ_KEY`: the message id the client chose.
    pub uniq_key: String,
    /// `__SHARDINGKEY`.
    pub message_group: Option<String>,
    /// `BORN_TIMESTAMP`.
    pub born_timestamp: Option<i64>,
}

impl Outgoing {
    /// What the properties make it.
    #[must_use]
    pub fn kind(&self) -> TopicMessageType {
        TopicMessageType::of_message(&self.properties)
    }
}

fn bad(code: Code, message: impl Into<String>) -> Refusal {
    Refusal::new(code, message)
}

fn has_control(text: &str) -> bool {
    // Guava's CharMatcher.javaIsoControl: U+0000..=U+001F and U+007F..=U+009F, which is
    // Rust's Cc.
    text.chars().any(char::is_control)
}

fn timestamp_ms(t: &prost_types::Timestamp) -> i64 {
    t.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(t.nanos / 1_000_000))
}

/// `t` as Apache's `Timestamps.isValid` sees it.
fn valid_timestamp(t: &prost_types::Timestamp) -> bool {
    // 0001-01-01T00:00:00Z ..= 9999-12-31T23:59:59Z
    (-62_135_596_800..=253_402_300_799).contains(&t.seconds)
        && (0..1_000_000_000).contains(&t.nanos)
}

/// Builds the RocketMQ message of `message` for `producer_group`; `peer` is the client's
/// `ip:port` (the born host when the message names none), `now_ms` the proxy's clock.
///
/// # Errors
/// The code and message Apache's proxy refuses the message with.
pub fn outgoing(
    message: &pb::Message,
    producer_group: &str,
    peer: Option<&str>,
    now_ms: i64,
    limits: &Limits,
) -> Result<Outgoing, Refusal> {
    let topic = message
        .topic
        .as_ref()
        .map(|t| t.name.clone())
        .unwrap_or_default();
    let body = &message.body;
    if limits.enable_message_body_empty_check && body.is_empty() {
        return Err(bad(Code::MessageBodyEmpty, "message body cannot be empty"));
    }
    if limits.max_message_size > 0 && body.len() > limits.max_message_size {
        return Err(bad(
            Code::MessageBodyTooLarge,
            format!(
                "message body cannot exceed the max {}",
                limits.max_message_size
            ),
        ));
    }
    let default_props = pb::SystemProperties::default();
    let sys = message.system_properties.as_ref().unwrap_or(&default_props);

    let mut props = properties::Properties::new();
    let mut user_size = 0usize;
    if message.user_properties.len() > limits.user_property_max_num {
        return Err(bad(
            Code::MessagePropertiesTooLarge,
            format!(
                "too many user properties, max is {}",
                limits.user_property_max_num
            ),
        ));
    }
    // Sorted: the stored string does not depend on a hash map's order.
    let mut user: Vec<(&String, &String)> = message.user_properties.iter().collect();
    user.sort();
    for (k, v) in user {
        if keys::RESERVED.contains(&k.as_str()) {
            return Err(bad(
                Code::IllegalMessagePropertyKey,
                format!("property is used by system: {k}"),
            ));
        }
        if has_control(k) {
            return Err(bad(
                Code::IllegalMessagePropertyKey,
                "the key of property cannot contain control character",
            ));
        }
        if has_control(v) {
            return Err(bad(
                Code::IllegalMessagePropertyKey,
                "the value of property cannot contain control character",
            ));
        }
        user_size += k.len() + v.len();
        props.insert(k.as_str(), v.as_str());
    }

    let tag = sys.tag.as_deref().unwrap_or("");
    if !tag.is_empty() {
        if tag.trim().is_empty() {
            return Err(bad(
                Code::IllegalMessageTag,
                "tag cannot be the char sequence of whitespace",
            ));
        }
        if tag.contains('|') {
            return Err(bad(Code::IllegalMessageTag, "tag cannot contain '|'"));
        }
        if has_control(tag) {
            return Err(bad(
                Code::IllegalMessageTag,
                "tag cannot contain control character",
            ));
        }
        props.insert(keys::TAGS, tag);
    }
    user_size += tag.len();

    for key in &sys.keys {
        if !key.is_empty() && key.trim().is_empty() {
            return Err(bad(
                Code::IllegalMessageKey,
                "key cannot be the char sequence of whitespace",
            ));
        }
        if has_control(key) {
            return Err(bad(
                Code::IllegalMessageKey,
                "key cannot contain control character",
            ));
        }
        user_size += key.len();
    }
    if !sys.keys.is_empty() {
        props.insert(keys::KEYS, sys.keys.join(" "));
    }
    if user_size > limits.max_user_property_size {
        return Err(bad(
            Code::MessagePropertiesTooLarge,
            format!(
                "the total size of user property is too large, max is {}",
                limits.max_user_property_size
            ),
        ));
    }

    if sys.message_id.trim().is_empty() {
        return Err(bad(Code::IllegalMessageId, "message id cannot be empty"));
    }
    props.insert(keys::UNIQ_KEY, sys.message_id.as_str());

    let transactional = sys.message_type == MessageType::Transaction as i32;
    if transactional {
        props.insert(keys::TRAN_MSG, "true");
        if let Some(d) = &sys.orphaned_transaction_recovery_duration {
            let seconds = d.seconds;
            if limits.max_transaction_recovery_second > 0
                && seconds > limits.max_transaction_recovery_second
            {
                return Err(bad(
                    Code::BadRequest,
                    format!(
                        "the max transaction recovery time of message is too large, max is {}",
                        limits.max_transaction_recovery_second
                    ),
                ));
            }
            props.insert(keys::CHECK_IMMUNITY_TIME_IN_SECONDS, seconds.to_string());
        }
    }

    if let Some(t) = &sys.delivery_timestamp {
        let deliver = timestamp_ms(t);
        if limits.max_delay_time_mills > 0 && deliver - now_ms > limits.max_delay_time_mills {
            return Err(bad(
                Code::IllegalDeliveryTime,
                format!(
                    "the max delay time of message is too large, max is {}",
                    limits.max_delay_time_mills
                ),
            ));
        }
        props.insert(keys::TIMER_DELIVER_MS, deliver.to_string());
    }

    props.insert(
        keys::RECONSUME_TIME,
        sys.delivery_attempt.unwrap_or(0).to_string(),
    );
    props.insert(keys::PGROUP, producer_group);

    let group = sys.message_group.as_deref().filter(|g| !g.is_empty());
    if let Some(g) = group {
        if g.trim().is_empty() {
            return Err(bad(
                Code::IllegalMessageGroup,
                "message group cannot be the char sequence of whitespace",
            ));
        }
        if limits.max_message_group_size > 0 && g.len() >= limits.max_message_group_size {
            return Err(bad(
                Code::IllegalMessageGroup,
                format!(
                    "message group exceed the max size {}",
                    limits.max_message_group_size
                ),
            ));
        }
        if has_control(g) {
            return Err(bad(
                Code::IllegalMessageGroup,
                "message group cannot contain control character",
            ));
        }
        props.insert(keys::SHARDING_KEY, g);
    }
    if let Some(trace) = sys.trace_context.as_deref().filter(|t| !t.is_empty()) {
        props.insert(keys::TRACE_CONTEXT, trace);
    }
    let born_host = Some(sys.born_host.as_str())
        .filter(|h| !h.trim().is_empty())
        .or(peer.filter(|h| !h.trim().is_empty()));
    if let Some(host) = born_host {
        props.insert(keys::BORN_HOST, host);
    }
    let born_timestamp = sys
        .born_timestamp
        .as_ref()
        .filter(|t| valid_timestamp(t))
        .map(timestamp_ms);
    if let Some(born) = born_timestamp {
        props.insert(keys::BORN_TIMESTAMP, born.to_string());
    }
    if let Some(p) = sys.priority {
        props.insert(keys::PRIORITY, p.to_string());
    }

    let mut flag = 0;
    if sys.body_encoding == Encoding::Gzip as i32 {
        flag |= sys_flag::COMPRESSED;
    }
    if transactional {
        flag |= sys_flag::TRANSACTION_PREPARED_TYPE;
    }
    Ok(Outgoing {
        topic,
        body: body.clone(),
        properties: props.encode(),
        sys_flag: flag,
        uniq_key: sys.message_id.clone(),
        message_group: group.map(str::to_owned),
        born_timestamp,
    })
}

/// The SEND_MESSAGE_V2 (one message) or SEND_BATCH_MESSAGE (several) of `messages`, all of
/// one topic, to `queue_id`.
///
/// # Errors
/// INTERNAL_SERVER_ERROR when a batch cannot be encoded (properties too long).
///
/// # Panics
/// When `messages` is empty.
pub fn send_request(
    messages: &[Outgoing],
    producer_group: &str,
    queue_id: i32,
    now_ms: i64,
) -> Result<RemotingCommand, Refusal> {
    let first = messages.first().expect("at least one message");
    let mut props = first.properties.clone();
    let mut reconsume_times = Some(0);
    if first.topic.starts_with(system::RETRY_GROUP_TOPIC_PREFIX) {
        // A retry topic's counts travel in the header, not the properties.
        if let Some(n) = properties::get(&props, keys::RECONSUME_TIME) {
            reconsume_times = n.parse().ok();
            props = properties::without(&props, &[keys::RECONSUME_TIME]);
        }
    }
    let header = SendMessageRequestHeaderV2 {
        producer_group: producer_group.to_owned(),
        topic: first.topic.clone(),
        default_topic: system::AUTO_CREATE_TOPIC_KEY.to_owned(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: first.sys_flag,
        // The message's own born time (a 5.x message carries it as a property).
        born_timestamp: first.born_timestamp.unwrap_or(now_ms),
        flag: 0,
        properties: Some(props),
        reconsume_times,
        batch: (messages.len() > 1).then_some(true),
        ..SendMessageRequestHeaderV2::default()
    };
    if messages.len() == 1 {
        return Ok(
            RemotingCommand::request_with(RequestCode::SendMessageV2, &header)
                .with_body(first.body.clone()),
        );
    }
    let entries: Vec<message::batch::BatchEntry<'_>> = messages
        .iter()
        .map(|m| message::batch::BatchEntry {
            flag: 0,
            body: &m.body,
            properties: &m.properties,
        })
        .collect();
    let mut body = BytesMut::with_capacity(message::batch::encoded_len(&entries));
    message::batch::encode(&entries, &mut body)
        .map_err(|e| bad(Code::InternalServerError, e.to_string()))?;
    Ok(
        RemotingCommand::request_with(RequestCode::SendBatchMessage, &header)
            .with_body(body.freeze()),
    )
}

/// The result entries of a send of `messages` the broker answered with `response`: one per
/// message (a batch is stored in one piece: consecutive offsets from the answered one).
///
/// # Errors
/// A failure response, mapped as Apache maps a broker's exception.
pub fn send_results(
    messages: &[Outgoing],
    response: &RemotingCommand,
) -> Result<Vec<pb::SendResultEntry>, Refusal> {
    let entry_code = match ResponseCode::try_from(response.code()) {
        Ok(ResponseCode::Success) => Code::Ok,
        Ok(ResponseCode::FlushDiskTimeout) => Code::MasterPersistenceTimeout,
        Ok(ResponseCode::FlushSlaveTimeout) => Code::SlavePersistenceTimeout,
        Ok(ResponseCode::SlaveNotAvailable) => Code::HaNotAvailable,
        _ => return Err(Refusal::from_response(response.code(), response.remark())),
    };
    if entry_code != Code::Ok {
        let name = ResponseCode::try_from(response.code()).map_or("", |c| c.name());
        let status = Refusal::new(
            entry_code,
            format!("send message failed, sendStatus={}", send_status(name)),
        )
        .status();
        return Ok(messages
            .iter()
            .map(|_| pb::SendResultEntry {
                status: Some(status.clone()),
                ..pb::SendResultEntry::default()
            })
            .collect());
    }
    let header: SendMessageResponseHeader = response
        .decode_header()
        .map_err(|e| bad(Code::InternalServerError, e.to_string()))?;
    Ok(messages
        .iter()
        .zip(0i64..)
        .map(|(m, i)| pb::SendResultEntry {
            status: Some(status::ok()),
            message_id: m.uniq_key.clone(),
            transaction_id: header.transaction_id.clone().unwrap_or_default(),
            offset: header.queue_offset + i,
            recall_handle: header.recall_handle.clone().unwrap_or_default(),
        })
        .collect())
}

/// The `SendStatus` name the client API gives a response code.
fn send_status(code_name: &str) -> &'static str {
    match code_name {
        "FLUSH_DISK_TIMEOUT" => "FLUSH_DISK_TIMEOUT",
        "FLUSH_SLAVE_TIMEOUT" => "FLUSH_SLAVE_TIMEOUT",
        "SLAVE_NOT_AVAILABLE" => "SLAVE_NOT_AVAILABLE",
        _ => "SEND_OK",
    }
}

/// The response status of a send's entries: their code when they agree, MULTIPLE_RESULTS
/// when they do not.
#[must_use]
pub fn overall_status(entries: &[pb::SendResultEntry]) -> pb::Status {
    let mut codes = entries
        .iter()
        .map(|e| e.status.as_ref().map_or(0, |s| s.code));
    let Some(first) = codes.next() else {
        return Refusal::new(Code::InternalServerError, "send status is empty").status();
    };
    let code = if codes.all(|c| c == first) {
        Code::try_from(first).unwrap_or(Code::InternalServerError)
    } else {
        Code::MultipleResults
    };
    pb::Status {
        code: code.into(),
        message: code.as_str_name().to_owned(),
    }
}

/// A queue permission as the protocol names it.
#[must_use]
pub fn permission(perm_bits: i32) -> Permission {
    match (perm::is_readable(perm_bits), perm::is_writeable(perm_bits)) {
        (true, true) => Permission::ReadWrite,
        (true, false) => Permission::Read,
        (false, true) => Permission::Write,
        (false, false) => Permission::None,
    }
}

/// QueryRoute's queues of `route`: for every broker (master and slaves) of each broker name,
/// its read-only, write-only, read-write and no-access queues, in that order, numbered from 0
/// (Apache's `genMessageQueueFromQueueData`); every broker's endpoints are `endpoints`, the
/// proxy's own, so the client keeps talking to the proxy.
#[must_use]
pub fn message_queues(
    route: &TopicRoute,
    topic: &pb::Resource,
    endpoints: &pb::Endpoints,
    kind: TopicMessageType,
) -> Vec<pb::MessageQueue> {
    message_queues_at(route, topic, kind, |_| endpoints.clone())
}

/// The endpoints of the local-mode endpoint of the broker at `broker_addr` (`host:port`):
/// its host with the gRPC port `port` (Apache's `ProxyTopicRouteData(route, grpcPort)`).
#[must_use]
pub fn broker_endpoints(broker_addr: &str, port: u16) -> pb::Endpoints {
    let host = broker_addr
        .rsplit_once(':')
        .map_or(broker_addr, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let scheme = match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => pb::AddressScheme::IPv4,
        Ok(std::net::IpAddr::V6(_)) => pb::AddressScheme::IPv6,
        Err(_) => pb::AddressScheme::DomainName,
    };
    pb::Endpoints {
        scheme: scheme.into(),
        addresses: vec![pb::Address {
            host: host.to_owned(),
            port: i32::from(port),
        }],
    }
}

/// [`message_queues`] with each broker's endpoints given by `endpoints_of` its address.
#[must_use]
pub fn message_queues_at(
    route: &TopicRoute,
    topic: &pb::Resource,
    kind: TopicMessageType,
    endpoints_of: impl Fn(&str) -> pb::Endpoints,
) -> Vec<pb::MessageQueue> {
    let accepted: Vec<i32> = kind.accepted().into_iter().map(i32::from).collect();
    let mut out = Vec::new();
    for q in &route.data.queue_datas {
        let Some(broker) = route
            .data
            .broker_datas
            .iter()
            .find(|b| b.broker_name == q.broker_name)
        else {
            continue;
        };
        let (readable, writeable) = (perm::is_readable(q.perm), perm::is_writeable(q.perm));
        let (mut r, mut w, mut rw, mut n) = (0, 0, 0, 0);
        if readable && writeable {
            rw = q.write_queue_nums.min(q.read_queue_nums);
            r = q.read_queue_nums - rw;
            w = q.write_queue_nums - rw;
        } else if writeable {
            w = q.write_queue_nums;
        } else if readable {
            r = q.read_queue_nums;
        } else {
            n = q.write_queue_nums.max(q.read_queue_nums).max(1);
        }
        for (&id, addr) in &broker.broker_addrs {
            let broker = pb::Broker {
                name: q.broker_name.clone(),
                id: i32::try_from(id).unwrap_or(i32::MAX),
                endpoints: Some(endpoints_of(addr)),
            };
            let mut queue_id = 0;
            for (count, permission) in [
                (r, Permission::Read),
                (w, Permission::Write),
                (rw, Permission::ReadWrite),
                (n, Permission::None),
            ] {
                for _ in 0..count {
                    out.push(pb::MessageQueue {
                        topic: Some(topic.clone()),
                        id: queue_id,
                        permission: permission.into(),
                        broker: Some(broker.clone()),
                        accept_message_types: accepted.clone(),
                    });
                    queue_id += 1;
                }
            }
        }
    }
    out
}

/// What showing a stored message needs beyond its record.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    /// The topic it is shown under (a pop retry topic's message under the consumer's).
    pub topic: &'a str,
    /// `UNIQ_KEY`, else the offset message id.
    pub message_id: &'a str,
    /// Its receipt handle and invisible time (ms) when it was received; else the handle is
    /// its `POP_CK` property, as Apache's.
    pub receipt: Option<(&'a str, i64)>,
    /// Deliveries before this one.
    pub reconsume_times: i32,
}

/// `body` (a slice of `source`) as a `Bytes` sharing `source`'s memory; copied when it is not
/// in `source`.
#[must_use]
pub fn body_in(source: &Bytes, body: &[u8]) -> Bytes {
    let (start, end) = (
        source.as_ptr() as usize,
        source.as_ptr() as usize + source.len(),
    );
    let at = body.as_ptr() as usize;
    if at >= start && at + body.len() <= end {
        source.slice(at - start..at - start + body.len())
    } else {
        Bytes::copy_from_slice(body)
    }
}

/// A stored message, of properties `props`, as the gRPC protocol shows it (Apache's
/// `GrpcConverter.buildMessage`): the user properties are the non-reserved ones, the system
/// properties come from the record and RocketMQ's properties; `body` is the record's body
/// (shared, not copied: [`body_in`]); `now_ms` the proxy's clock (a delay in seconds becomes a
/// delivery time from now).
#[must_use]
pub fn stored_message(
    m: &StoredMessage<'_>,
    props: &str,
    body: Bytes,
    shown: &Shown<'_>,
    now_ms: i64,
) -> pb::Message {
    // One pass over the properties for every system key read here.
    let [
        tran_msg,
        delay,
        timer_deliver_ms,
        timer_delay_sec,
        sharding_key,
        priority,
        born_host,
        dlq_topic,
        dlq_message_id,
        pop_ck,
        tags,
        message_keys,
        trace_context,
    ] = properties::get_many(
        props,
        [
            keys::TRAN_MSG,
            keys::DELAY,
            keys::TIMER_DELIVER_MS,
            keys::TIMER_DELAY_SEC,
            keys::SHARDING_KEY,
            keys::PRIORITY,
            keys::BORN_HOST,
            "DLQ_ORIGIN_TOPIC",
            "DLQ_ORIGIN_MESSAGE_ID",
            keys::POP_CK,
            keys::TAGS,
            keys::KEYS,
            keys::TRACE_CONTEXT,
        ],
    );
    let user_properties = properties::iter(props)
        .filter(|(k, _)| !keys::RESERVED.contains(k))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let message_type = if tran_msg == Some("true") {
        MessageType::Transaction
    } else if delay.is_some() || timer_deliver_ms.is_some() || timer_delay_sec.is_some() {
        MessageType::Delay
    } else if sharding_key.is_some() {
        MessageType::Fifo
    } else if priority.is_some() {
        MessageType::Priority
    } else {
        MessageType::Normal
    };
    let delivery_timestamp = match timer_delay_sec.and_then(|s| s.parse::<i64>().ok()) {
        Some(sec) => Some(timestamp(now_ms.saturating_add(sec.saturating_mul(1000)))),
        None => timer_deliver_ms.and_then(|s| s.parse().ok()).map(timestamp),
    };
    let born_host = born_host
        .filter(|h| !h.trim().is_empty())
        .map_or_else(|| m.born_host.ip().to_string(), str::to_owned);
    let dead_letter_queue = match (dlq_topic, dlq_message_id) {
        (Some(topic), Some(id)) => Some(pb::DeadLetterQueue {
            topic: topic.to_owned(),
            message_id: id.to_owned(),
        }),
        _ => None,
    };
    // Apache digests with MD5; SHA-1 is the digest every SDK checks the same way (their CRC32
    // texts differ in padding) and the one this workspace has.
    let digest = pb::Digest {
        r#type: DigestType::Sha1.into(),
        checksum: hex_upper(&Sha1::digest(m.body)),
    };
    let compressed = m.sys_flag & sys_flag::COMPRESSED == sys_flag::COMPRESSED;
    let (receipt_handle, invisible_duration) = match shown.receipt {
        Some((handle, invisible_ms)) => (Some(handle.to_owned()), Some(duration(invisible_ms))),
        None => (pop_ck.map(str::to_owned), None),
    };
    pb::Message {
        topic: Some(pb::Resource {
            resource_namespace: String::new(),
            name: shown.topic.to_owned(),
        }),
        user_properties,
        system_properties: Some(pb::SystemProperties {
            tag: tags.map(str::to_owned),
            keys: message_keys
                .map(|k| k.split(' ').map(str::to_owned).collect())
                .unwrap_or_default(),
            message_id: shown.message_id.to_owned(),
            body_digest: Some(digest),
            // The body as stored: a compressed one is the SDK's to inflate.
            body_encoding: if compressed {
                Encoding::Gzip
            } else {
                Encoding::Identity
            }
            .into(),
            message_type: message_type.into(),
            born_timestamp: Some(timestamp(m.born_timestamp)),
            born_host,
            store_timestamp: Some(timestamp(m.store_timestamp)),
            store_host: m.store_host.to_string(),
            delivery_timestamp,
            receipt_handle,
            queue_id: m.queue_id,
            queue_offset: Some(i64::try_from(m.queue_offset).unwrap_or(i64::MAX)),
            invisible_duration,
            delivery_attempt: Some(shown.reconsume_times.saturating_add(1)),
            message_group: sharding_key.map(str::to_owned),
            trace_context: trace_context.map(str::to_owned),
            orphaned_transaction_recovery_duration: None,
            dead_letter_queue,
            lite_topic: None,
            priority: priority.and_then(|p| p.parse().ok()),
        }),
        body,
    }
}

/// `ms` since the epoch as a protobuf timestamp.
#[must_use]
pub fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: i32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
    }
}

/// `ms` as a protobuf duration.
#[must_use]
pub fn duration(ms: i64) -> prost_types::Duration {
    prost_types::Duration {
        seconds: ms.div_euclid(1000),
        nanos: i32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use remoting::protocol::route::{BrokerData, QueueData, TopicRouteData};

    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    fn message(body: &str) -> pb::Message {
        pb::Message {
            topic: Some(pb::Resource {
                resource_namespace: String::new(),
                name: "T".into(),
            }),
            user_properties: HashMap::new(),
            system_properties: Some(pb::SystemProperties {
                message_id: "01AB".into(),
                message_type: MessageType::Normal.into(),
                body_encoding: Encoding::Identity.into(),
                born_timestamp: Some(prost_types::Timestamp {
                    seconds: 1_700_000_000,
                    nanos: 123_456_789,
                }),
                born_host: "10.0.0.9".into(),
                ..pb::SystemProperties::default()
            }),
            body: body.as_bytes().to_vec().into(),
        }
    }

    fn sys(m: &mut pb::Message) -> &mut pb::SystemProperties {
        m.system_properties.as_mut().expect("set")
    }

    fn out(m: &pb::Message) -> Result<Outgoing, Refusal> {
        outgoing(m, "T", Some("127.0.0.1:5555"), NOW, &Limits::default())
    }

    #[test]
    fn normal_message_properties() {
        let mut m = message("hi");
        m.user_properties.insert("idx".into(), "3".into());
        sys(&mut m).tag = Some("TagA".into());
        sys(&mut m).keys = vec!["k1".into(), "k2".into()];
        let o = out(&m).unwrap();
        assert_eq!(
            properties::Properties::decode(&o.properties).to_string(),
            "{idx=3, TAGS=TagA, KEYS=k1 k2, UNIQ_KEY=01AB, RECONSUME_TIME=0, PGROUP=T, \
             __BORNHOST=10.0.0.9, BORN_TIMESTAMP=1700000000123}"
        );
        assert_eq!((o.sys_flag, o.born_timestamp), (0, Some(1_700_000_000_123)));
        assert_eq!(o.kind(), TopicMessageType::Normal);
        assert_eq!(o.body.as_ref(), b"hi");
    }

    #[test]
    fn fifo_delay_transaction_priority() {
        let mut m = message("x");
        sys(&mut m).message_group = Some("g1".into());
        sys(&mut m).born_host = String::new();
        let o = out(&m).unwrap();
        assert_eq!(properties::get(&o.properties, "__SHARDINGKEY"), Some("g1"));
        assert_eq!(
            properties::get(&o.properties, "__BORNHOST"),
            Some("127.0.0.1:5555")
        );
        assert_eq!(o.kind(), TopicMessageType::Fifo);
        assert_eq!(o.message_group.as_deref(), Some("g1"));

        let mut m = message("x");
        sys(&mut m).delivery_timestamp = Some(prost_types::Timestamp {
            seconds: 1_700_000_005,
            nanos: 0,
        });
        let o = out(&m).unwrap();
        assert_eq!(
            properties::get(&o.properties, "TIMER_DELIVER_MS"),
            Some("1700000005000")
        );
        assert_eq!(o.kind(), TopicMessageType::Delay);
        sys(&mut m).delivery_timestamp = Some(prost_types::Timestamp {
            seconds: NOW / 1000 + 86_401,
            nanos: 0,
        });
        assert_eq!(out(&m).unwrap_err().code, Code::IllegalDeliveryTime);

        let mut m = message("x");
        sys(&mut m).message_type = MessageType::Transaction.into();
        sys(&mut m).orphaned_transaction_recovery_duration = Some(prost_types::Duration {
            seconds: 30,
            nanos: 0,
        });
        sys(&mut m).body_encoding = Encoding::Gzip.into();
        let o = out(&m).unwrap();
        assert_eq!(properties::get(&o.properties, "TRAN_MSG"), Some("true"));
        assert_eq!(
            properties::get(&o.properties, "CHECK_IMMUNITY_TIME_IN_SECONDS"),
            Some("30")
        );
        assert_eq!(o.sys_flag, 0x1 | 0x4);
        assert_eq!(o.kind(), TopicMessageType::Transaction);
        sys(&mut m).orphaned_transaction_recovery_duration = Some(prost_types::Duration {
            seconds: 3601,
            nanos: 0,
        });
        assert_eq!(out(&m).unwrap_err().code, Code::BadRequest);

        let mut m = message("x");
        sys(&mut m).priority = Some(2);
        sys(&mut m).trace_context = Some("00-abc-01".into());
        let o = out(&m).unwrap();
        assert_eq!(
            properties::get(&o.properties, "_SYS_MSG_PRIORITY_"),
            Some("2")
        );
        assert_eq!(
            properties::get(&o.properties, "TRACE_CONTEXT"),
            Some("00-abc-01")
        );
        assert_eq!(o.kind(), TopicMessageType::Priority);
    }

    #[test]
    fn refusals_as_apache() {
        let code = |f: &dyn Fn(&mut pb::Message)| {
            let mut m = message("x");
            f(&mut m);
            out(&m).err().map(|r| r.code)
        };
        assert_eq!(code(&|m| m.body.clear()), Some(Code::MessageBodyEmpty));
        assert_eq!(
            code(&|m| m.body = vec![0; 4 * 1024 * 1024 + 1].into()),
            Some(Code::MessageBodyTooLarge)
        );
        assert_eq!(
            code(&|m| sys(m).message_id = " ".into()),
            Some(Code::IllegalMessageId)
        );
        assert_eq!(
            code(&|m| sys(m).tag = Some("a|b".into())),
            Some(Code::IllegalMessageTag)
        );
        assert_eq!(
            code(&|m| sys(m).tag = Some("  ".into())),
            Some(Code::IllegalMessageTag)
        );
        assert_eq!(
            code(&|m| sys(m).keys = vec!["a\u{7}".into()]),
            Some(Code::IllegalMessageKey)
        );
        assert_eq!(
            code(&|m| {
                m.user_properties.insert("UNIQ_KEY".into(), "x".into());
            }),
            Some(Code::IllegalMessagePropertyKey)
        );
        assert_eq!(
            code(&|m| {
                m.user_properties.insert("k".into(), "a\nb".into());
            }),
            Some(Code::IllegalMessagePropertyKey)
        );
        assert_eq!(
            code(&|m| {
                for i in 0..129 {
                    m.user_properties.insert(format!("k{i}"), "v".into());
                }
            }),
            Some(Code::MessagePropertiesTooLarge)
        );
        assert_eq!(
            code(&|m| {
                m.user_properties.insert("k".into(), "v".repeat(16 * 1024));
            }),
            Some(Code::MessagePropertiesTooLarge)
        );
        assert_eq!(
            code(&|m| sys(m).message_group = Some("g".repeat(64))),
            Some(Code::IllegalMessageGroup)
        );
        assert_eq!(code(&|m| sys(m).message_group = Some("g".repeat(63))), None);
        // Reserved by RocketMQ, yet free for users: the message group and trace context.
        assert_eq!(
            code(&|m| {
                m.user_properties.insert("__SHARDINGKEY".into(), "v".into());
            }),
            None
        );
    }

    #[test]
    fn send_request_headers() {
        let o = out(&message("hi")).unwrap();
        let r = send_request(std::slice::from_ref(&o), "T", 3, NOW).unwrap();
        assert_eq!(r.code(), RequestCode::SendMessageV2.code());
        let h: SendMessageRequestHeaderV2 = r.decode_header().unwrap();
        assert_eq!(
            (
                h.producer_group.as_str(),
                h.topic.as_str(),
                h.default_topic.as_str(),
                h.queue_id,
                h.born_timestamp,
                h.reconsume_times,
                h.batch
            ),
            ("T", "T", "TBW102", 3, 1_700_000_000_123, Some(0), None)
        );
        assert_eq!(h.properties.as_deref(), Some(o.properties.as_str()));
        assert_eq!(r.body.to_bytes().as_ref(), b"hi");

        let two = [o.clone(), out(&message("there")).unwrap()];
        let r = send_request(&two, "T", 0, NOW).unwrap();
        assert_eq!(r.code(), RequestCode::SendBatchMessage.code());
        let h: SendMessageRequestHeaderV2 = r.decode_header().unwrap();
        assert_eq!(h.batch, Some(true));
        let body = r.body.to_bytes();
        let spans = message::batch::decode(&body, 0).unwrap();
        assert_eq!(spans.len(), 2);

        let mut retry = o;
        retry.topic = "%RETRY%G".into();
        let r = send_request(std::slice::from_ref(&retry), "G", 0, NOW).unwrap();
        let h: SendMessageRequestHeaderV2 = r.decode_header().unwrap();
        assert_eq!(h.reconsume_times, Some(0));
        assert_eq!(
            h.properties
                .as_deref()
                .and_then(|p| properties::get(p, "RECONSUME_TIME")),
            None
        );
    }

    #[test]
    fn send_results_map_broker_codes() {
        let msgs = [
            out(&message("a")).unwrap(),
            Outgoing {
                uniq_key: "02".into(),
                ..out(&message("b")).unwrap()
            },
        ];
        let ok = RemotingCommand::response(0, None).with_header(&SendMessageResponseHeader {
            msg_id: "7F00000100002A9F0000000000000000".into(),
            queue_id: 1,
            queue_offset: 10,
            transaction_id: Some("tx".into()),
            batch_uniq_id: None,
            recall_handle: None,
        });
        let entries = send_results(&msgs, &ok).unwrap();
        assert_eq!(
            entries
                .iter()
                .map(|e| (e.message_id.as_str(), e.offset, e.transaction_id.as_str()))
                .collect::<Vec<_>>(),
            [("01AB", 10, "tx"), ("02", 11, "tx")]
        );
        assert_eq!(overall_status(&entries), status::ok());

        let slow = RemotingCommand::response(10, None);
        let entries = send_results(&msgs[..1], &slow).unwrap();
        let s = entries[0].status.clone().unwrap();
        assert_eq!(s.code, Code::MasterPersistenceTimeout as i32);
        assert_eq!(
            s.message,
            "send message failed, sendStatus=FLUSH_DISK_TIMEOUT"
        );
        assert_eq!(
            overall_status(&entries).code,
            Code::MasterPersistenceTimeout as i32
        );
        for (code, want) in [
            (11, Code::HaNotAvailable),
            (12, Code::SlavePersistenceTimeout),
        ] {
            let e = send_results(&msgs[..1], &RemotingCommand::response(code, None)).unwrap();
            assert_eq!(e[0].status.as_ref().map(|s| s.code), Some(want as i32));
        }

        let busy = RemotingCommand::response(2, Some("[TIMEOUT_CLEAN_QUEUE]".to_owned()));
        let refused = send_results(&msgs, &busy).unwrap_err();
        assert_eq!(refused.code, Code::TooManyRequests);
        assert_eq!(refused.message, "[TIMEOUT_CLEAN_QUEUE]");
        let gone = RemotingCommand::response(17, None);
        assert_eq!(
            send_results(&msgs, &gone).unwrap_err().code,
            Code::TopicNotFound
        );

        let mixed = [
            pb::SendResultEntry {
                status: Some(status::ok()),
                ..Default::default()
            },
            pb::SendResultEntry {
                status: Some(Refusal::new(Code::HaNotAvailable, "x").status()),
                ..Default::default()
            },
        ];
        assert_eq!(overall_status(&mixed).code, Code::MultipleResults as i32);
        assert_eq!(overall_status(&[]).code, Code::InternalServerError as i32);
    }

    #[test]
    fn route_to_queues() {
        let route = TopicRoute::new(TopicRouteData {
            queue_datas: vec![
                QueueData {
                    broker_name: "a".into(),
                    read_queue_nums: 4,
                    write_queue_nums: 2,
                    perm: 6,
                    topic_sys_flag: 0,
                },
                QueueData {
                    broker_name: "b".into(),
                    read_queue_nums: 1,
                    write_queue_nums: 1,
                    perm: 0,
                    topic_sys_flag: 0,
                },
            ],
            broker_datas: vec![
                BrokerData {
                    broker_name: "a".into(),
                    broker_addrs: [(0, "A:0".to_owned()), (1, "A:1".to_owned())].into(),
                    ..BrokerData::default()
                },
                BrokerData {
                    broker_name: "b".into(),
                    broker_addrs: [(0, "B:0".to_owned())].into(),
                    ..BrokerData::default()
                },
            ],
            ..TopicRouteData::default()
        });
        let topic = pb::Resource {
            resource_namespace: String::new(),
            name: "T".into(),
        };
        let endpoints = pb::Endpoints {
            scheme: pb::AddressScheme::IPv4.into(),
            addresses: vec![pb::Address {
                host: "127.0.0.1".into(),
                port: 8081,
            }],
        };
        let queues = message_queues(&route, &topic, &endpoints, TopicMessageType::Fifo);
        let got: Vec<(&str, i32, i32, Permission)> = queues
            .iter()
            .map(|q| {
                let b = q.broker.as_ref().unwrap();
                (b.name.as_str(), b.id, q.id, q.permission())
            })
            .collect();
        let a = |id, q, p| ("a", id, q, p);
        assert_eq!(
            got,
            [
                a(0, 0, Permission::Read),
                a(0, 1, Permission::Read),
                a(0, 2, Permission::ReadWrite),
                a(0, 3, Permission::ReadWrite),
                a(1, 0, Permission::Read),
                a(1, 1, Permission::Read),
                a(1, 2, Permission::ReadWrite),
                a(1, 3, Permission::ReadWrite),
                ("b", 0, 0, Permission::None),
            ]
        );
        assert!(
            queues
                .iter()
                .all(|q| q.accept_message_types == [MessageType::Fifo as i32]
                    && q.broker.as_ref().unwrap().endpoints.as_ref() == Some(&endpoints))
        );
        assert_eq!(permission(4), Permission::Read);
        assert_eq!(permission(2), Permission::Write);

        // Local mode: every broker's own host, the endpoint's port.
        let local = message_queues_at(&route, &topic, TopicMessageType::Fifo, |addr| {
            broker_endpoints(addr, 8081)
        });
        let hosts: Vec<(String, i32, i32)> = local
            .iter()
            .filter(|q| q.id == 0)
            .map(|q| {
                let b = q.broker.as_ref().unwrap();
                let e = b.endpoints.as_ref().unwrap();
                (e.addresses[0].host.clone(), e.addresses[0].port, e.scheme)
            })
            .collect();
        let dns = pb::AddressScheme::DomainName as i32;
        assert_eq!(
            hosts,
            [
                ("A".to_owned(), 8081, dns),
                ("A".to_owned(), 8081, dns),
                ("B".to_owned(), 8081, dns)
            ]
        );
        let v4 = broker_endpoints("10.0.0.1:10911", 18081);
        assert_eq!(v4.scheme, pb::AddressScheme::IPv4 as i32);
        assert_eq!(
            (v4.addresses[0].host.as_str(), v4.addresses[0].port),
            ("10.0.0.1", 18081)
        );
        let v6 = broker_endpoints("[::1]:10911", 8081);
        assert_eq!(v6.scheme, pb::AddressScheme::IPv6 as i32);
        assert_eq!(v6.addresses[0].host, "::1");
    }
}
