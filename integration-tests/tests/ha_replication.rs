//! Master/slave replication with real processes: `mqnamesrv`, a sluice SYNC_MASTER and a sluice
//! SLAVE, the official Java client (4.9.8) producing and consuming.
//!
//! - `slave_mirrors_master_refuses_writes_and_serves_reads`: 200 messages sent to the master;
//!   once `SLUICE_HA_STATUS` shows the slave caught up, the slave's CommitLog files are
//!   byte-identical to the master's, and so are the consume queues the slave built from them; a
//!   send straight to the slave is refused with SERVICE_NOT_AVAILABLE and leaves its log alone;
//!   with the master killed and `slaveReadEnable=true` set on the slave (`mqadmin
//!   updateBrokerConfig`), a Java push consumer in a new group reads all 200 from the slave.
//! - `slave_serves_reads_without_master_by_default`: as Apache 4.9.7's, a slave with the default
//!   `slaveReadEnable=false` still serves a pull (4.9's PULL_RETRY_IMMEDIATELY for a slave is
//!   overwritten by the status of the read; only `suggestWhichBrokerId` says "master"), so Java
//!   consumers keep reading from the slave when the master is gone. (5.3.3's slave rejects such
//!   pulls outright: its `PullMessageProcessor.rejectRequest()` is true for a SLAVE without
//!   `slaveReadEnable`; read from its bytecode, not run.) sluice used to answer
//!   PULL_RETRY_IMMEDIATELY with an advanced `nextBeginOffset`, which moved the consumer's
//!   offsets past messages it never received.
//! - `slave_copies_topics_soon_after_start`: a slave knows its master's topics within seconds of
//!   starting (it copies its master's tables as soon as it learns the master from the name
//!   server, then every 60 s), as Apache 4.9 does (first copy 3 s after start, then every 10 s);
//!   Apache 5.3.3's first copy comes 60 s after start.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use integration_tests::client::try_request;
use integration_tests::harness::{
    BrokerProcess, HaPair, NamesrvProcess, compare_store_files, unique_name, wait_until,
};
use integration_tests::java::{JavaTools, Recv, Sent, V4};
use remoting::protocol::broker::{
    QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
};
use remoting::{RemotingCommand, RequestCode};

const MESSAGES: usize = 200;
/// SERVICE_NOT_AVAILABLE: what a slave answers a send.
const SERVICE_NOT_AVAILABLE: i32 = 14;

/// A master, a topic of 4 queues on it, then a slave following it.
struct Pair {
    ha: HaPair,
    topic: String,
}

fn pair() -> Pair {
    let topic = unique_name("HaRepl");
    let ha = HaPair::start("SYNC_MASTER", &[], &[(&topic, 4)]);
    Pair { ha, topic }
}

impl Pair {
    /// Waits until the slave copied its master's topic table (at once when it learns its
    /// master, `slave_copies_topics_soon_after_start`), so that it knows the topic it serves.
    fn wait_tables_copied(&self) {
        assert!(
            wait_until(Duration::from_secs(15), || self
                .ha
                .slave()
                .has_topic(&self.topic)),
            "the slave did not copy the topic table within 15 s of following its master"
        );
    }

    fn produce(&self, java: &JavaTools) -> Vec<Sent> {
        let out = java.run(
            "sluice.it.Producer",
            &[
                "--namesrv",
                &self.ha.namesrv(),
                "--topic",
                &self.topic,
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
        assert!(sent.iter().all(|s| s.status == "SEND_OK"), "{out}");
        sent
    }

    /// A Java push consumer of a new group reading the topic from the first offset.
    fn consume(&self, java: &JavaTools) -> (Vec<Recv>, String) {
        let out = java.run(
            "sluice.it.PushConsumer",
            &[
                "--namesrv",
                &self.ha.namesrv(),
                "--topic",
                &self.topic,
                "--group",
                &unique_name("slave_read"),
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
        let text = out.to_string();
        (Recv::all(out.stdout.lines()), text)
    }
}

/// Every sent message received, nothing else.
#[track_caller]
fn assert_received_all(recv: &[Recv], sent: &[Sent], out: &str) {
    let got: BTreeSet<&str> = recv.iter().map(|r| r.msg_id.as_str()).collect();
    let want: BTreeSet<&str> = sent.iter().map(|s| s.msg_id.as_str()).collect();
    let missing: Vec<&&str> = want.difference(&got).collect();
    let unexpected: Vec<&&str> = got.difference(&want).collect();
    assert!(
        missing.is_empty() && unexpected.is_empty(),
        "received {} of {} sent ({} missing, first: {:?}; {} unexpected: {:?})\n{out}",
        got.len(),
        want.len(),
        missing.len(),
        missing.iter().take(3).collect::<Vec<_>>(),
        unexpected.len(),
        unexpected.iter().take(3).collect::<Vec<_>>()
    );
}

#[test]
fn slave_mirrors_master_refuses_writes_and_serves_reads() {
    integration_tests::require_tools!(Java, Maven);
    let started = Instant::now();
    let java = JavaTools::get(V4);
    let mut p = pair();
    p.wait_tables_copied();
    let sent = p.produce(java);

    // Caught up: the same bytes on disk.
    p.ha.slave()
        .wait_following(p.ha.master(), Duration::from_secs(30))
        .unwrap();
    let status = p.ha.master().ha_status().unwrap();
    let files = compare_store_files(
        &p.ha.master().commit_log_dir(),
        &p.ha.slave().commit_log_dir(),
    )
    .unwrap_or_else(|e| panic!("CommitLog: {e}"));
    let mut queues = 0;
    for q in 0..4 {
        let rel = format!("consumequeue/{}/{q}", p.topic);
        queues += compare_store_files(
            &p.ha.master().store_dir().join(&rel),
            &p.ha.slave().store_dir().join(&rel),
        )
        .unwrap_or_else(|e| panic!("{rel}: {e}"));
    }

    // The slave refuses writes and its log stays as it was.
    let before = p.ha.slave().ha_status().unwrap().max_offset;
    let answer = try_request(
        &p.ha.slave().addr(),
        integration_tests::client::send_request(&p.topic, b"to the slave"),
    )
    .unwrap();
    assert_eq!(
        answer.code(),
        SERVICE_NOT_AVAILABLE,
        "a send to the slave: {:?}",
        answer.remark()
    );
    assert_eq!(p.ha.slave().ha_status().unwrap().max_offset, before);

    // The master dies; the slave, told it may serve reads, serves them all.
    p.ha.master_mut().kill();
    p.ha.slave()
        .mqadmin(&[
            "updateBrokerConfig",
            "-b",
            &p.ha.slave().addr(),
            "-k",
            "slaveReadEnable",
            "-v",
            "true",
        ])
        .assert_ok();
    let (recv, out) = p.consume(java);
    assert_received_all(&recv, &sent, &out);
    eprintln!(
        "HA replication: {MESSAGES} messages, master max offset {} acked by the slave, \
         {files} CommitLog files and {queues} consume-queue files byte-identical, send to slave \
         refused ({SERVICE_NOT_AVAILABLE}), {} read from the slave with the master down, \
         took {:.1}s",
        status.max_offset,
        recv.len(),
        started.elapsed().as_secs_f64()
    );
}

/// Apache RocketMQ 4.9.7 (checked on its bytecode and on a running 4.9.7 pair): a slave with the
/// default `slaveReadEnable=false` still serves a pull (its PULL_RETRY_IMMEDIATELY is overwritten
/// by the read's status), suggesting the master for the next one; with the master gone the
/// client pulls from the slave again, so consumers keep reading.
#[test]
fn slave_serves_reads_without_master_by_default() {
    integration_tests::require_tools!(Java, Maven);
    let java = JavaTools::get(V4);
    let mut p = pair();
    p.wait_tables_copied();
    let sent = p.produce(java);
    p.ha.slave()
        .wait_following(p.ha.master(), Duration::from_secs(30))
        .unwrap();
    p.ha.master_mut().kill();
    let (recv, out) = p.consume(java);
    assert_received_all(&recv, &sent, &out);
}

/// A slave started after its master knows the master's topics within seconds.
#[test]
fn slave_copies_topics_soon_after_start() {
    let p = pair();
    assert!(
        wait_until(Duration::from_secs(15), || p.ha.slave().has_topic(&p.topic)),
        "the slave does not know topic {} 15 s after it started following its master",
        p.topic
    );
}

/// A slave copies its master's subscription groups and consumer offsets (as RocketMQ's
/// `SlaveSynchronize`), so consumers that move to it resume where they were.
#[test]
fn slave_copies_groups_and_consumer_offsets() {
    let ns = NamesrvProcess::start();
    let master = BrokerProcess::start_master("master", &ns.addr(), "SYNC_MASTER", &[]);
    let topic = unique_name("HaOffsets");
    let group = unique_name("HaOffsetsG");
    master.create_topic(&topic, 2);
    master
        .mqadmin(&["updateSubGroup", "-b", &master.addr(), "-g", &group])
        .assert_ok();
    let commit = UpdateConsumerOffsetRequestHeader {
        consumer_group: group.clone(),
        topic: topic.clone(),
        queue_id: 1,
        commit_offset: 42,
    };
    let r = try_request(
        &master.addr(),
        RemotingCommand::request_with(RequestCode::UpdateConsumerOffset, &commit),
    )
    .unwrap();
    assert_eq!(r.code(), 0, "{:?}", r.header.remark);

    let slave = BrokerProcess::start_as("slave", &ns.addr(), "SLAVE", 1, &[]);
    slave
        .wait_following(&master, Duration::from_secs(20))
        .unwrap();
    let has_group = || {
        try_request(
            &slave.addr(),
            RemotingCommand::request(RequestCode::GetAllSubscriptiongroupConfig),
        )
        .is_ok_and(|r| {
            r.code() == 0
                && String::from_utf8_lossy(&r.body.to_bytes()).contains(&format!("\"{group}\""))
        })
    };
    assert!(
        wait_until(Duration::from_secs(15), has_group),
        "the slave did not copy subscription group {group}"
    );
    let offset_on_slave = || {
        let query = QueryConsumerOffsetRequestHeader {
            consumer_group: group.clone(),
            topic: topic.clone(),
            queue_id: 1,
            set_zero_if_not_found: Some(false),
        };
        try_request(
            &slave.addr(),
            RemotingCommand::request_with(RequestCode::QueryConsumerOffset, &query),
        )
        .ok()
        .filter(|r| r.code() == 0)
        .and_then(|r| r.decode_header::<QueryConsumerOffsetResponseHeader>().ok())
        .map(|h| h.offset)
    };
    assert!(
        wait_until(Duration::from_secs(15), || offset_on_slave() == Some(42)),
        "the slave did not copy the consumer offset: {:?}",
        offset_on_slave()
    );
}

/// A slave that starts (and registers) before its master learns the master within seconds,
/// not a registration period (30 s) later.
#[test]
fn slave_started_before_its_master_follows_it_soon() {
    let ns = NamesrvProcess::start();
    let slave = BrokerProcess::start_as("slave", &ns.addr(), "SLAVE", 1, &[]);
    let master = BrokerProcess::start_master("master", &ns.addr(), "SYNC_MASTER", &[]);
    let started = Instant::now();
    slave
        .wait_following(&master, Duration::from_secs(10))
        .unwrap();
    eprintln!(
        "slave started first follows its master after {:?}",
        started.elapsed()
    );
}
