//! POP consumption through a broker in process (RocketMQ 5's POP_MESSAGE, ACK_MESSAGE,
//! CHANGE_MESSAGE_INVISIBLETIME): popped messages are invisible until acked; un-acked
//! ones come back from the group's retry topic after their invisible time with their
//! reconsume times one higher; acked ones never come back; a pop that finds nothing is
//! held until a message arrives; refusals as RocketMQ 5.3.3 answers them.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_wrap,
    reason = "test code: a failed step should fail the test"
)]

mod support;

use std::time::{Duration, Instant};

use message::properties;
use message::record::{self, Record};
use remoting::protocol::pop::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ExtraInfo, POP_CK,
    PopMessageRequestHeader, PopMessageResponseHeader, RetryFlag, parse_msg_offset_info,
    parse_order_count_info, parse_start_offset_info,
};
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use support::Running;

const TOPIC: &str = "PopT";
const GROUP: &str = "GID_pop";

/// One popped message as a client sees it: its receipt (POP_CK), real topic, body.
#[derive(Debug, Clone)]
struct Popped {
    extra: ExtraInfo,
    topic: String,
    queue_id: i32,
    offset: i64,
    body: Vec<u8>,
    reconsume_times: i32,
}

fn pop_request(queue_id: i32, max: i32, invisible_ms: i64, poll_ms: i64) -> RemotingCommand {
    let h = PopMessageRequestHeader {
        consumer_group: GROUP.into(),
        topic: TOPIC.into(),
        queue_id,
        max_msg_nums: max,
        invisible_time: invisible_ms,
        poll_time: poll_ms,
        born_time: Some(broker::clock::now_ms()),
        init_mode: 0,
        exp_type: Some("TAG".into()),
        exp: Some("*".into()),
        order: Some(false),
        attempt_id: None,
    };
    RemotingCommand::request_with(RequestCode::PopMessage, &h)
}

/// The messages of a pop response, with the receipts a client builds
/// (`MQClientAPIImpl.processPopResponse`).
fn popped(response: &RemotingCommand) -> Vec<Popped> {
    popped_on(response, TOPIC)
}

/// [`popped`] of a pop of `topic`.
fn popped_on(response: &RemotingCommand, topic: &str) -> Vec<Popped> {
    if response.code() != ResponseCode::Success.code() {
        return Vec::new();
    }
    let h: PopMessageResponseHeader = response.decode_header().unwrap();
    let starts = parse_start_offset_info(h.start_offset_info.as_deref().unwrap_or("")).unwrap();
    let msgs = parse_msg_offset_info(h.msg_offset_info.as_deref().unwrap_or("")).unwrap();
    let body = response.body.to_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let Ok(Some(Record::Message(m))) = record::decode(&body[at..]) else {
            panic!("pop body does not decode at {at}");
        };
        at += m.total_size as usize;
        let props = m.properties_str().into_owned();
        let extra = match properties::get(&props, POP_CK) {
            Some(ck) => ExtraInfo::parse(ck).unwrap(),
            None => {
                let key = format!("{}@{}", RetryFlag::of_topic(m.topic).as_str(), m.queue_id);
                let offsets = &msgs[&key];
                assert!(offsets.contains(&(m.queue_offset as i64)));
                ExtraInfo {
                    ck_queue_offset: starts[&key],
                    pop_time: h.pop_time,
                    invisible_time: h.invisible_time,
                    revive_qid: h.revive_qid,
                    retry: RetryFlag::of_topic(m.topic),
                    broker_name: "broker-a".into(),
                    queue_id: m.queue_id,
                    queue_offset: Some(m.queue_offset as i64),
                }
            }
        };
        out.push(Popped {
            topic: extra.real_topic(m.topic, GROUP),
            queue_id: extra.queue_id,
            offset: extra.queue_offset.unwrap(),
            extra,
            body: m.body.to_vec(),
            reconsume_times: m.reconsume_times,
        });
        assert_eq!(m.topic, topic, "a pop answers under the topic popped");
    }
    out
}

async fn ack(b: &Running, p: &Popped) -> RemotingCommand {
    let h = AckMessageRequestHeader {
        consumer_group: GROUP.into(),
        topic: p.topic.clone(),
        queue_id: p.queue_id,
        extra_info: p.extra.encode(),
        offset: p.offset,
    };
    b.call(RemotingCommand::request_with(RequestCode::AckMessage, &h))
        .await
}

async fn send_n(b: &Running, n: usize) {
    for i in 0..n {
        let r = b
            .send(TOPIC, (i % 4) as i32, format!("m{i}").as_bytes(), "")
            .await;
        assert_eq!(r.code(), 0, "{:?}", r.remark());
    }
}

/// Pops until `want` messages came or `limit` passed.
async fn pop_until(b: &Running, want: usize, invisible_ms: i64, limit: Duration) -> Vec<Popped> {
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    while got.len() < want && Instant::now() < deadline {
        let r = b.call(pop_request(-1, 32, invisible_ms, 0)).await;
        let batch = popped(&r);
        if batch.is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        got.extend(batch);
    }
    got
}

/// A broker writing each pop's checkpoint at once (`enablePopBufferMerge=false`).
async fn started() -> Running {
    let b = Running::start(|c, _| {
        c.enable_pop_buffer_merge = false;
        c.revive_interval = 200;
        // Retries read first never, so a pop of the topic sees the topic first.
        c.pop_from_retry_probability = 0;
    })
    .await;
    // The topic, with 4 queues.
    let r = b.send(TOPIC, 0, b"create", "").await;
    assert_eq!(r.code(), 0);
    b
}

/// [`started`] with the checkpoint buffer on (`enablePopBufferMerge`).
async fn started_buffering() -> Running {
    let b = Running::start(|c, _| {
        c.revive_interval = 200;
        c.pop_from_retry_probability = 0;
        c.enable_pop_buffer_merge = true;
    })
    .await;
    let r = b.send(TOPIC, 0, b"create", "").await;
    assert_eq!(r.code(), 0);
    b
}

#[tokio::test]
async fn acked_messages_never_come_back() {
    let b = started().await;
    send_n(&b, 19).await;
    let got = pop_until(&b, 20, 1500, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 20, "{got:?}");
    for p in &got {
        assert_eq!(p.reconsume_times, 0);
        let r = ack(&b, p).await;
        assert_eq!(r.code(), 0, "{:?}", r.remark());
    }
    // Well past the invisible time and the revive: nothing comes back.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let again = pop_until(&b, 1, 1500, Duration::from_millis(500)).await;
    assert!(again.is_empty(), "acked messages came back: {again:?}");
    b.stop().await;
}

/// A pop's messages acked all at once, as a consumer's threads ack them: the acks of
/// one burst share a record per checkpoint (`bAck`), and stay acks.
#[tokio::test]
async fn acks_sent_together_share_records_and_stay_acked() {
    let b = started().await;
    send_n(&b, 31).await;
    let got = pop_until(&b, 32, 1500, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 32, "{got:?}");
    let parked = || {
        b.broker
            .store
            .max_offset_in_queue(broker::timer::TIMER_TOPIC, 0)
    };
    let before = parked();
    let answers = futures::future::join_all(got.iter().map(|p| ack(&b, p))).await;
    for r in &answers {
        assert_eq!(r.code(), 0, "{:?}", r.remark());
    }
    // Every record waits in the timer wheel for its checkpoint's revive time.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let records = parked() - before;
    println!("32 acks of {} checkpoints in {records} records", {
        let mut cks: Vec<_> = got
            .iter()
            .map(|p| (p.queue_id, p.extra.ck_queue_offset))
            .collect();
        cks.sort_unstable();
        cks.dedup();
        cks.len()
    });
    assert!(
        (1..32).contains(&records),
        "32 acks sent together took {records} records"
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    let again = pop_until(&b, 1, 1500, Duration::from_millis(500)).await;
    assert!(again.is_empty(), "acked messages came back: {again:?}");
    b.stop().await;
}

#[tokio::test]
async fn un_acked_messages_come_back_from_the_retry_topic() {
    let b = started().await;
    send_n(&b, 9).await;
    let got = pop_until(&b, 10, 1000, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 10);
    let (keep, drop_): (Vec<_>, Vec<_>) = got.iter().partition(|p| p.offset % 2 == 0);
    for p in &keep {
        assert_eq!(ack(&b, p).await.code(), 0);
    }
    let popped_at = Instant::now();
    let back = pop_until(&b, drop_.len(), 60_000, Duration::from_secs(15)).await;
    let waited = popped_at.elapsed();
    println!("{} un-acked messages back after {waited:?}", back.len());
    let mut want: Vec<Vec<u8>> = drop_.iter().map(|p| p.body.clone()).collect();
    let mut came: Vec<Vec<u8>> = back.iter().map(|p| p.body.clone()).collect();
    want.sort();
    came.sort();
    assert_eq!(came, want, "exactly the un-acked messages come back");
    for p in &back {
        assert_eq!(p.reconsume_times, 1);
        assert_eq!(p.extra.retry, RetryFlag::V1);
        assert_eq!(p.topic, format!("%RETRY%{GROUP}_{TOPIC}"));
        // Acked now (from the retry topic), they stay acked.
        assert_eq!(ack(&b, p).await.code(), 0);
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    let none = pop_until(&b, 1, 60_000, Duration::from_millis(300)).await;
    assert!(none.is_empty(), "{none:?}");
    b.stop().await;
}

#[tokio::test]
async fn a_changed_invisible_time_brings_a_message_back_at_the_new_time() {
    let b = started().await;
    let got = pop_until(&b, 1, 120_000, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 1);
    let p = &got[0];
    let h = ChangeInvisibleTimeRequestHeader {
        consumer_group: GROUP.into(),
        topic: p.topic.clone(),
        queue_id: p.queue_id,
        extra_info: p.extra.encode(),
        offset: p.offset,
        invisible_time: 1000,
    };
    let r = b
        .call(RemotingCommand::request_with(
            RequestCode::ChangeMessageInvisibletime,
            &h,
        ))
        .await;
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    let back = pop_until(&b, 1, 120_000, Duration::from_secs(10)).await;
    assert_eq!(
        back.len(),
        1,
        "the message came back after its new invisible time"
    );
    assert_eq!(back[0].body, p.body);
    b.stop().await;
}

#[tokio::test]
async fn a_held_pop_is_answered_when_a_message_arrives() {
    let b = started().await;
    // Drain what is there.
    let _ = pop_until(&b, 1, 60_000, Duration::from_secs(3)).await;
    let client = b.client.clone();
    let addr = b.addr.clone();
    let held = tokio::spawn(async move {
        let started = Instant::now();
        let r = client
            .invoke(
                &addr,
                pop_request(-1, 32, 60_000, 10_000),
                Duration::from_secs(15),
            )
            .await
            .unwrap();
        (started.elapsed(), r)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let r = b.send(TOPIC, 2, b"late", "").await;
    assert_eq!(r.code(), 0);
    let (took, r) = held.await.unwrap();
    let got = popped(&r);
    assert_eq!(got.len(), 1, "{:?} {:?}", r.code(), r.remark());
    assert_eq!(got[0].body, b"late");
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    // An empty topic with a poll time: POLLING_TIMEOUT at the poll time.
    let started = Instant::now();
    let r = b.call(pop_request(-1, 32, 60_000, 700)).await;
    assert_eq!(r.code(), ResponseCode::PollingTimeout.code());
    assert!(started.elapsed() >= Duration::from_millis(500));
    b.stop().await;
}

#[tokio::test]
async fn pops_are_refused_as_rocketmq_refuses_them() {
    let b = started().await;
    let r = b.call(pop_request(-1, 33, 60_000, 0)).await;
    assert_eq!(r.code(), ResponseCode::InvalidParameter.code());
    assert_eq!(
        r.remark(),
        Some("the broker[127.0.0.1] pop message's num is greater than 32")
    );
    let mut missing = pop_request(-1, 1, 60_000, 0);
    missing.header.ext_fields.insert("topic", "NoSuchTopic");
    let r = b.call(missing).await;
    assert_eq!(r.code(), ResponseCode::TopicNotExist.code());
    let r = b.call(pop_request(9, 1, 60_000, 0)).await;
    assert_eq!(r.code(), ResponseCode::InvalidParameter.code());
    b.stop().await;
}

#[tokio::test]
async fn un_acked_messages_come_back_after_a_restart() {
    let b = started().await;
    send_n(&b, 3).await;
    let got = pop_until(&b, 4, 2000, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 4);
    let b = b
        .restart(|c, _| {
            c.revive_interval = 200;
            c.pop_from_retry_probability = 0;
        })
        .await;
    let back = pop_until(&b, 4, 60_000, Duration::from_secs(15)).await;
    let mut want: Vec<Vec<u8>> = got.iter().map(|p| p.body.clone()).collect();
    let mut came: Vec<Vec<u8>> = back.iter().map(|p| p.body.clone()).collect();
    want.sort();
    came.sort();
    assert_eq!(came, want);
    b.stop().await;
}

fn orderly_pop(attempt: &str, max: i32, invisible_ms: i64, poll_ms: i64) -> RemotingCommand {
    let mut r = pop_request(-1, max, invisible_ms, poll_ms);
    r.header.ext_fields.insert("order", "true");
    r.header.ext_fields.insert("attemptId", attempt);
    r
}

fn offsets_of(got: &[Popped]) -> Vec<i64> {
    got.iter().map(|p| p.offset).collect()
}

#[tokio::test]
async fn an_orderly_pop_locks_its_queue_until_the_batch_is_acked_or_visible_again() {
    let b = Running::start(|c, _| c.revive_interval = 200).await;
    for i in 0..6 {
        let r = b.send(TOPIC, 0, format!("o{i}").as_bytes(), "").await;
        assert_eq!(r.code(), 0);
    }
    let r = b.call(orderly_pop("a1", 3, 1500, 0)).await;
    let first = popped(&r);
    assert_eq!(offsets_of(&first), vec![0, 1, 2]);
    assert!(first.iter().all(|p| p.extra.is_order()));
    let h: PopMessageResponseHeader = r.decode_header().unwrap();
    assert_eq!(h.revive_qid, 999);
    let counts = parse_order_count_info(h.order_count_info.as_deref().unwrap()).unwrap();
    assert_eq!(counts.get("0@0"), Some(&0));
    // Locked: another attempt gets nothing while the batch is out.
    assert!(popped(&b.call(orderly_pop("a2", 3, 1500, 0)).await).is_empty());
    for p in &first[..2] {
        assert_eq!(ack(&b, p).await.code(), 0);
    }
    assert!(popped(&b.call(orderly_pop("a3", 3, 1500, 0)).await).is_empty());
    // A held pop is answered when the last ack frees the queue.
    let client = b.client.clone();
    let addr = b.addr.clone();
    let held = tokio::spawn(async move {
        let started = Instant::now();
        let r = client
            .invoke(
                &addr,
                orderly_pop("a4", 3, 1500, 8000),
                Duration::from_secs(15),
            )
            .await
            .unwrap();
        (started.elapsed(), r)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(ack(&b, &first[2]).await.code(), 0);
    let (took, r) = held.await.unwrap();
    let second = popped(&r);
    assert_eq!(offsets_of(&second), vec![3, 4, 5]);
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    assert_eq!(
        b.broker.offsets.query(GROUP, TOPIC, 0),
        Some(3),
        "the offset is the batch's start until it is acked"
    );
    // Not acked: the same batch comes back once visible again, counted.
    tokio::time::sleep(Duration::from_millis(1700)).await;
    let r = b.call(orderly_pop("a5", 3, 60_000, 0)).await;
    let third = popped(&r);
    assert_eq!(offsets_of(&third), vec![3, 4, 5]);
    let h: PopMessageResponseHeader = r.decode_header().unwrap();
    let counts = parse_order_count_info(h.order_count_info.as_deref().unwrap()).unwrap();
    assert_eq!(counts.get("0@qo0%3"), Some(&1), "{counts:?}");
    // A change of invisible time on one of them frees the queue at the new time.
    let p = &third[0];
    let change = ChangeInvisibleTimeRequestHeader {
        consumer_group: GROUP.into(),
        topic: p.topic.clone(),
        queue_id: p.queue_id,
        extra_info: p.extra.encode(),
        offset: p.offset,
        invisible_time: 0,
    };
    for q in &third[1..] {
        assert_eq!(ack(&b, q).await.code(), 0);
    }
    let r = b
        .call(RemotingCommand::request_with(
            RequestCode::ChangeMessageInvisibletime,
            &change,
        ))
        .await;
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    // Read again from the first message not acked (RocketMQ re-reads the rest too).
    let again = popped(&b.call(orderly_pop("a6", 3, 60_000, 0)).await);
    assert_eq!(offsets_of(&again), vec![3, 4, 5]);
    b.stop().await;
}

#[tokio::test]
async fn peek_notification_and_polling_info() {
    use remoting::protocol::pop::{
        NotificationRequestHeader, NotificationResponseHeader, PeekMessageRequestHeader,
        PollingInfoRequestHeader, PollingInfoResponseHeader,
    };
    let b = started().await;
    let _ = pop_until(&b, 1, 60_000, Duration::from_secs(3)).await;
    // Nothing to pop: a notification waits, and the arrival answers it.
    let notification = |poll: i64| {
        RemotingCommand::request_with(
            RequestCode::Notification,
            &NotificationRequestHeader {
                consumer_group: GROUP.into(),
                topic: TOPIC.into(),
                queue_id: -1,
                poll_time: poll,
                born_time: Some(broker::clock::now_ms()),
                order: Some(false),
                attempt_id: None,
            },
        )
    };
    let r = b.call(notification(0)).await;
    let h: NotificationResponseHeader = r.decode_header().unwrap();
    assert!(!h.has_msg);
    let (client, addr) = (b.client.clone(), b.addr.clone());
    let waiting = tokio::spawn(async move {
        client
            .invoke(&addr, notification(8000), Duration::from_secs(12))
            .await
            .unwrap()
    });
    // And a held pop, counted by POLLING_INFO.
    let (client, addr) = (b.client.clone(), b.addr.clone());
    let held_pop = tokio::spawn(async move {
        client
            .invoke(
                &addr,
                pop_request(-1, 32, 60_000, 8000),
                Duration::from_secs(12),
            )
            .await
            .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    let info = b
        .call(RemotingCommand::request_with(
            RequestCode::PollingInfo,
            &PollingInfoRequestHeader {
                consumer_group: GROUP.into(),
                topic: TOPIC.into(),
                queue_id: -1,
            },
        ))
        .await;
    let info: PollingInfoResponseHeader = info.decode_header().unwrap();
    assert_eq!(info.polling_num, 1);
    assert_eq!(b.send(TOPIC, 1, b"peeked", "").await.code(), 0);
    let r = waiting.await.unwrap();
    let h: NotificationResponseHeader = r.decode_header().unwrap();
    assert!(h.has_msg);
    assert_eq!(popped(&held_pop.await.unwrap()).len(), 1);
    // Peek shows what a pop would get and takes nothing.
    assert_eq!(b.send(TOPIC, 1, b"twice", "").await.code(), 0);
    b.dispatched(TOPIC, 1, 2).await;
    let peek = RemotingCommand::request_with(
        RequestCode::PeekMessage,
        &PeekMessageRequestHeader {
            topic: TOPIC.into(),
            queue_id: -1,
            max_msg_nums: 32,
            consumer_group: GROUP.into(),
        },
    );
    for _ in 0..2 {
        let r = b.call(peek.clone()).await;
        assert_eq!(r.code(), 0, "{:?}", r.remark());
        assert!(!r.body.is_empty());
    }
    let got = pop_until(&b, 1, 60_000, Duration::from_secs(3)).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, b"twice");
    let r = b.call(peek).await;
    assert_eq!(r.code(), ResponseCode::PullNotFound.code());
    b.stop().await;
}

#[tokio::test]
async fn a_priority_topic_is_popped_highest_priority_first() {
    use remoting::protocol::broker::{CreateTopicRequestHeader, SendMessageResponseHeader};
    const PRIO: &str = "PrioT";
    let b = Running::start(|_, _| {}).await;
    let create = RemotingCommand::request_with(
        RequestCode::UpdateAndCreateTopic,
        &CreateTopicRequestHeader {
            topic: PRIO.into(),
            default_topic: "TBW102".into(),
            read_queue_nums: 8,
            write_queue_nums: 8,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_sys_flag: Some(0),
            order: false,
            attributes: Some("+message.type=PRIORITY".into()),
            force: None,
        },
    );
    let r = b.call(create).await;
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    // The priority picks the queue (clamped to the last one); the client's choice and a
    // priority on a FIFO message do not count.
    let mut sent = 0;
    for p in [0, 3, 7, 9, 12] {
        let r = b
            .send(
                PRIO,
                1,
                format!("p{p}").as_bytes(),
                &format!("_SYS_MSG_PRIORITY_\u{1}{p}\u{2}"),
            )
            .await;
        let h: SendMessageResponseHeader = r.decode_header().unwrap();
        assert_eq!(h.queue_id, p.min(7), "priority {p}");
        sent += 1;
    }
    let r = b
        .send(
            PRIO,
            2,
            b"fifo",
            "_SYS_MSG_PRIORITY_\u{1}6\u{2}__SHARDINGKEY\u{1}k\u{2}",
        )
        .await;
    let h: SendMessageResponseHeader = r.decode_header().unwrap();
    assert_eq!(h.queue_id, 2, "a FIFO message keeps its queue");
    sent += 1;
    // A backlog on every priority: pops take the highest first.
    for p in 0..8 {
        for i in 0..3 {
            let r = b
                .send(
                    PRIO,
                    0,
                    format!("b{p}.{i}").as_bytes(),
                    &format!("_SYS_MSG_PRIORITY_\u{1}{p}\u{2}"),
                )
                .await;
            assert_eq!(r.code(), 0);
            sent += 1;
        }
    }
    let pop = |max: i32| {
        let mut r = pop_request(-1, max, 60_000, 0);
        r.header.ext_fields.insert("topic", PRIO);
        r
    };
    let mut order = Vec::new();
    while order.len() < sent {
        let got = popped_on(&b.call(pop(4)).await, PRIO);
        assert!(!got.is_empty(), "only {} of {sent} popped", order.len());
        order.extend(got.into_iter().map(|p| p.queue_id));
    }
    let mut sorted = order.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(order, sorted, "queues popped highest first: {order:?}");
    b.stop().await;
}

#[tokio::test]
async fn a_held_pop_after_a_revive_is_still_answered() {
    let b = started().await;
    let first = pop_until(&b, 1, 1000, Duration::from_secs(3)).await;
    assert_eq!(first.len(), 1);
    let back = pop_until(&b, 1, 60_000, Duration::from_secs(10)).await;
    assert_eq!(back.len(), 1, "revived");
    assert_eq!(ack(&b, &back[0]).await.code(), 0);
    for poll in [3000, 3000] {
        let started = Instant::now();
        let r = b
            .client
            .invoke(
                &b.addr,
                pop_request(-1, 32, 60_000, poll),
                Duration::from_secs(10),
            )
            .await;
        let took = started.elapsed();
        let r = r.unwrap_or_else(|e| panic!("held pop not answered in 10 s ({e}) after {took:?}"));
        assert_eq!(r.code(), ResponseCode::PollingTimeout.code());
        assert!(took < Duration::from_secs(4), "{took:?}");
    }
    b.stop().await;
}

#[tokio::test]
async fn a_held_pop_without_a_born_time_times_out_at_its_poll_time() {
    // Apache's proxy sends bornTime=0: the poll time counts from the pop's arrival, not
    // from each run of the held pop.
    let b = started().await;
    let _ = pop_until(&b, 1, 60_000, Duration::from_secs(3)).await;
    let mut r = pop_request(-1, 32, 60_000, 1500);
    r.header.ext_fields.insert("bornTime", "0");
    let (client, addr) = (b.client.clone(), b.addr.clone());
    let held = tokio::spawn(async move {
        let started = Instant::now();
        let r = client.invoke(&addr, r, Duration::from_secs(10)).await;
        (started.elapsed(), r)
    });
    let (took, r) = held.await.unwrap();
    let r = r.unwrap_or_else(|e| panic!("not answered: {e} after {took:?}"));
    assert!(
        took < Duration::from_millis(2500),
        "a 1.5 s poll answered after {took:?} (code {})",
        r.code()
    );
    b.stop().await;
}

/// Records parked in the timer wheel so far (every revive-log record goes there first).
fn parked_records(b: &Running) -> u64 {
    b.broker
        .store
        .max_offset_in_queue(broker::timer::TIMER_TOPIC, 0)
}

fn committed(b: &Running, queue_id: i32) -> i64 {
    b.broker.offsets.query(GROUP, TOPIC, queue_id).unwrap_or(-1)
}

/// Batches acked while their checkpoints are still in memory (`pop::ck_buffer`) write
/// no record at all: the offset passes them, and a restart does not bring them back.
#[tokio::test]
async fn batches_acked_in_memory_write_nothing_and_stay_acked() {
    let b = started_buffering().await;
    send_n(&b, 39).await;
    let before = parked_records(&b);
    let got = pop_until(&b, 40, 60_000, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 40, "{got:?}");
    let answers = futures::future::join_all(got.iter().map(|p| ack(&b, p))).await;
    for r in &answers {
        assert_eq!(r.code(), 0, "{:?}", r.remark());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        parked_records(&b),
        before,
        "no checkpoint and no ack written"
    );
    for q in 0..4 {
        let max = b.broker.store.max_offset_in_queue(TOPIC, q);
        assert_eq!(committed(&b, q), i64::try_from(max).unwrap(), "queue {q}");
    }
    let b = b
        .restart(|c, _| {
            c.revive_interval = 200;
            c.pop_from_retry_probability = 0;
        })
        .await;
    let again = pop_until(&b, 1, 60_000, Duration::from_millis(800)).await;
    assert!(again.is_empty(), "acked messages came back: {again:?}");
    b.stop().await;
}

/// A batch only in memory when the broker stops cleanly is written at the stop: its
/// messages stay invisible across the restart and come back after their invisible time,
/// from the retry topic. (After a crash the offset journal's lines of them bring them
/// back the same way: `integration-tests` pop_crash and the reliability driver.)
#[tokio::test]
async fn buffered_batches_are_written_at_a_clean_stop() {
    let b = started_buffering().await;
    send_n(&b, 7).await;
    let got = pop_until(&b, 8, 6_000, Duration::from_secs(5)).await;
    let popped_at = Instant::now();
    assert_eq!(got.len(), 8);
    assert!(b.role.pop().buffer().buffered() > 0, "held in memory");
    let b = b
        .restart(|c, _| {
            c.revive_interval = 200;
            c.pop_from_retry_probability = 0;
        })
        .await;
    let early = pop_until(&b, 1, 60_000, Duration::from_secs(2)).await;
    assert!(
        early.is_empty(),
        "handed out again before their time: {early:?}"
    );
    let back = pop_until(&b, 8, 60_000, Duration::from_secs(15)).await;
    assert!(popped_at.elapsed() >= Duration::from_millis(5_000));
    let mut want: Vec<Vec<u8>> = got.iter().map(|p| p.body.clone()).collect();
    let mut came: Vec<Vec<u8>> = back.iter().map(|p| p.body.clone()).collect();
    want.sort();
    came.sort();
    assert_eq!(came, want, "every un-acked message comes back");
    assert!(
        back.iter().all(|p| p.reconsume_times == 1),
        "from the retry topic"
    );
    b.stop().await;
}

/// `mqadmin exportPopRecord` (POP_ROLLBACK) writes the checkpoints kept in memory to the
/// revive log, and answers once they are durable.
#[tokio::test]
async fn export_pop_records_writes_the_buffered_checkpoints() {
    let b = started_buffering().await;
    send_n(&b, 7).await;
    let got = pop_until(&b, 8, 60_000, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 8);
    assert!(b.role.pop().buffer().buffered() > 0, "held in memory");
    let r = b
        .call(RemotingCommand::request(RequestCode::PopRollback))
        .await;
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    assert_eq!(b.role.pop().buffer().buffered(), 0, "all written");
    // Still handed out: an ack of the written batch is kept.
    assert_eq!(ack(&b, &got[0]).await.code(), 0);
    b.stop().await;
}

/// A batch not fully acked within its stay in memory is written with what was acked
/// (`bAck`): the rest comes back after the invisible time, the acked ones do not, and
/// the partial ack was answered only once kept.
#[tokio::test]
async fn a_partly_acked_buffered_batch_is_written_and_its_rest_revived() {
    let b = Running::start(|c, _| {
        c.revive_interval = 200;
        c.pop_from_retry_probability = 0;
        c.enable_pop_buffer_merge = true;
        c.pop_ck_stay_buffer_time = 600;
    })
    .await;
    assert_eq!(b.send(TOPIC, 0, b"create", "").await.code(), 0);
    send_n(&b, 7).await;
    let before = parked_records(&b);
    let got = pop_until(&b, 8, 4_000, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 8);
    assert!(
        b.role.pop().buffer().buffered() > 0,
        "the batches are held in memory at first"
    );
    let (acked, rest): (Vec<_>, Vec<_>) = got.iter().partition(|p| p.offset % 2 == 0);
    for p in &acked {
        assert_eq!(ack(&b, p).await.code(), 0);
    }
    assert!(
        parked_records(&b) > before,
        "the partly acked batches were written before their acks were answered"
    );
    let back = pop_until(&b, rest.len(), 60_000, Duration::from_secs(15)).await;
    let mut want: Vec<Vec<u8>> = rest.iter().map(|p| p.body.clone()).collect();
    let mut came: Vec<Vec<u8>> = back.iter().map(|p| p.body.clone()).collect();
    want.sort();
    came.sort();
    assert_eq!(came, want, "exactly the un-acked messages come back");
    assert!(back.iter().all(|p| p.reconsume_times == 1));
    b.stop().await;
}
