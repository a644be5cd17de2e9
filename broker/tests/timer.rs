//! Timer messages (5.x `TIMER_DELIVER_MS` / `TIMER_DELAY_SEC` / `TIMER_DELAY_MS`)
//! through a broker in process: parked in `rmq_sys_wheel_timer`, delivered into their
//! topic at their time and never before it, across a restart, rolled when beyond the
//! window, refused as RocketMQ refuses them.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_wrap,
    reason = "test code: a failed step should fail the test"
)]

mod support;

use std::time::{Duration, Instant};

use message::properties;
use message::record::{self, Record};
use remoting::ResponseCode;
use support::Running;

const TOPIC: &str = "TimerT";

/// The properties of the message at `offset` of the queue, once it is there.
fn stored(b: &Running, topic: &str, queue_id: i32, offset: u64) -> Option<String> {
    let cq = b.broker.store.consume_queues().get(topic, queue_id)?;
    let unit = cq.unit_at(offset)?;
    let bytes = b
        .broker
        .store
        .look_message_by_offset_and_size(unit.commit_log_offset, unit.size as usize)?;
    let Ok(Some(Record::Message(m))) = record::decode(&bytes) else {
        panic!("stored message does not decode");
    };
    Some(m.properties_str().into_owned())
}

/// Waits (up to `limit`) for the `offset`-th message of the queue; returns when it was
/// there and its properties.
async fn arrival(b: &Running, queue_id: i32, offset: u64, limit: Duration) -> (i64, String) {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(props) = stored(b, TOPIC, queue_id, offset) {
            return (broker::clock::now_ms(), props);
        }
        assert!(
            Instant::now() < deadline,
            "timer message {offset} not delivered in {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test]
async fn each_kind_of_timer_is_delivered_at_its_time_and_never_before() {
    let b = Running::start(|_, _| {}).await;
    let now = broker::clock::now_ms();
    let kinds = [
        (0, "TIMER_DELAY_MS\u{1}400\u{2}".to_owned(), now + 400),
        (1, "TIMER_DELAY_SEC\u{1}1\u{2}".to_owned(), now + 1000),
        (
            2,
            format!("TIMER_DELIVER_MS\u{1}{}\u{2}", now + 700),
            now + 700,
        ),
        // On a slot boundary: stored one slot lower, fired exactly then.
        (
            3,
            format!("TIMER_DELIVER_MS\u{1}{}\u{2}", (now / 1000 + 2) * 1000),
            (now / 1000 + 2) * 1000,
        ),
    ];
    for (q, props, _) in &kinds {
        let r = b
            .send(
                TOPIC,
                *q,
                b"timer",
                &format!("{props}UNIQ_KEY\u{1}u{q}\u{2}"),
            )
            .await;
        assert_eq!(r.code(), 0, "{props:?}: {:?}", r.remark());
        // The producer's queue is answered, not the timer topic's, as RocketMQ does.
        let h: remoting::protocol::broker::SendMessageResponseHeader = r.decode_header().unwrap();
        assert_eq!(h.queue_id, *q, "{props:?}");
    }
    let mut by_due = kinds.clone();
    by_due.sort_by_key(|k| k.2);
    for (q, props, due) in &by_due {
        let (at, delivered) = arrival(&b, *q, 0, Duration::from_secs(5)).await;
        eprintln!("{props:?}: delivered {} ms after its time", at - due);
        assert!(at >= *due, "{props:?} delivered {} ms early", due - at);
        assert!(at - due < 500, "{props:?} delivered {} ms late", at - due);
        let [out, enq, deq, real] = properties::get_many(
            &delivered,
            [
                "TIMER_OUT_MS",
                "TIMER_ENQUEUE_MS",
                "TIMER_DEQUEUE_MS",
                "REAL_TOPIC",
            ],
        );
        assert!(
            out.is_some() && enq.is_some() && deq.is_some(),
            "{delivered:?}"
        );
        // Left on the copy, as RocketMQ leaves them (it encodes before clearing).
        assert_eq!(real, Some(TOPIC), "{delivered:?}");
        let deq: i64 = deq.unwrap().parse().unwrap();
        assert!(deq >= *due, "dequeued before due");
    }
    // Each was parked first.
    assert_eq!(
        b.broker.store.max_offset_in_queue("rmq_sys_wheel_timer", 0),
        4
    );
    b.stop().await;
}

#[tokio::test]
async fn past_times_are_delivered_at_once_and_far_ones_refused() {
    let b = Running::start(|_, s| s.timer_max_delay_sec = 60).await;
    let r = b
        .send(TOPIC, 0, b"past", "TIMER_DELAY_SEC\u{1}-5\u{2}")
        .await;
    assert_eq!(r.code(), 0);
    b.dispatched(TOPIC, 0, 1).await;
    assert_eq!(
        b.broker.store.max_offset_in_queue("rmq_sys_wheel_timer", 0),
        0
    );
    let r = b
        .send(TOPIC, 0, b"far", "TIMER_DELAY_SEC\u{1}61\u{2}")
        .await;
    assert_eq!(r.code(), ResponseCode::MessageIllegal.code());
    assert!(
        r.remark().unwrap_or("").contains("max delay 60000ms"),
        "{:?}",
        r.remark()
    );
    let r = b
        .send(TOPIC, 0, b"junk", "TIMER_DELIVER_MS\u{1}soon\u{2}")
        .await;
    assert_eq!(r.code(), ResponseCode::MessageIllegal.code());
    b.stop().await;
}

#[tokio::test]
async fn pending_timers_survive_a_restart_and_fire_on_time() {
    let b = Running::start(|_, _| {}).await;
    let now = broker::clock::now_ms();
    for i in 0..20 {
        let props = format!(
            "TIMER_DELIVER_MS\u{1}{}\u{2}UNIQ_KEY\u{1}r{i}\u{2}",
            now + 2500 + i * 10
        );
        assert_eq!(b.send(TOPIC, 0, b"r", &props).await.code(), 0);
    }
    b.dispatched("rmq_sys_wheel_timer", 0, 20).await;
    let b = b.restart(|_, _| {}).await;
    assert_eq!(
        stored(&b, TOPIC, 0, 0),
        None,
        "fired early across the restart"
    );
    for i in 0..20 {
        let (at, _) = arrival(&b, 0, i, Duration::from_secs(6)).await;
        assert!(at >= now + 2500 + i as i64 * 10 - 10, "early after restart");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        b.broker.store.max_offset_in_queue(TOPIC, 0),
        20,
        "delivered twice"
    );
    b.stop().await;
}

#[tokio::test]
async fn timers_beyond_the_roll_window_roll_and_still_fire_on_time() {
    // 100 ms slots, a window of 3 slots: a 1.2 s timer is parked again several times.
    let b = Running::start(|_, s| {
        s.timer_precision_ms = 100;
        s.timer_roll_window_slot = 3;
    })
    .await;
    let due = broker::clock::now_ms() + 1200;
    let props = format!("TIMER_DELIVER_MS\u{1}{due}\u{2}UNIQ_KEY\u{1}roll\u{2}");
    assert_eq!(b.send(TOPIC, 0, b"roll", &props).await.code(), 0);
    let (at, delivered) = arrival(&b, 0, 0, Duration::from_secs(5)).await;
    assert!(at >= due, "rolled timer {} ms early", due - at);
    let rolls: i64 = properties::get(&delivered, "TIMER_ROLL_TIMES")
        .unwrap()
        .parse()
        .unwrap();
    assert!(rolls >= 2, "rolled {rolls} times");
    assert_eq!(
        b.broker.store.max_offset_in_queue("rmq_sys_wheel_timer", 0),
        1 + rolls as u64
    );
    b.stop().await;
}

#[tokio::test]
async fn broker_status_and_the_timer_checkpoint_show_pending_timers() {
    use remoting::{RemotingCommand, RequestCode};
    use store::timer::checkpoint::TimerCheckpoint;

    let b = Running::start(|_, _| {}).await;
    for i in 0..5 {
        let props = format!("TIMER_DELAY_SEC\u{1}600\u{2}UNIQ_KEY\u{1}s{i}\u{2}");
        assert_eq!(b.send(TOPIC, 0, b"s", &props).await.code(), 0);
    }
    b.dispatched("rmq_sys_wheel_timer", 0, 5).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    let cp = loop {
        let r = b
            .call(RemotingCommand::request(RequestCode::GetTimerCheckPoint))
            .await;
        assert_eq!(r.code(), 0);
        let cp = TimerCheckpoint::decode(&r.body.to_bytes()).unwrap();
        if cp.last_timer_queue_offset == 5 || Instant::now() > deadline {
            break cp;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(cp.last_timer_queue_offset, 5, "{cp:?}");
    assert!(cp.last_read_time_ms <= broker::clock::now_ms());
    let r = b
        .call(RemotingCommand::request(RequestCode::GetBrokerRuntimeInfo))
        .await;
    let body = String::from_utf8(r.body.to_bytes().to_vec()).unwrap();
    for key in [
        "\"timerCongestNum\":\"5\"",
        "\"timerOffsetBehind\":\"0\"",
        "\"timerReadBehind\":\"",
        "\"timerEnqueueTps\":\"",
    ] {
        assert!(body.contains(key), "{key} not in {body}");
    }
    b.stop().await;
}

#[tokio::test]
async fn switch_timer_engine_keeps_the_file_wheel_and_refuses_rocksdb_as_apache_does() {
    use remoting::protocol::timer::SwitchTimerEngineRequestHeader;
    use remoting::{RemotingCommand, RequestCode};

    let switch = |engine: Option<&str>| {
        RemotingCommand::request_with(
            RequestCode::SwitchTimerEngine,
            &SwitchTimerEngineRequestHeader {
                engine_type: engine.map(str::to_owned),
            },
        )
    };
    let b = Running::start(|_, _| {}).await;
    let r = b.call(switch(Some("F"))).await;
    assert_eq!(
        (r.code(), r.remark()),
        (0, Some("switch timer engine success"))
    );
    let r = b.call(switch(Some("R"))).await;
    assert_eq!(r.code(), ResponseCode::InvalidParameter.code());
    assert_eq!(
        r.remark(),
        Some("timerRocksDBEnable must be configured true when broker start")
    );
    for bad in [None, Some("X")] {
        let r = b.call(switch(bad)).await;
        assert_eq!(
            (r.code(), r.remark()),
            (ResponseCode::InvalidParameter.code(), Some("param error"))
        );
    }
    b.stop().await;
    let b = Running::start(|_, s| s.timer_wheel_enable = false).await;
    let r = b.call(switch(Some("F"))).await;
    assert_eq!(r.remark(), Some("broker timerWheelEnable is false"));
    b.stop().await;
}

#[tokio::test]
async fn timer_metrics_count_pending_timers_per_topic() {
    use remoting::{RemotingCommand, RequestCode};

    let b = Running::start(|_, _| {}).await;
    for i in 0..3 {
        let props = format!(
            "TIMER_DELAY_MS\u{1}{}\u{2}UNIQ_KEY\u{1}m{i}\u{2}",
            if i == 0 { 200 } else { 600_000 }
        );
        assert_eq!(b.send(TOPIC, 0, b"m", &props).await.code(), 0);
    }
    let metrics = || async {
        let r = b
            .call(RemotingCommand::request(RequestCode::GetTimerMetrics))
            .await;
        assert_eq!(r.code(), 0);
        String::from_utf8(r.body.to_bytes().to_vec()).unwrap()
    };
    arrival(&b, 0, 0, Duration::from_secs(5)).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let body = metrics().await;
        if body.contains(&format!("\"{TOPIC}\":{{\"count\":2,")) {
            assert!(body.contains("\"dataVersion\":{"), "{body}");
            break;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    b.stop().await;
}

#[tokio::test]
async fn a_recalled_timer_is_never_delivered_and_the_others_are() {
    use remoting::protocol::broker::SendMessageResponseHeader;
    use remoting::protocol::timer::{
        RecallHandle, RecallMessageRequestHeader, RecallMessageResponseHeader,
    };
    use remoting::{RemotingCommand, RequestCode};

    let recall = |handle: &str| {
        RemotingCommand::request_with(
            RequestCode::RecallMessage,
            &RecallMessageRequestHeader {
                producer_group: Some("pg".into()),
                topic: TOPIC.into(),
                recall_handle: handle.into(),
                broker_name: Some("broker-a".into()),
            },
        )
    };
    let b = Running::start(|c, _| c.recall_message_enable = true).await;
    let due = broker::clock::now_ms() + 1500;
    let mut handles = Vec::new();
    for i in 0..2 {
        let props = format!(
            "TIMER_DELIVER_MS\u{1}{}\u{2}UNIQ_KEY\u{1}rc{i}\u{2}",
            due + i
        );
        let r = b.send(TOPIC, 0, b"rc", &props).await;
        assert_eq!(r.code(), 0);
        let h: SendMessageResponseHeader = r.decode_header().unwrap();
        handles.push(
            h.recall_handle
                .expect("a timer send answers its recall handle"),
        );
    }
    let decoded = RecallHandle::decode(&handles[0]).unwrap();
    assert_eq!(
        (decoded.topic.as_str(), decoded.message_id.as_str()),
        (TOPIC, "rc0")
    );
    assert_eq!(decoded.broker_name, "broker-a");
    let r = b.call(recall(&handles[0])).await;
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    let h: RecallMessageResponseHeader = r.decode_header().unwrap();
    assert_eq!(h.msg_id.as_deref(), Some("rc0"));
    let r = b.call(recall("garbage")).await;
    assert_eq!(
        (r.code(), r.remark()),
        (604, Some("recall handle is invalid"))
    );
    // Only the other one arrives.
    let (at, props) = arrival(&b, 0, 0, Duration::from_secs(5)).await;
    assert!(at >= due);
    assert!(props.contains("UNIQ_KEY\u{1}rc1"), "{props:?}");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        b.broker.store.max_offset_in_queue(TOPIC, 0),
        1,
        "the recalled timer was delivered"
    );
    b.stop().await;

    // Off by default, as in RocketMQ.
    let b = Running::start(|_, _| {}).await;
    let r = b.call(recall(&handles[1])).await;
    assert_eq!(
        (r.code(), r.remark()),
        (16, Some("recall failed, operation is forbidden"))
    );
    b.stop().await;
}

#[tokio::test]
async fn a_delay_level_wins_over_timer_properties_which_are_dropped() {
    let b = Running::start(|_, s| s.message_delay_level = "1s 2s".into()).await;
    let sent = broker::clock::now_ms();
    let r = b
        .send(
            TOPIC,
            0,
            b"level",
            "DELAY\u{1}1\u{2}TIMER_DELAY_SEC\u{1}30\u{2}",
        )
        .await;
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    let (at, props) = arrival(&b, 0, 0, Duration::from_secs(5)).await;
    assert!(
        at - sent >= 1000 && at - sent < 3000,
        "delivered after {} ms",
        at - sent
    );
    assert!(!props.contains("TIMER_DELAY_SEC"), "{props:?}");
    assert_eq!(
        b.broker.store.max_offset_in_queue("rmq_sys_wheel_timer", 0),
        0
    );
    b.stop().await;
}

/// A graceful restart in the middle of a slot delivers nothing twice: the timers the
/// slot already delivered are remembered (`config/timerdelivered`), not re-fired.
#[tokio::test]
async fn a_graceful_restart_mid_slot_delivers_nothing_twice() {
    let b = Running::start(|_, _| {}).await;
    let start = broker::clock::now_ms();
    let n = 60;
    for i in 0..n {
        let props = format!(
            "TIMER_DELIVER_MS\u{1}{}\u{2}UNIQ_KEY\u{1}g{i}\u{2}",
            start + 400 + i * 25
        );
        assert_eq!(b.send(TOPIC, 0, b"g", &props).await.code(), 0);
    }
    // About half have fired.
    let mid = start + 400 + n / 2 * 25;
    tokio::time::sleep(Duration::from_millis(
        u64::try_from(mid - broker::clock::now_ms()).unwrap_or(0),
    ))
    .await;
    let before = b.broker.store.max_offset_in_queue(TOPIC, 0);
    let b = b.restart(|_, _| {}).await;
    tokio::time::sleep(Duration::from_millis(
        u64::try_from(start + 400 + n * 25 + 1500 - broker::clock::now_ms()).unwrap_or(0),
    ))
    .await;
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for offset in 0..b.broker.store.max_offset_in_queue(TOPIC, 0) {
        let props = stored(&b, TOPIC, 0, offset).unwrap();
        let id = properties::get(&props, "UNIQ_KEY").unwrap().to_owned();
        *seen.entry(id).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    eprintln!("{before} delivered before the restart; twice: {twice:?}");
    assert!(
        before > 0 && before < u64::try_from(n).unwrap(),
        "not mid-way: {before}"
    );
    assert_eq!(seen.len(), usize::try_from(n).unwrap(), "timers lost");
    assert!(
        twice.is_empty(),
        "delivered twice across a graceful restart: {twice:?}"
    );
    b.stop().await;
}
