//! The official Java clients (rocketmq-client 4.9.8 and 5.3.3) producing and consuming through
//! the real `mqnamesrv` + `mqbroker`: every send mode (sync, async, oneway, batch) with tags and
//! keys read back by a push consumer, broadcasting, orderly consumption with a
//! MessageQueueSelector, and `DefaultLitePullConsumer` in subscribe and assign mode.
//!
//! Each test starts its own cluster, or uses the one at `SLUICE_TEST_NAMESRV_ADDR` (see
//! `integration_tests::harness::TestCluster`; names are unique per run, so the tests may share it):
//! `SLUICE_TEST_NAMESRV_ADDR=127.0.0.1:9876 cargo test -p integration-tests --test java_consume`.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use integration_tests::harness::{ChildOutput, TestCluster, unique_name};
use integration_tests::java::{JavaTools, Recv, Sent};
use integration_tests::test_each_client_version;

/// Hard timeout of one producer run.
/// How long a consumer waits for everything (first deliveries can take a rebalance interval).
const CONSUME_WAIT_MS: &str = "60000";
const CONSUME_TIMEOUT: Duration = Duration::from_secs(100);
/// Heartbeat interval of the consumers: see `PushConsumer --heartbeat-ms` in java/README.md.
const HEARTBEAT_MS: &str = "1000";

/// Deliveries by body; panics (with the output) on a body seen twice.
fn by_body<'a>(recv: &'a [Recv], out: &ChildOutput) -> BTreeMap<&'a str, &'a Recv> {
    let mut map = BTreeMap::new();
    for r in recv {
        assert!(
            map.insert(r.body.as_str(), r).is_none(),
            "{} delivered twice:\n{out}",
            r.body
        );
    }
    map
}

// ---------------------------------------------------------------- send modes

fn send_modes(version: &str) {
    let started = Instant::now();
    let cluster = TestCluster::start();
    let ns = cluster.namesrv();
    let java = JavaTools::get(version);
    let topic = unique_name("SendModes");
    let per_mode = 10;

    // Sync first: its first send creates the topic (TBW102 auto-create).
    let modes: [(&str, &[&str]); 4] = [
        ("sync", &["--mode", "sync"]),
        ("async", &["--mode", "async"]),
        ("oneway", &["--mode", "oneway"]),
        ("batch", &["--mode", "sync", "--batch", "4"]),
    ];
    let mut sent: BTreeMap<String, (&str, Sent)> = BTreeMap::new();
    for (mode, flags) in modes {
        let keys = format!("{mode}-key");
        let mut extra = vec![
            "--tags",
            "TagA,TagB",
            "--keys-prefix",
            &keys,
            "--body-prefix",
            mode,
        ];
        extra.extend_from_slice(flags);
        for s in java.produce(ns, &topic, per_mode, &extra) {
            let expected_status = if mode == "oneway" {
                "ONEWAY"
            } else {
                "SEND_OK"
            };
            assert_eq!(s.status, expected_status, "{version} {mode}: {s:?}");
            assert_eq!(
                s.keys.as_deref(),
                Some(format!("{keys}-{}", s.index).as_str())
            );
            sent.insert(format!("{mode}-{}", s.index), (mode, s));
        }
    }

    let total = sent.len().to_string();
    let group = unique_name("SendModesG");
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
            &total,
            "--props",
            "--heartbeat-ms",
            HEARTBEAT_MS,
            "--wait-ms",
            CONSUME_WAIT_MS,
        ],
        CONSUME_TIMEOUT,
    );
    // Not assert_ok: a lost oneway message ends the wait with ERR; the sets below say more.
    let recv = Recv::all(out.stdout.lines());
    let got = by_body(&recv, &out);
    let mut oneway_received = 0;
    let mut batch_id_mismatch = Vec::new();
    for (body, (mode, s)) in &sent {
        let Some(r) = got.get(body.as_str()) else {
            assert_eq!(*mode, "oneway", "{version}: {body} never delivered:\n{out}");
            continue;
        };
        let ctx = format!("{version} {body}: sent {s:?}, received {r:?}");
        assert_eq!(r.prop("topic"), Some(topic.as_str()), "{ctx}");
        assert_eq!(r.prop("tags"), s.tag.as_deref(), "{ctx}");
        assert_eq!(r.prop("keys"), s.keys.as_deref(), "{ctx}");
        match *mode {
            "oneway" => {
                oneway_received += 1;
                assert_eq!(r.msg_id, s.msg_id, "{ctx}");
            }
            "batch" => {
                if r.msg_id != s.msg_id {
                    batch_id_mismatch.push(body.clone());
                }
                assert_eq!(
                    (r.queue_id, r.queue_offset),
                    (s.queue_id, s.queue_offset),
                    "{ctx}"
                );
                assert_eq!(
                    r.prop("offsetMsgId"),
                    Some(s.offset_msg_id.as_str()),
                    "{ctx}"
                );
            }
            _ => {
                assert_eq!(r.msg_id, s.msg_id, "{ctx}");
                assert_eq!(
                    (r.queue_id, r.queue_offset),
                    (s.queue_id, s.queue_offset),
                    "{ctx}"
                );
                assert_eq!(
                    r.prop("offsetMsgId"),
                    Some(s.offset_msg_id.as_str()),
                    "{ctx}"
                );
            }
        }
    }
    // Everything delivered was sent.
    for body in got.keys() {
        assert!(
            sent.contains_key(*body),
            "{version}: unexpected {body}:\n{out}"
        );
    }
    eprintln!(
        "{version} send modes: {} delivered of {} sent (oneway {oneway_received}/{per_mode}); \
         batch messages delivered under another msgId than the producer's: {}; {:?}",
        got.len(),
        sent.len(),
        batch_id_mismatch.len(),
        started.elapsed()
    );
}

// ---------------------------------------------------------------- broadcasting

fn broadcasting(version: &str) {
    let started = Instant::now();
    let cluster = TestCluster::start();
    let ns = cluster.namesrv();
    let java = JavaTools::get(version);
    let topic = unique_name("Broadcast");
    let group = unique_name("BroadcastG");
    let count = 20;
    let sent = java.produce(ns, &topic, count, &["--tag", "TagB"]);
    let bodies: BTreeSet<String> = sent.iter().map(|s| format!("msg-{}", s.index)).collect();

    // Two consumers of one group, each with its own (local) offsets: each gets everything.
    let count_s = count.to_string();
    let args = [
        "--namesrv",
        ns,
        "--topic",
        &topic,
        "--group",
        &group,
        "--count",
        &count_s,
        "--broadcast",
        "--heartbeat-ms",
        HEARTBEAT_MS,
        "--wait-ms",
        CONSUME_WAIT_MS,
    ];
    let a = java.spawn("sluice.it.PushConsumer", &args);
    let b = java.spawn("sluice.it.PushConsumer", &args);
    let mut took = Vec::new();
    for (name, p) in [("a", a), ("b", b)] {
        let out = p.wait(CONSUME_TIMEOUT);
        out.assert_ok();
        took.push(out.elapsed);
        let recv = Recv::all(out.stdout.lines());
        let got: BTreeSet<String> = by_body(&recv, &out)
            .keys()
            .map(|b| (*b).to_owned())
            .collect();
        assert_eq!(got, bodies, "{version} consumer {name}:\n{out}");
    }
    eprintln!(
        "{version} broadcasting: consumers took {took:?}; {:?}",
        started.elapsed()
    );
}

// ---------------------------------------------------------------- orderly

fn orderly(version: &str) {
    let started = Instant::now();
    let cluster = TestCluster::start();
    let ns = cluster.namesrv();
    let java = JavaTools::get(version);
    let topic = unique_name("Orderly");
    let group = unique_name("OrderlyG");
    let count = 40;
    let keys = 4;
    let sent = java.produce(
        ns,
        &topic,
        count,
        &["--order-keys", &keys.to_string(), "--body-prefix", "ord"],
    );
    // The selector sends every message of a key to one queue.
    let mut queue_of_key: BTreeMap<String, i32> = BTreeMap::new();
    for s in &sent {
        let key = s.order_key.clone().unwrap();
        assert_eq!(key, format!("k-{}", s.index % keys), "{s:?}");
        let q = *queue_of_key.entry(key).or_insert(s.queue_id);
        assert_eq!(q, s.queue_id, "{version}: key of {s:?} went to two queues");
    }

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
            &count.to_string(),
            "--orderly",
            "--heartbeat-ms",
            HEARTBEAT_MS,
            "--wait-ms",
            CONSUME_WAIT_MS,
        ],
        CONSUME_TIMEOUT,
    );
    out.assert_ok();
    let recv = Recv::all(out.stdout.lines());
    by_body(&recv, &out);
    let mut per_key: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for r in &recv {
        let (key, seq) = r
            .seq
            .clone()
            .unwrap_or_else(|| panic!("no SEQ for {r:?}:\n{out}"));
        assert_eq!(
            Some(&r.queue_id),
            queue_of_key.get(&key),
            "{version}: {r:?} arrived on another queue than it was sent to"
        );
        per_key.entry(key).or_default().push(seq);
    }
    for (key, seqs) in &per_key {
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "{version}: key {key} out of order: {seqs:?}"
        );
    }
    let all: BTreeSet<u64> = per_key.values().flatten().copied().collect();
    assert_eq!(all, (0..count as u64).collect(), "{version}:\n{out}");
    eprintln!("{version} orderly: {:?}", started.elapsed());
}

// ---------------------------------------------------------------- lite pull

fn lite_pull(version: &str) {
    let started = Instant::now();
    let cluster = TestCluster::start();
    let ns = cluster.namesrv();
    let java = JavaTools::get(version);
    let topic = unique_name("LitePull");
    let count = 20;
    let sent = java.produce(ns, &topic, count, &["--tag", "TagL", "--keys"]);
    let bodies: BTreeSet<String> = sent.iter().map(|s| format!("msg-{}", s.index)).collect();
    let count_s = count.to_string();

    let mut runs = Vec::new();
    for mode in ["subscribe", "assign"] {
        let group = unique_name(&format!("LitePull_{mode}"));
        let p = java.spawn(
            "sluice.it.LitePullConsumer",
            &[
                "--namesrv",
                ns,
                "--topic",
                &topic,
                "--group",
                &group,
                "--count",
                &count_s,
                "--mode",
                mode,
                "--props",
                "--heartbeat-ms",
                HEARTBEAT_MS,
                "--wait-ms",
                CONSUME_WAIT_MS,
            ],
        );
        runs.push((mode, p));
    }
    for (mode, p) in runs {
        let out = p.wait(CONSUME_TIMEOUT);
        out.assert_ok();
        let recv = Recv::all(out.stdout.lines());
        let got = by_body(&recv, &out);
        let names: BTreeSet<String> = got.keys().map(|b| (*b).to_owned()).collect();
        assert_eq!(names, bodies, "{version} {mode}:\n{out}");
        for s in &sent {
            let r = got[format!("msg-{}", s.index).as_str()];
            assert_eq!(r.msg_id, s.msg_id, "{version} {mode}: {r:?} vs {s:?}");
            assert_eq!((r.queue_id, r.queue_offset), (s.queue_id, s.queue_offset));
            assert_eq!(r.prop("tags"), Some("TagL"));
            assert_eq!(r.prop("keys"), s.keys.as_deref());
        }
        if mode == "assign" {
            let queues = out.lines_starting_with("ASSIGNED ").len();
            assert_eq!(
                queues, 4,
                "{version}: auto-created topics have 4 queues:\n{out}"
            );
        }
    }
    eprintln!("{version} lite pull: {:?}", started.elapsed());
}

test_each_client_version!(send_modes, broadcasting, orderly, lite_pull);
