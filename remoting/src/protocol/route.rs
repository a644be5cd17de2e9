//! Route bodies: `TopicRouteData` (GET_ROUTEINFO_BY_TOPIC) and `ClusterInfo`
//! (GET_BROKER_CLUSTER_INFO).
//!
//! `brokerAddrs` is a `Map<Long, String>` in Java: fastjson writes its keys bare
//! (`{0:"10.0.0.1:10911"}`) unless the standard form is asked for (see
//! [`crate::fastjson`] and [`route_key_style`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::fastjson::{self, KeyStyle};
use crate::protocol::constants::version;

/// Queues one broker (name) serves for a topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct QueueData {
    /// Broker name.
    pub broker_name: String,
    /// Readable queues.
    pub read_queue_nums: i32,
    /// Writable queues.
    pub write_queue_nums: i32,
    /// Permission bits (see `constants::perm`).
    pub perm: i32,
    /// Topic sys flag.
    pub topic_sys_flag: i32,
}

/// The addresses of one broker name: id 0 = master, ≥ 1 = slaves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct BrokerData {
    /// Cluster name.
    pub cluster: String,
    /// Broker name.
    pub broker_name: String,
    /// brokerId → `ip:port`.
    #[serde(with = "fastjson::bare_keys")]
    pub broker_addrs: BTreeMap<i64, String>,
    /// 5.x: slave acting master (always written: rocketmq-client-rust requires it).
    pub enable_acting_master: bool,
    /// 5.x zone name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_name: Option<String>,
}

impl BrokerData {
    /// The master's address, if the master is registered.
    #[must_use]
    pub fn master_addr(&self) -> Option<&str> {
        self.broker_addrs.get(&0).map(String::as_str)
    }
}

/// GET_ROUTEINFO_BY_TOPIC response body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct TopicRouteData {
    /// `brokerA:4;brokerB:4` for ordered topics (namesrv `orderMessageEnable`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    /// Queue data per broker name.
    pub queue_datas: Vec<QueueData>,
    /// Addresses per broker name.
    pub broker_datas: Vec<BrokerData>,
    /// brokerAddr → filter server addresses.
    pub filter_server_table: BTreeMap<String, Vec<String>>,
}

/// GET_BROKER_CLUSTER_INFO response body; always written with bare keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterInfo {
    /// brokerName → addresses.
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    /// cluster → broker names.
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

/// Which form route data takes for a request: the standard (quoted-key) form iff the
/// requester's version is ≥ 401 (`V4_9_4`) or it set `acceptStandardJsonOnly`.
#[must_use]
pub fn route_key_style(request_version: i32, accept_standard_json_only: bool) -> KeyStyle {
    if request_version >= version::V4_9_4 || accept_standard_json_only {
        KeyStyle::Standard
    } else {
        KeyStyle::Fastjson
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route() -> TopicRouteData {
        TopicRouteData {
            order_topic_conf: None,
            queue_datas: vec![QueueData {
                broker_name: "broker-a".into(),
                read_queue_nums: 4,
                write_queue_nums: 4,
                perm: 6,
                topic_sys_flag: 0,
            }],
            broker_datas: vec![BrokerData {
                cluster: "DefaultCluster".into(),
                broker_name: "broker-a".into(),
                broker_addrs: [(0, "10.0.0.1:10911".into()), (1, "10.0.0.2:10911".into())].into(),
                enable_acting_master: false,
                zone_name: None,
            }],
            filter_server_table: BTreeMap::new(),
        }
    }

    #[test]
    fn standard_and_bare_forms() {
        let std =
            String::from_utf8(fastjson::to_vec(&route(), KeyStyle::Standard).unwrap()).unwrap();
        assert_eq!(
            std,
            r#"{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
        let bare =
            String::from_utf8(fastjson::to_vec(&route(), KeyStyle::Fastjson).unwrap()).unwrap();
        assert!(
            bare.contains(r#""brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}"#),
            "{bare}"
        );
        for form in [std, bare] {
            assert_eq!(
                fastjson::from_slice::<TopicRouteData>(form.as_bytes()).unwrap(),
                route()
            );
        }
    }

    #[test]
    fn version_rule() {
        assert_eq!(route_key_style(317, false), KeyStyle::Fastjson);
        assert_eq!(route_key_style(317, true), KeyStyle::Standard);
        assert_eq!(route_key_style(401, false), KeyStyle::Standard);
    }
}
