//! POP_MESSAGE (200050), RocketMQ 5's `PopMessageProcessor`: the broker picks the
//! queues (every read queue of the topic for queue id −1, starting at a random one),
//! mixes in the group's retry topic (first for `popFromRetryProbability` percent of the
//! pops, else when the topic did not fill the batch), records a checkpoint per queue
//! read, and moves the group's offset past the batch.
//!
//! The checkpoints go to `pop::ck_buffer`, which keeps them in memory while the batch
//! may be acked soon and commits the offsets: past a batch only once it is acked or its
//! checkpoint durable, so a committed offset never passes messages a crash could lose.
//! A pop that finds nothing is held (long polling) until a matching message arrives or
//! `pollTime` passes.
//!
//! Orderly pops (`order=true`) write no checkpoint and read no retry topic: a queue
//! is locked to its last batch (`pop::order_info`) until that is acked or visible
//! again, the offset committed is the batch's start, and the response carries each
//! message's delivery count (`orderCountInfo`).

use std::sync::Arc;

use bytes::Bytes;
use message::properties;
use message::record::{self, Record};
use remoting::protocol::constants::perm;
use remoting::protocol::heartbeat::SubscriptionData;
use remoting::protocol::pop::{
    ExtraInfo, POP_CK, POP_ORDER_REVIVE_QUEUE, PopMessageRequestHeader, PopMessageResponseHeader,
    PopOffsetInfo, RetryFlag, pop_retry_topic,
};
use remoting::server::Reply;
use remoting::{Body, Channel, RemotingCommand, ResponseCode};
use store::GetMessageStatus;

use super::pull::property_filter_off;
use super::{Refusal, as_i64, success};
use crate::broker::Broker;
use crate::filter::{SqlFilter, SubscriptionFilter, TagFilter, is_tag_type};
use crate::pop::PopService;
use crate::pop::ck_buffer::{BufferSettings, QueueKey};
use crate::pop::queues::QueueLock;
use crate::pop::records::CheckPoint;
use crate::pull_hold::HeldPull;

/// RocketMQ 5's FAQ suffix of these remarks.
const FAQ_TIP: &str =
    "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.";
/// Most messages one pop may ask for.
const MAX_MSG_NUMS: i32 = 32;
/// A held pop is answered this long before its deadline (RocketMQ's `PopRequest`).
const DEADLINE_MARGIN_MS: i64 = 50;
/// How late a pop may arrive past its poll time before it is refused outright.
const TOO_LATE_MS: i64 = 500;

/// What running a pop gives.
pub enum Popped {
    /// The response.
    Now(RemotingCommand),
    /// Held for long polling; answered when woken.
    Held,
}

impl std::fmt::Debug for Popped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Popped::Now(r) => f.debug_tuple("Popped::Now").field(&r.code()).finish(),
            Popped::Held => f.write_str("Popped::Held"),
        }
    }
}

/// Handles a pop from the network.
pub fn process(pop: &Arc<PopService>, channel: &Channel, mut request: RemotingCommand) -> Reply {
    stamp_born_time(&mut request);
    match execute(pop, channel, &request) {
        Popped::Now(r) => Reply::Now(r),
        Popped::Held => Reply::Nothing,
    }
}

/// Fills a missing or `0` `bornTime` with now, in the request itself (as RocketMQ
/// does): a held request is run again with the same fields, and its poll time counts
/// from its arrival, not from each run (Apache's proxy sends `bornTime=0`).
pub fn stamp_born_time(request: &mut RemotingCommand) {
    if request.ext("bornTime").is_none_or(|b| b == "0") {
        request
            .header
            .ext_fields
            .insert("bornTime", crate::clock::now_ms().to_string());
    }
}

/// Runs a pop (again, when a held one is woken: it is held again if it still finds
/// nothing before its deadline).
pub fn execute(pop: &Arc<PopService>, channel: &Channel, request: &RemotingCommand) -> Popped {
    match run(pop, channel, request) {
        Ok(p) => p,
        Err(refusal) => Popped::Now(refusal.into_response()),
    }
}

/// One queue's share of a pop.
struct Share {
    queue_id: i32,
    retry: RetryFlag,
    start_offset: i64,
    messages: Vec<Bytes>,
    offsets: Vec<i64>,
}

/// What a pop collected.
#[derive(Default)]
struct Collected {
    shares: Vec<Share>,
    rest: i64,
    found: usize,
    /// Orderly pops: the delivery counts of the messages popped.
    order_counts: PopOffsetInfo,
    /// Orderly pops: the earliest time a queue skipped as locked frees.
    unblocks_at: Option<i64>,
}

struct Ctx<'a> {
    broker: &'a Broker,
    pop: &'a PopService,
    h: &'a PopMessageRequestHeader,
    filter: &'a SubscriptionFilter,
    pop_time: i64,
    revive_qid: i32,
    broker_name: String,
    order: bool,
    buffer: BufferSettings,
}

/// The broker settings a pop reads, copied out of the config lock at its start (the
/// whole `BrokerConfig` is too big to clone per pop, and the lock is not held across it).
struct PopSettings {
    readable: bool,
    broker_name: String,
    enable_retry_topic_v2: bool,
    retrieve_message_from_pop_retry_topic_v1: bool,
    priority_order_asc: bool,
    pop_from_retry_probability: i32,
    pop_from_retry_probability_for_priority: i32,
    pop_response_return_actual_retry_topic: bool,
    max_pop_polling_size: usize,
    pop_polling_size: usize,
    buffer: BufferSettings,
}

impl PopSettings {
    fn of(config: &crate::config::BrokerConfig) -> Self {
        PopSettings {
            readable: perm::is_readable(config.broker_permission),
            broker_name: config.broker_name.clone(),
            enable_retry_topic_v2: config.enable_retry_topic_v2,
            retrieve_message_from_pop_retry_topic_v1: config
                .retrieve_message_from_pop_retry_topic_v1,
            priority_order_asc: config.priority_order_asc,
            pop_from_retry_probability: config.pop_from_retry_probability,
            pop_from_retry_probability_for_priority: config.pop_from_retry_probability_for_priority,
            pop_response_return_actual_retry_topic: config.pop_response_return_actual_retry_topic,
            max_pop_polling_size: config.max_pop_polling_size,
            pop_polling_size: config.pop_polling_size,
            buffer: BufferSettings {
                enabled: config.enable_pop_buffer_merge,
                stay_ms: config.pop_ck_stay_buffer_time,
                max_batches: config.pop_ck_max_buffer_size,
            },
        }
    }
}

fn run(
    pop: &Arc<PopService>,
    channel: &Channel,
    request: &RemotingCommand,
) -> Result<Popped, Refusal> {
    let broker = pop.broker();
    let h: PopMessageRequestHeader = request.decode_header()?;
    let now = crate::clock::now_ms();
    let born = h.born_time.filter(|b| *b != 0).unwrap_or(now);
    let config = PopSettings::of(&broker.config());
    // Only refusals name the broker's address.
    let ip = || broker.config().broker_ip1();
    if h.poll_time > 0 && now - born - h.poll_time > TOO_LATE_MS {
        return Err(Refusal::new(
            ResponseCode::PollingTimeout,
            format!("the broker[{}] pop message is timeout too much", ip()),
        ));
    }
    if !config.readable {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("the broker[{}] pop message is forbidden", ip()),
        ));
    }
    if h.max_msg_nums > MAX_MSG_NUMS {
        return Err(Refusal::new(
            ResponseCode::InvalidParameter,
            format!("the broker[{}] pop message's num is greater than 32", ip()),
        ));
    }
    if !pop.timer().settings().enabled {
        return Err(Refusal::system(format!(
            "the broker[{}] pop message is forbidden because timerWheelEnable is false",
            ip()
        )));
    }
    check_target(broker, channel, &h.topic, h.queue_id, &h.consumer_group)?;
    let filter = pop_filter(broker, &h)?;
    let order = h.order == Some(true);

    let ctx = Ctx {
        broker,
        pop,
        h: &h,
        filter: &filter,
        pop_time: now,
        revive_qid: if order {
            POP_ORDER_REVIVE_QUEUE
        } else {
            pop.next_revive_queue()
        },
        broker_name: config.broker_name.clone(),
        order,
        buffer: config.buffer,
    };
    let random_q = super::send::random_queue(100);
    let retry_topic = {
        let v1 = pop_retry_topic(&h.topic, &h.consumer_group, false);
        if config.enable_retry_topic_v2 {
            let v2 = pop_retry_topic(&h.topic, &h.consumer_group, true);
            // One retry topic per pop: a response keys its offsets by retry flag and
            // queue, so v1 and v2 (both queue 0) cannot share one.
            if config.retrieve_message_from_pop_retry_topic_v1 && random_q % 2 == 0 {
                v1
            } else {
                v2
            }
        } else {
            v1
        }
    };
    // RocketMQ 5.4's priority mode: on a PRIORITY topic, a share (the group's
    // `priority.factor`, 100 %) of the pops of every queue read them highest first.
    let priority = !order && h.queue_id < 0 && random_q < priority_factor(broker, &h) && {
        broker.topics.select(&h.topic).is_some_and(|t| {
            t.attributes
                .get(crate::topic_attributes::MESSAGE_TYPE)
                .map(String::as_str)
                == Some("PRIORITY")
        })
    };
    let scan = if priority {
        Scan::Priority {
            ascending: config.priority_order_asc,
        }
    } else {
        Scan::From(random_q)
    };
    let retry_share = if priority {
        config.pop_from_retry_probability_for_priority
    } else {
        config.pop_from_retry_probability
    };
    // Orderly pops never read the retry topic: their messages come back in place.
    let retry_first = !order && random_q < retry_share;
    let mut got = Collected::default();
    if retry_first {
        pop_topic(&ctx, &retry_topic, None, scan, &mut got);
    }
    if got.found < wanted(&h) {
        pop_topic(
            &ctx,
            &h.topic,
            (h.queue_id >= 0).then_some(h.queue_id),
            scan,
            &mut got,
        );
    }
    if !order && !retry_first && got.found < wanted(&h) {
        pop_topic(&ctx, &retry_topic, None, scan, &mut got);
    }

    let mut header = PopMessageResponseHeader {
        pop_time: ctx.pop_time,
        invisible_time: h.invisible_time,
        revive_qid: ctx.revive_qid,
        rest_num: got.rest.max(0),
        ..PopMessageResponseHeader::default()
    };
    if got.found == 0 {
        let deadline = born + h.poll_time - DEADLINE_MARGIN_MS;
        if h.poll_time > 0 && now < deadline {
            return hold(
                broker,
                &config,
                channel,
                request,
                &h,
                filter,
                deadline - now,
            );
        }
        let mut response = success().with_header(&header);
        response.header.code = ResponseCode::PollingTimeout.code();
        response.header.remark = Some("NO_MESSAGE_IN_QUEUE".into());
        return Ok(Popped::Now(response));
    }

    let mut info = PopOffsetInfo::default();
    let mut body: Vec<Bytes> = Vec::with_capacity(got.found);
    let actual_retry_topic = config.pop_response_return_actual_retry_topic;
    for share in &got.shares {
        if broker.metrics.on() {
            let bytes: usize = share.messages.iter().map(Bytes::len).sum();
            broker.metrics.messages_out(
                &h.consumer_group,
                &h.topic,
                share.retry != RetryFlag::Normal,
                share.messages.len() as u64,
                bytes as u64,
            );
        }
        info.add_start(share.retry, share.queue_id, share.start_offset);
        info.add_msg(share.retry, share.queue_id, &share.offsets);
        for (bytes, offset) in share.messages.iter().zip(&share.offsets) {
            if share.retry != RetryFlag::Normal && !actual_retry_topic {
                let extra = ExtraInfo {
                    ck_queue_offset: share.start_offset,
                    pop_time: ctx.pop_time,
                    invisible_time: h.invisible_time,
                    revive_qid: ctx.revive_qid,
                    retry: share.retry,
                    broker_name: ctx.broker_name.clone(),
                    queue_id: share.queue_id,
                    queue_offset: Some(*offset),
                };
                match as_popped_retry(bytes, &h.topic, &extra) {
                    Some(rewritten) => body.push(rewritten),
                    None => body.push(bytes.clone()),
                }
            } else {
                body.push(bytes.clone());
            }
        }
    }
    header.start_offset_info = info.start_offset_info();
    header.msg_offset_info = info.msg_offset_info();
    if order {
        header.order_count_info = got.order_counts.order_count_info();
    }
    broker.stats.record_get(got.found);
    let mut response = success().with_header(&header);
    response.header.remark = Some("FOUND".into());
    response.body = Body::Parts(body);
    Ok(Popped::Now(response))
}

fn wanted(h: &PopMessageRequestHeader) -> usize {
    usize::try_from(h.max_msg_nums).unwrap_or(0).max(1)
}

/// The order a pop reads the queues of a topic in.
#[derive(Debug, Clone, Copy)]
enum Scan {
    /// From this one on, round the ring (spreads pops over the queues).
    From(i32),
    /// Highest queue first (a priority topic; `ascending: false`: lowest first).
    Priority { ascending: bool },
}

impl Scan {
    fn queues(self, n: i32) -> Vec<i32> {
        let n = n.max(0);
        match self {
            Scan::From(start) => (0..n).map(|i| (start + i) % n.max(1)).collect(),
            Scan::Priority { ascending: true } => (0..n).rev().collect(),
            Scan::Priority { ascending: false } => (0..n).collect(),
        }
    }
}

/// The group's `priority.factor` attribute (RocketMQ 5.4, 0..=100, default 100).
fn priority_factor(broker: &Broker, h: &PopMessageRequestHeader) -> i32 {
    broker
        .groups
        .find(&h.consumer_group)
        .and_then(|g| {
            g.attributes
                .get("priority.factor")
                .and_then(|v| v.parse::<i32>().ok())
        })
        .map_or(100, |f| f.clamp(0, 100))
}

/// Pops from every read queue of `topic` in `scan` order, or from `only`.
fn pop_topic(ctx: &Ctx<'_>, topic: &str, only: Option<i32>, scan: Scan, got: &mut Collected) {
    let Some(config) = ctx.broker.topics.select(topic) else {
        return;
    };
    let queues: Vec<i32> = match only {
        Some(q) => vec![q],
        None => scan.queues(config.read_queue_nums),
    };
    for queue_id in queues {
        if got.found >= wanted(ctx.h) {
            break;
        }
        pop_queue(ctx, topic, queue_id, got);
    }
}

/// Pops what it can from one queue under its lock.
fn pop_queue(ctx: &Ctx<'_>, topic: &str, queue_id: i32, got: &mut Collected) {
    let broker = ctx.broker;
    let group = &ctx.h.consumer_group;
    let is_retry = topic != ctx.h.topic;
    if !broker.role().is_master() {
        // A slave cannot write the checkpoint (nor commit): nothing can be handed out,
        // as on RocketMQ, where the checkpoint's put fails there.
        return;
    }
    let Some(lock) = ctx.pop.queues().try_lock(topic, group, queue_id) else {
        // Another pop reads it; count its backlog as RocketMQ does.
        let max = as_i64(broker.store.max_offset_in_queue(topic, queue_id));
        let committed = broker.offsets.query(group, topic, queue_id).unwrap_or(0);
        got.rest += (max - committed).max(0);
        return;
    };
    if ctx.order {
        let attempt = ctx.h.attempt_id.as_deref();
        if broker.order_info.blocked(attempt, topic, group, queue_id) {
            if let Some(t) = broker.order_info.unblocks_at(topic, group, queue_id) {
                got.unblocks_at = Some(got.unblocks_at.map_or(t, |u| u.min(t)));
            }
            return;
        }
    }
    let mut offset = pop_offset(ctx, &lock, topic, queue_id, is_retry);
    let remaining = wanted(ctx.h).saturating_sub(got.found);
    let mut result = read(broker, topic, queue_id, offset, remaining, ctx.filter);
    if matches!(
        result.status,
        GetMessageStatus::OffsetTooSmall
            | GetMessageStatus::OffsetOverflowBadly
            | GetMessageStatus::OffsetFoundNull
    ) {
        // The position is gone (expired, or beyond the end): move it and read again.
        let corrected = as_i64(result.next_begin_offset);
        ctx.pop
            .buffer()
            .reset_queue(&queue_key(topic, group, queue_id));
        broker
            .offsets
            .commit_journaled(group, topic, queue_id, corrected);
        lock.clear_in_flight_end();
        offset = corrected;
        result = read(broker, topic, queue_id, offset, remaining, ctx.filter);
    }
    let next = as_i64(result.next_begin_offset);
    got.rest += (as_i64(result.max_offset) - next).max(0);
    if ctx.order {
        pop_queue_orderly(ctx, topic, queue_id, offset, next, result, got);
        return;
    }
    if result.status == GetMessageStatus::Found && !result.messages.is_empty() {
        let offsets: Vec<i64> = result.queue_offsets.iter().map(|o| as_i64(*o)).collect();
        let ck = CheckPoint {
            broker_name: Some(ctx.broker_name.clone()),
            group: group.clone(),
            queue_offset_diff: Some(
                offsets
                    .iter()
                    .map(|o| i32::try_from(o - offset).unwrap_or(i32::MAX))
                    .collect(),
            ),
            invisible_time: ctx.h.invisible_time,
            num: u8::try_from(offsets.len()).unwrap_or(u8::MAX),
            pop_time: ctx.pop_time,
            queue_id,
            start_offset: offset,
            topic: topic.to_owned(),
            ..CheckPoint::default()
        };
        match ctx
            .pop
            .buffer()
            .popped(ck, ctx.revive_qid, next, ctx.buffer)
        {
            Ok(()) => {
                lock.set_in_flight_end(next);
                got.found += offsets.len();
                got.shares.push(Share {
                    queue_id,
                    retry: RetryFlag::of_topic(topic),
                    start_offset: offset,
                    messages: result.messages,
                    offsets,
                });
            }
            Err(e) => {
                // Not handed out: without a checkpoint nothing would bring them back.
                log_limit::limited!(
                    warn!(%topic, queue_id, error = %e, "pop checkpoint not written; messages kept for the next pop")
                );
            }
        }
    } else if next > offset {
        // Only filtered or holey units: move past them.
        lock.set_in_flight_end(next);
        ctx.pop
            .buffer()
            .skipped(&queue_key(topic, group, queue_id), offset, next);
    }
}

fn read(
    broker: &Broker,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max: usize,
    filter: &SubscriptionFilter,
) -> store::GetMessageResult {
    broker.store.get_message(
        topic,
        queue_id,
        u64::try_from(offset).unwrap_or(0),
        max,
        None,
        filter,
    )
}

/// Where a pop of the queue starts (RocketMQ's `getPopOffset`): a pending reset, else
/// the committed offset (or the init offset of a new group, committed at once), and
/// never before the end of batches already popped.
fn pop_offset(
    ctx: &Ctx<'_>,
    lock: &QueueLock<'_>,
    topic: &str,
    queue_id: i32,
    is_retry: bool,
) -> i64 {
    let broker = ctx.broker;
    let group = &ctx.h.consumer_group;
    if broker.offsets.has_pending_reset(group, topic, queue_id) {
        if let Some(reset) = broker.offsets.take_pending_reset(group, topic, queue_id) {
            ctx.pop
                .buffer()
                .reset_queue(&queue_key(topic, group, queue_id));
            broker
                .offsets
                .commit_journaled(group, topic, queue_id, reset);
            lock.clear_in_flight_end();
            broker.order_info.clear(topic, group, queue_id);
            return reset;
        }
    }
    let committed = match broker.offsets.query(group, topic, queue_id) {
        Some(o) if o >= 0 => o,
        _ => {
            let init = init_offset(ctx, topic, queue_id, is_retry);
            broker
                .offsets
                .commit_journaled(group, topic, queue_id, init);
            init
        }
    };
    if ctx.order {
        // Orderly batches are not in flight past the offset: their start is committed.
        return committed;
    }
    lock.in_flight_end()
        .map_or(committed, |end| end.max(committed))
}

/// An orderly pop's read of one queue: the batch recorded in the order info, the
/// offset committed at its start (acks move it on; an expiry reads it again).
fn pop_queue_orderly(
    ctx: &Ctx<'_>,
    topic: &str,
    queue_id: i32,
    offset: i64,
    next: i64,
    result: store::GetMessageResult,
    got: &mut Collected,
) {
    let broker = ctx.broker;
    let group = &ctx.h.consumer_group;
    if result.status != GetMessageStatus::Found || result.messages.is_empty() {
        if next > offset {
            broker
                .offsets
                .commit_journaled(group, topic, queue_id, next);
        }
        return;
    }
    let offsets: Vec<i64> = result.queue_offsets.iter().map(|o| as_i64(*o)).collect();
    let retry = RetryFlag::of_topic(topic);
    broker.order_info.update(
        ctx.h.attempt_id.as_deref(),
        retry,
        topic,
        group,
        queue_id,
        ctx.pop_time,
        ctx.h.invisible_time,
        &offsets,
        &mut got.order_counts,
    );
    broker
        .offsets
        .commit_journaled(group, topic, queue_id, offset);
    got.found += offsets.len();
    got.shares.push(Share {
        queue_id,
        retry,
        start_offset: offset,
        messages: result.messages,
        offsets,
    });
}

/// RocketMQ's `getInitOffset`: MIN mode and retry topics from the first message; MAX
/// from the last one, or from 0 while the whole queue is still in memory.
fn init_offset(ctx: &Ctx<'_>, topic: &str, queue_id: i32, is_retry: bool) -> i64 {
    let store = &ctx.broker.store;
    let min = store.min_offset_in_queue(topic, queue_id);
    if ctx.h.init_mode == 0 || is_retry {
        return as_i64(min);
    }
    let max = store.max_offset_in_queue(topic, queue_id);
    let whole_in_memory = ctx.broker.config().init_pop_offset_by_check_msg_in_mem
        && min == 0
        && max > 0
        && !store.check_in_disk_by_consume_offset(topic, queue_id, 0);
    if whole_in_memory {
        0
    } else {
        as_i64(max.saturating_sub(1))
    }
}

/// The checks every pop-family request makes of its topic, queue and group, in
/// RocketMQ's order and words (the group is created when auto-creation is on).
///
/// # Errors
/// The topic is missing or not readable, the queue id beyond its read queues, the group
/// missing or not allowed to consume.
pub fn check_target(
    broker: &Broker,
    channel: &Channel,
    topic: &str,
    queue_id: i32,
    group: &str,
) -> Result<(), Refusal> {
    let config = broker.topics.select(topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::TopicNotExist,
            format!("topic[{topic}] not exist, apply first please! {FAQ_TIP}"),
        )
    })?;
    if !perm::is_readable(config.perm) {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("the topic[{topic}] peeking message is forbidden"),
        ));
    }
    if queue_id >= config.read_queue_nums {
        return Err(Refusal::new(
            ResponseCode::InvalidParameter,
            format!(
                "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}] consumer:[{}]",
                config.read_queue_nums,
                channel.peer_addr()
            ),
        ));
    }
    let group_config = broker.groups.find_or_create(group).ok_or_else(|| {
        Refusal::new(
            ResponseCode::SubscriptionGroupNotExist,
            format!("subscription group [{group}] does not exist, {FAQ_TIP}"),
        )
    })?;
    if !group_config.consume_enable {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("subscription group no permission, {group}"),
        ));
    }
    Ok(())
}

/// The filter of a pop's expression (TAG when none).
fn pop_filter(broker: &Broker, h: &PopMessageRequestHeader) -> Result<SubscriptionFilter, Refusal> {
    let expression = h.exp.as_deref().filter(|e| !e.is_empty()).unwrap_or("*");
    let ty = h.exp_type.as_deref();
    if is_tag_type(ty) {
        let sub = SubscriptionData::build_tag(&h.topic, expression, 0);
        return Ok(SubscriptionFilter::Tag(TagFilter::new(&sub)));
    }
    let ty = ty.unwrap_or_default();
    if !broker.config().enable_property_filter {
        return Err(property_filter_off(ty));
    }
    broker
        .filters
        .compile(ty, expression)
        .map(|selector| SubscriptionFilter::Sql(SqlFilter::new(selector)))
        .map_err(|_| {
            Refusal::new(
                ResponseCode::SubscriptionParseFailed,
                "parse the consumer's subscription failed",
            )
        })
}

/// Holds a pop that found nothing (RocketMQ's `PopLongPollingService.polling`).
fn hold(
    broker: &Broker,
    config: &PopSettings,
    channel: &Channel,
    request: &RemotingCommand,
    h: &PopMessageRequestHeader,
    filter: SubscriptionFilter,
    wait_ms: i64,
) -> Result<Popped, Refusal> {
    let hold = &broker.pull_hold;
    if hold.held() >= config.max_pop_polling_size
        || hold.pops_held(&h.topic, h.queue_id, &h.consumer_group) > config.pop_polling_size
    {
        let mut response = success();
        response.header.code = ResponseCode::PollingFull.code();
        response.header.remark = Some("POLLING_FULL".into());
        return Ok(Popped::Now(response));
    }
    hold.suspend(
        &h.topic,
        h.queue_id,
        HeldPull {
            channel: channel.clone(),
            request: request.clone(),
            offset: None,
            filter,
            since: std::time::Instant::now(),
        },
        u64::try_from(wait_ms).unwrap_or(0),
    );
    Ok(Popped::Held)
}

/// A retried message as a pop answers it: under the topic popped, with its POP_CK (the
/// client cannot build it: the offsets in the header are the retry topic's).
fn as_popped_retry(bytes: &Bytes, topic: &str, extra: &ExtraInfo) -> Option<Bytes> {
    let Ok(Some(Record::Message(m))) = record::decode(bytes) else {
        return None;
    };
    let props = properties::set(&m.properties_str(), &[(POP_CK, &extra.encode())]);
    let fields = record::RecordFields {
        topic: topic.as_bytes(),
        properties: [props.as_bytes(), &[], &[]],
        ..m.fields()
    };
    let len = fields.encoded_len()?;
    let mut buf = vec![0u8; len];
    record::encode(&mut buf, &fields);
    Some(Bytes::from(buf))
}

fn queue_key(topic: &str, group: &str, queue_id: i32) -> QueueKey {
    QueueKey {
        topic: topic.to_owned(),
        group: group.to_owned(),
        queue_id,
    }
}
