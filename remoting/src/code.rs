//! Request and response codes of the remoting protocol: every code of RocketMQ 4.9.8 and 5.x,
//! plus sluice's own private codes.
//!
//! Commands carry the code as a raw `i32` (an unknown code must still be answered with
//! `REQUEST_CODE_NOT_SUPPORTED`), these enums name the known ones.

macro_rules! codes {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $value:expr => $wire:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vmeta])* $variant = $value,)*
        }

        impl $name {
            /// Every known code, in numeric order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The numeric value on the wire.
            #[must_use]
            pub const fn code(self) -> i32 {
                self as i32
            }

            /// RocketMQ's constant name for this code (`SEND_MESSAGE_V2`).
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)*
                }
            }
        }

        impl TryFrom<i32> for $name {
            type Error = i32;

            fn try_from(value: i32) -> Result<Self, i32> {
                match value {
                    $(v if v == $value => Ok($name::$variant),)*
                    other => Err(other),
                }
            }
        }

        impl From<$name> for i32 {
            fn from(code: $name) -> i32 {
                code.code()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({})", self.name(), self.code())
            }
        }
    };
}

codes! {
    /// Request codes (`RequestCode.java`), 4.9.8 and 5.x.
    RequestCode {
        SendMessage = 10 => "SEND_MESSAGE",
        PullMessage = 11 => "PULL_MESSAGE",
        QueryMessage = 12 => "QUERY_MESSAGE",
        QueryBrokerOffset = 13 => "QUERY_BROKER_OFFSET",
        QueryConsumerOffset = 14 => "QUERY_CONSUMER_OFFSET",
        UpdateConsumerOffset = 15 => "UPDATE_CONSUMER_OFFSET",
        UpdateAndCreateTopic = 17 => "UPDATE_AND_CREATE_TOPIC",
        /// 5.x only.
        UpdateAndCreateTopicList = 18 => "UPDATE_AND_CREATE_TOPIC_LIST",
        GetAllTopicConfig = 21 => "GET_ALL_TOPIC_CONFIG",
        GetTopicConfigList = 22 => "GET_TOPIC_CONFIG_LIST",
        GetTopicNameList = 23 => "GET_TOPIC_NAME_LIST",
        UpdateBrokerConfig = 25 => "UPDATE_BROKER_CONFIG",
        GetBrokerConfig = 26 => "GET_BROKER_CONFIG",
        TriggerDeleteFiles = 27 => "TRIGGER_DELETE_FILES",
        GetBrokerRuntimeInfo = 28 => "GET_BROKER_RUNTIME_INFO",
        SearchOffsetByTimestamp = 29 => "SEARCH_OFFSET_BY_TIMESTAMP",
        GetMaxOffset = 30 => "GET_MAX_OFFSET",
        GetMinOffset = 31 => "GET_MIN_OFFSET",
        GetEarliestMsgStoretime = 32 => "GET_EARLIEST_MSG_STORETIME",
        ViewMessageById = 33 => "VIEW_MESSAGE_BY_ID",
        HeartBeat = 34 => "HEART_BEAT",
        UnregisterClient = 35 => "UNREGISTER_CLIENT",
        ConsumerSendMsgBack = 36 => "CONSUMER_SEND_MSG_BACK",
        EndTransaction = 37 => "END_TRANSACTION",
        GetConsumerListByGroup = 38 => "GET_CONSUMER_LIST_BY_GROUP",
        CheckTransactionState = 39 => "CHECK_TRANSACTION_STATE",
        NotifyConsumerIdsChanged = 40 => "NOTIFY_CONSUMER_IDS_CHANGED",
        LockBatchMq = 41 => "LOCK_BATCH_MQ",
        UnlockBatchMq = 42 => "UNLOCK_BATCH_MQ",
        GetAllConsumerOffset = 43 => "GET_ALL_CONSUMER_OFFSET",
        GetAllDelayOffset = 45 => "GET_ALL_DELAY_OFFSET",
        CheckClientConfig = 46 => "CHECK_CLIENT_CONFIG",
        /// 5.x only.
        GetClientConfig = 47 => "GET_CLIENT_CONFIG",
        /// 4.9 only (removed in 5.3.3).
        UpdateAndCreateAclConfig = 50 => "UPDATE_AND_CREATE_ACL_CONFIG",
        /// 4.9 only (removed in 5.3.3).
        DeleteAclConfig = 51 => "DELETE_ACL_CONFIG",
        /// 4.9 only (removed in 5.3.3).
        GetBrokerClusterAclInfo = 52 => "GET_BROKER_CLUSTER_ACL_INFO",
        /// 4.9 only (removed in 5.3.3).
        UpdateGlobalWhiteAddrsConfig = 53 => "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG",
        /// 5.x only.
        GetTimerCheckPoint = 60 => "GET_TIMER_CHECK_POINT",
        /// 5.x only.
        GetTimerMetrics = 61 => "GET_TIMER_METRICS",
        PutKvConfig = 100 => "PUT_KV_CONFIG",
        GetKvConfig = 101 => "GET_KV_CONFIG",
        DeleteKvConfig = 102 => "DELETE_KV_CONFIG",
        RegisterBroker = 103 => "REGISTER_BROKER",
        UnregisterBroker = 104 => "UNREGISTER_BROKER",
        GetRouteinfoByTopic = 105 => "GET_ROUTEINFO_BY_TOPIC",
        GetBrokerClusterInfo = 106 => "GET_BROKER_CLUSTER_INFO",
        UpdateAndCreateSubscriptiongroup = 200 => "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
        GetAllSubscriptiongroupConfig = 201 => "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
        GetTopicStatsInfo = 202 => "GET_TOPIC_STATS_INFO",
        GetConsumerConnectionList = 203 => "GET_CONSUMER_CONNECTION_LIST",
        GetProducerConnectionList = 204 => "GET_PRODUCER_CONNECTION_LIST",
        WipeWritePermOfBroker = 205 => "WIPE_WRITE_PERM_OF_BROKER",
        GetAllTopicListFromNameserver = 206 => "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
        DeleteSubscriptiongroup = 207 => "DELETE_SUBSCRIPTIONGROUP",
        GetConsumeStats = 208 => "GET_CONSUME_STATS",
        SuspendConsumer = 209 => "SUSPEND_CONSUMER",
        ResumeConsumer = 210 => "RESUME_CONSUMER",
        ResetConsumerOffsetInConsumer = 211 => "RESET_CONSUMER_OFFSET_IN_CONSUMER",
        ResetConsumerOffsetInBroker = 212 => "RESET_CONSUMER_OFFSET_IN_BROKER",
        AdjustConsumerThreadPool = 213 => "ADJUST_CONSUMER_THREAD_POOL",
        WhoConsumeTheMessage = 214 => "WHO_CONSUME_THE_MESSAGE",
        DeleteTopicInBroker = 215 => "DELETE_TOPIC_IN_BROKER",
        DeleteTopicInNamesrv = 216 => "DELETE_TOPIC_IN_NAMESRV",
        /// 5.x only.
        RegisterTopicInNamesrv = 217 => "REGISTER_TOPIC_IN_NAMESRV",
        GetKvlistByNamespace = 219 => "GET_KVLIST_BY_NAMESPACE",
        ResetConsumerClientOffset = 220 => "RESET_CONSUMER_CLIENT_OFFSET",
        GetConsumerStatusFromClient = 221 => "GET_CONSUMER_STATUS_FROM_CLIENT",
        InvokeBrokerToResetOffset = 222 => "INVOKE_BROKER_TO_RESET_OFFSET",
        InvokeBrokerToGetConsumerStatus = 223 => "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
        GetTopicsByCluster = 224 => "GET_TOPICS_BY_CLUSTER",
        /// 5.x only.
        UpdateAndCreateSubscriptiongroupList = 225 => "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST",
        QueryTopicConsumeByWho = 300 => "QUERY_TOPIC_CONSUME_BY_WHO",
        RegisterFilterServer = 301 => "REGISTER_FILTER_SERVER",
        RegisterMessageFilterClass = 302 => "REGISTER_MESSAGE_FILTER_CLASS",
        QueryConsumeTimeSpan = 303 => "QUERY_CONSUME_TIME_SPAN",
        GetSystemTopicListFromNs = 304 => "GET_SYSTEM_TOPIC_LIST_FROM_NS",
        GetSystemTopicListFromBroker = 305 => "GET_SYSTEM_TOPIC_LIST_FROM_BROKER",
        CleanExpiredConsumequeue = 306 => "CLEAN_EXPIRED_CONSUMEQUEUE",
        GetConsumerRunningInfo = 307 => "GET_CONSUMER_RUNNING_INFO",
        QueryCorrectionOffset = 308 => "QUERY_CORRECTION_OFFSET",
        ConsumeMessageDirectly = 309 => "CONSUME_MESSAGE_DIRECTLY",
        SendMessageV2 = 310 => "SEND_MESSAGE_V2",
        GetUnitTopicList = 311 => "GET_UNIT_TOPIC_LIST",
        GetHasUnitSubTopicList = 312 => "GET_HAS_UNIT_SUB_TOPIC_LIST",
        GetHasUnitSubUnunitTopicList = 313 => "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST",
        CloneGroupOffset = 314 => "CLONE_GROUP_OFFSET",
        ViewBrokerStatsData = 315 => "VIEW_BROKER_STATS_DATA",
        CleanUnusedTopic = 316 => "CLEAN_UNUSED_TOPIC",
        GetBrokerConsumeStats = 317 => "GET_BROKER_CONSUME_STATS",
        UpdateNamesrvConfig = 318 => "UPDATE_NAMESRV_CONFIG",
        GetNamesrvConfig = 319 => "GET_NAMESRV_CONFIG",
        SendBatchMessage = 320 => "SEND_BATCH_MESSAGE",
        QueryConsumeQueue = 321 => "QUERY_CONSUME_QUEUE",
        QueryDataVersion = 322 => "QUERY_DATA_VERSION",
        ResumeCheckHalfMessage = 323 => "RESUME_CHECK_HALF_MESSAGE",
        SendReplyMessage = 324 => "SEND_REPLY_MESSAGE",
        SendReplyMessageV2 = 325 => "SEND_REPLY_MESSAGE_V2",
        PushReplyMessageToClient = 326 => "PUSH_REPLY_MESSAGE_TO_CLIENT",
        AddWritePermOfBroker = 327 => "ADD_WRITE_PERM_OF_BROKER",
        GetAllProducerInfo = 328 => "GET_ALL_PRODUCER_INFO",
        DeleteExpiredCommitlog = 329 => "DELETE_EXPIRED_COMMITLOG",
        /// 5.x only.
        QueryTopicsByConsumer = 343 => "QUERY_TOPICS_BY_CONSUMER",
        /// 5.x only.
        QuerySubscriptionByConsumer = 345 => "QUERY_SUBSCRIPTION_BY_CONSUMER",
        /// 5.x only.
        GetTopicConfig = 351 => "GET_TOPIC_CONFIG",
        /// 5.x only.
        GetSubscriptiongroupConfig = 352 => "GET_SUBSCRIPTIONGROUP_CONFIG",
        /// 5.x only.
        UpdateAndGetGroupForbidden = 353 => "UPDATE_AND_GET_GROUP_FORBIDDEN",
        /// 5.x only.
        CheckRocksdbCqWriteProgress = 354 => "CHECK_ROCKSDB_CQ_WRITE_PROGRESS",
        /// 5.x only.
        ExportRocksdbConfigToJson = 355 => "EXPORT_ROCKSDB_CONFIG_TO_JSON",
        /// 5.x only.
        LitePullMessage = 361 => "LITE_PULL_MESSAGE",
        /// 5.x only.
        RecallMessage = 370 => "RECALL_MESSAGE",
        /// 5.x only.
        QueryAssignment = 400 => "QUERY_ASSIGNMENT",
        /// 5.x only.
        SetMessageRequestMode = 401 => "SET_MESSAGE_REQUEST_MODE",
        /// 5.x only.
        GetAllMessageRequestMode = 402 => "GET_ALL_MESSAGE_REQUEST_MODE",
        /// 5.x only.
        UpdateAndCreateStaticTopic = 513 => "UPDATE_AND_CREATE_STATIC_TOPIC",
        /// 5.x only.
        GetBrokerMemberGroup = 901 => "GET_BROKER_MEMBER_GROUP",
        /// 5.x only.
        AddBroker = 902 => "ADD_BROKER",
        /// 5.x only.
        RemoveBroker = 903 => "REMOVE_BROKER",
        /// 5.x only.
        BrokerHeartbeat = 904 => "BROKER_HEARTBEAT",
        /// 5.x only.
        NotifyMinBrokerIdChange = 905 => "NOTIFY_MIN_BROKER_ID_CHANGE",
        /// 5.x only.
        ExchangeBrokerHaInfo = 906 => "EXCHANGE_BROKER_HA_INFO",
        /// 5.x only.
        GetBrokerHaStatus = 907 => "GET_BROKER_HA_STATUS",
        /// 5.x only.
        ResetMasterFlushOffset = 908 => "RESET_MASTER_FLUSH_OFFSET",
        /// 5.x only.
        ControllerAlterSyncStateSet = 1001 => "CONTROLLER_ALTER_SYNC_STATE_SET",
        /// 5.x only.
        ControllerElectMaster = 1002 => "CONTROLLER_ELECT_MASTER",
        /// 5.x only.
        ControllerRegisterBroker = 1003 => "CONTROLLER_REGISTER_BROKER",
        /// 5.x only.
        ControllerGetReplicaInfo = 1004 => "CONTROLLER_GET_REPLICA_INFO",
        /// 5.x only.
        ControllerGetMetadataInfo = 1005 => "CONTROLLER_GET_METADATA_INFO",
        /// 5.x only.
        ControllerGetSyncStateData = 1006 => "CONTROLLER_GET_SYNC_STATE_DATA",
        /// 5.x only.
        GetBrokerEpochCache = 1007 => "GET_BROKER_EPOCH_CACHE",
        /// 5.x only.
        NotifyBrokerRoleChanged = 1008 => "NOTIFY_BROKER_ROLE_CHANGED",
        /// 5.x only.
        UpdateControllerConfig = 1009 => "UPDATE_CONTROLLER_CONFIG",
        /// 5.x only.
        GetControllerConfig = 1010 => "GET_CONTROLLER_CONFIG",
        /// 5.x only.
        CleanBrokerData = 1011 => "CLEAN_BROKER_DATA",
        /// 5.x only.
        ControllerGetNextBrokerId = 1012 => "CONTROLLER_GET_NEXT_BROKER_ID",
        /// 5.x only.
        ControllerApplyBrokerId = 1013 => "CONTROLLER_APPLY_BROKER_ID",
        /// 5.x only.
        UpdateColdDataFlowCtrConfig = 2001 => "UPDATE_COLD_DATA_FLOW_CTR_CONFIG",
        /// 5.x only.
        RemoveColdDataFlowCtrConfig = 2002 => "REMOVE_COLD_DATA_FLOW_CTR_CONFIG",
        /// 5.x only.
        GetColdDataFlowCtrInfo = 2003 => "GET_COLD_DATA_FLOW_CTR_INFO",
        /// 5.x only.
        SetCommitlogReadMode = 2004 => "SET_COMMITLOG_READ_MODE",
        /// 5.x only.
        AuthCreateUser = 3001 => "AUTH_CREATE_USER",
        /// 5.x only.
        AuthUpdateUser = 3002 => "AUTH_UPDATE_USER",
        /// 5.x only.
        AuthDeleteUser = 3003 => "AUTH_DELETE_USER",
        /// 5.x only.
        AuthGetUser = 3004 => "AUTH_GET_USER",
        /// 5.x only.
        AuthListUser = 3005 => "AUTH_LIST_USER",
        /// 5.x only.
        AuthCreateAcl = 3006 => "AUTH_CREATE_ACL",
        /// 5.x only.
        AuthUpdateAcl = 3007 => "AUTH_UPDATE_ACL",
        /// 5.x only.
        AuthDeleteAcl = 3008 => "AUTH_DELETE_ACL",
        /// 5.x only.
        AuthGetAcl = 3009 => "AUTH_GET_ACL",
        /// 5.x only.
        AuthListAcl = 3010 => "AUTH_LIST_ACL",
        /// 5.4+ only.
        SwitchTimerEngine = 5001 => "SWITCH_TIMER_ENGINE",
        /// 5.x only.
        PopMessage = 200_050 => "POP_MESSAGE",
        /// 5.x only.
        AckMessage = 200_051 => "ACK_MESSAGE",
        /// 5.x only.
        PeekMessage = 200_052 => "PEEK_MESSAGE",
        /// 5.x only.
        ChangeMessageInvisibletime = 200_053 => "CHANGE_MESSAGE_INVISIBLETIME",
        /// 5.x only.
        Notification = 200_054 => "NOTIFICATION",
        /// 5.x only.
        PollingInfo = 200_055 => "POLLING_INFO",
        /// 5.x only.
        PopRollback = 200_056 => "POP_ROLLBACK",
        /// 5.x only.
        BatchAckMessage = 200_151 => "BATCH_ACK_MESSAGE",
        /// sluice private range (40000..40100): switch a broker between master and slave
        /// for failover drills (`mqadmin switchRole`).
        SluiceSwitchRole = 40001 => "SLUICE_SWITCH_ROLE",
        /// sluice private range: HA status of a broker (role, master offset, slave acks).
        SluiceHaStatus = 40002 => "SLUICE_HA_STATUS",
    }
}

codes! {
    /// Response codes (`ResponseCode.java` + `RemotingSysResponseCode.java`).
    ///
    /// 209..=211 mean ACL failures in 4.9.8 and polling states in 5.x; the 5.x names are used.
    ResponseCode {
        Success = 0 => "SUCCESS",
        SystemError = 1 => "SYSTEM_ERROR",
        SystemBusy = 2 => "SYSTEM_BUSY",
        RequestCodeNotSupported = 3 => "REQUEST_CODE_NOT_SUPPORTED",
        TransactionFailed = 4 => "TRANSACTION_FAILED",
        FlushDiskTimeout = 10 => "FLUSH_DISK_TIMEOUT",
        SlaveNotAvailable = 11 => "SLAVE_NOT_AVAILABLE",
        FlushSlaveTimeout = 12 => "FLUSH_SLAVE_TIMEOUT",
        MessageIllegal = 13 => "MESSAGE_ILLEGAL",
        ServiceNotAvailable = 14 => "SERVICE_NOT_AVAILABLE",
        VersionNotSupported = 15 => "VERSION_NOT_SUPPORTED",
        NoPermission = 16 => "NO_PERMISSION",
        TopicNotExist = 17 => "TOPIC_NOT_EXIST",
        TopicExistAlready = 18 => "TOPIC_EXIST_ALREADY",
        PullNotFound = 19 => "PULL_NOT_FOUND",
        PullRetryImmediately = 20 => "PULL_RETRY_IMMEDIATELY",
        PullOffsetMoved = 21 => "PULL_OFFSET_MOVED",
        QueryNotFound = 22 => "QUERY_NOT_FOUND",
        SubscriptionParseFailed = 23 => "SUBSCRIPTION_PARSE_FAILED",
        SubscriptionNotExist = 24 => "SUBSCRIPTION_NOT_EXIST",
        SubscriptionNotLatest = 25 => "SUBSCRIPTION_NOT_LATEST",
        SubscriptionGroupNotExist = 26 => "SUBSCRIPTION_GROUP_NOT_EXIST",
        FilterDataNotExist = 27 => "FILTER_DATA_NOT_EXIST",
        FilterDataNotLatest = 28 => "FILTER_DATA_NOT_LATEST",
        InvalidParameter = 29 => "INVALID_PARAMETER",
        TransactionShouldCommit = 200 => "TRANSACTION_SHOULD_COMMIT",
        TransactionShouldRollback = 201 => "TRANSACTION_SHOULD_ROLLBACK",
        TransactionStateUnknow = 202 => "TRANSACTION_STATE_UNKNOW",
        TransactionStateGroupWrong = 203 => "TRANSACTION_STATE_GROUP_WRONG",
        NoBuyerId = 204 => "NO_BUYER_ID",
        NotInCurrentUnit = 205 => "NOT_IN_CURRENT_UNIT",
        ConsumerNotOnline = 206 => "CONSUMER_NOT_ONLINE",
        ConsumeMsgTimeout = 207 => "CONSUME_MSG_TIMEOUT",
        NoMessage = 208 => "NO_MESSAGE",
        PollingFull = 209 => "POLLING_FULL",
        PollingTimeout = 210 => "POLLING_TIMEOUT",
        BrokerNotExist = 211 => "BROKER_NOT_EXIST",
        BrokerDispatchNotComplete = 212 => "BROKER_DISPATCH_NOT_COMPLETE",
        BroadcastConsumption = 213 => "BROADCAST_CONSUMPTION",
        FlowControl = 215 => "FLOW_CONTROL",
        NotLeaderForQueue = 501 => "NOT_LEADER_FOR_QUEUE",
        IllegalOperation = 604 => "ILLEGAL_OPERATION",
        GoAway = 1500 => "GO_AWAY",
        ControllerFencedMasterEpoch = 2000 => "CONTROLLER_FENCED_MASTER_EPOCH",
        ControllerFencedSyncStateSetEpoch = 2001 => "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH",
        ControllerInvalidMaster = 2002 => "CONTROLLER_INVALID_MASTER",
        ControllerInvalidReplicas = 2003 => "CONTROLLER_INVALID_REPLICAS",
        ControllerMasterNotAvailable = 2004 => "CONTROLLER_MASTER_NOT_AVAILABLE",
        ControllerInvalidRequest = 2005 => "CONTROLLER_INVALID_REQUEST",
        ControllerBrokerNotAlive = 2006 => "CONTROLLER_BROKER_NOT_ALIVE",
        ControllerNotLeader = 2007 => "CONTROLLER_NOT_LEADER",
        ControllerBrokerMetadataNotExist = 2008 => "CONTROLLER_BROKER_METADATA_NOT_EXIST",
        ControllerInvalidCleanBrokerMetadata = 2009 => "CONTROLLER_INVALID_CLEAN_BROKER_METADATA",
        ControllerBrokerNeedToBeRegistered = 2010 => "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED",
        ControllerMasterStillExist = 2011 => "CONTROLLER_MASTER_STILL_EXIST",
        ControllerElectMasterFailed = 2012 => "CONTROLLER_ELECT_MASTER_FAILED",
        ControllerAlterSyncStateSetFailed = 2013 => "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED",
        ControllerBrokerIdInvalid = 2014 => "CONTROLLER_BROKER_ID_INVALID",
        ControllerJraftInternalError = 2015 => "CONTROLLER_JRAFT_INTERNAL_ERROR",
        ControllerBrokerLiveInfoNotExists = 2016 => "CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS",
        UserNotExist = 3001 => "USER_NOT_EXIST",
        PolicyNotExist = 3002 => "POLICY_NOT_EXIST",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_code() {
        for code in RequestCode::ALL {
            assert_eq!(RequestCode::try_from(code.code()), Ok(*code));
        }
        for code in ResponseCode::ALL {
            assert_eq!(ResponseCode::try_from(code.code()), Ok(*code));
        }
    }

    #[test]
    fn known_values() {
        assert_eq!(RequestCode::SendMessageV2.code(), 310);
        assert_eq!(RequestCode::PopMessage.code(), 200_050);
        assert_eq!(
            RequestCode::GetRouteinfoByTopic.name(),
            "GET_ROUTEINFO_BY_TOPIC"
        );
        assert_eq!(ResponseCode::PullNotFound.code(), 19);
        assert_eq!(RequestCode::try_from(99_999), Err(99_999));
        assert_eq!(RequestCode::ALL.len(), 160);
    }
}
