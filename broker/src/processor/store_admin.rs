//! Store maintenance and inspection codes of Apache's mqadmin: CLEAN_EXPIRED_CONSUMEQUEUE
//! (306, `cleanExpiredCQ`), CLEAN_UNUSED_TOPIC (316, `cleanUnusedTopic`),
//! DELETE_EXPIRED_COMMITLOG (329, `deleteExpiredCommitLog`), QUERY_CONSUME_QUEUE (321,
//! `queryCq`), SET_COMMITLOG_READ_MODE (2004, `setCommitLogReadAheadMode`), the cold-read
//! thresholds (2001–2003, `updateColdDataFlowCtrGroupConfig`,
//! `removeColdDataFlowCtrGroupConfig`, `getColdDataFlowCtrInfo`) and
//! CHECK_ROCKSDB_CQ_WRITE_PROGRESS (354, `checkRocksdbCqWriteProgress`).

use std::collections::HashSet;

use remoting::protocol::admin::{ConsumeQueueData, QueryConsumeQueueResponseBody};
use remoting::protocol::broker::QueryConsumeQueueRequestHeader;
use remoting::protocol::constants::system;
use remoting::{RemotingCommand, ResponseCode, fastjson};
use tracing::info;

use super::{Handled, Refusal, success};
use crate::broker::Broker;

/// `madvise` advice values the mode of SET_COMMITLOG_READ_MODE names (Linux's).
const MADV_NORMAL: i32 = 0;
const MADV_RANDOM: i32 = 1;
/// The ext field SET_COMMITLOG_READ_MODE carries the mode in (`FIleReadaheadMode`).
const READ_AHEAD_MODE: &str = "READ_AHEAD_MODE";

/// CLEAN_EXPIRED_CONSUMEQUEUE: consume queues whose messages have all expired go.
pub fn clean_expired_consume_queues(broker: &Broker) -> Handled {
    let removed = broker.store.clean_expired_consume_queues();
    info!(removed, "cleanExpiredCQ");
    Ok(success())
}

/// CLEAN_UNUSED_TOPIC: the consume queues of topics this broker no longer has (not system
/// topics, not LMQ ones) go, as RocketMQ's `cleanUnusedTopic` does.
pub fn clean_unused_topics(broker: &Broker) -> Handled {
    let kept: HashSet<String> = broker.topics.topic_names().into_iter().collect();
    let unused: Vec<String> = broker
        .store
        .consume_queues()
        .topics()
        .into_iter()
        .filter(|t| {
            !kept.contains(t) && !system::is_system_topic(t) && !t.starts_with(system::LMQ_PREFIX)
        })
        .collect();
    info!(topics = ?unused, "cleanUnusedTopic");
    broker.store.delete_topics(&unused);
    Ok(success())
}

/// DELETE_EXPIRED_COMMITLOG: the next cleanup passes delete expired CommitLog files
/// whatever the hour (`deleteWhen`); retention (`fileReservedTime`) still applies.
pub fn delete_expired_commit_log(broker: &Broker) -> Handled {
    broker.store.execute_delete_files_manually();
    info!("deleteExpiredCommitLog: expired files are deleted from the next cleanup pass on");
    Ok(success())
}

/// SET_COMMITLOG_READ_MODE: fault readahead on (0, MADV_NORMAL) or off (1, MADV_RANDOM)
/// for the CommitLog's files.
pub fn set_commit_log_read_mode(broker: &Broker, request: &RemotingCommand) -> Handled {
    let Some(mode) = request.ext(READ_AHEAD_MODE) else {
        return Err(Refusal::system("set commitlog readahead mode param error"));
    };
    let mode = match mode.trim().parse::<i32>() {
        Ok(m @ (MADV_NORMAL | MADV_RANDOM)) => m,
        Ok(_) => {
            return Err(Refusal::new(
                ResponseCode::InvalidParameter,
                "set commitlog readahead mode param value error",
            ));
        }
        Err(_) => return Err(Refusal::system("set commitlog readahead mode failed")),
    };
    broker
        .store
        .commit_log()
        .set_read_ahead(mode == MADV_NORMAL);
    info!(mode, "commit log readahead mode set");
    let mut response = success();
    response.header.remark = Some(format!(
        "set commitlog readahead mode success, mode: {mode}"
    ));
    Ok(response)
}

/// GET_COLD_DATA_FLOW_CTR_INFO: the thresholds, as a broker with cold-read flow control
/// off shows them (see [`crate::cold_read`]).
pub fn cold_data_flow_ctr_info(broker: &Broker) -> Handled {
    let config = broker.config();
    let info = broker
        .cold_read
        .info_json(
            config.cg_cold_read_threshold,
            config.global_cold_read_threshold,
        )
        .map_err(|e| Refusal::system(format!("cannot encode the cold read info: {e}")))?;
    Ok(success().with_body(info.into_bytes()))
}

/// UPDATE_COLD_DATA_FLOW_CTR_CONFIG (2001): `group=threshold` properties in the body.
pub fn update_cold_data_flow_ctr_config(broker: &Broker, request: &RemotingCommand) -> Handled {
    let body = request.body.to_bytes();
    let text =
        std::str::from_utf8(&body).map_err(|_| Refusal::system("string2Properties error"))?;
    broker.cold_read.update(text);
    Ok(success())
}

/// REMOVE_COLD_DATA_FLOW_CTR_CONFIG (2002): the group's name is the body.
pub fn remove_cold_data_flow_ctr_config(broker: &Broker, request: &RemotingCommand) -> Handled {
    let body = request.body.to_bytes();
    let group = std::str::from_utf8(&body).map_err(|_| Refusal::system("string parse error"))?;
    broker.cold_read.remove(group);
    Ok(success())
}

/// CHECK_ROCKSDB_CQ_WRITE_PROGRESS (354): RocketMQ compares its RocksDB consume queues with
/// the file ones; sluice keeps consume queues in files only, so the check answers
/// CHECK_ERROR (3) saying so (mqadmin prints "check error ... errInfo: ...").
pub fn check_rocksdb_cq_write_progress() -> Handled {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct CheckRocksdbCqWriteResult {
        check_result: &'static str,
        check_status: i32,
    }
    const CHECK_ERROR: i32 = 3;
    let body = serde_json::to_vec(&CheckRocksdbCqWriteResult {
        check_result: "no RocksDB consume queue: sluice keeps consume queues in files only",
        check_status: CHECK_ERROR,
    })
    .map_err(|e| Refusal::system(e.to_string()))?;
    Ok(success().with_body(body))
}

/// QUERY_CONSUME_QUEUE: up to `count` units of a consume queue from `index`, with the
/// group's subscription when one is named.
pub fn query_consume_queue(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: QueryConsumeQueueRequestHeader = request.decode_header()?;
    let topic = h.topic.unwrap_or_default();
    let (queue_id, index, count) = (
        h.queue_id.unwrap_or(0),
        h.index.unwrap_or(0),
        h.count.unwrap_or(0),
    );
    let Some(cq) = broker.store.consume_queues().get(&topic, queue_id) else {
        return Err(Refusal::system(format!("{queue_id}@{topic} is not exist!")));
    };
    let (min, max) = (cq.min_offset(), cq.max_offset());
    let (subscription_data, filter_data) = match &h.consumer_group {
        None => (None, None),
        Some(group) => match broker.consumers.subscription(group, &topic) {
            None => (None, Some(format!("{group}@{topic} is not online!"))),
            Some(sub) => {
                let filter = broker.filters.get(&topic, group);
                (
                    Some(sub),
                    Some(filter_data_json(group, &topic, filter.as_ref())),
                )
            }
        },
    };
    let start = u64::try_from(index).ok().filter(|i| (min..max).contains(i));
    let Some(start) = start else {
        let mut response = success();
        response.header.remark = Some(format!("Index {index} of {queue_id}@{topic} is not exist!"));
        return Ok(response);
    };
    let end = start
        .saturating_add(u64::try_from(count).unwrap_or(0))
        .min(max);
    let queue_data = (start..end)
        .filter_map(|q| cq.unit_at(q))
        .map(|u| ConsumeQueueData {
            physic_offset: i64::try_from(u.commit_log_offset).unwrap_or(i64::MAX),
            physic_size: i32::try_from(u.size).unwrap_or(i32::MAX),
            tags_code: u.tags_code,
            ..ConsumeQueueData::default()
        })
        .collect();
    let view = QueryConsumeQueueResponseBody {
        subscription_data,
        filter_data,
        queue_data,
        max_queue_index: i64::try_from(max).unwrap_or(i64::MAX),
        min_queue_index: i64::try_from(min).unwrap_or(i64::MAX),
    };
    Ok(success().with_body(fastjson::to_vec(&view, fastjson::KeyStyle::Fastjson)?))
}

/// RocketMQ's `ConsumerFilterData` as JSON, as QUERY_CONSUME_QUEUE shows it: a group's
/// registered SQL92 filter of the topic, or `null` (tag subscriptions have none).
fn filter_data_json(
    group: &str,
    topic: &str,
    filter: Option<&crate::filter::registry::FilterData>,
) -> String {
    let Some(f) = filter else {
        return "null".to_owned();
    };
    let data = serde_json::json!({
        "consumerGroup": group,
        "topic": topic,
        "expression": f.expression,
        "expressionType": f.expression_type,
        "clientVersion": f.client_version,
        "bornTime": f.born,
        "deadTime": f.dead_since.unwrap_or(0),
    });
    serde_json::to_string_pretty(&data).unwrap_or_else(|_| "null".to_owned())
}
