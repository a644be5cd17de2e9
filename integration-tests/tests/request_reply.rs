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
//!   fail on both brokers alike: they return once the request is sent, with "send request message
//!   to <T> OK, but wait reply message timeout" (the client's send callback counts the reply latch
//!   down; fixed in Apache's later sources). The test asserts that failure on both, so a client
//!   that fixes it shows up here.
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

/// The 5.3.3 client's synchronous request gives up once its request is sent, whatever the
/// broker does; the responder's replies are still taken (pushed, answered SUCCESS).
fn sync_request_fails_as_the_client_does(who: &str, namesrv: &str) {
    let out = run_requests(namesrv, V5, "sync");
    assert!(
        !out.success(),
        "{who}: the 5.3.3 sync request now works:\n{}",
        out.stdout
    );
    let errs = out.lines_starting_with("ERR request ");
    assert_eq!(errs.len(), REQUESTS, "{who}:\n{}", out.stdout);
    assert!(
        errs.iter()
            .all(|e| e.contains("OK, but wait reply message timeout")),
        "{who}:\n{}",
        out.stdout
    );
    assert!(
        out.lines_starting_with("ERR reply ").is_empty(),
        "{who}: a reply was refused:\n{}",
        out.stdout
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
    sync_request_fails_as_the_client_does("sluice", &pair.namesrv());
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
    sync_request_fails_as_the_client_does("Apache 5.3.3", &ns.addr());
}
