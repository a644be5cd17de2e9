//! The wire facts of RocketMQ 5.x POP consumption, in one place for the broker's pop
//! processors, its revive service and the tests that play a client.
//!
//! A popped message is identified by its *extraInfo* (the `POP_CK` property, and the
//! proxy's receipt handle): which checkpoint it belongs to, where that checkpoint's
//! revive records go, and which queue and offset it came from. A message redelivered by
//! the revive service lives in a *pop retry topic* of its group; the retry flag in the
//! extraInfo says which one, so acks reach the queue the message was read from.
//!
//! Layout:
//! - this file: names (revive topic and tags, retry topics, [`RetryFlag`], properties).
//! - `extra_info`: [`ExtraInfo`], the response's offset lists ([`PopOffsetInfo`] and
//!   their parsers).
//! - `header`: the custom headers of POP, ACK, CHANGE_INVISIBLE, PEEK, NOTIFICATION,
//!   POLLING_INFO.
//! - `batch_ack`: the BATCH_ACK_MESSAGE body ([`BatchAck`], [`AckBits`]).
//! - `assignment`: broker-side rebalance (QUERY_ASSIGNMENT, SET/GET message request
//!   mode bodies and `messageRequestMode.json`).

mod assignment;
mod batch_ack;
mod extra_info;
mod header;

pub use assignment::{
    MessageQueueAssignment, MessageRequestMode, MessageRequestModeSerializeWrapper,
    QueryAssignmentRequestBody, QueryAssignmentResponseBody, SetMessageRequestModeRequestBody,
};
pub use batch_ack::{AckBits, BatchAck, BatchAckMessageRequestBody};
pub use extra_info::{
    ExtraInfo, InvalidExtraInfo, PopOffsetInfo, offset_info_key, order_count_key,
    parse_msg_offset_info, parse_order_count_info, parse_start_offset_info,
};
pub use header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    NotificationRequestHeader, NotificationResponseHeader, PeekMessageRequestHeader,
    PollingInfoRequestHeader, PollingInfoResponseHeader, PopMessageRequestHeader,
    PopMessageResponseHeader,
};
pub use message::properties::keys::{FIRST_POP_TIME, POP_CK};

use crate::protocol::constants::system::RETRY_GROUP_TOPIC_PREFIX;

/// The revive queue id that marks an orderly (FIFO) pop (`KeyBuilder.POP_ORDER_REVIVE_QUEUE`):
/// no checkpoint is written, acks go to the order info instead.
pub const POP_ORDER_REVIVE_QUEUE: i32 = 999;

/// Most messages one POP_MESSAGE may ask for; more is refused with INVALID_PARAMETER.
pub const MAX_POP_MSG_NUMS: i32 = 32;

/// `initMode` of a pop (`ConsumeInitMode.MIN`): a new group starts at the queue's min offset.
pub const INIT_MODE_MIN: i32 = 0;
/// `initMode` of a pop (`ConsumeInitMode.MAX`): a new group starts at the queue's end.
pub const INIT_MODE_MAX: i32 = 1;

/// The group whose consumer offsets on the revive topic are the revive progress
/// (`PopAckConstants.REVIVE_GROUP`).
pub const REVIVE_GROUP: &str = "CID_RMQ_SYS_REVIVE_GROUP";

/// Prefix of the revive log topic (`PopAckConstants.REVIVE_TOPIC`), a system topic.
pub const REVIVE_TOPIC_PREFIX: &str = "rmq_sys_REVIVE_LOG_";

/// The revive log topic of a cluster: `rmq_sys_REVIVE_LOG_<cluster>`, one queue per
/// revive queue (`reviveQueueNum`).
#[must_use]
pub fn revive_topic(cluster: &str) -> String {
    format!("{REVIVE_TOPIC_PREFIX}{cluster}")
}

/// Whether `topic` is a revive log topic (`PopAckConstants.isStartWithRevivePrefix`).
#[must_use]
pub fn is_revive_topic(topic: &str) -> bool {
    topic.starts_with(REVIVE_TOPIC_PREFIX)
}

/// Tag of a checkpoint record in the revive log.
pub const CK_TAG: &str = "ck";
/// Tag of an ack record in the revive log.
pub const ACK_TAG: &str = "ack";
/// Tag of a batch ack record in the revive log.
pub const BATCH_ACK_TAG: &str = "bAck";

/// Separator of a v1 pop retry topic: `%RETRY%<group>_<topic>`.
const RETRY_SEPARATOR_V1: char = '_';
/// Separator of a v2 pop retry topic: `%RETRY%<group>+<topic>`.
const RETRY_SEPARATOR_V2: char = '+';

/// The pop retry topic of `topic` for `group` (`KeyBuilder.buildPopRetryTopic`):
/// `%RETRY%<group>_<topic>` (v1), or `%RETRY%<group>+<topic>` when `v2`
/// (`enableRetryTopicV2`). Not the classic push retry topic `%RETRY%<group>`.
#[must_use]
pub fn pop_retry_topic(topic: &str, group: &str, v2: bool) -> String {
    let sep = if v2 {
        RETRY_SEPARATOR_V2
    } else {
        RETRY_SEPARATOR_V1
    };
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}{sep}{topic}")
}

/// Whether `topic` is a v2 pop retry topic: `%RETRY%` and a `+` (`KeyBuilder.isPopRetryTopicV2`).
#[must_use]
pub fn is_pop_retry_topic_v2(topic: &str) -> bool {
    topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) && topic.contains(RETRY_SEPARATOR_V2)
}

/// The normal topic behind a pop retry topic of `group` (`KeyBuilder.parseNormalTopic`):
/// strips `%RETRY%<group>+` or `%RETRY%<group>_`; any other topic is returned as is.
///
/// Java cuts `%RETRY%<group>_`'s length off any other `%RETRY%` topic without checking
/// it (and throws on a shorter one); we leave such a topic whole.
#[must_use]
pub fn normal_topic<'a>(topic: &'a str, group: &str) -> &'a str {
    let Some(rest) = topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) else {
        return topic;
    };
    let Some(rest) = rest.strip_prefix(group) else {
        return topic;
    };
    rest.strip_prefix(RETRY_SEPARATOR_V2)
        .or_else(|| rest.strip_prefix(RETRY_SEPARATOR_V1))
        .unwrap_or(topic)
}

/// Which topic a popped message was read from, as field 4 of its extraInfo and `r` of a
/// batch ack say it (`ExtraInfoUtil.getRetry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryFlag {
    /// `"0"`: the normal topic.
    Normal,
    /// `"1"`: a `%RETRY%` topic without `+`: the v1 pop retry topic `%RETRY%<group>_<topic>`.
    V1,
    /// `"2"`: a `%RETRY%` topic with `+`: the v2 pop retry topic `%RETRY%<group>+<topic>`.
    V2,
}

impl RetryFlag {
    /// The flag of a message read from `topic`.
    #[must_use]
    pub fn of_topic(topic: &str) -> Self {
        if is_pop_retry_topic_v2(topic) {
            RetryFlag::V2
        } else if topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
            RetryFlag::V1
        } else {
            RetryFlag::Normal
        }
    }

    /// The flag's wire text: `"0"`, `"1"` or `"2"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RetryFlag::Normal => "0",
            RetryFlag::V1 => "1",
            RetryFlag::V2 => "2",
        }
    }

    /// From the wire text; `None` for anything but `"0"`, `"1"`, `"2"`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "0" => Some(RetryFlag::Normal),
            "1" => Some(RetryFlag::V1),
            "2" => Some(RetryFlag::V2),
            _ => None,
        }
    }

    /// The topic to ack on for a message of original topic `topic` and `group`
    /// (`ExtraInfoUtil.getRealTopic`): `topic` itself, or its pop retry topic.
    #[must_use]
    pub fn real_topic(self, topic: &str, group: &str) -> String {
        match self {
            RetryFlag::Normal => topic.to_owned(),
            RetryFlag::V1 => pop_retry_topic(topic, group, false),
            RetryFlag::V2 => pop_retry_topic(topic, group, true),
        }
    }
}

impl std::fmt::Display for RetryFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            revive_topic("DefaultCluster"),
            "rmq_sys_REVIVE_LOG_DefaultCluster"
        );
        assert!(is_revive_topic("rmq_sys_REVIVE_LOG_DefaultCluster"));
        assert!(crate::protocol::constants::system::is_system_topic(
            &revive_topic("c")
        ));
        assert_eq!(pop_retry_topic("TopicA", "GID", false), "%RETRY%GID_TopicA");
        assert_eq!(pop_retry_topic("TopicA", "GID", true), "%RETRY%GID+TopicA");
        assert!(is_pop_retry_topic_v2("%RETRY%GID+TopicA"));
        assert!(!is_pop_retry_topic_v2("%RETRY%GID_TopicA"));
        assert!(!is_pop_retry_topic_v2("Topic+A"));
    }

    #[test]
    fn normal_topic_strips_either_separator_of_the_group_only() {
        assert_eq!(normal_topic("%RETRY%GID_TopicA", "GID"), "TopicA");
        assert_eq!(normal_topic("%RETRY%GID+TopicA", "GID"), "TopicA");
        assert_eq!(normal_topic("TopicA", "GID"), "TopicA");
        // A group with the separator in its name: v2 wins, as in Java.
        assert_eq!(normal_topic("%RETRY%G_1+T", "G_1"), "T");
        assert_eq!(normal_topic("%RETRY%G_1_T", "G_1"), "T");
        // Not this group's pop retry topic: left whole (Java would cut or throw).
        assert_eq!(normal_topic("%RETRY%GID", "GID"), "%RETRY%GID");
        assert_eq!(normal_topic("%RETRY%OTHER_T", "GID"), "%RETRY%OTHER_T");
    }

    #[test]
    fn retry_flags() {
        assert_eq!(RetryFlag::of_topic("TopicA"), RetryFlag::Normal);
        assert_eq!(RetryFlag::of_topic("%RETRY%GID_TopicA"), RetryFlag::V1);
        // The classic retry topic counts as v1, as in ExtraInfoUtil.getRetry.
        assert_eq!(RetryFlag::of_topic("%RETRY%GID"), RetryFlag::V1);
        assert_eq!(RetryFlag::of_topic("%RETRY%GID+TopicA"), RetryFlag::V2);
        for f in [RetryFlag::Normal, RetryFlag::V1, RetryFlag::V2] {
            assert_eq!(RetryFlag::parse(f.as_str()), Some(f));
            assert_eq!(
                RetryFlag::of_topic(&f.real_topic("TopicA", "GID")),
                f,
                "{f}"
            );
        }
        assert_eq!(RetryFlag::parse("3"), None);
        assert_eq!(RetryFlag::parse(" 1"), None);
        assert_eq!(
            RetryFlag::V1.real_topic("TopicA", "GID"),
            "%RETRY%GID_TopicA"
        );
        assert_eq!(
            RetryFlag::V2.real_topic("TopicA", "GID"),
            "%RETRY%GID+TopicA"
        );
        assert_eq!(RetryFlag::Normal.real_topic("TopicA", "GID"), "TopicA");
    }
}
