//! Apache's Go client (`rocketmq-client-go` v2, see `integration-tests/go`) against the real
//! `mqnamesrv` + `mqbroker`: sync, async, batch and oneway sends to an auto-created topic, and a
//! push consumer that receives every message exactly once.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::thread;
use std::time::{Duration, Instant};

use integration_tests::client::SyncClient;
use integration_tests::go::{
    ClientOutput, GoTools, PRODUCER, PUSH_CONSUMER, Sent, offsets_by_queue,
};
use integration_tests::process::{BrokerProcess, NamesrvProcess};
use remoting::protocol::body::KvTable;
use remoting::{RemotingCommand, RequestCode};

const RUN_TIMEOUT: Duration = Duration::from_secs(90);

fn produce(ns: &str, topic: &str, extra: &[&str]) -> ClientOutput {
    let mut args = vec!["--namesrv", ns, "--topic", topic];
    args.extend_from_slice(extra);
    let out = GoTools::get().run(PRODUCER, &args, RUN_TIMEOUT);
    out.assert_ok();
    out
}

/// `7F000001` + port + commit log offset: the offset msg id of a message stored by `broker`.
fn assert_offset_msg_id(broker: &BrokerProcess, s: &Sent) {
    let port: u16 = broker.addr().rsplit_once(':').unwrap().1.parse().unwrap();
    let prefix = format!("7F000001{port:08X}");
    assert!(
        s.offset_msg_id.len() == 32 && s.offset_msg_id.starts_with(&prefix),
        "offset msg id of {s:?} is not {prefix} + 16 hex digits"
    );
}

/// Waits until `broker` has stored at least `n` messages (`msgPutTotalTodayNow` of
/// GET_BROKER_RUNTIME_INFO): a oneway send reports nothing, and the first send to a new topic
/// waits for the topic's registration with the name server, so later sends from another process
/// can overtake it.
fn wait_for_stored(broker: &BrokerProcess, n: u64) {
    let client = SyncClient::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = client.invoke(
            &broker.addr(),
            RemotingCommand::request(RequestCode::GetBrokerRuntimeInfo),
        );
        assert_eq!(r.code(), 0, "runtime info: {:?}", r.remark());
        let info: KvTable = serde_json::from_slice(&r.body.to_bytes()).unwrap();
        let stored: u64 = info
            .table
            .get("msgPutTotalTodayNow")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if stored >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the broker stored {stored} of {n} messages"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn go_producer_sends_sync_async_and_batch_to_an_auto_created_topic() {
    let ns = NamesrvProcess::start();
    let broker = BrokerProcess::start(&ns.addr());
    let topic = "GoAutoTopic";
    let mut all = Vec::new();
    for (mode, extra) in [
        (
            "sync",
            &[
                "--tag",
                "TagA",
                "--keys-prefix",
                "k",
                "--body-prefix",
                "sync",
            ][..],
        ),
        ("async", &["--mode", "async", "--body-prefix", "async"][..]),
        ("batch", &["--batch", "--body-prefix", "batch"][..]),
    ] {
        let mut args = vec!["--count", "20"];
        args.extend_from_slice(extra);
        let out = produce(&ns.addr(), topic, &args);
        let sent = out.sent();
        assert_eq!(sent.len(), 20, "{mode}:\n{out}");
        assert_eq!(out.first_line_starting_with("OK"), Some("OK sent=20"));
        for s in &sent {
            assert_eq!(s.status, "SEND_OK", "{mode}: {s:?}");
            assert_offset_msg_id(&broker, s);
        }
        if mode == "batch" {
            // One SEND_BATCH_MESSAGE: one queue, consecutive offsets. The Go client sets no
            // UNIQ_KEY on batched messages, so it reports no msgId for them.
            let queues: BTreeSet<i32> = sent.iter().map(|s| s.queue_id).collect();
            assert_eq!(queues.len(), 1, "a batch lands in one queue: {sent:?}");
            assert!(sent.iter().all(|s| s.msg_id == "-"), "{sent:?}");
        } else {
            let ids: BTreeSet<&str> = sent.iter().map(|s| s.msg_id.as_str()).collect();
            assert_eq!(ids.len(), 20, "{mode}: client msg ids are unique: {sent:?}");
        }
        all.extend(sent);
    }
    // Over all 60 messages: queue offsets are consecutive per queue, from 0; the producer's
    // 4 queues (min(4, TBW102's 8)) are all used by the round-robin sync sends.
    let per_queue = offsets_by_queue(&all);
    assert_eq!(
        per_queue.keys().copied().collect::<Vec<_>>(),
        [0, 1, 2, 3],
        "{per_queue:?}"
    );
    for (queue, offsets) in &per_queue {
        let expected: Vec<u64> = (0..offsets.len() as u64).collect();
        assert_eq!(offsets, &expected, "queue {queue}");
    }
    let offset_ids: BTreeSet<&str> = all.iter().map(|s| s.offset_msg_id.as_str()).collect();
    assert_eq!(offset_ids.len(), 60, "offset msg ids are unique");
}

#[test]
fn go_producer_oneway_sends_land() {
    let ns = NamesrvProcess::start();
    let broker = BrokerProcess::start(&ns.addr());
    let topic = "GoOnewayTopic";
    // --linger-ms: the Go client sends "oneway" requests without the oneway flag, so brokers
    // answer them, and an answer that reaches the connection after the producer closed it makes
    // the producer's kernel reset the connection and drop the unsent tail of the burst (a client
    // bug, seen against Apache RocketMQ too; see go/README.md). Lingering keeps the connection
    // open for the answers.
    let out = produce(
        &ns.addr(),
        topic,
        &[
            "--count",
            "10",
            "--mode",
            "oneway",
            "--body-prefix",
            "oneway",
            "--linger-ms",
            "500",
        ],
    );
    assert!(out.sent().is_empty(), "oneway sends have no result:\n{out}");
    assert_eq!(out.first_line_starting_with("OK"), Some("OK sent=10"));
    wait_for_stored(&broker, 10);

    // No result to look at: count them through the offsets that sync sends get afterwards. The
    // round-robin producer puts 2 of its 8 on each of the topic's 4 queues; in each queue they
    // continue right after the oneway messages.
    let out = produce(
        &ns.addr(),
        topic,
        &["--count", "8", "--body-prefix", "sync"],
    );
    let per_queue = offsets_by_queue(&out.sent());
    assert_eq!(per_queue.len(), 4, "{per_queue:?}\n{out}");
    let mut before = 0;
    for (queue, offsets) in &per_queue {
        let first = offsets[0];
        let expected: Vec<u64> = (first..first + offsets.len() as u64).collect();
        assert_eq!(offsets, &expected, "queue {queue}");
        before += first;
    }
    assert_eq!(
        before, 10,
        "the 10 oneway messages are stored ahead of the sync ones: {per_queue:?}"
    );
}

#[test]
fn go_push_consumer_receives_every_message_exactly_once() {
    let ns = NamesrvProcess::start();
    let _broker = BrokerProcess::start(&ns.addr());
    let topic = "GoConsumeTopic";
    let group = "GoConsumerGroup";
    // Send first: a consumer started before its topic exists waits for the next route poll.
    let sent = produce(
        &ns.addr(),
        topic,
        &[
            "--count",
            "20",
            "--tag",
            "TagA",
            "--keys-prefix",
            "k",
            "--body-prefix",
            "m",
        ],
    );
    let by_body: BTreeMap<String, Sent> = sent
        .sent()
        .into_iter()
        .enumerate()
        .map(|(i, s)| (format!("m-{i}"), s))
        .collect();

    let out = GoTools::get().run(
        PUSH_CONSUMER,
        &[
            "--namesrv",
            &ns.addr(),
            "--topic",
            topic,
            "--group",
            group,
            "--count",
            "20",
            "--from",
            "first",
            "--props",
            "--wait-ms",
            "60000",
        ],
        Duration::from_secs(100),
    );
    out.assert_ok();
    assert_eq!(
        out.first_line_starting_with("STARTED"),
        Some("STARTED GoConsumerGroup")
    );
    let received = out.received();
    assert_eq!(
        received.len(),
        20,
        "every message once, no duplicates:\n{out}"
    );
    for r in &received {
        let s = by_body
            .get(&r.body)
            .unwrap_or_else(|| panic!("unexpected body {r:?}\n{out}"));
        assert_eq!(
            (r.msg_id.as_str(), r.queue_id, r.queue_offset),
            (s.msg_id.as_str(), s.queue_id, s.queue_offset),
            "a message arrives with its producer's msgId (UNIQ_KEY), queue and offset"
        );
    }
    let bodies: BTreeSet<&str> = received.iter().map(|r| r.body.as_str()).collect();
    assert_eq!(bodies.len(), 20, "{out}");
    for props in out.lines_starting_with("PROPS ") {
        assert!(
            props.contains(&format!(" topic={topic} tags=TagA keys=k-")),
            "{props}"
        );
    }

    // The group's progress was committed: the same group gets nothing more.
    let again = GoTools::get().run(
        PUSH_CONSUMER,
        &[
            "--namesrv",
            &ns.addr(),
            "--topic",
            topic,
            "--group",
            group,
            "--count",
            "0",
            "--wait-ms",
            "8000",
        ],
        Duration::from_secs(60),
    );
    again.assert_ok();
    assert!(
        again.received().is_empty(),
        "a restarted consumer of the group must resume after the committed offsets:\n{again}"
    );
}
