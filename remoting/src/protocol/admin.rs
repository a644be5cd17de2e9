//! Admin bodies read by `mqadmin` and the consoles: stats, connections, offsets.
//! Maps keyed by `MessageQueue` are written with object keys, as fastjson does.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::fastjson;
use crate::header::LanguageCode;
use crate::protocol::heartbeat::{
    ConsumeFromWhere, ConsumeType, MessageModel, MessageQueue, SubscriptionData,
};

/// Progress of a group on one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct OffsetWrapper {
    /// Queue max offset.
    pub broker_offset: i64,
    /// Committed consumer offset.
    pub consumer_offset: i64,
    /// 5.x: last pulled offset.
    pub pull_offset: i64,
    /// Store time of the last consumed message.
    pub last_timestamp: i64,
}

/// GET_CONSUME_STATS (208) body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct ConsumeStats {
    /// Per queue progress.
    #[serde(with = "fastjson::object_keys")]
    pub offset_table: BTreeMap<MessageQueue, OffsetWrapper>,
    /// Consume TPS of the group.
    pub consume_tps: f64,
}

/// Min/max offsets of one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct TopicOffset {
    /// Min offset.
    pub min_offset: i64,
    /// Max offset (next to write).
    pub max_offset: i64,
    /// Store time of the last message.
    pub last_update_timestamp: i64,
}

/// GET_TOPIC_STATS_INFO (202) body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct TopicStatsTable {
    /// Per queue offsets.
    #[serde(with = "fastjson::object_keys")]
    pub offset_table: BTreeMap<MessageQueue, TopicOffset>,
    /// 5.x put TPS of the topic.
    pub topic_put_tps: f64,
}

/// One client connection as admin bodies describe it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    /// Client id.
    pub client_id: String,
    /// `ip:port` of the client's socket.
    pub client_addr: String,
    /// Client language.
    pub language: LanguageCodeOrd,
    /// Client version ordinal.
    pub version: i32,
}

/// `LanguageCode` with an order, so connections can live in sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LanguageCodeOrd(pub LanguageCode);

impl PartialOrd for LanguageCodeOrd {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for LanguageCodeOrd {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.code().cmp(&other.0.code())
    }
}

/// GET_CONSUMER_CONNECTION_LIST (203) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerConnection {
    /// Connections of the group.
    #[serde(default)]
    pub connection_set: BTreeSet<Connection>,
    /// topic → subscription.
    #[serde(default)]
    pub subscription_table: BTreeMap<String, SubscriptionData>,
    /// Push or pull.
    pub consume_type: Option<ConsumeType>,
    /// Clustering or broadcasting.
    pub message_model: Option<MessageModel>,
    /// Start position.
    pub consume_from_where: Option<ConsumeFromWhere>,
}

/// GET_PRODUCER_CONNECTION_LIST (204) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct ProducerConnection {
    /// Connections of the group.
    pub connection_set: BTreeSet<Connection>,
}

/// One producer as GET_ALL_PRODUCER_INFO lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerInfo {
    /// Client id.
    pub client_id: String,
    /// Remote ip.
    pub remote_ip: String,
    /// Language.
    pub language: LanguageCode,
    /// Version.
    pub version: i32,
    /// Last heartbeat.
    pub last_update_timestamp: i64,
}

/// GET_ALL_PRODUCER_INFO (328) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ProducerTableInfo {
    /// group → producers.
    pub data: BTreeMap<String, Vec<ProducerInfo>>,
}

/// `{"groupList":[...]}` (QUERY_TOPIC_CONSUME_BY_WHO).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct GroupList {
    /// Groups.
    pub group_list: BTreeSet<String>,
}

/// INVOKE_BROKER_TO_RESET_OFFSET response / RESET_CONSUMER_CLIENT_OFFSET body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct ResetOffsetBody {
    /// Queue → new offset.
    #[serde(with = "fastjson::object_keys")]
    pub offset_table: BTreeMap<MessageQueue, i64>,
}

/// One entry of the C++ client's reset body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueueOffset {
    /// Topic.
    pub topic: String,
    /// Broker name.
    pub broker_name: String,
    /// Queue id.
    pub queue_id: i32,
    /// New offset.
    pub offset: i64,
}

/// RESET_CONSUMER_CLIENT_OFFSET body for C++ clients (`ResetOffsetBodyForC`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct ResetOffsetBodyForC {
    /// Queues with their new offsets.
    pub offset_table: Vec<MessageQueueOffset>,
}

/// Consumption time span of one queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueTimeSpan {
    /// The queue.
    pub message_queue: MessageQueue,
    /// Store time of its first message.
    pub min_time_stamp: i64,
    /// Store time of its last message.
    pub max_time_stamp: i64,
    /// Store time of the last consumed message.
    pub consume_time_stamp: i64,
    /// max − consume.
    pub delay_time: i64,
}

/// QUERY_CONSUME_TIME_SPAN (303) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct QueryConsumeTimeSpanBody {
    /// Per queue spans.
    pub consume_time_span_set: Vec<QueueTimeSpan>,
}

/// GET_BROKER_CONSUME_STATS (317) body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct ConsumeStatsList {
    /// group → stats per topic.
    pub consume_stats_list: Vec<BTreeMap<String, Vec<ConsumeStats>>>,
    /// Broker address.
    pub broker_addr: String,
    /// Sum of lags.
    pub total_diff: i64,
    /// 5.x in-flight lag.
    pub total_inflight_diff: i64,
}

/// One consume queue unit as QUERY_CONSUME_QUEUE reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct ConsumeQueueData {
    /// CommitLog offset.
    pub physic_offset: i64,
    /// Record size.
    pub physic_size: i32,
    /// Tags code.
    pub tags_code: i64,
    /// Extension data (unused).
    pub extend_data_json: Option<String>,
    /// Bloom bits (unused).
    pub bit_map: Option<String>,
    /// Filter result.
    pub eval: bool,
    /// Filter message.
    pub msg: Option<String>,
}

/// QUERY_CONSUME_QUEUE (321) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct QueryConsumeQueueResponseBody {
    /// Subscription of the group, if any.
    pub subscription_data: Option<SubscriptionData>,
    /// Filter data.
    pub filter_data: Option<String>,
    /// The units.
    pub queue_data: Vec<ConsumeQueueData>,
    /// Max offset.
    pub max_queue_index: i64,
    /// Min offset.
    pub min_queue_index: i64,
}

/// One window of a stats item.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct BrokerStatsItem {
    /// Sum in the window.
    pub sum: i64,
    /// Per second.
    pub tps: f64,
    /// Average per operation.
    pub avgpt: f64,
}

/// VIEW_BROKER_STATS_DATA (315) body.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct BrokerStatsData {
    /// Last minute.
    pub stats_minute: BrokerStatsItem,
    /// Last hour.
    pub stats_hour: BrokerStatsItem,
    /// Last day.
    pub stats_day: BrokerStatsItem,
}

/// INVOKE_BROKER_TO_GET_CONSUMER_STATUS body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct GetConsumerStatusBody {
    /// Queue → offset.
    #[serde(with = "fastjson::object_keys")]
    pub message_queue_table: BTreeMap<MessageQueue, i64>,
    /// client id → (queue → offset).
    pub consumer_table: BTreeMap<String, serde_json::Value>,
}

/// GET_CONSUMER_RUNNING_INFO (307) answer body (`ConsumerRunningInfo`): what a consumer
/// reports of itself. The queue tables stay opaque JSON (object keys, as fastjson writes
/// them); a consumer that holds no queues leaves them empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct ConsumerRunningInfo {
    /// `PROP_CONSUME_TYPE`, `PROP_CLIENT_VERSION`, ...
    pub properties: BTreeMap<String, String>,
    /// Its subscriptions.
    pub subscription_set: Vec<SubscriptionData>,
    /// Queue → process queue info.
    pub mq_table: BTreeMap<String, serde_json::Value>,
    /// Queue → pop process queue info.
    pub mq_pop_table: BTreeMap<String, serde_json::Value>,
    /// Topic → consume status.
    pub status_table: BTreeMap<String, serde_json::Value>,
    /// Anything the consumer adds.
    pub user_consumer_info: BTreeMap<String, String>,
    /// Its thread stacks, when asked for (`jstackEnable`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jstack: Option<String>,
}

/// How a consumer took a message given to it directly (`CMResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConsumeMessageResult {
    /// Consumed.
    #[serde(rename = "CR_SUCCESS")]
    Success,
    /// To be consumed later.
    #[serde(rename = "CR_LATER")]
    Later,
    /// Rolled back (orderly consumers).
    #[serde(rename = "CR_ROLLBACK")]
    Rollback,
    /// Committed (orderly consumers).
    #[serde(rename = "CR_COMMIT")]
    Commit,
    /// The listener threw.
    #[serde(rename = "CR_THROW_EXCEPTION")]
    ThrowException,
    /// The listener returned nothing.
    #[serde(rename = "CR_RETURN_NULL")]
    ReturnNull,
}

/// CONSUME_MESSAGE_DIRECTLY (309) answer body (`ConsumeMessageDirectlyResult`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ConsumeMessageDirectlyResult {
    // Fields in fastjson's (alphabetical) order.
    /// Offsets committed automatically.
    pub auto_commit: bool,
    /// The outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consume_result: Option<ConsumeMessageResult>,
    /// An orderly consumer.
    pub order: bool,
    /// Who answered, or why it failed.
    pub remark: String,
    /// How long consuming took, ms.
    pub spent_time_mills: i64,
}

impl Default for ConsumeMessageDirectlyResult {
    fn default() -> Self {
        ConsumeMessageDirectlyResult {
            auto_commit: true,
            consume_result: None,
            order: false,
            remark: String::new(),
            spent_time_mills: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fastjson::KeyStyle;

    #[test]
    fn running_info_and_direct_result_read_as_java_writes_them() {
        // As fastjson writes them (fields sorted, an empty ConsumerRunningInfo's tables).
        let java = r#"{"jstack":"main RUNNABLE","mqPopTable":{},"mqTable":{},"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},"statusTable":{},"subscriptionSet":[],"userConsumerInfo":{}}"#;
        let info: ConsumerRunningInfo = serde_json::from_str(java).unwrap();
        assert_eq!(info.jstack.as_deref(), Some("main RUNNABLE"));
        assert_eq!(info.properties["PROP_CONSUME_TYPE"], "CONSUME_PASSIVELY");
        let back: ConsumerRunningInfo =
            serde_json::from_str(&serde_json::to_string(&info).unwrap()).unwrap();
        assert_eq!(back, info);
        let java = r#"{"autoCommit":true,"consumeResult":"CR_LATER","order":false,"remark":"from gRPC client","spentTimeMills":3}"#;
        let result: ConsumeMessageDirectlyResult = serde_json::from_str(java).unwrap();
        assert_eq!(result.consume_result, Some(ConsumeMessageResult::Later));
        assert_eq!(serde_json::to_string(&result).unwrap(), java);
    }

    fn mq(q: i32) -> MessageQueue {
        MessageQueue {
            topic: "T1".into(),
            broker_name: "broker-a".into(),
            queue_id: q,
        }
    }

    #[test]
    fn consume_stats_use_object_keys() {
        let mut stats = ConsumeStats::default();
        stats.offset_table.insert(
            mq(0),
            OffsetWrapper {
                broker_offset: 120,
                consumer_offset: 118,
                pull_offset: 0,
                last_timestamp: 1_700_000_000_000,
            },
        );
        let text =
            String::from_utf8(fastjson::to_vec(&stats, KeyStyle::Fastjson).unwrap()).unwrap();
        assert_eq!(
            text,
            r#"{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T1"}:{"brokerOffset":120,"consumerOffset":118,"lastTimestamp":1700000000000,"pullOffset":0}}}"#
        );
        assert_eq!(
            fastjson::from_slice::<ConsumeStats>(text.as_bytes()).unwrap(),
            stats
        );
    }

    #[test]
    fn connections_round_trip() {
        let c = ConsumerConnection {
            connection_set: [Connection {
                client_id: "10.0.0.9@1".into(),
                client_addr: "10.0.0.9:5321".into(),
                language: LanguageCodeOrd(LanguageCode::Java),
                version: 409,
            }]
            .into(),
            subscription_table: BTreeMap::new(),
            consume_type: Some(ConsumeType::ConsumePassively),
            message_model: Some(MessageModel::Clustering),
            consume_from_where: Some(ConsumeFromWhere::ConsumeFromFirstOffset),
        };
        let bytes = fastjson::to_vec(&c, KeyStyle::Fastjson).unwrap();
        assert!(String::from_utf8_lossy(&bytes).contains(r#""language":"JAVA""#));
        assert_eq!(
            fastjson::from_slice::<ConsumerConnection>(&bytes).unwrap(),
            c
        );
    }
}
