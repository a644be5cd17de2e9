//! Broker request/response headers (`header/*.java`), named and typed as in RocketMQ 5.x;
//! fields 4.9 clients omit are optional. Required (`@CFNotNull`) fields are plain types,
//! everything else is an `Option`.

use crate::ext_header;

ext_header! {
    /// SEND_MESSAGE (10) request; SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320) carry the same fields under one-letter keys ([`SendMessageRequestHeaderV2`]).
    pub struct SendMessageRequestHeader {
        producer_group: String = "producerGroup",
        topic: String = "topic",
        default_topic: String = "defaultTopic",
        default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        queue_id: i32 = "queueId",
        sys_flag: i32 = "sysFlag",
        born_timestamp: i64 = "bornTimestamp",
        flag: i32 = "flag",
        properties: Option<String> = "properties",
        reconsume_times: Option<i32> = "reconsumeTimes",
        unit_mode: Option<bool> = "unitMode",
        batch: Option<bool> = "batch",
        max_reconsume_times: Option<i32> = "maxReconsumeTimes",
    }
}

ext_header! {
    /// SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320) request: [`SendMessageRequestHeader`]
    /// with one-letter keys (Java's default, `sendSmartMsg`).
    pub struct SendMessageRequestHeaderV2 {
        producer_group: String = "a",
        topic: String = "b",
        default_topic: String = "c",
        default_topic_queue_nums: i32 = "d",
        queue_id: i32 = "e",
        sys_flag: i32 = "f",
        born_timestamp: i64 = "g",
        flag: i32 = "h",
        properties: Option<String> = "i",
        reconsume_times: Option<i32> = "j",
        unit_mode: Option<bool> = "k",
        max_reconsume_times: Option<i32> = "l",
        batch: Option<bool> = "m",
        broker_name: Option<String> = "n",
    }
}

ext_header! {
    /// PUSH_REPLY_MESSAGE_TO_CLIENT (326), broker to requester: a reply's send header, plus
    /// where it was born and stored.
    pub struct ReplyMessageRequestHeader {
        producer_group: String = "producerGroup",
        topic: String = "topic",
        default_topic: String = "defaultTopic",
        default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        queue_id: i32 = "queueId",
        sys_flag: i32 = "sysFlag",
        born_timestamp: i64 = "bornTimestamp",
        flag: i32 = "flag",
        properties: Option<String> = "properties",
        reconsume_times: Option<i32> = "reconsumeTimes",
        unit_mode: bool = "unitMode",
        born_host: String = "bornHost",
        store_host: String = "storeHost",
        store_timestamp: i64 = "storeTimestamp",
    }
}

impl From<SendMessageRequestHeaderV2> for SendMessageRequestHeader {
    fn from(v2: SendMessageRequestHeaderV2) -> Self {
        SendMessageRequestHeader {
            producer_group: v2.producer_group,
            topic: v2.topic,
            default_topic: v2.default_topic,
            default_topic_queue_nums: v2.default_topic_queue_nums,
            queue_id: v2.queue_id,
            sys_flag: v2.sys_flag,
            born_timestamp: v2.born_timestamp,
            flag: v2.flag,
            properties: v2.properties,
            reconsume_times: v2.reconsume_times,
            unit_mode: v2.unit_mode,
            batch: v2.batch,
            max_reconsume_times: v2.max_reconsume_times,
        }
    }
}

impl From<SendMessageRequestHeader> for SendMessageRequestHeaderV2 {
    fn from(v1: SendMessageRequestHeader) -> Self {
        SendMessageRequestHeaderV2 {
            producer_group: v1.producer_group,
            topic: v1.topic,
            default_topic: v1.default_topic,
            default_topic_queue_nums: v1.default_topic_queue_nums,
            queue_id: v1.queue_id,
            sys_flag: v1.sys_flag,
            born_timestamp: v1.born_timestamp,
            flag: v1.flag,
            properties: v1.properties,
            reconsume_times: v1.reconsume_times,
            unit_mode: v1.unit_mode,
            max_reconsume_times: v1.max_reconsume_times,
            batch: v1.batch,
            broker_name: None,
        }
    }
}

ext_header! {
    /// Response to the send codes.
    pub struct SendMessageResponseHeader {
        msg_id: String = "msgId",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
        transaction_id: Option<String> = "transactionId",
        batch_uniq_id: Option<String> = "batchUniqId",
        recall_handle: Option<String> = "recallHandle",
    }
}

ext_header! {
    /// PULL_MESSAGE (11) / LITE_PULL_MESSAGE (361) request.
    pub struct PullMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
        max_msg_nums: i32 = "maxMsgNums",
        sys_flag: i32 = "sysFlag",
        commit_offset: i64 = "commitOffset",
        suspend_timeout_millis: i64 = "suspendTimeoutMillis",
        subscription: Option<String> = "subscription",
        sub_version: i64 = "subVersion",
        expression_type: Option<String> = "expressionType",
        max_msg_bytes: Option<i32> = "maxMsgBytes",
        request_source: Option<i32> = "requestSource",
        proxy_froward_client_id: Option<String> = "proxyFrowardClientId",
    }
}

ext_header! {
    /// Pull response: all four required fields on every 0/19/20/21 answer.
    pub struct PullMessageResponseHeader {
        suggest_which_broker_id: i64 = "suggestWhichBrokerId",
        next_begin_offset: i64 = "nextBeginOffset",
        min_offset: i64 = "minOffset",
        max_offset: i64 = "maxOffset",
        offset_delta: Option<i64> = "offsetDelta",
        topic_sys_flag: Option<i32> = "topicSysFlag",
        group_sys_flag: Option<i32> = "groupSysFlag",
        forbidden_type: Option<i32> = "forbiddenType",
    }
}

ext_header! {
    /// QUERY_CONSUMER_OFFSET (14) request.
    pub struct QueryConsumerOffsetRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        set_zero_if_not_found: Option<bool> = "setZeroIfNotFound",
    }
}

ext_header! {
    /// QUERY_CONSUMER_OFFSET response.
    pub struct QueryConsumerOffsetResponseHeader {
        offset: i64 = "offset",
    }
}

ext_header! {
    /// UPDATE_CONSUMER_OFFSET (15) request.
    pub struct UpdateConsumerOffsetRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        commit_offset: i64 = "commitOffset",
    }
}

ext_header! {
    /// GET_CONSUMER_LIST_BY_GROUP (38) request.
    pub struct GetConsumerListByGroupRequestHeader {
        consumer_group: String = "consumerGroup",
    }
}

ext_header! {
    /// UNREGISTER_CLIENT (35) request.
    pub struct UnregisterClientRequestHeader {
        client_id: String = "clientID",
        producer_group: Option<String> = "producerGroup",
        consumer_group: Option<String> = "consumerGroup",
    }
}

ext_header! {
    /// CONSUMER_SEND_MSG_BACK (36) request.
    pub struct ConsumerSendMsgBackRequestHeader {
        offset: i64 = "offset",
        group: String = "group",
        delay_level: i32 = "delayLevel",
        origin_msg_id: Option<String> = "originMsgId",
        origin_topic: Option<String> = "originTopic",
        unit_mode: Option<bool> = "unitMode",
        max_reconsume_times: Option<i32> = "maxReconsumeTimes",
    }
}

ext_header! {
    /// END_TRANSACTION (37) request.
    pub struct EndTransactionRequestHeader {
        topic: Option<String> = "topic",
        producer_group: String = "producerGroup",
        tran_state_table_offset: i64 = "tranStateTableOffset",
        commit_log_offset: i64 = "commitLogOffset",
        commit_or_rollback: i32 = "commitOrRollback",
        from_transaction_check: Option<bool> = "fromTransactionCheck",
        msg_id: String = "msgId",
        transaction_id: Option<String> = "transactionId",
    }
}

ext_header! {
    /// CHECK_TRANSACTION_STATE (39) request, broker to producer.
    pub struct CheckTransactionStateRequestHeader {
        topic: Option<String> = "topic",
        tran_state_table_offset: i64 = "tranStateTableOffset",
        commit_log_offset: i64 = "commitLogOffset",
        msg_id: Option<String> = "msgId",
        transaction_id: Option<String> = "transactionId",
        offset_msg_id: Option<String> = "offsetMsgId",
    }
}

ext_header! {
    /// NOTIFY_CONSUMER_IDS_CHANGED (40) request, broker to consumer.
    pub struct NotifyConsumerIdsChangedRequestHeader {
        consumer_group: String = "consumerGroup",
    }
}

ext_header! {
    /// GET_MAX_OFFSET (30) request.
    pub struct GetMaxOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        committed: Option<bool> = "committed",
    }
}

ext_header! {
    /// GET_MAX_OFFSET response.
    pub struct GetMaxOffsetResponseHeader {
        offset: i64 = "offset",
    }
}

ext_header! {
    /// GET_MIN_OFFSET (31) request.
    pub struct GetMinOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
    }
}

ext_header! {
    /// GET_MIN_OFFSET response.
    pub struct GetMinOffsetResponseHeader {
        offset: i64 = "offset",
    }
}

ext_header! {
    /// GET_EARLIEST_MSG_STORETIME (32) request.
    pub struct GetEarliestMsgStoretimeRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
    }
}

ext_header! {
    /// GET_EARLIEST_MSG_STORETIME response.
    pub struct GetEarliestMsgStoretimeResponseHeader {
        timestamp: i64 = "timestamp",
    }
}

ext_header! {
    /// SEARCH_OFFSET_BY_TIMESTAMP (29) request.
    pub struct SearchOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        timestamp: i64 = "timestamp",
        boundary_type: Option<String> = "boundaryType",
    }
}

ext_header! {
    /// SEARCH_OFFSET_BY_TIMESTAMP response.
    pub struct SearchOffsetResponseHeader {
        offset: i64 = "offset",
    }
}

ext_header! {
    /// QUERY_MESSAGE (12) request.
    pub struct QueryMessageRequestHeader {
        topic: String = "topic",
        key: String = "key",
        max_num: i32 = "maxNum",
        begin_timestamp: i64 = "beginTimestamp",
        end_timestamp: i64 = "endTimestamp",
    }
}

ext_header! {
    /// QUERY_MESSAGE response.
    pub struct QueryMessageResponseHeader {
        index_last_update_timestamp: i64 = "indexLastUpdateTimestamp",
        index_last_update_phyoffset: i64 = "indexLastUpdatePhyoffset",
    }
}

ext_header! {
    /// VIEW_MESSAGE_BY_ID (33) request.
    pub struct ViewMessageRequestHeader {
        topic: Option<String> = "topic",
        offset: i64 = "offset",
    }
}

ext_header! {
    /// UPDATE_AND_CREATE_TOPIC (17) request.
    pub struct CreateTopicRequestHeader {
        topic: String = "topic",
        default_topic: String = "defaultTopic",
        read_queue_nums: i32 = "readQueueNums",
        write_queue_nums: i32 = "writeQueueNums",
        perm: i32 = "perm",
        topic_filter_type: String = "topicFilterType",
        topic_sys_flag: Option<i32> = "topicSysFlag",
        order: bool = "order",
        attributes: Option<String> = "attributes",
        force: Option<bool> = "force",
    }
}

ext_header! {
    /// DELETE_TOPIC_IN_BROKER (215) request.
    pub struct DeleteTopicRequestHeader {
        topic: String = "topic",
    }
}

ext_header! {
    /// GET_ALL_TOPIC_CONFIG response (5.x paging).
    pub struct GetAllTopicConfigResponseHeader {
        total_topic_num: Option<i32> = "totalTopicNum",
    }
}

ext_header! {
    /// GET_BROKER_CONFIG response.
    pub struct GetBrokerConfigResponseHeader {
        version: String = "version",
    }
}

ext_header! {
    /// GET_TOPIC_STATS_INFO (202) request.
    pub struct GetTopicStatsInfoRequestHeader {
        topic: String = "topic",
    }
}

ext_header! {
    /// GET_CONSUME_STATS (208) request.
    pub struct GetConsumeStatsRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: Option<String> = "topic",
        topic_list: Option<String> = "topicList",
    }
}

ext_header! {
    /// GET_BROKER_CONSUME_STATS (317) request.
    pub struct GetConsumeStatsInBrokerHeader {
        is_order: bool = "isOrder",
    }
}

ext_header! {
    /// GET_CONSUMER_CONNECTION_LIST (203) request.
    pub struct GetConsumerConnectionListRequestHeader {
        consumer_group: String = "consumerGroup",
    }
}

ext_header! {
    /// GET_PRODUCER_CONNECTION_LIST (204) request.
    pub struct GetProducerConnectionListRequestHeader {
        producer_group: String = "producerGroup",
    }
}

ext_header! {
    /// GET_CONSUMER_RUNNING_INFO (307) request.
    pub struct GetConsumerRunningInfoRequestHeader {
        consumer_group: String = "consumerGroup",
        client_id: String = "clientId",
        jstack_enable: Option<bool> = "jstackEnable",
    }
}

ext_header! {
    /// GET_CONSUMER_STATUS_FROM_CLIENT (221) / INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) request.
    pub struct GetConsumerStatusRequestHeader {
        topic: String = "topic",
        group: String = "group",
        client_addr: Option<String> = "clientAddr",
    }
}

ext_header! {
    /// CONSUME_MESSAGE_DIRECTLY (309) request.
    pub struct ConsumeMessageDirectlyResultRequestHeader {
        consumer_group: String = "consumerGroup",
        client_id: Option<String> = "clientId",
        msg_id: Option<String> = "msgId",
        broker_name: Option<String> = "brokerName",
        topic: Option<String> = "topic",
        topic_sys_flag: Option<i32> = "topicSysFlag",
        group_sys_flag: Option<i32> = "groupSysFlag",
    }
}

ext_header! {
    /// INVOKE_BROKER_TO_RESET_OFFSET (222) / RESET_CONSUMER_CLIENT_OFFSET (220) request.
    pub struct ResetOffsetRequestHeader {
        group: String = "group",
        topic: String = "topic",
        queue_id: Option<i32> = "queueId",
        offset: Option<i64> = "offset",
        timestamp: i64 = "timestamp",
        is_force: bool = "isForce",
    }
}

ext_header! {
    /// DELETE_SUBSCRIPTIONGROUP (207) request.
    pub struct DeleteSubscriptionGroupRequestHeader {
        group_name: String = "groupName",
        clean_offset: Option<bool> = "cleanOffset",
        remove_offset: Option<bool> = "removeOffset",
    }
}

ext_header! {
    /// QUERY_TOPIC_CONSUME_BY_WHO (300) request.
    pub struct QueryTopicConsumeByWhoRequestHeader {
        topic: String = "topic",
    }
}

ext_header! {
    /// QUERY_CONSUME_TIME_SPAN (303) request.
    pub struct QueryConsumeTimeSpanRequestHeader {
        topic: String = "topic",
        group: String = "group",
    }
}

ext_header! {
    /// QUERY_CORRECTION_OFFSET (308) request.
    pub struct QueryCorrectionOffsetHeader {
        filter_groups: Option<String> = "filterGroups",
        compare_group: String = "compareGroup",
        topic: String = "topic",
    }
}

ext_header! {
    /// CLONE_GROUP_OFFSET (314) request.
    pub struct CloneGroupOffsetRequestHeader {
        src_group: String = "srcGroup",
        dest_group: String = "destGroup",
        topic: Option<String> = "topic",
        offline: Option<bool> = "offline",
    }
}

ext_header! {
    /// VIEW_BROKER_STATS_DATA (315) request.
    pub struct ViewBrokerStatsDataRequestHeader {
        stats_name: String = "statsName",
        stats_key: String = "statsKey",
    }
}

ext_header! {
    /// QUERY_CONSUME_QUEUE (321) request.
    pub struct QueryConsumeQueueRequestHeader {
        topic: Option<String> = "topic",
        queue_id: Option<i32> = "queueId",
        index: Option<i64> = "index",
        count: Option<i32> = "count",
        consumer_group: Option<String> = "consumerGroup",
    }
}

ext_header! {
    /// RESUME_CHECK_HALF_MESSAGE (323) request.
    pub struct ResumeCheckHalfMessageRequestHeader {
        topic: Option<String> = "topic",
        msg_id: Option<String> = "msgId",
    }
}

ext_header! {
    /// GET_SUBSCRIPTIONGROUP_CONFIG (352, 5.x) request.
    pub struct GetSubscriptionGroupConfigRequestHeader {
        group: String = "group",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CommandHeader, ExtFields};

    #[test]
    fn v2_keys_map_to_v1_fields() {
        let ext: ExtFields = [
            ("a", "pg"),
            ("b", "T"),
            ("c", "TBW102"),
            ("d", "4"),
            ("e", "2"),
            ("f", "0"),
            ("g", "1795955659538"),
            ("h", "0"),
            ("i", "TAGS\u{1}A"),
            ("j", "0"),
            ("k", "false"),
        ]
        .into_iter()
        .collect();
        let v1: SendMessageRequestHeader =
            SendMessageRequestHeaderV2::read_from(&ext).unwrap().into();
        assert_eq!(v1.topic, "T");
        assert_eq!(v1.queue_id, 2);
        assert_eq!(v1.born_timestamp, 1_795_955_659_538);
        assert_eq!(v1.unit_mode, Some(false));
        assert_eq!(v1.batch, None);
        let back: SendMessageRequestHeaderV2 = v1.into();
        let mut out = ExtFields::new();
        back.write_to(&mut out);
        assert_eq!(out.get("b"), Some("T"));
    }
}
