//! The route registry (RocketMQ's `RouteInfoManager`): which brokers are alive, which
//! topics they serve, and the routes clients ask for.
//!
//! Tables:
//! - topic → brokerName → [`QueueData`];
//! - brokerName → [`BrokerData`] (cluster, id → address);
//! - cluster → brokerNames;
//! - (cluster, brokerAddr) → live info (last update, [`DataVersion`], connection id,
//!   HA address, expiry);
//! - (cluster, brokerAddr) → filter servers.
//!
//! This module is sans-io: it never reads a clock or touches a socket. Callers pass
//! `now` in ms and the id of the connection a request came on, and are told which
//! connections to close (expired brokers), so every rule here is unit-tested with
//! plain values. One lock around the whole manager (held by the processor) gives the
//! same atomicity as RocketMQ's read-write lock.
//!
//! Where 4.9.8 and 5.x differ, this follows the rule that serves both kinds of
//! brokers: 5.x's per-topic change check (a superset of 4.9's "master whose
//! DataVersion changed"), 5.x's (cluster, address) keys and per-broker expiry, 5.x's
//! removal by address on unregister. 5.x-only rules that a 4.9 broker can never
//! trigger (acting master, single-topic registration) are kept, gated as in 5.x.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use remoting::protocol::body::TopicList;
use remoting::protocol::constants::{perm, system, topic_sys_flag};
use remoting::protocol::route::{BrokerData, ClusterInfo, QueueData, TopicRouteData};
use remoting::protocol::topic::{DataVersion, TopicConfig};
use tracing::{debug, info, warn};

use crate::config::DEFAULT_BROKER_CHANNEL_EXPIRED_TIME_MS;

mod model;

pub use model::{
    BrokerAddrInfo, BrokerLiveInfo, BrokerMemberGroup, BrokerRegistration, ExpiredBroker,
    GetBrokerMemberGroupResponseBody, RegisterBrokerResult, RegisterError, RouteOptions,
    UnregisterRequest,
};

/// Topics of this prefix (5.x) are never rewritten for acting masters.
const SYNC_BROKER_MEMBER_GROUP_PREFIX: &str = "rmq_sys_SYNC_BROKER_MEMBER_";

/// The route registry. See the module docs.
#[derive(Debug, Default)]
pub struct RouteInfoManager {
    topic_queue_table: BTreeMap<String, BTreeMap<String, QueueData>>,
    broker_addr_table: BTreeMap<String, BrokerData>,
    cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
    broker_live_table: HashMap<BrokerAddrInfo, BrokerLiveInfo>,
    filter_server_table: HashMap<BrokerAddrInfo, Vec<String>>,
    options: RouteOptions,
}

impl RouteInfoManager {
    /// An empty registry.
    #[must_use]
    pub fn new(options: RouteOptions) -> Self {
        RouteInfoManager {
            options,
            ..RouteInfoManager::default()
        }
    }

    /// Replaces the run-time switches.
    pub fn set_options(&mut self, options: RouteOptions) {
        self.options = options;
    }

    // ------------------------------------------------------------ registration

    /// Registers (or refreshes) a broker at `now` (REGISTER_BROKER).
    ///
    /// Topic routes are taken from the registration only from the master (id 0) — or,
    /// for 5.x brokers, the smallest live id acting for it — and only for topics that
    /// are new to this broker name, or when the broker's DataVersion changed, or on its
    /// first registration. Re-registering the same address under another id (a slave
    /// promoted to master) first removes the old id.
    ///
    /// # Errors
    /// [`RegisterError::SingleTopicBeforeFirstRegistration`].
    pub fn register_broker(
        &mut self,
        reg: BrokerRegistration,
        now: i64,
    ) -> Result<RegisterBrokerResult, RegisterError> {
        let BrokerRegistration {
            cluster_name,
            broker_addr,
            broker_name,
            broker_id,
            ha_server_addr,
            zone_name,
            heartbeat_timeout_millis,
            enable_acting_master,
            topic_config_wrapper,
            filter_server_list,
            channel_id,
            single_topic_registration_possible,
        } = reg;
        let addr_info = BrokerAddrInfo::new(&cluster_name, &broker_addr);
        let known_id = self
            .broker_addr_table
            .get(&broker_name)
            .is_some_and(|bd| bd.broker_addrs.contains_key(&broker_id));
        // Checked before anything changes, so a refused registration leaves no trace.
        if single_topic_registration_possible
            && !known_id
            && topic_config_wrapper.topic_config_table.len() == 1
        {
            warn!(
                broker_name,
                broker_id, broker_addr, "single topic registration before first registration"
            );
            return Err(RegisterError::SingleTopicBeforeFirstRegistration {
                broker_name,
                broker_id,
            });
        }

        self.cluster_addr_table
            .entry(cluster_name.clone())
            .or_default()
            .insert(broker_name.clone());

        let mut register_first = false;
        let broker_data = self
            .broker_addr_table
            .entry(broker_name.clone())
            .or_insert_with(|| {
                register_first = true;
                BrokerData {
                    cluster: cluster_name.clone(),
                    broker_name: broker_name.clone(),
                    ..BrokerData::default()
                }
            });
        let is_old_version_broker = enable_acting_master.is_none();
        broker_data.enable_acting_master = enable_acting_master.unwrap_or(false);
        broker_data.zone_name = zone_name;

        // Slave promoted to master (or the reverse): one address has one id.
        broker_data
            .broker_addrs
            .retain(|id, addr| !(*addr == broker_addr && *id != broker_id));

        // 5.x: another address already holds this id with a newer state version
        // (controller mode): keep it and ignore this registration.
        if let Some(old_addr) = broker_data.broker_addrs.get(&broker_id) {
            if *old_addr != broker_addr {
                let old_info = BrokerAddrInfo::new(&cluster_name, old_addr);
                if let Some(old_live) = self.broker_live_table.get(&old_info) {
                    let old_state = old_live.data_version.state_version;
                    let new_state = topic_config_wrapper.data_version.state_version;
                    if old_state > new_state {
                        warn!(
                            cluster_name, broker_name, broker_id, old_addr = %old_info.broker_addr,
                            old_state, broker_addr, new_state,
                            "registration conflicts with a newer one, ignored"
                        );
                        self.broker_live_table.remove(&addr_info);
                        return Ok(RegisterBrokerResult::default());
                    }
                }
            }
        }

        let old_addr = broker_data
            .broker_addrs
            .insert(broker_id, broker_addr.clone());
        register_first = register_first || old_addr.as_deref().is_none_or(str::is_empty);
        if broker_id == system::MASTER_ID && old_addr.as_deref() != Some(broker_addr.as_str()) {
            info!(cluster_name, broker_name, old = ?old_addr, new = %broker_addr, "master address changed");
        }

        let is_master = broker_id == system::MASTER_ID;
        let min_id = broker_data
            .broker_addrs
            .keys()
            .next()
            .copied()
            .unwrap_or(broker_id);
        let is_prime_slave = !is_old_version_broker && !is_master && broker_id == min_id;
        let acting_master_enabled = broker_data.enable_acting_master;

        if is_master || is_prime_slave {
            let table = &topic_config_wrapper.topic_config_table;
            if self.options.delete_topic_with_broker_registration {
                let gone: Vec<String> = self
                    .topic_queue_table
                    .iter()
                    .filter(|(topic, qds)| {
                        qds.contains_key(&broker_name) && !table.contains_key(*topic)
                    })
                    .map(|(topic, _)| topic.clone())
                    .collect();
                for topic in gone {
                    self.remove_queue_data(&topic, &broker_name);
                }
            }
            let broker_changed = self.is_broker_topic_config_changed(
                &cluster_name,
                &broker_addr,
                &topic_config_wrapper.data_version,
            );
            for config in table.values() {
                let topic_new_here = self
                    .topic_queue_table
                    .get(&config.topic_name)
                    .is_none_or(|qds| !qds.contains_key(&broker_name));
                if register_first || broker_changed || topic_new_here {
                    let mut queue_data = queue_data_of(&broker_name, config);
                    if is_prime_slave && acting_master_enabled {
                        // The acting master is read-only.
                        queue_data.perm &= !perm::WRITE;
                    }
                    self.create_and_update_queue_data(&config.topic_name, queue_data);
                }
            }
        }

        let timeout = heartbeat_timeout_millis
            .filter(|t| *t > 0)
            .unwrap_or(DEFAULT_BROKER_CHANNEL_EXPIRED_TIME_MS);
        let previous = self.broker_live_table.insert(
            addr_info.clone(),
            BrokerLiveInfo {
                last_update_timestamp: now,
                heartbeat_timeout_millis: timeout,
                data_version: topic_config_wrapper.data_version,
                channel_id,
                ha_server_addr: ha_server_addr.clone(),
            },
        );
        if previous.is_none() {
            info!(cluster = %cluster_name, broker = %broker_addr, broker_name, broker_id, ha = %ha_server_addr, "new broker registered");
        }

        if let Some(list) = filter_server_list {
            if list.is_empty() {
                self.filter_server_table.remove(&addr_info);
            } else {
                self.filter_server_table.insert(addr_info, list);
            }
        }

        let mut result = RegisterBrokerResult::default();
        if !is_master {
            let master_addr = self
                .broker_addr_table
                .get(&broker_name)
                .and_then(|bd| bd.master_addr())
                .map(str::to_owned);
            if let Some(master_addr) = master_addr {
                if let Some(master) = self
                    .broker_live_table
                    .get(&BrokerAddrInfo::new(&cluster_name, &master_addr))
                {
                    result.ha_server_addr = Some(master.ha_server_addr.clone());
                    result.master_addr = Some(master_addr);
                }
            }
        }
        Ok(result)
    }

    fn create_and_update_queue_data(&mut self, topic: &str, queue_data: QueueData) {
        let queue_datas = self.topic_queue_table.entry(topic.to_owned()).or_default();
        match queue_datas.get(&queue_data.broker_name) {
            None if queue_datas.is_empty() => {
                info!(topic, broker_name = %queue_data.broker_name, perm = queue_data.perm, "new topic registered");
            }
            Some(old) if *old != queue_data => {
                info!(topic, old = ?old, new = ?queue_data, "topic changed");
            }
            _ => {}
        }
        queue_datas.insert(queue_data.broker_name.clone(), queue_data);
    }

    /// Removes one broker name's queues from a topic, and the topic when none are left.
    fn remove_queue_data(&mut self, topic: &str, broker_name: &str) {
        if let Some(queue_datas) = self.topic_queue_table.get_mut(topic) {
            if queue_datas.remove(broker_name).is_some() {
                info!(topic, broker_name, "removed the broker's queues of a topic");
            }
            if queue_datas.is_empty() {
                info!(topic, "topic has no queues left, removed");
                self.topic_queue_table.remove(topic);
            }
        }
    }

    /// Removes a broker process (UNREGISTER_BROKER): its live info, its address from
    /// its broker name and, when that name has no address left, the name from its
    /// cluster and its queues from every topic (topics left without queues go too).
    pub fn unregister_broker(&mut self, req: &UnregisterRequest) {
        let addr_info = BrokerAddrInfo::new(&req.cluster_name, &req.broker_addr);
        let was_live = self.broker_live_table.remove(&addr_info).is_some();
        self.filter_server_table.remove(&addr_info);
        info!(cluster = %req.cluster_name, broker = %req.broker_addr, broker_name = %req.broker_name,
              broker_id = req.broker_id, was_live, "unregister broker");

        let mut name_removed = false;
        if let Some(bd) = self.broker_addr_table.get_mut(&req.broker_name) {
            bd.broker_addrs.retain(|_, addr| *addr != req.broker_addr);
            if bd.broker_addrs.is_empty() {
                self.broker_addr_table.remove(&req.broker_name);
                name_removed = true;
            }
        }

        if name_removed {
            if let Some(names) = self.cluster_addr_table.get_mut(&req.cluster_name) {
                names.remove(&req.broker_name);
                if names.is_empty() {
                    self.cluster_addr_table.remove(&req.cluster_name);
                    info!(cluster = %req.cluster_name, "cluster has no broker left, removed");
                }
            }
            let topics: Vec<String> = self
                .topic_queue_table
                .iter()
                .filter(|(_, qds)| qds.contains_key(&req.broker_name))
                .map(|(t, _)| t.clone())
                .collect();
            for topic in topics {
                self.remove_queue_data(&topic, &req.broker_name);
            }
        } else if self.is_no_master_acting(&req.broker_name) {
            // 5.x: the master left and a slave acts for it: its queues become read-only.
            for queue_datas in self.topic_queue_table.values_mut() {
                if let Some(qd) = queue_datas.get_mut(&req.broker_name) {
                    qd.perm &= !perm::WRITE;
                }
            }
        }
    }

    /// Whether `broker_name` has acting master enabled, addresses left, and no master.
    fn is_no_master_acting(&self, broker_name: &str) -> bool {
        self.broker_addr_table.get(broker_name).is_some_and(|bd| {
            bd.enable_acting_master && bd.broker_addrs.keys().next().is_some_and(|min| *min > 0)
        })
    }

    /// Removes a broker process known only by its key (expiry, closed connection),
    /// looking its name and id up in the broker table.
    fn remove_broker(&mut self, broker: &BrokerAddrInfo) {
        let found = self
            .broker_addr_table
            .values()
            .filter(|bd| bd.cluster == broker.cluster_name)
            .find_map(|bd| {
                bd.broker_addrs
                    .iter()
                    .find(|(_, addr)| **addr == broker.broker_addr)
                    .map(|(id, _)| (bd.broker_name.clone(), *id))
            });
        match found {
            Some((broker_name, broker_id)) => self.unregister_broker(&UnregisterRequest {
                cluster_name: broker.cluster_name.clone(),
                broker_addr: broker.broker_addr.clone(),
                broker_name,
                broker_id,
            }),
            None => {
                // Not in the broker table any more: only its live entry is left.
                self.broker_live_table.remove(broker);
                self.filter_server_table.remove(broker);
            }
        }
    }

    /// Removes every broker not heard from within its expiry at `now`; returns them so
    /// the caller can close their connections.
    pub fn scan_not_active_brokers(&mut self, now: i64) -> Vec<ExpiredBroker> {
        let mut expired: Vec<ExpiredBroker> = self
            .broker_live_table
            .iter()
            .filter(|(_, live)| {
                live.last_update_timestamp
                    .saturating_add(live.heartbeat_timeout_millis)
                    < now
            })
            .map(|(broker, live)| ExpiredBroker {
                broker: broker.clone(),
                channel_id: live.channel_id,
                timeout_millis: live.heartbeat_timeout_millis,
            })
            .collect();
        expired.sort_by(|a, b| a.broker.cmp(&b.broker));
        for e in &expired {
            warn!(cluster = %e.broker.cluster_name, broker = %e.broker.broker_addr,
                  timeout_ms = e.timeout_millis, "broker channel expired");
            self.remove_broker(&e.broker);
        }
        expired
    }

    /// Removes every broker that registered on connection `channel_id`, which has
    /// closed (RocketMQ's `BrokerHousekeepingService`); returns them.
    pub fn on_channel_destroy(&mut self, channel_id: u64) -> Vec<BrokerAddrInfo> {
        let mut gone: Vec<BrokerAddrInfo> = self
            .broker_live_table
            .iter()
            .filter(|(_, live)| live.channel_id == channel_id)
            .map(|(broker, _)| broker.clone())
            .collect();
        gone.sort();
        for broker in &gone {
            info!(cluster = %broker.cluster_name, broker = %broker.broker_addr, channel_id,
                  "broker connection closed, removing it");
            self.remove_broker(broker);
        }
        gone
    }

    // ------------------------------------------------------------ data version

    /// Whether `data_version` differs from what the broker last registered (true for
    /// an unknown broker).
    #[must_use]
    pub fn is_broker_topic_config_changed(
        &self,
        cluster_name: &str,
        broker_addr: &str,
        data_version: &DataVersion,
    ) -> bool {
        self.query_broker_topic_config(cluster_name, broker_addr) != Some(data_version)
    }

    /// The DataVersion the broker last registered.
    #[must_use]
    pub fn query_broker_topic_config(
        &self,
        cluster_name: &str,
        broker_addr: &str,
    ) -> Option<&DataVersion> {
        self.broker_live_table
            .get(&BrokerAddrInfo::new(cluster_name, broker_addr))
            .map(|live| &live.data_version)
    }

    /// Records a keep-alive from the broker at `now`; false if it is not registered.
    pub fn update_broker_info_update_timestamp(
        &mut self,
        cluster_name: &str,
        broker_addr: &str,
        now: i64,
    ) -> bool {
        match self
            .broker_live_table
            .get_mut(&BrokerAddrInfo::new(cluster_name, broker_addr))
        {
            Some(live) => {
                live.last_update_timestamp = now;
                true
            }
            None => false,
        }
    }

    /// The live info of one broker process.
    #[must_use]
    pub fn broker_live_info(
        &self,
        cluster_name: &str,
        broker_addr: &str,
    ) -> Option<&BrokerLiveInfo> {
        self.broker_live_table
            .get(&BrokerAddrInfo::new(cluster_name, broker_addr))
    }

    /// Number of live broker processes.
    #[must_use]
    pub fn live_broker_count(&self) -> usize {
        self.broker_live_table.len()
    }

    /// Number of topics with a route.
    #[must_use]
    pub fn topic_count(&self) -> usize {
        self.topic_queue_table.len()
    }

    // ------------------------------------------------------------ queries

    /// The route of `topic`, or `None` unless it has queues on at least one known broker.
    #[must_use]
    pub fn pickup_topic_route_data(&self, topic: &str) -> Option<TopicRouteData> {
        let queue_datas = self.topic_queue_table.get(topic)?;
        let mut route = TopicRouteData {
            queue_datas: queue_datas.values().cloned().collect(),
            ..TopicRouteData::default()
        };
        for broker_name in queue_datas.keys() {
            let Some(bd) = self.broker_addr_table.get(broker_name) else {
                continue;
            };
            if !self.filter_server_table.is_empty() {
                for addr in bd.broker_addrs.values() {
                    if let Some(list) = self
                        .filter_server_table
                        .get(&BrokerAddrInfo::new(&bd.cluster, addr))
                    {
                        route.filter_server_table.insert(addr.clone(), list.clone());
                    }
                }
            }
            route.broker_datas.push(bd.clone());
        }
        if route.broker_datas.is_empty() {
            return None;
        }
        if self.options.support_acting_master && !topic.starts_with(SYNC_BROKER_MEMBER_GROUP_PREFIX)
        {
            apply_acting_master(&mut route);
        }
        debug!(topic, brokers = route.broker_datas.len(), "picked up route");
        Some(route)
    }

    /// Every cluster and broker name (GET_BROKER_CLUSTER_INFO).
    #[must_use]
    pub fn cluster_info(&self) -> ClusterInfo {
        ClusterInfo {
            broker_addr_table: self.broker_addr_table.clone(),
            cluster_addr_table: self.cluster_addr_table.clone(),
        }
    }

    /// Every topic with queues.
    #[must_use]
    pub fn all_topic_list(&self) -> TopicList {
        TopicList {
            topic_list: self.topic_queue_table.keys().cloned().collect(),
            broker_addr: None,
        }
    }

    /// Topics with queues on a broker of `cluster` (empty for an unknown cluster).
    #[must_use]
    pub fn topics_by_cluster(&self, cluster: &str) -> TopicList {
        let names = self.cluster_addr_table.get(cluster);
        TopicList {
            topic_list: self
                .topic_queue_table
                .iter()
                .filter(|(_, qds)| names.is_some_and(|n| qds.keys().any(|b| n.contains(b))))
                .map(|(t, _)| t.clone())
                .collect(),
            broker_addr: None,
        }
    }

    /// Cluster names and broker names (each is a system topic of the broker), plus one
    /// broker address to ask (GET_SYSTEM_TOPIC_LIST_FROM_NS).
    #[must_use]
    pub fn system_topic_list(&self) -> TopicList {
        let mut list = TopicList::default();
        for (cluster, names) in &self.cluster_addr_table {
            list.topic_list.insert(cluster.clone());
            list.topic_list.extend(names.iter().cloned());
        }
        list.broker_addr = self
            .broker_addr_table
            .values()
            .find_map(|bd| bd.broker_addrs.values().next().cloned());
        list
    }

    fn topics_by_sys_flag(&self, keep: impl Fn(i32) -> bool) -> TopicList {
        TopicList {
            topic_list: self
                .topic_queue_table
                .iter()
                .filter(|(_, qds)| {
                    qds.values()
                        .next()
                        .is_some_and(|qd| keep(qd.topic_sys_flag))
                })
                .map(|(t, _)| t.clone())
                .collect(),
            broker_addr: None,
        }
    }

    /// Unit topics (GET_UNIT_TOPIC_LIST).
    #[must_use]
    pub fn unit_topics(&self) -> TopicList {
        self.topics_by_sys_flag(|f| f & topic_sys_flag::UNIT != 0)
    }

    /// Topics with unit subscriptions (GET_HAS_UNIT_SUB_TOPIC_LIST).
    #[must_use]
    pub fn has_unit_sub_topics(&self) -> TopicList {
        self.topics_by_sys_flag(|f| f & topic_sys_flag::UNIT_SUB != 0)
    }

    /// Non-unit topics with unit subscriptions (GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST).
    #[must_use]
    pub fn has_unit_sub_non_unit_topics(&self) -> TopicList {
        self.topics_by_sys_flag(|f| {
            f & topic_sys_flag::UNIT == 0 && f & topic_sys_flag::UNIT_SUB != 0
        })
    }

    /// The ids and addresses of one broker name (GET_BROKER_MEMBER_GROUP, 5.x).
    #[must_use]
    pub fn broker_member_group(&self, cluster_name: &str, broker_name: &str) -> BrokerMemberGroup {
        BrokerMemberGroup {
            cluster: cluster_name.to_owned(),
            broker_name: broker_name.to_owned(),
            broker_addrs: self
                .broker_addr_table
                .get(broker_name)
                .map(|bd| bd.broker_addrs.clone())
                .unwrap_or_default(),
        }
    }

    // ------------------------------------------------------------ admin changes

    /// Clears WRITE on every queue data of `broker_name`; returns how many changed.
    pub fn wipe_write_perm_of_broker(&mut self, broker_name: &str) -> i32 {
        self.operate_write_perm(broker_name, |p| p & !perm::WRITE)
    }

    /// Sets READ|WRITE on every queue data of `broker_name`; returns how many changed.
    pub fn add_write_perm_of_broker(&mut self, broker_name: &str) -> i32 {
        self.operate_write_perm(broker_name, |_| perm::READ | perm::WRITE)
    }

    fn operate_write_perm(&mut self, broker_name: &str, f: impl Fn(i32) -> i32) -> i32 {
        let mut count = 0i32;
        for queue_datas in self.topic_queue_table.values_mut() {
            if let Some(qd) = queue_datas.get_mut(broker_name) {
                qd.perm = f(qd.perm);
                count = count.saturating_add(1);
            }
        }
        count
    }

    /// Deletes a topic's route, or only the queues of `cluster_name`'s brokers
    /// (DELETE_TOPIC_IN_NAMESRV).
    pub fn delete_topic(&mut self, topic: &str, cluster_name: Option<&str>) {
        match cluster_name {
            None => {
                if self.topic_queue_table.remove(topic).is_some() {
                    info!(topic, "topic deleted");
                }
            }
            Some(cluster) => {
                let names: Vec<String> = self
                    .cluster_addr_table
                    .get(cluster)
                    .map(|n| n.iter().cloned().collect())
                    .unwrap_or_default();
                for name in names {
                    self.remove_queue_data(topic, &name);
                }
            }
        }
    }

    /// Adds queue data to a topic (REGISTER_TOPIC_IN_NAMESRV, 5.x); refused as a whole
    /// when a broker name is unknown. Returns whether it was applied.
    pub fn register_topic(&mut self, topic: &str, queue_datas: Vec<QueueData>) -> bool {
        if queue_datas.is_empty() {
            return false;
        }
        if let Some(bad) = queue_datas
            .iter()
            .find(|qd| !self.broker_addr_table.contains_key(&qd.broker_name))
        {
            log_limit::limited!(
                warn!(topic, broker_name = %bad.broker_name, "register topic names an unknown broker, ignored")
            );
            return false;
        }
        let table = self.topic_queue_table.entry(topic.to_owned()).or_default();
        for qd in queue_datas {
            table.insert(qd.broker_name.clone(), qd);
        }
        info!(topic, "topic route registered");
        true
    }
}

fn queue_data_of(broker_name: &str, config: &TopicConfig) -> QueueData {
    QueueData {
        broker_name: broker_name.to_owned(),
        read_queue_nums: config.read_queue_nums,
        write_queue_nums: config.write_queue_nums,
        perm: config.perm,
        topic_sys_flag: config.topic_sys_flag,
    }
}

/// 5.x `supportActingMaster`: for a broker name without a master whose queues are
/// read-only, present its smallest live id as id 0 so clients can read from it.
fn apply_acting_master(route: &mut TopicRouteData) {
    let need = route
        .broker_datas
        .iter()
        .any(|bd| !bd.broker_addrs.is_empty() && !bd.broker_addrs.contains_key(&system::MASTER_ID));
    if !need {
        return;
    }
    for bd in &mut route.broker_datas {
        if bd.broker_addrs.is_empty()
            || bd.broker_addrs.contains_key(&system::MASTER_ID)
            || !bd.enable_acting_master
        {
            continue;
        }
        let read_only = route
            .queue_datas
            .iter()
            .find(|qd| qd.broker_name == bd.broker_name)
            .is_some_and(|qd| !perm::is_writeable(qd.perm));
        if read_only {
            if let Some((_, addr)) = bd.broker_addrs.pop_first() {
                bd.broker_addrs.insert(system::MASTER_ID, addr);
            }
        }
    }
}

#[cfg(test)]
mod tests;
