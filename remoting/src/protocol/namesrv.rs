//! Name server headers (`header/namesrv/*.java`).

use crate::ext_header;

ext_header! {
    /// REGISTER_BROKER (103) request.
    pub struct RegisterBrokerRequestHeader {
        /// Broker name (a master/slave pair shares it).
        broker_name: String = "brokerName",
        /// `ip:port` of the broker's main port.
        broker_addr: String = "brokerAddr",
        /// Cluster name.
        cluster_name: String = "clusterName",
        /// `brokerIP2:haListenPort`.
        ha_server_addr: String = "haServerAddr",
        /// 0 = master, ≥ 1 = slave.
        broker_id: i64 = "brokerId",
        /// 5.x: per-broker expiry.
        heartbeat_timeout_millis: Option<i64> = "heartbeatTimeoutMillis",
        /// 5.x: slave acting master.
        enable_acting_master: Option<bool> = "enableActingMaster",
        /// Body is the zlib "compressed" form.
        compressed: Option<bool> = "compressed",
        /// CRC32 of the body; 0 = unchecked.
        body_crc32: Option<i32> = "bodyCrc32",
    }
}

ext_header! {
    /// REGISTER_BROKER response: filled for slaves from the live master of the same name.
    pub struct RegisterBrokerResponseHeader {
        /// Master's HA address.
        ha_server_addr: Option<String> = "haServerAddr",
        /// Master's main address.
        master_addr: Option<String> = "masterAddr",
    }
}

ext_header! {
    /// UNREGISTER_BROKER (104) and QUERY_DATA_VERSION (322) request.
    pub struct UnregisterBrokerRequestHeader {
        /// Broker name.
        broker_name: String = "brokerName",
        /// `ip:port`.
        broker_addr: String = "brokerAddr",
        /// Cluster name.
        cluster_name: String = "clusterName",
        /// Broker id.
        broker_id: i64 = "brokerId",
    }
}

/// QUERY_DATA_VERSION has the same fields as UNREGISTER_BROKER.
pub type QueryDataVersionRequestHeader = UnregisterBrokerRequestHeader;

ext_header! {
    /// QUERY_DATA_VERSION response.
    pub struct QueryDataVersionResponseHeader {
        /// Whether the broker's data version differs from the one the name server holds.
        changed: bool = "changed",
    }
}

ext_header! {
    /// GET_ROUTEINFO_BY_TOPIC (105) request.
    pub struct GetRouteInfoRequestHeader {
        /// Topic.
        topic: String = "topic",
        /// Ask for standard JSON (quoted map keys) regardless of version.
        accept_standard_json_only: Option<bool> = "acceptStandardJsonOnly",
    }
}

ext_header! {
    /// WIPE_WRITE_PERM_OF_BROKER (205) / ADD_WRITE_PERM_OF_BROKER (327) request.
    pub struct BrokerNameRequestHeader {
        /// Broker name.
        broker_name: String = "brokerName",
    }
}

ext_header! {
    /// WIPE_WRITE_PERM_OF_BROKER response.
    pub struct WipeWritePermOfBrokerResponseHeader {
        /// Queue data entries changed.
        wipe_topic_count: i32 = "wipeTopicCount",
    }
}

ext_header! {
    /// ADD_WRITE_PERM_OF_BROKER response.
    pub struct AddWritePermOfBrokerResponseHeader {
        /// Queue data entries changed.
        add_topic_count: i32 = "addTopicCount",
    }
}

ext_header! {
    /// DELETE_TOPIC_IN_NAMESRV (216) request.
    pub struct DeleteTopicFromNamesrvRequestHeader {
        /// Topic.
        topic: String = "topic",
        /// When set, only this cluster's brokers lose the topic.
        cluster_name: Option<String> = "clusterName",
    }
}

ext_header! {
    /// A request with just a topic (REGISTER_TOPIC_IN_NAMESRV and others).
    pub struct TopicRequestHeader {
        /// Topic.
        topic: String = "topic",
    }
}

ext_header! {
    /// PUT_KV_CONFIG (100) request.
    pub struct PutKvConfigRequestHeader {
        /// Namespace (`ORDER_TOPIC_CONFIG`, ...).
        namespace: String = "namespace",
        /// Key.
        key: String = "key",
        /// Value.
        value: String = "value",
    }
}

ext_header! {
    /// GET_KV_CONFIG (101) / DELETE_KV_CONFIG (102) request.
    pub struct KvConfigKeyRequestHeader {
        /// Namespace.
        namespace: String = "namespace",
        /// Key.
        key: String = "key",
    }
}

ext_header! {
    /// GET_KV_CONFIG response.
    pub struct GetKvConfigResponseHeader {
        /// The value.
        value: Option<String> = "value",
    }
}

ext_header! {
    /// GET_KVLIST_BY_NAMESPACE (219) request.
    pub struct GetKvListByNamespaceRequestHeader {
        /// Namespace.
        namespace: String = "namespace",
    }
}

ext_header! {
    /// GET_TOPICS_BY_CLUSTER (224) request.
    pub struct GetTopicsByClusterRequestHeader {
        /// Cluster name.
        cluster: String = "cluster",
    }
}

ext_header! {
    /// BROKER_HEARTBEAT (904, 5.x) request.
    pub struct BrokerHeartbeatRequestHeader {
        /// Cluster.
        cluster_name: String = "clusterName",
        /// `ip:port`.
        broker_addr: String = "brokerAddr",
        /// Broker name.
        broker_name: String = "brokerName",
        /// Broker id.
        broker_id: Option<i64> = "brokerId",
        /// Controller epoch.
        epoch: Option<i32> = "epoch",
        /// CommitLog max offset.
        max_offset: Option<i64> = "maxOffset",
        /// Confirmed offset.
        confirm_offset: Option<i64> = "confirmOffset",
        /// Expiry of this broker.
        heartbeat_timeout_mills: Option<i64> = "heartbeatTimeoutMills",
        /// Election priority.
        election_priority: Option<i32> = "electionPriority",
    }
}

ext_header! {
    /// GET_BROKER_MEMBER_GROUP (901, 5.x) request.
    pub struct GetBrokerMemberGroupRequestHeader {
        /// Cluster.
        cluster_name: String = "clusterName",
        /// Broker name.
        broker_name: String = "brokerName",
    }
}
