//! The scenarios every non-Java client must pass against the real `mqnamesrv` + `mqbroker`:
//! sync, async and batch sends to an auto-created topic, oneway sends, and a push consumer that
//! receives every message exactly once and commits its progress. The Go and Rust programs print
//! the same result lines (`SENT`, `RECV`, `PROPS`, `STARTED`, `OK`), so one suite drives both;
//! a [`ClientUnderTest`] records where the clients legitimately differ.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use remoting::protocol::body::KvTable;
use remoting::{RemotingCommand, RequestCode};

use crate::client::SyncClient;
use crate::go::{Sent, offsets_by_queue, spawn_client};
use crate::harness::{BrokerProcess, ChildOutput, NamesrvProcess};

const RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// Which id a client's consumer reports for a received message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceivedId {
    /// The producer's `UNIQ_KEY` (Java's `getMsgId()`; the Go client).
    UniqKey,
    /// The offset msg id (rocketmq-client-rust's `MessageExt::msg_id()`); the `UNIQ_KEY` is then
    /// checked through the `PROPS` line's `uniqKey=`.
    OffsetMsgId,
}

/// A client's test programs and its known differences.
#[derive(Debug, Clone)]
pub struct ClientUnderTest {
    /// `Go`, `Rust`: prefixes topic and group names.
    pub name: &'static str,
    /// The producer program (`SENT` lines, `OK sent=N`).
    pub producer: PathBuf,
    /// The push consumer program (`STARTED`, `RECV`, `PROPS` lines).
    pub consumer: PathBuf,
    /// Whether batched messages carry a `UNIQ_KEY` (the Go client sets none on them).
    pub batch_has_msg_ids: bool,
    /// Extra producer arguments for oneway sends.
    pub oneway_extra: &'static [&'static str],
    /// What the consumer's `RECV` id is.
    pub received_id: ReceivedId,
}

impl ClientUnderTest {
    fn run(&self, program: &Path, args: &[&str], timeout: Duration) -> ChildOutput {
        spawn_client(program, args).wait(timeout)
    }

    /// Runs the producer to completion; it must succeed.
    pub fn produce(&self, ns: &str, topic: &str, extra: &[&str]) -> ChildOutput {
        let mut args = vec!["--namesrv", ns, "--topic", topic];
        args.extend_from_slice(extra);
        let out = self.run(&self.producer, &args, RUN_TIMEOUT);
        out.assert_ok();
        out
    }

    /// 20 messages each in sync, async and batch mode to a topic the broker creates on first
    /// send: all SEND_OK with proper offset msg ids, unique client ids, one queue per batch, and
    /// queue offsets consecutive from 0 in every queue the producer used (min(4, TBW102's 8)).
    pub fn sends_sync_async_and_batch(&self) {
        let ns = NamesrvProcess::start();
        let broker = BrokerProcess::start(&ns.addr());
        let topic = format!("{}AutoTopic", self.name);
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
            let out = self.produce(&ns.addr(), &topic, &args);
            let sent = out.sent();
            assert_eq!(sent.len(), 20, "{mode}:\n{out}");
            assert_eq!(out.first_line_starting_with("OK"), Some("OK sent=20"));
            for s in &sent {
                assert_eq!(s.status, "SEND_OK", "{mode}: {s:?}");
                assert_offset_msg_id(&broker, s);
            }
            if mode == "batch" {
                let queues: BTreeSet<i32> = sent.iter().map(|s| s.queue_id).collect();
                assert_eq!(queues.len(), 1, "a batch lands in one queue: {sent:?}");
            }
            if mode == "batch" && !self.batch_has_msg_ids {
                assert!(sent.iter().all(|s| s.msg_id == "-"), "{sent:?}");
            } else {
                let ids: BTreeSet<&str> = sent.iter().map(|s| s.msg_id.as_str()).collect();
                assert!(!ids.contains("-"), "{mode}: {sent:?}");
                assert_eq!(ids.len(), 20, "{mode}: client msg ids are unique: {sent:?}");
            }
            all.extend(sent);
        }
        let per_queue = offsets_by_queue(&all);
        assert!(
            !per_queue.is_empty() && per_queue.keys().all(|q| (0..4).contains(q)),
            "the producer uses min(4, TBW102's 8) queues: {per_queue:?}"
        );
        for (queue, offsets) in &per_queue {
            let expected: Vec<u64> = (0..offsets.len() as u64).collect();
            assert_eq!(offsets, &expected, "queue {queue}");
        }
        let offset_ids: BTreeSet<&str> = all.iter().map(|s| s.offset_msg_id.as_str()).collect();
        assert_eq!(offset_ids.len(), 60, "offset msg ids are unique");
    }

    /// 10 oneway sends are stored: they report nothing, so they are counted through the broker's
    /// put counter and through the queue offsets that 40 sync sends get afterwards (each queue
    /// continues right after its oneway messages; 40 sends over 4 queues hit every queue).
    pub fn oneway_sends_land(&self) {
        let ns = NamesrvProcess::start();
        let broker = BrokerProcess::start(&ns.addr());
        let topic = format!("{}OnewayTopic", self.name);
        let mut args = vec![
            "--count",
            "10",
            "--mode",
            "oneway",
            "--body-prefix",
            "oneway",
        ];
        args.extend_from_slice(self.oneway_extra);
        let out = self.produce(&ns.addr(), &topic, &args);
        assert!(out.sent().is_empty(), "oneway sends have no result:\n{out}");
        assert_eq!(out.first_line_starting_with("OK"), Some("OK sent=10"));
        wait_for_stored(&broker, 10);

        let out = self.produce(
            &ns.addr(),
            &topic,
            &["--count", "40", "--body-prefix", "sync"],
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

    /// 20 messages sent first, then a push consumer from the first offset: every message
    /// arrives exactly once with its id, queue, offset, topic, tag and keys; a second consumer
    /// of the same group then gets nothing (the progress was committed).
    pub fn push_consumer_receives_every_message_exactly_once(&self) {
        let ns = NamesrvProcess::start();
        let _broker = BrokerProcess::start(&ns.addr());
        let topic = format!("{}ConsumeTopic", self.name);
        let group = format!("{}ConsumerGroup", self.name);
        // Send first: a consumer started before its topic exists waits for the next route poll.
        let sent = self.produce(
            &ns.addr(),
            &topic,
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

        let consume = |count: &str, wait_ms: &str, extra: &[&str]| {
            let mut args = vec![
                "--namesrv",
                &ns.addr(),
                "--topic",
                &topic,
                "--group",
                &group,
                "--count",
                count,
                "--wait-ms",
                wait_ms,
            ]
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>();
            args.extend(extra.iter().map(|s| (*s).to_owned()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            self.run(&self.consumer, &args, Duration::from_secs(100))
        };
        let out = consume("20", "60000", &["--from", "first", "--props"]);
        out.assert_ok();
        assert_eq!(
            out.first_line_starting_with("STARTED"),
            Some(format!("STARTED {group}").as_str())
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
            let id = match self.received_id {
                ReceivedId::UniqKey => &s.msg_id,
                ReceivedId::OffsetMsgId => &s.offset_msg_id,
            };
            assert_eq!(
                (r.msg_id.as_str(), r.queue_id, r.queue_offset),
                (id.as_str(), s.queue_id, s.queue_offset),
                "a message arrives with its {:?}, queue and offset",
                self.received_id
            );
        }
        let bodies: BTreeSet<&str> = received.iter().map(|r| r.body.as_str()).collect();
        assert_eq!(bodies.len(), 20, "{out}");
        // The PROPS line carries the other id: the offset msg id where RECV has the UNIQ_KEY,
        // and the other way round.
        let (label, other_id): (&str, fn(&Sent) -> &str) = match self.received_id {
            ReceivedId::UniqKey => ("offsetMsgId=", |s| &s.offset_msg_id),
            ReceivedId::OffsetMsgId => ("uniqKey=", |s| &s.msg_id),
        };
        let other_ids: BTreeSet<&str> = by_body.values().map(other_id).collect();
        let props = out.lines_starting_with("PROPS ");
        assert_eq!(props.len(), 20, "{out}");
        for line in props {
            assert!(
                line.contains(&format!(" topic={topic} tags=TagA keys=k-")),
                "{line}"
            );
            let id = line.rsplit_once(label).map(|(_, id)| id);
            assert!(id.is_some_and(|id| other_ids.contains(id)), "{line}");
        }

        let again = consume("0", "8000", &[]);
        again.assert_ok();
        assert!(
            again.received().is_empty(),
            "a restarted consumer of the group must resume after the committed offsets:\n{again}"
        );
    }
}

/// `7F000001` + port + commit log offset: the offset msg id of a message stored by `broker`.
pub fn assert_offset_msg_id(broker: &BrokerProcess, s: &Sent) {
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
pub fn wait_for_stored(broker: &BrokerProcess, n: u64) {
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
