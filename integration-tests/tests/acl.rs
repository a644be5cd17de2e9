//! Authentication and authorization (issue 15 part 3) with the official Java clients, each case
//! run the same way against sluice (our `mqnamesrv` + `mqbroker`) and against Apache RocketMQ
//! 5.3.3's broker (from Maven Central, registered with our name server), so the expectation is
//! Apache's own behaviour:
//!
//! - **ACL 2.0** (`authenticationEnabled` + `authorizationEnabled`, the 5.3.3 client's
//!   `AclClientRPCHook`): topics, users and ACLs made with Apache's `mqadmin` 5.3.3 signing as the
//!   super user (`updateTopic`, `createUser`, `createAcl`); then right keys (send and pull
//!   allowed), a wrong secret, an unknown user, no credentials, a topic without an entry, a topic
//!   denied by a literal Deny under a prefix Allow, a group without an entry, and a topic allowed
//!   only from 10.0.0.0/8 — each refused with NO_PERMISSION (16) and Apache's remark; a normal
//!   user refused an admin request (Cluster:Update); `getUser`, `listAcl`, `updateUser` (disable),
//!   `deleteAcl`, `deleteUser` as Apache's mqadmin prints and does them.
//! - **4.9 plain ACL** (`aclEnable=true`, `plain_acl.yml`, the 4.9.8 client's hook) against
//!   sluice and against Apache 4.9.7's broker (4.9.8's is not on Maven Central): refusals are
//!   SYSTEM_ERROR (1) with the `AclException` text Apache answers, a white address skips the
//!   signature, and a change to the file takes effect without a restart.
//! - **inner clients**: a sluice pair and name server all with ACL 2.0 on keep registering,
//!   copying the master's tables and replicating.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::fs;
use std::time::{Duration, Instant};

use integration_tests::acl::{ROOT, acl_2_settings, mqadmin_as, outcomes, probe, signed_request};
use integration_tests::harness::wait_until;
use integration_tests::harness::{ApacheBroker, BrokerProcess, NamesrvProcess, TestDir, mqadmin};
use integration_tests::java::{JavaTools, V4, V5};

const ALICE: (&str, &str) = ("alice", "alice-secret");
const NO_PERMISSION: i32 = 16;
const SYSTEM_ERROR: i32 = 1;

enum Broker {
    Sluice(BrokerProcess),
    Apache(ApacheBroker),
}

struct Target {
    name: &'static str,
    broker: Broker,
    // Dropped after the broker.
    ns: NamesrvProcess,
    java: &'static JavaTools,
}

impl Target {
    fn sluice(settings: &[(&str, String)]) -> Target {
        let ns = NamesrvProcess::start();
        let pairs: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let broker = BrokerProcess::start_with(&ns.addr(), &pairs);
        Target {
            name: "sluice",
            broker: Broker::Sluice(broker),
            ns,
            java: JavaTools::get(V5),
        }
    }

    fn apache(settings: &[(&str, String)]) -> Target {
        let ns = NamesrvProcess::start();
        let pairs: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let broker = ApacheBroker::start("5.3.3", &ns.addr(), "ASYNC_MASTER", 0, &pairs);
        Target {
            name: "Apache 5.3.3",
            broker: Broker::Apache(broker),
            ns,
            java: JavaTools::get(V5),
        }
    }

    fn addr(&self) -> String {
        match &self.broker {
            Broker::Sluice(b) => b.addr(),
            Broker::Apache(b) => b.addr(),
        }
    }

    /// Apache's mqadmin as `who` on this broker (`-b`), output checked for success.
    fn admin(&self, who: (&str, &str), args: &[&str]) -> String {
        let addr = self.addr();
        let mut all = args.to_vec();
        all.extend(["-b", &addr]);
        let out = mqadmin_as(self.java, &self.ns.addr(), Some(who), &all);
        assert!(
            out.success(),
            "{}: mqadmin {args:?} failed:\n{out}",
            self.name
        );
        out.stdout.clone()
    }

    fn send(&self, who: Option<(&str, &str)>, topic: &str) -> Vec<Result<String, (i32, String)>> {
        let out = probe(self.java, &self.ns.addr(), who, topic, "g_ok", 1, false);
        let got = outcomes(&out, "SEND");
        assert_eq!(got.len(), 1, "{}: one send expected:\n{out}", self.name);
        got
    }

    fn refused(&self, who: Option<(&str, &str)>, topic: &str) -> (i32, String) {
        match self.send(who, topic).remove(0) {
            Ok(id) => panic!(
                "{}: send to {topic} as {who:?} was accepted ({id})",
                self.name
            ),
            Err(e) => e,
        }
    }
}

fn deny(what: &str, detail: &str) -> (i32, String) {
    (
        NO_PERMISSION,
        format!("User:alice has no permission to access {what} from 127.0.0.1, {detail}"),
    )
}

fn acl_2(t: &Target) {
    for topic in ["ok_t", "ok_denied", "ip_t"] {
        t.admin(ROOT, &["updateTopic", "-t", topic, "-r", "4", "-w", "4"]);
    }
    let created = t.admin(ROOT, &["createUser", "-u", ALICE.0, "-p", ALICE.1]);
    assert!(created.contains("create user to"), "{}: {created}", t.name);
    t.admin(
        ROOT,
        &[
            "createAcl",
            "-s",
            "User:alice",
            "-r",
            "Topic:ok_*,Group:g_ok",
            "-a",
            "Pub,Sub",
            "-d",
            "Allow",
        ],
    );
    t.admin(
        ROOT,
        &[
            "createAcl",
            "-s",
            "User:alice",
            "-r",
            "Topic:ip_t",
            "-a",
            "Pub",
            "-i",
            "10.0.0.0/8",
            "-d",
            "Allow",
        ],
    );
    t.admin(
        ROOT,
        &[
            "createAcl",
            "-s",
            "User:alice",
            "-r",
            "Topic:ok_denied",
            "-a",
            "Pub,Sub",
            "-d",
            "Deny",
        ],
    );

    // Right keys: sent (one per queue, round robin), and queue 0 pulled as an allowed group
    // (FOUND, or NO_NEW_MSG while the broker has not dispatched it yet: not refused).
    let out = probe(t.java, &t.ns.addr(), Some(ALICE), "ok_t", "g_ok", 4, true);
    let sends = outcomes(&out, "SEND");
    assert!(
        sends.len() == 4 && sends.iter().all(Result::is_ok),
        "{}: {out}",
        t.name
    );
    let pulls = outcomes(&out, "PULL");
    assert!(
        matches!(pulls.as_slice(), [Ok(_)]),
        "{}: pull as g_ok: {out}",
        t.name
    );

    let check = |got: (i32, String), want: (i32, String), case: &str| {
        assert_eq!(got, want, "{}: {case}", t.name);
    };
    check(
        t.refused(Some((ALICE.0, "wrong-secret")), "ok_t"),
        (NO_PERMISSION, "check signature failed.".into()),
        "wrong secret",
    );
    check(
        t.refused(Some(("bob", "bob-secret")), "ok_t"),
        (NO_PERMISSION, "User:bob is not found.".into()),
        "unknown user",
    );
    check(
        t.refused(None, "ok_t"),
        (NO_PERMISSION, "username cannot be null.".into()),
        "no credentials",
    );
    check(
        t.refused(Some(ALICE), "other_t"),
        deny("Topic:other_t", "no matched policies."),
        "topic without an entry",
    );
    check(
        t.refused(Some(ALICE), "ok_denied"),
        deny("Topic:ok_denied", "the decision is deny."),
        "denied topic",
    );
    check(
        t.refused(Some(ALICE), "ip_t"),
        deny("Topic:ip_t", "no matched policies."),
        "IP outside the allowed range",
    );
    let out = probe(t.java, &t.ns.addr(), Some(ALICE), "ok_t", "g_bad", 0, true);
    assert_eq!(
        outcomes(&out, "PULL"),
        vec![Err(deny("Group:g_bad", "no matched policies."))],
        "{}: denied group:\n{out}",
        t.name
    );

    // A normal user may not administer.
    let addr = t.addr();
    let out = mqadmin_as(
        t.java,
        &t.ns.addr(),
        Some(ALICE),
        &[
            "createUser",
            "-u",
            "carol",
            "-p",
            "carol-secret",
            "-b",
            &addr,
        ],
    );
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(
        text.contains("has no permission to access Cluster:DefaultCluster"),
        "{}: alice's createUser:\n{out}",
        t.name
    );

    // Apache's mqadmin reads back and changes what it made.
    let user = t.admin(ROOT, &["getUser", "-u", "alice"]);
    let row: Vec<&str> = user
        .lines()
        .find(|l| l.starts_with("alice"))
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        row,
        ["alice", "alice-secret", "Normal", "enable"],
        "{}: getUser:\n{user}",
        t.name
    );
    let acls = t.admin(ROOT, &["listAcl", "-s", "User:alice"]);
    for resource in ["Topic:ok_*", "Group:g_ok", "Topic:ip_t", "Topic:ok_denied"] {
        assert!(
            acls.contains(resource),
            "{}: listAcl lacks {resource}:\n{acls}",
            t.name
        );
    }
    let acl = t.admin(ROOT, &["getAcl", "-s", "User:alice"]);
    assert!(
        acl.contains("10.0.0.0/8") && acl.contains("Deny"),
        "{}: getAcl:\n{acl}",
        t.name
    );
    t.admin(ROOT, &["updateUser", "-u", "alice", "-s", "disable"]);
    check(
        t.refused(Some(ALICE), "ok_t"),
        (NO_PERMISSION, "User:alice is disabled.".into()),
        "disabled user",
    );
    t.admin(ROOT, &["updateUser", "-u", "alice", "-s", "enable"]);
    t.admin(ROOT, &["deleteAcl", "-s", "User:alice", "-r", "Topic:ok_*"]);
    check(
        t.refused(Some(ALICE), "ok_t"),
        deny("Topic:ok_t", "no matched policies."),
        "after deleteAcl",
    );
    t.admin(ROOT, &["deleteUser", "-u", "alice"]);
    check(
        t.refused(Some(ALICE), "ok_t"),
        (NO_PERMISSION, "User:alice is not found.".into()),
        "after deleteUser",
    );
}

/// Our `mqadmin`'s user and ACL commands on sluice: what they make, Apache's reads back, and
/// both print it the same.
fn our_mqadmin(t: &Target) {
    let addr = t.addr();
    let ns = t.ns.addr();
    let ours = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["-b", &addr, "--accessKey", ROOT.0, "--secretKey", ROOT.1]);
        let out = mqadmin(&ns, &all);
        assert!(
            out.status.success(),
            "our mqadmin {args:?}:\n{}{}",
            out.stdout,
            out.stderr
        );
        out.stdout
    };
    assert_eq!(
        ours(&["createUser", "-u", "dave", "-p", "dave-secret"]).trim(),
        format!("create user to {addr} success.")
    );
    ours(&[
        "createAcl",
        "-s",
        "User:dave",
        "-r",
        "Topic:d_*,Group:g_d",
        "-a",
        "Pub,Sub",
        "-i",
        "127.0.0.1",
        "-d",
        "Allow",
    ]);
    ours(&[
        "updateAcl",
        "-s",
        "User:dave",
        "-r",
        "Topic:d_x",
        "-a",
        "All",
        "-d",
        "Deny",
    ]);
    for read in [
        vec!["getUser", "-u", "dave"],
        vec!["listUser", "-f", "dav"],
        vec!["getAcl", "-s", "User:dave"],
        vec!["listAcl", "-s", "User:dave"],
    ] {
        assert_eq!(
            ours(&read),
            t.admin(ROOT, &read),
            "{read:?} prints differently"
        );
    }
    let out = probe(
        t.java,
        &ns,
        Some(("dave", "dave-secret")),
        "d_1",
        "g_d",
        1,
        false,
    );
    assert!(
        matches!(outcomes(&out, "SEND").as_slice(), [Ok(_)]),
        "{out}"
    );
    ours(&["deleteAcl", "-s", "User:dave", "-r", "Topic:d_*"]);
    ours(&["deleteUser", "-u", "dave"]);
    assert_eq!(t.admin(ROOT, &["getUser", "-u", "dave"]).trim(), "");
}

#[test]
fn acl_2_sluice() {
    integration_tests::require_tools!(Java, Maven);
    let t = Target::sluice(&acl_2_settings());
    acl_2(&t);
    our_mqadmin(&t);
}

#[test]
fn acl_2_apache() {
    integration_tests::require_tools!(Java, Maven);
    acl_2(&Target::apache(&acl_2_settings()));
}

const PLAIN_ACL: &str = "
globalWhiteRemoteAddresses:
  - 10.10.103.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
    groupPerms:
      - groupA=DENY
      - groupB=SUB

  - accessKey: rocketmq2
    secretKey: 87654321
    whiteRemoteAddress: 127.0.0.1
    admin: true
";

fn plain_remark(message: &str, at: &str) -> String {
    format!(
        "org.apache.rocketmq.acl.common.AclException: {message}, org.apache.rocketmq.acl.plain.PlainPermissionManager.{at}"
    )
}

/// 4.9.8's client with 4.9's `aclEnable=true` and `plain_acl.yml`: the broker at `addr` serves
/// the file at `file` (changed by the test to check the reload). `shift`: how far the broker's
/// `PlainPermissionManager.java` lines are from 4.9.8's (the frames in the remarks).
fn plain_acl(
    name: &str,
    java: &JavaTools,
    ns: &str,
    addr: &str,
    file: &std::path::Path,
    shift: i32,
) {
    let at =
        |method: &str, line: i32| format!("{method}(PlainPermissionManager.java:{})", line + shift);
    // rocketmq2 is admin and trusted from 127.0.0.1: no signature needed.
    for topic in ["topicA", "topicB", "topicC"] {
        let out = mqadmin_as(
            java,
            ns,
            Some(("rocketmq2", "any")),
            &["updateTopic", "-b", addr, "-t", topic],
        );
        assert!(out.success(), "{name}: updateTopic {topic}:\n{out}");
    }
    let me = Some(("RocketMQ", "12345678"));
    let send = |who, topic: &str| {
        let out = probe(java, ns, who, topic, "groupB", 1, false);
        outcomes(&out, "SEND")
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("{name}: no send line:\n{out}"))
    };
    let refused = |who, topic: &str| send(who, topic).expect_err("refused");
    if let Err((code, remark)) = send(me, "topicB") {
        panic!("{name}: allowed send refused: {code} {remark}");
    }
    let cases = [
        (
            Some(("RocketMQ", "wrong-secret")),
            "topicB",
            "Check signature failed for accessKey=RocketMQ",
            at("validate", 684),
        ),
        (
            Some(("nobody12", "12345678")),
            "topicB",
            "No acl config for nobody12",
            at("validate", 668),
        ),
        (
            None,
            "topicB",
            "No accessKey is configured",
            at("validate", 664),
        ),
        (
            me,
            "topicA",
            "No default permission for topic:topicA",
            at("checkPerm", 611),
        ),
        (
            me,
            "topicC",
            "No default permission for topic:topicC",
            at("checkPerm", 606),
        ),
    ];
    for (who, topic, message, frame) in cases {
        assert_eq!(
            refused(who, topic),
            (SYSTEM_ERROR, plain_remark(message, &frame)),
            "{name}: {message}"
        );
    }
    let pull = |group: &str| {
        let out = probe(java, ns, me, "topicB", group, 0, true);
        outcomes(&out, "PULL")
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("{name}: no pull line:\n{out}"))
    };
    assert!(pull("groupB").is_ok(), "{name}: allowed pull");
    assert_eq!(
        pull("groupA").expect_err("denied group"),
        (
            SYSTEM_ERROR,
            plain_remark(
                "No default permission for group:groupA",
                &at("checkPerm", 611)
            )
        ),
        "{name}: denied group"
    );
    // The white address skips the signature.
    assert!(
        send(Some(("rocketmq2", "not-the-secret")), "topicC").is_ok(),
        "{name}: white address"
    );

    // Hot reload: topicC opened to RocketMQ in the file is allowed without a restart.
    fs::write(
        file,
        PLAIN_ACL.replace(
            "      - topicB=PUB|SUB",
            "      - topicB=PUB|SUB\n      - topicC=PUB",
        ),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while send(me, "topicC").is_err() {
        assert!(
            Instant::now() < deadline,
            "{name}: the changed plain_acl.yml was not reloaded"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn plain_acl_sluice() {
    integration_tests::require_tools!(Java, Maven);
    let home = TestDir::new("plain-acl-home");
    let file = home.path().join("conf/plain_acl.yml");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, PLAIN_ACL).unwrap();
    let ns = NamesrvProcess::start();
    let home_s = home.path().display().to_string();
    let broker = BrokerProcess::start_with(
        &ns.addr(),
        &[("aclEnable", "true"), ("rocketmqHome", &home_s)],
    );
    plain_acl(
        "sluice",
        JavaTools::get(V4),
        &ns.addr(),
        &broker.addr(),
        &file,
        0,
    );
}

/// The same against Apache's broker: 4.9.8's is not on Maven Central, 4.9.7's is; its
/// `PlainPermissionManager.java` is 4.9.8's less one import line, so its frames are one line
/// up and everything else is the same.
#[test]
fn plain_acl_apache_4_9_7() {
    integration_tests::require_tools!(Java, Maven);
    let ns = NamesrvProcess::start();
    let broker = ApacheBroker::start_in_home(
        "4.9.7",
        &ns.addr(),
        "ASYNC_MASTER",
        0,
        &[("aclEnable", "true")],
        &[("conf/plain_acl.yml", PLAIN_ACL)],
    );
    let file = broker
        .process
        .dir()
        .join("rocketmq-home/conf/plain_acl.yml");
    plain_acl(
        "Apache 4.9.7",
        JavaTools::get(V4),
        &ns.addr(),
        &broker.addr(),
        &file,
        -1,
    );
}

/// A sluice master/slave pair and name server, all with ACL 2.0 on: the brokers register
/// (REGISTER_BROKER needs Cluster:Update) and the slave copies its master's topics
/// (GET_ALL_TOPIC_CONFIG) signed with `innerClientAuthenticationCredentials`; the HA
/// transport replicates the messages; the Java client's route lookups on our name server are
/// signed too.
#[test]
fn inner_clients_keep_working_with_auth_on() {
    integration_tests::require_tools!(Java, Maven);
    let java = JavaTools::get(V5);
    let settings = acl_2_settings();
    let mut ns_settings: Vec<(&str, &str)> =
        settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // The harness finds brokers in GET_BROKER_CLUSTER_INFO, unsigned.
    ns_settings.push(("authenticationWhitelist", "106"));
    let ns = NamesrvProcess::start_with(&ns_settings);
    let pairs: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let master = BrokerProcess::start_master("master", &ns.addr(), "ASYNC_MASTER", &pairs);
    let slave = BrokerProcess::start_as("slave", &ns.addr(), "SLAVE", 1, &pairs);
    let addr = master.addr();
    mqadmin_as(
        java,
        &ns.addr(),
        Some(ROOT),
        &[
            "updateTopic",
            "-b",
            &addr,
            "-t",
            "pair_t",
            "-r",
            "2",
            "-w",
            "2",
        ],
    )
    .assert_ok();
    let has_topic = |broker: &BrokerProcess| {
        let request = remoting::RemotingCommand::request(remoting::RequestCode::GetAllTopicConfig);
        signed_request(&broker.addr(), ROOT, request).is_ok_and(|r| {
            r.code() == 0 && String::from_utf8_lossy(&r.body.to_bytes()).contains("pair_t")
        })
    };
    assert!(has_topic(&master));
    assert!(
        wait_until(Duration::from_secs(60), || has_topic(&slave)),
        "the slave did not copy its master's topics:\n{}",
        slave.process_ref().log_tails()
    );
    // Signed sends through our name server (route lookups signed) reach the master, and HA
    // brings them to the slave.
    let out = probe(java, &ns.addr(), Some(ROOT), "pair_t", "g_pair", 4, false);
    assert!(outcomes(&out, "SEND").iter().all(Result::is_ok), "{out}");
    let max = |broker: &BrokerProcess, queue: i32| {
        let header = remoting::protocol::broker::GetMaxOffsetRequestHeader {
            topic: "pair_t".into(),
            queue_id: queue,
            committed: None,
        };
        let request =
            remoting::RemotingCommand::request_with(remoting::RequestCode::GetMaxOffset, &header);
        signed_request(&broker.addr(), ROOT, request)
            .ok()
            .and_then(|r| r.ext("offset").and_then(|o| o.parse::<i64>().ok()))
            .unwrap_or(-1)
    };
    let total = |b: &BrokerProcess| max(b, 0) + max(b, 1);
    assert_eq!(total(&master), 4);
    assert!(
        wait_until(Duration::from_secs(30), || total(&slave) == 4),
        "the slave did not replicate the messages"
    );
    // Unsigned, the name server refuses the route lookup.
    let out = probe(java, &ns.addr(), None, "pair_t", "g_pair", 1, false);
    assert!(
        matches!(outcomes(&out, "SEND").as_slice(), [Err(_)]),
        "{out}"
    );
}
