//! Admin calls to brokers and name servers (what `DefaultMQAdminExt` does), plus the
//! cluster lookups mqadmin commands share (`CommandUtil`: masters of a cluster, masters
//! and slaves, broker name of an address).

use std::collections::{BTreeMap, BTreeSet};

use remoting::fastjson::{self, KeyStyle};
use remoting::protocol::admin::{
    ConsumeStats, ConsumerConnection, GroupList, ResetOffsetBody, TopicStatsTable,
};
use remoting::protocol::body::{KvTable, properties_to_text, text_to_properties};
use remoting::protocol::broker::{
    CreateTopicRequestHeader, DeleteTopicRequestHeader, GetConsumeStatsRequestHeader,
    GetConsumerConnectionListRequestHeader, GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader, ResetOffsetRequestHeader,
};
use remoting::protocol::constants::system::MASTER_ID;
use remoting::protocol::namesrv::{DeleteTopicFromNamesrvRequestHeader, PutKvConfigRequestHeader};
use remoting::protocol::route::{BrokerData, ClusterInfo, TopicRouteData};
use remoting::protocol::subscription::SubscriptionGroupConfig;
use remoting::protocol::topic::TopicConfig;
use remoting::{RemotingCommand, RequestCode};

use crate::client::{Client, parse_body};
use crate::error::{Result, ToolsError};

/// The masters of `cluster`, by broker name.
///
/// # Errors
/// [`ToolsError::NoCluster`] when the name server does not know the cluster.
pub fn master_addrs(info: &ClusterInfo, cluster: &str) -> Result<BTreeMap<String, String>> {
    let names = cluster_broker_names(info, cluster)?;
    Ok(names
        .iter()
        .filter_map(|name| {
            let data = info.broker_addr_table.get(name)?;
            Some((name.clone(), data.master_addr()?.to_owned()))
        })
        .collect())
}

/// Every address (masters and slaves) of `cluster`.
///
/// # Errors
/// [`ToolsError::NoCluster`].
pub fn all_addrs(info: &ClusterInfo, cluster: &str) -> Result<Vec<String>> {
    let names = cluster_broker_names(info, cluster)?;
    Ok(names
        .iter()
        .filter_map(|name| info.broker_addr_table.get(name))
        .flat_map(|data| data.broker_addrs.values().cloned())
        .collect())
}

/// Broker names of `cluster`.
///
/// # Errors
/// [`ToolsError::NoCluster`].
pub fn cluster_broker_names<'a>(
    info: &'a ClusterInfo,
    cluster: &str,
) -> Result<&'a BTreeSet<String>> {
    info.cluster_addr_table
        .get(cluster)
        .ok_or_else(|| ToolsError::NoCluster {
            cluster: cluster.to_owned(),
        })
}

/// The broker name an address belongs to.
#[must_use]
pub fn broker_name_of(info: &ClusterInfo, addr: &str) -> Option<String> {
    info.broker_addr_table
        .values()
        .find(|d| d.broker_addrs.values().any(|a| a == addr))
        .map(|d| d.broker_name.clone())
}

/// The address to ask for a broker name's data: its master, else its lowest id
/// (`BrokerData.selectBrokerAddr` picks a random slave; lowest is reproducible).
#[must_use]
pub fn select_addr(data: &BrokerData) -> Option<&str> {
    data.master_addr()
        .or_else(|| data.broker_addrs.values().next().map(String::as_str))
}

/// The address to ask for `broker_name` in a topic's route ([`select_addr`]).
#[must_use]
pub fn route_addr<'a>(route: &'a TopicRouteData, broker_name: &str) -> Option<&'a str> {
    route
        .broker_datas
        .iter()
        .find(|b| b.broker_name == broker_name)
        .and_then(select_addr)
}

/// The cluster a broker name belongs to.
#[must_use]
pub fn cluster_of(info: &ClusterInfo, broker_name: &str) -> Option<String> {
    info.cluster_addr_table
        .iter()
        .find(|(_, names)| names.contains(broker_name))
        .map(|(c, _)| c.clone())
}

impl Client {
    /// UPDATE_AND_CREATE_TOPIC.
    ///
    /// # Errors
    /// Transport failure or an error code.
    pub async fn create_topic(&self, addr: &str, config: &TopicConfig) -> Result<()> {
        let header = CreateTopicRequestHeader {
            topic: config.topic_name.clone(),
            default_topic: remoting::protocol::constants::system::AUTO_CREATE_TOPIC_KEY.to_owned(),
            read_queue_nums: config.read_queue_nums,
            write_queue_nums: config.write_queue_nums,
            perm: config.perm,
            topic_filter_type: config.topic_filter_type.name().to_owned(),
            topic_sys_flag: Some(config.topic_sys_flag),
            order: config.order,
            attributes: None,
            force: None,
        };
        self.call(
            addr,
            RemotingCommand::request_with(RequestCode::UpdateAndCreateTopic, &header),
        )
        .await
        .map(drop)
    }

    /// DELETE_TOPIC_IN_BROKER.
    ///
    /// # Errors
    /// Transport failure or an error code.
    pub async fn delete_topic_in_broker(&self, addr: &str, topic: &str) -> Result<()> {
        let header = DeleteTopicRequestHeader {
            topic: topic.to_owned(),
        };
        self.call(
            addr,
            RemotingCommand::request_with(RequestCode::DeleteTopicInBroker, &header),
        )
        .await
        .map(drop)
    }

    /// DELETE_TOPIC_IN_NAMESRV to every name server; the failures are returned.
    pub async fn delete_topic_in_namesrv(
        &self,
        topic: &str,
        cluster: Option<&str>,
    ) -> Vec<ToolsError> {
        let header = DeleteTopicFromNamesrvRequestHeader {
            topic: topic.to_owned(),
            cluster_name: cluster.map(str::to_owned),
        };
        let request = RemotingCommand::request_with(RequestCode::DeleteTopicInNamesrv, &header);
        self.call_every_namesrv(&request).await
    }

    /// PUT_KV_CONFIG to every name server (order topic config); failures returned.
    pub async fn put_kv_config(&self, namespace: &str, key: &str, value: &str) -> Vec<ToolsError> {
        let header = PutKvConfigRequestHeader {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
            value: value.to_owned(),
        };
        let request = RemotingCommand::request_with(RequestCode::PutKvConfig, &header);
        self.call_every_namesrv(&request).await
    }

    /// GET_BROKER_RUNTIME_INFO.
    ///
    /// # Errors
    /// Transport failure, an error code, or an unparsable body.
    pub async fn broker_runtime_info(&self, addr: &str) -> Result<KvTable> {
        let response = self
            .call(
                addr,
                RemotingCommand::request(RequestCode::GetBrokerRuntimeInfo),
            )
            .await?;
        parse_body(&response, addr)
    }

    /// SWITCH_TIMER_ENGINE to `engine_type` (`F` or `R`).
    ///
    /// # Errors
    /// Transport failure or an error code (the broker's remark says why).
    pub async fn switch_timer_engine(&self, addr: &str, engine_type: &str) -> Result<()> {
        let header = remoting::protocol::timer::SwitchTimerEngineRequestHeader {
            engine_type: Some(engine_type.to_owned()),
        };
        self.call(
            addr,
            RemotingCommand::request_with(RequestCode::SwitchTimerEngine, &header),
        )
        .await?;
        Ok(())
    }

    /// GET_BROKER_CONFIG, as a sorted map.
    ///
    /// # Errors
    /// Transport failure or an error code.
    pub async fn broker_config(&self, addr: &str) -> Result<BTreeMap<String, String>> {
        let response = self
            .call(addr, RemotingCommand::request(RequestCode::GetBrokerConfig))
            .await?;
        let body = response.body.to_bytes();
        Ok(text_to_properties(&String::from_utf8_lossy(&body)))
    }

    /// UPDATE_BROKER_CONFIG with `props` as properties text.
    ///
    /// # Errors
    /// Transport failure or an error code (NO_PERMISSION for black-listed keys).
    pub async fn update_broker_config(
        &self,
        addr: &str,
        props: &BTreeMap<String, String>,
    ) -> Result<()> {
        let request = RemotingCommand::request(RequestCode::UpdateBrokerConfig)
            .with_body(properties_to_text(props));
        self.call(addr, request).await.map(drop)
    }

    /// GET_TOPIC_STATS_INFO.
    ///
    /// # Errors
    /// Transport failure, an error code, or an unparsable body.
    pub async fn topic_stats(&self, addr: &str, topic: &str) -> Result<TopicStatsTable> {
        let header = GetTopicStatsInfoRequestHeader {
            topic: topic.to_owned(),
        };
        let response = self
            .call(
                addr,
                RemotingCommand::request_with(RequestCode::GetTopicStatsInfo, &header),
            )
            .await?;
        parse_body(&response, addr)
    }

    /// GET_CONSUME_STATS (all topics of the group when `topic` is `None`).
    ///
    /// # Errors
    /// Transport failure, an error code, or an unparsable body.
    pub async fn consume_stats(
        &self,
        addr: &str,
        group: &str,
        topic: Option<&str>,
    ) -> Result<ConsumeStats> {
        let header = GetConsumeStatsRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.map(str::to_owned),
            topic_list: None,
        };
        let response = self
            .call(
                addr,
                RemotingCommand::request_with(RequestCode::GetConsumeStats, &header),
            )
            .await?;
        parse_body(&response, addr)
    }

    /// GET_CONSUMER_CONNECTION_LIST.
    ///
    /// # Errors
    /// Transport failure, an error code (CONSUMER_NOT_ONLINE), or an unparsable body.
    pub async fn consumer_connection(&self, addr: &str, group: &str) -> Result<ConsumerConnection> {
        let header = GetConsumerConnectionListRequestHeader {
            consumer_group: group.to_owned(),
        };
        let response = self
            .call(
                addr,
                RemotingCommand::request_with(RequestCode::GetConsumerConnectionList, &header),
            )
            .await?;
        parse_body(&response, addr)
    }

    /// GET_ALL_SUBSCRIPTIONGROUP_CONFIG: the broker's subscription groups.
    ///
    /// # Errors
    /// Transport failure, an error code, or an unparsable body.
    pub async fn subscription_groups(
        &self,
        addr: &str,
    ) -> Result<remoting::protocol::subscription::SubscriptionGroupWrapper> {
        let response = self
            .call(
                addr,
                RemotingCommand::request(RequestCode::GetAllSubscriptiongroupConfig),
            )
            .await?;
        parse_body(&response, addr)
    }

    /// QUERY_TOPIC_CONSUME_BY_WHO.
    ///
    /// # Errors
    /// Transport failure, an error code, or an unparsable body.
    pub async fn topic_consumed_by(&self, addr: &str, topic: &str) -> Result<GroupList> {
        let header = QueryTopicConsumeByWhoRequestHeader {
            topic: topic.to_owned(),
        };
        let response = self
            .call(
                addr,
                RemotingCommand::request_with(RequestCode::QueryTopicConsumeByWho, &header),
            )
            .await?;
        parse_body(&response, addr)
    }

    /// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP.
    ///
    /// # Errors
    /// Transport failure or an error code.
    pub async fn create_subscription_group(
        &self,
        addr: &str,
        config: &SubscriptionGroupConfig,
    ) -> Result<()> {
        let body = fastjson::to_vec(config, KeyStyle::Fastjson).map_err(ToolsError::Encode)?;
        let request =
            RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptiongroup).with_body(body);
        self.call(addr, request).await.map(drop)
    }

    /// INVOKE_BROKER_TO_RESET_OFFSET: a RocketMQ 5 broker (and sluice) resets the group
    /// itself, online or not; a 4.9 broker resets its online consumers. `queue` limits it
    /// to one queue and an exact offset (5.x brokers). Answers the new offsets.
    ///
    /// # Errors
    /// Transport failure or an error code (CONSUMER_NOT_ONLINE from a 4.9 broker when the
    /// group is offline).
    pub async fn invoke_broker_to_reset_offset(
        &self,
        addr: &str,
        topic: &str,
        group: &str,
        timestamp: i64,
        force: bool,
        queue: Option<(i32, i64)>,
    ) -> Result<ResetOffsetBody> {
        let header = ResetOffsetRequestHeader {
            group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id: queue.map(|(q, _)| q),
            offset: queue.map(|(_, o)| o),
            timestamp,
            is_force: force,
        };
        let response = self
            .call(
                addr,
                RemotingCommand::request_with(RequestCode::InvokeBrokerToResetOffset, &header),
            )
            .await?;
        if response.body.is_empty() {
            return Ok(ResetOffsetBody::default());
        }
        parse_body(&response, addr)
    }

    /// The master address of a broker name, from the cluster info.
    ///
    /// # Errors
    /// Name server failures, or [`ToolsError::NoBroker`].
    pub async fn master_of(&self, broker_name: &str) -> Result<String> {
        let info = self.cluster_info().await?;
        info.broker_addr_table
            .get(broker_name)
            .and_then(|d| d.broker_addrs.get(&MASTER_ID))
            .cloned()
            .ok_or_else(|| ToolsError::NoBroker {
                broker_name: broker_name.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> ClusterInfo {
        let text = r#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"C1"},"broker-b":{"brokerAddrs":{1:"10.0.0.4:10911"},"brokerName":"broker-b","cluster":"C1"}},"clusterAddrTable":{"C1":["broker-a","broker-b"]}}"#;
        fastjson::from_slice(text.as_bytes()).unwrap()
    }

    #[test]
    fn cluster_lookups() {
        let info = info();
        let masters = master_addrs(&info, "C1").unwrap();
        assert_eq!(
            masters.into_iter().collect::<Vec<_>>(),
            [("broker-a".to_owned(), "10.0.0.1:10911".to_owned())]
        );
        assert_eq!(all_addrs(&info, "C1").unwrap().len(), 3);
        assert!(matches!(
            master_addrs(&info, "nope"),
            Err(ToolsError::NoCluster { .. })
        ));
        assert_eq!(
            broker_name_of(&info, "10.0.0.2:10911").as_deref(),
            Some("broker-a")
        );
        assert_eq!(cluster_of(&info, "broker-b").as_deref(), Some("C1"));
        let b = &info.broker_addr_table["broker-b"];
        assert_eq!(select_addr(b), Some("10.0.0.4:10911"));
    }
}
