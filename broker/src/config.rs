//! `BrokerConfig`: the broker's own settings, with RocketMQ's broker.conf key names
//! (`BrokerConfig` + `NettyServerConfig` + the role keys of `MessageStoreConfig`), so
//! an operator's broker.conf loads as is. Store settings are `store::StoreConfig`,
//! deserialised from the same file.

use std::net::IpAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Master or slave, sync or async replication (`brokerRole`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[allow(
    non_camel_case_types,
    reason = "spelled as RocketMQ spells them in broker.conf"
)]
pub enum BrokerRole {
    /// Master; puts return once stored locally (replication is asynchronous).
    #[default]
    ASYNC_MASTER,
    /// Master; puts return once a slave holds them.
    SYNC_MASTER,
    /// Slave: no writes, follows its master over HA.
    SLAVE,
}

impl BrokerRole {
    /// Whether this role takes writes.
    #[must_use]
    pub fn is_master(self) -> bool {
        !matches!(self, BrokerRole::SLAVE)
    }

    /// RocketMQ's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            BrokerRole::ASYNC_MASTER => "ASYNC_MASTER",
            BrokerRole::SYNC_MASTER => "SYNC_MASTER",
            BrokerRole::SLAVE => "SLAVE",
        }
    }
}

/// The broker's settings. Defaults are RocketMQ 4.9.8's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
#[allow(
    clippy::struct_excessive_bools,
    reason = "mirrors RocketMQ's BrokerConfig one to one"
)]
pub struct BrokerConfig {
    /// `;`-separated name server addresses (also `-n`, env `NAMESRV_ADDR`).
    pub namesrv_addr: Option<String>,
    /// Address clients reach this broker at (also the store host of every message).
    /// Default: the first non-loopback IPv4 address, else 127.0.0.1.
    #[serde(rename = "brokerIP1")]
    pub broker_ip1: Option<String>,
    /// Address slaves reach the HA port at (default: brokerIP1).
    #[serde(rename = "brokerIP2")]
    pub broker_ip2: Option<String>,
    /// Broker name; a master and its slaves share it (default: the host name).
    pub broker_name: String,
    /// Cluster name (`DefaultCluster`).
    pub broker_cluster_name: String,
    /// 0 = master; slaves ≥ 1.
    pub broker_id: i64,
    /// Master or slave (`ASYNC_MASTER`).
    pub broker_role: BrokerRole,
    /// sluice: the role a broker configured as SLAVE takes when `switchRole` makes it
    /// master without naming one (ASYNC_MASTER). A broker configured as a master
    /// returns to its configured role.
    pub master_role_on_switch: BrokerRole,
    /// Permission of the whole broker (6 = RW).
    pub broker_permission: i32,
    /// Queues of auto-created topics and of TBW102 (8).
    pub default_topic_queue_nums: i32,
    /// Create topics on first send through TBW102 (true).
    pub auto_create_topic_enable: bool,
    /// The topic named after the cluster is readable/writable (true).
    pub cluster_topic_enable: bool,
    /// The topic named after the broker is readable/writable (true).
    pub broker_topic_enable: bool,
    /// Create subscription groups on first use (true).
    pub auto_create_subscription_group: bool,
    /// Trace topic name.
    pub msg_trace_topic_name: String,
    /// Create the trace topic (false).
    pub trace_topic_enable: bool,
    /// Persist consumer offsets every this many ms (5000).
    pub flush_consumer_offset_interval: u64,
    /// Refuse transactional messages (false).
    pub reject_transaction_message: bool,
    /// Timer messages may be recalled (RECALL_MESSAGE) before they are due
    /// (`recallMessageEnable`, 5.x, false).
    pub recall_message_enable: bool,
    /// Recalls are taken while the broker takes no writes
    /// (`allowRecallWhenBrokerNotWriteable`, true).
    pub allow_recall_when_broker_not_writeable: bool,
    /// Replies (SEND_REPLY_MESSAGE) are stored in their reply topic as well as pushed to
    /// the requester (`storeReplyMessageEnable`, true).
    pub store_reply_message_enable: bool,
    /// INVOKE_BROKER_TO_RESET_OFFSET resets the group in the broker, online or not, and
    /// its pulls take the new offset (`useServerSideResetOffset`, RocketMQ 5, true);
    /// false: RocketMQ 4.9's way, through the group's online clients.
    pub use_server_side_reset_offset: bool,
    /// Throttle groups reading cold (on-disk) data (`coldDataFlowControlEnable`, RocketMQ
    /// 5, false). sluice has no such throttle: true is refused at start.
    pub cold_data_flow_control_enable: bool,
    /// Topics may take `+message.type=MIXED` (`enableMixedMessageType`, RocketMQ 5, false).
    pub enable_mixed_message_type: bool,
    /// POP retries of new messages go to `%RETRY%<group>+<topic>` instead of
    /// `%RETRY%<group>_<topic>` (false, as RocketMQ 5.3.3).
    pub enable_retry_topic_v2: bool,
    /// With v2 retry topics, pops still read the v1 one (true).
    pub retrieve_message_from_pop_retry_topic_v1: bool,
    /// Percent of pops that read the retry topic before the topic (20).
    pub pop_from_retry_probability: i32,
    /// Queues of `rmq_sys_REVIVE_LOG_<cluster>` (8).
    pub revive_queue_num: i32,
    /// How often each revive queue is scanned, ms (1000).
    pub revive_interval: u64,
    /// Retried messages keep their retry topic in pop responses (false: the topic
    /// popped, with the retry topic in POP_CK).
    pub pop_response_return_actual_retry_topic: bool,
    /// A new POP group starting at MAX reads from 0 while the queue is still whole in
    /// memory (true).
    pub init_pop_offset_by_check_msg_in_mem: bool,
    /// Priority topics (5.4): percent of pops that read the retry topic first (0: retries
    /// are the lowest priority).
    pub pop_from_retry_probability_for_priority: i32,
    /// Priority topics: the highest queue is the highest priority (true).
    pub priority_order_asc: bool,
    /// Revived messages keep their queue in a retry topic of as many queues (false: all
    /// in queue 0, as RocketMQ).
    pub use_separate_retry_queue: bool,
    /// Broker-side rebalance assigns queues to consumers (true; false: every queue).
    pub server_load_balancer_enable: bool,
    /// The mode of a group on a topic no mode was set for (PULL).
    pub default_message_request_mode: remoting::protocol::pop::MessageRequestMode,
    /// POP groups' share of queues when no mode was set (−1: every queue).
    pub default_pop_share_queue_num: i32,
    /// RocketMQ's RocksDB pop store (false): not in sluice, refused at start. Spelled as
    /// RocketMQ's key (`KV`, not camel case's `Kv`).
    #[serde(rename = "popConsumerKVServiceEnable")]
    pub pop_consumer_kv_service_enable: bool,
    /// Stop popping a queue with too many messages in flight (false): not in sluice,
    /// refused at start.
    pub enable_pop_message_threshold: bool,
    /// Pop checkpoints kept in memory while their batch may be acked soon, written only
    /// when it is not (`enablePopBufferMerge`; true here, false in RocketMQ, whose
    /// buffer a crash forgets). A batch acked in time writes nothing; each buffered
    /// batch costs one line of the offset journal, from which a restart writes the
    /// checkpoints a kill -9 left only in memory (`consumer_offset::kept`).
    pub enable_pop_buffer_merge: bool,
    /// How long a checkpoint stays in memory unacked before it is written, ms
    /// (`popCkStayBufferTime`, 10000).
    pub pop_ck_stay_buffer_time: i64,
    /// Most checkpoints in memory (`popCkMaxBufferSize`, 200000); past it they are
    /// written at once.
    pub pop_ck_max_buffer_size: usize,
    /// Most pops held for long polling (100000).
    pub max_pop_polling_size: usize,
    /// Most pops held per topic, group and queue (1024).
    pub pop_polling_size: usize,
    /// A group's cold-read threshold, bytes, shown by GET_COLD_DATA_FLOW_CTR_INFO
    /// (`cgColdReadThreshold`, 3 MiB).
    pub cg_cold_read_threshold: i64,
    /// The broker's cold-read threshold, bytes, shown likewise
    /// (`globalColdReadThreshold`, 100 MiB).
    pub global_cold_read_threshold: i64,
    /// A half message younger than this (ms) is not checked back yet
    /// (`transactionTimeOut`, 6000).
    #[serde(rename = "transactionTimeOut")]
    pub transaction_time_out: u64,
    /// Check-backs of one half message before it is given up and moved to
    /// TRANS_CHECK_MAX_TIME_TOPIC (`transactionCheckMax`, 15).
    pub transaction_check_max: i32,
    /// Pause between check-back rounds, ms (`transactionCheckInterval`, 60000; at least 100).
    pub transaction_check_interval: u64,
    /// Long polling for pulls that find nothing (true).
    pub long_polling_enable: bool,
    /// Hold time of a pull when long polling is off, ms (1000).
    pub short_polling_time_mills: u64,
    /// Tell consumers when their group changes (true).
    pub notify_consumer_ids_changed_enable: bool,
    /// Copy message bytes through the heap (RocketMQ's default true); sluice always
    /// writes pull bodies straight from the mapped CommitLog and ignores it.
    pub transfer_msg_by_heap: bool,
    /// Region written into send responses (`DefaultRegion`).
    pub region_id: String,
    /// Name server registration timeout, ms (6000).
    pub register_broker_timeout_mills: u64,
    /// Let slaves serve reads (false).
    pub slave_read_enable: bool,
    /// Check offsets on slaves too (false).
    pub offset_check_in_slave: bool,
    /// Flow control: refuse sends that waited longer than `waitTimeMillsInSendQueue`.
    pub broker_fast_failure_enable: bool,
    /// Longest a send may wait in the queue before SYSTEM_BUSY, ms (200).
    pub wait_time_mills_in_send_queue: u64,
    /// `TRACE_ON` in send responses (true).
    pub trace_on: bool,
    /// SQL92 property filters (false: CHECK_CLIENT_CONFIG and pulls of a SQL92
    /// subscription get SYSTEM_ERROR, as in RocketMQ).
    pub enable_property_filter: bool,
    /// How long the SQL92 filter of a consumer group that went away is kept, ms
    /// (86400000 = 24 h).
    pub filter_data_clean_time_span: i64,
    /// sluice: evaluate every registered SQL92 filter of a topic at dispatch and keep
    /// the results as match bits, so pulls skip non-matching messages without reading
    /// them (true; RocketMQ's bloom filter `enableCalcFilterBitMap` is the nearest
    /// thing, and is accepted but not used).
    pub filter_match_index_enable: bool,
    /// Zlib-compressed registration bodies (false).
    pub compressed_register: bool,
    /// Register the full topic table every period (true).
    pub force_register: bool,
    /// Registration period, ms (30000; clamped to 10000..=60000).
    pub register_name_server_period: u64,
    /// Keys UPDATE_BROKER_CONFIG refuses.
    pub config_black_list: String,
    /// Main listen port (10911).
    pub listen_port: u16,
    /// Address to bind (0.0.0.0).
    pub bind_address: String,
    /// Listen backlog of every broker listener: main port, VIP channel and HA port
    /// (`serverSocketBacklog`, 1024; > 0). Handshaken connections wait there to be
    /// accepted; a connect storm beyond it has SYNs dropped and retried seconds later.
    /// The kernel caps it at `net.core.somaxconn`.
    pub server_socket_backlog: u32,
    /// HA listen port (default listenPort + 1).
    pub ha_listen_port: Option<u16>,
    /// The VIP channel (RocketMQ's "fast remoting server": the same requests on a
    /// second port, which a Java slave uses to copy its master's tables and clients
    /// use with `vipChannelEnabled`). Default listenPort − 2; 0 turns it off.
    pub fast_listen_port: Option<u16>,
    /// Close idle client connections after this many seconds (120); 0 never closes
    /// them (as Netty's idle handler, and the name server's same key).
    pub server_channel_max_idle_time_seconds: u64,
    /// Largest frame accepted (16 MiB).
    pub frame_max_length: usize,
    /// sluice: serve RocketMQ 5's gRPC protocol (`apache.rocketmq.v2.MessagingService`)
    /// inside the broker, Apache's proxy in local mode (false; `mqbroker --enable-proxy`
    /// turns it on, as Apache's script starts its broker with the proxy).
    pub enable_grpc_proxy: bool,
    /// The port of that endpoint, bound on `bindAddress` (default: the proxy config's
    /// `grpcServerPort`, 8081; 0: any free port).
    pub grpc_server_port: Option<u16>,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            namesrv_addr: None,
            broker_ip1: None,
            broker_ip2: None,
            broker_name: default_broker_name(),
            broker_cluster_name: "DefaultCluster".into(),
            broker_id: 0,
            broker_role: BrokerRole::ASYNC_MASTER,
            master_role_on_switch: BrokerRole::ASYNC_MASTER,
            broker_permission: 6,
            default_topic_queue_nums: 8,
            auto_create_topic_enable: true,
            cluster_topic_enable: true,
            broker_topic_enable: true,
            auto_create_subscription_group: true,
            msg_trace_topic_name: "RMQ_SYS_TRACE_TOPIC".into(),
            trace_topic_enable: false,
            flush_consumer_offset_interval: 5000,
            reject_transaction_message: false,
            recall_message_enable: false,
            allow_recall_when_broker_not_writeable: true,
            store_reply_message_enable: true,
            use_server_side_reset_offset: true,
            cold_data_flow_control_enable: false,
            enable_mixed_message_type: false,
            enable_retry_topic_v2: false,
            retrieve_message_from_pop_retry_topic_v1: true,
            pop_from_retry_probability: 20,
            revive_queue_num: 8,
            revive_interval: 1000,
            pop_response_return_actual_retry_topic: false,
            init_pop_offset_by_check_msg_in_mem: true,
            pop_from_retry_probability_for_priority: 0,
            priority_order_asc: true,
            use_separate_retry_queue: false,
            server_load_balancer_enable: true,
            default_message_request_mode: remoting::protocol::pop::MessageRequestMode::Pull,
            default_pop_share_queue_num: -1,
            pop_consumer_kv_service_enable: false,
            enable_pop_message_threshold: false,
            enable_pop_buffer_merge: true,
            pop_ck_stay_buffer_time: 10_000,
            pop_ck_max_buffer_size: 200_000,
            max_pop_polling_size: 100_000,
            pop_polling_size: 1024,
            cg_cold_read_threshold: 3 * 1024 * 1024,
            global_cold_read_threshold: 100 * 1024 * 1024,
            transaction_time_out: 6_000,
            transaction_check_max: 15,
            transaction_check_interval: 60_000,
            long_polling_enable: true,
            short_polling_time_mills: 1000,
            notify_consumer_ids_changed_enable: true,
            transfer_msg_by_heap: true,
            region_id: "DefaultRegion".into(),
            register_broker_timeout_mills: 6000,
            slave_read_enable: false,
            offset_check_in_slave: false,
            broker_fast_failure_enable: true,
            wait_time_mills_in_send_queue: 200,
            trace_on: true,
            enable_property_filter: false,
            filter_data_clean_time_span: 24 * 3600 * 1000,
            filter_match_index_enable: true,
            compressed_register: false,
            force_register: true,
            register_name_server_period: 30_000,
            config_black_list: "configBlackList;brokerConfigPath".into(),
            listen_port: 10911,
            bind_address: "0.0.0.0".into(),
            server_socket_backlog: remoting::net::DEFAULT_SERVER_SOCKET_BACKLOG,
            ha_listen_port: None,
            fast_listen_port: None,
            server_channel_max_idle_time_seconds: 120,
            frame_max_length: 16 * 1024 * 1024,
            enable_grpc_proxy: false,
            grpc_server_port: None,
        }
    }
}

/// RocketMQ broker.conf keys sluice accepts without using (thread pools, commercial
/// switches, filter servers...), so a full broker.conf loads without warnings.
pub const ACCEPTED_UNUSED_KEYS: &[&str] = &[
    "rocketmqHome",
    "messageStorePlugIn",
    "sendMessageThreadPoolNums",
    "putMessageFutureThreadPoolNums",
    "pullMessageThreadPoolNums",
    "processReplyMessageThreadPoolNums",
    "queryMessageThreadPoolNums",
    "adminBrokerThreadPoolNums",
    "clientManageThreadPoolNums",
    "consumerManageThreadPoolNums",
    "heartbeatThreadPoolNums",
    "endTransactionThreadPoolNums",
    "flushConsumerOffsetHistoryInterval",
    "fetchNamesrvAddrByAddressServer",
    "sendThreadPoolQueueCapacity",
    "putThreadPoolQueueCapacity",
    "pullThreadPoolQueueCapacity",
    "replyThreadPoolQueueCapacity",
    "queryThreadPoolQueueCapacity",
    "clientManagerThreadPoolQueueCapacity",
    "consumerManagerThreadPoolQueueCapacity",
    "heartbeatThreadPoolQueueCapacity",
    "endTransactionPoolQueueCapacity",
    "filterServerNums",
    "highSpeedMode",
    "commercialEnable",
    "commercialTimerCount",
    "commercialTransCount",
    "commercialBigCount",
    "commercialBaseCount",
    "maxDelayTime",
    "disableConsumeIfConsumerReadSlowly",
    "consumerFallbehindThreshold",
    "waitTimeMillsInPullQueue",
    "waitTimeMillsInHeartbeatQueue",
    "waitTimeMillsInTransactionQueue",
    "startAcceptSendRequestTimeStamp",
    // RocketMQ's bloom filter of SQL92 matches and the ConsumeQueueExt files it lives in;
    // see `filterMatchIndexEnable`.
    "enableCalcFilterBitMap",
    "enableConsumeQueueExt",
    "mappedFileSizeConsumeQueueExt",
    "bitMapLengthConsumeQueueExt",
    "expectConsumerNumUseFilter",
    "maxErrorRateOfBloomFilter",
    "filterSupportRetry",
    "enableDetailStat",
    "autoDeleteUnusedStats",
    "isolateLogEnable",
    "serverWorkerThreads",
    "serverCallbackExecutorThreads",
    "serverSelectorThreads",
    "serverOnewaySemaphoreValue",
    "serverAsyncSemaphoreValue",
    "serverSocketSndBufSize",
    "serverSocketRcvBufSize",
    "serverPooledByteBufAllocatorEnable",
    "useEpollNativeSelector",
    // 5.x timer tuning that the file wheel here has no use for: one enqueue and one
    // delivery task, no warm-up, no separate get/put thread pools, no metric checks.
    "timerEnableDisruptor",
    "timerGetMessageThreadNum",
    "timerPutMessageThreadNum",
    "timerEnableCheckMetrics",
    "timerCheckMetricsWhen",
    "timerMetricSmallThreshold",
    "timerProgressLogIntervalMs",
    "timerWarmEnable",
    "timerSkipUnknownError",
    "timerEnableRetryUntilSuccess",
    "timerInterceptDelayLevel",
    "timerColdDataCheckIntervalMs",
    // POP tuning that sluice's design has no use for: acks and checkpoints are answered
    // once kept (appendCkAsync and appendAckAsync never apply), the buffer's timeouts
    // are its own, one revive task, no thread pools, no re-put limit (a failed revive is
    // retried, never dropped).
    "popPollingMapSize",
    "reviveMaxSlow",
    "reviveScanTime",
    "enableSkipLongAwaitingAck",
    "reviveAckWaitMs",
    "enablePopLog",
    "popCkStayBufferTimeOut",
    "popCkOffsetMaxQueueSize",
    "enablePopBatchAck",
    "popLongPollingForceNotifyInterval",
    "enableNotifyBeforePopCalculateLag",
    "enableNotifyAfterPopOrderLockRelease",
    "popConsumerFSServiceInit",
    "popConsumerKVServiceLog",
    "popConsumerKVServiceInit",
    "popReviveMaxReturnSizePerRead",
    "popReviveMaxAttemptTimes",
    "popInflightMessageThreshold",
    "ackMessageThreadPoolNums",
    "ackThreadPoolQueueCapacity",
    "waitTimeMillsInAckQueue",
    "appendAckAsync",
    "appendCkAsync",
    "skipWhenCKRePutReachMaxTimes",
    "loadBalanceProcessorThreadPoolNums",
];

/// Why a broker config cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file or an override could not be loaded.
    #[error(transparent)]
    Load(#[from] remoting::settings::SettingsError),
    /// A value is out of range or inconsistent.
    #[error("invalid broker config: {0}")]
    Invalid(String),
}

impl BrokerConfig {
    /// Rejects impossible combinations and clamps odd values, as RocketMQ's startup does.
    ///
    /// # Errors
    /// `Invalid` with the reason.
    pub fn sanitize(&mut self) -> Result<(), ConfigError> {
        if self.broker_name.trim().is_empty() {
            return Err(ConfigError::Invalid("brokerName is empty".into()));
        }
        match self.broker_role {
            BrokerRole::ASYNC_MASTER | BrokerRole::SYNC_MASTER => self.broker_id = 0,
            BrokerRole::SLAVE if self.broker_id <= 0 => {
                return Err(ConfigError::Invalid(format!(
                    "brokerRole = SLAVE needs brokerId > 0, not {}",
                    self.broker_id
                )));
            }
            BrokerRole::SLAVE => {}
        }
        if self.server_socket_backlog == 0 {
            return Err(ConfigError::Invalid(
                "serverSocketBacklog must be > 0".into(),
            ));
        }
        if self.cold_data_flow_control_enable {
            return Err(ConfigError::Invalid(
                "coldDataFlowControlEnable = true: sluice has no cold-read flow control".into(),
            ));
        }
        if self.revive_queue_num <= 0
            || self.revive_queue_num >= remoting::protocol::pop::POP_ORDER_REVIVE_QUEUE
        {
            return Err(ConfigError::Invalid(format!(
                "reviveQueueNum must be in 1..{}, not {}",
                remoting::protocol::pop::POP_ORDER_REVIVE_QUEUE,
                self.revive_queue_num
            )));
        }
        self.revive_interval = self.revive_interval.max(100);
        if self.pop_consumer_kv_service_enable {
            return Err(ConfigError::Invalid(
                "popConsumerKVServiceEnable = true: sluice keeps POP records in the revive log only (RocketMQ's file store)".into(),
            ));
        }
        if self.enable_pop_message_threshold {
            return Err(ConfigError::Invalid(
                "enablePopMessageThreshold = true: sluice has no in-flight threshold for pops"
                    .into(),
            ));
        }
        self.register_name_server_period = self.register_name_server_period.clamp(10_000, 60_000);
        // A zero interval would make the check-back service spin.
        self.transaction_check_interval = self.transaction_check_interval.max(100);
        if let Some(ip) = &self.broker_ip1 {
            ip.parse::<IpAddr>().map_err(|_| {
                ConfigError::Invalid(format!("brokerIP1 '{ip}' is not an IP address"))
            })?;
        }
        Ok(())
    }

    /// `brokerIP1`, or the machine's first non-loopback IPv4 address, or 127.0.0.1.
    #[must_use]
    pub fn broker_ip1(&self) -> String {
        self.broker_ip1.clone().unwrap_or_else(local_address)
    }

    /// `brokerIP2`, or `brokerIP1`.
    #[must_use]
    pub fn broker_ip2(&self) -> String {
        self.broker_ip2.clone().unwrap_or_else(|| self.broker_ip1())
    }

    /// `brokerIP1:listenPort`: the address registered with the name server.
    #[must_use]
    pub fn broker_addr(&self, listen_port: u16) -> String {
        format!("{}:{listen_port}", self.broker_ip1())
    }

    /// The HA port: `haListenPort`, or listenPort + 1.
    #[must_use]
    pub fn ha_listen_port(&self, listen_port: u16) -> u16 {
        self.ha_listen_port
            .unwrap_or_else(|| listen_port.saturating_add(1))
    }

    /// How long a client connection may stay idle (`None`: forever).
    #[must_use]
    pub fn idle_timeout(&self) -> Option<Duration> {
        (self.server_channel_max_idle_time_seconds > 0)
            .then(|| Duration::from_secs(self.server_channel_max_idle_time_seconds))
    }

    /// The VIP channel port: `fastListenPort`, or listenPort − 2; `None` when off
    /// (`fastListenPort=0`, or no port below the main one).
    #[must_use]
    pub fn fast_listen_port(&self, listen_port: u16) -> Option<u16> {
        match self.fast_listen_port {
            Some(0) => None,
            Some(port) => Some(port),
            None => listen_port.checked_sub(2).filter(|p| *p > 0),
        }
    }

    /// Name server addresses.
    #[must_use]
    pub fn namesrv_addrs(&self) -> Vec<String> {
        self.namesrv_addr
            .as_deref()
            .map(remoting::net::split_addr_list)
            .unwrap_or_default()
    }
}

fn default_broker_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "broker-a".into())
}

/// The first non-loopback IPv4 address (found by "connecting" a UDP socket, which
/// sends nothing), else 127.0.0.1.
fn local_address() -> String {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| {
            s.connect("192.0.2.1:9")?;
            s.local_addr()
        })
        .ok()
        .map(|a| a.ip())
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified())
        .map_or_else(|| "127.0.0.1".to_owned(), |ip| ip.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::settings::Settings;

    #[test]
    fn loads_a_rocketmq_broker_conf() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("broker.conf");
        std::fs::write(
            &conf,
            "brokerClusterName = DefaultCluster\nbrokerName = broker-a\nbrokerId = 0\ndeleteWhen = 04\nfileReservedTime = 48\nbrokerRole = SYNC_MASTER\nflushDiskType = ASYNC_FLUSH\nbrokerIP1=127.0.0.1\nsendMessageThreadPoolNums=8\ntransactionTimeOut=1500\ntransactionCheckInterval=0\n",
        )
        .unwrap();
        let settings = Settings::load(Some(&conf), &["listenPort=20911".into()]).unwrap();
        let mut cfg: BrokerConfig = settings.deserialize().unwrap();
        settings.accept_keys(ACCEPTED_UNUSED_KEYS);
        cfg.sanitize().unwrap();
        assert_eq!(cfg.broker_role, BrokerRole::SYNC_MASTER);
        assert_eq!(cfg.transaction_time_out, 1500);
        assert_eq!(cfg.transaction_check_max, 15);
        // Clamped: a zero interval would spin.
        assert_eq!(cfg.transaction_check_interval, 100);
        assert_eq!(cfg.broker_addr(cfg.listen_port), "127.0.0.1:20911");
        assert_eq!(cfg.ha_listen_port(cfg.listen_port), 20912);
        assert_eq!(cfg.fast_listen_port(cfg.listen_port), Some(20909));
        cfg.fast_listen_port = Some(0);
        assert_eq!(cfg.fast_listen_port(cfg.listen_port), None);
        cfg.fast_listen_port = Some(30000);
        assert_eq!(cfg.fast_listen_port(cfg.listen_port), Some(30000));
        cfg.fast_listen_port = None;
        assert_eq!(cfg.fast_listen_port(2), None);
        // Store keys are read by the store's config.
        assert_eq!(
            settings.unknown_keys(),
            vec!["deleteWhen", "fileReservedTime", "flushDiskType"]
        );
    }

    #[test]
    fn sanitize_rules() {
        let mut slave = BrokerConfig {
            broker_role: BrokerRole::SLAVE,
            broker_id: 0,
            ..BrokerConfig::default()
        };
        assert!(slave.sanitize().is_err());
        slave.broker_id = 1;
        slave.register_name_server_period = 1;
        slave.sanitize().unwrap();
        assert_eq!(slave.register_name_server_period, 10_000);
        let mut master = BrokerConfig {
            broker_id: 3,
            ..BrokerConfig::default()
        };
        master.sanitize().unwrap();
        assert_eq!(master.broker_id, 0);
        assert_eq!(BrokerConfig::default().server_socket_backlog, 1024);
        let mut no_backlog = BrokerConfig {
            server_socket_backlog: 0,
            ..BrokerConfig::default()
        };
        assert!(no_backlog.sanitize().is_err());
    }

    #[test]
    fn pop_features_sluice_lacks_are_refused() {
        for mut c in [
            BrokerConfig {
                pop_consumer_kv_service_enable: true,
                ..BrokerConfig::default()
            },
            BrokerConfig {
                enable_pop_message_threshold: true,
                ..BrokerConfig::default()
            },
            BrokerConfig {
                revive_queue_num: 0,
                ..BrokerConfig::default()
            },
        ] {
            assert!(c.sanitize().is_err(), "{c:?}");
        }
    }

    #[test]
    fn an_idle_time_of_zero_never_closes() {
        let never = BrokerConfig {
            server_channel_max_idle_time_seconds: 0,
            ..BrokerConfig::default()
        };
        assert_eq!(never.idle_timeout(), None);
        assert_eq!(
            BrokerConfig::default().idle_timeout(),
            Some(Duration::from_secs(120))
        );
    }
}
