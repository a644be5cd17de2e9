//! PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361) (RocketMQ's PullMessageProcessor):
//! permission and subscription checks, the store lookup with a tag filter, the status
//! → response-code table, long polling, and the piggybacked offset commit.
//!
//! A pull that finds nothing and may be suspended is handed to the [`PullHold`]
//! service and answered later — when dispatch reports a matching message for its
//! queue, or at its timeout — by running this same handler again with suspension
//! off. Messages leave as slices of the mapped CommitLog (a multi-part body written
//! with one vectored write), never copied in user space.
//!
//! [`PullHold`]: crate::pull_hold::PullHold

use std::sync::Arc;

use remoting::protocol::broker::{PullMessageRequestHeader, PullMessageResponseHeader};
use remoting::protocol::constants::{perm, pull_sys_flag, system};
use remoting::protocol::heartbeat::{MessageModel, SubscriptionData};
use remoting::server::Reply;
use remoting::{Body, Channel, RemotingCommand, ResponseCode};
use store::GetMessageStatus;
use tracing::{info, warn};

use super::{Refusal, as_i64, success};
use crate::broker::Broker;
use crate::config::{BrokerConfig, BrokerRole};
use crate::filter::{SqlFilter, SubscriptionFilter, TagFilter, is_tag_type};
use crate::pull_hold::HeldPull;

/// `FAQUrl.suggestTodo(SUBSCRIPTION_GROUP_NOT_EXIST)` etc. as 4.9.8 writes them.
pub(crate) const FAQ_TIP: &str = "\nSee http://rocketmq.apache.org/docs/faq/ for further details.";

/// Handles a pull from the network (suspension allowed).
pub fn process(broker: &Arc<Broker>, channel: &Channel, request: RemotingCommand) -> Reply {
    match execute(broker, channel, &request, true) {
        Some(response) => Reply::Now(response),
        None => Reply::Nothing,
    }
}

/// Runs a pull. Returns the response, or `None` when the pull was handed to the hold
/// service (it answers later).
pub fn execute(
    broker: &Arc<Broker>,
    channel: &Channel,
    request: &RemotingCommand,
    allow_suspend: bool,
) -> Option<RemotingCommand> {
    let header: PullMessageRequestHeader = match request.decode_header() {
        Ok(h) => h,
        Err(e) => return Some(Refusal::from(e).into_response()),
    };
    // A reset waiting for this pull outranks the position the client commits with it.
    let reset_pending =
        broker
            .offsets
            .has_pending_reset(&header.consumer_group, &header.topic, header.queue_id);
    let outcome = pull(
        broker,
        channel,
        request,
        &header,
        allow_suspend,
        reset_pending,
    );
    // The piggybacked commit happens on the first execution, whatever the outcome.
    let commit = allow_suspend
        && pull_sys_flag::has(header.sys_flag, pull_sys_flag::COMMIT_OFFSET)
        && broker.role() != BrokerRole::SLAVE
        && !reset_pending;
    if commit {
        broker.offsets.commit(
            &header.consumer_group,
            &header.topic,
            header.queue_id,
            header.commit_offset,
        );
    }
    match outcome {
        Ok(response) => response,
        Err(refusal) => Some(refusal.into_response()),
    }
}

fn pull(
    broker: &Arc<Broker>,
    channel: &Channel,
    request: &RemotingCommand,
    h: &PullMessageRequestHeader,
    allow_suspend: bool,
    reset_pending: bool,
) -> Result<Option<RemotingCommand>, Refusal> {
    let config = broker.config().clone();
    if !perm::is_readable(config.broker_permission) {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!(
                "the broker[{}] pulling message is forbidden",
                config.broker_ip1()
            ),
        ));
    }
    let group = broker
        .groups
        .find_or_create(&h.consumer_group)
        .ok_or_else(|| {
            Refusal::new(
                ResponseCode::SubscriptionGroupNotExist,
                format!(
                    "subscription group [{}] does not exist, {FAQ_TIP}",
                    h.consumer_group
                ),
            )
        })?;
    if !group.consume_enable {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("subscription group no permission, {}", h.consumer_group),
        ));
    }
    let suspend = pull_sys_flag::has(h.sys_flag, pull_sys_flag::SUSPEND);
    let has_subscription = pull_sys_flag::has(h.sys_flag, pull_sys_flag::SUBSCRIPTION);
    let topic = broker.topics.select(&h.topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::TopicNotExist,
            format!(
                "topic[{}] not exist, apply first please! {FAQ_TIP}",
                h.topic
            ),
        )
    })?;
    if !perm::is_readable(topic.perm) {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("the topic[{}] pulling message is forbidden", h.topic),
        ));
    }
    if h.queue_id < 0 || h.queue_id >= topic.read_queue_nums {
        return Err(Refusal::system(format!(
            "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}] consumer:[{}]",
            h.queue_id,
            h.topic,
            topic.read_queue_nums,
            channel.peer_addr()
        )));
    }
    let filter = if has_subscription {
        carried_filter(broker, &config, h)?
    } else {
        let info = broker.consumers.group(&h.consumer_group).ok_or_else(|| {
            Refusal::new(
                ResponseCode::SubscriptionNotExist,
                format!("the consumer's group info not exist{FAQ_TIP}"),
            )
        })?;
        if !group.consume_broadcast_enable && info.message_model == MessageModel::Broadcasting {
            return Err(Refusal::new(
                ResponseCode::NoPermission,
                format!(
                    "the consumer group[{}] can not consume by broadcast way",
                    h.consumer_group
                ),
            ));
        }
        let sub = info.subscriptions.get(&h.topic).ok_or_else(|| {
            Refusal::new(
                ResponseCode::SubscriptionNotExist,
                format!("the consumer's subscription not exist{FAQ_TIP}"),
            )
        })?;
        if sub.sub_version < h.sub_version {
            return Err(Refusal::new(
                ResponseCode::SubscriptionNotLatest,
                "the consumer's subscription not latest",
            ));
        }
        registered_filter(broker, &config, h, sub)?
    };
    let reset = reset_pending
        .then(|| {
            broker
                .offsets
                .take_pending_reset(&h.consumer_group, &h.topic, h.queue_id)
        })
        .flatten();
    if let Some(reset) = reset {
        // A client already reading from the reset offset goes on (RocketMQ bounces it
        // all the same); any other is moved there.
        if reset != h.queue_offset {
            return Ok(Some(offset_reset_response(broker, h, reset)));
        }
    }
    let offset = u64::try_from(h.queue_offset).unwrap_or(0);
    let max_msgs = usize::try_from(h.max_msg_nums).unwrap_or(0).max(1);
    let result = broker.store.get_message(
        &h.topic,
        h.queue_id,
        offset,
        max_msgs,
        h.max_msg_bytes.and_then(|b| usize::try_from(b).ok()),
        &filter,
    );

    let mut suggest = if result.suggest_pull_from_slave {
        group.which_broker_when_consume_slowly
    } else {
        group.broker_id
    };
    let role = broker.role();
    let mut code = match result.status {
        GetMessageStatus::Found => ResponseCode::Success,
        GetMessageStatus::MessageWasRemoving | GetMessageStatus::NoMatchedMessage => {
            ResponseCode::PullRetryImmediately
        }
        GetMessageStatus::NoMatchedLogicQueue | GetMessageStatus::NoMessageInQueue => {
            if h.queue_offset != 0 {
                ResponseCode::PullOffsetMoved
            } else {
                ResponseCode::PullNotFound
            }
        }
        GetMessageStatus::OffsetFoundNull | GetMessageStatus::OffsetOverflowOne => {
            ResponseCode::PullNotFound
        }
        GetMessageStatus::OffsetOverflowBadly | GetMessageStatus::OffsetTooSmall => {
            ResponseCode::PullOffsetMoved
        }
        _ => ResponseCode::PullRetryImmediately,
    };
    let mut next_begin = result.next_begin_offset;
    if role == BrokerRole::SLAVE {
        if config.slave_read_enable {
            if !result.suggest_pull_from_slave {
                suggest = group.broker_id;
            }
        } else {
            // RocketMQ 4.9 sets PULL_RETRY_IMMEDIATELY here and then overwrites it with the
            // read's status: a slave without slaveReadEnable still serves what it holds and
            // only points the client back at the master. Answering "retry" with an advanced
            // nextBeginOffset would move a consumer past messages it never received.
            suggest = system::MASTER_ID;
        }
        if code == ResponseCode::PullOffsetMoved && !config.offset_check_in_slave {
            code = ResponseCode::PullRetryImmediately;
            next_begin = offset;
        }
    } else if !config.slave_read_enable {
        suggest = system::MASTER_ID;
    }

    if code == ResponseCode::PullNotFound && allow_suspend && suspend {
        let timeout_ms = if config.long_polling_enable {
            u64::try_from(h.suspend_timeout_millis).unwrap_or(0)
        } else {
            config.short_polling_time_mills
        };
        broker.pull_hold.suspend(
            &h.topic,
            h.queue_id,
            HeldPull {
                channel: channel.clone(),
                request: request.clone(),
                offset: Some(offset),
                filter,
                since: std::time::Instant::now(),
            },
            timeout_ms,
        );
        return Ok(None);
    }

    let header = PullMessageResponseHeader {
        suggest_which_broker_id: suggest,
        next_begin_offset: i64::try_from(next_begin).unwrap_or(i64::MAX),
        min_offset: i64::try_from(result.min_offset).unwrap_or(0),
        max_offset: i64::try_from(result.max_offset).unwrap_or(i64::MAX),
        ..PullMessageResponseHeader::default()
    };
    let mut response = success().with_header(&header);
    response.header.code = code.code();
    response.header.remark = Some(result.status.as_str().to_owned());
    if code == ResponseCode::Success {
        broker.stats.record_get(result.messages.len());
        if broker.metrics.on() {
            let bytes: usize = result.messages.iter().map(|m| m.len()).sum();
            broker.metrics.messages_out(
                &h.consumer_group,
                &h.topic,
                false,
                result.messages.len() as u64,
                bytes as u64,
            );
        }
        response.body = Body::Parts(result.messages);
    } else {
        broker.stats.record_get(0);
    }
    Ok(Some(response))
}

/// PULL_OFFSET_MOVED to a server-side reset's offset (RocketMQ's `OFFSET_RESET` status):
/// the client drops what it holds of the queue and resumes from `reset`.
fn offset_reset_response(
    broker: &Broker,
    h: &PullMessageRequestHeader,
    reset: i64,
) -> RemotingCommand {
    let header = PullMessageResponseHeader {
        suggest_which_broker_id: system::MASTER_ID,
        next_begin_offset: reset,
        min_offset: as_i64(broker.store.min_offset_in_queue(&h.topic, h.queue_id)),
        max_offset: as_i64(broker.store.max_offset_in_queue(&h.topic, h.queue_id)),
        ..PullMessageResponseHeader::default()
    };
    info!(group = %h.consumer_group, topic = %h.topic, queue_id = h.queue_id,
        from = h.queue_offset, to = reset, "pull moved to a reset offset");
    let mut response = success().with_header(&header);
    response.header.code = ResponseCode::PullOffsetMoved.code();
    response.header.remark = Some("OFFSET_RESET".to_owned());
    broker.stats.record_get(0);
    response
}

/// RocketMQ's refusal of a SQL92 pull on a broker without `enablePropertyFilter`.
pub(crate) fn property_filter_off(expression_type: &str) -> Refusal {
    Refusal::system(format!(
        "The broker does not support consumer to filter message by {expression_type}"
    ))
}

/// The filter of a pull that carries its subscription (lite pull consumers): tags are
/// parsed as RocketMQ's `FilterAPI.build` parses them; SQL92 is compiled (through the
/// compile cache). RocketMQ lets a SQL92 expression that does not compile here filter
/// nothing at all; it is refused instead, as the code around RocketMQ's compile means.
fn carried_filter(
    broker: &Broker,
    config: &BrokerConfig,
    h: &PullMessageRequestHeader,
) -> Result<SubscriptionFilter, Refusal> {
    let ty = h.expression_type.as_deref();
    let expression = h.subscription.as_deref().unwrap_or_default();
    let Some(ty) = ty.filter(|t| !is_tag_type(Some(t))) else {
        let sub = SubscriptionData::build_tag(&h.topic, expression, h.sub_version);
        return Ok(SubscriptionFilter::Tag(TagFilter::new(&sub)));
    };
    let parse_failed = || {
        Refusal::new(
            ResponseCode::SubscriptionParseFailed,
            "parse the consumer's subscription failed",
        )
    };
    if expression.is_empty() {
        return Err(parse_failed());
    }
    if !config.enable_property_filter {
        return Err(property_filter_off(ty));
    }
    // The group's registered filter of the same expression has match bits to use.
    let registered = broker
        .filters
        .get(&h.topic, &h.consumer_group)
        .filter(|d| d.expression == expression && d.expression_type == ty);
    if let Some(d) = registered {
        let bits = d.index.queue(h.queue_id);
        return Ok(SubscriptionFilter::Sql(SqlFilter::with_index(
            d.selector, bits,
        )));
    }
    match broker.filters.compile(ty, expression) {
        Ok(selector) => Ok(SubscriptionFilter::Sql(SqlFilter::new(selector))),
        Err(e) => {
            warn!(group = %h.consumer_group, expression, error = %e, "pull's subscription does not compile");
            Err(parse_failed())
        }
    }
}

/// The filter of a pull without a subscription (push consumers): the group's
/// registered one, for SQL92 the filter its heartbeats compiled.
fn registered_filter(
    broker: &Broker,
    config: &BrokerConfig,
    h: &PullMessageRequestHeader,
    sub: &SubscriptionData,
) -> Result<SubscriptionFilter, Refusal> {
    if is_tag_type(Some(&sub.expression_type)) {
        return Ok(SubscriptionFilter::Tag(TagFilter::new(sub)));
    }
    let data = broker
        .filters
        .get(&h.topic, &h.consumer_group)
        .ok_or_else(|| {
            Refusal::new(
                ResponseCode::FilterDataNotExist,
                "The broker's consumer filter data is not exist!Your expression may be wrong!",
            )
        })?;
    if data.client_version < h.sub_version {
        return Err(Refusal::new(
            ResponseCode::FilterDataNotLatest,
            "the consumer's consumer filter data not latest",
        ));
    }
    if !config.enable_property_filter {
        return Err(property_filter_off(&sub.expression_type));
    }
    let bits = data.index.queue(h.queue_id);
    Ok(SubscriptionFilter::Sql(SqlFilter::with_index(
        data.selector,
        bits,
    )))
}
