//! A store with pending timers moves between sluice and Apache RocketMQ 5.3.3: the timer
//! files (`timerlog/`, `timerwheel`, `config/timercheck`) are RocketMQ's layout, so the
//! other broker, started on the same store, delivers every pending timer — none lost,
//! none before its time.
//!
//! - sluice takes timers in and stops; Apache 5.3.3 (timerWheelEnable=true, the same
//!   precision) starts on its store and delivers them.
//! - the other way round: Apache takes them in and stops; sluice delivers them.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use integration_tests::client::try_request;
use integration_tests::harness::{
    ApacheBroker, BrokerProcess, NamesrvProcess, create_topic, wait_until,
};
use integration_tests::timers::{Delivered, drain, now_ms, timer_checkpoint, timer_send};

const TOPIC: &str = "TimerInterop";
const TIMERS: i64 = 20;
/// Far enough ahead that the other broker (a JVM) is up before they are due.
const AHEAD_MS: i64 = 30_000;

/// Sends the timers to `addr`; returns id → due.
fn send_timers(addr: &str) -> BTreeMap<String, i64> {
    let start = now_ms();
    (0..TIMERS)
        .map(|i| {
            let due = start + AHEAD_MS + i * 97;
            let r = try_request(addr, timer_send(TOPIC, i, due)).unwrap();
            assert_eq!(r.code(), 0, "timer {i} to {addr}: {:?}", r.remark());
            (format!("t{i}"), due)
        })
        .collect()
}

/// Waits until the broker at `addr` has taken every timer into its wheel and
/// checkpointed that.
fn wait_enqueued(addr: &str, what: &str) {
    assert!(
        wait_until(Duration::from_secs(30), || timer_checkpoint(addr)
            .is_some_and(|cp| cp.last_timer_queue_offset >= TIMERS
                && cp.last_timer_log_flush_pos >= TIMERS * 52)),
        "{what} did not checkpoint its timers: {:?}",
        timer_checkpoint(addr)
    );
}

/// Waits for every timer on `addr`; asserts none is early and none missing.
fn assert_all_delivered_on_time(addr: &str, due: &BTreeMap<String, i64>, what: &str) {
    let last = due.values().max().copied().unwrap();
    let mut got = Vec::new();
    let done = wait_until(
        Duration::from_secs(60)
            + Duration::from_millis(u64::try_from(last - now_ms()).unwrap_or(0)),
        || {
            got = drain(addr, TOPIC);
            due.keys().all(|k| got.iter().any(|d| &d.id == k))
        },
    );
    assert!(done, "{what}: delivered {} of {TIMERS}: {got:?}", got.len());
    for Delivered {
        id,
        due: d,
        stored_at,
    } in &got
    {
        assert_eq!(
            due.get(id),
            Some(d),
            "{what}: a message that was not sent: {id}"
        );
        assert!(
            stored_at >= d,
            "{what}: {id} delivered {} ms early",
            d - stored_at
        );
    }
    let late: Vec<i64> = got.iter().map(|d| d.stored_at - d.due).collect();
    eprintln!(
        "{what}: {} delivered ({} duplicates), lateness {:?} ms",
        got.len(),
        got.len() - due.len(),
        late
    );
}

fn apache_on(store: &Path, ns: &str) -> ApacheBroker {
    let root = store.display().to_string();
    let commit_log = store.join("commitlog").display().to_string();
    ApacheBroker::start(
        "5.3.3",
        ns,
        "ASYNC_MASTER",
        0,
        &[
            ("storePathRootDir", &root),
            ("storePathCommitLog", &commit_log),
            ("timerWheelEnable", "true"),
            ("timerPrecisionMs", "1000"),
        ],
    )
}

#[test]
fn pending_timers_written_by_sluice_are_delivered_by_apache_5_3_3() {
    integration_tests::require_tools!(Java, Maven);
    let ns = NamesrvProcess::start();
    let mut sluice = BrokerProcess::start_with(&ns.addr(), &[]);
    create_topic(&ns.addr(), TOPIC, 1);
    let due = send_timers(&sluice.addr());
    wait_enqueued(&sluice.addr(), "sluice");
    let status = sluice.process().stop();
    assert!(
        status.is_some_and(|s| s.success()),
        "sluice did not stop cleanly: {status:?}"
    );
    let store = sluice.store_dir();
    let apache = apache_on(&store, &ns.addr());
    assert_all_delivered_on_time(&apache.addr(), &due, "Apache 5.3.3 on sluice's store");
}

#[test]
fn pending_timers_written_by_apache_5_3_3_are_delivered_by_sluice() {
    integration_tests::require_tools!(Java, Maven);
    let ns = NamesrvProcess::start();
    let mut apache = ApacheBroker::start(
        "5.3.3",
        &ns.addr(),
        "ASYNC_MASTER",
        0,
        &[("timerWheelEnable", "true"), ("timerPrecisionMs", "1000")],
    );
    create_topic(&ns.addr(), TOPIC, 1);
    let due = send_timers(&apache.addr());
    wait_enqueued(&apache.addr(), "Apache 5.3.3");
    apache.process.stop();
    let store = apache.store_dir();
    let root = store.display().to_string();
    let sluice = BrokerProcess::start_with(&ns.addr(), &[("storePathRootDir", &root)]);
    assert_all_delivered_on_time(&sluice.addr(), &due, "sluice on Apache 5.3.3's store");
}
