//! SQL92 property filters in process, over real sockets: pulls that carry their
//! subscription (lite pull consumers), pulls filtered by what a heartbeat registered
//! (push consumers), the codes RocketMQ answers when the filter is off, missing,
//! stale or does not compile, and long polling that wakes only for a match.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

mod support;

use std::time::{Duration, Instant};

use message::record::{self, Record};
use remoting::protocol::broker::PullMessageRequestHeader;
use remoting::protocol::constants::pull_sys_flag;
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use support::Running;

const TOPIC: &str = "SqlTopic";

fn pull_request(
    offset: i64,
    subscription: Option<(&str, &str)>,
    sub_version: i64,
    suspend_ms: Option<i64>,
) -> RemotingCommand {
    let mut flag = 0;
    if subscription.is_some() {
        flag |= pull_sys_flag::SUBSCRIPTION;
    }
    if suspend_ms.is_some() {
        flag |= pull_sys_flag::SUSPEND;
    }
    let header = PullMessageRequestHeader {
        consumer_group: "sql_group".into(),
        topic: TOPIC.into(),
        queue_id: 0,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: flag,
        commit_offset: 0,
        suspend_timeout_millis: suspend_ms.unwrap_or(0),
        subscription: subscription.map(|(_, s)| s.into()),
        sub_version,
        expression_type: subscription.map(|(t, _)| t.into()),
        ..PullMessageRequestHeader::default()
    };
    RemotingCommand::request_with(RequestCode::PullMessage, &header)
}

/// Bodies of the messages of a pull response.
fn bodies(resp: &RemotingCommand) -> Vec<String> {
    let body = resp.body.to_bytes();
    let mut rest = &body[..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let Ok(Some(Record::Message(m))) = record::decode(rest) else {
            panic!("bad pull body")
        };
        out.push(String::from_utf8_lossy(m.body).into_owned());
        rest = &rest[m.total_size as usize..];
    }
    out
}

/// Ten messages `m0`..`m9` with `a` = 0..9 and TAGS `even` / `odd`.
async fn send_ten(b: &Running) {
    for i in 0..10 {
        let tags = if i % 2 == 0 { "even" } else { "odd" };
        let props = format!("TAGS\u{1}{tags}\u{2}a\u{1}{i}");
        let r = b.send(TOPIC, 0, format!("m{i}").as_bytes(), &props).await;
        assert_eq!(r.code(), 0, "{:?}", r.remark());
    }
    b.dispatched(TOPIC, 0, 10).await;
}

fn heartbeat(expression: &str, version: i64) -> RemotingCommand {
    let body = format!(
        r#"{{"clientID":"127.0.0.1@sql","producerDataSet":[],"consumerDataSet":[{{"groupName":"sql_group","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","unitMode":false,"subscriptionDataSet":[{{"classFilterMode":false,"topic":"{TOPIC}","subString":{expression:?},"tagsSet":[],"codeSet":[],"subVersion":{version},"expressionType":"SQL92"}}]}}]}}"#
    );
    RemotingCommand::request(RequestCode::HeartBeat).with_body(body.into_bytes())
}

#[tokio::test]
async fn refused_when_property_filter_is_off() {
    let b = Running::start(|_, _| {}).await;
    send_ten(&b).await;
    let r = b
        .call(pull_request(0, Some(("SQL92", "a > 1")), 1, None))
        .await;
    assert_eq!(r.code(), ResponseCode::SystemError.code());
    assert_eq!(
        r.remark(),
        Some("The broker does not support consumer to filter message by SQL92")
    );
    // The heartbeat registers the filter all the same; the pull is refused after it.
    assert_eq!(b.call(heartbeat("a > 1", 5)).await.code(), 0);
    let r = b.call(pull_request(0, None, 5, None)).await;
    assert_eq!(r.code(), ResponseCode::SystemError.code());
    // TAG subscriptions are not affected.
    let r = b
        .call(pull_request(0, Some(("TAG", "even")), 1, None))
        .await;
    assert_eq!(bodies(&r), ["m0", "m2", "m4", "m6", "m8"]);
    b.stop().await;
}

#[tokio::test]
async fn a_pull_carrying_its_subscription_is_filtered_by_it() {
    let b = Running::start(|c, _| c.enable_property_filter = true).await;
    send_ten(&b).await;
    let r = b
        .call(pull_request(
            0,
            Some(("SQL92", "a >= 5 AND TAGS = 'odd'")),
            1,
            None,
        ))
        .await;
    assert_eq!(r.code(), 0);
    assert_eq!(bodies(&r), ["m5", "m7", "m9"]);
    let r = b
        .call(pull_request(
            0,
            Some(("SQL92", "a IN ('3', '4') OR a IS NULL")),
            1,
            None,
        ))
        .await;
    assert_eq!(bodies(&r), ["m3", "m4"]);
    // Nothing matches what was scanned: retry at once, past every unit.
    let r = b
        .call(pull_request(0, Some(("SQL92", "a > 100")), 1, None))
        .await;
    assert_eq!(r.code(), ResponseCode::PullRetryImmediately.code());
    // Bad expressions: refused, not delivered unfiltered.
    for bad in ["a > 'x'", "a >", ""] {
        let r = b.call(pull_request(0, Some(("SQL92", bad)), 1, None)).await;
        assert_eq!(
            r.code(),
            ResponseCode::SubscriptionParseFailed.code(),
            "{bad:?}"
        );
        assert_eq!(r.remark(), Some("parse the consumer's subscription failed"));
    }
    b.stop().await;
}

#[tokio::test]
async fn a_pull_without_subscription_uses_the_registered_filter() {
    let b = Running::start(|c, _| c.enable_property_filter = true).await;
    send_ten(&b).await;
    // No heartbeat yet: the group is unknown.
    let r = b.call(pull_request(0, None, 1, None)).await;
    assert_eq!(r.code(), ResponseCode::SubscriptionNotExist.code());
    assert_eq!(b.call(heartbeat("a < 3", 10)).await.code(), 0);
    let r = b.call(pull_request(0, None, 10, None)).await;
    assert_eq!(bodies(&r), ["m0", "m1", "m2"]);
    // The client's subscription is newer than the broker's.
    let r = b.call(pull_request(0, None, 11, None)).await;
    assert_eq!(r.code(), ResponseCode::SubscriptionNotLatest.code());
    assert_eq!(r.remark(), Some("the consumer's subscription not latest"));
    // A new version with a new expression is compiled once and used.
    assert_eq!(b.call(heartbeat("a > 7", 11)).await.code(), 0);
    let r = b.call(pull_request(0, None, 11, None)).await;
    assert_eq!(bodies(&r), ["m8", "m9"]);
    // One that does not compile leaves no filter: FILTER_DATA_NOT_EXIST.
    assert_eq!(b.call(heartbeat("a > 'x'", 12)).await.code(), 0);
    let r = b.call(pull_request(0, None, 12, None)).await;
    assert_eq!(r.code(), ResponseCode::FilterDataNotExist.code());
    assert_eq!(
        r.remark(),
        Some("The broker's consumer filter data is not exist!Your expression may be wrong!")
    );
    b.stop().await;
}

#[tokio::test]
async fn a_held_pull_wakes_only_for_a_matching_message() {
    let b = Running::start(|c, _| c.enable_property_filter = true).await;
    send_ten(&b).await;
    let waiter = {
        let client = b.client.clone();
        let addr = b.addr.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let request = pull_request(10, Some(("SQL92", "color = 'blue'")), 1, Some(10_000));
            let r = client
                .invoke(&addr, request, Duration::from_secs(15))
                .await
                .unwrap();
            (r, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..3 {
        b.send(TOPIC, 0, b"red", "color\u{1}red").await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiter.is_finished(),
        "woken by a message that does not match"
    );
    b.send(TOPIC, 0, b"blue", "color\u{1}blue").await;
    let (r, waited) = waiter.await.unwrap();
    assert_eq!(r.code(), 0);
    assert_eq!(bodies(&r), ["blue"]);
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    b.stop().await;
}

/// Messages numbered 0..n with `b` = i mod 100.
async fn send_numbered(b: &Running, n: usize) {
    for i in 0..n {
        let props = format!("b\u{1}{}", i % 100);
        let r = b.send(TOPIC, 0, format!("n{i}").as_bytes(), &props).await;
        assert_eq!(r.code(), 0, "{:?}", r.remark());
    }
    b.dispatched(TOPIC, 0, n as u64).await;
}

/// With the match index a registered filter's pull skips what does not match without
/// reading it, so it scans twenty times as far: a 1% filter fills a whole batch of 32
/// where an unindexed pull gets 8 of its 800 units.
#[tokio::test]
async fn registered_filters_pull_through_their_match_index() {
    for index in [true, false] {
        let b = Running::start(|c, _| {
            c.enable_property_filter = true;
            c.filter_match_index_enable = index;
        })
        .await;
        // Registered before the messages arrive, so dispatch indexes them.
        assert_eq!(b.call(heartbeat("b = 0", 1)).await.code(), 0);
        send_numbered(&b, 3300).await;
        let want: Vec<String> = (0..32).map(|i| format!("n{}", i * 100)).collect();
        for carried in [false, true] {
            let sub = carried.then_some(("SQL92", "b = 0"));
            let r = b.call(pull_request(0, sub, 1, None)).await;
            let got = bodies(&r);
            if index {
                assert_eq!(got, want, "carried subscription: {carried}");
            } else {
                assert_eq!(got, want[..8], "carried subscription: {carried}");
            }
        }
        // Another expression in the pull has no index: record by record.
        let r = b
            .call(pull_request(0, Some(("SQL92", "b = 1")), 1, None))
            .await;
        assert_eq!(bodies(&r).len(), 8);
        b.stop().await;
    }
}
