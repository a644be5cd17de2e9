//! Clustering consumption with the official Java push consumer (rocketmq-client 4.9.8 and 5.3.3)
//! through the real `mqnamesrv` + `mqbroker`: two consumers of one group share a topic's queues
//! (each gets a non-empty, disjoint part of the messages, together all of them); when one leaves
//! (clean shutdown: offsets persisted, client unregistered), the broker tells the other, which
//! takes over every queue and receives everything sent afterwards.
//!
//! Runs on its own cluster, or on `SLUICE_TEST_NAMESRV_ADDR` (see `harness::TestCluster`).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use integration_tests::harness::{ChildProcess, TestCluster, unique_name};
use integration_tests::java::{JavaTools, Recv, last_allocation};
use integration_tests::test_each_client_version;

/// Rebalances are pushed by the broker (NOTIFY_CONSUMER_IDS_CHANGED) and otherwise happen every
/// 20 s; allow a few of those.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(70);
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(70);
const QUEUES: [i32; 4] = [0, 1, 2, 3];

fn bodies_with_prefix(lines: &[String], prefix: &str) -> Vec<String> {
    Recv::all(lines.iter().map(String::as_str))
        .into_iter()
        .map(|r| r.body)
        .filter(|b| b.starts_with(prefix))
        .collect()
}

fn describe(name: &str, p: &ChildProcess) -> String {
    format!("--- consumer {name}:\n{}", p.stdout_lines().join("\n"))
}

fn clustering(version: &str) {
    let started = Instant::now();
    let cluster = TestCluster::start();
    let ns = cluster.namesrv();
    let java = JavaTools::get(version);
    let topic = unique_name("Clustering");
    let group = unique_name("ClusteringG");

    // The topic exists before the consumers start (a consumer learns the route of a topic created
    // later only at its next name server poll, every 30 s).
    java.produce(ns, &topic, 1, &["--body-prefix", "warm"]);
    let args = [
        "--namesrv",
        ns,
        "--topic",
        &topic,
        "--group",
        &group,
        "--count",
        "0",
        "--heartbeat-ms",
        "1000",
        "--wait-ms",
        "300000",
    ];
    let a = java.spawn("sluice.it.PushConsumer", &args);
    assert!(
        a.wait_for_line("STARTED", SETTLE_TIMEOUT).is_some(),
        "{}",
        describe("a", &a)
    );
    let b = java.spawn("sluice.it.PushConsumer", &args);

    // Both see two consumers and split the four queues between them.
    let split_at = Instant::now();
    let mut shares: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (name, p) in [("a", &a), ("b", &b)] {
        let settled = p.wait_until(
            SETTLE_TIMEOUT,
            |lines| matches!(last_allocation(lines, &topic), Some((2, ref q)) if !q.is_empty()),
        );
        assert!(
            settled,
            "{version}: {name} never saw 2 consumers\n{}\n{}",
            describe("a", &a),
            describe("b", &b)
        );
        shares.insert(name, last_allocation(&p.stdout_lines(), &topic).unwrap().1);
    }
    let mut all: Vec<i32> = shares.values().flatten().copied().collect();
    all.sort_unstable();
    assert_eq!(all, QUEUES, "{version}: shares {shares:?}");
    let split_took = split_at.elapsed();

    // Messages sent now go to both.
    let first = java.produce(ns, &topic, 40, &["--body-prefix", "first"]);
    let expected: BTreeSet<String> = first.iter().map(|s| format!("first-{}", s.index)).collect();
    let covered = |a: &ChildProcess, b: &ChildProcess| {
        let mut got: BTreeSet<String> = bodies_with_prefix(&a.stdout_lines(), "first-")
            .into_iter()
            .collect();
        got.extend(bodies_with_prefix(&b.stdout_lines(), "first-"));
        got == expected
    };
    let deadline = Instant::now() + DELIVERY_TIMEOUT;
    while !covered(&a, &b) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        covered(&a, &b),
        "{version}: not everything delivered\n{}\n{}",
        describe("a", &a),
        describe("b", &b)
    );
    let got_a = bodies_with_prefix(&a.stdout_lines(), "first-");
    let got_b = bodies_with_prefix(&b.stdout_lines(), "first-");
    assert!(
        !got_a.is_empty() && !got_b.is_empty(),
        "{version}: one consumer got nothing: a {got_a:?}, b {got_b:?}"
    );
    let set_a: BTreeSet<&String> = got_a.iter().collect();
    let set_b: BTreeSet<&String> = got_b.iter().collect();
    assert!(
        set_a.is_disjoint(&set_b) && set_a.len() == got_a.len() && set_b.len() == got_b.len(),
        "{version}: delivered twice: a {got_a:?}, b {got_b:?}"
    );
    // Each consumer got exactly the messages of its own queues.
    let queue_of: BTreeMap<String, i32> = first
        .iter()
        .map(|s| (format!("first-{}", s.index), s.queue_id))
        .collect();
    for (name, got) in [("a", &got_a), ("b", &got_b)] {
        for body in got {
            assert!(
                shares[name].contains(&queue_of[body]),
                "{version}: {name} got {body} of queue {} outside its share {:?}",
                queue_of[body],
                shares[name]
            );
        }
    }

    // b leaves cleanly; a takes over all queues.
    let left_at = Instant::now();
    let out_b = b.terminate(Duration::from_secs(30));
    out_b.assert_ok();
    let took_over = a.wait_until(SETTLE_TIMEOUT, |lines| {
        last_allocation(lines, &topic) == Some((1, QUEUES.to_vec()))
    });
    assert!(
        took_over,
        "{version}: a never took over all queues\n{}",
        describe("a", &a)
    );
    let takeover_took = left_at.elapsed();

    let second = java.produce(ns, &topic, 40, &["--body-prefix", "second"]);
    let expected: BTreeSet<String> = second
        .iter()
        .map(|s| format!("second-{}", s.index))
        .collect();
    let all_at_a = a.wait_until(DELIVERY_TIMEOUT, |lines| {
        let got: BTreeSet<String> = bodies_with_prefix(lines, "second-").into_iter().collect();
        got == expected
    });
    let out_a = a.terminate(Duration::from_secs(30));
    assert!(
        all_at_a,
        "{version}: a missed messages sent after b left\n{out_a}"
    );
    out_a.assert_ok();
    let lines_a: Vec<String> = out_a.stdout.lines().map(str::to_owned).collect();
    let second_at_a = bodies_with_prefix(&lines_a, "second-");
    assert_eq!(
        second_at_a.len(),
        expected.len(),
        "{version}: duplicates at a: {second_at_a:?}"
    );
    assert!(
        bodies_with_prefix(
            &out_b.stdout.lines().map(str::to_owned).collect::<Vec<_>>(),
            "second-"
        )
        .is_empty(),
        "{version}: b received after it left:\n{out_b}"
    );
    // At-least-once: b's messages delivered again to a (b's offsets not committed in time).
    let redelivered = bodies_with_prefix(&lines_a, "first-")
        .iter()
        .filter(|body| set_b.contains(body))
        .count();
    eprintln!(
        "{version} clustering: shares {shares:?} settled in {split_took:?}; a {} / b {} of 40; \
         takeover {takeover_took:?}; b's messages redelivered to a: {redelivered}; total {:?}",
        got_a.len(),
        got_b.len(),
        started.elapsed()
    );
}

test_each_client_version!(clustering);
