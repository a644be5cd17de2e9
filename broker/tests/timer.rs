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
        assert_eq!(
            real, None,
            "REAL_TOPIC is cleared on delivery: {delivered:?}"
        );
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
