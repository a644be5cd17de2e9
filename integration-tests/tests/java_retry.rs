//! Redelivery and delay with the official Java clients (rocketmq-client 4.9.8 and 5.3.3) through
//! the real `mqnamesrv` + `mqbroker`:
//!
//! - a listener that fails every delivery: the client sends each message back
//!   (CONSUMER_SEND_MSG_BACK) with delay level 1, the broker redelivers it through
//!   `SCHEDULE_TOPIC_XXXX` and `%RETRY%<group>` with reconsumeTimes 1, 2, and after
//!   `maxReconsumeTimes` (2) moves it to `%DLQ%<group>`, where a second group consumes it;
//! - the same with the broker choosing the delay (level 0 on send-back: 3 + reconsumeTimes, 10 s);
//! - messages sent with delay levels 1 and 2 (1 s, 5 s) arrive no earlier than born + delay and
//!   not much later.
//!
//! Runs on its own cluster, or on `SLUICE_TEST_NAMESRV_ADDR` (see `harness::TestCluster`).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use integration_tests::harness::{TestCluster, unique_name};
use integration_tests::java::{JavaTools, Recv, Sent};
use integration_tests::test_each_client_version;

/// Consumers poll the name server every second (`%RETRY%G` is created by the broker after they
/// start) and heartbeat every second (see `PushConsumer --heartbeat-ms` in java/README.md).
const FAST_CLIENT: [&str; 4] = ["--poll-namesrv-ms", "1000", "--heartbeat-ms", "1000"];
/// RocketMQ's default `messageDelayLevel`: 1s 5s 10s 30s 1m ...
const DELAY_LEVEL_MS: [i64; 4] = [0, 1_000, 5_000, 10_000];

/// Sends `count` messages, consumes them with a listener failing every delivery, and checks the
/// redeliveries; returns the sent messages. `retry_delay_level` 0 lets the broker choose.
fn fail_every_delivery(
    java: &JavaTools,
    ns: &str,
    topic: &str,
    group: &str,
    count: usize,
    max_reconsume: u32,
    retry_delay_level: usize,
) -> Vec<Sent> {
    let version = java.version();
    let sent = java.produce(ns, topic, count, &["--tag", "TagR", "--keys"]);
    let deliveries = count * (max_reconsume as usize + 1);
    let mut args = vec![
        "--namesrv".to_owned(),
        ns.to_owned(),
        "--topic".to_owned(),
        topic.to_owned(),
        "--group".to_owned(),
        group.to_owned(),
        "--count".to_owned(),
        deliveries.to_string(),
        "--fail-times".to_owned(),
        "1000".to_owned(),
        "--max-reconsume-times".to_owned(),
        max_reconsume.to_string(),
        "--retry-delay-level".to_owned(),
        retry_delay_level.to_string(),
        "--props".to_owned(),
        "--wait-ms".to_owned(),
        "150000".to_owned(),
    ];
    args.extend(FAST_CLIENT.iter().map(|a| (*a).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = java.run("sluice.it.PushConsumer", &args, Duration::from_secs(200));
    out.assert_ok();

    // The level the broker applies: ours, or 3 + reconsumeTimes.
    let delay_ms = |reconsumed: u32| {
        let level = if retry_delay_level > 0 {
            retry_delay_level
        } else {
            3 + reconsumed as usize
        };
        DELAY_LEVEL_MS[level]
    };
    let recv = Recv::all(out.stdout.lines());
    let mut per_msg: BTreeMap<&str, Vec<&Recv>> = BTreeMap::new();
    for r in &recv {
        per_msg.entry(r.msg_id.as_str()).or_default().push(r);
    }
    for s in &sent {
        let got = per_msg
            .get(s.msg_id.as_str())
            .unwrap_or_else(|| panic!("{version}: {s:?} never delivered:\n{out}"));
        let retries: Vec<u32> = got.iter().filter_map(|r| r.retry).collect();
        assert_eq!(
            retries,
            (0..=max_reconsume).collect::<Vec<_>>(),
            "{version}: RETRY lines of {}:\n{out}",
            s.msg_id
        );
        for (n, r) in got.iter().enumerate() {
            let ctx = format!("{version}: delivery {n} of {s:?}: {r:?}");
            assert_eq!(r.body, format!("msg-{}", s.index), "{ctx}");
            assert_eq!(r.prop("topic"), Some(topic), "{ctx}");
            assert_eq!(r.prop("tags"), Some("TagR"), "{ctx}");
            assert_eq!(r.prop("keys"), s.keys.as_deref(), "{ctx}");
            assert_eq!(r.prop_i64("reconsume"), Some(n as i64), "{ctx}");
        }
        // Each redelivery was stored (re-put from SCHEDULE_TOPIC_XXXX) no earlier than the
        // failure before it plus the delay of its level.
        for (n, pair) in got.windows(2).enumerate() {
            let failed_at = pair[0].prop_i64("recv").unwrap();
            let stored = pair[1].prop_i64("store").unwrap();
            let delay = delay_ms(u32::try_from(n).unwrap());
            assert!(
                stored >= failed_at + delay,
                "{version}: redelivery {} of {} stored {} ms after the failure, level delay {delay} ms",
                n + 1,
                s.msg_id,
                stored - failed_at
            );
            eprintln!(
                "{version} {}: redelivery {} stored {} ms after the failure (delay {delay} ms), \
                 delivered {} ms after that",
                s.msg_id,
                n + 1,
                stored - failed_at,
                pair[1].prop_i64("recv").unwrap() - stored
            );
        }
    }
    assert_eq!(recv.len(), deliveries, "{version}:\n{out}");
    sent
}

/// Consumes `%DLQ%<group>` with another group and checks it holds exactly `sent`.
fn check_dlq(java: &JavaTools, ns: &str, group: &str, sent: &[Sent], max_reconsume: u32) {
    let version = java.version();
    let dlq = format!("%DLQ%{group}");
    let dlq_group = format!("{group}_dlq");
    let count = sent.len().to_string();
    let mut args = vec![
        "--namesrv",
        ns,
        "--topic",
        &dlq,
        "--group",
        &dlq_group,
        "--count",
        &count,
        "--props",
        "--wait-ms",
        "60000",
    ];
    args.extend_from_slice(&FAST_CLIENT);
    let out = java.run("sluice.it.PushConsumer", &args, Duration::from_secs(100));
    out.assert_ok();
    let recv = Recv::all(out.stdout.lines());
    let mut got: BTreeMap<&str, &Recv> = BTreeMap::new();
    for r in &recv {
        assert!(
            got.insert(r.msg_id.as_str(), r).is_none(),
            "{version}: {} twice in {dlq}:\n{out}",
            r.msg_id
        );
    }
    assert_eq!(got.len(), sent.len(), "{version}:\n{out}");
    for s in sent {
        let r = got
            .get(s.msg_id.as_str())
            .unwrap_or_else(|| panic!("{version}: {s:?} not in {dlq}:\n{out}"));
        let ctx = format!("{version}: {s:?} in the DLQ: {r:?}");
        assert_eq!(r.body, format!("msg-{}", s.index), "{ctx}");
        assert_eq!(r.prop("topic"), Some(dlq.as_str()), "{ctx}");
        assert_eq!(r.prop("keys"), s.keys.as_deref(), "{ctx}");
        assert_eq!(
            r.prop_i64("reconsume"),
            Some(i64::from(max_reconsume) + 1),
            "{ctx}"
        );
    }
}

fn retry_then_dlq(version: &str) {
    let started = Instant::now();
    let cluster = TestCluster::start();
    let ns = cluster.namesrv();
    let java = JavaTools::get(version);
    let topic = unique_name("Retry");
    let group = unique_name("RetryG");
    let sent = fail_every_delivery(java, ns, &topic, &group, 3, 2, 1);
    check_dlq(java, ns, &group, &sent, 2);
    eprintln!("{version} retry then DLQ: {:?}", started.elapsed());
}

/// Send-back with delay level 0: the broker picks 3 + reconsumeTimes (10 s for the first retry).
fn retry_broker_delay(version: &str) {
    let started = Instant::now();
    let cluster = TestCluster::start();
    let ns = cluster.namesrv();
    let java = JavaTools::get(version);
    let topic = unique_name("RetryDefault");
    let group = unique_name("RetryDefaultG");
    let sent = fail_every_delivery(java, ns, &topic, &group, 1, 1, 0);
    check_dlq(java, ns, &group, &sent, 1);
    eprintln!(
        "{version} retry with the broker's delay: {:?}",
        started.elapsed()
    );
}

// ---------------------------------------------------------------- delay levels

fn delay_levels(version: &str) {
    let started = Instant::now();
    let cluster = TestCluster::start();
    let ns = cluster.namesrv();
    let java = JavaTools::get(version);
    let topic = unique_name("Delay");
    let group = unique_name("DelayG");

    // A consumer that is already receiving when the delayed messages are sent: what is measured
    // is the broker's delay, not the consumer's start.
    java.produce(ns, &topic, 1, &["--body-prefix", "warm"]);
    let mut args = vec![
        "--namesrv",
        ns,
        "--topic",
        &topic,
        "--group",
        &group,
        "--count",
        "0",
        "--props",
        "--wait-ms",
        "120000",
    ];
    args.extend_from_slice(&FAST_CLIENT);
    let consumer = java.spawn("sluice.it.PushConsumer", &args);
    assert!(
        consumer
            .wait_for_line("RECV ", Duration::from_secs(60))
            .is_some(),
        "{version}: warm-up message not delivered:\n{}",
        consumer.stdout_lines().join("\n")
    );

    let mut sent: Vec<(usize, Sent)> = Vec::new();
    for level in [1usize, 2] {
        let prefix = format!("d{level}");
        let level_s = level.to_string();
        for s in java.produce(
            ns,
            &topic,
            3,
            &["--delay-level", &level_s, "--body-prefix", &prefix],
        ) {
            sent.push((level, s));
        }
    }
    let arrived = consumer.wait_until(Duration::from_secs(60), |lines| {
        Recv::all(lines.iter().map(String::as_str))
            .iter()
            .filter(|r| r.body.starts_with('d'))
            .count()
            >= sent.len()
    });
    let out = consumer.terminate(Duration::from_secs(30));
    assert!(arrived, "{version}: delayed messages missing:\n{out}");
    out.assert_ok();

    let recv = Recv::all(out.stdout.lines());
    for (level, s) in &sent {
        let body = format!("d{level}-{}", s.index);
        let got: Vec<&Recv> = recv.iter().filter(|r| r.body == body).collect();
        assert_eq!(
            got.len(),
            1,
            "{version}: {body} delivered {} times:\n{out}",
            got.len()
        );
        let r = got[0];
        let ctx = format!("{version}: level {level} {s:?}: {r:?}");
        assert_eq!(r.msg_id, s.msg_id, "{ctx}");
        assert_eq!(r.prop("topic"), Some(topic.as_str()), "{ctx}");
        assert_eq!(r.prop_i64("reconsume"), Some(0), "{ctx}");
        let (born, store, at) = (
            r.prop_i64("born").unwrap(),
            r.prop_i64("store").unwrap(),
            r.prop_i64("recv").unwrap(),
        );
        let due = born + DELAY_LEVEL_MS[*level];
        // RocketMQ counts the delay from the first store timestamp (>= born): never early.
        assert!(store >= due, "{ctx}: stored {} ms before due", due - store);
        assert!(at >= due, "{ctx}: delivered {} ms before due", due - at);
        assert!(
            store - due < 2_000,
            "{ctx}: stored {} ms after due",
            store - due
        );
        assert!(
            at - due < 3_000,
            "{ctx}: delivered {} ms after due",
            at - due
        );
        eprintln!(
            "{version} level {level}: stored {} ms, delivered {} ms after born + delay (delay prop {:?})",
            store - due,
            at - due,
            r.prop("delay")
        );
    }
    eprintln!("{version} delay levels: {:?}", started.elapsed());
}

test_each_client_version!(retry_then_dlq, retry_broker_delay, delay_levels);
