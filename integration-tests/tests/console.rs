//! The web console (`mqadmin console`) in a real browser: headless Chromium (Debian's
//! package) driven by playwright-core (npm) through `integration-tests/console/
//! console_check.mjs`, against a live SYNC_MASTER/SLAVE pair loaded by the official Java
//! client (4.9.8).
//!
//! - `console_pages_show_what_mqadmin_shows`: every page loads; the cluster page lists the
//!   master and its caught-up slave; a topic's sum of max offsets equals `mqadmin
//!   topicStatus`'s, a group's lag equals `mqadmin consumerProgress`'s `Diff Total`; a topic
//!   created from the console's form exists on the broker; a message looked up by id shows
//!   its body and properties, and is given again to a consumer of another online group
//!   (`CR_SUCCESS`, the consumer receives it a second time); one looked up by key is found;
//!   a time range lists every message stored in it. Screenshots of every page
//!   are kept in `target/console-screenshots/` (`$SLUICE_CONSOLE_SHOTS` overrides).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::path::PathBuf;
use std::time::Duration;

use integration_tests::harness::build::target_dir;
use integration_tests::harness::child::run_build;
use integration_tests::harness::{
    ChildProcess, HaPair, ProcessSpec, Readiness, TestDir, binary, unique_name, wait_until,
    workspace_root,
};
use integration_tests::java::{JavaTools, V4};
use integration_tests::ports;
use serde_json::Value;

const SENT: usize = 20;
const LEFT: usize = 7;

fn screenshots_dir() -> PathBuf {
    std::env::var_os("SLUICE_CONSOLE_SHOTS")
        .map_or_else(|| target_dir().join("console-screenshots"), PathBuf::from)
}

/// playwright-core installed next to the check (`$SLUICE_NODE_CACHE`, else
/// `target/console-it`); the check's path.
fn build_check() -> PathBuf {
    let out = std::env::var_os("SLUICE_NODE_CACHE")
        .map_or_else(|| target_dir().join("console-it"), PathBuf::from);
    let script = workspace_root().join("integration-tests/console/build.sh");
    let spec = ProcessSpec::program("build", "bash").arg(&script).arg(&out);
    run_build("console-build", spec, Duration::from_secs(300)).unwrap();
    out.join("console_check.mjs")
}

/// The number after `label` in mqadmin's output.
fn figure_after(text: &str, label: &str) -> i64 {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no '{label}' in:\n{text}"))
}

#[test]
fn console_pages_show_what_mqadmin_shows() {
    integration_tests::require_tools!(Java, Maven, Node, Chromium);
    let topic = unique_name("Console");
    let pair = HaPair::start("SYNC_MASTER", &[], &[(&topic, 4)]);
    let ns = pair.namesrv();
    let java = JavaTools::get(V4);

    // A group that consumed SENT messages, then LEFT more it has not.
    let from_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        - 1000;
    let sent = java.produce(&ns, &topic, SENT, &["--keys", "--body-prefix", "console"]);
    let group = unique_name("console_cg");
    let out = java.run(
        "sluice.it.PushConsumer",
        &[
            "--namesrv",
            &ns,
            "--topic",
            &topic,
            "--group",
            &group,
            "--count",
            &SENT.to_string(),
            "--from",
            "first",
            "--heartbeat-ms",
            "1000",
        ],
        Duration::from_secs(90),
    );
    out.assert_ok();
    java.produce(&ns, &topic, LEFT, &["--body-prefix", "later"]);
    assert!(
        wait_until(Duration::from_secs(20), || {
            let o = pair.master().mqadmin(&["consumerProgress", "-g", &group]);
            o.stdout.contains(&format!("Diff Total: {LEFT}"))
        }),
        "the group's lag did not settle at {LEFT}"
    );
    let progress = pair.master().mqadmin(&["consumerProgress", "-g", &group]);
    let diff_total = figure_after(&progress.stdout, "Diff Total:");
    let status = pair.master().mqadmin(&["topicStatus", "-t", &topic]);
    // topicStatus rows: "#Broker Name #QID #Min Offset #Max Offset #Last Updated".
    let max_sum: i64 = status
        .stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(3)?.parse::<i64>().ok())
        .sum();
    assert_eq!(max_sum, (SENT + LEFT) as i64, "{}", status.stdout);

    // A second group online, to give a message to again from the console.
    let resend_group = unique_name("console_resend");
    let mut online = java.spawn(
        "sluice.it.PushConsumer",
        &[
            "--namesrv",
            &ns,
            "--topic",
            &topic,
            "--group",
            &resend_group,
            "--count",
            "100000",
            "--from",
            "first",
            "--heartbeat-ms",
            "1000",
            "--wait-ms",
            "150000",
        ],
    );
    assert!(
        wait_until(Duration::from_secs(30), || {
            let o = pair
                .master()
                .mqadmin(&["consumerProgress", "-g", &resend_group]);
            o.stdout.contains("Diff Total: 0")
        }),
        "the second group did not catch up"
    );

    // The console, on loopback.
    let mut port = ports::reserve();
    port.release_listener();
    let addr = port.addr();
    let console = ChildProcess::start(
        ProcessSpec::program("mqadmin-console", binary("tools", "mqadmin"))
            .args(["console", "-n", &ns, "--listen", &addr.to_string()])
            .readiness(Readiness::Connect(addr)),
        TestDir::new("console"),
        vec![port],
    );

    let check = build_check();
    let shots = screenshots_dir();
    std::fs::create_dir_all(&shots).unwrap();
    let new_topic = unique_name("FromConsole");
    let first = &sent[0];
    let key = sent[3].keys.clone().unwrap();
    let dir = TestDir::new("console-check");
    let exited = ProcessSpec::program("console-check", "node")
        .arg(&check)
        .args([
            "--url",
            &format!("http://{addr}"),
            "--out",
            &shots.display().to_string(),
            "--cluster",
            "DefaultCluster",
            "--topic",
            &topic,
            "--group",
            &group,
            "--msg-id",
            &first.msg_id,
            "--key",
            &key,
            "--new-topic",
            &new_topic,
            "--from-ms",
            &from_ms.to_string(),
            "--resend-group",
            &resend_group,
        ])
        .run_to_exit(dir.path(), Duration::from_secs(240));
    let all = format!("{}\n{}", exited.stdout, exited.stderr);
    assert!(
        exited.status.is_some_and(|s| s.success()),
        "the browser check failed:\n{all}\nconsole log:\n{}",
        console.stdout()
    );
    let pages: Vec<Value> = exited
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let page = |name: &str| -> &Value {
        pages
            .iter()
            .find(|p| p["page"] == name)
            .unwrap_or_else(|| panic!("no {name} page in:\n{all}"))
    };

    let cluster = page("cluster");
    let roles: Vec<&str> = cluster["roles"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(roles, ["MASTER", "SLAVE"], "{cluster}");
    assert_eq!(cluster["ha"][1], "caught up", "{cluster}");
    assert!(cluster["chartLines"].as_i64().unwrap() >= 1, "{cluster}");

    let topics = page("topics");
    assert_eq!(topics["created"], true, "{topics}");
    assert!(
        wait_until(Duration::from_secs(10), || pair
            .master()
            .has_topic(&new_topic)),
        "the topic created in the console is not on the broker"
    );
    // The list's figure for the loaded topic is topicStatus's sum (nothing was sent since).
    assert_eq!(topics["messages"], serde_json::json!([max_sum]), "{topics}");
    assert_eq!(topics["inRates"], serde_json::json!(["0"]), "{topics}");

    let t = page("topic");
    assert_eq!(t["totalMaxOffset"].as_i64(), Some(max_sum), "{t}");
    assert_eq!(t["queues"].as_i64(), Some(4), "{t}");
    // In, and out to the group that consumed it: both charted.
    assert!(t["chartLines"].as_i64().unwrap() >= 2, "{t}");
    assert_eq!(t["outRate"], "0", "{t}");

    let g = page("group");
    assert_eq!(g["diffTotal"].as_i64(), Some(diff_total), "{g}");

    let m = page("message");
    assert_eq!(m["body"], format!("console-{}", first.index), "{m}");
    assert_eq!(m["properties"]["UNIQ_KEY"], first.msg_id.as_str(), "{m}");
    let by_key = page("by-key");
    assert_eq!(by_key["body"], "console-3", "{by_key}");

    let resend = page("resend");
    assert!(
        resend["output"]
            .as_str()
            .unwrap_or_default()
            .contains("consumeResult=CR_SUCCESS"),
        "{resend}"
    );
    let receipts = || {
        online
            .stdout_lines()
            .iter()
            // A message given directly carries its offset id in the 4.9 client's
            // `getMsgId()`: count by body.
            .filter(|l| l.starts_with("RECV ") && l.ends_with(&format!(" console-{}", first.index)))
            .count()
    };
    let twice = wait_until(Duration::from_secs(15), || receipts() >= 2);
    assert!(
        twice,
        "the resent message was received {} time(s)",
        receipts()
    );
    online.kill();
    let by_time = page("by-time");
    assert_eq!(
        by_time["listed"].as_u64(),
        Some((SENT + LEFT) as u64),
        "{by_time}"
    );

    for shot in ["cluster", "topics", "topic", "group", "message", "messages"] {
        let p = shots.join(format!("{shot}.png"));
        assert!(
            p.metadata().is_ok_and(|m| m.len() > 10_000),
            "{} missing or empty",
            p.display()
        );
    }
}

/// With authentication on (ACL 2.0), the console reads with the credentials it was started
/// with, and a changing action runs only with the operator's own: none or a wrong secret and
/// the broker refuses it (the console says so and nothing changes), the right ones and it
/// is done.
#[test]
fn console_actions_need_credentials_when_the_cluster_checks() {
    use integration_tests::acl::{ROOT, acl_2_settings};
    use integration_tests::exposition::{http_get, http_post_json};
    use integration_tests::harness::{BrokerProcess, NamesrvProcess};

    let ns = NamesrvProcess::start();
    let settings = acl_2_settings();
    let refs: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let _broker = BrokerProcess::start_with(&ns.addr(), &refs);
    let mut port = ports::reserve();
    port.release_listener();
    let addr = port.addr();
    let _console = ChildProcess::start(
        ProcessSpec::program("mqadmin-console", binary("tools", "mqadmin"))
            .args([
                "console",
                "-n",
                &ns.addr(),
                "--listen",
                &addr.to_string(),
                "--accessKey",
                ROOT.0,
                "--secretKey",
                ROOT.1,
            ])
            .readiness(Readiness::Connect(addr)),
        TestDir::new("console-auth"),
        vec![port],
    );
    let console = addr.to_string();
    let (status, body) = http_get(&console, "/api/cluster").unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"role\":\"MASTER\""), "{body}");

    let topic = unique_name("ConsoleAuth");
    let create = |creds: &str| {
        http_post_json(
            &console,
            "/api/topic/update",
            &format!(r#"{{"topic":"{topic}","cluster":"DefaultCluster","readQueueNums":2,"writeQueueNums":2{creds}}}"#),
        )
        .unwrap()
    };
    for (what, creds) in [
        ("no credentials", String::new()),
        (
            "a wrong secret",
            format!(r#","accessKey":"{}","secretKey":"nope""#, ROOT.0),
        ),
    ] {
        let (status, body) = create(&creds);
        assert_ne!(status, 200, "{what}: {body}");
        assert!(body.contains("\"ok\":false"), "{what}: {body}");
        let (status, body) = http_get(&console, &format!("/api/topic?topic={topic}")).unwrap();
        assert_eq!(status, 404, "{what}: the topic was created: {body}");
    }
    let (status, body) = create(&format!(
        r#","accessKey":"{}","secretKey":"{}""#,
        ROOT.0, ROOT.1
    ));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"ok\":true"), "{body}");
    // Read back through the console (the broker answers signed requests only).
    assert!(
        wait_until(Duration::from_secs(10), || {
            http_get(&console, &format!("/api/topic?topic={topic}"))
                .is_ok_and(|(s, b)| s == 200 && b.matches("\"queueId\"").count() == 2)
        }),
        "the topic was not created with the right credentials"
    );
}
