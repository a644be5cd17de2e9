//! Our `mqadmin` and `mqbench` as real processes.
//!
//! - Against the real `mqnamesrv` with broker registrations made by [`FakeBroker`]
//!   (these run now): clusterList / topicList / topicRoute, their output compared with the
//!   official Java mqadmin 4.9.8 on the same cluster, and the error paths (exit codes).
//! - Against a broker (ours, or an external cluster through the env vars below): every message,
//!   topic, group and config command end to end, and a short mqbench run. Point them at
//!   any running cluster — Apache RocketMQ's today, ours tomorrow — with
//!   `SLUICE_TEST_NAMESRV_ADDR=127.0.0.1:9876 SLUICE_TEST_BROKER_ADDR=127.0.0.1:10911
//!   cargo test -p integration-tests --test tools_mqadmin -- --ignored`.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use integration_tests::spawn::GatedCommand;
use std::collections::BTreeSet;
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};

use integration_tests::client::FakeBroker;
use integration_tests::harness::{NamesrvProcess, TestCluster, binary, update_topic};
use integration_tests::java::{JavaTools, V4};
use integration_tests::ports;

/// Runs one of our tools with `args`, no inherited `NAMESRV_ADDR`.
fn tool(name: &str, args: &[&str]) -> Output {
    Command::new(binary("tools", name))
        .args(args)
        .env_remove("NAMESRV_ADDR")
        .env("RUST_LOG", "warn")
        .gated_output()
        .unwrap()
}

fn mqadmin(ns: &str, args: &[&str]) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-n", ns]);
    tool("mqadmin", &all)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn assert_ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
    stdout(o)
}

/// The header line of 4.9.8's `clusterList`, byte for byte.
const CLUSTER_LIST_HEADER_498: &str = "#Cluster Name     #Broker Name            #BID  #Addr                  #Version                #InTPS(LOAD)       #OutTPS(LOAD) #PCWait(ms) #Hour #SPACE";

/// `(cluster, name, id, addr)` of each clusterList row.
fn cluster_rows(text: &str) -> BTreeSet<Vec<String>> {
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().take(4).map(str::to_owned).collect())
        .collect()
}

#[test]
fn namesrv_commands_match_the_java_tool() {
    integration_tests::require_tools!(Java, Maven);
    let ns = NamesrvProcess::start();
    let master_addr = ports::reserve().addr().to_string();
    let slave_addr = ports::reserve().addr().to_string();
    let mut master = FakeBroker::master(&ns.addr(), "broker-a", &master_addr)
        .with_topic("TopicTest", 8, 6)
        .with_topic("ReadOnly", 2, 4);
    assert_eq!(master.register().code(), 0);
    let mut slave =
        FakeBroker::new(&ns.addr(), "broker-a", 1, &slave_addr).with_topic("TopicTest", 8, 6);
    assert_eq!(slave.register().code(), 0);
    let java = JavaTools::get(V4);

    // clusterList: same header as 4.9.8, one row per address; the runtime-info call to the
    // (absent) brokers fails and is reported on stderr, the rows are still printed.
    let ours = mqadmin(&ns.addr(), &["clusterList"]);
    let text = assert_ok(&ours);
    assert_eq!(text.lines().next(), Some(CLUSTER_LIST_HEADER_498), "{text}");
    let rows = cluster_rows(&text);
    let expected: BTreeSet<Vec<String>> = [
        vec![
            "DefaultCluster".to_owned(),
            "broker-a".to_owned(),
            "0".to_owned(),
            master_addr.clone(),
        ],
        vec![
            "DefaultCluster".to_owned(),
            "broker-a".to_owned(),
            "1".to_owned(),
            slave_addr.clone(),
        ],
    ]
    .into();
    assert_eq!(rows, expected);
    assert!(stderr(&ours).contains(&master_addr), "{}", stderr(&ours));
    let theirs = java.mqadmin(&ns.addr(), &["clusterList"]);
    assert_eq!(theirs.stdout.lines().next(), Some(CLUSTER_LIST_HEADER_498));
    assert_eq!(
        cluster_rows(&theirs.stdout),
        rows,
        "java:\n{}",
        theirs.stdout
    );

    // topicList: one topic per line, the same set as Java's.
    let ours: BTreeSet<String> = assert_ok(&mqadmin(&ns.addr(), &["topicList"]))
        .lines()
        .map(str::to_owned)
        .collect();
    for t in ["TopicTest", "ReadOnly", "TBW102"] {
        assert!(ours.contains(t), "{t} missing from {ours:?}");
    }
    let theirs = java.mqadmin(&ns.addr(), &["topicList"]);
    theirs.assert_ok();
    let theirs: BTreeSet<String> = theirs.stdout.lines().map(|l| l.trim().to_owned()).collect();
    assert_eq!(ours, theirs);

    // topicRoute: fastjson's pretty JSON. 4.9.8 prints no enableActingMaster (a 5.x field);
    // with that line removed the two are identical.
    let ours = assert_ok(&mqadmin(&ns.addr(), &["topicRoute", "-t", "TopicTest"]));
    assert!(
        ours.contains(&format!(
            "\"brokerAddrs\":{{0:\"{master_addr}\",1:\"{slave_addr}\""
        )),
        "{ours}"
    );
    let theirs = java.mqadmin(&ns.addr(), &["topicRoute", "-t", "TopicTest"]);
    theirs.assert_ok();
    let normalized = ours.replace(",\n\t\t\t\"enableActingMaster\":false", "");
    assert_eq!(
        normalized.trim_end(),
        theirs.stdout.trim_end(),
        "ours:\n{ours}\njava:\n{}",
        theirs.stdout
    );

    // topicRoute -l: the table and its total line.
    let list = assert_ok(&mqadmin(
        &ns.addr(),
        &["topicRoute", "-t", "TopicTest", "-l"],
    ));
    let lines: Vec<&str> = list.lines().collect();
    assert!(lines[0].starts_with("#ClusterName"), "{list}");
    assert!(lines[1].starts_with("DefaultCluster"), "{list}");
    assert!(lines.last().unwrap().starts_with("Total:"), "{list}");

    // A topic the name server does not know: exit 1 with the name server's remark.
    let missing = mqadmin(&ns.addr(), &["topicRoute", "-t", "NoSuchTopic"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stdout(&missing).is_empty());
    let err = stderr(&missing);
    assert!(
        err.contains("CODE: 17")
            && err.contains("No topic route info in name server for the topic: NoSuchTopic"),
        "{err}"
    );

    // A cluster the name server does not know.
    let bad = mqadmin(
        &ns.addr(),
        &["updateTopic", "-c", "NoSuchCluster", "-t", "T"],
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("cluster NoSuchCluster not found"),
        "{}",
        stderr(&bad)
    );

    // Sending needs a broker: the route points at a closed port, a clear failure.
    let send = mqadmin(&ns.addr(), &["sendMessage", "-t", "TopicTest", "-p", "x"]);
    assert_eq!(send.status.code(), Some(1));
    assert!(
        stderr(&send).contains("SEND_MESSAGE_V2 to"),
        "{}",
        stderr(&send)
    );
}

#[test]
fn usage_and_connection_errors_have_exit_codes() {
    // No name server at all.
    let o = tool("mqadmin", &["topicList"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("NAMESRV_ADDR"), "{}", stderr(&o));
    // NAMESRV_ADDR is honoured (a closed port: connect fails).
    let closed = ports::reserve().addr().to_string();
    let o = Command::new(binary("tools", "mqadmin"))
        .args(["topicList"])
        .env("NAMESRV_ADDR", &closed)
        .gated_output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&closed), "{}", stderr(&o));
    // Missing required option, unknown command: clap's usage error, exit 2.
    assert_eq!(
        tool("mqadmin", &["topicRoute", "-n", &closed])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(tool("mqadmin", &["noSuchCommand"]).status.code(), Some(2));
    // switchRole without its broker and role: usage error.
    let o = tool("mqadmin", &["switchRole", "-n", &closed]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--brokerAddr"), "{}", stderr(&o));
    // mqbench without a name server.
    let o = tool("mqbench", &["producer", "-t", "T", "--duration", "1s"]);
    assert_eq!(o.status.code(), Some(1));
}

// ---------------------------------------------------------------- with a broker

/// The cluster under test: ours (name server + broker processes), or an external one
/// through `SLUICE_TEST_NAMESRV_ADDR` and `SLUICE_TEST_BROKER_ADDR`.
struct External {
    _cluster: TestCluster,
    ns: String,
    broker: String,
    cluster: String,
    broker_name: String,
}

fn external() -> External {
    let cluster = TestCluster::start();
    let ns = cluster.namesrv().to_owned();
    let broker = cluster
        .broker_addr()
        .expect("an external cluster needs SLUICE_TEST_BROKER_ADDR too")
        .to_owned();
    // The broker registers right after it starts serving; wait for the name server to know it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let row = loop {
        let list = assert_ok(&mqadmin(&ns, &["clusterList"]));
        if let Some(row) = cluster_rows(&list).into_iter().find(|r| r[3] == broker) {
            break row;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{broker} not in clusterList:\n{list}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    External {
        _cluster: cluster,
        ns,
        broker,
        cluster: row[0].clone(),
        broker_name: row[1].clone(),
    }
}

impl External {
    /// `mqadmin updateTopic` on the broker, with `queues` read and write queues;
    /// returns its standard output.
    fn update_topic(&self, topic: &str, queues: u32) -> String {
        update_topic(&self.ns, ["-b", &self.broker], topic, queues)
            .assert_ok()
            .stdout
            .clone()
    }
}

fn unique(prefix: &str) -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!("{prefix}_{ms}")
}

/// The value after `label` in a queryMsgById-style view.
fn field<'a>(view: &'a str, label: &str) -> &'a str {
    view.lines()
        .find_map(|l| l.strip_prefix(label))
        .map_or("", str::trim)
}

/// After a topic change the broker registers only the changed topics (as RocketMQ
/// 4.9 does); every topic created earlier must stay routable.
#[test]
fn topics_created_one_after_another_all_stay_routable() {
    let c = external();
    let topics: Vec<String> = (0..4).map(|i| unique(&format!("Incr{i}"))).collect();
    for topic in &topics {
        c.update_topic(topic, 1);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    for topic in &topics {
        loop {
            let route = mqadmin(&c.ns, &["topicRoute", "-t", topic]);
            if route.status.success() && stdout(&route).contains(&c.broker) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{topic} has no route through {}: {}{}",
                c.broker,
                stdout(&route),
                stderr(&route)
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

#[test]
fn message_and_topic_commands_against_a_broker() {
    let c = external();
    let topic = unique("ToolsIt");
    let out = c.update_topic(&topic, 2);
    assert!(
        out.contains(&format!("create topic to {} success.", c.broker)),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "TopicConfig [topicName={topic}, readQueueNums=2, writeQueueNums=2, perm=RW-"
        )),
        "{out}"
    );

    // sendMessage to a fixed queue; the result line carries the unique key.
    let sent = assert_ok(&mqadmin(
        &c.ns,
        &[
            "sendMessage",
            "-t",
            &topic,
            "-p",
            "hello sluice",
            "-k",
            "itKey",
            "-c",
            "TagA",
            "-b",
            &c.broker_name,
            "-i",
            "1",
        ],
    ));
    let row: Vec<&str> = sent.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..3], [c.broker_name.as_str(), "1", "SEND_OK"], "{sent}");
    let uniq = row[3].to_owned();

    // queryMsgByKey finds it through the index.
    let by_key = assert_ok(&mqadmin(
        &c.ns,
        &["queryMsgByKey", "-t", &topic, "-k", "itKey"],
    ));
    assert!(by_key.lines().any(|l| l.starts_with(&uniq)), "{by_key}");

    // queryMsgById by unique key, then by the offset id it prints.
    let view = assert_ok(&mqadmin(
        &c.ns,
        &["queryMsgById", "-t", &topic, "-i", &uniq, "-f", "UTF-8"],
    ));
    assert_eq!(field(&view, "Topic:"), topic);
    assert_eq!(field(&view, "Tags:"), "[TagA]");
    assert_eq!(field(&view, "Keys:"), "[itKey]");
    assert_eq!(field(&view, "Queue ID:"), "1");
    assert_eq!(field(&view, "Message Body:"), "hello sluice");
    let offset_id = field(&view, "OffsetID:").to_owned();
    let again = assert_ok(&mqadmin(&c.ns, &["queryMsgById", "-i", &offset_id]));
    assert_eq!(
        field(&again, "Queue Offset:"),
        field(&view, "Queue Offset:")
    );

    // queryMsgByOffset pulls it.
    let by_offset = assert_ok(&mqadmin(
        &c.ns,
        &[
            "queryMsgByOffset",
            "-t",
            &topic,
            "-b",
            &c.broker_name,
            "-i",
            "1",
            "-o",
            "0",
            "-f",
            "UTF-8",
        ],
    ));
    assert_eq!(field(&by_offset, "Message Body:"), "hello sluice");
    let none = mqadmin(
        &c.ns,
        &[
            "queryMsgByOffset",
            "-t",
            &topic,
            "-b",
            &c.broker_name,
            "-i",
            "1",
            "-o",
            "5",
        ],
    );
    assert_eq!(none.status.code(), Some(1));

    // topicStatus: queue 1 has one message.
    let status = assert_ok(&mqadmin(&c.ns, &["topicStatus", "-t", &topic]));
    let q1: Vec<&str> = status
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("1"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(q1[..4], [c.broker_name.as_str(), "1", "0", "1"], "{status}");

    // consumeMessage prints it.
    let consumed = assert_ok(&mqadmin(
        &c.ns,
        &["consumeMessage", "-t", &topic, "-c", "5"],
    ));
    assert!(
        consumed.contains(&format!("MSGID: {uniq}")) && consumed.contains("BODY: hello sluice"),
        "{consumed}"
    );

    // Groups and offsets: create, reset to the start (the group is offline), progress.
    let group = unique("ToolsItGroup");
    let sub = assert_ok(&mqadmin(
        &c.ns,
        &["updateSubGroup", "-c", &c.cluster, "-g", &group],
    ));
    assert!(
        sub.contains(&format!(
            "SubscriptionGroupConfig [groupName={group}, consumeEnable=true"
        )),
        "{sub}"
    );
    let reset = assert_ok(&mqadmin(
        &c.ns,
        &["resetOffsetByTime", "-g", &group, "-t", &topic, "-s", "0"],
    ));
    assert!(reset.contains("#brokerName"), "{reset}");
    let progress = assert_ok(&mqadmin(&c.ns, &["consumerProgress", "-g", &group]));
    assert!(progress.contains("Diff Total: 1"), "{progress}");

    // Broker config and status.
    let config = assert_ok(&mqadmin(&c.ns, &["getBrokerConfig", "-b", &c.broker]));
    assert!(
        config
            .lines()
            .any(|l| l.starts_with("brokerName ") && l.ends_with(&c.broker_name)),
        "{config}"
    );
    assert_ok(&mqadmin(
        &c.ns,
        &[
            "updateBrokerConfig",
            "-b",
            &c.broker,
            "-k",
            "maxMessageSize",
            "-v",
            "4194304",
        ],
    ));
    let status = assert_ok(&mqadmin(&c.ns, &["brokerStatus", "-b", &c.broker]));
    assert!(
        status.lines().any(|l| l.starts_with("brokerVersionDesc")),
        "{status}"
    );

    // deleteTopic: gone from the name server.
    let deleted = assert_ok(&mqadmin(
        &c.ns,
        &["deleteTopic", "-t", &topic, "-c", &c.cluster],
    ));
    assert!(deleted.contains("from NameServer success."), "{deleted}");
    assert_eq!(
        mqadmin(&c.ns, &["topicRoute", "-t", &topic]).status.code(),
        Some(1)
    );
}

#[test]
fn output_matches_the_java_tool_against_a_broker() {
    integration_tests::require_tools!(Java, Maven);
    let c = external();
    let java = JavaTools::get(V4);
    let topic = unique("ToolsJava");
    c.update_topic(&topic, 2);
    assert_ok(&mqadmin(
        &c.ns,
        &["sendMessage", "-t", &topic, "-p", "x", "-k", "jk"],
    ));
    for args in [
        vec!["topicStatus", "-t", topic.as_str()],
        vec!["queryMsgByKey", "-t", topic.as_str(), "-k", "jk"],
    ] {
        let ours = assert_ok(&mqadmin(&c.ns, &args));
        let theirs = java.mqadmin(&c.ns, &args);
        theirs.assert_ok();
        // 4.9.8 prints no "Topic Put TPS" footer (a 5.x line); the rest is identical.
        let ours = ours
            .split("\n\nTopic Put TPS")
            .next()
            .unwrap_or_default()
            .trim_end()
            .to_owned();
        assert_eq!(ours, theirs.stdout.trim_end(), "{args:?}");
    }
}

#[test]
fn mqbench_producer_and_consumer_against_a_broker() {
    let c = external();
    let topic = unique("ToolsBench");
    c.update_topic(&topic, 4);
    let consumer = Command::new(binary("tools", "mqbench"))
        .args([
            "consumer",
            "-n",
            &c.ns,
            "-t",
            &topic,
            "-g",
            "bench_it",
            "--duration",
            "6s",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .gated_spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    for mode in ["sync", "async", "oneway"] {
        let produced = tool(
            "mqbench",
            &[
                "producer",
                "-n",
                &c.ns,
                "-t",
                &topic,
                "--size",
                "128",
                "--threads",
                "2",
                "--duration",
                "1s",
                "--mode",
                mode,
                "--rate",
                "200",
                "--json",
            ],
        );
        let summary: serde_json::Value = serde_json::from_str(&assert_ok(&produced)).unwrap();
        assert!(
            summary["messages"].as_u64().unwrap() > 0,
            "{mode}: {summary}"
        );
        assert_eq!(summary["errors"], 0, "{mode}: {summary}");
    }
    let batch = tool(
        "mqbench",
        &[
            "producer",
            "-n",
            &c.ns,
            "-t",
            &topic,
            "--size",
            "64",
            "--threads",
            "1",
            "--duration",
            "1s",
            "--batch",
            "4",
            "--json",
        ],
    );
    let summary: serde_json::Value = serde_json::from_str(&assert_ok(&batch)).unwrap();
    assert_eq!(summary["messages"].as_u64().unwrap() % 4, 0, "{summary}");
    let out = consumer.wait_with_output().unwrap();
    let summary: serde_json::Value = serde_json::from_str(&assert_ok(&out)).unwrap();
    assert!(summary["messages"].as_u64().unwrap() > 0, "{summary}");
    assert!(summary["latency"]["p50_ms"].as_f64().unwrap() >= 0.0);
}
