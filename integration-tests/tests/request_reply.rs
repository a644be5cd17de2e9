//! Request-reply (`DefaultMQProducer.request`, issue 15) with the official Java clients: a
//! requester sends requests to a topic, a responder consumes them and answers each with
//! `MessageUtil.createReplyMessage` (a SEND_REPLY_MESSAGE_V2 to `<cluster>_REPLY_TOPIC`), and the
//! broker pushes each reply to the requester's connection (PUSH_REPLY_MESSAGE_TO_CLIENT). Each
//! case runs against a sluice master/slave pair and against Apache RocketMQ 5.3.3's broker (from
//! Maven Central, registered with our name server), with the same expectation:
//!
//! - Java client 4.9.8: sync, async (callback) and selector (`request(msg, selector, arg,
//!   timeout)`) requests, every one answered by its own reply within the request timeout;
//! - Java client 5.3.3: async requests answered the same way. Its synchronous `request` methods
//!   usually return once the request is sent, with "send request message to <T> OK, but wait
//!   reply message timeout" (the client's send callback counts the reply latch down unless the
//!   reply came first; fixed in Apache's later sources): the test takes either outcome per
//!   request, on both brokers, and asserts every request was served and every reply pushed.
//!
//! The requests are timed once the responder consumes (a probe message first): a push consumer
//! may start pulling a heartbeat interval late on any broker (apache/rocketmq#3434).
//!
//! See `java/src/main/java/sluice/it/RequestReply.java`.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::time::Duration;

use integration_tests::harness::{
    ApacheBroker, ChildOutput, HaPair, NamesrvProcess, create_topic, unique_name,
};
use integration_tests::java::{JavaTools, V4, V5};

const APACHE: &str = "5.3.3";
const REQUESTS: usize = 10;
const QUEUES: u32 = 4;

/// Runs [`REQUESTS`] requests of `mode` with Java client `version` through the cluster behind
/// `namesrv`.
fn run_requests(namesrv: &str, version: &str, mode: &str) -> ChildOutput {
    let topic = unique_name("Request");
    create_topic(namesrv, &topic, QUEUES);
    let count = REQUESTS.to_string();
    JavaTools::get(version).run(
        "sluice.it.RequestReply",
        &[
            "--namesrv",
            namesrv,
            "--topic",
            &topic,
            "--count",
            &count,
            "--mode",
            mode,
        ],
        Duration::from_secs(180),
    )
}

/// Asserts every request was answered by its own reply on the cluster's reply topic.
fn requests_are_answered(who: &str, namesrv: &str, version: &str, mode: &str) {
    let out = run_requests(namesrv, version, mode);
    let replies = out.fields("REPLY ");
    assert!(
        out.success() && replies.len() == REQUESTS,
        "{who}: {version} {mode}: {} of {REQUESTS} requests answered\n{}\n{}",
        replies.len(),
        out.stdout,
        out.stderr
    );
    for (i, r) in replies.iter().enumerate() {
        assert_eq!(r[0], i.to_string(), "{who}: {mode}: replies in order");
        assert!(
            r.contains(&"topic=DefaultCluster_REPLY_TOPIC"),
            "{who}: {mode}: {r:?}"
        );
        assert!(
            r.contains(&format!("body=reply:req-{i}").as_str()),
            "{who}: {mode}: {r:?}"
        );
    }
    let rtts: Vec<&str> = replies.iter().map(|r| r[2]).collect();
    eprintln!(
        "{who}: {version} {mode}: {REQUESTS} requests answered, {}",
        rtts.join(" ")
    );
}

/// The 5.3.3 client's synchronous request gives up once its request is sent, unless the reply
/// happens to arrive first (a race inside the client), whatever the broker does. So each request
/// is either answered by its own reply or fails with the client's "OK, but wait reply message
/// timeout"; either way the responder served it and the broker took (pushed) its reply.
fn sync_requests_as_the_5_3_3_client_allows(who: &str, namesrv: &str) {
    let out = run_requests(namesrv, V5, "sync");
    let replies = out.fields("REPLY ");
    let errs = out.lines_starting_with("ERR request ");
    assert_eq!(
        replies.len() + errs.len(),
        REQUESTS,
        "{who}:\n{}",
        out.stdout
    );
    assert!(
        errs.iter()
            .all(|e| e.contains("OK, but wait reply message timeout")),
        "{who}:\n{}",
        out.stdout
    );
    for r in &replies {
        assert!(
            r.contains(&format!("body=reply:req-{}", r[0]).as_str()),
            "{who}: {r:?}"
        );
    }
    assert_eq!(
        out.lines_starting_with("SERVED ").len(),
        REQUESTS,
        "{who}: every request reaches the responder:\n{}",
        out.stdout
    );
    assert!(
        out.lines_starting_with("ERR reply ").is_empty(),
        "{who}: a reply was refused:\n{}",
        out.stdout
    );
    eprintln!(
        "{who}: 5.3.3 sync: {} answered, {} given up by the client",
        replies.len(),
        errs.len()
    );
}

fn sluice_pair() -> HaPair {
    HaPair::start("SYNC_MASTER", &[], &[])
}

#[test]
fn requests_4_9_8_sluice() {
    let pair = sluice_pair();
    for mode in ["sync", "async", "selector"] {
        requests_are_answered("sluice", &pair.namesrv(), V4, mode);
    }
}

#[test]
fn requests_5_3_3_sluice() {
    let pair = sluice_pair();
    requests_are_answered("sluice", &pair.namesrv(), V5, "async");
    sync_requests_as_the_5_3_3_client_allows("sluice", &pair.namesrv());
}

/// Every case on one Apache broker (its start is the slow part).
#[test]
fn requests_apache() {
    let ns = NamesrvProcess::start();
    let _broker = ApacheBroker::start(APACHE, &ns.addr(), "ASYNC_MASTER", 0, &[]);
    for mode in ["sync", "async", "selector"] {
        requests_are_answered("Apache 5.3.3", &ns.addr(), V4, mode);
    }
    requests_are_answered("Apache 5.3.3", &ns.addr(), V5, "async");
    sync_requests_as_the_5_3_3_client_allows("Apache 5.3.3", &ns.addr());
}
