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
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use integration_tests::client::try_request;
use integration_tests::harness::{HaPair, mqadmin, wait_caught_up, wait_until};
use message::properties;
use message::record::{self, Record};
use remoting::protocol::broker::{PullMessageRequestHeader, SendMessageRequestHeaderV2};
use remoting::protocol::constants::pull_sys_flag;
use remoting::{RemotingCommand, RequestCode};

const TOPIC: &str = "TimerFailover";
const TIMERS: i64 = 40;

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

fn timer_send(i: i64, due: i64) -> RemotingCommand {
    let header = SendMessageRequestHeaderV2 {
        producer_group: "sluice_it_timer".into(),
        topic: TOPIC.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: now_ms(),
        flag: 0,
        properties: Some(format!(
            "TIMER_DELIVER_MS\u{1}{due}\u{2}UNIQ_KEY\u{1}t{i}\u{2}due\u{1}{due}\u{2}WAIT\u{1}true\u{2}"
        )),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: None,
    };
    RemotingCommand::request_with(RequestCode::SendMessageV2, &header)
        .with_body(Bytes::from_static(b"timer"))
}

/// Every message of queue 0 of the topic on `addr`: (UNIQ_KEY, due, store timestamp).
fn drain(addr: &str) -> Vec<(String, i64, i64)> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let header = PullMessageRequestHeader {
            consumer_group: "timer_drain".into(),
            topic: TOPIC.into(),
            queue_id: 0,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag: pull_sys_flag::SUBSCRIPTION,
            commit_offset: 0,
            suspend_timeout_millis: 0,
            subscription: Some("*".into()),
            sub_version: 0,
            expression_type: Some("TAG".into()),
            ..PullMessageRequestHeader::default()
        };
        let Ok(resp) = try_request(
            addr,
            RemotingCommand::request_with(RequestCode::PullMessage, &header),
        ) else {
            return out;
        };
        if resp.code() != 0 {
            if resp.code() != 19 && resp.code() != 20 {
                eprintln!("pull from {addr}: {} {:?}", resp.code(), resp.remark());
            }
            return out;
        }
        let body = resp.body.to_bytes();
        let mut rest = &body[..];
        let before = out.len();
        while let Ok(Some(Record::Message(m))) = record::decode(rest) {
            let props = m.properties_str();
            let [uniq, due] = properties::get_many(&props, ["UNIQ_KEY", "due"]);
            out.push((
                uniq.unwrap_or("").to_owned(),
                due.and_then(|d| d.parse().ok()).unwrap_or(0),
                m.store_timestamp,
            ));
            rest = &rest[m.total_size as usize..];
        }
        if out.len() == before {
            return out;
        }
        offset += i64::try_from(out.len() - before).unwrap();
    }
}

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
