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
//! - `getBrokerEpoch` (controller mode only) refused alike;
//! - the sweep ([`sweep`]): nearly every other sub command, run in one JVM, each with one
//!   expectation for both pairs (output it must show, or a refusal), among them the
//!   server-side offset reset (`resetOffsetByTime` / `skipAccumulatedMessage` on a group with
//!   no consumer online, answered by the broker, not the tools' fallback; an online consumer
//!   follows a reset and gets its messages again).
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

/// What a command of the sweep must do, on either pair.
#[derive(Debug, Clone)]
enum Want {
    /// Exit 0, no exception, and each of these in its stdout.
    Ok(Vec<String>),
    /// Refused: a stack trace or a non-zero exit, on both brokers alike.
    Refused,
}

/// The sweep: (nearly) every sub command of Apache's 5.3.3 mqadmin, in one JVM, each with the
/// same expectation on both pairs. Left out: commands that never end (`startMonitoring`,
/// `clusterRT`), that only read local files or a controller (`dumpCompactionLog`,
/// `exportMetadataInRocksDB`, `rocksDBConfigToJson`, the controller commands), and POP's
/// (`setConsumeMode`, `exportPopRecord`: issue 16). The ACL commands are covered with
/// authentication on by the `acl` test.
fn sweep(pair: &Pair) {
    let java = JavaTools::get(V5);
    let (master, slave) = (pair.master(), pair.slave());
    let topic = unique_name("Sweep");
    // An online consumer's group, and one that never had a consumer.
    let group = unique_name("sweep_group");
    let offline = unique_name("sweep_offline");
    let key = unique_name("key");
    let dir = tempfile::tempdir().unwrap();
    let topics_file = dir.path().join("topics.json");
    let listed_topic = unique_name("SweepListed");
    let typed_topic = unique_name("SweepFifo");
    std::fs::write(
        &topics_file,
        format!(
            r#"[{{"topicName":"{listed_topic}","readQueueNums":2,"writeQueueNums":2,"perm":6}}]"#
        ),
    )
    .unwrap();
    let groups_file = dir.path().join("groups.json");
    let listed_group = unique_name("sweep_listed");
    std::fs::write(
        &groups_file,
        format!(r#"[{{"groupName":"{listed_group}"}}]"#),
    )
    .unwrap();
    let export = dir.path().join("export").display().to_string();

    let setup: Vec<Vec<String>> = [
        vec![
            "updateTopic",
            "-c",
            "DefaultCluster",
            "-t",
            &topic,
            "-r",
            "2",
            "-w",
            "2",
        ],
        vec!["updateSubGroup", "-c", "DefaultCluster", "-g", &group],
        vec!["updateSubGroup", "-c", "DefaultCluster", "-g", &offline],
        vec![
            "sendMessage",
            "-t",
            &topic,
            "-p",
            "sweep",
            "-k",
            &key,
            "-b",
            "broker-a",
            "-i",
            "0",
        ],
    ]
    .iter()
    .map(|c| c.iter().map(ToString::to_string).collect())
    .collect();
    let runs = java.mqadmin_batch(&pair.namesrv(), &setup, Duration::from_secs(30));
    for r in &runs {
        assert!(r.ok(), "{}: {r}", pair.name());
    }
    let msg_id = runs[3]
        .stdout
        .lines()
        .find(|l| l.starts_with("broker-a"))
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("{}: no msgId in {}", pair.name(), runs[3]))
        .to_owned();
    let namesrv = pair.namesrv();
    let consumer = java.spawn(
        "sluice.it.PushConsumer",
        &[
            "--namesrv",
            &namesrv,
            "--topic",
            &topic,
            "--group",
            &group,
            "--count",
            "1000000",
            "--from",
            "first",
            "--wait-ms",
            "600000",
        ],
    );
    // Until its heartbeat made the group's retry topic and the route holds it.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = pair.mqadmin(&["consumerConnection", "-g", &group]);
        if out.success() && out.stdout.contains("#ClientId") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{}: the consumer is not connected\n{out}",
            pair.name()
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    let deliveries_of_the_first = |lines: &[String]| {
        lines
            .iter()
            .filter(|l| l.starts_with("RECV ") && l.ends_with(" sweep"))
            .count()
    };
    assert!(
        consumer.wait_until(Duration::from_secs(60), |l| deliveries_of_the_first(l) >= 1),
        "{}: the consumer did not get the first message\n{}",
        pair.name(),
        consumer.log_tails()
    );

    let now = "now".to_owned();
    let ok = |needles: &[&str]| Want::Ok(needles.iter().map(ToString::to_string).collect());
    let cases: Vec<(Vec<&str>, Want)> = vec![
        (vec!["clusterList"], ok(&["DefaultCluster", "broker-a"])),
        (vec!["topicList"], ok(&[&topic])),
        (
            vec!["topicRoute", "-t", &topic],
            ok(&["\"brokerName\":\"broker-a\""]),
        ),
        (vec!["topicStatus", "-t", &topic], ok(&["#Broker Name"])),
        (
            vec!["topicClusterList", "-t", &topic],
            ok(&["DefaultCluster"]),
        ),
        (
            vec![
                "updateTopicPerm",
                "-c",
                "DefaultCluster",
                "-t",
                &topic,
                "-p",
                "6",
            ],
            ok(&[]),
        ),
        // Topic attributes (RocketMQ 5): the message type Apache's proxy checks sends against.
        (
            vec![
                "updateTopic",
                "-c",
                "DefaultCluster",
                "-t",
                &typed_topic,
                "-a",
                "+message.type=FIFO",
            ],
            ok(&["message.type=FIFO"]),
        ),
        (
            vec![
                "updateTopic",
                "-c",
                "DefaultCluster",
                "-t",
                &typed_topic,
                "-a",
                "+message.type=MIXED",
            ],
            Want::Refused,
        ),
        (
            vec![
                "updateTopicList",
                "-c",
                "DefaultCluster",
                "-f",
                topics_file.to_str().unwrap(),
            ],
            ok(&[]),
        ),
        (
            vec!["deleteTopic", "-c", "DefaultCluster", "-t", &listed_topic],
            ok(&["success"]),
        ),
        (
            vec![
                "updateSubGroupList",
                "-b",
                &master,
                "-f",
                groups_file.to_str().unwrap(),
            ],
            ok(&[]),
        ),
        (vec!["getConsumerConfig", "-g", &group], ok(&[&group])),
        (
            vec![
                "deleteSubGroup",
                "-c",
                "DefaultCluster",
                "-g",
                &listed_group,
            ],
            ok(&[]),
        ),
        (
            vec!["brokerStatus", "-b", &master],
            ok(&["commitLogMaxOffset", "brokerVersionDesc"]),
        ),
        (
            vec!["brokerStatus", "-b", &slave],
            ok(&["commitLogMaxOffset"]),
        ),
        (vec!["getBrokerConfig", "-b", &master], ok(&["brokerName"])),
        (
            vec![
                "updateBrokerConfig",
                "-b",
                &master,
                "-k",
                "maxMessageSize",
                "-v",
                "4194304",
            ],
            ok(&[]),
        ),
        (
            vec!["queryMsgById", "-t", &topic, "-i", &msg_id],
            ok(&[&key]),
        ),
        (
            vec!["queryMsgByKey", "-t", &topic, "-k", &key],
            ok(&[&msg_id]),
        ),
        (
            vec!["queryMsgByUniqueKey", "-t", &topic, "-i", &msg_id],
            ok(&[&key]),
        ),
        (
            vec![
                "queryMsgByOffset",
                "-t",
                &topic,
                "-b",
                "broker-a",
                "-i",
                "0",
                "-o",
                "0",
            ],
            ok(&[&key]),
        ),
        // No trace topic on either broker (traceTopicEnable is off).
        (vec!["queryMsgTraceById", "-i", &msg_id], Want::Refused),
        (vec!["printMsg", "-t", &topic], ok(&["sweep"])),
        (
            vec![
                "printMsgByQueue",
                "-t",
                &topic,
                "-a",
                "broker-a",
                "-i",
                "0",
                "-p",
                "true",
                "-d",
                "true",
            ],
            ok(&["sweep"]),
        ),
        (
            vec![
                "consumeMessage",
                "-t",
                &topic,
                "-b",
                "broker-a",
                "-i",
                "0",
                "-o",
                "0",
                "-c",
                "1",
            ],
            ok(&["sweep"]),
        ),
        (
            vec!["checkMsgSendRT", "-t", &topic, "-a", "3"],
            ok(&["#Broker Name"]),
        ),
        (vec!["sendMsgStatus", "-b", "broker-a", "-c", "2"], ok(&[])),
        // Offsets of a group with no consumer online: reset by the broker itself (RocketMQ 5),
        // not by the tools' fallback (whose table has a #rollbackOffset column).
        (
            vec!["resetOffsetByTime", "-g", &offline, "-t", &topic, "-s", "0"],
            ok(&["start reset consumer offset by specified", "#offset"]),
        ),
        (
            vec!["skipAccumulatedMessage", "-g", &offline, "-t", &topic],
            ok(&["#offset"]),
        ),
        (
            vec![
                "resetOffsetByTime",
                "-g",
                &offline,
                "-t",
                &topic,
                "-s",
                &now,
                "-b",
                &master,
                "-q",
                "0",
                "-o",
                "1",
            ],
            ok(&["reset consumer offset to 1"]),
        ),
        // consumerProgress looks up the group's retry topic, made by a consumer's heartbeat.
        (vec!["consumerProgress", "-g", &offline], Want::Refused),
        (vec!["consumerConnection", "-g", &offline], Want::Refused),
        // The online consumer's group.
        (vec!["consumerConnection", "-g", &group], ok(&["#ClientId"])),
        (vec!["consumerProgress", "-g", &group], ok(&[&topic])),
        (vec!["consumerProgress"], ok(&[&group])),
        (vec!["consumerStatus", "-g", &group], ok(&[])),
        (
            vec!["resetOffsetByTime", "-g", &group, "-t", &topic, "-s", "0"],
            ok(&["#offset"]),
        ),
        // Offsets go only to a group that exists (RocketMQ 5's UPDATE_CONSUMER_OFFSET).
        (
            vec![
                "cloneGroupOffset",
                "-s",
                &group,
                "-d",
                &offline,
                "-t",
                &topic,
            ],
            ok(&["clone group offset success"]),
        ),
        (
            vec![
                "cloneGroupOffset",
                "-s",
                &group,
                "-d",
                "sweep_no_group",
                "-t",
                &topic,
            ],
            Want::Refused,
        ),
        (vec!["brokerConsumeStats", "-b", &master], ok(&[])),
        (
            vec![
                "producerConnection",
                "-g",
                "sweep_no_producer",
                "-t",
                &topic,
            ],
            Want::Refused,
        ),
        (vec!["producer", "-b", &master], ok(&[])),
        (vec!["statsAll"], ok(&[&topic])),
        (
            vec!["allocateMQ", "-t", &topic, "-i", "127.0.0.1@1,127.0.0.1@2"],
            ok(&["127.0.0.1@1"]),
        ),
        (
            vec!["updateKvConfig", "-s", "sweep_ns", "-k", "k1", "-v", "v1"],
            ok(&[]),
        ),
        (
            vec!["deleteKvConfig", "-s", "sweep_ns", "-k", "k1"],
            ok(&[]),
        ),
        (
            vec![
                "updateOrderConf",
                "-t",
                &topic,
                "-v",
                "broker-a:2",
                "-m",
                "put",
            ],
            ok(&[]),
        ),
        (
            vec!["updateOrderConf", "-t", &topic, "-m", "get"],
            ok(&["broker-a:2"]),
        ),
        (
            vec!["updateOrderConf", "-t", &topic, "-m", "delete"],
            ok(&[]),
        ),
        (
            vec!["wipeWritePerm", "-b", "broker-a"],
            ok(&["wipe write perm of broker[broker-a]"]),
        ),
        (
            vec!["addWritePerm", "-b", "broker-a"],
            ok(&["add write perm of broker[broker-a]"]),
        ),
        (vec!["getNamesrvConfig"], ok(&[])),
        (
            vec!["exportMetadata", "-c", "DefaultCluster", "-f", &export],
            ok(&[]),
        ),
        (
            vec!["exportConfigs", "-c", "DefaultCluster", "-f", &export],
            ok(&[]),
        ),
        (
            vec!["exportMetrics", "-c", "DefaultCluster", "-f", &export],
            ok(&[]),
        ),
        (
            vec![
                "updateColdDataFlowCtrGroupConfig",
                "-b",
                &master,
                "-g",
                &group,
                "-v",
                "1000",
            ],
            ok(&[]),
        ),
        (vec!["getColdDataFlowCtrInfo", "-b", &master], ok(&[&group])),
        (
            vec![
                "removeColdDataFlowCtrGroupConfig",
                "-b",
                &master,
                "-g",
                &group,
            ],
            ok(&[]),
        ),
        (
            vec!["checkRocksdbCqWriteProgress", "-c", "DefaultCluster"],
            ok(&["broker-a"]),
        ),
        (
            vec!["addBroker", "-c", &master, "-b", "/nonexistent/broker.conf"],
            Want::Refused,
        ),
        (
            vec![
                "removeBroker",
                "-c",
                &master,
                "-b",
                "DefaultCluster:broker-a:1",
            ],
            Want::Refused,
        ),
    ];
    let commands: Vec<Vec<String>> = cases
        .iter()
        .map(|(c, _)| c.iter().map(ToString::to_string).collect())
        .collect();
    let runs = java.mqadmin_batch(&pair.namesrv(), &commands, Duration::from_secs(30));
    let mut wrong = Vec::new();
    for (run, (_, want)) in runs.iter().zip(&cases) {
        let right = match want {
            Want::Ok(needles) => {
                run.ok() && needles.iter().all(|n| run.stdout.contains(n.as_str()))
            }
            Want::Refused => !run.ok(),
        };
        eprintln!(
            "{}: {:?} {} -> {}",
            pair.name(),
            want,
            run.args.join(" "),
            if right { "as expected" } else { "WRONG" }
        );
        if !right {
            wrong.push(format!("want {want:?}: {run}"));
        }
    }
    // The brokers hold the FIFO type (exportMetadata read it back from them).
    let metadata = std::fs::read_to_string(dir.path().join("export/metadata.json"))
        .unwrap_or_default()
        .split_whitespace()
        .collect::<String>();
    let typed = metadata
        .find(&format!("\"{typed_topic}\":{{"))
        .map(|at| &metadata[at..metadata.len().min(at + 400)]);
    assert!(
        typed.is_some_and(|t| t.contains(r#""message.type":"FIFO""#)),
        "{}: {typed_topic} without its type in {metadata}",
        pair.name()
    );
    // The online group was reset to the start (by the broker, RocketMQ 5's way): its
    // consumer follows, and gets the first message again.
    assert!(
        consumer.wait_until(Duration::from_secs(90), |l| deliveries_of_the_first(l) >= 2),
        "{}: the online consumer did not follow the reset\n{}",
        pair.name(),
        consumer.log_tails()
    );
    assert!(
        wrong.is_empty(),
        "{}: {} of {} commands:\n{}",
        pair.name(),
        wrong.len(),
        runs.len(),
        wrong.join("\n")
    );
}

#[test]
fn mqadmin_5_3_3_on_a_sluice_pair() {
    let pair = sluice_pair();
    commands_answer_as_apache_does(&pair);
    sweep(&pair);
}

#[test]
fn mqadmin_5_3_3_on_an_apache_pair() {
    let pair = apache_pair();
    commands_answer_as_apache_does(&pair);
    sweep(&pair);
}
