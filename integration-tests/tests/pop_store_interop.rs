//! A store with pops in flight moves between sluice and Apache RocketMQ 5.3.3: the
//! checkpoints and acks are RocketMQ's records in `rmq_sys_REVIVE_LOG_<cluster>` (parked
//! in RocketMQ's timer files), so the other broker, started on the same store, brings
//! back every message popped and not acked — and none that was acked — and does not
//! hand out again what was popped.
//!
//! - sluice pops and acks half, stops; Apache 5.3.3 starts on its store and revives the
//!   other half into `%RETRY%<group>_<topic>`.
//! - the other way round.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use integration_tests::client::try_request;
use integration_tests::harness::{ApacheBroker, BrokerProcess, NamesrvProcess, create_topic};
use integration_tests::pop::{ack_request, pop_request, popped};
use integration_tests::timers::now_ms;

const TOPIC: &str = "PopInterop";
const GROUP: &str = "GID_pop_interop";
const MESSAGES: usize = 10;
/// Long enough for the other broker (a JVM) to be up before the messages are due back.
const INVISIBLE_MS: i64 = 40_000;

fn send_all(addr: &str) {
    for i in 0..MESSAGES {
        let body: &'static [u8] = Box::leak(format!("i{i}").into_bytes().into_boxed_slice());
        let r = try_request(addr, integration_tests::client::send_request(TOPIC, body)).unwrap();
        assert_eq!(r.code(), 0, "send {i}: {:?}", r.remark());
    }
}

/// Pops everything and acks the even bodies; the bodies left un-acked.
fn pop_and_ack_half(addr: &str) -> BTreeSet<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = BTreeSet::new();
    let mut unacked = BTreeSet::new();
    while seen.len() < MESSAGES {
        assert!(Instant::now() < deadline, "popped only {seen:?}");
        let r = try_request(
            addr,
            pop_request(GROUP, TOPIC, 32, INVISIBLE_MS, 0, now_ms()),
        )
        .unwrap();
        for m in popped(&r, GROUP, "broker-a").unwrap() {
            let body = String::from_utf8(m.body.to_vec()).unwrap();
            let n: usize = body[1..].parse().unwrap();
            if n % 2 == 0 {
                let a = try_request(addr, ack_request(GROUP, &m)).unwrap();
                assert_eq!(a.code(), 0, "ack {body}: {:?}", a.remark());
            } else {
                unacked.insert(body.clone());
            }
            seen.insert(body);
        }
    }
    unacked
}

/// What pops of `addr` get until `until` (acking all): bodies with reconsume times.
fn pop_until(addr: &str, until: Instant) -> Vec<(String, i32)> {
    let mut got = Vec::new();
    while Instant::now() < until {
        let Ok(r) = try_request(addr, pop_request(GROUP, TOPIC, 32, 60_000, 1000, now_ms())) else {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        for m in popped(&r, GROUP, "broker-a").unwrap() {
            let _ = try_request(addr, ack_request(GROUP, &m));
            got.push((
                String::from_utf8(m.body.to_vec()).unwrap(),
                m.reconsume_times,
            ));
        }
    }
    got
}

fn check_moved(addr: &str, popped_at: Instant, unacked: &BTreeSet<String>, what: &str) {
    // Nothing before the invisible time: the offsets moved with the store.
    let early = pop_until(
        addr,
        popped_at + Duration::from_millis(INVISIBLE_MS as u64 - 3000),
    );
    assert!(
        early.is_empty(),
        "{what}: handed out again before their time: {early:?}"
    );
    let back = pop_until(
        addr,
        popped_at + Duration::from_millis(INVISIBLE_MS as u64 + 20_000),
    );
    eprintln!("{what}: back after the invisible time: {back:?}");
    let bodies: BTreeSet<String> = back.iter().map(|(b, _)| b.clone()).collect();
    assert_eq!(
        &bodies, unacked,
        "{what}: exactly the un-acked messages come back"
    );
    assert_eq!(back.len(), unacked.len(), "{what}: each once: {back:?}");
    assert!(back.iter().all(|(_, n)| *n == 1), "{what}: {back:?}");
}

fn apache_on(store: Option<&Path>, ns: &str) -> ApacheBroker {
    let mut settings: Vec<(String, String)> = vec![
        ("timerWheelEnable".into(), "true".into()),
        ("timerPrecisionMs".into(), "1000".into()),
        ("bindAddress".into(), "127.0.0.1".into()),
    ];
    if let Some(store) = store {
        settings.push(("storePathRootDir".into(), store.display().to_string()));
        settings.push((
            "storePathCommitLog".into(),
            store.join("commitlog").display().to_string(),
        ));
    }
    let refs: Vec<(&str, &str)> = settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    ApacheBroker::start("5.3.3", ns, "ASYNC_MASTER", 0, &refs)
}

#[test]
fn pops_in_flight_on_sluice_are_revived_by_apache_5_3_3() {
    integration_tests::require_tools!(Java, Maven);
    let ns = NamesrvProcess::start();
    let mut sluice = BrokerProcess::start_with(&ns.addr(), &[("brokerName", "broker-a")]);
    create_topic(&ns.addr(), TOPIC, 4);
    send_all(&sluice.addr());
    let popped_at = Instant::now();
    let unacked = pop_and_ack_half(&sluice.addr());
    let status = sluice.process().stop();
    assert!(
        status.is_some_and(|s| s.success()),
        "sluice did not stop cleanly: {status:?}"
    );
    let apache = apache_on(Some(&sluice.store_dir()), &ns.addr());
    check_moved(
        &apache.addr(),
        popped_at,
        &unacked,
        "Apache 5.3.3 on sluice's store",
    );
}

#[test]
fn pops_in_flight_on_apache_5_3_3_are_revived_by_sluice() {
    integration_tests::require_tools!(Java, Maven);
    let ns = NamesrvProcess::start();
    let mut apache = apache_on(None, &ns.addr());
    create_topic(&ns.addr(), TOPIC, 4);
    send_all(&apache.addr());
    let popped_at = Instant::now();
    let unacked = pop_and_ack_half(&apache.addr());
    apache.process.stop();
    let root = apache.store_dir().display().to_string();
    let sluice = BrokerProcess::start_with(
        &ns.addr(),
        &[("storePathRootDir", &root), ("brokerName", "broker-a")],
    );
    check_moved(
        &sluice.addr(),
        popped_at,
        &unacked,
        "sluice on Apache 5.3.3's store",
    );
}
