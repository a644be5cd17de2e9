//! 5.x timer messages (`setDelayTimeSec`, `setDelayTimeMs`, `setDeliverTimeMs` of the
//! official Java client 5.3.3) until sluice has a timer wheel (issue 14): refused the way
//! Apache RocketMQ 5.3.3 refuses them with `timerWheelEnable=false` — the send fails with
//! SYSTEM_ERROR "accurate timer message is not enabled" — and never stored into the topic
//! to be consumed at once. The same case runs against an Apache 5.3.3 broker registered
//! with our name server, so the expectation is Apache's own behaviour.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::time::Duration;

use integration_tests::harness::{
    ApacheBroker, BrokerProcess, NamesrvProcess, create_topic, unique_name,
};
use integration_tests::java::{JavaTools, Recv, V5};

const REFUSAL: &str = "accurate timer message is not enabled";

/// Sends one timer message of each kind to `topic`; every send must fail with the refusal.
fn assert_timer_sends_refused(java: &JavaTools, ns: &str, topic: &str, what: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let due = now + 10_000;
    for timer in [
        "delay-sec=10".to_owned(),
        "delay-ms=10000".to_owned(),
        format!("deliver-ms={due}"),
    ] {
        let out = java.run(
            "sluice.it.Producer",
            &[
                "--namesrv",
                ns,
                "--topic",
                topic,
                "--count",
                "1",
                "--retries",
                "0",
                "--timer",
                &timer,
            ],
            Duration::from_secs(60),
        );
        assert!(
            !out.status.is_some_and(|s| s.success()) && out.stdout.contains(REFUSAL),
            "{what}: a timer send ({timer}) was not refused as Apache refuses it:\n{out}"
        );
    }
}

/// Nothing of `topic` can be consumed: the refused messages were not stored.
fn assert_nothing_stored(java: &JavaTools, ns: &str, topic: &str, what: &str) {
    let out = java.run(
        "sluice.it.LitePullConsumer",
        &[
            "--namesrv",
            ns,
            "--topic",
            topic,
            "--group",
            &unique_name("timer_drain"),
            "--count",
            "0",
            "--mode",
            "assign",
            "--from",
            "first",
            "--wait-ms",
            "5000",
        ],
        Duration::from_secs(60),
    );
    out.assert_ok();
    let got = Recv::all(out.stdout.lines());
    assert!(
        got.is_empty(),
        "{what}: refused timer messages were consumed: {got:?}\n{out}"
    );
}

#[test]
fn timer_messages_are_refused_as_apache_5_3_3_refuses_them_without_a_timer_wheel() {
    integration_tests::require_tools!(Java, Maven);
    let java = JavaTools::get(V5);

    let ns = NamesrvProcess::start();
    let broker = BrokerProcess::start(&ns.addr());
    let topic = unique_name("Timer");
    create_topic(&ns.addr(), &topic, 4);
    assert_timer_sends_refused(java, &ns.addr(), &topic, "sluice");
    assert_nothing_stored(java, &ns.addr(), &topic, "sluice");
    drop(broker);
    drop(ns);

    // The reference: Apache RocketMQ 5.3.3 with timerWheelEnable=false.
    let ns = NamesrvProcess::start();
    let _apache = ApacheBroker::start("5.3.3", &ns.addr(), "ASYNC_MASTER", 0, &[]);
    let topic = unique_name("TimerApache");
    create_topic(&ns.addr(), &topic, 4);
    assert_timer_sends_refused(java, &ns.addr(), &topic, "Apache 5.3.3");
    assert_nothing_stored(java, &ns.addr(), &topic, "Apache 5.3.3");
}
