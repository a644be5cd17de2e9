//! Classic HA between sluice and Apache RocketMQ's own broker
//! (`org.apache.rocketmq:rocketmq-broker` from Maven Central, run on Java 17, see
//! `java-broker/README.md`): the HA wire is byte-identical,
//! so a Java slave follows a sluice master and a sluice slave follows a Java master. Both sides
//! register with our `mqnamesrv`; the official Java client (4.9.8) produces and consumes.
//!
//! - `java_slave_follows_sluice_master_4_9_7`: sluice SYNC_MASTER + Apache 4.9.7 SLAVE. Every send
//!   is SEND_OK (the sluice master waited for the Java slave's acknowledgement); the Java slave's
//!   CommitLog is byte-identical to the master's, and so are the consume queues it built; with
//!   the master killed, a Java consumer reads every message from the Java slave.
//! - `sluice_slave_follows_java_master_4_9_7` / `_5_3_3`: Apache SYNC_MASTER + sluice SLAVE, the
//!   same checks the other way round (a 5.x SYNC_MASTER with its default `inSyncReplicas=1` does
//!   not wait for the slave, so there SEND_OK proves nothing about the slave).
//! - `java_slave_follows_sluice_master_5_3_3`, `#[ignore]`d: a 5.3.3 slave copies its master's
//!   topic table only 60 s after it starts, so the read-back takes over a minute
//!   (`cargo test -p integration-tests --test ha_interop -- --ignored`).
//!
//! A Java slave copies its master's topic table through the master's "VIP" channel
//! (`listenPort - 2`), which a sluice broker opens as RocketMQ's does (`fastListenPort`): the
//! topic-table check of `java_slave_follows_sluice_master_*` goes through it.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use integration_tests::harness::{
    ApacheBroker, BrokerProcess, NamesrvProcess, broker_has_topic, compare_store_files,
    create_topic, unique_name, wait_until,
};
use integration_tests::java::{JavaTools, Recv, Sent, V4};

const MESSAGES: usize = 100;
/// Apache brokers run on one of these.
const APACHE_4: &str = "4.9.7";
const APACHE_5: &str = "5.3.3";

/// Sends probe messages (to a topic of their own) until the SYNC_MASTER answers SEND_OK, i.e.
/// its slave acknowledges. A Java 4.9.7 slave first reports its offset one heartbeat interval
/// (5 s) after it connects; until then a sluice master answers SLAVE_NOT_AVAILABLE (Apache's
/// would wait for the acknowledgement, up to `slaveTimeout`).
fn wait_sync_ok(namesrv: &str) {
    let probe = unique_name("InteropProbe");
    let mut last = None;
    let ok = wait_until(Duration::from_secs(60), || {
        let out = integration_tests::harness::mqadmin(
            namesrv,
            &["sendMessage", "-t", &probe, "-p", "probe"],
        );
        let ok = out.status.success() && out.stdout.contains("SEND_OK");
        last = Some(out);
        ok
    });
    assert!(ok, "no SEND_OK from the SYNC_MASTER: {}", last.unwrap());
}

fn produce(java: &JavaTools, ns: &str, topic: &str) -> Vec<Sent> {
    let out = java.run(
        "sluice.it.Producer",
        &[
            "--namesrv",
            ns,
            "--topic",
            topic,
            "--count",
            &MESSAGES.to_string(),
            "--keys",
            "--tag",
            "TagA",
        ],
        Duration::from_secs(120),
    );
    out.assert_ok();
    let sent = Sent::all(out.stdout.lines());
    assert_eq!(sent.len(), MESSAGES, "{out}");
    let statuses: BTreeSet<&str> = sent.iter().map(|s| s.status.as_str()).collect();
    assert_eq!(
        statuses,
        BTreeSet::from(["SEND_OK"]),
        "a SYNC_MASTER answers SEND_OK once its slave acknowledged:\n{out}"
    );
    sent
}

/// A Java push consumer of a new group reads every sent message (from whatever broker the
/// route offers: only the slave is left).
fn assert_consumed(java: &JavaTools, ns: &str, topic: &str, sent: &[Sent]) {
    let out = java.run(
        "sluice.it.PushConsumer",
        &[
            "--namesrv",
            ns,
            "--topic",
            topic,
            "--group",
            &unique_name("interop_read"),
            "--count",
            &MESSAGES.to_string(),
            "--from",
            "first",
            "--heartbeat-ms",
            "1000",
            "--wait-ms",
            "45000",
        ],
        Duration::from_secs(90),
    );
    let got: BTreeSet<String> = Recv::all(out.stdout.lines())
        .into_iter()
        .map(|r| r.msg_id)
        .collect();
    let want: BTreeSet<String> = sent.iter().map(|s| s.msg_id.clone()).collect();
    assert!(
        got == want,
        "read {} of {} from the slave:\n{out}",
        got.intersection(&want).count(),
        want.len()
    );
}

/// Polls until the two stores hold the same CommitLog and consume-queue files for `topic`.
fn assert_identical(master: &Path, slave: &Path, topic: &str, what: &str) -> usize {
    let compare = || -> Result<usize, String> {
        let mut n = compare_store_files(&master.join("commitlog"), &slave.join("commitlog"))?;
        for q in 0..4 {
            let rel = format!("consumequeue/{topic}/{q}");
            n += compare_store_files(&master.join(&rel), &slave.join(&rel))?;
        }
        Ok(n)
    };
    let mut last = Err(String::new());
    wait_until(Duration::from_secs(30), || {
        last = compare();
        last.is_ok()
    });
    last.unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn java_slave_follows_sluice_master(version: &str) {
    let started = Instant::now();
    let java = JavaTools::get(V4);
    let ns = NamesrvProcess::start();
    let ns_addr = ns.addr();
    let master = BrokerProcess::start_master("sluice-master", &ns_addr, "SYNC_MASTER", &[]);
    let topic = unique_name("InteropJs");
    create_topic(&ns_addr, &topic, 4);

    // The Java slave learns the master's HA address from the name server.
    let mut slave = ApacheBroker::start(
        version,
        &ns_addr,
        "SLAVE",
        1,
        &[("slaveReadEnable", "true")],
    );
    assert!(
        wait_until(Duration::from_secs(60), || master
            .ha_status()
            .is_ok_and(|s| !s.slaves.is_empty())),
        "the Java slave did not connect to the sluice master:\n{}",
        slave.log_tail()
    );
    wait_sync_ok(&ns_addr);
    let sent = produce(java, &ns_addr, &topic);
    let status = master.ha_status().unwrap();
    assert_eq!(
        status.slave_ack_offset,
        Some(status.max_offset),
        "the Java slave acknowledged everything: {status:?}"
    );
    let files = assert_identical(
        &master.store_dir(),
        &slave.store_dir(),
        &topic,
        "Java slave of a sluice master",
    );

    // The Java slave copies the topic table (through the VIP channel) and serves it alone.
    assert!(
        wait_until(Duration::from_secs(90), || broker_has_topic(
            &slave.addr(),
            &topic
        )),
        "the Java slave did not copy topic {topic} from the sluice master:\n{}",
        slave.log_tail()
    );
    let mut master = master;
    master.kill();
    assert_consumed(java, &ns_addr, &topic, &sent);
    eprintln!(
        "HA interop: Apache {version} slave of a sluice SYNC_MASTER: {MESSAGES} sends SEND_OK \
         (acked by the Java slave up to {}), {files} CommitLog/consume-queue files byte-identical, \
         all {MESSAGES} read from the Java slave with the master down; took {:.1}s",
        status.max_offset,
        started.elapsed().as_secs_f64()
    );
    slave.process.stop();
}

fn sluice_slave_follows_java_master(version: &str) {
    let started = Instant::now();
    let java = JavaTools::get(V4);
    let ns = NamesrvProcess::start();
    let ns_addr = ns.addr();
    let mut master = ApacheBroker::start(version, &ns_addr, "SYNC_MASTER", 0, &[]);
    let topic = unique_name("InteropSj");
    create_topic(&ns_addr, &topic, 4);

    // The sluice slave learns the Java master's HA address from the name server.
    let slave = BrokerProcess::start_as(
        "sluice-slave",
        &ns_addr,
        "SLAVE",
        1,
        &[("slaveReadEnable", "true")],
    );
    assert!(
        wait_until(Duration::from_secs(30), || slave.ha_status().is_ok_and(
            |s| s.connected && s.master.as_deref() == Some(master.ha_addr().as_str())
        )),
        "the sluice slave did not follow the Java master: {:?}",
        slave.ha_status()
    );
    // It copied the Java master's tables when it learned the master (the topic table through
    // the main port: sluice asks no VIP channel).
    assert!(
        wait_until(Duration::from_secs(15), || slave.has_topic(&topic)),
        "the sluice slave did not copy topic {topic} from the Java master"
    );
    wait_sync_ok(&ns_addr);
    let sent = produce(java, &ns_addr, &topic);
    let files = assert_identical(
        &master.store_dir(),
        &slave.store_dir(),
        &topic,
        "sluice slave of a Java master",
    );
    master.process.kill();
    assert_consumed(java, &ns_addr, &topic, &sent);
    // 4.9: SEND_OK means the slave acknowledged; 5.x with its default inSyncReplicas=1 does not
    // wait for the slave.
    let acked = if version.starts_with('4') {
        "acked by the sluice slave"
    } else {
        "5.x does not wait for the slave"
    };
    eprintln!(
        "HA interop: sluice slave of an Apache {version} SYNC_MASTER: {MESSAGES} sends SEND_OK \
         ({acked}), {files} CommitLog/consume-queue files byte-identical, all {MESSAGES} read \
         from the sluice slave with the master down; took {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn java_slave_follows_sluice_master_4_9_7() {
    integration_tests::require_tools!(Java, Maven);
    java_slave_follows_sluice_master(APACHE_4);
}

#[test]
fn sluice_slave_follows_java_master_4_9_7() {
    integration_tests::require_tools!(Java, Maven);
    sluice_slave_follows_java_master(APACHE_4);
}

#[test]
#[ignore = "slow (a 5.3.3 slave copies its master's topics 60 s after start); run with --ignored"]
fn java_slave_follows_sluice_master_5_3_3() {
    integration_tests::require_tools!(Java, Maven);
    java_slave_follows_sluice_master(APACHE_5);
}

#[test]
fn sluice_slave_follows_java_master_5_3_3() {
    integration_tests::require_tools!(Java, Maven);
    sluice_slave_follows_java_master(APACHE_5);
}
