//! Role switches that must not lose or fake anything, with real processes: `mqnamesrv`, a
//! master `a` and its slave `b`.
//!
//! - `switchRole -r MASTER` on `b` while its HA port is taken must fail (exit non-zero,
//!   naming the port) and leave `b` exactly the read-only slave it was: role SLAVE, brokerId
//!   1 in its status and at the name server, sends refused, still following `a` and holding
//!   what `a` writes next. Once the port is free, the same switch succeeds.
//! - A planned switchover of an ASYNC_MASTER pair while a producer sends to `a`: the
//!   promotion fences `a` first (it stops acknowledging, `b` catches up with it), so the
//!   demotion of `a` cuts nothing and every send `a` acknowledged is on `b`. Without the
//!   fence `a` acknowledges sends between the two commands and the demotion cuts them.
//! - A switchover undone (`b` promoted, then demoted under `a` again): `a` is unfenced,
//!   takes writes and is routed as the master again.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::net::TcpListener;
use std::time::Duration;

use integration_tests::client::{SyncClient, send_request, try_request};
use integration_tests::harness::{HaPair, mqadmin, registered_ids, wait_caught_up, wait_until};
use integration_tests::spawn::close_listener;

const SETTLE: Duration = Duration::from_secs(20);

#[test]
fn a_promotion_whose_ha_port_is_taken_leaves_the_read_only_slave_it_was() {
    let pair = HaPair::start("SYNC_MASTER", &[], &[]);
    let ns_addr = pair.namesrv();
    let (a, b) = (pair.master(), pair.slave());
    a.create_topic("T", 4);

    let holder = TcpListener::bind(b.ha_addr()).unwrap();
    let out = mqadmin(&ns_addr, &["switchRole", "-b", &b.addr(), "-r", "MASTER"]);
    assert!(!out.status.success(), "the switch claimed success:\n{out}");
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(
        said.contains(&b.ha_addr()),
        "does not name the port:\n{out}"
    );
    assert!(
        said.contains("still SLAVE"),
        "does not say what it is now:\n{out}"
    );

    let status = b.ha_status().unwrap();
    assert!(!status.is_master(), "{status:?}");
    assert_eq!(status.broker_id, 1, "{status:?}");
    let refused = try_request(&b.addr(), send_request("T", b"to the slave")).unwrap();
    assert_ne!(refused.code(), 0, "the slave acknowledged a send");
    assert!(
        wait_until(SETTLE, || registered_ids(&ns_addr, &b.addr()) == [1]),
        "the name server lists {:?} for b",
        registered_ids(&ns_addr, &b.addr())
    );
    // Still the master's slave: a's next write is acknowledged (SYNC_MASTER: replicated).
    let sent = try_request(&a.addr(), send_request("T", b"after the failed switch")).unwrap();
    assert_eq!(sent.code(), 0, "{:?}", sent.remark());
    wait_caught_up(&a.addr(), &b.addr(), &a.ha_addr(), SETTLE).unwrap();

    // Closed through the spawn gate: free at once, not kept bound by a child another test's
    // thread is forking.
    close_listener(holder);
    mqadmin(&ns_addr, &["switchRole", "-b", &b.addr(), "-r", "MASTER"]).assert_ok();
    let status = b.ha_status().unwrap();
    assert!(status.is_master() && status.broker_id == 0, "{status:?}");
}

#[test]
fn a_planned_switchover_loses_no_acknowledged_send() {
    use std::sync::atomic::{AtomicBool, Ordering};

    let pair = HaPair::start("ASYNC_MASTER", &[], &[]);
    let ns_addr = pair.namesrv();
    let (a, b) = (pair.master(), pair.slave());
    a.create_topic("S", 4);
    let stop = AtomicBool::new(false);
    let (acked, promoted, a_while_fenced, demoted) = std::thread::scope(|scope| {
        let sender = scope.spawn(|| {
            let client = SyncClient::new();
            let mut acked = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if client
                    .invoke(&a.addr(), send_request("S", b"planned"))
                    .code()
                    == 0
                {
                    acked += 1;
                }
            }
            acked
        });
        std::thread::sleep(Duration::from_millis(300));
        let promoted = mqadmin(&ns_addr, &["switchRole", "-b", &b.addr(), "-r", "MASTER"]);
        // The producer goes on sending to `a` between the two commands; `a` is out of
        // the routes meanwhile.
        std::thread::sleep(Duration::from_millis(300));
        let a_while_fenced = registered_ids(&ns_addr, &a.addr());
        let demoted = mqadmin(
            &ns_addr,
            &[
                "switchRole",
                "-b",
                &a.addr(),
                "-r",
                "SLAVE",
                "-m",
                &b.addr(),
            ],
        );
        stop.store(true, Ordering::Relaxed);
        (sender.join().unwrap(), promoted, a_while_fenced, demoted)
    });
    promoted.assert_ok();
    demoted.assert_ok();
    assert_eq!(
        demoted.value("truncatedTo"),
        Some("null"),
        "the demotion cut:\n{demoted}"
    );
    assert!(acked > 0, "nothing was acknowledged before the switch");
    let on_b = b.max_offset_in_queue("S", 0).unwrap();
    eprintln!("planned switchover: {acked} sends acknowledged by a, {on_b} on b");
    assert!(
        u64::try_from(on_b).unwrap() >= acked,
        "a acknowledged {acked} sends, b holds {on_b}"
    );
    assert_eq!(
        promoted.value("fenced"),
        Some(a.addr().as_str()),
        "{promoted}"
    );
    assert!(
        a_while_fenced.is_empty(),
        "the fenced master is still routed as {a_while_fenced:?}"
    );
    assert!(
        wait_until(SETTLE, || registered_ids(&ns_addr, &a.addr()) == [1]),
        "the demoted master does not register as the slave"
    );
}

#[test]
fn a_switchover_undone_leaves_the_old_master_writable_and_routed() {
    let pair = HaPair::start("ASYNC_MASTER", &[], &[]);
    let ns_addr = pair.namesrv();
    let (a, b) = (pair.master(), pair.slave());
    a.create_topic("U", 4);

    let promoted = mqadmin(&ns_addr, &["switchRole", "-b", &b.addr(), "-r", "MASTER"]);
    promoted.assert_ok();
    assert_eq!(
        promoted.value("fenced"),
        Some(a.addr().as_str()),
        "{promoted}"
    );
    let fenced = try_request(&a.addr(), send_request("U", b"to the fenced master")).unwrap();
    assert_ne!(fenced.code(), 0, "the fenced master acknowledged a send");

    // The operator changes their mind: b goes back under a. a is the master again.
    mqadmin(
        &ns_addr,
        &[
            "switchRole",
            "-b",
            &b.addr(),
            "-r",
            "SLAVE",
            "-m",
            &a.addr(),
        ],
    )
    .assert_ok();
    let status = a.ha_status().unwrap();
    assert!(status.is_master() && status.broker_id == 0, "{status:?}");
    let sent = try_request(&a.addr(), send_request("U", b"after the undo")).unwrap();
    assert_eq!(sent.code(), 0, "{:?}", sent.remark());
    assert!(
        wait_until(SETTLE, || registered_ids(&ns_addr, &a.addr()) == [0]
            && registered_ids(&ns_addr, &b.addr()) == [1]),
        "the name server lists {:?} for a, {:?} for b",
        registered_ids(&ns_addr, &a.addr()),
        registered_ids(&ns_addr, &b.addr())
    );
    b.wait_following(a, SETTLE).unwrap();
}
