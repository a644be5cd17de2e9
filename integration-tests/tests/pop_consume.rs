//! RocketMQ 5 POP consumption (issue 16) with the official Java client 5.3.3, each case run
//! the same way against sluice (our `mqnamesrv` + `mqbroker`) and against Apache RocketMQ
//! 5.3.3's broker (from Maven Central, registered with our name server), so the expectation is
//! Apache's own behaviour. Every topic has 4 queues; every group is created and set to POP
//! beforehand with Apache's `mqadmin updateSubGroup` + `setConsumeMode -m POP -q 0`.
//!
//! - **push, acked once** (`java/.../PopConsume.java`): a `DefaultMQPushConsumer` with
//!   `setClientRebalance(false)` asks the broker for its queues (QUERY_ASSIGNMENT), pops them
//!   (POP_MESSAGE, never a PULL of the topic) and acks what it consumed (ACK_MESSAGE, one per
//!   message): every message delivered exactly once, half sent before the start and half after
//!   (held pops must wake), none again for [`LINGER_MS`] after the last (longer than the
//!   invisible time plus the revive latency). A second consumer subscribing tag `A` only gets
//!   the `A` messages, and acks exactly as many: the client filters tags again and acks what it
//!   drops, so more acks would mean the broker sent `B`s.
//! - **push, reconsume later**: the listener fails the first delivery of every third message;
//!   the client hides it again (CHANGE_MESSAGE_INVISIBLETIME, 10 s: the delay of level 0) and
//!   it comes back once, with reconsumeTimes 1, the same msgId, from the pop retry topic
//!   `%RETRY%<group>_<topic>` (its ack names that topic), no sooner than 10 s after the failure
//!   (less [`EARLY_MS`]) and at most [`REVIVE_LATE_MAX_MS`] late.
//! - **raw** (`PopRaw.java`, the client's `MQClientAPIImpl` pop/ack/batch-ack/change calls and
//!   raw requests), four runs at once on topics of their own:
//!   - *noack*: popped with invisible time 3 s and not acked, each message comes back once with
//!     reconsumeTimes 1 and `1ST_POP_TIME` = the first pop's time, within the bounds; acked
//!     then (on the retry topic), never again.
//!   - *ack*: acked one by one (ACK_MESSAGE) or in one BATCH_ACK_MESSAGE: never again.
//!   - *change*: 3 s changed to 10 s comes back after 10 s (not at 3 s: the change acked the
//!     first handle), 60 s changed to 3 s after 3 s.
//!   - *errors*: Apache's codes and remarks for a pop on a missing topic (17), 33 messages
//!     (29), a born time too old (210), an empty topic without and with a poll time
//!     (POLLING_TIMEOUT 210, at once / after the poll time), acks and changes on a missing
//!     topic (17), a bad queue (13), a bad offset (208), and a held pop woken by a send.
//!
//! Timings are printed on stderr (`--nocapture`). Measured on Apache 5.3.3 (2-core dev box,
//! 6 runs): an un-acked message comes back 2.9-3.2 s after its invisible time ends (3.8-4.0 s
//! after a change to 10 s), a RECONSUME_LATER one 15.0-15.9 s after the failure (10 s + 5-6 s,
//! the push consumer's held pops included).
//! Sluice (same box): un-acked messages back 1.1-1.2 s after their invisible time, 1.06 s
//! after a change (the timer slot the acks are read by, then the revive).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use integration_tests::harness::{
    ApacheBroker, BrokerProcess, ChildOutput, ChildProcess, NamesrvProcess, create_topic,
    unique_name,
};
use integration_tests::java::{JavaTools, V5};

/// The Apache RocketMQ broker every case is also run against.
const APACHE: &str = "5.3.3";
/// Queues of each test topic.
const QUEUES: u32 = 4;
/// Messages of each push consumer case (tags alternate A, B).
const COUNT: usize = 20;
/// The push consumer's invisible time (the 5.3.3 client refuses less than 5 s).
const PUSH_INVISIBLE_MS: i64 = 5_000;
/// The raw pops' invisible time.
const RAW_INVISIBLE_MS: i64 = 3_000;
/// How late after its invisible time ends an un-acked message may come back, ms (Apache:
/// 2.9-6 s measured).
const REVIVE_LATE_MAX_MS: i64 = 12_000;
/// How early it may (Apache writes the checkpoint due 1 s before the invisible time ends).
const EARLY_MS: i64 = 1_000;
/// How long after its send (or the consumer's start) a message must be delivered, ms.
const DELIVER_WITHIN_MS: i64 = 20_000;
/// How long consumers keep popping after the last expected delivery, for deliveries that must
/// not come, ms: more than an invisible time plus Apache's revive latency.
const LINGER_MS: i64 = 12_000;
/// The delay the 5.3.3 client asks for when a first delivery fails (level 0: 10 s).
const RECONSUME_LATER_MS: i64 = 10_000;
/// Apache's FAQ suffix of some remarks (its "\nSee ..." on one line).
const FAQ: &str = " See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.";

// ------------------------------------------------------------------------- the broker under test

/// The broker a case runs against.
enum Broker {
    Sluice(BrokerProcess),
    Apache(ApacheBroker),
}

/// A name server and one broker (timer wheel on: POP needs it), sluice's or Apache's, and the
/// Java 5.3.3 client programs.
struct Target {
    name: &'static str,
    broker: Broker,
    // Dropped after the broker (fields drop in order).
    ns: NamesrvProcess,
    java: &'static JavaTools,
}

impl Target {
    fn sluice() -> Target {
        let java = JavaTools::get(V5);
        let ns = NamesrvProcess::start();
        let broker = BrokerProcess::start_with(&ns.addr(), &[("timerWheelEnable", "true")]);
        Target {
            name: "sluice",
            broker: Broker::Sluice(broker),
            ns,
            java,
        }
    }

    fn apache() -> Target {
        let java = JavaTools::get(V5);
        let ns = NamesrvProcess::start();
        let broker = ApacheBroker::start(
            APACHE,
            &ns.addr(),
            "ASYNC_MASTER",
            0,
            &[("timerWheelEnable", "true"), ("bindAddress", "127.0.0.1")],
        );
        Target {
            name: "Apache 5.3.3",
            broker: Broker::Apache(broker),
            ns,
            java,
        }
    }

    fn namesrv(&self) -> String {
        self.ns.addr()
    }

    fn broker_log(&self) -> String {
        match &self.broker {
            Broker::Sluice(b) => b.process_ref().log_tails(),
            Broker::Apache(b) => b.log_tail(),
        }
    }

    /// A new topic of [`QUEUES`] queues and a new group for it, the group created and, when
    /// `pop`, set to POP for the topic (`setConsumeMode -m POP -q 0`), with Apache's mqadmin.
    fn topics_and_groups(&self, prefix: &str, n: usize, pop: bool) -> Vec<(String, String)> {
        let pairs: Vec<(String, String)> = (0..n)
            .map(|_| (unique_name(prefix), unique_name(&format!("{prefix}G"))))
            .collect();
        let mut commands = Vec::new();
        for (topic, group) in &pairs {
            create_topic(&self.namesrv(), topic, QUEUES);
            commands.push(vec!["updateSubGroup", "-c", "DefaultCluster", "-g", group]);
            if pop {
                commands.push(vec![
                    "setConsumeMode",
                    "-c",
                    "DefaultCluster",
                    "-t",
                    topic,
                    "-g",
                    group,
                    "-m",
                    "POP",
                    "-q",
                    "0",
                ]);
            }
        }
        let commands: Vec<Vec<String>> = commands
            .iter()
            .map(|c| c.iter().map(ToString::to_string).collect())
            .collect();
        for run in self
            .java
            .mqadmin_batch(&self.namesrv(), &commands, Duration::from_secs(30))
        {
            assert!(run.ok(), "{}: {run}", self.name);
            if run.args[0] == "setConsumeMode" {
                assert!(
                    run.stdout.contains("set consume mode to ") && run.stdout.contains("success"),
                    "{}: {run}",
                    self.name
                );
            }
        }
        pairs
    }

    /// Starts `PopConsume` on `topic` / `group` with `extra` arguments.
    fn spawn_push(&self, topic: &str, group: &str, extra: &[&str]) -> ChildProcess {
        let ns = self.namesrv();
        let count = COUNT.to_string();
        let invisible = PUSH_INVISIBLE_MS.to_string();
        let linger = LINGER_MS.to_string();
        let mut args = vec![
            "--namesrv",
            &ns,
            "--topic",
            topic,
            "--group",
            group,
            "--count",
            &count,
            "--invisible-ms",
            &invisible,
            "--linger-ms",
            &linger,
            "--wait-ms",
            "45000",
        ];
        args.extend_from_slice(extra);
        self.java.spawn("sluice.it.PopConsume", &args)
    }

    /// Starts `PopRaw --step step` on `topic` / `group`.
    fn spawn_raw(&self, step: &str, topic: &str, group: &str) -> ChildProcess {
        let ns = self.namesrv();
        let missing = unique_name("PopMissing");
        let invisible = RAW_INVISIBLE_MS.to_string();
        let linger = (RAW_INVISIBLE_MS + 7_000).to_string();
        let args = [
            "--namesrv",
            &ns,
            "--topic",
            topic,
            "--group",
            group,
            "--step",
            step,
            "--count",
            "3",
            "--invisible-ms",
            &invisible,
            "--wait-ms",
            "40000",
            "--linger-ms",
            &linger,
            "--missing-topic",
            &missing,
        ];
        self.java.spawn("sluice.it.PopRaw", &args)
    }
}

impl Drop for Target {
    /// Apache's broker is killed, not stopped: its graceful shutdown after POP traffic takes
    /// ~30 s, and nothing of its store is needed after a case.
    fn drop(&mut self) {
        if let Broker::Apache(b) = &mut self.broker {
            b.kill();
        }
    }
}

// -------------------------------------------------------------------------- the programs' lines

/// The `key=value` fields of a line (after its first word).
fn fields(line: &str) -> BTreeMap<&str, &str> {
    line.split_whitespace()
        .skip(1)
        .filter_map(|f| f.split_once('='))
        .collect()
}

fn num(f: &BTreeMap<&str, &str>, key: &str, line: &str) -> i64 {
    f.get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number {key} in {line}"))
}

/// A POP receipt handle (`POP_CK`, printed with ',' for ' '): startOffset, popTime,
/// invisibleTime, reviveQid, retry flag, brokerName, queueId, queueOffset.
#[derive(Debug, Clone)]
struct Handle {
    pop_time: i64,
    invisible: i64,
    /// "0": from the topic; "1": from the pop retry topic (v1).
    retry: String,
}

impl Handle {
    fn parse(ck: &str) -> Option<Handle> {
        let f: Vec<&str> = ck.split(',').collect();
        if f.len() < 8 {
            return None;
        }
        Some(Handle {
            pop_time: f[1].parse().ok()?,
            invisible: f[2].parse().ok()?,
            retry: f[4].to_owned(),
        })
    }
}

/// One delivery: a `POPRECV` line of `PopConsume` or a `POP` line of `PopRaw`.
#[derive(Debug, Clone)]
struct Delivery {
    /// `PopRaw`: first, again, linger.
    phase: String,
    i: i64,
    tag: String,
    reconsume: i64,
    topic: String,
    recv: i64,
    handle: Handle,
    /// `1ST_POP_TIME`.
    first: Option<i64>,
    /// `PopConsume`: what the listener returned (ack, later).
    action: String,
    msg_id: String,
    line: String,
}

fn deliveries(out: &ChildOutput, prefix: &str) -> Vec<Delivery> {
    out.stdout
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| {
            let f = fields(l);
            let text = |k: &str| f.get(k).map_or_else(String::new, |v| (*v).to_owned());
            Delivery {
                phase: text("phase"),
                i: num(&f, "i", l),
                tag: text("tag"),
                reconsume: num(&f, "reconsume", l),
                topic: text("topic"),
                recv: num(&f, "recv", l),
                handle: Handle::parse(f.get("ck").copied().unwrap_or(""))
                    .unwrap_or_else(|| panic!("no receipt handle in {l}")),
                first: f.get("first").and_then(|v| v.parse().ok()),
                action: text("action"),
                msg_id: text("msgId"),
                line: l.to_owned(),
            }
        })
        .collect()
}

/// `SENT <i> ... <epochMs>`: when message i was sent.
fn sent_at(out: &ChildOutput) -> BTreeMap<i64, i64> {
    out.stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.strip_prefix("SENT ")?.split_whitespace().collect();
            Some((f.first()?.parse().ok()?, f.last()?.parse().ok()?))
        })
        .collect()
}

/// One (request code, response code) of `PopConsume`'s `RPC` lines.
#[derive(Debug, Clone, Default)]
struct Rpc {
    n: u64,
    /// The topics the requests' headers named.
    topics: BTreeSet<String>,
    /// The queue ids they named.
    queues: BTreeSet<i32>,
}

/// `RPC req= resp= n= topics= queues=` lines of `PopConsume`, by (request code, response code).
fn rpcs(out: &ChildOutput) -> BTreeMap<(i32, i32), Rpc> {
    out.stdout
        .lines()
        .filter(|l| l.starts_with("RPC "))
        .map(|l| {
            let f = fields(l);
            let list = |key: &str| -> Vec<&str> {
                match f.get(key) {
                    Some(&"-") | None => Vec::new(),
                    Some(v) => v.split(',').collect(),
                }
            };
            let rpc = Rpc {
                n: num(&f, "n", l) as u64,
                topics: list("topics").into_iter().map(str::to_owned).collect(),
                queues: list("queues")
                    .iter()
                    .filter_map(|q| q.parse().ok())
                    .collect(),
            };
            ((num(&f, "req", l) as i32, num(&f, "resp", l) as i32), rpc)
        })
        .collect()
}

/// Requests `code` answered with `resp`.
fn rpc(out: &ChildOutput, code: i32, resp: i32) -> Rpc {
    rpcs(out).get(&(code, resp)).cloned().unwrap_or_default()
}

/// Every request `code` answered, whatever the answer.
fn rpc_total(out: &ChildOutput, code: i32) -> u64 {
    rpcs(out)
        .iter()
        .filter(|((c, _), _)| *c == code)
        .map(|(_, r)| r.n)
        .sum()
}

const QUERY_ASSIGNMENT: i32 = 400;
const PULL_MESSAGE: i32 = 11;
const POP_MESSAGE: i32 = 200_050;
const ACK_MESSAGE: i32 = 200_051;
const CHANGE_INVISIBLE_TIME: i32 = 200_053;

fn tag(i: i64) -> &'static str {
    if i % 2 == 0 { "A" } else { "B" }
}

/// The pop retry topic (v1, Apache's default) of `group` on `topic`.
fn pop_retry_topic(group: &str, topic: &str) -> String {
    format!("%RETRY%{group}_{topic}")
}

// ------------------------------------------------------------------------------ push consumers

/// What the push consumers of a case have in common: the run ended well, the client worked in
/// POP mode (QUERY_ASSIGNMENT, POP_MESSAGE of the topic, no PULL of it), each delivery came
/// from the topic or the pop retry topic with its receipt handle, within
/// [`DELIVER_WITHIN_MS`] of its send.
fn check_push_common(t: &Target, what: &str, topic: &str, out: &ChildOutput, got: &[Delivery]) {
    let ctx = || format!("{}: {what}:\n{out}\nbroker:\n{}", t.name, t.broker_log());
    assert!(
        out.success() && out.first_line_starting_with("OK ").is_some(),
        "{}",
        ctx()
    );
    assert!(
        rpc(out, QUERY_ASSIGNMENT, 0).n >= 1,
        "no QUERY_ASSIGNMENT: {}",
        ctx()
    );
    // popShareQueueNum 0: the broker assigns (topic, broker, -1), pops of all its queues.
    let pops = rpc(out, POP_MESSAGE, 0);
    assert!(
        pops.n >= 1
            && pops.topics == BTreeSet::from([topic.to_owned()])
            && pops.queues == BTreeSet::from([-1]),
        "POP_MESSAGE: {pops:?}: {}",
        ctx()
    );
    let pulled = rpcs(out)
        .iter()
        .any(|((c, _), r)| *c == PULL_MESSAGE && r.topics.contains(topic));
    assert!(!pulled, "the consumer pulled {topic}: {}", ctx());
    let started: i64 = out
        .first_line_starting_with("STARTED ")
        .and_then(|l| l.split_whitespace().nth(2)?.parse().ok())
        .unwrap();
    let sent = sent_at(out);
    for d in got {
        assert_eq!(d.topic, topic, "{}: {}", d.line, ctx());
        if d.reconsume == 0 {
            assert_eq!(d.handle.retry, "0", "{}: {}", d.line, ctx());
            assert_eq!(
                d.handle.invisible,
                PUSH_INVISIBLE_MS,
                "{}: {}",
                d.line,
                ctx()
            );
            let due = sent[&d.i].max(started);
            assert!(
                d.recv - due <= DELIVER_WITHIN_MS,
                "{} delivered {} ms after its send: {}",
                d.i,
                d.recv - due,
                ctx()
            );
        }
        assert_eq!(d.tag, tag(d.i), "{}: {}", d.line, ctx());
    }
}

fn acked_once(t: &Target) {
    let pairs = t.topics_and_groups("PopPush", 2, true);
    let ((all_topic, all_group), (tag_topic, tag_group)) = (&pairs[0], &pairs[1]);
    let all = t.spawn_push(all_topic, all_group, &[]);
    let tagged = t.spawn_push(tag_topic, tag_group, &["--expr", "A"]);
    let timeout = Duration::from_secs(120);
    for (what, topic, want_tags, out) in [
        ("expr *", all_topic, &["A", "B"][..], all.wait(timeout)),
        ("expr A", tag_topic, &["A"][..], tagged.wait(timeout)),
    ] {
        let got = deliveries(&out, "POPRECV ");
        check_push_common(t, what, topic, &out, &got);
        let ctx = || format!("{}: {what}:\n{out}\nbroker:\n{}", t.name, t.broker_log());
        let want: Vec<i64> = (0..COUNT as i64)
            .filter(|i| want_tags.contains(&tag(*i)))
            .collect();
        let mut indices: Vec<i64> = got.iter().map(|d| d.i).collect();
        indices.sort_unstable();
        assert_eq!(indices, want, "each expected message once: {}", ctx());
        assert!(
            got.iter().all(|d| d.reconsume == 0 && d.action == "ack"),
            "{}",
            ctx()
        );
        let Rpc {
            n: acks,
            topics: ack_topics,
            ..
        } = rpc(&out, ACK_MESSAGE, 0);
        assert_eq!(acks, want.len() as u64, "ACK_MESSAGE: {}", ctx());
        assert_eq!(ack_topics, BTreeSet::from([topic.clone()]), "{}", ctx());
        assert_eq!(rpc_total(&out, ACK_MESSAGE), acks, "{}", ctx());
        assert_eq!(rpc_total(&out, CHANGE_INVISIBLE_TIME), 0, "{}", ctx());
        let first_recv = got.iter().map(|d| d.recv).min().unwrap();
        let last_recv = got.iter().map(|d| d.recv).max().unwrap();
        eprintln!(
            "{}: {what}: {} of {COUNT} delivered once each ({} POP_MESSAGE, {} ACK_MESSAGE), \
             the last {} ms after the first; none again in {LINGER_MS} ms",
            t.name,
            got.len(),
            rpc_total(&out, POP_MESSAGE),
            acks,
            last_recv - first_recv
        );
    }
}

fn reconsume_later(t: &Target) {
    let pairs = t.topics_and_groups("PopLater", 1, true);
    let (topic, group) = &pairs[0];
    let out = t
        .spawn_push(topic, group, &["--fail-every", "3"])
        .wait(Duration::from_secs(120));
    let got = deliveries(&out, "POPRECV ");
    check_push_common(t, "fail every 3rd once", topic, &out, &got);
    let ctx = || format!("{}:\n{out}\nbroker:\n{}", t.name, t.broker_log());
    let mut by_index: BTreeMap<i64, Vec<&Delivery>> = BTreeMap::new();
    for d in &got {
        by_index.entry(d.i).or_default().push(d);
    }
    assert_eq!(
        by_index.keys().copied().collect::<Vec<_>>(),
        (0..COUNT as i64).collect::<Vec<_>>(),
        "{}",
        ctx()
    );
    let mut delays = Vec::new();
    for (i, ds) in &by_index {
        if i % 3 != 0 {
            assert!(
                ds.len() == 1 && ds[0].reconsume == 0 && ds[0].action == "ack",
                "{i}: {ds:?}: {}",
                ctx()
            );
            continue;
        }
        assert_eq!(ds.len(), 2, "{i} delivered twice: {ds:?}: {}", ctx());
        let (failed, again) = (ds[0], ds[1]);
        assert!(
            failed.reconsume == 0 && failed.action == "later",
            "{i}: {failed:?}: {}",
            ctx()
        );
        assert!(
            again.reconsume == 1 && again.action == "ack" && again.handle.retry == "1",
            "{i}: {again:?}: {}",
            ctx()
        );
        assert_eq!(again.msg_id, failed.msg_id, "{i}: {}", ctx());
        let late = again.recv - (failed.recv + RECONSUME_LATER_MS);
        assert!(
            (-EARLY_MS..=REVIVE_LATE_MAX_MS).contains(&late),
            "{i} came back {late} ms after failure + {RECONSUME_LATER_MS} ms: {}",
            ctx()
        );
        delays.push(again.recv - failed.recv);
    }
    let failed = by_index.keys().filter(|i| *i % 3 == 0).count() as u64;
    let Rpc {
        n: changes,
        topics: change_topics,
        ..
    } = rpc(&out, CHANGE_INVISIBLE_TIME, 0);
    assert_eq!(changes, failed, "CHANGE_MESSAGE_INVISIBLETIME: {}", ctx());
    assert_eq!(change_topics, BTreeSet::from([topic.clone()]), "{}", ctx());
    let Rpc {
        n: acks,
        topics: ack_topics,
        ..
    } = rpc(&out, ACK_MESSAGE, 0);
    assert_eq!(acks, COUNT as u64, "ACK_MESSAGE: {}", ctx());
    assert_eq!(
        ack_topics,
        BTreeSet::from([topic.clone(), pop_retry_topic(group, topic)]),
        "{}",
        ctx()
    );
    eprintln!(
        "{}: {failed} failed once (RECONSUME_LATER), back with reconsumeTimes 1 after {:?} ms \
         (failure to redelivery), {changes} CHANGE_MESSAGE_INVISIBLETIME, {acks} ACK_MESSAGE",
        t.name, delays
    );
}

// ------------------------------------------------------------------------------------- raw

/// The redeliveries of `again` (one each of `due`'s keys, the msgId of `before`'s delivery,
/// reconsumeTimes 1, from the pop retry topic, no sooner than `due[i] - EARLY_MS`, at most
/// [`REVIVE_LATE_MAX_MS`] late, with `1ST_POP_TIME` = `first[i]`); the lateness of each.
fn check_redelivered(
    topic: &str,
    before: &[&Delivery],
    again: &[&Delivery],
    due: &BTreeMap<i64, i64>,
    first: &BTreeMap<i64, i64>,
    ctx: &dyn Fn() -> String,
) -> Vec<i64> {
    let mut indices: Vec<i64> = again.iter().map(|d| d.i).collect();
    indices.sort_unstable();
    assert_eq!(
        indices,
        due.keys().copied().collect::<Vec<_>>(),
        "each once again: {}",
        ctx()
    );
    again
        .iter()
        .map(|d| {
            assert!(
                d.reconsume == 1 && d.handle.retry == "1" && d.topic == topic,
                "{}: {}",
                d.line,
                ctx()
            );
            assert_eq!(
                d.first,
                Some(first[&d.i]),
                "1ST_POP_TIME: {}: {}",
                d.line,
                ctx()
            );
            let was = before.iter().find(|b| b.i == d.i).unwrap();
            assert_eq!(d.msg_id, was.msg_id, "{}: {}", d.line, ctx());
            let late = d.recv - due[&d.i];
            assert!(
                (-EARLY_MS..=REVIVE_LATE_MAX_MS).contains(&late),
                "{} came back {late} ms after its invisible time: {}",
                d.i,
                ctx()
            );
            late
        })
        .collect()
}

/// The `ACK` lines: (i, kind, status).
fn acks(out: &ChildOutput) -> Vec<(i64, String, String)> {
    out.stdout
        .lines()
        .filter(|l| l.starts_with("ACK "))
        .map(|l| {
            let f = fields(l);
            (
                num(&f, "i", l),
                f["kind"].to_owned(),
                f.get("status").map_or("", |s| *s).to_owned(),
            )
        })
        .collect()
}

fn raw_noack(t: &Target, topic: &str, out: &ChildOutput) {
    let ctx = || format!("{}: noack:\n{out}\nbroker:\n{}", t.name, t.broker_log());
    assert!(out.success(), "{}", ctx());
    let got = deliveries(out, "POP ");
    let first: Vec<&Delivery> = got.iter().filter(|d| d.phase == "first").collect();
    let again: Vec<&Delivery> = got.iter().filter(|d| d.phase == "again").collect();
    assert!(
        got.iter().all(|d| d.phase != "linger"),
        "delivered after its ack: {}",
        ctx()
    );
    assert_eq!(first.len(), 3, "{}", ctx());
    for d in &first {
        assert!(
            d.reconsume == 0 && d.handle.retry == "0" && d.handle.invisible == RAW_INVISIBLE_MS,
            "{}: {}",
            d.line,
            ctx()
        );
    }
    let due = first
        .iter()
        .map(|d| (d.i, d.handle.pop_time + d.handle.invisible))
        .collect();
    let pop_times = first.iter().map(|d| (d.i, d.handle.pop_time)).collect();
    let late = check_redelivered(topic, &first, &again, &due, &pop_times, &ctx);
    let acked = acks(out);
    assert!(
        acked.len() == 3 && acked.iter().all(|(_, k, s)| k == "single" && s == "OK"),
        "{}",
        ctx()
    );
    eprintln!(
        "{}: noack: popped with invisible time {RAW_INVISIBLE_MS} ms, back {late:?} ms after it \
         ended (reconsumeTimes 1); acked then, not again",
        t.name
    );
}

fn raw_ack(t: &Target, out: &ChildOutput) {
    let ctx = || format!("{}: ack:\n{out}\nbroker:\n{}", t.name, t.broker_log());
    assert!(out.success(), "{}", ctx());
    let got = deliveries(out, "POP ");
    let mut first: Vec<i64> = got
        .iter()
        .filter(|d| d.phase == "first" && d.reconsume == 0)
        .map(|d| d.i)
        .collect();
    first.sort_unstable();
    assert_eq!(first, (0..6).collect::<Vec<_>>(), "{}", ctx());
    assert!(
        got.iter().all(|d| d.phase == "first"),
        "delivered again after its ack: {}",
        ctx()
    );
    let mut acked = acks(out);
    acked.sort();
    let want: Vec<(i64, String, String)> = (0..6)
        .map(|i| {
            let kind = if i < 3 { "single" } else { "batch" };
            (i, kind.to_owned(), "OK".to_owned())
        })
        .collect();
    assert_eq!(acked, want, "{}", ctx());
    eprintln!(
        "{}: ack: 3 acked by ACK_MESSAGE, 3 by one BATCH_ACK_MESSAGE, none back in {} ms",
        t.name,
        RAW_INVISIBLE_MS + 7_000
    );
}

fn raw_change(t: &Target, topic: &str, out: &ChildOutput) {
    let ctx = || format!("{}: change:\n{out}\nbroker:\n{}", t.name, t.broker_log());
    assert!(out.success(), "{}", ctx());
    let got = deliveries(out, "POP ");
    let first: Vec<&Delivery> = got.iter().filter(|d| d.phase == "first").collect();
    let again: Vec<&Delivery> = got.iter().filter(|d| d.phase == "again").collect();
    assert!(got.iter().all(|d| d.phase != "linger"), "{}", ctx());
    let invisibles: Vec<i64> = first.iter().map(|d| d.handle.invisible).collect();
    assert_eq!(invisibles, [3_000, 60_000], "{}", ctx());
    // CHANGE i= from= to= at= status= ck=
    let mut due = BTreeMap::new();
    let mut pop_times = BTreeMap::new();
    let mut moves = Vec::new();
    for l in out.stdout.lines().filter(|l| l.starts_with("CHANGE ")) {
        let f = fields(l);
        assert_eq!(f.get("status"), Some(&"OK"), "{l}: {}", ctx());
        let handle = Handle::parse(f["ck"]).unwrap_or_else(|| panic!("{l}: {}", ctx()));
        let (at, to) = (num(&f, "at", l), num(&f, "to", l));
        assert!(
            handle.invisible == to && handle.pop_time >= at,
            "{l}: {}",
            ctx()
        );
        due.insert(num(&f, "i", l), at + to);
        pop_times.insert(num(&f, "i", l), handle.pop_time);
        moves.push(format!("{} -> {to} ms", num(&f, "from", l)));
    }
    assert_eq!(due.len(), 2, "{}", ctx());
    let late = check_redelivered(topic, &first, &again, &due, &pop_times, &ctx);
    assert!(
        acks(out).iter().all(|(_, _, s)| s == "OK") && acks(out).len() == 2,
        "{}",
        ctx()
    );
    eprintln!(
        "{}: change: invisible time changed {moves:?}: back {late:?} ms after the new time \
         (in arrival order)",
        t.name
    );
}

fn raw_errors(t: &Target, topic: &str, out: &ChildOutput) {
    let ctx = || format!("{}: errors:\n{out}\nbroker:\n{}", t.name, t.broker_log());
    assert!(out.success(), "{}", ctx());
    // RAW case= code= elapsed= msgs= remark=<rest of the line>
    let raw: BTreeMap<String, (i32, i64, i64, String)> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("RAW "))
        .map(|l| {
            let f = fields(l);
            let remark = l.split_once(" remark=").map_or("", |(_, r)| r).to_owned();
            (
                f["case"].to_owned(),
                (
                    num(&f, "code", l) as i32,
                    num(&f, "elapsed", l),
                    num(&f, "msgs", l),
                    remark,
                ),
            )
        })
        .collect();
    let missing = out
        .stdout
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix("RAW case=missing_topic ")?;
            let r = rest.split_once("remark=topic[")?.1;
            Some(r.split(']').next()?.to_owned())
        })
        .unwrap_or_else(|| panic!("no missing_topic answer: {}", ctx()));
    let not_exist = format!("topic[{missing}] not exist, apply first please!{FAQ}");
    let bad_queue =
        format!("queueId[99] is illegal, topic:[{topic}] topicConfig.readQueueNums:[4] consumer:[");
    // (case, code, remark: exact, or a prefix when it ends with '[')
    let want: [(&str, i32, Option<&str>); 12] = [
        ("missing_topic", 17, Some(&not_exist)),
        (
            "max_33",
            29,
            Some("the broker[127.0.0.1] pop message's num is greater than 32"),
        ),
        (
            "born_too_old",
            210,
            Some("the broker[127.0.0.1] pop message is timeout too much"),
        ),
        ("empty_no_poll", 210, Some("NO_MESSAGE_IN_QUEUE")),
        ("empty_poll", 210, Some("NO_MESSAGE_IN_QUEUE")),
        ("ack_missing_topic", 17, Some(&not_exist)),
        ("ack_bad_queue", 13, Some(&bad_queue)),
        (
            "ack_bad_offset",
            208,
            Some(&format!(
                "offset is illegal, key:{topic}@0, commit:5, store:0~0"
            )),
        ),
        ("change_missing_topic", 17, Some(&not_exist)),
        ("change_bad_queue", 13, Some(&bad_queue)),
        // Apache sets no remark there (RemotingCommand's default text).
        ("change_bad_offset", 208, None),
        ("wake", 0, Some("FOUND")),
    ];
    let mut wrong = Vec::new();
    for (case, code, remark) in want {
        let Some((got_code, _, _, got_remark)) = raw.get(case) else {
            wrong.push(format!("{case}: no answer"));
            continue;
        };
        let remark_ok = match remark {
            None => true,
            Some(r) if r.ends_with('[') => got_remark.starts_with(r),
            Some(r) => got_remark == r,
        };
        if *got_code != code || !remark_ok {
            wrong.push(format!(
                "{case}: got {got_code} {got_remark:?}, want {code} {remark:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}\n{}", ctx());
    let elapsed = |case: &str| raw[case].1;
    assert!(elapsed("empty_no_poll") < 1_000, "{}", ctx());
    assert!(
        (2_500..=6_000).contains(&elapsed("empty_poll")),
        "a 3 s poll answered after {} ms: {}",
        elapsed("empty_poll"),
        ctx()
    );
    assert!(
        raw["wake"].2 == 1 && (1_000..=5_000).contains(&elapsed("wake")),
        "a pop held while a message was sent 1.5 s in: {:?}: {}",
        raw["wake"],
        ctx()
    );
    eprintln!(
        "{}: errors: all 12 answers as Apache's; a 3 s poll on an empty topic answered after \
         {} ms, a held pop woken by a send 1.5 s in after {} ms",
        t.name,
        elapsed("empty_poll"),
        elapsed("wake")
    );
}

fn raw(t: &Target) {
    let pairs = t.topics_and_groups("PopRaw", 4, false);
    let steps = ["noack", "ack", "change", "errors"];
    let children: Vec<ChildProcess> = steps
        .iter()
        .zip(&pairs)
        .map(|(step, (topic, group))| t.spawn_raw(step, topic, group))
        .collect();
    let outs: Vec<ChildOutput> = children
        .into_iter()
        .map(|c| c.wait(Duration::from_secs(120)))
        .collect();
    raw_noack(t, &pairs[0].0, &outs[0]);
    raw_ack(t, &outs[1]);
    raw_change(t, &pairs[2].0, &outs[2]);
    raw_errors(t, &pairs[3].0, &outs[3]);
}

// ------------------------------------------------------------------------------------ the cases

#[test]
fn push_acked_once_sluice() {
    integration_tests::require_tools!(Java, Maven);
    acked_once(&Target::sluice());
}

#[test]
fn push_acked_once_apache_5_3_3() {
    integration_tests::require_tools!(Java, Maven);
    acked_once(&Target::apache());
}

#[test]
fn push_reconsume_later_sluice() {
    integration_tests::require_tools!(Java, Maven);
    reconsume_later(&Target::sluice());
}

#[test]
fn push_reconsume_later_apache_5_3_3() {
    integration_tests::require_tools!(Java, Maven);
    reconsume_later(&Target::apache());
}

#[test]
fn raw_pop_ack_change_sluice() {
    integration_tests::require_tools!(Java, Maven);
    raw(&Target::sluice());
}

#[test]
fn raw_pop_ack_change_apache_5_3_3() {
    integration_tests::require_tools!(Java, Maven);
    raw(&Target::apache());
}
