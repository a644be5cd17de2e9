//! Consumer offsets survive a broker restart, with the official Java push consumer
//! (rocketmq-client 4.9.8 and 5.3.3) and the real `mqnamesrv` + `mqbroker`: a group consumes the
//! first half of a topic and stops cleanly (its offsets committed), the second half is sent, the
//! broker restarts on the same store, and the group — told to start from the first offset when it
//! has none — receives only the second half.
//!
//! Runs on its own cluster. On an external one (`SLUICE_TEST_NAMESRV_ADDR`, see
//! `harness::TestCluster`) it needs `SLUICE_TEST_BROKER_RESTART_CMD` to restart that broker, and
//! is skipped (with a note) without it.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use integration_tests::harness::cluster::EXTERNAL_RESTART_ENV;
use integration_tests::harness::{ChildOutput, TestCluster, unique_name};
use integration_tests::java::{JavaTools, Recv};
use integration_tests::test_each_client_version;

const HALF: usize = 20;

/// Consumes `HALF` messages with `group` from the first offset (when it has none) and stops
/// cleanly; `wait_ms` long enough for a rebalance interval or two.
fn consume_half(java: &JavaTools, ns: &str, topic: &str, group: &str) -> ChildOutput {
    let count = HALF.to_string();
    let out = java.run(
        "sluice.it.PushConsumer",
        &[
            "--namesrv",
            ns,
            "--topic",
            topic,
            "--group",
            group,
            "--count",
            &count,
            "--from",
            "first",
            "--heartbeat-ms",
            "1000",
            "--wait-ms",
            "60000",
        ],
        Duration::from_secs(100),
    );
    out.assert_ok();
    out
}

fn bodies(out: &ChildOutput) -> Vec<String> {
    Recv::all(out.stdout.lines())
        .into_iter()
        .map(|r| r.body)
        .collect()
}

fn offsets_survive_restart(version: &str) {
    let started = Instant::now();
    let mut cluster = TestCluster::start();
    if cluster.is_external() && std::env::var_os(EXTERNAL_RESTART_ENV).is_none() {
        eprintln!(
            "{version}: skipped, the external broker cannot be restarted without {EXTERNAL_RESTART_ENV}"
        );
        return;
    }
    let ns = cluster.namesrv().to_owned();
    let java = JavaTools::get(version);
    let topic = unique_name("Offsets");
    let group = unique_name("OffsetsG");

    java.produce(&ns, &topic, HALF, &["--body-prefix", "first"]);
    let out = consume_half(java, &ns, &topic, &group);
    let first = bodies(&out);
    let expected_first: BTreeSet<String> = (0..HALF).map(|i| format!("first-{i}")).collect();
    assert_eq!(
        first.iter().cloned().collect::<BTreeSet<_>>(),
        expected_first,
        "{version}:\n{out}"
    );

    java.produce(&ns, &topic, HALF, &["--body-prefix", "second"]);
    let restart_at = Instant::now();
    assert!(cluster.restart_broker());
    let restart_took = restart_at.elapsed();

    let out = consume_half(java, &ns, &topic, &group);
    let second = bodies(&out);
    let replayed: Vec<&String> = second.iter().filter(|b| b.starts_with("first-")).collect();
    assert!(
        replayed.is_empty(),
        "{version}: consumed again after the restart: {replayed:?}\n{out}"
    );
    let expected_second: BTreeSet<String> = (0..HALF).map(|i| format!("second-{i}")).collect();
    assert_eq!(
        second.iter().cloned().collect::<BTreeSet<_>>(),
        expected_second,
        "{version}:\n{out}"
    );
    eprintln!(
        "{version} offsets: first run {} deliveries, after the restart {} (duplicates {}); \
         restart {restart_took:?}; total {:?}",
        first.len(),
        second.len(),
        second.len() - expected_second.len(),
        started.elapsed()
    );
}

test_each_client_version!(offsets_survive_restart);
