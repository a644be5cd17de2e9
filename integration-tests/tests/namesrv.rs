//! `mqnamesrv` as a real process on loopback: broker registration and routes as the
//! standard clients see them, KV config persistence across a restart, and bad input
//! on the wire, which must cost the sender its connection and nobody else anything.
#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed step should fail the test loudly"
)]

use integration_tests::spawn::GatedCommand;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use integration_tests::client::{FakeBroker, SyncClient};
use integration_tests::harness::{NamesrvProcess, binary};
use remoting::frame::FrameDecoder;
use remoting::protocol::body::{KvTable, TopicList, text_to_properties};
use remoting::protocol::namesrv::{
    GetKvListByNamespaceRequestHeader, GetRouteInfoRequestHeader, GetTopicsByClusterRequestHeader,
    KvConfigKeyRequestHeader, PutKvConfigRequestHeader, QueryDataVersionRequestHeader,
    UnregisterBrokerRequestHeader,
};
use remoting::protocol::route::{ClusterInfo, TopicRouteData};
use remoting::protocol::topic::DataVersion;
use remoting::{RemotingCommand, RequestCode, fastjson};

const MASTER: &str = "127.0.0.1:10911";
const SLAVE: &str = "127.0.0.1:10921";

fn route_request(
    topic: &str,
    version: i32,
    accept_standard_json_only: Option<bool>,
) -> RemotingCommand {
    let mut r = RemotingCommand::request_with(
        RequestCode::GetRouteinfoByTopic,
        &GetRouteInfoRequestHeader {
            topic: topic.to_owned(),
            accept_standard_json_only,
        },
    );
    r.header.version = version;
    r
}

fn body_text(r: &RemotingCommand) -> String {
    String::from_utf8(r.body.to_bytes().to_vec()).expect("UTF-8 body")
}

fn route(client: &SyncClient, ns: &str, topic: &str) -> Option<TopicRouteData> {
    let r = client.invoke(ns, route_request(topic, 409, None));
    match r.code() {
        0 => Some(fastjson::from_slice(&r.body.to_bytes()).expect("route JSON")),
        17 => None,
        other => panic!("unexpected route response {other}: {:?}", r.remark()),
    }
}

/// Waits (checking every 20 ms) until `done` holds; returns how long that took.
#[track_caller]
fn wait_until(what: &str, timeout: Duration, done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    assert!(
        test_support::wait_until_every(Duration::from_millis(20), timeout, done),
        "{what}: not within {timeout:?}"
    );
    started.elapsed()
}

fn master_and_slave(ns: &str) -> (FakeBroker, FakeBroker) {
    let mut master = FakeBroker::master(ns, "broker-a", MASTER)
        .with_topic("TopicA", 4, 6)
        .with_topic("TopicB", 8, 6);
    let mut slave = FakeBroker::new(ns, "broker-a", 1, SLAVE)
        .with_topic("TopicA", 4, 6)
        .with_topic("TopicB", 8, 6);
    let r = master.register();
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    assert_eq!(r.ext("masterAddr"), None);
    let r = slave.register();
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    assert_eq!(
        r.ext("masterAddr"),
        Some(MASTER),
        "a slave learns its master"
    );
    assert_eq!(
        r.ext("haServerAddr"),
        Some("127.0.0.1:10912"),
        "and the master's HA address"
    );
    (master, slave)
}

#[test]
fn registration_routes_cluster_info_and_topic_lists() {
    let ns = NamesrvProcess::start();
    let addr = ns.addr();
    let (master, mut slave) = master_and_slave(&addr);
    let client = SyncClient::new();

    // Route JSON: bare keys for old clients (Go sends 317), quoted for >= 401 or on request.
    let bare = body_text(&client.invoke(&addr, route_request("TopicA", 317, None)));
    assert!(
        bare.contains(r#""brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"}"#),
        "{bare}"
    );
    for request in [
        route_request("TopicA", 409, None),
        route_request("TopicA", 317, Some(true)),
    ] {
        let text = body_text(&client.invoke(&addr, request));
        assert!(
            text.contains(r#""brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"}"#),
            "{text}"
        );
    }
    let a = route(&client, &addr, "TopicA").expect("TopicA route");
    assert_eq!(a.queue_datas.len(), 1);
    let qd = &a.queue_datas[0];
    assert_eq!(
        (
            qd.broker_name.as_str(),
            qd.read_queue_nums,
            qd.write_queue_nums,
            qd.perm
        ),
        ("broker-a", 4, 4, 6)
    );
    assert_eq!(a.broker_datas[0].cluster, "DefaultCluster");
    assert_eq!(
        route(&client, &addr, "TBW102").expect("TBW102").queue_datas[0].perm,
        7
    );

    let missing = client.invoke(&addr, route_request("NoSuchTopic", 409, None));
    assert_eq!(missing.code(), 17);
    assert!(
        missing.remark().is_some_and(
            |r| r.starts_with("No topic route info in name server for the topic: NoSuchTopic")
        ),
        "{:?}",
        missing.remark()
    );

    // Cluster info: always bare keys.
    let ci = client.invoke(
        &addr,
        RemotingCommand::request(RequestCode::GetBrokerClusterInfo),
    );
    let text = body_text(&ci);
    assert!(
        text.contains(r#"{0:"127.0.0.1:10911",1:"127.0.0.1:10921"}"#),
        "{text}"
    );
    let ci: ClusterInfo = fastjson::from_slice(text.as_bytes()).unwrap();
    assert!(ci.cluster_addr_table["DefaultCluster"].contains("broker-a"));

    // Topic lists.
    let topics = |r: RemotingCommand| -> Vec<String> {
        assert_eq!(r.code(), 0, "{:?}", r.remark());
        fastjson::from_slice::<TopicList>(&r.body.to_bytes())
            .unwrap()
            .topic_list
            .into_iter()
            .collect()
    };
    let all = topics(client.invoke(
        &addr,
        RemotingCommand::request(RequestCode::GetAllTopicListFromNameserver),
    ));
    assert_eq!(all, ["TBW102", "TopicA", "TopicB"]);
    let by_cluster = RemotingCommand::request_with(
        RequestCode::GetTopicsByCluster,
        &GetTopicsByClusterRequestHeader {
            cluster: "DefaultCluster".into(),
        },
    );
    assert_eq!(topics(client.invoke(&addr, by_cluster)), all);
    let sys = topics(client.invoke(
        &addr,
        RemotingCommand::request(RequestCode::GetSystemTopicListFromNs),
    ));
    assert_eq!(sys, ["DefaultCluster", "broker-a"]);

    // QUERY_DATA_VERSION.
    let query = |dv: &DataVersion| {
        let h = QueryDataVersionRequestHeader {
            broker_name: "broker-a".into(),
            broker_addr: MASTER.into(),
            cluster_name: "DefaultCluster".into(),
            broker_id: 0,
        };
        let request = RemotingCommand::request_with(RequestCode::QueryDataVersion, &h)
            .with_body(fastjson::to_vec(dv, fastjson::KeyStyle::Fastjson).unwrap());
        client.invoke(&addr, request)
    };
    let r = query(&master.data_version);
    assert_eq!((r.code(), r.ext("changed")), (0, Some("false")));
    let held: DataVersion = fastjson::from_slice(&r.body.to_bytes()).unwrap();
    assert_eq!(held, master.data_version);
    let mut newer = master.data_version.clone();
    newer.counter += 1;
    assert_eq!(query(&newer).ext("changed"), Some("true"));

    // Unregistering the slave leaves the master.
    assert_eq!(slave.unregister().code(), 0);
    let a = route(&client, &addr, "TopicA").unwrap();
    assert_eq!(
        a.broker_datas[0]
            .broker_addrs
            .keys()
            .copied()
            .collect::<Vec<_>>(),
        [0]
    );

    // Unregistering the master (as another client would) removes the routes.
    let unregister = RemotingCommand::request_with(
        RequestCode::UnregisterBroker,
        &UnregisterBrokerRequestHeader {
            broker_name: "broker-a".into(),
            broker_addr: MASTER.into(),
            cluster_name: "DefaultCluster".into(),
            broker_id: 0,
        },
    );
    assert_eq!(client.invoke(&addr, unregister).code(), 0);
    assert!(route(&client, &addr, "TopicA").is_none());
    let ci: ClusterInfo = fastjson::from_slice(
        &client
            .invoke(
                &addr,
                RemotingCommand::request(RequestCode::GetBrokerClusterInfo),
            )
            .body
            .to_bytes(),
    )
    .unwrap();
    assert!(ci.broker_addr_table.is_empty() && ci.cluster_addr_table.is_empty());
    drop(master);
}

#[test]
fn closed_connection_and_expiry_remove_the_broker() {
    let mut ns = NamesrvProcess::start_with(&[("scanNotActiveBrokerInterval", "100")]);
    let addr = ns.addr();
    let client = SyncClient::new();

    // Closing the broker's connection removes it at once (not after 120 s).
    let (mut master, slave) = master_and_slave(&addr);
    master.disconnect();
    wait_until(
        "master removed after its connection closed",
        Duration::from_secs(3),
        || {
            route(&client, &addr, "TopicA")
                .is_some_and(|r| !r.broker_datas[0].broker_addrs.contains_key(&0))
        },
    );
    drop(slave);
    wait_until(
        "slave removed after its connection closed",
        Duration::from_secs(3),
        || route(&client, &addr, "TopicA").is_none(),
    );

    // A broker that stops sending heartbeats expires after its heartbeatTimeoutMillis (5.x).
    let mut quiet =
        FakeBroker::master(&addr, "broker-q", "127.0.0.1:30911").with_topic("TopicQ", 2, 6);
    quiet.header.heartbeat_timeout_millis = Some(400);
    let registered = Instant::now();
    assert_eq!(quiet.register().code(), 0);
    assert!(route(&client, &addr, "TopicQ").is_some());
    wait_until("quiet broker expired", Duration::from_secs(5), || {
        route(&client, &addr, "TopicQ").is_none()
    });
    assert!(registered.elapsed() >= Duration::from_millis(400));
    assert!(ns.process().is_running());
}

fn kv_put(client: &SyncClient, addr: &str, ns: &str, key: &str, value: &str) -> RemotingCommand {
    let h = PutKvConfigRequestHeader {
        namespace: ns.into(),
        key: key.into(),
        value: value.into(),
    };
    client.invoke(
        addr,
        RemotingCommand::request_with(RequestCode::PutKvConfig, &h),
    )
}

fn kv_get(client: &SyncClient, addr: &str, ns: &str, key: &str) -> RemotingCommand {
    let h = KvConfigKeyRequestHeader {
        namespace: ns.into(),
        key: key.into(),
    };
    client.invoke(
        addr,
        RemotingCommand::request_with(RequestCode::GetKvConfig, &h),
    )
}

#[test]
fn kv_config_round_trip_and_persistence_across_restart() {
    let mut ns = NamesrvProcess::start();
    let addr = ns.addr();
    let client = SyncClient::new();

    let r = kv_get(&client, &addr, "NS", "k");
    assert_eq!(
        (r.code(), r.remark()),
        (22, Some("No config item, Namespace: NS Key: k"))
    );
    assert_eq!(kv_put(&client, &addr, "NS", "k", "v1").code(), 0);
    assert_eq!(kv_put(&client, &addr, "NS", "gone", "x").code(), 0);
    assert_eq!(
        kv_put(&client, &addr, "ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4").code(),
        0
    );
    let r = kv_get(&client, &addr, "NS", "k");
    assert_eq!((r.code(), r.ext("value")), (0, Some("v1")));
    let delete = RemotingCommand::request_with(
        RequestCode::DeleteKvConfig,
        &KvConfigKeyRequestHeader {
            namespace: "NS".into(),
            key: "gone".into(),
        },
    );
    assert_eq!(client.invoke(&addr, delete).code(), 0);
    let list = |client: &SyncClient, addr: &str, ns: &str| {
        client.invoke(
            addr,
            RemotingCommand::request_with(
                RequestCode::GetKvlistByNamespace,
                &GetKvListByNamespaceRequestHeader {
                    namespace: ns.into(),
                },
            ),
        )
    };
    let table: KvTable = fastjson::from_slice(&list(&client, &addr, "NS").body.to_bytes()).unwrap();
    assert_eq!(
        table.table.into_iter().collect::<Vec<_>>(),
        [("k".to_owned(), "v1".to_owned())]
    );
    let r = list(&client, &addr, "Nothing");
    assert_eq!(
        (r.code(), r.remark()),
        (22, Some("No config item, Namespace: Nothing"))
    );

    // RocketMQ's file format.
    let file = std::fs::read_to_string(ns.kv_config_path()).unwrap();
    assert_eq!(
        file,
        r#"{"configTable":{"NS":{"k":"v1"},"ORDER_TOPIC_CONFIG":{"TopicA":"broker-a:4"}}}"#
    );

    // SIGTERM: graceful, exit 0; the table comes back after a restart.
    client.close_all();
    let status = ns.process().stop().expect("was running");
    assert!(status.success(), "mqnamesrv exited with {status}");
    ns.restart();
    let addr = ns.addr();
    let client = SyncClient::new();
    let r = kv_get(&client, &addr, "NS", "k");
    assert_eq!((r.code(), r.ext("value")), (0, Some("v1")));
    assert_eq!(kv_get(&client, &addr, "NS", "gone").code(), 22);

    // The order config reaches brokers and, with orderMessageEnable, routes.
    let mut master = FakeBroker::master(&addr, "broker-a", MASTER).with_topic("TopicA", 4, 6);
    let r = master.register();
    let table: KvTable = fastjson::from_slice(&r.body.to_bytes()).unwrap();
    assert_eq!(table.table["TopicA"], "broker-a:4");
    assert!(
        route(&client, &addr, "TopicA")
            .unwrap()
            .order_topic_conf
            .is_none()
    );
    let update = RemotingCommand::request(RequestCode::UpdateNamesrvConfig)
        .with_body("orderMessageEnable=true\n".to_owned());
    assert_eq!(client.invoke(&addr, update).code(), 0);
    assert_eq!(
        route(&client, &addr, "TopicA")
            .unwrap()
            .order_topic_conf
            .as_deref(),
        Some("broker-a:4")
    );
}

#[test]
fn namesrv_config_get_and_black_list() {
    let ns = NamesrvProcess::start();
    let addr = ns.addr();
    let client = SyncClient::new();
    let r = client.invoke(
        &addr,
        RemotingCommand::request(RequestCode::GetNamesrvConfig),
    );
    let props = text_to_properties(&body_text(&r));
    assert_eq!(
        props["listenPort"],
        ns.socket_addr().port().to_string(),
        "the bound port is reported"
    );
    assert_eq!(props["bindAddress"], "127.0.0.1");
    let update = RemotingCommand::request(RequestCode::UpdateNamesrvConfig)
        .with_body("kvConfigPath=/tmp/elsewhere\n".to_owned());
    let r = client.invoke(&addr, update);
    assert_eq!(
        (r.code(), r.remark()),
        (16, Some("Can not update config in black list."))
    );
}

#[test]
fn config_files_load_and_print() {
    let mqnamesrv = binary("nameserver", "mqnamesrv");
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/namesrv.toml");
    let out = Command::new(&mqnamesrv)
        .arg("-c")
        .arg(&deploy)
        .arg("-p")
        .gated_output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = text_to_properties(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(printed["listenPort"], "9876");
    assert_eq!(printed["scanNotActiveBrokerInterval"], "5000");

    // A RocketMQ namesrv.conf (properties) works as is.
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("namesrv.conf");
    std::fs::write(&conf, "# RocketMQ style\nlistenPort=19876\norderMessageEnable=true\nkvConfigPath=/tmp/x/kv.json\n").unwrap();
    let out = Command::new(&mqnamesrv)
        .arg("-c")
        .arg(&conf)
        .arg("-p")
        .gated_output()
        .unwrap();
    let printed = text_to_properties(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        (
            printed["listenPort"].as_str(),
            printed["orderMessageEnable"].as_str()
        ),
        ("19876", "true")
    );

    // Bad settings: a clear error and a non-zero exit.
    let out = Command::new(&mqnamesrv)
        .args(["-o", "listenPort=many", "-p"])
        .gated_output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("listenPort"));
}

// ---------------------------------------------------------------- raw wire

/// A connection speaking raw bytes, to send what no client would.
struct RawConn {
    stream: TcpStream,
    buf: BytesMut,
    next_opaque: i32,
}

impl RawConn {
    fn connect(addr: &str) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        RawConn {
            stream,
            buf: BytesMut::new(),
            next_opaque: 1,
        }
    }

    fn send_bytes(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    fn send(&mut self, mut cmd: RemotingCommand) -> i32 {
        let opaque = self.next_opaque;
        self.next_opaque += 1;
        cmd.header.opaque = opaque;
        let mut out = BytesMut::new();
        cmd.encode(&mut out).unwrap();
        self.send_bytes(&out);
        opaque
    }

    fn recv(&mut self) -> RemotingCommand {
        let decoder = FrameDecoder::default();
        loop {
            if let Some(frame) = decoder.decode(&mut self.buf).unwrap() {
                return RemotingCommand::from_frame(frame).unwrap();
            }
            let mut chunk = [0u8; 4096];
            let n = self
                .stream
                .read(&mut chunk)
                .expect("response before the read timeout");
            assert!(n > 0, "connection closed while waiting for a response");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn request(&mut self, cmd: RemotingCommand) -> RemotingCommand {
        let opaque = self.send(cmd);
        let response = self.recv();
        assert!(response.is_response());
        assert_eq!(response.opaque(), opaque);
        response
    }

    /// Asserts the server closes the connection (EOF, or a reset if it closed with
    /// our bytes unread).
    fn assert_closed(&mut self, what: &str) {
        let mut chunk = [0u8; 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => panic!("{what}: got {n} bytes instead of EOF"),
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("{what}: connection not closed: {e}"),
            }
        }
    }
}

fn frame(word: u32, header: &[u8]) -> Vec<u8> {
    let len = i32::try_from(4 + header.len()).unwrap();
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(&word.to_be_bytes());
    out.extend_from_slice(header);
    out
}

fn json_frame(header: &str) -> Vec<u8> {
    frame(u32::try_from(header.len()).unwrap(), header.as_bytes())
}

fn cluster_info_ok(conn: &mut RawConn) {
    let r = conn.request(RemotingCommand::request(RequestCode::GetBrokerClusterInfo));
    assert_eq!(r.code(), 0, "{:?}", r.remark());
}

#[test]
fn bad_frames_close_only_their_own_connection() {
    let mut ns = NamesrvProcess::start();
    let addr = ns.addr();
    let with_len = |len: i32, rest: &[u8]| {
        let mut v = len.to_be_bytes().to_vec();
        v.extend_from_slice(rest);
        v
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "frame over the maximum length",
            with_len(16 * 1024 * 1024 + 1, &[0, 0, 0, 0]),
        ),
        ("negative length", with_len(-8, &[0, 0, 0, 0, 0, 0, 0, 0])),
        ("length shorter than the header word", with_len(2, &[0, 0])),
        (
            "header length larger than the frame",
            with_len(8, &[0, 0, 1, 0, b'{', b'}', b' ', b' ']),
        ),
        ("unknown serialize type", frame(0x0500_0002, b"{}")),
        (
            "JSON header that does not parse",
            json_frame("{\"code\":105,\"opaque\":"),
        ),
        ("JSON header that is not an object", json_frame("[105]")),
        (
            "header without a code",
            json_frame(r#"{"flag":0,"language":"JAVA","opaque":1,"version":409}"#),
        ),
        (
            "truncated ROCKETMQ binary header",
            frame(0x0100_0003, &[0, 105, 0]),
        ),
        (
            "ROCKETMQ header whose remark runs past its end",
            frame(
                0x0100_0013,
                &[
                    0, 105, 0, 1, 153, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x10, 0, b'x',
                ],
            ),
        ),
    ];
    for (what, bytes) in cases {
        // A healthy connection opened before the bad one.
        let mut good = RawConn::connect(&addr);
        cluster_info_ok(&mut good);
        let mut bad = RawConn::connect(&addr);
        bad.send_bytes(&bytes);
        bad.assert_closed(what);
        cluster_info_ok(&mut good);
        assert!(ns.process().is_running(), "{what}: mqnamesrv died");
    }
    // And a fresh connection still works.
    cluster_info_ok(&mut RawConn::connect(&addr));
}

#[test]
fn unknown_codes_and_bad_headers_keep_the_connection() {
    let ns = NamesrvProcess::start();
    let mut conn = RawConn::connect(&ns.addr());

    let r = conn.request(RemotingCommand::request(9999));
    assert_eq!(
        (r.code(), r.remark()),
        (3, Some(" request type 9999 not supported"))
    );

    // Missing required header field: SYSTEM_ERROR, not a dropped connection.
    let r = conn.request(RemotingCommand::request(RequestCode::GetRouteinfoByTopic));
    assert_eq!(
        (r.code(), r.remark()),
        (1, Some("the custom field <topic> is null"))
    );
    let mut bad_id = RemotingCommand::request(RequestCode::UnregisterBroker);
    for (k, v) in [
        ("brokerName", "b"),
        ("brokerAddr", "127.0.0.1:1"),
        ("clusterName", "c"),
        ("brokerId", "x"),
    ] {
        bad_id.header.ext_fields.insert(k, v);
    }
    let r = conn.request(bad_id);
    assert_eq!(r.code(), 1);
    assert!(
        r.remark().is_some_and(|m| m.contains("brokerId")),
        "{:?}",
        r.remark()
    );

    // A malformed body: SYSTEM_ERROR with a remark.
    let mut register = FakeBroker::master(&ns.addr(), "broker-a", MASTER).register_request();
    register.header.ext_fields.remove("bodyCrc32");
    register.body = b"{\"topicConfigSerializeWrapper\":".to_vec().into();
    let r = conn.request(register);
    assert_eq!(r.code(), 1);
    assert!(
        r.remark()
            .is_some_and(|m| m.starts_with("Failed to decode RegisterBrokerBody")),
        "{:?}",
        r.remark()
    );
    let mut wrong_crc = FakeBroker::master(&ns.addr(), "broker-a", MASTER).register_request();
    wrong_crc.header.ext_fields.insert("bodyCrc32", "7");
    let r = conn.request(wrong_crc);
    assert_eq!((r.code(), r.remark()), (1, Some("crc32 not match")));

    // A oneway request is never answered; the next answer is for the next request.
    conn.send(RemotingCommand::request(9999).oneway());
    let r = conn.request(RemotingCommand::request(RequestCode::GetBrokerClusterInfo));
    assert_eq!(r.code(), 0);

    // Binary (ROCKETMQ) headers are served too; the answer comes in the same encoding.
    let mut binary_request = route_request("NoSuchTopic", 409, None);
    binary_request.serialize_type = remoting::SerializeType::RocketMq;
    let r = conn.request(binary_request);
    assert_eq!(
        (r.code(), r.serialize_type),
        (17, remoting::SerializeType::RocketMq)
    );
}
