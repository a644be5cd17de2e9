//! The official Java tools against the real `mqnamesrv`: `mqadmin` (rocketmq-tools)
//! `clusterList` / `topicList` / `topicRoute`, and rocketmq-client's
//! `DefaultMQProducer.fetchPublishMessageQueues`, for RocketMQ 4.9.8 and 5.3.3.
//! The broker is a registration made with our own client (no broker process yet).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::time::Duration;

use integration_tests::client::FakeBroker;
use integration_tests::harness::NamesrvProcess;
use integration_tests::java::{JavaTools, VERSIONS};
use integration_tests::ports;

fn cluster(ns: &str) -> (FakeBroker, FakeBroker, String) {
    let master_addr = ports::reserve().addr().to_string();
    let slave_addr = ports::reserve().addr().to_string();
    let mut master = FakeBroker::master(ns, "broker-a", &master_addr)
        .with_topic("TopicTest", 8, 6)
        .with_topic("TBW102", 8, 7)
        .with_topic("ReadOnly", 2, 4);
    assert_eq!(master.register().code(), 0);
    let mut slave = FakeBroker::new(ns, "broker-a", 1, &slave_addr).with_topic("TopicTest", 8, 6);
    assert_eq!(slave.register().code(), 0);
    (master, slave, master_addr)
}

#[test]
fn mqadmin_and_producer_route_lookups() {
    integration_tests::require_tools!(Java, Maven);
    let ns = NamesrvProcess::start();
    let (_master, _slave, master_addr) = cluster(&ns.addr());
    for version in VERSIONS {
        let java = JavaTools::get(version);

        let clusters = java.mqadmin(&ns.addr(), &["clusterList"]);
        assert!(
            clusters.stdout.starts_with("#Cluster Name"),
            "{version}: {}",
            clusters.stdout
        );
        // One row per broker address: cluster, name, id, address. (The per-broker
        // runtime query fails: there is no broker process behind the registration.)
        let rows: Vec<Vec<&str>> = clusters
            .stdout
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert!(
            rows.iter()
                .any(|r| r[..4] == ["DefaultCluster", "broker-a", "0", master_addr.as_str()]),
            "{version}: {rows:?}"
        );
        assert!(
            rows.iter()
                .any(|r| r[..3] == ["DefaultCluster", "broker-a", "1"]),
            "{version}: {rows:?}"
        );

        let topics = java.mqadmin(&ns.addr(), &["topicList"]);
        topics.assert_ok();
        let listed: Vec<&str> = topics.stdout.lines().map(str::trim).collect();
        for t in ["TopicTest", "TBW102", "ReadOnly"] {
            assert!(
                listed.contains(&t),
                "{version}: {t} missing from {listed:?}"
            );
        }

        let route = java.mqadmin(&ns.addr(), &["topicRoute", "-t", "TopicTest"]);
        route.assert_ok();
        assert!(
            route.stdout.contains("\"brokerName\":\"broker-a\""),
            "{version}: {}",
            route.stdout
        );
        assert!(
            route.stdout.contains(&master_addr),
            "{version}: {}",
            route.stdout
        );
        assert!(
            route.stdout.contains("\"writeQueueNums\":8"),
            "{version}: {}",
            route.stdout
        );

        let missing = java.mqadmin(&ns.addr(), &["topicRoute", "-t", "NoSuchTopic"]);
        missing.assert_failed();
        assert!(
            missing
                .stderr
                .contains("No topic route info in name server for the topic: NoSuchTopic"),
            "{version}: {}",
            missing.stderr
        );

        let probe = java.run(
            "sluice.it.RouteProbe",
            &[
                "--namesrv",
                &ns.addr(),
                "--topic",
                "TopicTest",
                "--wait-ms",
                "10000",
            ],
            Duration::from_secs(60),
        );
        probe.assert_ok();
        let queues = probe.fields("QUEUE ");
        assert_eq!(queues.len(), 8, "{version}: {queues:?}");
        assert!(queues.iter().all(|q| q[0] == "broker-a"));

        // A read-only topic has no queues a producer may write to.
        let ro = java.run(
            "sluice.it.RouteProbe",
            &[
                "--namesrv",
                &ns.addr(),
                "--topic",
                "ReadOnly",
                "--wait-ms",
                "3000",
            ],
            Duration::from_secs(60),
        );
        assert!(ro.fields("QUEUE ").is_empty(), "{version}: {}", ro.stdout);
    }
}
