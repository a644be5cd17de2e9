//! An operator's tools against a gRPC consumer of a broker serving gRPC itself (local mode),
//! with Apache's `mqadmin` 5.3.3 and the official Java SDK's PushConsumer (the case program's
//! `listen` case):
//!
//! - `consumerConnection -g G` lists the consumer (its client id, JAVA, a 5.x version) with its
//!   subscription and CONSUME_PASSIVELY;
//! - `consumerStatus -g G -i ID -s` shows its thread stacks (the broker asks the proxy, the proxy
//!   the SDK with a `PrintThreadStackTraceCommand` on its telemetry stream);
//! - `queryMsgById -i MSGID -t T -g G -d ID` gives it a message (`VerifyMessageCommand`: the
//!   consumer's listener runs on it) and prints the `ConsumeMessageDirectlyResult`.
//!
//! Against sluice (`mqbroker` with `enableGrpcProxy`) and against Apache 5.3.3 in local mode
//! (`ProxyStartup -pm local`). Apache lists the consumer the same way (its version shown as the
//! broker's own, V5_3_3, and only once the group's retry topic exists, which its local mode does
//! not create for a gRPC consumer: the test creates it there), but asks it nothing: its broker
//! relays GET_CONSUMER_RUNNING_INFO without the typed header its proxy reads `jstackEnable`
//! from, so no `PrintThreadStackTraceCommand` is sent and `consumerStatus -s` times out; and
//! `queryMsgById -d` asks for the running info first, so it never gives the message either. The
//! test asserts Apache's outcome as it is, so a change shows.
#![allow(clippy::unwrap_used, reason = "test: a failed step should fail loudly")]

use std::time::Duration;

use integration_tests::grpc::{RunOptions, Sdk};
use integration_tests::harness::tools::{self, Tool};
use integration_tests::harness::{ApacheBroker, BrokerProcess, NamesrvProcess, wait_until};
use integration_tests::java::{JavaTools, V5};

const TOPIC: &str = "grpc_listen_java";
const GROUP: &str = "GID_listen_java";
/// How long the listening consumer may live.
const LISTEN: Duration = Duration::from_secs(240);

/// The system under test: its name server, where the SDK connects, what mqadmin names.
struct Target<'a> {
    name: &'static str,
    namesrv: &'a str,
    endpoint: &'a str,
    broker: &'a str,
    apache: bool,
}

fn needed() -> bool {
    let mut all = vec![Tool::Java, Tool::Maven];
    all.extend_from_slice(Sdk::Java.tools());
    tools::available(&all)
}

/// Apache's mqadmin `args` against `t`; its output (checked for success unless `may_fail`).
fn mqadmin(t: &Target<'_>, args: &[&str], may_fail: bool) -> String {
    let out = JavaTools::get(V5).mqadmin_with_timeout(t.namesrv, args, Duration::from_secs(60));
    assert!(
        may_fail || out.success(),
        "{}: mqadmin {args:?} failed:\n{out}",
        t.name
    );
    format!("{}{}", out.stdout, out.stderr)
}

fn admin_reaches_a_grpc_consumer(t: &Target<'_>) {
    mqadmin(
        t,
        &[
            "updateTopic",
            "-b",
            t.broker,
            "-t",
            TOPIC,
            "-r",
            "4",
            "-w",
            "4",
        ],
        false,
    );
    if t.apache {
        // mqadmin finds a group's brokers by its retry topic's route, which Apache's local
        // mode does not make for a gRPC consumer (sluice makes it on registration).
        let retry = format!("%RETRY%{GROUP}");
        mqadmin(
            t,
            &[
                "updateTopic",
                "-b",
                t.broker,
                "-t",
                &retry,
                "-r",
                "1",
                "-w",
                "1",
            ],
            false,
        );
    }
    let program = Sdk::Java.program();
    let consumer = program.spawn_as(
        "listen",
        t.endpoint,
        TOPIC,
        GROUP,
        LISTEN,
        RunOptions {
            consume: true,
            tls: false,
        },
        None,
    );
    assert!(
        consumer
            .wait_for_line("STARTED", Duration::from_secs(90))
            .is_some(),
        "{}: the consumer did not start:\n{}",
        t.name,
        consumer.stdout()
    );

    // Listed, once its settings reached the proxy.
    let mut listing = String::new();
    let listed = wait_until(Duration::from_secs(60), || {
        listing = mqadmin(t, &["consumerConnection", "-g", GROUP], true);
        listing.lines().any(|l| l.contains(" JAVA "))
    });
    assert!(listed, "{}: consumer not listed:\n{listing}", t.name);
    let line = listing.lines().find(|l| l.contains(" JAVA ")).unwrap();
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (client_id, version) = (fields[0], *fields.last().unwrap());
    assert!(version.starts_with("V5_"), "{}: version in {line}", t.name);
    if t.apache {
        assert_eq!(version, "V5_3_3", "Apache writes its own version");
    }
    assert!(
        listing.contains("CONSUME_PASSIVELY") && listing.contains(TOPIC),
        "{}: {listing}",
        t.name
    );

    // Its thread stacks.
    let status = mqadmin(
        t,
        &["consumerStatus", "-g", GROUP, "-i", client_id, "-s"],
        t.apache,
    );
    let stacks = status
        .split("#Consumer jstack#")
        .nth(1)
        .unwrap_or_default()
        .trim();
    if t.apache {
        assert!(
            stacks.is_empty() && status.contains("RemotingTimeoutException"),
            "Apache's local mode relayed the thread stacks (no longer as this test expects):\n{status}"
        );
    } else {
        assert!(
            stacks.lines().count() > 3,
            "{}: no thread stacks in consumerStatus:\n{status}",
            t.name
        );
    }

    // A message given to it directly.
    let sent = mqadmin(
        t,
        &["sendMessage", "-t", TOPIC, "-p", "listen-direct"],
        false,
    );
    let msg_id = sent
        .lines()
        .find(|l| l.contains("SEND_OK"))
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("{}: no message id in {sent}", t.name))
        .to_owned();
    let deliveries = || {
        consumer
            .stdout_lines()
            .iter()
            .filter(|l| l.starts_with("RECV listen-direct "))
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(60), || deliveries() >= 1),
        "{}: the message was not consumed:\n{}",
        t.name,
        consumer.stdout()
    );
    let direct = mqadmin(
        t,
        &[
            "queryMsgById",
            "-i",
            &msg_id,
            "-t",
            TOPIC,
            "-g",
            GROUP,
            "-d",
            client_id,
        ],
        true,
    );
    if t.apache {
        assert!(
            !direct.contains("CR_SUCCESS") && deliveries() == 1,
            "Apache's local mode gave the message directly (no longer as this test expects):\n{direct}"
        );
    } else {
        assert!(
            direct.contains("consumeResult=CR_SUCCESS") && direct.contains("from gRPC client"),
            "{}: queryMsgById -d:\n{direct}",
            t.name
        );
        assert!(
            wait_until(Duration::from_secs(10), || deliveries() >= 2),
            "{}: the consumer never saw the message given directly:\n{}",
            t.name,
            consumer.stdout()
        );
    }
}

#[test]
fn mqadmin_reaches_a_grpc_consumer_of_sluice_in_local_mode() {
    if !needed() {
        return;
    }
    let ns = NamesrvProcess::start();
    let broker = BrokerProcess::start_with_grpc(&ns.addr(), &[], &[]);
    admin_reaches_a_grpc_consumer(&Target {
        name: "sluice",
        namesrv: &ns.addr(),
        endpoint: &broker.grpc_endpoint(),
        broker: &broker.addr(),
        apache: false,
    });
}

#[test]
fn mqadmin_reaches_a_grpc_consumer_of_apache_in_local_mode() {
    if !needed() {
        return;
    }
    let ns = NamesrvProcess::start();
    let broker = ApacheBroker::start_with_grpc(V5, &ns.addr(), &[("bindAddress", "127.0.0.1")]);
    admin_reaches_a_grpc_consumer(&Target {
        name: "Apache 5.3.3",
        namesrv: &ns.addr(),
        endpoint: &broker.grpc_endpoint(),
        broker: &broker.addr(),
        apache: true,
    });
}
