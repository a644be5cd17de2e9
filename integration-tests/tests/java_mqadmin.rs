//! The official Java `mqadmin` (rocketmq-tools 4.9.8 and 5.3.3) against our name server and
//! broker, for every command issue 5 lists: topics, routes, status, cluster, broker config,
//! subscription groups, consumer progress, message queries, offset reset, send and consume.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use integration_tests::harness::{ChildOutput, TestCluster, unique_name};
use integration_tests::java::{JavaTools, V4, VERSIONS};

fn ok(out: ChildOutput, what: &str) -> String {
    out.assert_ok();
    assert!(
        !out.stderr.contains("Exception"),
        "{what}: stderr has an exception:\n{}",
        out.stderr
    );
    out.stdout
}

/// The value after `label` in mqadmin's `label: value` views.
fn field(view: &str, label: &str) -> Option<String> {
    view.lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .map(|v| v.trim_start_matches([' ', ':']).trim().to_owned())
}

#[test]
fn official_mqadmin_commands_against_sluice() {
    integration_tests::require_tools!(Java, Maven);
    let cluster = TestCluster::start();
    let ns = cluster.namesrv().to_owned();
    let broker = cluster.broker_addr().unwrap().to_owned();
    for version in VERSIONS {
        let java = JavaTools::get(version);
        let run = |args: &[&str]| java.mqadmin(&ns, args);
        let topic = unique_name(&format!("MqadminTopic_{}", version.replace('.', "_")));
        let group = unique_name("mqadmin_group");

        let created = ok(
            run(&[
                "updateTopic",
                "-c",
                "DefaultCluster",
                "-t",
                &topic,
                "-r",
                "4",
                "-w",
                "4",
            ]),
            "updateTopic",
        );
        assert!(created.contains("success"), "{version}: {created}");
        let listed = ok(run(&["topicList"]), "topicList");
        assert!(
            listed.lines().any(|l| l.trim() == topic),
            "{version}: {listed}"
        );
        let route = ok(run(&["topicRoute", "-t", &topic]), "topicRoute");
        assert!(
            route.contains(&broker) && route.contains("\"writeQueueNums\":4"),
            "{version}: {route}"
        );

        let sent = ok(
            run(&[
                "sendMessage",
                "-t",
                &topic,
                "-p",
                "hello-mqadmin",
                "-k",
                "key-1",
                "-c",
                "TagA",
            ]),
            "sendMessage",
        );
        assert!(sent.contains("SEND_OK"), "{version}: {sent}");
        let status = ok(run(&["topicStatus", "-t", &topic]), "topicStatus");
        assert!(status.lines().count() >= 5, "{version}: {status}");

        let clusters = ok(run(&["clusterList"]), "clusterList");
        assert!(
            clusters.contains(&broker) && clusters.contains("V4_9_8"),
            "{version}: {clusters}"
        );
        let bstatus = ok(run(&["brokerStatus", "-b", &broker]), "brokerStatus");
        assert!(
            bstatus.contains("msgPutTotalTodayNow"),
            "{version}: {bstatus}"
        );
        let config = ok(run(&["getBrokerConfig", "-b", &broker]), "getBrokerConfig");
        assert!(
            config.contains("brokerName") && config.contains("broker-a"),
            "{version}: {config}"
        );
        ok(
            run(&[
                "updateBrokerConfig",
                "-b",
                &broker,
                "-k",
                "defaultTopicQueueNums",
                "-v",
                "8",
            ]),
            "updateBrokerConfig",
        );
        ok(
            run(&["updateSubGroup", "-b", &broker, "-g", &group, "-r", "3"]),
            "updateSubGroup",
        );

        // Message queries: by key, by offset (which shows the offset id), by that id.
        let by_key = ok(
            run(&["queryMsgByKey", "-t", &topic, "-k", "key-1"]),
            "queryMsgByKey",
        );
        assert!(
            by_key.lines().count() >= 2,
            "{version}: no message by key:\n{by_key}"
        );
        let queue = sent
            .lines()
            .find(|l| l.contains("SEND_OK"))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or_else(|| panic!("{version}: no queue in {sent}"))
            .to_owned();
        let by_offset = ok(
            run(&[
                "queryMsgByOffset",
                "-t",
                &topic,
                "-b",
                "broker-a",
                "-i",
                &queue,
                "-o",
                "0",
            ]),
            "queryMsgByOffset",
        );
        let offset_id =
            field(&by_offset, "OffsetID:").unwrap_or_else(|| panic!("{version}: {by_offset}"));
        // 5.x's queryMsgById requires -t; 4.9.8's has no -t.
        let by_id = if version.starts_with('4') {
            ok(run(&["queryMsgById", "-i", &offset_id]), "queryMsgById")
        } else {
            ok(
                run(&["queryMsgById", "-i", &offset_id, "-t", &topic]),
                "queryMsgById",
            )
        };
        assert!(
            by_id.contains(&topic) && by_id.contains("key-1"),
            "{version}: {by_id}"
        );

        // Consume it, then the group's progress and a reset back to the start.
        let consumed = ok(
            java.mqadmin_with_timeout(
                &ns,
                &[
                    "consumeMessage",
                    "-t",
                    &topic,
                    "-g",
                    &group,
                    "-b",
                    "broker-a",
                    "-i",
                    &queue,
                    "-o",
                    "0",
                    "-c",
                    "1",
                ],
                Duration::from_secs(90),
            ),
            "consumeMessage",
        );
        assert!(
            consumed.contains("hello-mqadmin")
                || consumed.contains("MSGID")
                || consumed.contains("msgId"),
            "{version}: {consumed}"
        );
        // A push consumer of the group (its heartbeat creates %RETRY%group, which
        // consumerProgress looks up), then the group's progress and a reset (the group is
        // offline by then: the tools fall back to updating offsets themselves).
        let push = java.run(
            "sluice.it.PushConsumer",
            &[
                "--namesrv",
                &ns,
                "--topic",
                &topic,
                "--group",
                &group,
                "--count",
                "1",
                "--from",
                "first",
                "--wait-ms",
                "45000",
            ],
            Duration::from_secs(90),
        );
        push.assert_ok();
        let progress = ok(run(&["consumerProgress", "-g", &group]), "consumerProgress");
        assert!(progress.contains(&topic), "{version}: {progress}");
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis();
        let yesterday = (now - 86_400_000).to_string();
        let reset = run(&[
            "resetOffsetByTime",
            "-g",
            &group,
            "-t",
            &topic,
            "-s",
            &yesterday,
        ]);
        assert!(reset.success(), "{version}: {reset}");

        let deleted = ok(
            run(&["deleteTopic", "-t", &topic, "-c", "DefaultCluster"]),
            "deleteTopic",
        );
        assert!(deleted.contains("success"), "{version}: {deleted}");
        let gone = run(&["topicRoute", "-t", &topic]);
        assert!(
            !gone.success() || gone.stderr.contains("No topic route info"),
            "{version}: {gone}"
        );
    }
}

/// Needs Maven Central (or a warm ~/.m2): builds the 4.x programs and runs the official mqadmin.
#[test]
fn mqadmin_lists_its_commands() {
    integration_tests::require_tools!(Java, Maven);
    let java = JavaTools::get(V4);
    let out = java.mqadmin_raw(&[]);
    out.assert_ok();
    assert!(
        out.stdout
            .starts_with("The most commonly used mqadmin commands are:"),
        "{out}"
    );
    assert!(
        out.lines_starting_with("   clusterList ").len() == 1,
        "{out}"
    );

    let out = java.mqadmin_raw(&["noSuchCommand"]);
    out.assert_failed();
    assert_eq!(
        out.stdout.trim(),
        "The sub command noSuchCommand not exist."
    );
}
