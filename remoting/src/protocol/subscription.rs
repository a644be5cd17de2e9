//! Broker config tables shared with slaves and tools: subscription groups
//! (subscriptionGroup.json), consumer offsets (consumerOffset.json) and delay
//! offsets (delayOffset.json), in RocketMQ's JSON forms (bare integer keys).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::fastjson;
use crate::protocol::topic::DataVersion;

fn yes() -> bool {
    true
}
fn one_i32() -> i32 {
    1
}
fn sixteen() -> i32 {
    16
}
fn one_i64() -> i64 {
    1
}
fn fifteen() -> i32 {
    15
}

/// A consumer group's settings (`SubscriptionGroupConfig`).
#[allow(
    clippy::struct_excessive_bools,
    reason = "mirrors RocketMQ's config fields one to one"
)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionGroupConfig {
    /// Group name.
    pub group_name: String,
    /// Whether the group may consume.
    #[serde(default = "yes")]
    pub consume_enable: bool,
    /// Whether a new group may start from the min offset.
    #[serde(default = "yes")]
    pub consume_from_min_enable: bool,
    /// Whether broadcasting is allowed.
    #[serde(default = "yes")]
    pub consume_broadcast_enable: bool,
    /// 5.x: orderly consumption.
    #[serde(default)]
    pub consume_message_orderly: bool,
    /// Queues of `%RETRY%group`.
    #[serde(default = "one_i32")]
    pub retry_queue_nums: i32,
    /// Retries before the DLQ.
    #[serde(default = "sixteen")]
    pub retry_max_times: i32,
    /// 5.x retry policy (kept as given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_retry_policy: Option<serde_json::Value>,
    /// Broker id to consume from normally.
    #[serde(default)]
    pub broker_id: i64,
    /// Broker id to consume from when lagging.
    #[serde(default = "one_i64")]
    pub which_broker_when_consume_slowly: i64,
    /// Notify clients when the group changes.
    #[serde(default = "yes")]
    pub notify_consumer_ids_changed_enable: bool,
    /// 5.x group sys flag.
    #[serde(default)]
    pub group_sys_flag: i32,
    /// 5.x consume timeout.
    #[serde(default = "fifteen")]
    pub consume_timeout_minute: i32,
    /// 5.x subscriptions (kept as given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_data_set: Option<serde_json::Value>,
    /// 5.x attributes.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

impl SubscriptionGroupConfig {
    /// RocketMQ's defaults for `group_name`.
    #[must_use]
    pub fn new(group_name: impl Into<String>) -> Self {
        SubscriptionGroupConfig {
            group_name: group_name.into(),
            consume_enable: true,
            consume_from_min_enable: true,
            consume_broadcast_enable: true,
            consume_message_orderly: false,
            retry_queue_nums: 1,
            retry_max_times: 16,
            group_retry_policy: None,
            broker_id: 0,
            which_broker_when_consume_slowly: 1,
            notify_consumer_ids_changed_enable: true,
            group_sys_flag: 0,
            consume_timeout_minute: 15,
            subscription_data_set: None,
            attributes: BTreeMap::new(),
        }
    }
}

/// subscriptionGroup.json / GET_ALL_SUBSCRIPTIONGROUP_CONFIG body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct SubscriptionGroupWrapper {
    /// group → config.
    pub subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
    /// 5.x forbidden table (kept as given).
    pub forbidden_table: BTreeMap<String, BTreeMap<String, i32>>,
    /// Version of the table.
    pub data_version: DataVersion,
}

/// consumerOffset.json / GET_ALL_CONSUMER_OFFSET body: `topic@group` → queueId → offset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct ConsumerOffsetSerializeWrapper {
    /// `topic@group` → offsets by queue id (bare keys).
    #[serde(with = "offset_table")]
    pub offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
    /// 5.x version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_version: Option<DataVersion>,
}

/// delayOffset.json / GET_ALL_DELAY_OFFSET body: delay level → next offset to deliver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct DelayOffsetSerializeWrapper {
    /// Level (bare key) → offset.
    #[serde(with = "fastjson::bare_keys")]
    pub offset_table: BTreeMap<i32, i64>,
    /// 5.x version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_version: Option<DataVersion>,
}

/// A map of maps whose inner keys are bare integers.
mod offset_table {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::fastjson;

    #[derive(Serialize, Deserialize)]
    #[serde(transparent)]
    struct Inner(#[serde(with = "fastjson::bare_keys")] BTreeMap<i32, i64>);

    pub(super) fn serialize<S: Serializer>(
        map: &BTreeMap<String, BTreeMap<i32, i64>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let wrapped: BTreeMap<&String, Inner> =
            map.iter().map(|(k, v)| (k, Inner(v.clone()))).collect();
        wrapped.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, BTreeMap<i32, i64>>, D::Error> {
        let wrapped = BTreeMap::<String, Inner>::deserialize(d)?;
        Ok(wrapped.into_iter().map(|(k, v)| (k, v.0)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fastjson::KeyStyle;

    #[test]
    fn offsets_use_bare_keys() {
        let mut w = ConsumerOffsetSerializeWrapper::default();
        w.offset_table
            .insert("T1@cg1".into(), [(0, 118), (1, 42)].into());
        let text = String::from_utf8(fastjson::to_vec(&w, KeyStyle::Fastjson).unwrap()).unwrap();
        assert_eq!(text, r#"{"offsetTable":{"T1@cg1":{0:118,1:42}}}"#);
        assert_eq!(
            fastjson::from_slice::<ConsumerOffsetSerializeWrapper>(text.as_bytes()).unwrap(),
            w
        );

        let d: DelayOffsetSerializeWrapper =
            fastjson::from_slice(br#"{"offsetTable":{1:35,3:2}}"#).unwrap();
        assert_eq!(d.offset_table[&3], 2);
    }

    #[test]
    fn group_defaults_match_java() {
        let g: SubscriptionGroupConfig = fastjson::from_slice(br#"{"groupName":"g"}"#).unwrap();
        assert_eq!(g, SubscriptionGroupConfig::new("g"));
        let text = String::from_utf8(fastjson::to_vec(&g, KeyStyle::Fastjson).unwrap()).unwrap();
        assert!(text.contains(r#""retryMaxTimes":16"#), "{text}");
    }
}
