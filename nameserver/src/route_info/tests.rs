use std::collections::BTreeMap;

use proptest::prelude::*;
use remoting::fastjson;
use remoting::protocol::constants::perm;
use remoting::protocol::topic::{DataVersion, TopicConfig, TopicConfigSerializeWrapper};

use super::*;

const T0: i64 = 1_700_000_000_000;
const MASTER: &str = "127.0.0.1:10911";
const SLAVE: &str = "127.0.0.1:10921";
const MASTER_HA: &str = "127.0.0.1:10912";
const SLAVE_HA: &str = "127.0.0.1:10922";

fn dv(counter: i64) -> DataVersion {
    DataVersion {
        timestamp: T0,
        counter,
        state_version: 0,
    }
}

fn wrapper(counter: i64, topics: &[(&str, i32, i32)]) -> TopicConfigSerializeWrapper {
    let mut table = BTreeMap::new();
    for (name, queues, perm) in topics {
        let mut c = TopicConfig::new(*name, *queues);
        c.perm = *perm;
        table.insert((*name).to_owned(), c);
    }
    TopicConfigSerializeWrapper {
        topic_config_table: table,
        data_version: dv(counter),
    }
}

fn reg(
    name: &str,
    id: i64,
    addr: &str,
    ha: &str,
    w: TopicConfigSerializeWrapper,
    channel: u64,
) -> BrokerRegistration {
    BrokerRegistration {
        cluster_name: "DefaultCluster".into(),
        broker_addr: addr.into(),
        broker_name: name.into(),
        broker_id: id,
        ha_server_addr: ha.into(),
        topic_config_wrapper: w,
        channel_id: channel,
        ..BrokerRegistration::default()
    }
}

fn topics() -> Vec<(&'static str, i32, i32)> {
    vec![("TopicA", 4, 6), ("TopicB", 8, 6), ("TBW102", 8, 7)]
}

fn master_and_slave() -> RouteInfoManager {
    let mut m = RouteInfoManager::default();
    let r = m
        .register_broker(
            reg("broker-a", 0, MASTER, MASTER_HA, wrapper(1, &topics()), 1),
            T0,
        )
        .unwrap();
    assert_eq!(r, RegisterBrokerResult::default());
    let r = m
        .register_broker(
            reg("broker-a", 1, SLAVE, SLAVE_HA, wrapper(1, &topics()), 2),
            T0,
        )
        .unwrap();
    assert_eq!(r.master_addr.as_deref(), Some(MASTER));
    assert_eq!(r.ha_server_addr.as_deref(), Some(MASTER_HA));
    m
}

fn unregister(m: &mut RouteInfoManager, name: &str, id: i64, addr: &str) {
    m.unregister_broker(&UnregisterRequest {
        cluster_name: "DefaultCluster".into(),
        broker_addr: addr.into(),
        broker_name: name.into(),
        broker_id: id,
    });
}

#[test]
fn register_master_and_slave_then_route() {
    let m = master_and_slave();
    let route = m.pickup_topic_route_data("TopicA").unwrap();
    assert_eq!(route.queue_datas.len(), 1);
    let qd = &route.queue_datas[0];
    assert_eq!(
        (
            qd.broker_name.as_str(),
            qd.read_queue_nums,
            qd.write_queue_nums,
            qd.perm
        ),
        ("broker-a", 4, 4, 6)
    );
    assert_eq!(route.broker_datas.len(), 1);
    let bd = &route.broker_datas[0];
    assert_eq!(bd.cluster, "DefaultCluster");
    assert_eq!(
        bd.broker_addrs,
        BTreeMap::from([(0, MASTER.to_owned()), (1, SLAVE.to_owned())])
    );
    assert!(!bd.enable_acting_master);
    assert_eq!(
        m.pickup_topic_route_data("TBW102").unwrap().queue_datas[0].perm,
        7
    );
    assert!(m.pickup_topic_route_data("Nope").is_none());
    assert_eq!(m.live_broker_count(), 2);
}

#[test]
fn slave_without_live_master_gets_no_master_address() {
    let mut m = RouteInfoManager::default();
    let r = m
        .register_broker(
            reg("broker-a", 1, SLAVE, SLAVE_HA, wrapper(1, &topics()), 2),
            T0,
        )
        .unwrap();
    assert_eq!(r, RegisterBrokerResult::default());
    // A 4.9 slave never supplies topic routes.
    assert!(m.pickup_topic_route_data("TopicA").is_none());
    assert!(m.all_topic_list().topic_list.is_empty());
    assert_eq!(
        m.cluster_info().broker_addr_table["broker-a"]
            .broker_addrs
            .len(),
        1
    );
}

#[test]
fn slave_topics_never_override_master_routes() {
    let mut m = master_and_slave();
    m.register_broker(
        reg(
            "broker-a",
            1,
            SLAVE,
            SLAVE_HA,
            wrapper(9, &[("TopicA", 1, 4), ("SlaveOnly", 1, 6)]),
            2,
        ),
        T0,
    )
    .unwrap();
    assert_eq!(
        m.pickup_topic_route_data("TopicA").unwrap().queue_datas[0].write_queue_nums,
        4
    );
    assert!(m.pickup_topic_route_data("SlaveOnly").is_none());
}

#[test]
fn topic_routes_follow_the_data_version() {
    let mut m = master_and_slave();
    // Same version, changed queue count: ignored (the broker did not say it changed).
    m.register_broker(
        reg(
            "broker-a",
            0,
            MASTER,
            MASTER_HA,
            wrapper(1, &[("TopicA", 2, 6), ("TopicB", 8, 6), ("TBW102", 8, 7)]),
            1,
        ),
        T0,
    )
    .unwrap();
    assert_eq!(
        m.pickup_topic_route_data("TopicA").unwrap().queue_datas[0].write_queue_nums,
        4
    );
    // Same version, a topic new to this broker: added (5.x per-topic rule).
    let mut t = topics();
    t.push(("TopicC", 2, 6));
    m.register_broker(reg("broker-a", 0, MASTER, MASTER_HA, wrapper(1, &t), 1), T0)
        .unwrap();
    assert_eq!(
        m.pickup_topic_route_data("TopicC").unwrap().queue_datas[0].write_queue_nums,
        2
    );
    // New version: every topic is taken again.
    m.register_broker(
        reg(
            "broker-a",
            0,
            MASTER,
            MASTER_HA,
            wrapper(2, &[("TopicA", 2, 6)]),
            1,
        ),
        T0,
    )
    .unwrap();
    assert_eq!(
        m.pickup_topic_route_data("TopicA").unwrap().queue_datas[0].write_queue_nums,
        2
    );
    // Topics the broker stopped listing stay (deleteTopicWithBrokerRegistration is off).
    assert!(m.pickup_topic_route_data("TopicB").is_some());
    assert_eq!(
        m.query_broker_topic_config("DefaultCluster", MASTER),
        Some(&dv(2))
    );
}

#[test]
fn delete_topic_with_broker_registration_drops_unlisted_topics() {
    let mut m = RouteInfoManager::new(RouteOptions {
        delete_topic_with_broker_registration: true,
        ..RouteOptions::default()
    });
    m.register_broker(
        reg("broker-a", 0, MASTER, MASTER_HA, wrapper(1, &topics()), 1),
        T0,
    )
    .unwrap();
    m.register_broker(
        reg(
            "broker-b",
            0,
            "127.0.0.1:20911",
            "x",
            wrapper(1, &[("TopicB", 2, 6)]),
            3,
        ),
        T0,
    )
    .unwrap();
    m.register_broker(
        reg(
            "broker-a",
            0,
            MASTER,
            MASTER_HA,
            wrapper(2, &[("TopicA", 4, 6)]),
            1,
        ),
        T0,
    )
    .unwrap();
    assert!(m.pickup_topic_route_data("TBW102").is_none());
    let b = m.pickup_topic_route_data("TopicB").unwrap();
    assert_eq!(b.queue_datas.len(), 1);
    assert_eq!(b.queue_datas[0].broker_name, "broker-b");
}

#[test]
fn slave_promoted_to_master_replaces_its_old_id() {
    let mut m = master_and_slave();
    unregister(&mut m, "broker-a", 0, MASTER);
    // The slave process comes back as the master, same address.
    let r = m
        .register_broker(
            reg("broker-a", 0, SLAVE, SLAVE_HA, wrapper(5, &topics()), 2),
            T0,
        )
        .unwrap();
    assert_eq!(r, RegisterBrokerResult::default());
    let bd = &m.cluster_info().broker_addr_table["broker-a"];
    assert_eq!(bd.broker_addrs, BTreeMap::from([(0, SLAVE.to_owned())]));
    // And the old master, now a slave, learns where its master is.
    let r = m
        .register_broker(
            reg("broker-a", 1, MASTER, MASTER_HA, wrapper(1, &topics()), 1),
            T0,
        )
        .unwrap();
    assert_eq!(r.master_addr.as_deref(), Some(SLAVE));
    assert_eq!(r.ha_server_addr.as_deref(), Some(SLAVE_HA));
}

#[test]
fn unregister_slave_then_master() {
    let mut m = master_and_slave();
    unregister(&mut m, "broker-a", 1, SLAVE);
    let route = m.pickup_topic_route_data("TopicA").unwrap();
    assert_eq!(
        route.broker_datas[0].broker_addrs,
        BTreeMap::from([(0, MASTER.to_owned())])
    );
    assert!(m.broker_live_info("DefaultCluster", SLAVE).is_none());
    unregister(&mut m, "broker-a", 0, MASTER);
    assert!(m.pickup_topic_route_data("TopicA").is_none());
    assert!(m.all_topic_list().topic_list.is_empty());
    let ci = m.cluster_info();
    assert!(ci.broker_addr_table.is_empty() && ci.cluster_addr_table.is_empty());
    assert_eq!(m.live_broker_count(), 0);
}

#[test]
fn unregister_of_unknown_broker_is_harmless() {
    let mut m = master_and_slave();
    unregister(&mut m, "broker-x", 0, "127.0.0.1:1");
    unregister(&mut m, "broker-a", 3, "127.0.0.1:1");
    assert_eq!(m.live_broker_count(), 2);
    assert_eq!(
        m.cluster_info().broker_addr_table["broker-a"]
            .broker_addrs
            .len(),
        2
    );
}

#[test]
fn topic_shared_by_two_broker_names_survives_one() {
    let mut m = master_and_slave();
    m.register_broker(
        reg(
            "broker-b",
            0,
            "127.0.0.1:20911",
            "127.0.0.1:20912",
            wrapper(1, &[("TopicA", 2, 6)]),
            3,
        ),
        T0,
    )
    .unwrap();
    let route = m.pickup_topic_route_data("TopicA").unwrap();
    assert_eq!(route.queue_datas.len(), 2);
    assert_eq!(route.broker_datas.len(), 2);
    unregister(&mut m, "broker-a", 0, MASTER);
    unregister(&mut m, "broker-a", 1, SLAVE);
    let route = m.pickup_topic_route_data("TopicA").unwrap();
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.broker_datas[0].broker_name, "broker-b");
    assert!(m.pickup_topic_route_data("TopicB").is_none());
}

#[test]
fn expiry_uses_default_or_broker_timeout() {
    let mut m = master_and_slave();
    let mut short = reg(
        "broker-b",
        0,
        "127.0.0.1:20911",
        "x",
        wrapper(1, &[("TopicZ", 1, 6)]),
        7,
    );
    short.heartbeat_timeout_millis = Some(1_000);
    m.register_broker(short, T0).unwrap();

    assert!(m.scan_not_active_brokers(T0 + 1_000).is_empty());
    let gone = m.scan_not_active_brokers(T0 + 1_001);
    assert_eq!(gone.len(), 1);
    assert_eq!(
        gone[0].broker,
        BrokerAddrInfo::new("DefaultCluster", "127.0.0.1:20911")
    );
    assert_eq!((gone[0].channel_id, gone[0].timeout_millis), (7, 1_000));
    assert!(m.pickup_topic_route_data("TopicZ").is_none());

    // A keep-alive refreshes the slave only.
    assert!(m.update_broker_info_update_timestamp("DefaultCluster", SLAVE, T0 + 60_000));
    assert!(!m.update_broker_info_update_timestamp("DefaultCluster", "127.0.0.1:1", T0));
    assert!(
        m.scan_not_active_brokers(T0 + DEFAULT_BROKER_CHANNEL_EXPIRED_TIME_MS)
            .is_empty()
    );
    let gone = m.scan_not_active_brokers(T0 + DEFAULT_BROKER_CHANNEL_EXPIRED_TIME_MS + 1);
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0].broker.broker_addr, MASTER);
    assert_eq!(gone[0].channel_id, 1);
    let route = m.pickup_topic_route_data("TopicA").unwrap();
    assert_eq!(
        route.broker_datas[0].broker_addrs,
        BTreeMap::from([(1, SLAVE.to_owned())])
    );
    let gone = m.scan_not_active_brokers(T0 + 60_000 + DEFAULT_BROKER_CHANNEL_EXPIRED_TIME_MS + 1);
    assert_eq!(gone.len(), 1);
    assert!(m.cluster_info().broker_addr_table.is_empty());
}

#[test]
fn nonpositive_timeout_means_default() {
    let mut m = RouteInfoManager::default();
    let mut r = reg("broker-a", 0, MASTER, MASTER_HA, wrapper(1, &topics()), 1);
    r.heartbeat_timeout_millis = Some(0);
    m.register_broker(r, T0).unwrap();
    assert_eq!(
        m.broker_live_info("DefaultCluster", MASTER)
            .unwrap()
            .heartbeat_timeout_millis,
        DEFAULT_BROKER_CHANNEL_EXPIRED_TIME_MS
    );
}

#[test]
fn closed_channel_removes_only_its_brokers() {
    let mut m = master_and_slave();
    m.register_broker(
        reg(
            "broker-b",
            0,
            "127.0.0.1:20911",
            "x",
            wrapper(1, &[("TopicZ", 1, 6)]),
            2,
        ),
        T0,
    )
    .unwrap();
    assert!(m.on_channel_destroy(99).is_empty());
    let gone = m.on_channel_destroy(2);
    assert_eq!(gone.len(), 2, "{gone:?}");
    assert!(m.pickup_topic_route_data("TopicZ").is_none());
    let route = m.pickup_topic_route_data("TopicA").unwrap();
    assert_eq!(
        route.broker_datas[0].broker_addrs,
        BTreeMap::from([(0, MASTER.to_owned())])
    );
}

#[test]
fn re_registration_on_a_new_connection_moves_the_broker() {
    let mut m = master_and_slave();
    m.register_broker(
        reg("broker-a", 0, MASTER, MASTER_HA, wrapper(1, &topics()), 10),
        T0,
    )
    .unwrap();
    assert!(m.on_channel_destroy(1).is_empty());
    assert_eq!(m.on_channel_destroy(10).len(), 1);
}

#[test]
fn data_version_queries() {
    let mut m = master_and_slave();
    assert!(!m.is_broker_topic_config_changed("DefaultCluster", MASTER, &dv(1)));
    assert!(m.is_broker_topic_config_changed("DefaultCluster", MASTER, &dv(2)));
    let mut other = dv(1);
    other.state_version = 1;
    assert!(m.is_broker_topic_config_changed("DefaultCluster", MASTER, &other));
    assert!(m.is_broker_topic_config_changed("OtherCluster", MASTER, &dv(1)));
    assert!(
        m.query_broker_topic_config("OtherCluster", MASTER)
            .is_none()
    );
    m.update_broker_info_update_timestamp("DefaultCluster", MASTER, T0 + 5);
    assert_eq!(
        m.broker_live_info("DefaultCluster", MASTER)
            .unwrap()
            .last_update_timestamp,
        T0 + 5
    );
}

#[test]
fn newer_state_version_wins_a_conflict() {
    let mut m = RouteInfoManager::default();
    let mut w = wrapper(1, &topics());
    w.data_version.state_version = 5;
    m.register_broker(reg("broker-a", 0, MASTER, MASTER_HA, w, 1), T0)
        .unwrap();
    // Another process claims id 0 with an older state version: ignored.
    let r = m
        .register_broker(
            reg(
                "broker-a",
                0,
                "127.0.0.1:30911",
                "y",
                wrapper(1, &topics()),
                2,
            ),
            T0,
        )
        .unwrap();
    assert_eq!(r, RegisterBrokerResult::default());
    assert_eq!(
        m.cluster_info().broker_addr_table["broker-a"].broker_addrs[&0],
        MASTER
    );
    assert!(
        m.broker_live_info("DefaultCluster", "127.0.0.1:30911")
            .is_none()
    );
    // With a newer one it takes over.
    let mut w = wrapper(1, &topics());
    w.data_version.state_version = 6;
    m.register_broker(reg("broker-a", 0, "127.0.0.1:30911", "y", w, 2), T0)
        .unwrap();
    assert_eq!(
        m.cluster_info().broker_addr_table["broker-a"].broker_addrs[&0],
        "127.0.0.1:30911"
    );
}

#[test]
fn single_topic_registration_needs_a_first_full_one() {
    let mut m = RouteInfoManager::default();
    let mut r = reg(
        "broker-a",
        0,
        MASTER,
        MASTER_HA,
        wrapper(1, &[("TopicA", 4, 6)]),
        1,
    );
    r.single_topic_registration_possible = true;
    assert_eq!(
        m.register_broker(r.clone(), T0),
        Err(RegisterError::SingleTopicBeforeFirstRegistration {
            broker_name: "broker-a".into(),
            broker_id: 0
        })
    );
    assert!(
        m.cluster_info().broker_addr_table.is_empty()
            && m.cluster_info().cluster_addr_table.is_empty()
    );
    // A 4.9 broker with one topic is fine.
    r.single_topic_registration_possible = false;
    m.register_broker(r.clone(), T0).unwrap();
    // And once registered, single topic registrations are accepted.
    r.single_topic_registration_possible = true;
    r.topic_config_wrapper = wrapper(2, &[("TopicS", 1, 6)]);
    m.register_broker(r, T0).unwrap();
    assert!(m.pickup_topic_route_data("TopicS").is_some());
}

#[test]
fn zone_and_acting_master_flags_are_recorded() {
    let mut m = RouteInfoManager::default();
    let mut r = reg("broker-a", 0, MASTER, MASTER_HA, wrapper(1, &topics()), 1);
    r.zone_name = Some("zone-1".into());
    r.enable_acting_master = Some(true);
    m.register_broker(r, T0).unwrap();
    let bd = &m.cluster_info().broker_addr_table["broker-a"];
    assert_eq!(bd.zone_name.as_deref(), Some("zone-1"));
    assert!(bd.enable_acting_master);
}

#[test]
fn acting_master_takes_over_read_only() {
    let mut m = RouteInfoManager::new(RouteOptions {
        support_acting_master: true,
        ..RouteOptions::default()
    });
    let mut master = reg("broker-a", 0, MASTER, MASTER_HA, wrapper(1, &topics()), 1);
    master.enable_acting_master = Some(true);
    m.register_broker(master, T0).unwrap();
    let mut slave = reg("broker-a", 1, SLAVE, SLAVE_HA, wrapper(1, &topics()), 2);
    slave.enable_acting_master = Some(true);
    m.register_broker(slave.clone(), T0).unwrap();
    // With its master alive the slave is not prime: perms unchanged.
    assert_eq!(
        m.pickup_topic_route_data("TopicA").unwrap().queue_datas[0].perm,
        6
    );

    unregister(&mut m, "broker-a", 0, MASTER);
    // The master left: the queues of the name became read-only ...
    let route = m.pickup_topic_route_data("TopicA").unwrap();
    assert_eq!(route.queue_datas[0].perm, perm::READ);
    // ... and the route presents the slave as the (acting) master.
    assert_eq!(
        route.broker_datas[0].broker_addrs,
        BTreeMap::from([(0, SLAVE.to_owned())])
    );
    // Its next registration (prime slave) keeps them read-only.
    slave.topic_config_wrapper = wrapper(2, &topics());
    m.register_broker(slave, T0).unwrap();
    assert_eq!(
        m.pickup_topic_route_data("TBW102").unwrap().queue_datas[0].perm,
        7 & !perm::WRITE
    );

    // Without supportActingMaster the route shows the real ids.
    m.set_options(RouteOptions::default());
    let route = m.pickup_topic_route_data("TopicA").unwrap();
    assert_eq!(
        route.broker_datas[0].broker_addrs,
        BTreeMap::from([(1, SLAVE.to_owned())])
    );
}

#[test]
fn filter_servers_are_in_routes() {
    let mut m = RouteInfoManager::default();
    let mut r = reg("broker-a", 0, MASTER, MASTER_HA, wrapper(1, &topics()), 1);
    r.filter_server_list = Some(vec!["127.0.0.1:3000".into()]);
    m.register_broker(r.clone(), T0).unwrap();
    let route = m.pickup_topic_route_data("TopicA").unwrap();
    assert_eq!(
        route.filter_server_table[MASTER],
        vec!["127.0.0.1:3000".to_owned()]
    );
    r.filter_server_list = Some(vec![]);
    m.register_broker(r, T0).unwrap();
    assert!(
        m.pickup_topic_route_data("TopicA")
            .unwrap()
            .filter_server_table
            .is_empty()
    );
}

#[test]
fn route_needs_broker_data() {
    let mut m = master_and_slave();
    // Queue data whose broker name is gone (cannot happen through the API; defensive).
    m.topic_queue_table
        .entry("Orphan".into())
        .or_default()
        .insert(
            "ghost".into(),
            QueueData {
                broker_name: "ghost".into(),
                ..QueueData::default()
            },
        );
    assert!(m.pickup_topic_route_data("Orphan").is_none());
}

#[test]
fn write_perm_wipe_and_add() {
    let mut m = master_and_slave();
    assert_eq!(m.wipe_write_perm_of_broker("broker-a"), 3);
    assert_eq!(
        m.pickup_topic_route_data("TopicA").unwrap().queue_datas[0].perm,
        perm::READ
    );
    assert_eq!(
        m.pickup_topic_route_data("TBW102").unwrap().queue_datas[0].perm,
        perm::READ | perm::INHERIT
    );
    assert_eq!(m.wipe_write_perm_of_broker("broker-x"), 0);
    assert_eq!(m.add_write_perm_of_broker("broker-a"), 3);
    assert_eq!(
        m.pickup_topic_route_data("TBW102").unwrap().queue_datas[0].perm,
        perm::READ | perm::WRITE
    );
}

#[test]
fn delete_topic_everywhere_or_per_cluster() {
    let mut m = master_and_slave();
    let mut other = reg(
        "broker-c",
        0,
        "127.0.0.1:40911",
        "z",
        wrapper(1, &[("TopicA", 1, 6), ("TopicB", 1, 6)]),
        5,
    );
    other.cluster_name = "OtherCluster".into();
    m.register_broker(other, T0).unwrap();
    m.delete_topic("TopicA", Some("OtherCluster"));
    let route = m.pickup_topic_route_data("TopicA").unwrap();
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.queue_datas[0].broker_name, "broker-a");
    m.delete_topic("TopicA", Some("NoSuchCluster"));
    assert!(m.pickup_topic_route_data("TopicA").is_some());
    m.delete_topic("TopicA", Some("DefaultCluster"));
    assert!(m.pickup_topic_route_data("TopicA").is_none());
    m.delete_topic("TopicB", None);
    assert!(m.pickup_topic_route_data("TopicB").is_none());
    m.delete_topic("TopicB", None);
}

#[test]
fn topic_lists() {
    let mut m = master_and_slave();
    let mut w = wrapper(1, &[("Unit", 1, 6), ("UnitSub", 1, 6), ("Both", 1, 6)]);
    w.topic_config_table.get_mut("Unit").unwrap().topic_sys_flag = topic_sys_flag::UNIT;
    w.topic_config_table
        .get_mut("UnitSub")
        .unwrap()
        .topic_sys_flag = topic_sys_flag::UNIT_SUB;
    w.topic_config_table.get_mut("Both").unwrap().topic_sys_flag =
        topic_sys_flag::UNIT | topic_sys_flag::UNIT_SUB;
    let mut other = reg("broker-c", 0, "127.0.0.1:40911", "z", w, 5);
    other.cluster_name = "OtherCluster".into();
    m.register_broker(other, T0).unwrap();

    let names = |l: TopicList| l.topic_list.into_iter().collect::<Vec<_>>();
    assert_eq!(
        names(m.all_topic_list()),
        ["Both", "TBW102", "TopicA", "TopicB", "Unit", "UnitSub"]
    );
    assert_eq!(
        names(m.topics_by_cluster("DefaultCluster")),
        ["TBW102", "TopicA", "TopicB"]
    );
    assert_eq!(
        names(m.topics_by_cluster("OtherCluster")),
        ["Both", "Unit", "UnitSub"]
    );
    assert!(m.topics_by_cluster("Nope").topic_list.is_empty());
    assert_eq!(names(m.unit_topics()), ["Both", "Unit"]);
    assert_eq!(names(m.has_unit_sub_topics()), ["Both", "UnitSub"]);
    assert_eq!(names(m.has_unit_sub_non_unit_topics()), ["UnitSub"]);

    let sys = m.system_topic_list();
    assert_eq!(
        names(sys.clone()),
        ["DefaultCluster", "OtherCluster", "broker-a", "broker-c"]
    );
    assert_eq!(sys.broker_addr.as_deref(), Some(MASTER));
    assert!(
        RouteInfoManager::default()
            .system_topic_list()
            .broker_addr
            .is_none()
    );
}

#[test]
fn cluster_info_and_member_group() {
    let m = master_and_slave();
    let ci = m.cluster_info();
    assert_eq!(
        ci.cluster_addr_table["DefaultCluster"]
            .iter()
            .collect::<Vec<_>>(),
        ["broker-a"]
    );
    assert_eq!(ci.broker_addr_table["broker-a"].broker_addrs.len(), 2);
    let g = m.broker_member_group("DefaultCluster", "broker-a");
    assert_eq!(
        g.broker_addrs,
        BTreeMap::from([(0, MASTER.to_owned()), (1, SLAVE.to_owned())])
    );
    assert!(
        m.broker_member_group("DefaultCluster", "nope")
            .broker_addrs
            .is_empty()
    );
    let body = GetBrokerMemberGroupResponseBody {
        broker_member_group: g,
    };
    let json =
        String::from_utf8(fastjson::to_vec(&body, fastjson::KeyStyle::Fastjson).unwrap()).unwrap();
    assert_eq!(
        json,
        r#"{"brokerMemberGroup":{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"}}"#
    );
}

#[test]
fn register_topic_needs_known_brokers() {
    let mut m = master_and_slave();
    let qd = |b: &str| QueueData {
        broker_name: b.into(),
        read_queue_nums: 2,
        write_queue_nums: 2,
        perm: 6,
        topic_sys_flag: 0,
    };
    assert!(!m.register_topic("New", vec![]));
    assert!(!m.register_topic("New", vec![qd("broker-a"), qd("ghost")]));
    assert!(m.pickup_topic_route_data("New").is_none());
    assert!(m.register_topic("New", vec![qd("broker-a")]));
    assert_eq!(
        m.pickup_topic_route_data("New").unwrap().queue_datas[0].write_queue_nums,
        2
    );
}

// ---------------------------------------------------------------- model-based

#[derive(Debug, Clone)]
enum Op {
    Register {
        name: u8,
        id: u8,
        addr: u8,
        version: u8,
        topics: u8,
        channel: u8,
    },
    Unregister {
        name: u8,
        id: u8,
        addr: u8,
    },
    Close {
        channel: u8,
    },
    Scan {
        advance: u32,
    },
    Wipe {
        name: u8,
    },
    DeleteTopic {
        topic: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3u8, 0..3u8, 0..4u8, 0..3u8, 0..16u8, 0..3u8).prop_map(|(name, id, addr, version, topics, channel)| Op::Register {
            name, id, addr, version, topics, channel
        }),
        2 => (0..3u8, 0..3u8, 0..4u8).prop_map(|(name, id, addr)| Op::Unregister { name, id, addr }),
        1 => (0..3u8).prop_map(|channel| Op::Close { channel }),
        1 => (0..200_000u32).prop_map(|advance| Op::Scan { advance }),
        1 => (0..3u8).prop_map(|name| Op::Wipe { name }),
        1 => (0..4u8).prop_map(|topic| Op::DeleteTopic { topic }),
    ]
}

fn check_invariants(m: &RouteInfoManager) {
    for (name, bd) in &m.broker_addr_table {
        assert!(
            !bd.broker_addrs.is_empty(),
            "broker name {name} without addresses"
        );
        assert_eq!(&bd.broker_name, name);
        let mut addrs: Vec<&String> = bd.broker_addrs.values().collect();
        addrs.sort();
        addrs.dedup();
        assert_eq!(
            addrs.len(),
            bd.broker_addrs.len(),
            "one address under two ids in {name}"
        );
    }
    for (topic, qds) in &m.topic_queue_table {
        assert!(!qds.is_empty(), "topic {topic} without queues");
        for (name, qd) in qds {
            assert_eq!(&qd.broker_name, name);
            assert!(
                m.broker_addr_table.contains_key(name),
                "topic {topic} on unknown broker {name}"
            );
        }
    }
    for names in m.cluster_addr_table.values() {
        assert!(!names.is_empty());
    }
    for (topic, route) in m
        .topic_queue_table
        .keys()
        .map(|t| (t, m.pickup_topic_route_data(t)))
    {
        assert!(route.is_some(), "route of {topic} missing");
    }
}

proptest! {
    #[test]
    fn random_operations_keep_the_tables_consistent(ops in proptest::collection::vec(op(), 1..60)) {
        let mut m = RouteInfoManager::default();
        let mut now = T0;
        for op in ops {
            match op {
                Op::Register { name, id, addr, version, topics, channel } => {
                    let mut t = Vec::new();
                    for (bit, topic) in ["T0", "T1", "T2", "T3"].iter().enumerate() {
                        if topics & (1 << bit) != 0 {
                            t.push((*topic, 2, 6));
                        }
                    }
                    let r = reg(&format!("b{name}"), i64::from(id), &format!("127.0.0.1:{}", 10000 + u16::from(addr)), "ha",
                        wrapper(i64::from(version), &t), u64::from(channel));
                    m.register_broker(r, now).unwrap();
                }
                Op::Unregister { name, id, addr } => {
                    unregister(&mut m, &format!("b{name}"), i64::from(id), &format!("127.0.0.1:{}", 10000 + u16::from(addr)));
                }
                Op::Close { channel } => { m.on_channel_destroy(u64::from(channel)); }
                Op::Scan { advance } => {
                    now += i64::from(advance);
                    m.scan_not_active_brokers(now);
                }
                Op::Wipe { name } => { m.wipe_write_perm_of_broker(&format!("b{name}")); }
                Op::DeleteTopic { topic } => m.delete_topic(&format!("T{topic}"), None),
            }
            check_invariants(&m);
        }
    }
}
