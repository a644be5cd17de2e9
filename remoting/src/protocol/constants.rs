//! Protocol constants: permissions, system topics, version ordinals, topic name rules.

/// Permission bits of topics and brokers (`PermName.java`).
pub mod perm {
    /// Messages are delivered with priority (unused by clients).
    pub const PRIORITY: i32 = 8;
    /// Readable.
    pub const READ: i32 = 4;
    /// Writable.
    pub const WRITE: i32 = 2;
    /// Topic may be used as an auto-create template (TBW102).
    pub const INHERIT: i32 = 1;

    /// Whether `perm` allows reading.
    #[must_use]
    pub const fn is_readable(perm: i32) -> bool {
        perm & READ == READ
    }

    /// Whether `perm` allows writing.
    #[must_use]
    pub const fn is_writeable(perm: i32) -> bool {
        perm & WRITE == WRITE
    }

    /// Whether `perm` allows inheriting.
    #[must_use]
    pub const fn is_inherited(perm: i32) -> bool {
        perm & INHERIT == INHERIT
    }

    /// `PermName.perm2String`: `RWX` style, `-` for a missing bit.
    #[must_use]
    pub fn to_text(perm: i32) -> String {
        let mut s = String::with_capacity(3);
        s.push(if is_readable(perm) { 'R' } else { '-' });
        s.push(if is_writeable(perm) { 'W' } else { '-' });
        s.push(if is_inherited(perm) { 'X' } else { '-' });
        s
    }
}

/// Pull request sys flag bits (`PullSysFlag.java`).
pub mod pull_sys_flag {
    /// Commit `commitOffset` with this pull.
    pub const COMMIT_OFFSET: i32 = 0x1;
    /// Hold the pull when nothing is there (long polling).
    pub const SUSPEND: i32 = 0x2;
    /// The request carries its subscription.
    pub const SUBSCRIPTION: i32 = 0x4;
    /// Class filter (legacy).
    pub const CLASS_FILTER: i32 = 0x8;
    /// 5.x lite pull consumer.
    pub const LITE_PULL: i32 = 0x10;

    /// Whether `flag` has `bit`.
    #[must_use]
    pub const fn has(flag: i32, bit: i32) -> bool {
        flag & bit == bit
    }
}

/// ExtField of QUERY_MESSAGE saying the key is a UNIQ_KEY (`MixAll.UNIQUE_MSG_QUERY_FLAG`).
pub const UNIQUE_KEY_QUERY: &str = "_UNIQUE_KEY_QUERY";

/// Topic sys flag bits (`TopicSysFlag.java`).
pub mod topic_sys_flag {
    /// Unit topic.
    pub const UNIT: i32 = 0x1;
    /// Topic with unit subscriptions.
    pub const UNIT_SUB: i32 = 0x2;
}

/// Names of RocketMQ's system topics and groups.
pub mod system {
    /// Auto-create template topic.
    pub const AUTO_CREATE_TOPIC_KEY: &str = "TBW102";
    /// Delay messages wait here.
    pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
    /// Benchmark topic (1024 queues).
    pub const BENCHMARK_TOPIC: &str = "BenchmarkTest";
    /// Self test.
    pub const SELF_TEST_TOPIC: &str = "SELF_TEST_TOPIC";
    /// Offset moved events.
    pub const OFFSET_MOVED_EVENT: &str = "OFFSET_MOVED_EVENT";
    /// Transaction half messages.
    pub const TRANS_HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
    /// Transaction op records.
    pub const TRANS_OP_HALF_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
    /// Half messages checked too often.
    pub const TRANS_CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
    /// Message trace.
    pub const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";
    /// Prefix of retry topics: `%RETRY%<group>`.
    pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";
    /// Prefix of dead-letter topics: `%DLQ%<group>`.
    pub const DLQ_GROUP_TOPIC_PREFIX: &str = "%DLQ%";
    /// Suffix of the per-cluster reply topic.
    pub const REPLY_TOPIC_POSTFIX: &str = "REPLY_TOPIC";
    /// Prefix of 5.x system topics.
    pub const SYSTEM_TOPIC_PREFIX: &str = "rmq_sys_";
    /// Prefix of light message queue topics (`MixAll.LMQ_PREFIX`).
    pub const LMQ_PREFIX: &str = "%LMQ%";
    /// Group used by mqadmin tools.
    pub const TOOLS_CONSUMER_GROUP: &str = "TOOLS_CONSUMER";
    /// Group of the broker's own inner producer.
    pub const CLIENT_INNER_PRODUCER_GROUP: &str = "CLIENT_INNER_PRODUCER";
    /// Default cluster name.
    pub const DEFAULT_CLUSTER: &str = "DefaultCluster";
    /// KV namespace of ordered topic configs.
    pub const ORDER_TOPIC_CONFIG_NAMESPACE: &str = "ORDER_TOPIC_CONFIG";
    /// Master's broker id.
    pub const MASTER_ID: i64 = 0;

    /// `%RETRY%<group>`.
    #[must_use]
    pub fn retry_topic(group: &str) -> String {
        format!("{RETRY_GROUP_TOPIC_PREFIX}{group}")
    }

    /// `%DLQ%<group>`.
    #[must_use]
    pub fn dlq_topic(group: &str) -> String {
        format!("{DLQ_GROUP_TOPIC_PREFIX}{group}")
    }

    /// Topics a client may not send to (`TopicValidator.isNotAllowedSendTopic`).
    #[must_use]
    pub fn is_send_forbidden(topic: &str) -> bool {
        [
            SCHEDULE_TOPIC,
            TRANS_HALF_TOPIC,
            TRANS_OP_HALF_TOPIC,
            TRANS_CHECK_MAX_TIME_TOPIC,
            SELF_TEST_TOPIC,
            OFFSET_MOVED_EVENT,
        ]
        .contains(&topic)
    }

    /// System topics (`TopicValidator.isSystemTopic`).
    #[must_use]
    pub fn is_system_topic(topic: &str) -> bool {
        is_send_forbidden(topic)
            || [AUTO_CREATE_TOPIC_KEY, BENCHMARK_TOPIC, TRACE_TOPIC].contains(&topic)
            || topic.starts_with(SYSTEM_TOPIC_PREFIX)
    }

    /// Groups every broker knows (4.9.8's `SubscriptionGroupManager.init`).
    pub const SYSTEM_GROUPS: &[&str] = &[
        TOOLS_CONSUMER_GROUP,
        "FILTERSRV_CONSUMER",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PULL",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_SYS_RMQ_TRANS",
    ];

    /// Whether `group` is one of RocketMQ's system consumer groups
    /// (`MixAll.isSysConsumerGroup`).
    #[must_use]
    pub fn is_system_group(group: &str) -> bool {
        group.starts_with("CID_RMQ_SYS_") || SYSTEM_GROUPS.contains(&group)
    }
}

/// Longest topic name accepted (`TopicValidator.TOPIC_MAX_LENGTH`).
pub const TOPIC_MAX_LENGTH: usize = 127;

/// Why a topic name is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicNameError {
    /// Empty or blank.
    Blank,
    /// Longer than [`TOPIC_MAX_LENGTH`].
    TooLong,
    /// A character outside `[%|a-zA-Z0-9_-]`.
    IllegalCharacter,
}

impl std::fmt::Display for TopicNameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TopicNameError::Blank => "The specified topic is blank.",
            TopicNameError::TooLong => "The specified topic is longer than topic max length.",
            TopicNameError::IllegalCharacter => {
                "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
            }
        })
    }
}

/// A byte RocketMQ allows in topic and group names (`^[%|a-zA-Z0-9_-]+$`).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-')
}

/// Checks a topic name as `TopicValidator.validateTopic` does.
///
/// # Errors
/// The reason the name is refused.
pub fn validate_topic(topic: &str) -> Result<(), TopicNameError> {
    if topic.trim().is_empty() {
        return Err(TopicNameError::Blank);
    }
    if topic.len() > TOPIC_MAX_LENGTH {
        return Err(TopicNameError::TooLong);
    }
    if !topic.bytes().all(is_name_byte) {
        return Err(TopicNameError::IllegalCharacter);
    }
    Ok(())
}

/// Longest group name accepted (`TopicValidator.GROUP_MAX_LENGTH`, RocketMQ 5.4+).
pub const GROUP_MAX_LENGTH: usize = 120;

/// Checks a consumer group name as `TopicValidator.validateGroup` does (RocketMQ 5.4+;
/// the characters of a topic name, at most [`GROUP_MAX_LENGTH`]).
///
/// # Errors
/// RocketMQ's remark for the refused name.
pub fn validate_group(group: &str) -> Result<(), String> {
    if group.trim().is_empty() {
        return Err("The specified group is blank.".to_owned());
    }
    if !group.bytes().all(is_name_byte) {
        return Err(format!(
            "The specified group: {group}, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    if group.len() > GROUP_MAX_LENGTH {
        return Err(format!(
            "The specified group: {group}, is longer than group max length: {GROUP_MAX_LENGTH}"
        ));
    }
    Ok(())
}

/// `MQVersion.Version` names by ordinal, 0 = `V3_0_0_SNAPSHOT`.
const VERSION_NAMES: &str = "\
     V3_0_0_SNAPSHOT V3_0_0_ALPHA1 V3_0_0_BETA1 V3_0_0_BETA2 V3_0_0_BETA3 V3_0_0_BETA4 \
     V3_0_0_BETA5 V3_0_0_BETA6_SNAPSHOT V3_0_0_BETA6 V3_0_0_BETA7_SNAPSHOT V3_0_0_BETA7 \
     V3_0_0_BETA8_SNAPSHOT V3_0_0_BETA8 V3_0_0_BETA9_SNAPSHOT V3_0_0_BETA9 V3_0_0_FINAL \
     V3_0_1_SNAPSHOT V3_0_1 V3_0_2_SNAPSHOT V3_0_2 V3_0_3_SNAPSHOT V3_0_3 V3_0_4_SNAPSHOT \
     V3_0_4 V3_0_5_SNAPSHOT V3_0_5 V3_0_6_SNAPSHOT V3_0_6 V3_0_7_SNAPSHOT V3_0_7 \
     V3_0_8_SNAPSHOT V3_0_8 V3_0_9_SNAPSHOT V3_0_9 V3_0_10_SNAPSHOT V3_0_10 V3_0_11_SNAPSHOT \
     V3_0_11 V3_0_12_SNAPSHOT V3_0_12 V3_0_13_SNAPSHOT V3_0_13 V3_0_14_SNAPSHOT V3_0_14 \
     V3_0_15_SNAPSHOT V3_0_15 V3_1_0_SNAPSHOT V3_1_0 V3_1_1_SNAPSHOT V3_1_1 V3_1_2_SNAPSHOT \
     V3_1_2 V3_1_3_SNAPSHOT V3_1_3 V3_1_4_SNAPSHOT V3_1_4 V3_1_5_SNAPSHOT V3_1_5 \
     V3_1_6_SNAPSHOT V3_1_6 V3_1_7_SNAPSHOT V3_1_7 V3_1_8_SNAPSHOT V3_1_8 V3_1_9_SNAPSHOT \
     V3_1_9 V3_2_0_SNAPSHOT V3_2_0 V3_2_1_SNAPSHOT V3_2_1 V3_2_2_SNAPSHOT V3_2_2 \
     V3_2_3_SNAPSHOT V3_2_3 V3_2_4_SNAPSHOT V3_2_4 V3_2_5_SNAPSHOT V3_2_5 V3_2_6_SNAPSHOT \
     V3_2_6 V3_2_7_SNAPSHOT V3_2_7 V3_2_8_SNAPSHOT V3_2_8 V3_2_9_SNAPSHOT V3_2_9 \
     V3_3_1_SNAPSHOT V3_3_1 V3_3_2_SNAPSHOT V3_3_2 V3_3_3_SNAPSHOT V3_3_3 V3_3_4_SNAPSHOT \
     V3_3_4 V3_3_5_SNAPSHOT V3_3_5 V3_3_6_SNAPSHOT V3_3_6 V3_3_7_SNAPSHOT V3_3_7 \
     V3_3_8_SNAPSHOT V3_3_8 V3_3_9_SNAPSHOT V3_3_9 V3_4_1_SNAPSHOT V3_4_1 V3_4_2_SNAPSHOT \
     V3_4_2 V3_4_3_SNAPSHOT V3_4_3 V3_4_4_SNAPSHOT V3_4_4 V3_4_5_SNAPSHOT V3_4_5 \
     V3_4_6_SNAPSHOT V3_4_6 V3_4_7_SNAPSHOT V3_4_7 V3_4_8_SNAPSHOT V3_4_8 V3_4_9_SNAPSHOT \
     V3_4_9 V3_5_1_SNAPSHOT V3_5_1 V3_5_2_SNAPSHOT V3_5_2 V3_5_3_SNAPSHOT V3_5_3 \
     V3_5_4_SNAPSHOT V3_5_4 V3_5_5_SNAPSHOT V3_5_5 V3_5_6_SNAPSHOT V3_5_6 V3_5_7_SNAPSHOT \
     V3_5_7 V3_5_8_SNAPSHOT V3_5_8 V3_5_9_SNAPSHOT V3_5_9 V3_6_1_SNAPSHOT V3_6_1 \
     V3_6_2_SNAPSHOT V3_6_2 V3_6_3_SNAPSHOT V3_6_3 V3_6_4_SNAPSHOT V3_6_4 V3_6_5_SNAPSHOT \
     V3_6_5 V3_6_6_SNAPSHOT V3_6_6 V3_6_7_SNAPSHOT V3_6_7 V3_6_8_SNAPSHOT V3_6_8 \
     V3_6_9_SNAPSHOT V3_6_9 V3_7_1_SNAPSHOT V3_7_1 V3_7_2_SNAPSHOT V3_7_2 V3_7_3_SNAPSHOT \
     V3_7_3 V3_7_4_SNAPSHOT V3_7_4 V3_7_5_SNAPSHOT V3_7_5 V3_7_6_SNAPSHOT V3_7_6 \
     V3_7_7_SNAPSHOT V3_7_7 V3_7_8_SNAPSHOT V3_7_8 V3_7_9_SNAPSHOT V3_7_9 V3_8_1_SNAPSHOT \
     V3_8_1 V3_8_2_SNAPSHOT V3_8_2 V3_8_3_SNAPSHOT V3_8_3 V3_8_4_SNAPSHOT V3_8_4 \
     V3_8_5_SNAPSHOT V3_8_5 V3_8_6_SNAPSHOT V3_8_6 V3_8_7_SNAPSHOT V3_8_7 V3_8_8_SNAPSHOT \
     V3_8_8 V3_8_9_SNAPSHOT V3_8_9 V3_9_1_SNAPSHOT V3_9_1 V3_9_2_SNAPSHOT V3_9_2 \
     V3_9_3_SNAPSHOT V3_9_3 V3_9_4_SNAPSHOT V3_9_4 V3_9_5_SNAPSHOT V3_9_5 V3_9_6_SNAPSHOT \
     V3_9_6 V3_9_7_SNAPSHOT V3_9_7 V3_9_8_SNAPSHOT V3_9_8 V3_9_9_SNAPSHOT V3_9_9 \
     V4_0_0_SNAPSHOT V4_0_0 V4_0_1_SNAPSHOT V4_0_1 V4_0_2_SNAPSHOT V4_0_2 V4_0_3_SNAPSHOT \
     V4_0_3 V4_0_4_SNAPSHOT V4_0_4 V4_0_5_SNAPSHOT V4_0_5 V4_0_6_SNAPSHOT V4_0_6 \
     V4_0_7_SNAPSHOT V4_0_7 V4_0_8_SNAPSHOT V4_0_8 V4_0_9_SNAPSHOT V4_0_9 V4_1_0_SNAPSHOT \
     V4_1_0 V4_1_1_SNAPSHOT V4_1_1 V4_1_2_SNAPSHOT V4_1_2 V4_1_3_SNAPSHOT V4_1_3 \
     V4_1_4_SNAPSHOT V4_1_4 V4_1_5_SNAPSHOT V4_1_5 V4_1_6_SNAPSHOT V4_1_6 V4_1_7_SNAPSHOT \
     V4_1_7 V4_1_8_SNAPSHOT V4_1_8 V4_1_9_SNAPSHOT V4_1_9 V4_2_0_SNAPSHOT V4_2_0 \
     V4_2_1_SNAPSHOT V4_2_1 V4_2_2_SNAPSHOT V4_2_2 V4_2_3_SNAPSHOT V4_2_3 V4_2_4_SNAPSHOT \
     V4_2_4 V4_2_5_SNAPSHOT V4_2_5 V4_2_6_SNAPSHOT V4_2_6 V4_2_7_SNAPSHOT V4_2_7 \
     V4_2_8_SNAPSHOT V4_2_8 V4_2_9_SNAPSHOT V4_2_9 V4_3_0_SNAPSHOT V4_3_0 V4_3_1_SNAPSHOT \
     V4_3_1 V4_3_2_SNAPSHOT V4_3_2 V4_3_3_SNAPSHOT V4_3_3 V4_3_4_SNAPSHOT V4_3_4 \
     V4_3_5_SNAPSHOT V4_3_5 V4_3_6_SNAPSHOT V4_3_6 V4_3_7_SNAPSHOT V4_3_7 V4_3_8_SNAPSHOT \
     V4_3_8 V4_3_9_SNAPSHOT V4_3_9 V4_4_0_SNAPSHOT V4_4_0 V4_4_1_SNAPSHOT V4_4_1 \
     V4_4_2_SNAPSHOT V4_4_2 V4_4_3_SNAPSHOT V4_4_3 V4_4_4_SNAPSHOT V4_4_4 V4_4_5_SNAPSHOT \
     V4_4_5 V4_4_6_SNAPSHOT V4_4_6 V4_4_7_SNAPSHOT V4_4_7 V4_4_8_SNAPSHOT V4_4_8 \
     V4_4_9_SNAPSHOT V4_4_9 V4_5_0_SNAPSHOT V4_5_0 V4_5_1_SNAPSHOT V4_5_1 V4_5_2_SNAPSHOT \
     V4_5_2 V4_5_3_SNAPSHOT V4_5_3 V4_5_4_SNAPSHOT V4_5_4 V4_5_5_SNAPSHOT V4_5_5 \
     V4_5_6_SNAPSHOT V4_5_6 V4_5_7_SNAPSHOT V4_5_7 V4_5_8_SNAPSHOT V4_5_8 V4_5_9_SNAPSHOT \
     V4_5_9 V4_6_0_SNAPSHOT V4_6_0 V4_6_1_SNAPSHOT V4_6_1 V4_6_2_SNAPSHOT V4_6_2 \
     V4_6_3_SNAPSHOT V4_6_3 V4_6_4_SNAPSHOT V4_6_4 V4_6_5_SNAPSHOT V4_6_5 V4_6_6_SNAPSHOT \
     V4_6_6 V4_6_7_SNAPSHOT V4_6_7 V4_6_8_SNAPSHOT V4_6_8 V4_6_9_SNAPSHOT V4_6_9 \
     V4_7_0_SNAPSHOT V4_7_0 V4_7_1_SNAPSHOT V4_7_1 V4_7_2_SNAPSHOT V4_7_2 V4_7_3_SNAPSHOT \
     V4_7_3 V4_7_4_SNAPSHOT V4_7_4 V4_7_5_SNAPSHOT V4_7_5 V4_7_6_SNAPSHOT V4_7_6 \
     V4_7_7_SNAPSHOT V4_7_7 V4_7_8_SNAPSHOT V4_7_8 V4_7_9_SNAPSHOT V4_7_9 V4_8_0_SNAPSHOT \
     V4_8_0 V4_8_1_SNAPSHOT V4_8_1 V4_8_2_SNAPSHOT V4_8_2 V4_8_3_SNAPSHOT V4_8_3 \
     V4_8_4_SNAPSHOT V4_8_4 V4_8_5_SNAPSHOT V4_8_5 V4_8_6_SNAPSHOT V4_8_6 V4_8_7_SNAPSHOT \
     V4_8_7 V4_8_8_SNAPSHOT V4_8_8 V4_8_9_SNAPSHOT V4_8_9 V4_9_0_SNAPSHOT V4_9_0 \
     V4_9_1_SNAPSHOT V4_9_1 V4_9_2_SNAPSHOT V4_9_2 V4_9_3_SNAPSHOT V4_9_3 V4_9_4_SNAPSHOT \
     V4_9_4 V4_9_5_SNAPSHOT V4_9_5 V4_9_6_SNAPSHOT V4_9_6 V4_9_7_SNAPSHOT V4_9_7 \
     V4_9_8_SNAPSHOT V4_9_8 V4_9_9_SNAPSHOT V4_9_9 V5_0_0_SNAPSHOT V5_0_0 V5_0_1_SNAPSHOT \
     V5_0_1 V5_0_2_SNAPSHOT V5_0_2 V5_0_3_SNAPSHOT V5_0_3 V5_0_4_SNAPSHOT V5_0_4 \
     V5_0_5_SNAPSHOT V5_0_5 V5_0_6_SNAPSHOT V5_0_6 V5_0_7_SNAPSHOT V5_0_7 V5_0_8_SNAPSHOT \
     V5_0_8 V5_0_9_SNAPSHOT V5_0_9 V5_1_0_SNAPSHOT V5_1_0 V5_1_1_SNAPSHOT V5_1_1 \
     V5_1_2_SNAPSHOT V5_1_2 V5_1_3_SNAPSHOT V5_1_3 V5_1_4_SNAPSHOT V5_1_4 V5_1_5_SNAPSHOT \
     V5_1_5 V5_1_6_SNAPSHOT V5_1_6 V5_1_7_SNAPSHOT V5_1_7 V5_1_8_SNAPSHOT V5_1_8 \
     V5_1_9_SNAPSHOT V5_1_9 V5_2_0_SNAPSHOT V5_2_0 V5_2_1_SNAPSHOT V5_2_1 V5_2_2_SNAPSHOT \
     V5_2_2 V5_2_3_SNAPSHOT V5_2_3 V5_2_4_SNAPSHOT V5_2_4 V5_2_5_SNAPSHOT V5_2_5 \
     V5_2_6_SNAPSHOT V5_2_6 V5_2_7_SNAPSHOT V5_2_7 V5_2_8_SNAPSHOT V5_2_8 V5_2_9_SNAPSHOT \
     V5_2_9 V5_3_0_SNAPSHOT V5_3_0 V5_3_1_SNAPSHOT V5_3_1 V5_3_2_SNAPSHOT V5_3_2 \
     V5_3_3_SNAPSHOT V5_3_3 V5_3_4_SNAPSHOT V5_3_4 V5_3_5_SNAPSHOT V5_3_5 V5_3_6_SNAPSHOT \
     V5_3_6 V5_3_7_SNAPSHOT V5_3_7 V5_3_8_SNAPSHOT V5_3_8 V5_3_9_SNAPSHOT V5_3_9 \
     V5_4_0_SNAPSHOT V5_4_0 V5_4_1_SNAPSHOT V5_4_1 V5_4_2_SNAPSHOT V5_4_2 V5_4_3_SNAPSHOT \
     V5_4_3 V5_4_4_SNAPSHOT V5_4_4 V5_4_5_SNAPSHOT V5_4_5 V5_4_6_SNAPSHOT V5_4_6 \
     V5_4_7_SNAPSHOT V5_4_7 V5_4_8_SNAPSHOT V5_4_8 V5_4_9_SNAPSHOT V5_4_9 V5_5_0_SNAPSHOT \
     V5_5_0 V5_5_1_SNAPSHOT V5_5_1 V5_5_2_SNAPSHOT V5_5_2 V5_5_3_SNAPSHOT V5_5_3 \
     V5_5_4_SNAPSHOT V5_5_4 V5_5_5_SNAPSHOT V5_5_5 V5_5_6_SNAPSHOT V5_5_6 V5_5_7_SNAPSHOT \
     V5_5_7 V5_5_8_SNAPSHOT V5_5_8 V5_5_9_SNAPSHOT V5_5_9 V5_6_0_SNAPSHOT V5_6_0 \
     V5_6_1_SNAPSHOT V5_6_1 V5_6_2_SNAPSHOT V5_6_2 V5_6_3_SNAPSHOT V5_6_3 V5_6_4_SNAPSHOT \
     V5_6_4 V5_6_5_SNAPSHOT V5_6_5 V5_6_6_SNAPSHOT V5_6_6 V5_6_7_SNAPSHOT V5_6_7 \
     V5_6_8_SNAPSHOT V5_6_8 V5_6_9_SNAPSHOT V5_6_9 V5_7_0_SNAPSHOT V5_7_0 V5_7_1_SNAPSHOT \
     V5_7_1 V5_7_2_SNAPSHOT V5_7_2 V5_7_3_SNAPSHOT V5_7_3 V5_7_4_SNAPSHOT V5_7_4 \
     V5_7_5_SNAPSHOT V5_7_5 V5_7_6_SNAPSHOT V5_7_6 V5_7_7_SNAPSHOT V5_7_7 V5_7_8_SNAPSHOT \
     V5_7_8 V5_7_9_SNAPSHOT V5_7_9 V5_8_0_SNAPSHOT V5_8_0 V5_8_1_SNAPSHOT V5_8_1 \
     V5_8_2_SNAPSHOT V5_8_2 V5_8_3_SNAPSHOT V5_8_3 V5_8_4_SNAPSHOT V5_8_4 V5_8_5_SNAPSHOT \
     V5_8_5 V5_8_6_SNAPSHOT V5_8_6 V5_8_7_SNAPSHOT V5_8_7 V5_8_8_SNAPSHOT V5_8_8 \
     V5_8_9_SNAPSHOT V5_8_9 V5_9_0_SNAPSHOT V5_9_0 V5_9_1_SNAPSHOT V5_9_1 V5_9_2_SNAPSHOT \
     V5_9_2 V5_9_3_SNAPSHOT V5_9_3 V5_9_4_SNAPSHOT V5_9_4 V5_9_5_SNAPSHOT V5_9_5 \
     V5_9_6_SNAPSHOT V5_9_6 V5_9_7_SNAPSHOT V5_9_7 V5_9_8_SNAPSHOT V5_9_8 V5_9_9_SNAPSHOT \
     V5_9_9 HIGHER_VERSION";

/// The `MQVersion` name of a version ordinal (`409` → `V4_9_8`); `HIGHER_VERSION` beyond the list.
#[must_use]
pub fn version_name(ordinal: i32) -> &'static str {
    usize::try_from(ordinal)
        .ok()
        .and_then(|i| VERSION_NAMES.split_ascii_whitespace().nth(i))
        .unwrap_or("HIGHER_VERSION")
}

/// The ordinal of a `MQVersion` name (`V5_0_7`, either case), or of a release as the 5.x SDKs
/// write it (`5.0.7`); `None` when it names no known release.
#[must_use]
pub fn version_ordinal(name: &str) -> Option<i32> {
    let trimmed = name.trim();
    let wanted = if trimmed.starts_with(['v', 'V']) {
        trimmed.to_ascii_uppercase()
    } else {
        format!("V{}", trimmed.replace(['.', '-'], "_").to_ascii_uppercase())
    };
    VERSION_NAMES
        .split_ascii_whitespace()
        .position(|n| n == wanted)
        .and_then(|i| i32::try_from(i).ok())
}

/// Version ordinals the protocol branches on.
pub mod version {
    /// V3_4_9: send-back honours the header's maxReconsumeTimes from here on.
    pub const V3_4_9: i32 = 121;
    /// V4_1_0: brokers below refuse SQL92 pulls (client side check at 232 = `V4_1_0_SNAPSHOT`).
    pub const V4_1_0_SNAPSHOT: i32 = 232;
    /// V4_9_4: route data in standard JSON from here on.
    pub const V4_9_4: i32 = 401;
    /// V4_9_8.
    pub const V4_9_8: i32 = 409;
    /// V5_0_0.
    pub const V5_0_0: i32 = 413;
    /// V5_3_3.
    pub const V5_3_3: i32 = 479;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(version_name(0), "V3_0_0_SNAPSHOT");
        assert_eq!(version_name(121), "V3_4_9");
        assert_eq!(version_name(401), "V4_9_4");
        assert_eq!(version_name(409), "V4_9_8");
        assert_eq!(version_name(413), "V5_0_0");
        assert_eq!(version_ordinal("V5_0_0"), Some(413));
        assert_eq!(version_ordinal("5.3.3"), Some(version::V5_3_3));
        assert_eq!(version_ordinal("v4_9_8"), Some(409));
        assert_eq!(version_ordinal("5.0.0-SNAPSHOT"), Some(412));
        assert_eq!(version_ordinal("not a version"), None);
        assert_eq!(version_ordinal(""), None);
        assert_eq!(version_name(479), "V5_3_3");
        assert_eq!(version_name(-1), "HIGHER_VERSION");
        assert_eq!(version_name(100_000), "HIGHER_VERSION");
    }

    #[test]
    fn topic_names() {
        assert!(validate_topic("%RETRY%group_1-a|b").is_ok());
        assert_eq!(validate_topic(" "), Err(TopicNameError::Blank));
        assert_eq!(validate_topic("a b"), Err(TopicNameError::IllegalCharacter));
        assert_eq!(
            validate_topic(&"a".repeat(128)),
            Err(TopicNameError::TooLong)
        );
        assert!(system::is_send_forbidden("SCHEDULE_TOPIC_XXXX"));
        assert_eq!(perm::to_text(7), "RWX");
        assert_eq!(perm::to_text(4), "R--");
    }
}
