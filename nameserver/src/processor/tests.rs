use std::collections::BTreeMap;

use remoting::CommandHeader;
use remoting::protocol::body::{KvTable, TopicList};
use remoting::protocol::route::ClusterInfo;
use remoting::protocol::topic::TopicConfig;

use super::*;
use crate::clock::ManualClock;

const T0: i64 = 1_700_000_000_000;
const MASTER: &str = "127.0.0.1:10911";
const SLAVE: &str = "127.0.0.1:10921";

struct Fixture {
    _dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    p: NamesrvProcessor,
}

fn fixture_with(edit: impl FnOnce(&mut NamesrvConfig)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut config = NamesrvConfig {
        kv_config_path: dir.path().join("kvConfig.json").display().to_string(),
        config_store_path: dir.path().join("namesrv.properties").display().to_string(),
        ..NamesrvConfig::default()
    };
    edit(&mut config);
    let kv = KvConfigManager::new(&config.kv_config_path);
    let clock = Arc::new(ManualClock::new(T0));
    let p = NamesrvProcessor::new(config, kv, clock.clone());
    Fixture {
        _dir: dir,
        clock,
        p,
    }
}

fn fixture() -> Fixture {
    fixture_with(|_| {})
}

fn origin(channel_id: u64) -> Origin {
    Origin {
        channel_id,
        peer: "127.0.0.1:50000".parse().unwrap(),
    }
}

fn body(counter: i64) -> RegisterBrokerBody {
    let mut table = BTreeMap::new();
    for (name, queues, perm) in [("TopicA", 4, 6), ("TopicB", 8, 6), ("TBW102", 8, 7)] {
        let mut c = TopicConfig::new(name, queues);
        c.perm = perm;
        table.insert(name.to_owned(), c);
    }
    RegisterBrokerBody {
        topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
            topic_config_table: table,
            data_version: DataVersion {
                timestamp: T0,
                counter,
                state_version: 0,
            },
        },
        filter_server_list: vec![],
    }
}

fn register_request(
    id: i64,
    addr: &str,
    body: &RegisterBrokerBody,
    compressed: bool,
) -> RemotingCommand {
    let bytes = body.encode(compressed).unwrap();
    let header = RegisterBrokerRequestHeader {
        broker_name: "broker-a".into(),
        broker_addr: addr.into(),
        cluster_name: "DefaultCluster".into(),
        ha_server_addr: format!("{addr}-ha"),
        broker_id: id,
        compressed: Some(compressed),
        body_crc32: Some(java_crc32(&bytes)),
        ..RegisterBrokerRequestHeader::default()
    };
    RemotingCommand::request_with(RequestCode::RegisterBroker, &header).with_body(bytes)
}

fn route_request(topic: &str, version: i32, accept_standard: Option<bool>) -> RemotingCommand {
    let mut r = RemotingCommand::request_with(
        RequestCode::GetRouteinfoByTopic,
        &GetRouteInfoRequestHeader {
            topic: topic.into(),
            accept_standard_json_only: accept_standard,
        },
    );
    r.header.version = version;
    r
}

fn body_text(resp: &RemotingCommand) -> String {
    String::from_utf8(resp.body.to_bytes().to_vec()).unwrap()
}

impl Fixture {
    fn call(&self, request: &RemotingCommand) -> RemotingCommand {
        self.p.handle(origin(1), request)
    }

    fn register_pair(&self) {
        let r = self.call(&register_request(0, MASTER, &body(1), false));
        assert_eq!(r.code(), 0, "{:?}", r.remark());
        assert!(r.ext("masterAddr").is_none());
        let r = self
            .p
            .handle(origin(2), &register_request(1, SLAVE, &body(1), true));
        assert_eq!(r.code(), 0, "{:?}", r.remark());
        assert_eq!(r.ext("masterAddr"), Some(MASTER));
        assert_eq!(r.ext("haServerAddr"), Some(format!("{MASTER}-ha").as_str()));
    }
}

#[test]
fn route_key_style_follows_version_and_flag() {
    let f = fixture();
    f.register_pair();
    let bare = f.call(&route_request("TopicA", 317, None));
    assert_eq!(bare.code(), 0);
    let text = body_text(&bare);
    assert!(
        text.contains(r#""brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"}"#),
        "{text}"
    );
    for request in [
        route_request("TopicA", 409, None),
        route_request("TopicA", 317, Some(true)),
    ] {
        let text = body_text(&f.call(&request));
        assert!(
            text.contains(r#""brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"}"#),
            "{text}"
        );
        let route: TopicRouteData = fastjson::from_slice(text.as_bytes()).unwrap();
        assert_eq!(route.queue_datas[0].write_queue_nums, 4);
        assert!(route.order_topic_conf.is_none());
    }
    assert!(body_text(&f.call(&route_request("TopicA", 317, Some(false)))).contains("{0:"));
}

#[test]
fn unknown_topic_is_topic_not_exist() {
    let f = fixture();
    let r = f.call(&route_request("Nope", 409, None));
    assert_eq!(r.code(), 17);
    assert_eq!(
        r.remark(),
        Some(
            "No topic route info in name server for the topic: Nope\nSee http://rocketmq.apache.org/docs/faq/ for further details."
        )
    );
    assert!(r.body.is_empty());
}

#[test]
fn missing_header_field_is_system_error() {
    let f = fixture();
    let r = f.call(&RemotingCommand::request(RequestCode::GetRouteinfoByTopic));
    assert_eq!(
        (r.code(), r.remark()),
        (1, Some("the custom field <topic> is null"))
    );
    let mut req = register_request(0, MASTER, &body(1), false);
    req.header.ext_fields.remove("brokerName");
    let r = f.call(&req);
    assert_eq!(
        (r.code(), r.remark()),
        (1, Some("the custom field <brokerName> is null"))
    );
    let mut req = register_request(0, MASTER, &body(1), false);
    req.header.ext_fields.insert("brokerId", "zero");
    let r = f.call(&req);
    assert_eq!(r.code(), 1);
    assert!(r.remark().unwrap().contains("brokerId"), "{:?}", r.remark());
}

#[test]
fn register_checks_crc_and_body() {
    let f = fixture();
    let mut req = register_request(0, MASTER, &body(1), false);
    req.header.ext_fields.insert("bodyCrc32", "12345");
    let r = f.call(&req);
    assert_eq!((r.code(), r.remark()), (1, Some("crc32 not match")));

    let mut req = register_request(0, MASTER, &body(1), false);
    req.header.ext_fields.insert("bodyCrc32", "0");
    req.body = b"{not json".to_vec().into();
    let r = f.call(&req);
    assert_eq!(r.code(), 1);
    assert!(
        r.remark()
            .unwrap()
            .starts_with("Failed to decode RegisterBrokerBody: "),
        "{:?}",
        r.remark()
    );

    let mut req = register_request(0, MASTER, &body(1), true);
    req.header.ext_fields.insert("bodyCrc32", "0");
    req.body = b"not zlib".to_vec().into();
    assert_eq!(f.call(&req).code(), 1);
    assert!(f.p.routes().cluster_info().broker_addr_table.is_empty());

    // No body at all: registered with no topics and a zero DataVersion.
    let mut req = register_request(0, MASTER, &body(1), false);
    req.header.ext_fields.remove("bodyCrc32");
    req.body = Vec::new().into();
    assert_eq!(f.call(&req).code(), 0);
    assert_eq!(
        f.p.routes()
            .query_broker_topic_config("DefaultCluster", MASTER),
        Some(&DataVersion::default())
    );
}

#[test]
fn register_from_an_ancient_broker_reads_the_bare_wrapper() {
    let f = fixture();
    let wrapper = body(3).topic_config_serialize_wrapper;
    let mut req = register_request(0, MASTER, &body(3), false);
    req.header.version = 20;
    req.header.ext_fields.remove("bodyCrc32");
    req.body = fastjson::to_vec(&wrapper, KeyStyle::Fastjson)
        .unwrap()
        .into();
    assert_eq!(f.call(&req).code(), 0);
    assert!(f.p.routes().pickup_topic_route_data("TopicB").is_some());
}

#[test]
fn single_topic_registration_from_5x_before_first_one_fails() {
    let f = fixture();
    let mut one = body(1);
    one.topic_config_serialize_wrapper
        .topic_config_table
        .retain(|k, _| k == "TopicA");
    let mut req = register_request(0, MASTER, &one, false);
    req.header.version = version::V5_3_3;
    let r = f.call(&req);
    assert_eq!((r.code(), r.remark()), (1, Some("register broker failed")));
    req.header.version = version::V4_9_8;
    assert_eq!(f.call(&req).code(), 0);
}

#[test]
fn order_topic_conf_and_register_response_body() {
    let f = fixture();
    let put = RemotingCommand::request_with(
        RequestCode::PutKvConfig,
        &PutKvConfigRequestHeader {
            namespace: "ORDER_TOPIC_CONFIG".into(),
            key: "TopicA".into(),
            value: "broker-a:4".into(),
        },
    );
    assert_eq!(f.call(&put).code(), 0);
    let r = f.call(&register_request(0, MASTER, &body(1), false));
    let table: KvTable = fastjson::from_slice(&r.body.to_bytes()).unwrap();
    assert_eq!(table.table["TopicA"], "broker-a:4");

    // Not in routes unless orderMessageEnable.
    let route: TopicRouteData =
        fastjson::from_slice(&f.call(&route_request("TopicA", 409, None)).body.to_bytes()).unwrap();
    assert!(route.order_topic_conf.is_none());
    let update = RemotingCommand::request(RequestCode::UpdateNamesrvConfig)
        .with_body("orderMessageEnable=true\n".to_owned());
    assert_eq!(f.call(&update).code(), 0);
    let route: TopicRouteData =
        fastjson::from_slice(&f.call(&route_request("TopicA", 409, None)).body.to_bytes()).unwrap();
    assert_eq!(route.order_topic_conf.as_deref(), Some("broker-a:4"));
}

#[test]
fn no_order_table_means_no_register_body() {
    let f = fixture_with(|c| c.return_order_topic_config_to_broker = false);
    let put = RemotingCommand::request_with(
        RequestCode::PutKvConfig,
        &PutKvConfigRequestHeader {
            namespace: "ORDER_TOPIC_CONFIG".into(),
            key: "T".into(),
            value: "b:1".into(),
        },
    );
    f.call(&put);
    assert!(
        f.call(&register_request(0, MASTER, &body(1), false))
            .body
            .is_empty()
    );
    let f = fixture();
    assert!(
        f.call(&register_request(0, MASTER, &body(1), false))
            .body
            .is_empty()
    );
}

#[test]
fn name_server_not_ready_window() {
    let f = fixture_with(|c| {
        c.need_wait_for_service = true;
        c.wait_seconds_for_service = 5;
    });
    f.register_pair();
    let r = f.call(&route_request("TopicA", 409, None));
    assert_eq!((r.code(), r.remark()), (1, Some("name server not ready")));
    f.clock.advance(5_000);
    assert_eq!(f.call(&route_request("TopicA", 409, None)).code(), 0);
}

#[test]
fn query_data_version_is_a_keep_alive() {
    let f = fixture();
    f.register_pair();
    let query = |counter: i64| {
        let h = QueryDataVersionRequestHeader {
            broker_name: "broker-a".into(),
            broker_addr: MASTER.into(),
            cluster_name: "DefaultCluster".into(),
            broker_id: 0,
        };
        let dv = DataVersion {
            timestamp: T0,
            counter,
            state_version: 0,
        };
        RemotingCommand::request_with(RequestCode::QueryDataVersion, &h)
            .with_body(serde_json::to_vec(&dv).unwrap())
    };
    f.clock.advance(100_000);
    let r = f.call(&query(2));
    assert_eq!((r.code(), r.ext("changed")), (0, Some("true")));
    let current: DataVersion = fastjson::from_slice(&r.body.to_bytes()).unwrap();
    assert_eq!(current.counter, 1);
    // A changed version is not a keep-alive (4.9.8): the master would expire at T0 + 120 s.
    assert_eq!(
        f.p.routes()
            .broker_live_info("DefaultCluster", MASTER)
            .unwrap()
            .last_update_timestamp,
        T0
    );
    let r = f.call(&query(1));
    assert_eq!(r.ext("changed"), Some("false"));
    assert_eq!(
        f.p.routes()
            .broker_live_info("DefaultCluster", MASTER)
            .unwrap()
            .last_update_timestamp,
        T0 + 100_000
    );
    f.clock.advance(60_000);
    assert_eq!(f.p.scan_not_active_brokers(), 1, "only the slave expired");
    assert!(
        f.p.routes()
            .broker_live_info("DefaultCluster", MASTER)
            .is_some()
    );

    let mut no_body = query(1);
    no_body.body = Vec::new().into();
    let r = f.call(&no_body);
    assert_eq!(
        (r.code(), r.remark()),
        (1, Some("DataVersion body is missing"))
    );
    let mut bad_body = query(1);
    bad_body.body = b"[1,2".to_vec().into();
    assert_eq!(f.call(&bad_body).code(), 1);
}

#[test]
fn broker_heartbeat_keeps_a_broker_alive() {
    let f = fixture();
    f.register_pair();
    let hb = RemotingCommand::request_with(
        RequestCode::BrokerHeartbeat,
        &BrokerHeartbeatRequestHeader {
            cluster_name: "DefaultCluster".into(),
            broker_addr: SLAVE.into(),
            broker_name: "broker-a".into(),
            ..BrokerHeartbeatRequestHeader::default()
        },
    );
    f.clock.advance(100_000);
    assert_eq!(f.call(&hb).code(), 0);
    f.clock.advance(30_000);
    assert_eq!(f.p.scan_not_active_brokers(), 1);
    let route: TopicRouteData =
        fastjson::from_slice(&f.call(&route_request("TopicA", 409, None)).body.to_bytes()).unwrap();
    assert_eq!(
        route.broker_datas[0].broker_addrs,
        BTreeMap::from([(1, SLAVE.to_owned())])
    );
}

#[test]
fn unregister_removes_routes() {
    let f = fixture();
    f.register_pair();
    let unreg = |id: i64, addr: &str| {
        RemotingCommand::request_with(
            RequestCode::UnregisterBroker,
            &UnregisterBrokerRequestHeader {
                broker_name: "broker-a".into(),
                broker_addr: addr.into(),
                cluster_name: "DefaultCluster".into(),
                broker_id: id,
            },
        )
    };
    assert_eq!(f.call(&unreg(1, SLAVE)).code(), 0);
    assert_eq!(f.call(&unreg(0, MASTER)).code(), 0);
    assert_eq!(f.call(&route_request("TopicA", 409, None)).code(), 17);
    let ci: ClusterInfo = fastjson::from_slice(
        &f.call(&RemotingCommand::request(RequestCode::GetBrokerClusterInfo))
            .body
            .to_bytes(),
    )
    .unwrap();
    assert!(ci.broker_addr_table.is_empty());
}

#[test]
fn cluster_info_uses_bare_keys() {
    let f = fixture();
    f.register_pair();
    let r = f.call(&RemotingCommand::request(RequestCode::GetBrokerClusterInfo));
    let text = body_text(&r);
    assert!(
        text.contains(r#""brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"}"#),
        "{text}"
    );
    assert!(
        text.contains(r#""clusterAddrTable":{"DefaultCluster":["broker-a"]}"#),
        "{text}"
    );
}

#[test]
fn kv_config_codes() {
    let f = fixture();
    let key = |ns: &str, k: &str| KvConfigKeyRequestHeader {
        namespace: ns.into(),
        key: k.into(),
    };
    let get = |ns: &str, k: &str| {
        f.call(&RemotingCommand::request_with(
            RequestCode::GetKvConfig,
            &key(ns, k),
        ))
    };
    let r = get("NS", "k");
    assert_eq!(
        (r.code(), r.remark()),
        (22, Some("No config item, Namespace: NS Key: k"))
    );
    let list = |ns: &str| {
        f.call(&RemotingCommand::request_with(
            RequestCode::GetKvlistByNamespace,
            &GetKvListByNamespaceRequestHeader {
                namespace: ns.into(),
            },
        ))
    };
    let r = list("NS");
    assert_eq!(
        (r.code(), r.remark()),
        (22, Some("No config item, Namespace: NS"))
    );

    let put = RemotingCommand::request_with(
        RequestCode::PutKvConfig,
        &PutKvConfigRequestHeader {
            namespace: "NS".into(),
            key: "k".into(),
            value: "v".into(),
        },
    );
    assert_eq!(f.call(&put).code(), 0);
    let r = get("NS", "k");
    assert_eq!((r.code(), r.ext("value")), (0, Some("v")));
    let table: KvTable = fastjson::from_slice(&list("NS").body.to_bytes()).unwrap();
    assert_eq!(table.table["k"], "v");
    assert_eq!(
        f.call(&RemotingCommand::request_with(
            RequestCode::DeleteKvConfig,
            &key("NS", "k")
        ))
        .code(),
        0
    );
    assert_eq!(get("NS", "k").code(), 22);

    let mut no_value = put.clone();
    no_value.header.ext_fields.remove("value");
    let r = f.call(&no_value);
    assert_eq!(
        (r.code(), r.remark()),
        (1, Some("the custom field <value> is null"))
    );
}

#[test]
fn config_get_update_and_black_list() {
    let f = fixture();
    let r = f.call(&RemotingCommand::request(RequestCode::GetNamesrvConfig));
    let props = text_to_properties(&body_text(&r));
    assert_eq!(props["listenPort"], "9876");
    assert_eq!(props["orderMessageEnable"], "false");

    for key in [
        "kvConfigPath",
        "configStorePath",
        "rocketmqHome",
        "configBlackList",
    ] {
        let update = RemotingCommand::request(RequestCode::UpdateNamesrvConfig)
            .with_body(format!("{key}=/tmp/evil\n"));
        let r = f.call(&update);
        assert_eq!(
            (r.code(), r.remark()),
            (16, Some("Can not update config in black list.")),
            "{key}"
        );
    }
    let update = RemotingCommand::request(RequestCode::UpdateNamesrvConfig)
        .with_body("waitSecondsForService=soon\n".to_owned());
    assert_eq!(f.call(&update).code(), 1);
    let update = RemotingCommand::request(RequestCode::UpdateNamesrvConfig)
        .with_body("enableTopicList=false\nunknownKey=1\n".to_owned());
    assert_eq!(f.call(&update).code(), 0);
    assert!(!f.p.config().enable_topic_list);
    let stored = std::fs::read_to_string(&f.p.config().config_store_path).unwrap();
    assert!(stored.contains("enableTopicList=false\n"), "{stored}");
    assert!(!stored.contains("unknownKey"));
    assert_eq!(
        f.call(&RemotingCommand::request(RequestCode::UpdateNamesrvConfig))
            .code(),
        0
    );
}

#[test]
fn topic_lists_and_switches() {
    let f = fixture();
    f.register_pair();
    let list = |r: RemotingCommand| -> Vec<String> {
        assert_eq!(r.code(), 0, "{:?}", r.remark());
        fastjson::from_slice::<TopicList>(&r.body.to_bytes())
            .unwrap()
            .topic_list
            .into_iter()
            .collect()
    };
    assert_eq!(
        list(f.call(&RemotingCommand::request(
            RequestCode::GetAllTopicListFromNameserver
        ))),
        ["TBW102", "TopicA", "TopicB"]
    );
    let by_cluster = RemotingCommand::request_with(
        RequestCode::GetTopicsByCluster,
        &GetTopicsByClusterRequestHeader {
            cluster: "DefaultCluster".into(),
        },
    );
    assert_eq!(list(f.call(&by_cluster)), ["TBW102", "TopicA", "TopicB"]);
    let sys = f.call(&RemotingCommand::request(
        RequestCode::GetSystemTopicListFromNs,
    ));
    let sys: TopicList = fastjson::from_slice(&sys.body.to_bytes()).unwrap();
    assert_eq!(sys.broker_addr.as_deref(), Some(MASTER));
    assert!(list(f.call(&RemotingCommand::request(RequestCode::GetUnitTopicList))).is_empty());
    assert!(
        list(f.call(&RemotingCommand::request(
            RequestCode::GetHasUnitSubTopicList
        )))
        .is_empty()
    );
    assert!(
        list(f.call(&RemotingCommand::request(
            RequestCode::GetHasUnitSubUnunitTopicList
        )))
        .is_empty()
    );

    let off = RemotingCommand::request(RequestCode::UpdateNamesrvConfig)
        .with_body("enableTopicList=false\nenableAllTopicList=false\n".to_owned());
    assert_eq!(f.call(&off).code(), 0);
    for code in [
        RequestCode::GetAllTopicListFromNameserver,
        RequestCode::GetUnitTopicList,
        RequestCode::GetHasUnitSubTopicList,
        RequestCode::GetHasUnitSubUnunitTopicList,
    ] {
        let r = f.call(&RemotingCommand::request(code));
        assert_eq!((r.code(), r.remark()), (1, Some("disable")), "{code}");
    }
    let r = f.call(&by_cluster);
    assert_eq!((r.code(), r.remark()), (1, Some("disable")));
}

#[test]
fn write_perm_and_delete_topic() {
    let f = fixture();
    f.register_pair();
    let name = BrokerNameRequestHeader {
        broker_name: "broker-a".into(),
    };
    let r = f.call(&RemotingCommand::request_with(
        RequestCode::WipeWritePermOfBroker,
        &name,
    ));
    assert_eq!((r.code(), r.ext("wipeTopicCount")), (0, Some("3")));
    let r = f.call(&RemotingCommand::request_with(
        RequestCode::AddWritePermOfBroker,
        &name,
    ));
    assert_eq!((r.code(), r.ext("addTopicCount")), (0, Some("3")));

    let del = |cluster: Option<&str>| {
        RemotingCommand::request_with(
            RequestCode::DeleteTopicInNamesrv,
            &DeleteTopicFromNamesrvRequestHeader {
                topic: "TopicA".into(),
                cluster_name: cluster.map(str::to_owned),
            },
        )
    };
    assert_eq!(f.call(&del(Some("Other"))).code(), 0);
    assert_eq!(f.call(&route_request("TopicA", 409, None)).code(), 0);
    assert_eq!(f.call(&del(Some(""))).code(), 0);
    assert_eq!(f.call(&route_request("TopicA", 409, None)).code(), 17);
}

#[test]
fn register_topic_and_member_group() {
    let f = fixture();
    f.register_pair();
    let route = TopicRouteData {
        queue_datas: vec![remoting::protocol::route::QueueData {
            broker_name: "broker-a".into(),
            read_queue_nums: 2,
            write_queue_nums: 2,
            perm: 6,
            topic_sys_flag: 0,
        }],
        ..TopicRouteData::default()
    };
    let req = RemotingCommand::request_with(
        RequestCode::RegisterTopicInNamesrv,
        &TopicRequestHeader {
            topic: "New".into(),
        },
    )
    .with_body(fastjson::to_vec(&route, KeyStyle::Standard).unwrap());
    assert_eq!(f.call(&req).code(), 0);
    assert_eq!(f.call(&route_request("New", 409, None)).code(), 0);
    let mut bad = req.clone();
    bad.body = b"nope".to_vec().into();
    assert_eq!(f.call(&bad).code(), 1);

    let h = GetBrokerMemberGroupRequestHeader {
        cluster_name: "DefaultCluster".into(),
        broker_name: "broker-a".into(),
    };
    let r = f.call(&RemotingCommand::request_with(
        RequestCode::GetBrokerMemberGroup,
        &h,
    ));
    let body: GetBrokerMemberGroupResponseBody = fastjson::from_slice(&r.body.to_bytes()).unwrap();
    assert_eq!(body.broker_member_group.broker_addrs.len(), 2);
}

#[test]
fn unknown_code_is_not_supported() {
    let f = fixture();
    let r = f.call(&RemotingCommand::request(9999));
    assert_eq!(
        (r.code(), r.remark()),
        (3, Some(" request type 9999 not supported"))
    );
    // A known code the name server does not serve.
    let r = f.call(&RemotingCommand::request(RequestCode::SendMessage));
    assert_eq!(r.code(), 3);
}

#[test]
fn crc_is_java_masked() {
    assert_eq!(java_crc32(b"123456789"), 0x4BF4_3926_i32 & 0x7FFF_FFFF);
    assert_eq!(
        java_crc32(b"123456789"),
        i32::try_from(crc32fast::hash(b"123456789") & 0x7FFF_FFFF).unwrap()
    );
    let h = RegisterBrokerRequestHeader::default();
    let mut ext = remoting::ExtFields::new();
    h.write_to(&mut ext);
    assert!(ext.get("bodyCrc32").is_none());
}
