//! Timer messages across crashes and failovers, with real processes:
//!
//! - a SYNC_MASTER pair, timers due over a few seconds, the master killed (SIGKILL) while
//!   they fire, the slave promoted with `mqadmin switchRole`. Every timer must be
//!   delivered by one broker or the other — none lost — and none before its time; timers
//!   the old master delivered shortly before it died may be delivered again by the new
//!   one (at least once: counted and printed, bounded by the slave's one-second copy of
//!   the master's read time).
//! - one broker killed (SIGKILL) repeatedly while timers are enqueued and fire, started
//!   again on the same store each time: none lost, none early, duplicates counted.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::BTreeMap;
use std::time::Duration;

use integration_tests::client::try_request;
use integration_tests::harness::{HaPair, mqadmin, wait_caught_up, wait_until};
use integration_tests::timers::{Delivered, now_ms};

fn timer_send(i: i64, due: i64) -> remoting::RemotingCommand {
    integration_tests::timers::timer_send(TOPIC, i, due)
}

/// (id, due, stored at) of every message of the topic on `addr`.
fn drain(addr: &str) -> Vec<(String, i64, i64)> {
    integration_tests::timers::drain(addr, TOPIC)
        .into_iter()
        .map(|Delivered { id, due, stored_at }| (id, due, stored_at))
        .collect()
}

const TOPIC: &str = "TimerFailover";
const TIMERS: i64 = 40;

#[test]
fn timers_survive_a_master_kill_and_promotion_none_lost_none_early() {
    // The topic exists before the slave starts, so the slave's first copy has it.
    let mut pair = HaPair::start("SYNC_MASTER", &[], &[(TOPIC, 1)]);
    let ns = pair.namesrv();
    let (a_addr, b_addr, a_ha) = (
        pair.master().addr(),
        pair.slave().addr(),
        pair.master().ha_addr(),
    );
    assert!(wait_until(Duration::from_secs(10), || pair
        .slave()
        .has_topic(TOPIC)));
    let start = now_ms();
    let mut due = BTreeMap::new();
    for i in 0..TIMERS {
        let at = start + 4000 + i * 100;
        let r = try_request(&a_addr, timer_send(i, at)).unwrap();
        assert_eq!(r.code(), 0, "timer {i}: {:?}", r.remark());
        due.insert(format!("t{i}"), at);
    }
    wait_caught_up(&a_addr, &b_addr, &a_ha, Duration::from_secs(20)).unwrap();
    // Kill the master while its timers fire (about half are due by then).
    let kill_at = start + 4000 + TIMERS / 2 * 100;
    std::thread::sleep(Duration::from_millis(
        u64::try_from(kill_at - now_ms()).unwrap_or(0),
    ));
    pair.master_mut().kill();
    let delivered_by_a_seen_on_b = drain(&b_addr).len();
    mqadmin(&ns, &["switchRole", "-b", &b_addr, "-r", "MASTER"]).assert_ok();
    pair.promoted();

    let last_due = start + 4000 + (TIMERS - 1) * 100;
    assert!(
        wait_until(Duration::from_secs(30), || {
            let got = drain(&b_addr);
            now_ms() > last_due && due.keys().all(|k| got.iter().any(|(u, _, _)| u == k))
        }),
        "not every timer was delivered after the promotion: got {:?}",
        drain(&b_addr)
    );
    let got = drain(&b_addr);
    let mut seen = BTreeMap::<String, usize>::new();
    for (uniq, d, stored_at) in &got {
        assert_eq!(
            due.get(uniq),
            Some(d),
            "a message that was not sent: {uniq}"
        );
        assert!(
            stored_at >= d,
            "{uniq} delivered {} ms before its time",
            d - stored_at
        );
        *seen.entry(uniq.clone()).or_default() += 1;
    }
    let duplicates: usize = seen.values().map(|n| n - 1).sum();
    eprintln!(
        "timers: {TIMERS} sent, {} delivered (by the old master before the kill: {delivered_by_a_seen_on_b}), {duplicates} delivered twice",
        got.len()
    );
    assert_eq!(seen.len(), usize::try_from(TIMERS).unwrap(), "timers lost");
    // The read time marks whole slots (1 s) and the slave copies it every second: no
    // more than about two seconds of timers (20 here, 100 ms apart) may come twice.
    assert!(duplicates <= 25, "{duplicates} timers delivered twice");
}

#[test]
fn timers_survive_repeated_kill_9_none_lost_none_early() {
    use integration_tests::harness::{BrokerProcess, NamesrvProcess};

    let ns = NamesrvProcess::start();
    let mut broker = BrokerProcess::start_master(
        "k",
        &ns.addr(),
        "ASYNC_MASTER",
        &[("flushDiskType", "SYNC_FLUSH")],
    );
    broker.create_topic(TOPIC, 1);
    let start = now_ms();
    let mut due = BTreeMap::new();
    // Due from 2 s to 8 s after the start, while the broker is killed three times.
    for i in 0..TIMERS * 2 {
        let at = start + 2000 + i * 75;
        let r = try_request(&broker.addr(), timer_send(i, at)).unwrap();
        assert_eq!(r.code(), 0, "timer {i}: {:?}", r.remark());
        due.insert(format!("t{i}"), at);
    }
    for kill_at in [start + 1000, start + 3500, start + 5500] {
        std::thread::sleep(Duration::from_millis(
            u64::try_from(kill_at - now_ms()).unwrap_or(0),
        ));
        broker.kill();
        broker.restart();
    }
    let last_due = start + 2000 + (TIMERS * 2 - 1) * 75;
    let addr = broker.addr();
    assert!(
        wait_until(Duration::from_secs(30), || {
            let got = drain(&addr);
            now_ms() > last_due && due.keys().all(|k| got.iter().any(|(u, _, _)| u == k))
        }),
        "not every timer was delivered across the kills"
    );
    let got = drain(&addr);
    let mut seen = BTreeMap::<String, usize>::new();
    for (uniq, d, stored_at) in &got {
        assert_eq!(
            due.get(uniq),
            Some(d),
            "a message that was not sent: {uniq}"
        );
        assert!(
            stored_at >= d,
            "{uniq} delivered {} ms before its time",
            d - stored_at
        );
        *seen.entry(uniq.clone()).or_default() += 1;
    }
    let duplicates: usize = seen.values().map(|n| n - 1).sum();
    eprintln!(
        "timers: {} sent, {} delivered across 3 kills, {duplicates} delivered twice",
        TIMERS * 2,
        got.len()
    );
    assert_eq!(seen.len(), due.len(), "timers lost");
}
