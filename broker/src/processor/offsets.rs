//! Offsets and progress: QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET,
//! GET_EARLIEST_MSG_STORETIME, SEARCH_OFFSET_BY_TIMESTAMP, GET_TOPIC_STATS_INFO,
//! GET_CONSUME_STATS, QUERY_CONSUME_TIME_SPAN, INVOKE_BROKER_TO_RESET_OFFSET,
//! CLONE_GROUP_OFFSET.

use std::collections::BTreeMap;

use remoting::protocol::admin::{
    ConsumeStats, ConsumeStatsList, MessageQueueOffset, OffsetWrapper, QueryConsumeTimeSpanBody,
    QueueTimeSpan, ResetOffsetBody, ResetOffsetBodyForC, TopicOffset, TopicStatsTable,
};
use remoting::protocol::broker::{
    CloneGroupOffsetRequestHeader, GetConsumeStatsInBrokerHeader, GetConsumeStatsRequestHeader,
    GetEarliestMsgStoretimeRequestHeader, GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader, GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader, GetTopicStatsInfoRequestHeader, QueryConsumeTimeSpanRequestHeader,
    QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader, ResetOffsetRequestHeader,
    SearchOffsetRequestHeader, SearchOffsetResponseHeader,
};
use remoting::protocol::heartbeat::MessageQueue;
use remoting::{LanguageCode, RemotingCommand, RequestCode, ResponseCode, fastjson};
use store::BoundaryType;
use tracing::info;

use super::{Handled, Refusal, as_i64, success};
use crate::broker::Broker;
use crate::config::BrokerRole;

fn json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, Refusal> {
    Ok(fastjson::to_vec(value, fastjson::KeyStyle::Fastjson)?)
}

fn mq(broker: &Broker, topic: &str, queue_id: i32) -> MessageQueue {
    MessageQueue {
        topic: topic.to_owned(),
        broker_name: broker.config().broker_name.clone(),
        queue_id,
    }
}

/// QUERY_CONSUMER_OFFSET (14). With no committed offset: 0 if the queue still starts
/// at 0 and its first message is not yet "in disk" (so a new group reads a young
/// queue from the start), else QUERY_NOT_FOUND and the client applies
/// ConsumeFromWhere — RocketMQ's rule.
pub fn query_consumer_offset(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: QueryConsumerOffsetRequestHeader = request.decode_header()?;
    if let Some(offset) = broker
        .offsets
        .query(&h.consumer_group, &h.topic, h.queue_id)
    {
        return Ok(success().with_header(&QueryConsumerOffsetResponseHeader { offset }));
    }
    let zero_allowed = h.set_zero_if_not_found.unwrap_or(true);
    let min = broker.store.min_offset_in_queue(&h.topic, h.queue_id);
    if zero_allowed
        && min == 0
        && !broker
            .store
            .check_in_disk_by_consume_offset(&h.topic, h.queue_id, 0)
    {
        return Ok(success().with_header(&QueryConsumerOffsetResponseHeader { offset: 0 }));
    }
    Err(Refusal::new(
        ResponseCode::QueryNotFound,
        "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
    ))
}

/// GET_MAX_OFFSET (30).
pub fn max_offset(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: GetMaxOffsetRequestHeader = request.decode_header()?;
    let offset = as_i64(broker.store.max_offset_in_queue(&h.topic, h.queue_id));
    Ok(success().with_header(&GetMaxOffsetResponseHeader { offset }))
}

/// GET_MIN_OFFSET (31).
pub fn min_offset(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: GetMinOffsetRequestHeader = request.decode_header()?;
    let offset = as_i64(broker.store.min_offset_in_queue(&h.topic, h.queue_id));
    Ok(success().with_header(&GetMinOffsetResponseHeader { offset }))
}

/// GET_EARLIEST_MSG_STORETIME (32).
pub fn earliest_store_time(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: GetEarliestMsgStoretimeRequestHeader = request.decode_header()?;
    let timestamp = broker
        .store
        .earliest_message_time(&h.topic, h.queue_id)
        .unwrap_or(-1);
    Ok(success().with_header(&GetEarliestMsgStoretimeResponseHeader { timestamp }))
}

/// SEARCH_OFFSET_BY_TIMESTAMP (29).
pub fn search_offset(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: SearchOffsetRequestHeader = request.decode_header()?;
    let boundary = match h.boundary_type.as_deref() {
        Some(b) if b.eq_ignore_ascii_case("upper") => BoundaryType::Upper,
        _ => BoundaryType::Lower,
    };
    let offset = as_i64(broker.store.offset_in_queue_by_time(
        &h.topic,
        h.queue_id,
        h.timestamp,
        boundary,
    ));
    Ok(success().with_header(&SearchOffsetResponseHeader { offset }))
}

/// GET_TOPIC_STATS_INFO (202): min/max offsets of every write queue.
pub fn topic_stats(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: GetTopicStatsInfoRequestHeader = request.decode_header()?;
    let topic = broker.topics.select(&h.topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::TopicNotExist,
            format!("topic[{}] not exist", h.topic),
        )
    })?;
    let mut table = TopicStatsTable::default();
    for queue_id in 0..topic.write_queue_nums {
        let min = broker.store.min_offset_in_queue(&h.topic, queue_id);
        let max = broker.store.max_offset_in_queue(&h.topic, queue_id);
        let last = if max > 0 {
            broker
                .store
                .message_store_timestamp(&h.topic, queue_id, max - 1)
                .unwrap_or(0)
        } else {
            0
        };
        table.offset_table.insert(
            mq(broker, &h.topic, queue_id),
            TopicOffset {
                min_offset: as_i64(min),
                max_offset: as_i64(max),
                last_update_timestamp: last,
            },
        );
    }
    Ok(success().with_body(json(&table)?))
}

/// GET_CONSUME_STATS (208): per read queue, the broker's max offset and the group's
/// committed offset; every topic the group has offsets for when no topic is given.
pub fn consume_stats(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: GetConsumeStatsRequestHeader = request.decode_header()?;
    let topics: Vec<String> = match h.topic.as_deref().filter(|t| !t.trim().is_empty()) {
        Some(t) => vec![t.to_owned()],
        None => broker
            .offsets
            .topics_of_group(&h.consumer_group)
            .into_iter()
            .collect(),
    };
    let group = broker.consumers.group(&h.consumer_group);
    let mut stats = ConsumeStats::default();
    for topic in topics {
        let Some(config) = broker.topics.select(&topic) else {
            continue;
        };
        if !has_stats_for(group.as_ref(), &topic) {
            continue;
        }
        for queue_id in 0..config.read_queue_nums {
            stats.offset_table.insert(
                mq(broker, &topic, queue_id),
                queue_progress(broker, &h.consumer_group, &topic, queue_id),
            );
        }
    }
    Ok(success().with_body(json(&stats)?))
}

/// Whether a group has consume stats for `topic`: not when it is online with
/// subscriptions that leave the topic out.
fn has_stats_for(online: Option<&crate::client_manager::ConsumerGroupInfo>, topic: &str) -> bool {
    online.is_none_or(|g| g.subscriptions.is_empty() || g.subscriptions.contains_key(topic))
}

/// Where `group` is in one queue: the queue's end, the group's committed offset, and when
/// the last message it consumed was stored.
pub(crate) fn queue_progress(
    broker: &Broker,
    group: &str,
    topic: &str,
    queue_id: i32,
) -> OffsetWrapper {
    let broker_offset = broker.store.max_offset_in_queue(topic, queue_id);
    let consumer_offset = broker
        .offsets
        .query(group, topic, queue_id)
        .unwrap_or(0)
        .max(0);
    let last_timestamp = u64::try_from(consumer_offset - 1)
        .ok()
        .and_then(|o| broker.store.message_store_timestamp(topic, queue_id, o))
        .unwrap_or(0);
    OffsetWrapper {
        broker_offset: as_i64(broker_offset),
        consumer_offset,
        pull_offset: consumer_offset,
        last_timestamp,
    }
}

/// GET_BROKER_CONSUME_STATS (317, `mqadmin brokerConsumeStats`): every subscription
/// group's progress in every topic it has offsets in (`isOrder`: ordered topics only), and
/// the broker's total lag.
pub fn broker_consume_stats(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: GetConsumeStatsInBrokerHeader = request.decode_header()?;
    let mut body = ConsumeStatsList {
        broker_addr: broker.config().broker_addr(broker.listen_port()),
        ..ConsumeStatsList::default()
    };
    for group in broker.groups.names() {
        let online = broker.consumers.group(&group);
        let mut per_topic = Vec::new();
        for topic in broker.offsets.topics_of_group(&group) {
            let Some(config) = broker.topics.select(&topic) else {
                continue;
            };
            if h.is_order && !config.order {
                continue;
            }
            if !has_stats_for(online.as_ref(), &topic) {
                continue;
            }
            let mut stats = ConsumeStats::default();
            for queue_id in 0..config.write_queue_nums {
                let p = queue_progress(broker, &group, &topic, queue_id);
                body.total_diff += p.broker_offset - p.consumer_offset;
                body.total_inflight_diff += p.pull_offset - p.consumer_offset;
                stats.offset_table.insert(mq(broker, &topic, queue_id), p);
            }
            per_topic.push(stats);
        }
        body.consume_stats_list
            .push(std::iter::once((group, per_topic)).collect());
    }
    Ok(success().with_body(json(&body)?))
}

/// QUERY_CONSUME_TIME_SPAN (303).
pub fn consume_time_span(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: QueryConsumeTimeSpanRequestHeader = request.decode_header()?;
    let topic = broker.topics.select(&h.topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::TopicNotExist,
            format!("topic[{}] not exist", h.topic),
        )
    })?;
    let mut body = QueryConsumeTimeSpanBody::default();
    for queue_id in 0..topic.write_queue_nums {
        let min_time = broker
            .store
            .earliest_message_time(&h.topic, queue_id)
            .unwrap_or(0);
        let max = broker.store.max_offset_in_queue(&h.topic, queue_id);
        let max_time = max
            .checked_sub(1)
            .and_then(|o| broker.store.message_store_timestamp(&h.topic, queue_id, o))
            .unwrap_or(0);
        let consumed = broker
            .offsets
            .query(&h.group, &h.topic, queue_id)
            .unwrap_or(0);
        let consume_time = u64::try_from(consumed - 1)
            .ok()
            .and_then(|o| broker.store.message_store_timestamp(&h.topic, queue_id, o))
            .unwrap_or(min_time);
        body.consume_time_span_set.push(QueueTimeSpan {
            message_queue: mq(broker, &h.topic, queue_id),
            min_time_stamp: min_time,
            max_time_stamp: max_time,
            consume_time_stamp: consume_time,
            delay_time: max_time - consume_time,
        });
    }
    Ok(success().with_body(json(&body)?))
}

/// INVOKE_BROKER_TO_RESET_OFFSET (222). With `useServerSideResetOffset` (RocketMQ 5's
/// default) the broker resets the group itself, online or not
/// ([`reset_offset_in_broker`]); without it, as RocketMQ 4.9: each queue's offset for the
/// timestamp (−1 = max offset) goes to every online client of the group with
/// RESET_CONSUMER_CLIENT_OFFSET (oneway), and an offline group gets CONSUMER_NOT_ONLINE
/// (`mqadmin` then falls back to updating offsets itself).
pub fn reset_offset(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: ResetOffsetRequestHeader = request.decode_header()?;
    if broker.config().use_server_side_reset_offset {
        return reset_offset_in_broker(broker, &h);
    }
    let topic = broker.topics.select(&h.topic).ok_or_else(|| {
        Refusal::system(format!(
            "[reset-offset] request topic not exist: {}",
            h.topic
        ))
    })?;
    let mut offsets = BTreeMap::new();
    for queue_id in 0..topic.write_queue_nums {
        let target = if h.timestamp == -1 {
            broker.store.max_offset_in_queue(&h.topic, queue_id)
        } else {
            broker.store.offset_in_queue_by_time(
                &h.topic,
                queue_id,
                h.timestamp,
                BoundaryType::Lower,
            )
        };
        let target = as_i64(target);
        let current = broker.offsets.query(&h.group, &h.topic, queue_id);
        // Without force, only move a group back in time.
        let offset = match current {
            Some(c) if !h.is_force && target > c => c,
            _ => target,
        };
        offsets.insert(mq(broker, &h.topic, queue_id), offset);
    }
    let Some(group) = broker.consumers.group(&h.group) else {
        return Err(Refusal::new(
            ResponseCode::ConsumerNotOnline,
            format!(
                "Consumer not online, so can not reset offset, Group: {} Topic: {} Timestamp: {}",
                h.group, h.topic, h.timestamp
            ),
        ));
    };
    let body = ResetOffsetBody {
        offset_table: offsets.clone(),
    };
    let java_body = json(&body)?;
    let cpp_body = json(&ResetOffsetBodyForC {
        offset_table: offsets
            .iter()
            .map(|(q, o)| MessageQueueOffset {
                topic: q.topic.clone(),
                broker_name: q.broker_name.clone(),
                queue_id: q.queue_id,
                offset: *o,
            })
            .collect(),
    })?;
    for client in group.channels.values() {
        let mut notice = RemotingCommand::request(RequestCode::ResetConsumerClientOffset);
        notice.header.ext_fields = request.header.ext_fields.clone();
        let notice = notice.with_body(if client.language == LanguageCode::Cpp {
            cpp_body.clone()
        } else {
            java_body.clone()
        });
        let _ = client.channel.invoke_oneway(notice);
        info!(group = %h.group, client = %client.client_id, "reset offset notified");
    }
    Ok(success().with_body(java_body))
}

/// The offset of `topic`/`queue_id` at `timestamp` (the first message stored at or
/// after it); a negative timestamp means the queue's end.
fn offset_at_time(broker: &Broker, topic: &str, queue_id: i32, timestamp: i64) -> i64 {
    as_i64(if timestamp < 0 {
        broker.store.max_offset_in_queue(topic, queue_id)
    } else {
        broker
            .store
            .offset_in_queue_by_time(topic, queue_id, timestamp, BoundaryType::Lower)
    })
}

/// The server-side reset (RocketMQ 5's `resetOffsetInner`): one queue (`queueId` ≥ 0) to
/// `offset` if given, else every read queue, to the offset at `timestamp`. Each new
/// offset is written and kept pending for the group's next pull of the queue (see
/// [`crate::consumer_offset`]); held pulls of the group wake to take it at once. Answers
/// the new offsets.
fn reset_offset_in_broker(broker: &Broker, h: &ResetOffsetRequestHeader) -> Handled {
    if broker.role() == BrokerRole::SLAVE {
        return Err(Refusal::system("Can not reset offset in slave broker"));
    }
    let topic = broker.topics.select(&h.topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::TopicNotExist,
            format!("Topic {} does not exist", h.topic),
        )
    })?;
    if !broker.groups.contains(&h.group) {
        return Err(Refusal::new(
            ResponseCode::SubscriptionGroupNotExist,
            format!("Group {} does not exist", h.group),
        ));
    }
    let mut offsets = BTreeMap::new();
    match h.queue_id.filter(|q| *q >= 0) {
        Some(queue_id) => {
            let offset = match h.offset.filter(|o| *o != -1) {
                Some(offset) => {
                    let min = as_i64(broker.store.min_offset_in_queue(&h.topic, queue_id));
                    let max = as_i64(broker.store.max_offset_in_queue(&h.topic, queue_id));
                    if offset < min || offset > max.saturating_add(1) {
                        return Err(Refusal::system(format!(
                            "Target offset {offset} not in consume queue range [{min}-{max}]"
                        )));
                    }
                    offset
                }
                None => offset_at_time(broker, &h.topic, queue_id, h.timestamp),
            };
            offsets.insert(queue_id, offset);
        }
        None => {
            for queue_id in 0..topic.read_queue_nums {
                offsets.insert(
                    queue_id,
                    offset_at_time(broker, &h.topic, queue_id, h.timestamp),
                );
            }
        }
    }
    if offsets.is_empty() {
        return Err(Refusal::system("No queues to reset."));
    }
    for (&queue_id, &offset) in &offsets {
        broker.offsets.reset(&h.group, &h.topic, queue_id, offset);
        broker.pull_hold.wake_group(&h.topic, queue_id, &h.group);
    }
    info!(group = %h.group, topic = %h.topic, queues = ?offsets, "offsets reset in the broker");
    let body = ResetOffsetBody {
        offset_table: offsets
            .into_iter()
            .map(|(queue_id, offset)| (mq(broker, &h.topic, queue_id), offset))
            .collect(),
    };
    Ok(success().with_body(json(&body)?))
}

/// CLONE_GROUP_OFFSET (314).
pub fn clone_group_offset(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: CloneGroupOffsetRequestHeader = request.decode_header()?;
    let topics: Vec<String> = match h.topic.as_deref().filter(|t| !t.is_empty()) {
        Some(t) => vec![t.to_owned()],
        None => broker
            .offsets
            .topics_of_group(&h.src_group)
            .into_iter()
            .collect(),
    };
    for topic in topics {
        broker
            .offsets
            .clone_offsets(&h.src_group, &h.dest_group, &topic);
    }
    Ok(success())
}
