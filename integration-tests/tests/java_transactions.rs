//! Transactional messages with the official Java clients (rocketmq-client 4.9.8 and 5.3.3)
//! through the real `mqnamesrv` + `mqbroker`: `sluice.it.TxProducer` sends with
//! `TransactionMQProducer`, its local transactions commit message i when i % 3 == 0, roll it back
//! when i % 3 == 1 and stay unknown when i % 3 == 2; the broker checks those back
//! (CHECK_TRANSACTION_STATE) and the producer then commits them. A push consumer must then get
//! exactly the committed ones, each once, and the topic must hold nothing else.
//!
//! The broker checks every 2 s for half messages older than 2 s (`transactionCheckInterval`,
//! `transactionTimeOut`; RocketMQ's defaults are 60 s and 6 s). Both leave a producer seconds to
//! answer, so a loaded machine does not get a message checked (and committed) twice.
//!
//! Runs on its own cluster, or on `SLUICE_TEST_NAMESRV_ADDR` (see `harness::TestCluster`; that
//! broker's own check interval then applies, and RocketMQ's 60 s default is slower than the
//! producer's default `--check-wait-ms`).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use integration_tests::harness::{TestCluster, unique_name};
use integration_tests::java::{JavaTools, Recv, Sent};
use integration_tests::test_each_client_version;

/// Messages sent: three of each kind.
const COUNT: usize = 9;
/// Hard timeout of the producer (its sends, the check-backs, the linger).
const PRODUCE_TIMEOUT: Duration = Duration::from_secs(150);
const CONSUME_TIMEOUT: Duration = Duration::from_secs(100);

fn transactions(version: &str) {
    let started = Instant::now();
    let cluster = TestCluster::start_with(&[
        ("transactionCheckInterval", "2000"),
        ("transactionTimeOut", "2000"),
    ]);
    let ns = cluster.namesrv();
    let java = JavaTools::get(version);
    let topic = unique_name("Tx");
    let pgroup = unique_name("TxP");
    let count = COUNT.to_string();

    let out = java.run(
        "sluice.it.TxProducer",
        &[
            "--namesrv",
            ns,
            "--topic",
            &topic,
            "--group",
            &pgroup,
            "--count",
            &count,
            "--check-wait-ms",
            "90000",
        ],
        PRODUCE_TIMEOUT,
    );
    out.assert_ok();
    let sent = Sent::all(out.stdout.lines());
    assert_eq!(sent.len(), COUNT, "{version}:\n{out}");
    for s in &sent {
        assert_eq!(s.status, "SEND_OK", "{version}: {s:?}");
    }
    // Only the unknown ones are checked back, and the producer commits them.
    for check in out.fields("CHECK ") {
        let i: usize = check
            .iter()
            .find_map(|f| f.strip_prefix("i="))
            .and_then(|i| i.parse().ok())
            .unwrap_or(usize::MAX);
        assert_eq!(i % 3, 2, "{version}: check-back of message {i}:\n{out}");
        assert!(
            check.contains(&"answer=COMMIT_MESSAGE"),
            "{version}:\n{out}"
        );
    }
    let expected: BTreeMap<String, &Sent> = sent
        .iter()
        .filter(|s| s.index % 3 != 1)
        .map(|s| (format!("tx-{}", s.index), s))
        .collect();

    let group = unique_name("TxG");
    let want = expected.len().to_string();
    let out = java.run(
        "sluice.it.PushConsumer",
        &[
            "--namesrv",
            ns,
            "--topic",
            &topic,
            "--group",
            &group,
            "--count",
            &want,
            "--from",
            "first",
            "--all-props",
            "--heartbeat-ms",
            "1000",
            "--wait-ms",
            "60000",
        ],
        CONSUME_TIMEOUT,
    );
    out.assert_ok();
    let recv = Recv::all(out.stdout.lines());
    let mut got: BTreeMap<&str, &Recv> = BTreeMap::new();
    for r in &recv {
        assert!(
            got.insert(r.body.as_str(), r).is_none(),
            "{version}: {} delivered twice:\n{out}",
            r.body
        );
    }
    let bodies: Vec<&str> = got.keys().copied().collect();
    let want_bodies: Vec<&str> = expected.keys().map(String::as_str).collect();
    assert_eq!(bodies, want_bodies, "{version}:\n{out}");
    // Committed records: sysFlag COMMIT (8), and TRAN_MSG kept as RocketMQ 4.9 stores it.
    for fields in out.fields("ALLPROPS ") {
        let sys: i32 = fields
            .iter()
            .find_map(|f| f.strip_prefix("sysFlag="))
            .and_then(|v| v.parse().ok())
            .unwrap();
        assert_eq!(sys & 0xC, 0x8, "{version}: {fields:?}");
        assert!(fields.contains(&"p.TRAN_MSG=true"), "{version}: {fields:?}");
    }

    // The topic holds exactly these: nothing rolled back, nothing committed twice.
    let status = java.mqadmin(ns, &["topicStatus", "-t", &topic]);
    status.assert_ok();
    let stored: i64 = status
        .stdout
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (_, min, max) = (
                f.get(1)?.parse::<i32>().ok()?,
                f.get(2)?.parse::<i64>().ok()?,
                f.get(3)?.parse::<i64>().ok()?,
            );
            Some(max - min)
        })
        .sum();
    assert_eq!(
        stored,
        i64::try_from(expected.len()).unwrap(),
        "{version}:\n{status}"
    );
    eprintln!("{version} transactions: {:?}", started.elapsed());
}

test_each_client_version!(transactions);
