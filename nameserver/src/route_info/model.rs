//! The plain data of the route registry: keys, live info, requests and results,
//! and the GET_BROKER_MEMBER_GROUP bodies (5.x) that the remoting crate lacks.

use std::collections::BTreeMap;

use remoting::fastjson;
use remoting::protocol::topic::{DataVersion, TopicConfigSerializeWrapper};
use serde::{Deserialize, Serialize};

/// Identity of one broker process: its cluster and `ip:port`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BrokerAddrInfo {
    /// Cluster name.
    pub cluster_name: String,
    /// `ip:port` of the broker's main port.
    pub broker_addr: String,
}

impl BrokerAddrInfo {
    /// A key for `cluster`/`addr`.
    #[must_use]
    pub fn new(cluster_name: &str, broker_addr: &str) -> Self {
        BrokerAddrInfo {
            cluster_name: cluster_name.to_owned(),
            broker_addr: broker_addr.to_owned(),
        }
    }
}

/// What the name server knows about a live broker process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerLiveInfo {
    /// Last registration or keep-alive, ms since the epoch.
    pub last_update_timestamp: i64,
    /// Removed when not heard from for this long.
    pub heartbeat_timeout_millis: i64,
    /// Version of the topic table it last registered.
    pub data_version: DataVersion,
    /// The connection it registered on.
    pub channel_id: u64,
    /// Its HA address (`brokerIP2:haListenPort`).
    pub ha_server_addr: String,
}

/// Switches of [`RouteInfoManager`](super::RouteInfoManager) that come from the name server config and may
/// change at run time (UPDATE_NAMESRV_CONFIG).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouteOptions {
    /// `supportActingMaster` (5.x).
    pub support_acting_master: bool,
    /// `deleteTopicWithBrokerRegistration` (5.x).
    pub delete_topic_with_broker_registration: bool,
}

/// One REGISTER_BROKER request, decoded.
#[derive(Debug, Clone, Default)]
pub struct BrokerRegistration {
    /// Cluster name.
    pub cluster_name: String,
    /// `ip:port` of the main port.
    pub broker_addr: String,
    /// Broker name (shared by a master and its slaves).
    pub broker_name: String,
    /// 0 = master, ≥ 1 = slave.
    pub broker_id: i64,
    /// `brokerIP2:haListenPort`.
    pub ha_server_addr: String,
    /// 5.x `zoneName` ext field.
    pub zone_name: Option<String>,
    /// 5.x per-broker expiry; `None` (4.9 brokers) = 120 s.
    pub heartbeat_timeout_millis: Option<i64>,
    /// 5.x `enableActingMaster`; `None` marks a broker older than 5.x.
    pub enable_acting_master: Option<bool>,
    /// The broker's topics and their version.
    pub topic_config_wrapper: TopicConfigSerializeWrapper,
    /// Filter servers (`None`: leave as is).
    pub filter_server_list: Option<Vec<String>>,
    /// The connection the request came on.
    pub channel_id: u64,
    /// The broker may send single-topic registrations (5.x `enableSingleTopicRegister`):
    /// such a registration before the broker's first full one is refused.
    pub single_topic_registration_possible: bool,
}

/// What a registering broker is told: for a slave, where its live master is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterBrokerResult {
    /// The master's HA address.
    pub ha_server_addr: Option<String>,
    /// The master's address.
    pub master_addr: Option<String>,
}

/// A registration the registry refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// A single-topic registration from a broker id not registered yet (5.x rule:
    /// the broker must register its full table first).
    #[error(
        "single topic registration before the first registration of {broker_name}[{broker_id}]"
    )]
    SingleTopicBeforeFirstRegistration {
        /// Broker name.
        broker_name: String,
        /// Broker id.
        broker_id: i64,
    },
}

/// One UNREGISTER_BROKER request (or an expiry / closed connection turned into one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnregisterRequest {
    /// Cluster name.
    pub cluster_name: String,
    /// `ip:port`.
    pub broker_addr: String,
    /// Broker name.
    pub broker_name: String,
    /// Broker id.
    pub broker_id: i64,
}

/// A broker removed by the expiry scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiredBroker {
    /// Who.
    pub broker: BrokerAddrInfo,
    /// Its connection, which the caller should close (as RocketMQ does).
    pub channel_id: u64,
    /// The expiry it had.
    pub timeout_millis: i64,
}

/// GET_BROKER_MEMBER_GROUP (5.x) body part: the ids and addresses of one broker name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct BrokerMemberGroup {
    /// Cluster name.
    pub cluster: String,
    /// Broker name.
    pub broker_name: String,
    /// brokerId → `ip:port`.
    #[serde(with = "fastjson::bare_keys")]
    pub broker_addrs: BTreeMap<i64, String>,
}

/// GET_BROKER_MEMBER_GROUP response body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct GetBrokerMemberGroupResponseBody {
    /// The group.
    pub broker_member_group: BrokerMemberGroup,
}
