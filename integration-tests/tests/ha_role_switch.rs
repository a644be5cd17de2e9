//! Role switching is idempotent and serialised, with real processes: `mqnamesrv` + two sluice
//! brokers of one pair, `mqadmin switchRole` run concurrently, a delay message in flight.
//!
//! `racing_switches_leave_one_master_and_one_schedule_service`:
//!
//! 1. A is ASYNC_MASTER, B its slave. Message M0 (delay level 1, 1 s) is sent to one topic and
//!    delivered by A before any switch; message M1 (delay level 3, 10 s) is sent to another and
//!    is still pending.
//! 2. Five concurrent `switchRole -b B -r MASTER`: all succeed, exactly one says it changed
//!    anything, B logs "schedule service started" once. A is then demoted (`-r SLAVE -m B`).
//! 3. Three rounds of flips, each racing three promotions of the slave with three demotions of
//!    the master (`-m` the one being promoted). Then a contradictory race on the slave: MASTER
//!    and SLAVE at once; whatever wins, the pair is settled to one master.
//!
//! After every step: exactly one broker says it is master, the other is its connected slave
//! holding the same log; in each broker's log "schedule service started" and "... stopped"
//! alternate, the service runs exactly where the role is master, and the name server lists the
//! master as id 0 and the slave as id 1. At the end M1 — due while nothing is switching — is in
//! its topic exactly once (one consume-queue entry, read once by a Java consumer). M0's copies,
//! delivered by A before the flips, are counted and reported: a promoted broker schedules from
//! the delay offsets it last copied from its master, so a delivery newer than that copy is
//! repeated (at-least-once, as RocketMQ).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::thread;
use std::time::{Duration, Instant};

use integration_tests::harness::{
    BrokerProcess, HaPair, MqadminOutput, mqadmin, registered_ids, unique_name, wait_until,
};
use integration_tests::java::{JavaTools, Recv, Sent, V4};

const STARTED: &str = "schedule service started";
const STOPPED: &str = "schedule service stopped";
/// Delay level 3 of the default `messageDelayLevel`.
const M1_DELAY: Duration = Duration::from_secs(10);
const ROUNDS: usize = 3;

/// Messages in the topic's 4 queues on `broker`.
fn messages_in(broker: &BrokerProcess, topic: &str) -> i64 {
    (0..4)
        .map(|q| broker.max_offset_in_queue(topic, q).unwrap_or(0))
        .sum()
}

/// Runs `requests` (mqadmin argument lists) at the same time.
fn race(namesrv: &str, requests: &[Vec<String>]) -> Vec<MqadminOutput> {
    thread::scope(|s| {
        let handles: Vec<_> = requests
            .iter()
            .map(|args| {
                s.spawn(move || {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    mqadmin(namesrv, &args)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn to_master(broker: &BrokerProcess) -> Vec<String> {
    ["switchRole", "-b", &broker.addr(), "-r", "MASTER"]
        .map(str::to_owned)
        .to_vec()
}

fn to_slave_of(broker: &BrokerProcess, master: &BrokerProcess) -> Vec<String> {
    [
        "switchRole",
        "-b",
        &broker.addr(),
        "-r",
        "SLAVE",
        "-m",
        &master.addr(),
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The schedule service's start/stop lines of a broker's log, in order: true = started.
fn schedule_events(broker: &BrokerProcess) -> Vec<bool> {
    let p = broker.process_ref();
    format!("{}\n{}", p.stdout(), p.stderr())
        .lines()
        .filter_map(|l| {
            if l.contains(STARTED) {
                Some(true)
            } else if l.contains(STOPPED) {
                Some(false)
            } else {
                None
            }
        })
        .collect()
}

/// Starts and stops alternate, beginning with a start; returns whether it runs now.
#[track_caller]
fn schedule_running(broker: &BrokerProcess, name: &str) -> bool {
    let events = schedule_events(broker);
    for (i, pair) in events.windows(2).enumerate() {
        assert_ne!(
            pair[0],
            pair[1],
            "{name}: schedule service {} twice in a row (events {i}, {}): {events:?}",
            if pair[0] { "started" } else { "stopped" },
            i + 1
        );
    }
    if let Some(first) = events.first() {
        assert!(*first, "{name}: schedule service stopped before it started");
    }
    events.last().copied().unwrap_or(false)
}

/// Whether the name server lists `master` as id 0 and `slave` as id 1, within `timeout`.
fn route_is(ns: &str, master: &BrokerProcess, slave: &BrokerProcess, timeout: Duration) -> bool {
    wait_until(timeout, || {
        registered_ids(ns, &master.addr()) == [0] && registered_ids(ns, &slave.addr()) == [1]
    })
}

/// Exactly one master (`master`), the other its connected slave holding the same log, the
/// schedule service running exactly on the master, and the name server listing both so.
#[track_caller]
fn assert_consistent(ns: &str, master: &BrokerProcess, slave: &BrokerProcess, step: &str) {
    let t = Instant::now();
    assert!(
        route_is(ns, master, slave, Duration::from_secs(10)),
        "{step}: the name server lists {:?} for the master, {:?} for the slave",
        registered_ids(ns, &master.addr()),
        registered_ids(ns, &slave.addr())
    );
    slave
        .wait_following(master, Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{step}: {e}"));
    let (m, s) = (master.ha_status().unwrap(), slave.ha_status().unwrap());
    assert!(m.is_master() && m.broker_id == 0, "{step}: {m:?}");
    assert!(!s.is_master() && s.broker_id > 0, "{step}: {s:?}");
    // The service's state follows the log, which trails the switch answer by nothing: the
    // answer is sent after start/stop returned.
    assert!(
        schedule_running(master, "master"),
        "{step}: schedule service not running on the master"
    );
    assert!(
        !schedule_running(slave, "slave"),
        "{step}: schedule service running on the slave"
    );
    eprintln!("{step}: consistent ({:?} to settle)", t.elapsed());
}

#[test]
fn racing_switches_leave_one_master_and_one_schedule_service() {
    integration_tests::require_tools!(Java, Maven);
    let started = Instant::now();
    let java = JavaTools::get(V4);
    // M0 and M1 go to topics of their own, so each one's deliveries can be counted.
    let (topic0, topic) = (unique_name("HaSwitch0"), unique_name("HaSwitch1"));
    let pair = HaPair::start("ASYNC_MASTER", &[], &[(&topic0, 4), (&topic, 4)]);
    let ns_addr = pair.namesrv();
    // `a` and `b` stay the brokers they are; the switches below change their roles.
    let (a, b) = (pair.master(), pair.slave());
    // B copied A's tables when it learned its master, so it knows the topics whenever it is
    // master.
    assert!(
        wait_until(Duration::from_secs(15), || b.has_topic(&topic)
            && b.has_topic(&topic0)),
        "B did not copy A's topics"
    );
    assert_consistent(&ns_addr, a, b, "start");

    // M0: delivered by A before anything switches.
    let send = |topic: &str, level: &str| -> Sent {
        let out = java.run(
            "sluice.it.Producer",
            &[
                "--namesrv",
                &ns_addr,
                "--topic",
                topic,
                "--count",
                "1",
                "--delay-level",
                level,
                "--body-prefix",
                &format!("delay-level-{level}"),
            ],
            Duration::from_secs(60),
        );
        out.assert_ok();
        Sent::all(out.stdout.lines()).pop().unwrap()
    };
    send(&topic0, "1");
    // (The SENT line's queue id is no help here: sluice answers a delayed send with the
    // SCHEDULE_TOPIC_XXXX queue, RocketMQ with the queue the client chose.)
    assert!(
        wait_until(Duration::from_secs(15), || messages_in(a, &topic0) >= 1),
        "M0 was not delivered"
    );
    b.wait_following(a, Duration::from_secs(20)).unwrap();
    // M1: pending through all the switches.
    let m1 = send(&topic, "3");
    let m1_due = Instant::now() + M1_DELAY;

    // Five promotions of B at once: one does it, four find it done.
    let outs = race(&ns_addr, &vec![to_master(b); 5]);
    for o in &outs {
        o.assert_ok();
        assert_eq!(o.value("role"), Some("ASYNC_MASTER"), "{o}");
    }
    let changed = outs
        .iter()
        .filter(|o| o.value("changed") == Some("true"))
        .count();
    assert_eq!(changed, 1, "{outs:#?}");
    assert_eq!(
        b.process_ref().count_in_log(STARTED),
        1,
        "B started its schedule service more than once"
    );
    let o = mqadmin(
        &ns_addr,
        &to_slave_of(a, b)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    o.assert_ok();
    assert_eq!(o.value("changed"), Some("true"), "{o}");
    assert_consistent(&ns_addr, b, a, "after the first switch");

    // Rounds of flips, each racing promotions of the slave against demotions of the master.
    let (mut master, mut slave) = (&b, &a);
    for round in 1..=ROUNDS {
        let mut requests = vec![to_master(slave); 3];
        requests.extend(vec![to_slave_of(master, slave); 3]);
        for o in race(&ns_addr, &requests) {
            o.assert_ok();
        }
        (master, slave) = (slave, master);
        assert_consistent(&ns_addr, master, slave, &format!("round {round}"));
    }

    // A contradictory race on the slave: MASTER and SLAVE at once. Settle to one master.
    let outs = race(&ns_addr, &[to_master(slave), to_slave_of(slave, master)]);
    for o in &outs {
        o.assert_ok();
    }
    let slave_won = slave.ha_status().unwrap().is_master();
    if slave_won {
        mqadmin(
            &ns_addr,
            &to_slave_of(master, slave)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .assert_ok();
        (master, slave) = (slave, master);
    }
    // When MASTER ran first, the slave's promotion took id 0 in the name server from the master
    // and its demotion right after removed it: the brokerName has no master there until the
    // master registers again (every registerNameServerPeriod, 30 s) — RocketMQ's name server
    // does the same. A topic update on the master makes it register at once.
    let route_lost = !route_is(&ns_addr, master, slave, Duration::from_secs(3));
    if route_lost {
        master
            .mqadmin(&[
                "updateTopic",
                "-b",
                &master.addr(),
                "-t",
                &topic,
                "-r",
                "4",
                "-w",
                "4",
            ])
            .assert_ok();
    }
    assert_consistent(&ns_addr, master, slave, "after the contradictory race");
    assert!(
        Instant::now() < m1_due,
        "the switches took longer than M1's delay ({:?}); M1's exactly-once cannot be checked",
        M1_DELAY
    );

    // M1 comes due on the final master only, once.
    assert!(
        wait_until(M1_DELAY + Duration::from_secs(15), || messages_in(
            master, &topic
        ) >= 1),
        "M1 was not delivered"
    );
    // Room for a second delivery, if any broker were to make one.
    thread::sleep(Duration::from_secs(2));
    slave
        .wait_following(master, Duration::from_secs(20))
        .unwrap();
    let m1_stored = messages_in(master, &topic);
    let m0_stored = messages_in(master, &topic0);
    let drained = java.run(
        "sluice.it.DrillDrain",
        &[
            "--namesrv",
            &ns_addr,
            "--topic",
            &topic,
            "--group",
            &unique_name("switch_drain"),
        ],
        Duration::from_secs(60),
    );
    drained.assert_ok();
    let recv = Recv::all(drained.stdout.lines());
    let m1_count = recv.iter().filter(|r| r.msg_id == m1.msg_id).count();
    assert_eq!(
        (m1_stored, recv.len(), m1_count),
        (1, 1, 1),
        "M1 stored {m1_stored} times:\n{drained}"
    );
    assert!(m0_stored >= 1, "M0 lost");
    assert_consistent(&ns_addr, master, slave, "the end");
    let starts = |x: &BrokerProcess| x.process_ref().count_in_log(STARTED);
    eprintln!(
        "HA role switch: 5 racing promotions (1 changed), {ROUNDS} racing flip rounds and a \
         contradictory race; final master {} ; schedule service starts A={} B={}; \
         M1 (pending through the flips) delivered {m1_count}x; M0 (delivered before) present \
         {m0_stored}x; contradictory race won by {}{}; took {:.1}s",
        master.addr(),
        starts(a),
        starts(b),
        if slave_won { "MASTER" } else { "SLAVE" },
        if route_lost {
            ", the name server had lost the master (re-registered)"
        } else {
            ""
        },
        started.elapsed().as_secs_f64()
    );
}
