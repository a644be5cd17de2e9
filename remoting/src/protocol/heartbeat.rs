//! Client bodies: `HeartbeatData` and what it carries, `MessageQueue`, the orderly
//! lock bodies, and the consumer list.
//!
//! Clients differ in how they write these: the C++ client sends enums as their
//! ordinal and `subVersion` as a string, ali-ons sends names. Readers accept both;
//! writers use Java's form (names, numbers).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use message::tags;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::header::LanguageCode;

/// Declares a Java enum that travels by name but may arrive as its ordinal.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            const VARIANTS: &'static [($name, &'static str)] = &[$(($name::$variant, $wire),)*];

            /// Java's enum name.
            #[must_use]
            pub fn name(self) -> &'static str {
                Self::VARIANTS.iter().find(|(v, _)| *v == self).map_or("", |(_, n)| n)
            }

            /// From Java's enum name.
            #[must_use]
            pub fn from_name(name: &str) -> Option<Self> {
                Self::VARIANTS.iter().find(|(_, n)| *n == name).map(|(v, _)| *v)
            }

            /// From the ordinal (C++ client).
            #[must_use]
            pub fn from_ordinal(i: u64) -> Option<Self> {
                usize::try_from(i).ok().and_then(|i| Self::VARIANTS.get(i)).map(|(v, _)| *v)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!("a ", stringify!($name), " name or ordinal"))
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        $name::from_name(v).ok_or_else(|| E::custom(format!("unknown {} '{v}'", stringify!($name))))
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        $name::from_ordinal(v).ok_or_else(|| E::custom(format!("unknown {} {v}", stringify!($name))))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        u64::try_from(v).map_err(E::custom).and_then(|v| self.visit_u64(v))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

wire_enum! {
    /// How a consumer consumes (`ConsumeType`).
    ConsumeType {
        /// Pull / lite pull consumers.
        ConsumeActively = "CONSUME_ACTIVELY",
        /// Push consumers.
        ConsumePassively = "CONSUME_PASSIVELY",
        /// 5.x POP consumers.
        ConsumePop = "CONSUME_POP",
    }
}

wire_enum! {
    /// Clustering or broadcasting (`MessageModel`).
    MessageModel {
        /// Every consumer of the group gets every message.
        Broadcasting = "BROADCASTING",
        /// Queues are shared among the group.
        Clustering = "CLUSTERING",
    }
}

wire_enum! {
    /// Where a new consumer group starts (`ConsumeFromWhere`).
    ConsumeFromWhere {
        /// From the end.
        ConsumeFromLastOffset = "CONSUME_FROM_LAST_OFFSET",
        /// Deprecated.
        ConsumeFromLastOffsetAndFromMinWhenBootFirst = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
        /// Deprecated.
        ConsumeFromMinOffset = "CONSUME_FROM_MIN_OFFSET",
        /// Deprecated.
        ConsumeFromMaxOffset = "CONSUME_FROM_MAX_OFFSET",
        /// From the beginning.
        ConsumeFromFirstOffset = "CONSUME_FROM_FIRST_OFFSET",
        /// From a timestamp.
        ConsumeFromTimestamp = "CONSUME_FROM_TIMESTAMP",
    }
}

/// Accepts a number or a numeric string (the C++ client writes `subVersion` as a string).
pub(crate) mod lenient_i64 {
    use super::{Deserializer, Visitor, de, fmt};

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = i64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or a numeric string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
                Ok(v)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
                i64::try_from(v).map_err(E::custom)
            }
            #[allow(
                clippy::cast_possible_truncation,
                reason = "fractional versions are truncated as Java would"
            )]
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
                Ok(v as i64)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
                v.trim().parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for LanguageCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for LanguageCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = LanguageCode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a language name or code")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LanguageCode, E> {
                Ok(LanguageCode::from_name(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LanguageCode, E> {
                Ok(u8::try_from(v).map_or(LanguageCode::Other, LanguageCode::from_code))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LanguageCode, E> {
                Ok(u8::try_from(v).map_or(LanguageCode::Other, LanguageCode::from_code))
            }
        }
        d.deserialize_any(V)
    }
}

/// `TAG` subscriptions filter by tag hash; `SQL92` by properties.
pub const EXPRESSION_TYPE_TAG: &str = "TAG";
/// SQL92 property filter.
pub const EXPRESSION_TYPE_SQL92: &str = "SQL92";
/// Subscription of every tag.
pub const SUB_ALL: &str = "*";

fn tag_expression() -> String {
    EXPRESSION_TYPE_TAG.to_owned()
}

/// One topic a consumer group subscribes to, with its filter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionData {
    /// Filter classes (legacy).
    #[serde(default)]
    pub class_filter_mode: bool,
    /// Topic.
    pub topic: String,
    /// `*`, `TagA || TagB`, or a SQL92 expression.
    #[serde(default)]
    pub sub_string: String,
    /// Tags.
    #[serde(default)]
    pub tags_set: BTreeSet<String>,
    /// Java `String.hashCode()` of each tag ([`message::tags::hash_code`]).
    #[serde(default)]
    pub code_set: BTreeSet<i32>,
    /// Version (a timestamp); newer subscriptions replace older ones.
    #[serde(default, deserialize_with = "lenient_i64::deserialize")]
    pub sub_version: i64,
    /// `TAG` or `SQL92`.
    #[serde(default = "tag_expression")]
    pub expression_type: String,
    /// Legacy filter class source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_class_source: Option<String>,
}

impl SubscriptionData {
    /// Builds a TAG subscription from its expression the way Java's
    /// `FilterAPI.buildSubscriptionData` does: `*` (or blank) subscribes everything,
    /// otherwise `||`-separated tags.
    #[must_use]
    pub fn build_tag(topic: &str, sub_string: &str, sub_version: i64) -> Self {
        let mut data = SubscriptionData {
            class_filter_mode: false,
            topic: topic.to_owned(),
            sub_string: sub_string.trim().to_owned(),
            tags_set: BTreeSet::new(),
            code_set: BTreeSet::new(),
            sub_version,
            expression_type: tag_expression(),
            filter_class_source: None,
        };
        if data.sub_string.is_empty() || data.sub_string == SUB_ALL {
            SUB_ALL.clone_into(&mut data.sub_string);
            return data;
        }
        for tag in data
            .sub_string
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            data.tags_set.insert(tag.to_owned());
            data.code_set.insert(tags::hash_code(tag));
        }
        data
    }

    /// Whether this subscription takes every tag.
    #[must_use]
    pub fn is_sub_all(&self) -> bool {
        self.sub_string == SUB_ALL || self.sub_string.trim().is_empty()
    }
}

/// A producer group of a client.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerData {
    /// Group name.
    pub group_name: String,
}

/// A consumer group of a client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerData {
    /// Group name.
    pub group_name: String,
    /// Push or pull.
    pub consume_type: ConsumeType,
    /// Clustering or broadcasting.
    pub message_model: MessageModel,
    /// Start position of a new group.
    pub consume_from_where: ConsumeFromWhere,
    /// Subscriptions.
    #[serde(default)]
    pub subscription_data_set: Vec<SubscriptionData>,
    /// Unit mode.
    #[serde(default)]
    pub unit_mode: bool,
}

/// HEART_BEAT (34) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatData {
    /// `ip@pid` (+ instance name / unit).
    #[serde(rename = "clientID")]
    pub client_id: String,
    /// Producer groups.
    #[serde(default)]
    pub producer_data_set: Vec<ProducerData>,
    /// Consumer groups.
    #[serde(default)]
    pub consumer_data_set: Vec<ConsumerData>,
    /// 5.x heartbeat v2 fingerprint.
    #[serde(default)]
    pub heartbeat_fingerprint: i32,
    /// 5.x heartbeat v2: subscriptions omitted.
    #[serde(default)]
    pub without_sub: bool,
}

/// A queue of a topic on one broker. Orders as Java's `MessageQueue.compareTo`:
/// topic, then broker name, then queue id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueue {
    /// Topic.
    pub topic: String,
    /// Broker name.
    pub broker_name: String,
    /// Queue id.
    pub queue_id: i32,
}

impl PartialOrd for MessageQueue {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for MessageQueue {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.topic, &self.broker_name, self.queue_id).cmp(&(
            &other.topic,
            &other.broker_name,
            other.queue_id,
        ))
    }
}

/// LOCK_BATCH_MQ (41) / UNLOCK_BATCH_MQ (42) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct LockBatchRequestBody {
    /// Group.
    pub consumer_group: String,
    /// Client id.
    pub client_id: String,
    /// Don't forward to other brokers (5.x).
    pub only_this_broker: bool,
    /// Queues.
    pub mq_set: BTreeSet<MessageQueue>,
}

/// LOCK_BATCH_MQ response body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct LockBatchResponseBody {
    /// Queues now locked by the requester.
    #[serde(rename = "lockOKMQSet")]
    pub lock_ok_mq_set: BTreeSet<MessageQueue>,
}

/// GET_CONSUMER_LIST_BY_GROUP response body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct GetConsumerListByGroupResponseBody {
    /// Client ids of the group.
    pub consumer_id_list: Vec<String>,
}

/// CHECK_CLIENT_CONFIG (46) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct CheckClientRequestBody {
    /// Client id.
    pub client_id: String,
    /// Group.
    pub group: String,
    /// The subscription to check.
    pub subscription_data: Option<SubscriptionData>,
    /// 5.x namespace.
    pub namespace: Option<String>,
}

/// `brokerName` → queue id → offset, as in `ResetOffsetBody` and consumer status.
pub type OffsetsByQueue = BTreeMap<MessageQueue, i64>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fastjson;

    #[test]
    fn parses_cpp_and_java_heartbeats() {
        let cpp = br#"{"clientID":"30664-127.0.0.1@DEFAULT","consumerDataSet":[{"consumeFromWhere":0,"consumeType":1,"groupName":"g_stub","messageModel":1,"subscriptionDataSet":[{"subString":"*","subVersion":"1795955673742","topic":"%RETRY%g_stub"},{"subString":"*","subVersion":"1795955673742","topic":"PeerTopic"}]}]}
"#;
        let hb: HeartbeatData = fastjson::from_slice(cpp).unwrap();
        let c = &hb.consumer_data_set[0];
        assert_eq!(c.consume_type, ConsumeType::ConsumePassively);
        assert_eq!(c.message_model, MessageModel::Clustering);
        assert_eq!(
            c.consume_from_where,
            ConsumeFromWhere::ConsumeFromLastOffset
        );
        assert_eq!(c.subscription_data_set[1].sub_version, 1_795_955_673_742);
        assert_eq!(c.subscription_data_set[1].expression_type, "TAG");

        let java = br#"{"clientID":"10.0.0.9@12345","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"cg1","messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA","subVersion":1700000000000,"tagsSet":["TagA"],"topic":"T1"}],"unitMode":false}],"producerDataSet":[{"groupName":"pg1"},{"groupName":"CLIENT_INNER_PRODUCER"}]}"#;
        let hb: HeartbeatData = fastjson::from_slice(java).unwrap();
        assert_eq!(hb.producer_data_set.len(), 2);
        let sub = &hb.consumer_data_set[0].subscription_data_set[0];
        assert_eq!(
            *sub,
            SubscriptionData::build_tag("T1", "TagA", 1_700_000_000_000)
        );
        let again: HeartbeatData =
            fastjson::from_slice(&fastjson::to_vec(&hb, fastjson::KeyStyle::Fastjson).unwrap())
                .unwrap();
        assert_eq!(again, hb);
    }

    #[test]
    fn tag_expressions() {
        let s = SubscriptionData::build_tag("T", " A || B ||", 1);
        assert_eq!(s.tags_set.len(), 2);
        assert!(s.code_set.contains(&tags::hash_code("B")));
        assert!(SubscriptionData::build_tag("T", "", 1).is_sub_all());
    }
}
