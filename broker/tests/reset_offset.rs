//! Server-side offset reset (INVOKE_BROKER_TO_RESET_OFFSET with RocketMQ 5's
//! `useServerSideResetOffset`, on by default) through a broker in process: the broker
//! resets an offline group itself, its old commits cannot undo the reset, its next pull
//! is moved to the new offset (a held pull at once), and every refusal carries Apache
//! 5.3.3's code and remark. With the key off, the 4.9 answer for an offline group.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

mod support;

use std::time::{Duration, Instant};

use remoting::protocol::admin::ResetOffsetBody;
use remoting::protocol::broker::{
    PullMessageRequestHeader, PullMessageResponseHeader, QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader, ResetOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use remoting::protocol::constants::pull_sys_flag;
use remoting::{RemotingCommand, RequestCode, ResponseCode, fastjson};
use support::Running;

const TOPIC: &str = "ResetT";
const GROUP: &str = "reset_cg";
const QUEUES: i32 = 4;
const PER_QUEUE: u64 = 5;

fn reset_request(
    topic: &str,
    group: &str,
    timestamp: i64,
    queue: Option<(i32, i64)>,
) -> RemotingCommand {
    let header = ResetOffsetRequestHeader {
        group: group.into(),
        topic: topic.into(),
        queue_id: queue.map(|(q, _)| q),
        offset: Some(queue.map_or(-1, |(_, o)| o)),
        timestamp,
        is_force: true,
    };
    RemotingCommand::request_with(RequestCode::InvokeBrokerToResetOffset, &header)
}

fn pull_request(
    queue_id: i32,
    offset: i64,
    commit: Option<i64>,
    suspend_ms: Option<i64>,
) -> RemotingCommand {
    let mut flag = pull_sys_flag::SUBSCRIPTION;
    if commit.is_some() {
        flag |= pull_sys_flag::COMMIT_OFFSET;
    }
    if suspend_ms.is_some() {
        flag |= pull_sys_flag::SUSPEND;
    }
    let header = PullMessageRequestHeader {
        consumer_group: GROUP.into(),
        topic: TOPIC.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: flag,
        commit_offset: commit.unwrap_or(0),
        suspend_timeout_millis: suspend_ms.unwrap_or(0),
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        ..PullMessageRequestHeader::default()
    };
    RemotingCommand::request_with(RequestCode::PullMessage, &header)
}

async fn query(b: &Running, queue_id: i32) -> i64 {
    let header = QueryConsumerOffsetRequestHeader {
        consumer_group: GROUP.into(),
        topic: TOPIC.into(),
        queue_id,
        set_zero_if_not_found: Some(false),
    };
    let resp = b
        .call(RemotingCommand::request_with(
            RequestCode::QueryConsumerOffset,
            &header,
        ))
        .await;
    assert_eq!(resp.code(), 0, "{:?}", resp.remark());
    resp.decode_header::<QueryConsumerOffsetResponseHeader>()
        .unwrap()
        .offset
}

async fn update(b: &Running, queue_id: i32, offset: i64) -> RemotingCommand {
    let header = UpdateConsumerOffsetRequestHeader {
        consumer_group: GROUP.into(),
        topic: TOPIC.into(),
        queue_id,
        commit_offset: offset,
    };
    b.call(RemotingCommand::request_with(
        RequestCode::UpdateConsumerOffset,
        &header,
    ))
    .await
}

/// A topic with [`PER_QUEUE`] messages in each queue, and [`GROUP`] at the end of each.
async fn consumed_topic(b: &Running) {
    for q in 0..QUEUES {
        for i in 0..PER_QUEUE {
            let sent = b.send(TOPIC, q, format!("m{q}-{i}").as_bytes(), "").await;
            assert_eq!(sent.code(), 0, "{:?}", sent.remark());
        }
        b.dispatched(TOPIC, q, PER_QUEUE).await;
        // The pull creates the group; its commit records the end.
        let pulled = b.call(pull_request(q, 0, None, None)).await;
        assert_eq!(pulled.code(), 0, "{:?}", pulled.remark());
        assert_eq!(update(b, q, PER_QUEUE as i64).await.code(), 0);
    }
}

fn body(resp: &RemotingCommand) -> ResetOffsetBody {
    fastjson::from_slice(&resp.body.to_bytes()).unwrap()
}

#[tokio::test]
async fn an_offline_group_is_reset_and_its_next_pull_follows() {
    let b = Running::start(|_, _| {}).await;
    consumed_topic(&b).await;

    let resp = b.call(reset_request(TOPIC, GROUP, 0, None)).await;
    assert_eq!(resp.code(), 0, "{:?}", resp.remark());
    let table = body(&resp).offset_table;
    assert_eq!(table.len(), QUEUES as usize, "{table:?}");
    assert!(table.values().all(|o| *o == 0), "{table:?}");
    for q in 0..QUEUES {
        assert_eq!(query(&b, q).await, 0);
    }

    // The group's stale position (an in-flight commit of the old offset) is ignored.
    let stale = update(&b, 0, PER_QUEUE as i64).await;
    assert_eq!(stale.code(), 0);
    assert_eq!(stale.remark(), Some("Offset has been previously reset"));
    assert_eq!(query(&b, 0).await, 0);

    // A pull from the old position (committing it) is moved to the reset offset.
    let moved = b
        .call(pull_request(
            0,
            PER_QUEUE as i64,
            Some(PER_QUEUE as i64),
            None,
        ))
        .await;
    assert_eq!(moved.code(), ResponseCode::PullOffsetMoved.code());
    assert_eq!(moved.remark(), Some("OFFSET_RESET"));
    let h: PullMessageResponseHeader = moved.decode_header().unwrap();
    assert_eq!(h.next_begin_offset, 0);
    assert_eq!(h.max_offset, PER_QUEUE as i64);
    assert_eq!(
        query(&b, 0).await,
        0,
        "the pull's commit did not undo the reset"
    );
    // Taken: the pull from the new offset gets the messages, commits count again.
    let again = b.call(pull_request(0, 0, Some(0), None)).await;
    assert_eq!(again.code(), 0, "{:?}", again.remark());
    assert_eq!(update(&b, 0, 3).await.remark(), None);
    assert_eq!(query(&b, 0).await, 3);

    // A client already reading from the reset offset is not bounced.
    let direct = b.call(pull_request(1, 0, None, None)).await;
    assert_eq!(direct.code(), 0, "{:?}", direct.remark());

    // One queue to an exact offset; -1 as the timestamp means the queue's end.
    let one = b.call(reset_request(TOPIC, GROUP, 0, Some((2, 3)))).await;
    assert_eq!(one.code(), 0, "{:?}", one.remark());
    let table = body(&one).offset_table;
    assert_eq!(table.len(), 1);
    assert_eq!(
        table.iter().next().map(|(q, o)| (q.queue_id, *o)),
        Some((2, 3))
    );
    assert_eq!(query(&b, 2).await, 3);
    let end = b.call(reset_request(TOPIC, GROUP, -1, None)).await;
    assert!(
        body(&end)
            .offset_table
            .values()
            .all(|o| *o == PER_QUEUE as i64)
    );
    b.stop().await;
}

#[tokio::test]
async fn a_held_pull_of_the_group_takes_the_reset_at_once() {
    let b = Running::start(|_, _| {}).await;
    consumed_topic(&b).await;
    let client = b.client.clone();
    let addr = b.addr.clone();
    let held = tokio::spawn(async move {
        let started = Instant::now();
        let resp = client
            .invoke(
                &addr,
                pull_request(3, PER_QUEUE as i64, None, Some(15_000)),
                Duration::from_secs(20),
            )
            .await
            .unwrap();
        (resp, started.elapsed())
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while b.broker.pull_hold.held() == 0 {
        assert!(Instant::now() < deadline, "the pull was not held");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let resp = b.call(reset_request(TOPIC, GROUP, 0, None)).await;
    assert_eq!(resp.code(), 0, "{:?}", resp.remark());
    let (pulled, waited) = held.await.unwrap();
    assert_eq!(pulled.code(), ResponseCode::PullOffsetMoved.code());
    let h: PullMessageResponseHeader = pulled.decode_header().unwrap();
    assert_eq!(h.next_begin_offset, 0);
    assert!(waited < Duration::from_secs(10), "woken after {waited:?}");
    b.stop().await;
}

#[tokio::test]
async fn refusals_carry_apaches_codes_and_remarks() {
    let b = Running::start(|_, _| {}).await;
    consumed_topic(&b).await;
    let cases = [
        (
            reset_request("NoSuchTopic", GROUP, 0, None),
            ResponseCode::TopicNotExist,
            "Topic NoSuchTopic does not exist".to_owned(),
        ),
        (
            reset_request(TOPIC, "no_such_group", 0, None),
            ResponseCode::SubscriptionGroupNotExist,
            "Group no_such_group does not exist".to_owned(),
        ),
        (
            reset_request(TOPIC, GROUP, 0, Some((0, 100))),
            ResponseCode::SystemError,
            format!("Target offset 100 not in consume queue range [0-{PER_QUEUE}]"),
        ),
    ];
    for (request, code, remark) in cases {
        let resp = b.call(request).await;
        assert_eq!(resp.code(), code.code(), "{:?}", resp.remark());
        assert_eq!(resp.remark(), Some(remark.as_str()));
    }
    // One past the end is a valid target (where the next message will be).
    let past = b
        .call(reset_request(
            TOPIC,
            GROUP,
            0,
            Some((0, PER_QUEUE as i64 + 1)),
        ))
        .await;
    assert_eq!(past.code(), 0, "{:?}", past.remark());
    b.stop().await;

    let slave = Running::start(|c, _| {
        c.broker_role = broker::config::BrokerRole::SLAVE;
        c.broker_id = 1;
    })
    .await;
    let resp = slave.call(reset_request(TOPIC, GROUP, 0, None)).await;
    assert_eq!(resp.code(), ResponseCode::SystemError.code());
    assert_eq!(resp.remark(), Some("Can not reset offset in slave broker"));
    slave.stop().await;
}

#[tokio::test]
async fn without_the_key_an_offline_group_is_left_to_the_tools() {
    let b = Running::start(|c, _| c.use_server_side_reset_offset = false).await;
    consumed_topic(&b).await;
    let resp = b.call(reset_request(TOPIC, GROUP, 0, None)).await;
    assert_eq!(resp.code(), ResponseCode::ConsumerNotOnline.code());
    assert_eq!(query(&b, 0).await, PER_QUEUE as i64);
    b.stop().await;
}
