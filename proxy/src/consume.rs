//! The consuming side of `MessagingService`, over POP, as Apache's proxy serves it
//! (`ReceiveMessageActivity`, `ConsumerProcessor`, `AckMessageActivity`,
//! `ChangeInvisibleDurationActivity`, `ForwardMessageToDLQActivity`,
//! `RouteActivity.queryAssignment`).
//!
//! The 5.x SDKs never pull or keep offsets: a SimpleConsumer (and a PushConsumer, on the
//! assignments QueryAssignment gives it) asks ReceiveMessage for messages and acks each by
//! the receipt handle it came with. Each call becomes remoting commands to one broker:
//!
//! | rpc | remoting |
//! |---|---|
//! | ReceiveMessage | POP_MESSAGE (queue -1: any queue of the broker named by the request, else the next broker round robin; FIFO: an orderly pop) |
//! | AckMessage | ACK_MESSAGE per entry (Apache's default, `enableBatchAck=false`) |
//! | ChangeInvisibleDuration | CHANGE_MESSAGE_INVISIBLETIME; the new handle built from the answer |
//! | ForwardMessageToDeadLetterQueue | CONSUMER_SEND_MSG_BACK with delay level -1 (straight to the DLQ), then ACK_MESSAGE |
//! | QueryAssignment | the route: one assignment per broker with readable queues (queue -1); per queue for an orderly group |
//!
//! The receipt handle carries everything a later call needs (broker, queue, offset, the
//! checkpoint, the commit log offset: [`popped::Handle`]), so the proxy keeps no state per
//! message and a redelivery (after its invisible time, or from the retry topic) comes with a
//! new handle and its delivery count.
//!
//! A group's FIFO flag and retry count come from its subscription group config
//! (GET_SUBSCRIPTIONGROUP_CONFIG to a broker of the topic, cached [`GROUP_TTL`]): they go into
//! the consumer's settings answer, into the pop, and decide when a message that failed too
//! often goes to the DLQ instead of being delivered (`PopMessageResultFilterImpl`); a message
//! of another tag than subscribed is acked unseen, as Apache's filter does.
//!
//! Consumers need no heartbeat to the brokers for POP (Apache's proxy in cluster mode sends
//! none either: the broker's long polling wakes on arriving messages, not on known consumers).
//!
//! Not done as Apache does: a receive with `auto_renew` (the Java PushConsumer's) gets
//! `defaultInvisibleTimeMills` as Apache's, but the proxy does not renew the handles while
//! the message is being consumed: one consumed for longer is redelivered.

mod popped;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use remoting::protocol::broker::{
    ConsumerSendMsgBackRequestHeader, GetSubscriptionGroupConfigRequestHeader,
};
use remoting::protocol::constants::perm;
use remoting::protocol::pop::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    ExtraInfo, INIT_MODE_MAX, MAX_POP_MSG_NUMS, PopMessageRequestHeader, RetryFlag,
};
use remoting::protocol::subscription::SubscriptionGroupConfig;
use remoting::{RemotingCommand, RequestCode, ResponseCode, fastjson};
use tracing::{debug, warn};

use crate::backend::{Backend, Target};
use crate::config::ProxyConfig;
use crate::convert;
use crate::pb::{self, Code, FilterType, receive_message_response::Content, settings::PubSub};
use crate::route::{Routes, TopicRoute};
use crate::status::{self, Refusal};

pub use popped::{Handle, Popped};

/// How long a group's config is used before it is read again.
pub const GROUP_TTL: Duration = Duration::from_secs(20);
/// Limit of one ack, change of invisible time, send back or config read (Apache: 3 s).
pub const BROKER_TIMEOUT: Duration = Duration::from_secs(3);
/// What a pop may take beyond its polling time before the proxy gives up on the broker.
pub const POP_MARGIN: Duration = Duration::from_secs(3);
/// The client versions from which ILLEGAL_POLLING_TIME is known (older ones get
/// BAD_REQUEST), compared as strings as Apache does.
const ILLEGAL_POLLING_TIME_SINCE: &str = "5.0.3";
/// A group's retries when its config cannot be read (`SubscriptionGroupConfig` default).
const DEFAULT_RETRY_MAX_TIMES: i32 = 16;

/// What a consumer group's config decides for its consumers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupPolicy {
    /// `consumeMessageOrderly`: FIFO consumption.
    pub fifo: bool,
    /// Deliveries before a message goes to the DLQ: `retryMaxTimes + 1`.
    pub max_attempts: i32,
}

impl Default for GroupPolicy {
    fn default() -> Self {
        GroupPolicy {
            fifo: false,
            max_attempts: DEFAULT_RETRY_MAX_TIMES + 1,
        }
    }
}

/// A receive's subscription expression (`FilterAPI.build`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// `TAG` or `SQL92`.
    pub kind: &'static str,
    /// The expression; `*` for every tag.
    pub expression: String,
    /// TAG: the tags subscribed, empty for `*`.
    pub tags: BTreeSet<String>,
}

impl Filter {
    /// The filter of `expression` (none: every message).
    #[must_use]
    pub fn of(expression: Option<&pb::FilterExpression>) -> Self {
        let (kind, text) = expression.map_or((FilterType::Tag, ""), |e| {
            (e.r#type(), e.expression.as_str())
        });
        if kind == FilterType::Sql {
            return Filter {
                kind: "SQL92",
                expression: text.to_owned(),
                tags: BTreeSet::new(),
            };
        }
        let text = text.trim();
        if text.is_empty() || text == "*" {
            return Filter {
                kind: "TAG",
                expression: "*".to_owned(),
                tags: BTreeSet::new(),
            };
        }
        let tags: BTreeSet<String> = text
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect();
        Filter {
            kind: "TAG",
            expression: tags.iter().cloned().collect::<Vec<_>>().join("||"),
            tags,
        }
    }

    /// Whether a message of `tag` passes (`FilterUtils.isTagMatched`): SQL92 is the
    /// broker's to judge.
    #[must_use]
    pub fn matches(&self, tag: Option<&str>) -> bool {
        self.tags.is_empty() || tag.is_some_and(|t| self.tags.contains(t))
    }
}

fn millis_of(d: &prost_types::Duration) -> i64 {
    d.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(d.nanos / 1_000_000))
}

fn duration_ms(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

fn ms_of(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The status of a call whose entries answered `codes` (Apache's `setAckResponseStatus`).
fn overall<'a>(codes: impl Iterator<Item = &'a pb::Status>, what: &str) -> pb::Status {
    let set: BTreeSet<i32> = codes.map(|s| s.code).collect();
    let code = match set.len() {
        0 => {
            return Refusal::new(Code::InternalServerError, format!("{what} result is empty"))
                .status();
        }
        1 => set
            .first()
            .and_then(|c| Code::try_from(*c).ok())
            .unwrap_or(Code::InternalServerError),
        _ => Code::MultipleResults,
    };
    pb::Status {
        code: code.into(),
        message: code.as_str_name().to_owned(),
    }
}

/// The invisible time a receive or change asks for, within Apache's bounds
/// (`GrpcValidator.validateInvisibleTime`).
fn check_invisible(ms: i64, min: i64, max: i64) -> Result<i64, Refusal> {
    if ms < min {
        return Err(Refusal::new(
            Code::IllegalInvisibleTime,
            format!("the invisibleTime is too small. min is {min}"),
        ));
    }
    if max > 0 && ms > max {
        return Err(Refusal::new(
            Code::IllegalInvisibleTime,
            format!("the invisibleTime is too large. max is {max}"),
        ));
    }
    Ok(ms)
}

/// How long a receive polls: the request's long-polling timeout (else what its deadline
/// leaves after half the client's request timeout), within the configured bounds and the
/// deadline (`ReceiveMessageActivity`).
///
/// # Errors
/// ILLEGAL_POLLING_TIME (BAD_REQUEST for clients before 5.0.3) when the deadline leaves less
/// than the minimum.
pub fn polling_time(
    requested: Option<i64>,
    remaining: Option<i64>,
    request_timeout: i64,
    config: &ProxyConfig,
    client_version: &str,
) -> Result<i64, Refusal> {
    let min = i64::try_from(config.grpc_client_consumer_min_long_polling_timeout_millis)
        .unwrap_or(i64::MAX);
    let max = i64::try_from(config.grpc_client_consumer_max_long_polling_timeout_millis)
        .unwrap_or(i64::MAX);
    let mut poll = match (requested, remaining) {
        (Some(ms), _) => ms,
        (None, Some(left)) => left - request_timeout / 2,
        (None, None) => max,
    };
    poll = poll.max(min).min(max);
    if let Some(left) = remaining {
        if poll > left {
            if left >= min {
                poll = left;
            } else {
                let code =
                    if client_version.is_empty() || ILLEGAL_POLLING_TIME_SINCE > client_version {
                        Code::BadRequest
                    } else {
                        Code::IllegalPollingTime
                    };
                return Err(Refusal::new(
                    code,
                    "The deadline time remaining is not enough for polling, please check network condition",
                ));
            }
        }
    }
    Ok(poll)
}

/// The readable brokers of a route: broker name → the address to pop from (the master,
/// else any), sorted by name (`MessageQueueSelector.buildRead`).
fn read_brokers(route: &TopicRoute) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for q in &route.data.queue_datas {
        if !perm::is_readable(q.perm) || q.read_queue_nums <= 0 {
            continue;
        }
        let Some(b) = route
            .data
            .broker_datas
            .iter()
            .find(|b| b.broker_name == q.broker_name)
        else {
            continue;
        };
        if let Some(addr) = b
            .master_addr()
            .or_else(|| b.broker_addrs.values().next().map(String::as_str))
        {
            out.insert(q.broker_name.clone(), addr.to_owned());
        }
    }
    out
}

/// The consuming calls, over a [`Backend`].
#[derive(Debug)]
pub struct Consumers<B> {
    backend: Arc<B>,
    routes: Arc<Routes<B>>,
    config: ProxyConfig,
    groups: Mutex<HashMap<String, (Instant, GroupPolicy)>>,
    /// Round-robin position over a topic's brokers (starts anywhere, as Apache's).
    next_broker: AtomicUsize,
}

impl<B: Backend> Consumers<B> {
    /// The consuming side over `backend`, its routes from `routes`.
    #[must_use]
    pub fn new(backend: Arc<B>, routes: Arc<Routes<B>>, config: ProxyConfig) -> Self {
        Consumers {
            backend,
            routes,
            config,
            groups: Mutex::new(HashMap::new()),
            next_broker: AtomicUsize::new(fastrand::usize(..)),
        }
    }

    async fn call(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, Refusal> {
        Ok(self
            .backend
            .invoke(Target::Broker(addr.to_owned()), request, timeout)
            .await?)
    }

    /// `group`'s policy, read from a broker of `topic` (cached); the default policy when it
    /// cannot be read (Apache then leaves the client's settings as they are).
    pub async fn group_policy(&self, group: &str, topic: &str) -> GroupPolicy {
        if let Some((at, policy)) = self.groups.lock().get(group) {
            if at.elapsed() < GROUP_TTL {
                return *policy;
            }
        }
        match self.read_group(group, topic).await {
            Ok(config) => {
                let policy = GroupPolicy {
                    fifo: config.consume_message_orderly,
                    max_attempts: config.retry_max_times.saturating_add(1),
                };
                self.groups
                    .lock()
                    .insert(group.to_owned(), (Instant::now(), policy));
                policy
            }
            Err(r) => {
                warn!(group, topic, error = %r, "subscription group config unreadable: default policy");
                GroupPolicy::default()
            }
        }
    }

    async fn read_group(
        &self,
        group: &str,
        topic: &str,
    ) -> Result<SubscriptionGroupConfig, Refusal> {
        let route = self.routes.get(topic).await?;
        let Some(addr) = route.any_master() else {
            return Err(Refusal::new(Code::Forbidden, "no master of the topic"));
        };
        let request = RemotingCommand::request_with(
            RequestCode::GetSubscriptiongroupConfig,
            &GetSubscriptionGroupConfigRequestHeader {
                group: group.to_owned(),
            },
        );
        let response = self.call(addr, request, BROKER_TIMEOUT).await?;
        if response.code() != ResponseCode::Success.code() {
            return Err(Refusal::from_response(response.code(), response.remark()));
        }
        fastjson::from_slice(&response.body.to_bytes()).map_err(|e| {
            Refusal::new(
                Code::InternalServerError,
                format!("unreadable config of group {group}: {e}"),
            )
        })
    }

    /// Completes a consumer's settings answer with its group's config
    /// (`GrpcClientSettingsManager.mergeSubscriptionData`): FIFO flag and attempts.
    pub async fn merge_group(&self, settings: &mut pb::Settings) {
        let Some(PubSub::Subscription(sub)) = &settings.pub_sub else {
            return;
        };
        let Some(group) = sub.group.as_ref().map(|g| g.name.clone()) else {
            return;
        };
        let Some(topic) = sub
            .subscriptions
            .iter()
            .find_map(|s| s.topic.as_ref().map(|t| t.name.clone()))
        else {
            return;
        };
        let policy = self.group_policy(&group, &topic).await;
        if let Some(PubSub::Subscription(sub)) = &mut settings.pub_sub {
            sub.fifo = Some(policy.fifo);
        }
        if let Some(backoff) = &mut settings.backoff_policy {
            backoff.max_attempts = policy.max_attempts;
        }
    }

    /// The broker address of `handle`'s broker, from `topic`'s route.
    async fn broker_of(&self, topic: &str, handle: &Handle) -> Result<String, Refusal> {
        let route = self.routes.get(topic).await?;
        let name = &handle.extra.broker_name;
        route
            .data
            .broker_datas
            .iter()
            .find(|b| &b.broker_name == name)
            .and_then(|b| b.master_addr())
            .map(str::to_owned)
            .ok_or_else(|| Refusal::new(Code::BadRequest, format!("cannot find broker {name}")))
    }

    /// ReceiveMessage: the stream's responses, in Apache's order: a status (OK, or why
    /// nothing came), the messages, then the delivery timestamp.
    pub async fn receive(
        &self,
        settings: Option<&pb::Settings>,
        client_version: &str,
        remaining: Option<Duration>,
        request: &pb::ReceiveMessageRequest,
        now_ms: i64,
    ) -> Vec<pb::ReceiveMessageResponse> {
        let mut out = match self
            .receive_messages(settings, client_version, remaining, request, now_ms)
            .await
        {
            Ok(messages) if messages.is_empty() => vec![Content::Status(
                Refusal::new(Code::MessageNotFound, "no match message").status(),
            )],
            Ok(messages) => {
                let mut out = Vec::with_capacity(messages.len() + 2);
                out.push(Content::Status(status::ok()));
                out.extend(messages.into_iter().map(|p| Content::Message(p.message)));
                out
            }
            Err(r) => {
                debug!(
                    code = r.code.as_str_name(),
                    message = r.message,
                    "receive: no messages"
                );
                vec![Content::Status(r.status())]
            }
        };
        out.push(Content::DeliveryTimestamp(prost_types::Timestamp {
            seconds: now_ms.div_euclid(1000),
            nanos: i32::try_from(now_ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
        }));
        out.into_iter()
            .map(|c| pb::ReceiveMessageResponse { content: Some(c) })
            .collect()
    }

    async fn receive_messages(
        &self,
        settings: Option<&pb::Settings>,
        client_version: &str,
        remaining: Option<Duration>,
        request: &pb::ReceiveMessageRequest,
        now_ms: i64,
    ) -> Result<Vec<Popped>, Refusal> {
        let Some(settings) = settings else {
            // Apache's NullPointerException of the same race (a receive before the client's
            // telemetry settings arrived), worded alike: the SDKs retry it.
            return Err(Refusal::new(
                Code::InternalServerError,
                "\"settings\" is null: the client's settings have not reached the proxy yet",
            ));
        };
        let request_timeout = settings.request_timeout.as_ref().map_or(0, millis_of);
        let poll = polling_time(
            request.long_polling_timeout.as_ref().map(millis_of),
            remaining.map(ms_of),
            request_timeout,
            &self.config,
            client_version,
        )?;
        let queue = request.message_queue.as_ref();
        let topic = crate::resource::check_topic(queue.and_then(|q| q.topic.as_ref()))?.to_owned();
        let group = crate::resource::check_group(request.group.as_ref())?.to_owned();
        let invisible = if request.auto_renew {
            self.config.default_invisible_time_mills
        } else {
            check_invisible(
                request.invisible_duration.as_ref().map_or(0, millis_of),
                self.config.min_invisible_time_mills_for_recv,
                self.config.max_invisible_time_mills,
            )?
        };
        let filter = Filter::of(request.filter_expression.as_ref());
        let policy = self.group_policy(&group, &topic).await;

        let route = self.routes.get(&topic).await?;
        let brokers = read_brokers(&route);
        let wanted = queue
            .and_then(|q| q.broker.as_ref())
            .map(|b| b.name.as_str())
            .filter(|n| !n.trim().is_empty());
        let chosen = match wanted.and_then(|n| brokers.get_key_value(n)) {
            Some(b) => Some(b),
            None if brokers.is_empty() => None,
            None => brokers
                .iter()
                .nth(self.next_broker.fetch_add(1, Ordering::Relaxed) % brokers.len()),
        };
        let Some((broker_name, addr)) = chosen else {
            return Err(Refusal::new(Code::Forbidden, "no readable queue"));
        };
        let max = request.batch_size.clamp(1, MAX_POP_MSG_NUMS);
        let header = PopMessageRequestHeader {
            consumer_group: group.clone(),
            topic: topic.clone(),
            queue_id: -1,
            max_msg_nums: max,
            invisible_time: invisible,
            poll_time: poll,
            born_time: Some(now_ms),
            init_mode: INIT_MODE_MAX,
            exp_type: Some(filter.kind.to_owned()),
            exp: Some(filter.expression.clone()),
            order: Some(policy.fifo),
            attempt_id: request.attempt_id.clone(),
        };
        let mut timeout = duration_ms(poll) + POP_MARGIN;
        if let Some(left) = remaining {
            timeout = timeout.min(left.max(duration_ms(poll)));
        }
        debug!(topic, group, broker = %broker_name, poll, invisible, fifo = policy.fifo, "pop");
        let response = match self
            .call(
                addr,
                RemotingCommand::request_with(RequestCode::PopMessage, &header),
                timeout,
            )
            .await
        {
            Ok(r) => r,
            Err(e) => {
                self.routes.invalidate(&topic);
                return Err(e);
            }
        };
        match ResponseCode::try_from(response.code()) {
            Ok(ResponseCode::Success) => {}
            Ok(ResponseCode::PollingFull) => {
                return Err(Refusal::new(Code::TooManyRequests, "polling full"));
            }
            Ok(ResponseCode::PollingTimeout | ResponseCode::PullNotFound) => {
                return Err(Refusal::new(Code::MessageNotFound, "no new message"));
            }
            _ => return Err(Refusal::from_response(response.code(), response.remark())),
        }
        let popped = popped::decode(&response, &topic, broker_name, policy.fifo, now_ms)?;
        let mut out = Vec::with_capacity(popped.len());
        for p in popped {
            if !filter.matches(p.tag.as_deref()) {
                // Not what the consumer subscribed: acked unseen.
                if let Err(r) = self.ack_one(&group, &topic, &p.handle, now_ms).await {
                    warn!(topic, group, id = p.message_id, error = %r, "ack of a filtered message failed");
                }
            } else if p.reconsume_times >= policy.max_attempts {
                // Failed too often: to the DLQ instead.
                let status = self
                    .forward_one(&group, &topic, &p.handle, &p.message_id, now_ms)
                    .await;
                if status.code != Code::Ok as i32 {
                    warn!(
                        topic,
                        group,
                        id = p.message_id,
                        status = status.message,
                        "forward to the DLQ failed"
                    );
                }
            } else {
                out.push(p);
            }
        }
        Ok(out)
    }

    /// One ACK_MESSAGE of `handle` (`ConsumerProcessor.ackMessage`).
    async fn ack_one(
        &self,
        group: &str,
        topic: &str,
        handle: &str,
        now_ms: i64,
    ) -> Result<(), Refusal> {
        let handle = Handle::parse(handle)?;
        if handle.is_expired(now_ms) {
            return Err(Refusal::new(
                Code::InvalidReceiptHandle,
                "receipt handle is expired",
            ));
        }
        let addr = self.broker_of(topic, &handle).await?;
        let header = AckMessageRequestHeader {
            consumer_group: group.to_owned(),
            topic: handle.extra.real_topic(topic, group),
            queue_id: handle.extra.queue_id,
            extra_info: handle.text.clone(),
            offset: handle.offset,
        };
        let response = self
            .call(
                &addr,
                RemotingCommand::request_with(RequestCode::AckMessage, &header),
                BROKER_TIMEOUT,
            )
            .await?;
        if response.code() == ResponseCode::Success.code() {
            Ok(())
        } else {
            Err(Refusal::new(
                Code::InternalServerError,
                "ack failed: status is abnormal",
            ))
        }
    }

    /// AckMessage: each entry acked on its own (Apache's `ackMessageOneByOne`).
    pub async fn ack(
        &self,
        request: &pb::AckMessageRequest,
        now_ms: i64,
    ) -> pb::AckMessageResponse {
        let names = crate::resource::check_topic(request.topic.as_ref()).and_then(|t| {
            crate::resource::check_group(request.group.as_ref())
                .map(|g| (t.to_owned(), g.to_owned()))
        });
        let (topic, group) = match names {
            Ok(n) => n,
            Err(r) => {
                return pb::AckMessageResponse {
                    status: Some(r.status()),
                    entries: Vec::new(),
                };
            }
        };
        let mut entries = Vec::with_capacity(request.entries.len());
        for e in &request.entries {
            let status = match self
                .ack_one(&group, &topic, &e.receipt_handle, now_ms)
                .await
            {
                Ok(()) => status::ok(),
                Err(r) => r.status(),
            };
            entries.push(pb::AckMessageResultEntry {
                message_id: e.message_id.clone(),
                receipt_handle: e.receipt_handle.clone(),
                status: Some(status),
            });
        }
        pb::AckMessageResponse {
            status: Some(overall(
                entries.iter().filter_map(|e| e.status.as_ref()),
                "ack message",
            )),
            entries,
        }
    }

    /// ChangeInvisibleDuration: the new receipt handle.
    ///
    /// # Errors
    /// The refusal the response carries.
    pub async fn change_invisible(
        &self,
        request: &pb::ChangeInvisibleDurationRequest,
        now_ms: i64,
    ) -> Result<String, Refusal> {
        let topic = crate::resource::check_topic(request.topic.as_ref())?;
        let group = crate::resource::check_group(request.group.as_ref())?;
        let invisible = check_invisible(
            request.invisible_duration.as_ref().map_or(0, millis_of),
            0,
            self.config.max_invisible_time_mills,
        )?;
        let handle = Handle::parse(&request.receipt_handle)?;
        if handle.is_expired(now_ms) {
            return Err(Refusal::new(
                Code::InvalidReceiptHandle,
                "receipt handle is expired",
            ));
        }
        let addr = self.broker_of(topic, &handle).await?;
        let real_topic = handle.extra.real_topic(topic, group);
        let header = ChangeInvisibleTimeRequestHeader {
            consumer_group: group.to_owned(),
            topic: real_topic.clone(),
            queue_id: handle.extra.queue_id,
            extra_info: handle.text.clone(),
            offset: handle.offset,
            invisible_time: invisible,
        };
        let response = self
            .call(
                &addr,
                RemotingCommand::request_with(RequestCode::ChangeMessageInvisibletime, &header),
                BROKER_TIMEOUT,
            )
            .await?;
        if response.code() != ResponseCode::Success.code() {
            return Err(Refusal::new(
                Code::InternalServerError,
                "changeInvisibleDuration failed: status is abnormal",
            ));
        }
        let answer: ChangeInvisibleTimeResponseHeader = response.decode_header().map_err(|e| {
            Refusal::new(Code::InternalServerError, format!("unreadable answer: {e}"))
        })?;
        // As the client API builds it: the message's offset as the checkpoint's start.
        let extra = ExtraInfo {
            ck_queue_offset: handle.offset,
            pop_time: answer.pop_time,
            invisible_time: answer.invisible_time,
            revive_qid: answer.revive_qid,
            retry: RetryFlag::of_topic(&real_topic),
            broker_name: handle.extra.broker_name.clone(),
            queue_id: handle.extra.queue_id,
            queue_offset: Some(handle.offset),
        };
        Ok(Handle::text_of(&extra, handle.commit_log_offset))
    }

    /// CONSUMER_SEND_MSG_BACK of `handle` straight to the DLQ, then its ack
    /// (`ProducerProcessor.forwardMessageToDeadLetterQueue`).
    async fn forward_one(
        &self,
        group: &str,
        topic: &str,
        handle_text: &str,
        message_id: &str,
        now_ms: i64,
    ) -> pb::Status {
        let handle = match Handle::parse(handle_text) {
            Ok(h) => h,
            Err(r) => return r.status(),
        };
        if handle.commit_log_offset < 0 {
            return Refusal::new(Code::InvalidReceiptHandle, "commit log offset is empty").status();
        }
        let addr = match self.broker_of(topic, &handle).await {
            Ok(a) => a,
            Err(r) => return r.status(),
        };
        let header = ConsumerSendMsgBackRequestHeader {
            offset: handle.commit_log_offset,
            group: group.to_owned(),
            delay_level: -1,
            origin_msg_id: Some(message_id.to_owned()),
            origin_topic: Some(handle.extra.real_topic(topic, group)),
            unit_mode: Some(false),
            max_reconsume_times: Some(0),
        };
        let response = match self
            .call(
                &addr,
                RemotingCommand::request_with(RequestCode::ConsumerSendMsgBack, &header),
                BROKER_TIMEOUT,
            )
            .await
        {
            Ok(r) => r,
            Err(r) => return r.status(),
        };
        if response.code() == ResponseCode::Success.code() {
            if let Err(r) = self.ack_one(group, topic, handle_text, now_ms).await {
                warn!(topic, group, id = message_id, error = %r, "ack after the forward to the DLQ failed");
            }
            return status::ok();
        }
        Refusal::from_response(response.code(), response.remark()).status()
    }

    /// ForwardMessageToDeadLetterQueue.
    pub async fn forward_to_dlq(
        &self,
        request: &pb::ForwardMessageToDeadLetterQueueRequest,
        now_ms: i64,
    ) -> pb::Status {
        let topic = match crate::resource::check_topic(request.topic.as_ref()) {
            Ok(t) => t,
            Err(r) => return r.status(),
        };
        let group = match crate::resource::check_group(request.group.as_ref()) {
            Ok(g) => g,
            Err(r) => return r.status(),
        };
        self.forward_one(
            group,
            topic,
            &request.receipt_handle,
            &request.message_id,
            now_ms,
        )
        .await
    }

    /// QueryAssignment: the queues a PushConsumer receives from, with the proxy's
    /// `endpoints` (`RouteActivity.queryAssignment`).
    ///
    /// # Errors
    /// The refusal the response carries (FORBIDDEN when no queue is readable).
    pub async fn query_assignment(
        &self,
        request: &pb::QueryAssignmentRequest,
        endpoints: &pb::Endpoints,
    ) -> Result<Vec<pb::Assignment>, Refusal> {
        let topic = crate::resource::check_topic(request.topic.as_ref())?;
        let group = crate::resource::check_group(request.group.as_ref())?;
        let route = self.routes.get(topic).await?;
        let fifo = self.group_policy(group, topic).await.fifo;
        let resource = request.topic.clone().unwrap_or_default();
        Ok(assignments(&route, &resource, endpoints, fifo)).and_then(|a| {
            if a.is_empty() {
                Err(Refusal::new(Code::Forbidden, "no readable queue"))
            } else {
                Ok(a)
            }
        })
    }
}

/// The assignments of `route`: per readable queue data with a master, one with queue id -1,
/// or one per read queue when `fifo`.
fn assignments(
    route: &TopicRoute,
    topic: &pb::Resource,
    endpoints: &pb::Endpoints,
    fifo: bool,
) -> Vec<pb::Assignment> {
    let mut out = Vec::new();
    for q in &route.data.queue_datas {
        if !perm::is_readable(q.perm) || q.read_queue_nums <= 0 {
            continue;
        }
        let has_master = route
            .data
            .broker_datas
            .iter()
            .any(|b| b.broker_name == q.broker_name && b.master_addr().is_some());
        if !has_master {
            continue;
        }
        let broker = pb::Broker {
            name: q.broker_name.clone(),
            id: 0,
            endpoints: Some(endpoints.clone()),
        };
        let ids: Vec<i32> = if fifo {
            (0..q.read_queue_nums).collect()
        } else {
            vec![-1]
        };
        for id in ids {
            out.push(pb::Assignment {
                message_queue: Some(pb::MessageQueue {
                    topic: Some(topic.clone()),
                    id,
                    permission: convert::permission(q.perm).into(),
                    broker: Some(broker.clone()),
                    accept_message_types: Vec::new(),
                }),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use remoting::protocol::route::{BrokerData, QueueData, TopicRouteData};

    use super::*;

    #[test]
    fn filters_as_filter_api_builds_them() {
        let tag = |e: &str| {
            Filter::of(Some(&pb::FilterExpression {
                r#type: FilterType::Tag.into(),
                expression: e.into(),
            }))
        };
        let all = tag(" * ");
        assert_eq!((all.kind, all.expression.as_str()), ("TAG", "*"));
        assert!(all.matches(None) && all.matches(Some("x")));
        assert_eq!(Filter::of(None), tag(""));
        let two = tag("TagB || TagA");
        assert_eq!(two.expression, "TagA||TagB");
        assert!(two.matches(Some("TagA")) && two.matches(Some("TagB")));
        assert!(!two.matches(Some("TagC")) && !two.matches(None));
        let sql = Filter::of(Some(&pb::FilterExpression {
            r#type: FilterType::Sql.into(),
            expression: "a > 1".into(),
        }));
        assert_eq!((sql.kind, sql.expression.as_str()), ("SQL92", "a > 1"));
        assert!(
            sql.matches(Some("whatever")),
            "SQL92 is the broker's to judge"
        );
    }

    #[test]
    fn polling_and_invisible_bounds_are_apaches() {
        let c = ProxyConfig::default();
        let p = |req, left, version| polling_time(req, left, 3000, &c, version);
        assert_eq!(
            p(Some(30_000), None, "5.0.7"),
            Ok(20_000),
            "capped by the max"
        );
        assert_eq!(
            p(Some(1_000), None, "5.0.7"),
            Ok(5_000),
            "raised to the min"
        );
        assert_eq!(
            p(None, Some(13_000), "5.0.7"),
            Ok(11_500),
            "deadline less half the timeout"
        );
        assert_eq!(
            p(Some(20_000), Some(8_000), "5.0.7"),
            Ok(8_000),
            "within the deadline"
        );
        assert_eq!(
            p(Some(20_000), Some(4_000), "5.0.7").unwrap_err().code,
            Code::IllegalPollingTime
        );
        assert_eq!(
            p(Some(20_000), Some(4_000), "5.0.2").unwrap_err().code,
            Code::BadRequest
        );

        assert_eq!(check_invisible(10_000, 10_000, 43_200_000), Ok(10_000));
        assert_eq!(
            check_invisible(9_999, 10_000, 43_200_000).unwrap_err().code,
            Code::IllegalInvisibleTime
        );
        assert_eq!(
            check_invisible(43_200_001, 0, 43_200_000).unwrap_err().code,
            Code::IllegalInvisibleTime
        );
        assert_eq!(
            check_invisible(43_200_001, 0, 0),
            Ok(43_200_001),
            "0: no max"
        );
    }

    #[test]
    fn ack_status_of_entries() {
        let ok = status::ok();
        let bad = Refusal::new(Code::InvalidReceiptHandle, "x").status();
        assert_eq!(overall([&ok, &ok].into_iter(), "ack").code, Code::Ok as i32);
        assert_eq!(
            overall([&bad].into_iter(), "ack").code,
            Code::InvalidReceiptHandle as i32
        );
        assert_eq!(
            overall([&ok, &bad].into_iter(), "ack").code,
            Code::MultipleResults as i32
        );
        assert_eq!(
            overall(std::iter::empty(), "ack").code,
            Code::InternalServerError as i32
        );
    }

    fn route() -> TopicRoute {
        let queues = |name: &str, perm| QueueData {
            broker_name: name.into(),
            read_queue_nums: 2,
            write_queue_nums: 2,
            perm,
            topic_sys_flag: 0,
        };
        let broker = |name: &str, id| BrokerData {
            broker_name: name.into(),
            broker_addrs: [(id, format!("{name}:1"))].into(),
            ..BrokerData::default()
        };
        TopicRoute::new(TopicRouteData {
            queue_datas: vec![
                queues("a", 6),
                queues("b", 2),
                queues("c", 4),
                queues("d", 6),
            ],
            broker_datas: vec![
                broker("a", 0),
                broker("b", 0),
                broker("c", 0),
                broker("d", 1),
            ],
            ..TopicRouteData::default()
        })
    }

    #[test]
    fn assignments_per_broker_or_per_queue() {
        let topic = pb::Resource {
            resource_namespace: String::new(),
            name: "T".into(),
        };
        let endpoints = pb::Endpoints::default();
        let got: Vec<(String, i32, pb::Permission)> =
            assignments(&route(), &topic, &endpoints, false)
                .into_iter()
                .map(|a| {
                    let q = a.message_queue.unwrap();
                    (q.broker.clone().unwrap().name, q.id, q.permission())
                })
                .collect();
        // b is write-only, d has no master.
        assert_eq!(
            got,
            [
                ("a".to_owned(), -1, pb::Permission::ReadWrite),
                ("c".to_owned(), -1, pb::Permission::Read)
            ]
        );
        let fifo = assignments(&route(), &topic, &endpoints, true);
        let ids: Vec<i32> = fifo
            .iter()
            .map(|a| a.message_queue.as_ref().unwrap().id)
            .collect();
        assert_eq!(ids, [0, 1, 0, 1]);

        let brokers = read_brokers(&route());
        assert_eq!(
            brokers.into_iter().collect::<Vec<_>>(),
            [
                ("a".to_owned(), "a:1".to_owned()),
                ("c".to_owned(), "c:1".to_owned()),
                ("d".to_owned(), "d:1".to_owned())
            ],
            "a slave serves a pop when the master is gone"
        );
    }
}
