//! Apache's own `mqadmin` 5.3.3 on a master/slave pair (issue 15): the HA, store maintenance
//! and inspection commands, and group deletion on a pair, each run the same way against a
//! sluice pair and an Apache RocketMQ 5.3.3 pair (from Maven Central, registered with our name
//! server), with the same expectation:
//!
//! - `haStatus` on the master (its slave listed and in sync) and on the slave (its master, its
//!   offset, the master flush offset `resetMasterFlushOffset` set);
//! - `cleanExpiredCQ`, `deleteExpiredCommitLog`, `cleanUnusedTopic`, `setCommitLogReadAheadMode`,
//!   `brokerConsumeStats`, `queryCq`, `getColdDataFlowCtrInfo`: answered without an error;
//! - `updateBrokerConfig -k maxMessageSize` takes effect (`getBrokerConfig` shows it);
//! - `deleteSubGroup -c` on the pair: the group and its retry topic go from master and slave;
//! - `getBrokerEpoch` (controller mode only) refused alike.
//!
//! The Apache pair runs with its timer wheel on: with it off, Apache's slave fails every topic
//! deletion with a NullPointerException from its missing timer store (a test of Apache, not of the
//! command).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::time::{Duration, Instant};

use integration_tests::harness::{ApacheBroker, ChildOutput, HaPair, NamesrvProcess, unique_name};
use integration_tests::java::{JavaTools, V5};

const APACHE: &str = "5.3.3";

/// A name server and a master/slave pair, sluice's or Apache's.
enum Pair {
    Sluice(HaPair),
    Apache {
        // Dropped in this order: brokers, then the name server.
        slave: ApacheBroker,
        master: ApacheBroker,
        ns: NamesrvProcess,
    },
}

impl Pair {
    fn name(&self) -> &'static str {
        match self {
            Pair::Sluice(_) => "sluice",
            Pair::Apache { .. } => "Apache 5.3.3",
        }
    }

    fn namesrv(&self) -> String {
        match self {
            Pair::Sluice(p) => p.namesrv(),
            Pair::Apache { ns, .. } => ns.addr(),
        }
    }

    fn master(&self) -> String {
        match self {
            Pair::Sluice(p) => p.master().addr(),
            Pair::Apache { master, .. } => master.addr(),
        }
    }

    fn slave(&self) -> String {
        match self {
            Pair::Sluice(p) => p.slave().addr(),
            Pair::Apache { slave, .. } => slave.addr(),
        }
    }

    fn mqadmin(&self, args: &[&str]) -> ChildOutput {
        JavaTools::get(V5).mqadmin(&self.namesrv(), args)
    }

    /// Runs an mqadmin command that must succeed (exit 0, no exception printed); its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.mqadmin(args);
        assert!(
            out.success() && !out.stderr.contains("Exception"),
            "{}: mqadmin {}\n{}\n{}",
            self.name(),
            args.join(" "),
            out.stdout,
            out.stderr
        );
        out.stdout
    }

    /// Runs an mqadmin command until its stdout contains `want` (up to 30 s).
    fn ok_until(&self, args: &[&str], want: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = self.ok(args);
            if out.contains(want) {
                return out;
            }
            assert!(
                Instant::now() < deadline,
                "{}: mqadmin {}: no {want:?} in\n{out}",
                self.name(),
                args.join(" ")
            );
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

fn sluice_pair() -> Pair {
    Pair::Sluice(HaPair::start("ASYNC_MASTER", &[], &[]))
}

fn apache_pair() -> Pair {
    let ns = NamesrvProcess::start();
    let timer = [("timerWheelEnable", "true")];
    let master = ApacheBroker::start(APACHE, &ns.addr(), "ASYNC_MASTER", 0, &timer);
    let slave = ApacheBroker::start(APACHE, &ns.addr(), "SLAVE", 1, &timer);
    Pair::Apache { slave, master, ns }
}

/// Every case of the module doc against one pair.
fn commands_answer_as_apache_does(pair: &Pair) {
    let (master, slave) = (pair.master(), pair.slave());
    let topic = unique_name("Mqadmin5");
    let group = unique_name("mqadmin5_group");
    pair.ok(&[
        "updateTopic",
        "-c",
        "DefaultCluster",
        "-t",
        &topic,
        "-r",
        "2",
        "-w",
        "2",
    ]);
    pair.ok(&["updateSubGroup", "-c", "DefaultCluster", "-g", &group]);
    for _ in 0..3 {
        pair.ok(&[
            "sendMessage",
            "-t",
            &topic,
            "-p",
            "hello",
            "-b",
            "broker-a",
            "-i",
            "0",
        ]);
    }

    // haStatus, master and slave.
    let status = pair.ok_until(&["haStatus", "-b", &master], "#InSyncSlaveNum\t1");
    assert!(status.contains("#SlaveNum\t1"), "{}: {status}", pair.name());
    let max: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("#MasterCommitLogMaxOffset\t"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(max > 0, "{}: {status}", pair.name());
    pair.ok(&["resetMasterFlushOffset", "-b", &slave, "-o", "4096"]);
    let status = pair.ok_until(&["haStatus", "-b", &slave], "#MasterFlushOffset\t4096");
    for field in ["#MasterAddr\t", "#CommitLogMaxOffset\t", "#LastReadTime\t"] {
        assert!(status.contains(field), "{}: {field}: {status}", pair.name());
    }
    pair.ok(&["haStatus", "-c", "DefaultCluster"]);

    // Store maintenance and inspection.
    pair.ok(&["cleanExpiredCQ", "-c", "DefaultCluster"]);
    pair.ok(&["cleanExpiredCQ", "-b", &master]);
    pair.ok(&["deleteExpiredCommitLog", "-c", "DefaultCluster"]);
    pair.ok(&["cleanUnusedTopic", "-c", "DefaultCluster"]);
    pair.ok(&["setCommitLogReadAheadMode", "-b", &master, "-m", "1"]);
    pair.ok(&["setCommitLogReadAheadMode", "-b", &master, "-m", "0"]);
    pair.ok(&["brokerConsumeStats", "-b", &master]);
    pair.ok(&["getColdDataFlowCtrInfo", "-b", &master]);
    let cq = pair.ok(&[
        "queryCq", "-t", &topic, "-q", "0", "-i", "0", "-c", "3", "-b", &master,
    ]);
    assert!(
        cq.contains("Queue data: \nmax: 3, min: 0"),
        "{}: {cq}",
        pair.name()
    );

    // updateBrokerConfig takes effect.
    pair.ok(&[
        "updateBrokerConfig",
        "-c",
        "DefaultCluster",
        "-k",
        "maxMessageSize",
        "-v",
        "2097152",
    ]);
    let config = pair.ok(&["getBrokerConfig", "-b", &master]);
    assert!(
        config
            .lines()
            .any(|l| l.starts_with("maxMessageSize") && l.trim_end().ends_with("2097152")),
        "{}: {config}",
        pair.name()
    );

    // deleteSubGroup on the pair: masters lose the group, every broker its retry topic.
    pair.ok(&["deleteSubGroup", "-c", "DefaultCluster", "-g", &group]);

    // Controller mode only.
    let epoch = pair.mqadmin(&["getBrokerEpoch", "-c", "DefaultCluster"]);
    assert!(
        !epoch.success() || epoch.stdout.trim().is_empty(),
        "{}: getBrokerEpoch answered\n{}",
        pair.name(),
        epoch.stdout
    );
}

#[test]
fn mqadmin_5_3_3_on_a_sluice_pair() {
    commands_answer_as_apache_does(&sluice_pair());
}

#[test]
fn mqadmin_5_3_3_on_an_apache_pair() {
    commands_answer_as_apache_does(&apache_pair());
}
