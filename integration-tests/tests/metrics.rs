//! The Prometheus endpoints (`metricsExporterType=PROM`) of a real name server and a real
//! SYNC_MASTER/SLAVE pair, loaded by the official Java client (4.9.8), scraped and parsed:
//! the counters must match what the test sent and consumed.
//!
//! - `pair_exports_what_it_served`: 100 messages sent and consumed by a push consumer
//!   (`rocketmq_messages_in_total`, `rocketmq_throughput_in_total`, `rocketmq_message_size`,
//!   `rocketmq_messages_out_total`, the group's connection and its lag falling to 0), 9
//!   transactional ones (6 commits, 3 rollbacks, no half message left), 5 dead letters of a
//!   group that fails every delivery (`rocketmq_send_to_dlq_messages_total`), the request
//!   latencies (`rocketmq_rpc_latency_milliseconds`), storage and replication figures (the
//!   slave's lag falling to 0 bytes, one HA ack timed per synchronous send), the common labels
//!   (`cluster`, `node_type`, `node_id`, and `metricsLabel`'s) on every sample, and the name
//!   server's view (two live brokers, their registrations timed); timers pending an hour
//!   (`rocketmq_timing_messages`, `rocketmq_timer_message_snapshot`), the revive queues'
//!   gauges, the topic creations timed; a POP consumer's checkpoints and acks counted into the
//!   revive log (`rocketmq_pop_revive_in_message_total`) and its messages counted out; the
//!   pulls' page-cache hits (`sluice_pull_page_cache_messages_total`); and every metric the
//!   Grafana dashboard (deploy/grafana) draws exported by the cluster.
//!
//! A broker refusing an exporter it cannot serve is in `startup_failures.rs`.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::BTreeSet;
use std::time::Duration;

use integration_tests::exposition::{Exposition, http_get, scrape};
use integration_tests::harness::{
    BrokerProcess, HA_BROKER_NAME, NamesrvProcess, unique_name, wait_until, workspace_root,
};
use integration_tests::java::{JavaTools, Recv, V4, V5};
use integration_tests::ports;

const MESSAGES: usize = 100;
const TX_MESSAGES: usize = 9;
const DEAD_LETTERS: usize = 5;

fn metrics_settings(port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("metricsExporterType", "PROM".to_owned()),
        ("metricsPromExporterHost", "127.0.0.1".to_owned()),
        ("metricsPromExporterPort", port.to_string()),
    ]
}

fn as_refs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// Scrapes until `check` passes on a scrape (or 30 s pass); returns the last scrape.
#[track_caller]
fn scrape_until(addr: &str, what: &str, mut check: impl FnMut(&Exposition) -> bool) -> Exposition {
    let mut last = None;
    let ok = wait_until(Duration::from_secs(30), || match scrape(addr) {
        Ok(e) => {
            let pass = check(&e);
            last = Some(e);
            pass
        }
        Err(_) => false,
    });
    let last = last.unwrap_or_default();
    assert!(
        ok,
        "{what} never held on {addr}; last scrape:\n{:#?}",
        last.samples
    );
    last
}

#[test]
fn pair_exports_what_it_served() {
    let mut ports: Vec<_> = (0..3).map(|_| ports::reserve()).collect();
    for p in &mut ports {
        p.release_listener();
    }
    let (ns_m, a_m, b_m) = (ports[0].addr(), ports[1].addr(), ports[2].addr());
    let ns = NamesrvProcess::start_with(&as_refs(&metrics_settings(ns_m.port())));
    let mut a_settings = metrics_settings(a_m.port());
    a_settings.push(("metricsLabel", "env:it,team:sluice".to_owned()));
    a_settings.push(("transactionCheckInterval", "2000".to_owned()));
    a_settings.push(("transactionTimeOut", "2000".to_owned()));
    // Checkpoints and acks written to the revive log, not merged in memory (RocketMQ's
    // default), so that the revive counters see them.
    a_settings.push(("enablePopBufferMerge", "false".to_owned()));
    let a = BrokerProcess::start_master("a", &ns.addr(), "SYNC_MASTER", &as_refs(&a_settings));
    let topic = unique_name("Metrics");
    let tx_topic = unique_name("MetricsTx");
    let dlq_topic = unique_name("MetricsDlq");
    for t in [&topic, &tx_topic, &dlq_topic] {
        a.create_topic(t, 4);
    }
    let b = BrokerProcess::start_as(
        "b",
        &ns.addr(),
        "SLAVE",
        1,
        &as_refs(&metrics_settings(b_m.port())),
    );
    b.wait_following(&a, Duration::from_secs(20)).unwrap();
    let java = JavaTools::get(V4);
    let (a_m, b_m, ns_m) = (a_m.to_string(), b_m.to_string(), ns_m.to_string());

    let (status, body) = http_get(&a_m, "/-/healthy").unwrap();
    assert_eq!((status, body.trim()), (200, "Exporter is Healthy."));

    // Sends: every one SEND_OK (stored on master and slave), counted once with its bytes.
    let sent = java.produce(&ns.addr(), &topic, MESSAGES, &["--tag", "TagA"]);
    assert!(sent.iter().all(|s| s.status == "SEND_OK"));
    let e = scrape(&a_m).unwrap();
    let labels = [
        ("topic", topic.as_str()),
        ("message_type", "normal"),
        ("is_system", "false"),
    ];
    assert_eq!(
        e.sum("rocketmq_messages_in_total", &labels),
        Some(MESSAGES as f64),
        "{:#?}",
        e.samples
    );
    let bytes = e.sum("rocketmq_throughput_in_total", &labels).unwrap();
    assert!(bytes > (MESSAGES * 100) as f64, "stored bytes {bytes}");
    assert_eq!(
        e.sum("rocketmq_message_size_count", &labels),
        Some(MESSAGES as f64)
    );
    assert_eq!(e.sum("rocketmq_message_size_sum", &labels), Some(bytes));
    let le_1k = e.sum(
        "rocketmq_message_size_bucket",
        &[("topic", topic.as_str()), ("le", "1024.0")],
    );
    assert_eq!(
        le_1k,
        Some(MESSAGES as f64),
        "the Java producer's messages are under 1 KiB"
    );
    let sends = e
        .find(
            "rocketmq_rpc_latency_milliseconds_count",
            &[("response_code", "success"), ("protocol_type", "remoting")],
        )
        .into_iter()
        .filter(|s| {
            s.label("request_code")
                .is_some_and(|c| c.starts_with("send_message"))
        })
        .map(|s| s.value)
        .sum::<f64>();
    assert!(sends >= MESSAGES as f64, "send latencies counted: {sends}");
    let acks = e
        .sum("sluice_ha_ack_latency_microseconds_count", &[])
        .unwrap_or(0.0);
    assert!(acks >= MESSAGES as f64, "HA acks timed: {acks}");
    // Every sample carries the broker's identity and the configured labels.
    for s in &e.samples {
        assert_eq!(s.label("node_type"), Some("broker"), "{s:?}");
        assert_eq!(s.label("node_id"), Some(HA_BROKER_NAME), "{s:?}");
        assert!(s.label("cluster").is_some(), "{s:?}");
        assert_eq!(
            (s.label("env"), s.label("team")),
            (Some("it"), Some("sluice")),
            "{s:?}"
        );
    }
    assert!(
        e.sum("rocketmq_storage_size_bytes", &[("storage_type", "local")])
            .unwrap()
            > 0.0
    );
    assert!(e.sum("rocketmq_storage_flush_behind_bytes", &[]).is_some());
    assert!(
        e.sum("rocketmq_storage_dispatch_behind_bytes", &[])
            .is_some()
    );
    assert!(
        e.sum("rocketmq_storage_message_reserve_time_milliseconds", &[])
            .is_some()
    );
    assert_eq!(e.sum("rocketmq_broker_permission", &[]), Some(6.0));
    assert!(e.sum("rocketmq_topic_number", &[]).unwrap() >= 3.0);
    assert_eq!(
        e.types.get("rocketmq_messages_in").map(String::as_str),
        Some("counter")
    );
    assert_eq!(
        e.types
            .get("rocketmq_rpc_latency_milliseconds")
            .map(String::as_str),
        Some("histogram")
    );
    scrape_until(&a_m, "the slave caught up", |e| {
        e.sum("sluice_ha_slaves", &[]) == Some(1.0)
            && e.sum("sluice_ha_slave_lag_bytes", &[]) == Some(0.0)
    });
    let s = scrape(&b_m).unwrap();
    assert_eq!(s.sum("sluice_ha_master_link_up", &[]), Some(1.0));
    assert!(
        s.sum("rocketmq_messages_in_total", &[]).is_none(),
        "the slave took no sends"
    );

    // A push consumer: what it received counted out, its connection seen, its lag back to 0.
    let group = unique_name("metrics_cg");
    let mut consumer = java.spawn(
        "sluice.it.PushConsumer",
        &[
            "--namesrv",
            &ns.addr(),
            "--topic",
            &topic,
            "--group",
            &group,
            "--count",
            "100000",
            "--from",
            "first",
            "--heartbeat-ms",
            "1000",
            "--wait-ms",
            "120000",
        ],
    );
    let out_labels = [
        ("topic", topic.as_str()),
        ("consumer_group", group.as_str()),
    ];
    let e = scrape_until(
        &a_m,
        "the consumer's messages counted out and its lag 0",
        |e| {
            e.sum("rocketmq_messages_out_total", &out_labels) == Some(MESSAGES as f64)
                && e.sum("rocketmq_consumer_lag_messages", &out_labels) == Some(0.0)
        },
    );
    assert_eq!(
        e.sum("rocketmq_throughput_out_total", &out_labels),
        Some(bytes)
    );
    let conns = e.find(
        "rocketmq_consumer_connections",
        &[("consumer_group", group.as_str())],
    );
    assert_eq!(conns.len(), 1, "{conns:?}");
    assert_eq!(conns[0].label("language"), Some("java"));
    assert_eq!(conns[0].label("version"), Some("v4_9_8"));
    assert_eq!(conns[0].label("consume_mode"), Some("push"));
    assert_eq!(conns[0].value, 1.0);
    assert_eq!(
        e.sum("rocketmq_consumer_lag_latency_milliseconds", &out_labels),
        Some(0.0)
    );
    // The first pull that found messages was sampled (one in 16 is): messages just written
    // are in the page cache.
    let hits = e.sum(
        "sluice_pull_page_cache_messages_total",
        &[("result", "hit")],
    );
    let misses = e.sum(
        "sluice_pull_page_cache_messages_total",
        &[("result", "miss")],
    );
    assert!(
        hits.is_some_and(|h| h >= 1.0) && misses == Some(0.0),
        "page-cache hits {hits:?}, misses {misses:?}"
    );
    assert!(hits.unwrap() <= MESSAGES as f64, "{hits:?}");
    consumer.kill();
    let got = Recv::all(consumer.stdout_lines().iter().map(String::as_str));
    assert!(
        got.len() >= MESSAGES,
        "the consumer printed {} receipts",
        got.len()
    );

    // Transactions: 3 committed at once, 3 rolled back, 3 committed after a check-back.
    let out = java.run(
        "sluice.it.TxProducer",
        &[
            "--namesrv",
            &ns.addr(),
            "--topic",
            &tx_topic,
            "--count",
            &TX_MESSAGES.to_string(),
            "--check-wait-ms",
            "90000",
        ],
        Duration::from_secs(150),
    );
    out.assert_ok();
    let tx = [("topic", tx_topic.as_str())];
    let e = scrape_until(&a_m, "6 commits and 3 rollbacks", |e| {
        e.sum("rocketmq_commit_messages_total", &tx) == Some(6.0)
            && e.sum("rocketmq_rollback_messages_total", &tx) == Some(3.0)
    });
    assert_eq!(
        e.sum(
            "rocketmq_messages_in_total",
            &[
                ("topic", tx_topic.as_str()),
                ("message_type", "transaction")
            ]
        ),
        Some(TX_MESSAGES as f64)
    );
    assert_eq!(e.sum("rocketmq_half_messages", &tx), Some(0.0));
    assert_eq!(
        e.sum("rocketmq_finish_message_latency_ms_count", &tx),
        Some(6.0)
    );

    // Dead letters: a group that fails every delivery and allows no re-delivery.
    java.produce(&ns.addr(), &dlq_topic, DEAD_LETTERS, &[]);
    let dlq_group = unique_name("metrics_dlq");
    let _failing = java.spawn(
        "sluice.it.PushConsumer",
        &[
            "--namesrv",
            &ns.addr(),
            "--topic",
            &dlq_topic,
            "--group",
            &dlq_group,
            "--count",
            "100000",
            "--from",
            "first",
            "--fail-times",
            "1000",
            "--max-reconsume-times",
            "0",
            "--heartbeat-ms",
            "1000",
            "--wait-ms",
            "120000",
        ],
    );
    scrape_until(&a_m, "5 dead letters", |e| {
        e.sum(
            "rocketmq_send_to_dlq_messages_total",
            &[
                ("consumer_group", dlq_group.as_str()),
                ("topic", dlq_topic.as_str()),
            ],
        ) == Some(DEAD_LETTERS as f64)
    });

    // Timers: three due in an hour, counted as timing and in the 1 h bound of the snapshot
    // (RocketMQ 5.3.3's client sets the delivery time).
    let timer_topic = unique_name("MetricsTimer");
    a.create_topic(&timer_topic, 4);
    JavaTools::get(V5).produce(&ns.addr(), &timer_topic, 3, &["--timer", "delay-sec=3600"]);
    let e = scrape_until(&a_m, "3 timers pending", |e| {
        e.sum(
            "rocketmq_timing_messages",
            &[("topic", timer_topic.as_str())],
        ) == Some(3.0)
    });
    assert_eq!(e.find("rocketmq_timer_message_snapshot", &[]).len(), 8);
    assert!(
        e.sum(
            "rocketmq_timer_message_snapshot",
            &[("timer_bound_s", "3600")]
        )
        .unwrap()
            >= 3.0,
        "{:#?}",
        e.find("rocketmq_timer_message_snapshot", &[])
    );
    assert_eq!(
        e.sum(
            "rocketmq_timer_enqueue_total",
            &[("topic", timer_topic.as_str())]
        ),
        Some(3.0)
    );
    let delay_1h = [("topic", timer_topic.as_str()), ("le", "3600.0")];
    assert_eq!(
        e.sum("rocketmq_delay_message_latency_seconds_bucket", &delay_1h),
        Some(3.0)
    );
    assert_eq!(
        e.sum(
            "rocketmq_delay_message_latency_seconds_bucket",
            &[("topic", timer_topic.as_str()), ("le", "600.0")]
        ),
        Some(0.0)
    );
    assert!(e.sum("rocketmq_timer_enqueue_lag", &[]).is_some());
    assert!(
        e.sum("rocketmq_timer_dequeue_latency_milliseconds", &[])
            .is_some()
    );
    // POP's revive queues (8 by default) and the topic creations this test made.
    assert_eq!(e.find("rocketmq_pop_revive_lag_milliseconds", &[]).len(), 8);
    assert!(e.sum("rocketmq_pop_checkpoint_buffer_size", &[]).is_some());
    assert!(
        e.sum(
            "rocketmq_topic_create_execution_time_milliseconds_count",
            &[("invocation_status", "success")]
        )
        .unwrap()
            >= 4.0
    );

    // POP: a 5.x push consumer popping (the group set to POP with Apache's mqadmin); each pop
    // writes a checkpoint, each consumed message an ack, to the revive log.
    let pop_topic = unique_name("MetricsPop");
    let pop_group = unique_name("metrics_pop");
    a.create_topic(&pop_topic, 4);
    let v5 = JavaTools::get(V5);
    let commands: Vec<Vec<String>> = [
        vec!["updateSubGroup", "-c", "DefaultCluster", "-g", &pop_group],
        vec![
            "setConsumeMode",
            "-c",
            "DefaultCluster",
            "-t",
            &pop_topic,
            "-g",
            &pop_group,
            "-m",
            "POP",
            "-q",
            "0",
        ],
    ]
    .iter()
    .map(|c| c.iter().map(ToString::to_string).collect())
    .collect();
    for run in v5.mqadmin_batch(&ns.addr(), &commands, Duration::from_secs(30)) {
        assert!(run.ok(), "{run}");
    }
    let out = v5.run(
        "sluice.it.PopConsume",
        &[
            "--namesrv",
            &ns.addr(),
            "--topic",
            &pop_topic,
            "--group",
            &pop_group,
            "--count",
            "10",
            "--send-after-ms",
            "1000",
            "--linger-ms",
            "3000",
            "--wait-ms",
            "40000",
        ],
        Duration::from_secs(90),
    );
    out.assert_ok();
    let pop = [
        ("consumer_group", pop_group.as_str()),
        ("topic", pop_topic.as_str()),
    ];
    let e = scrape_until(
        &a_m,
        "the pops' checkpoints and acks in the revive log",
        |e| {
            e.sum(
                "rocketmq_pop_revive_in_message_total",
                &[
                    pop[0],
                    pop[1],
                    ("revive_message_type", "ACK"),
                    ("put_status", "PUT_OK"),
                ],
            )
            // Acks of one pop may share a record (merged before the write).
            .is_some_and(|n| n >= 1.0)
        },
    );
    assert!(
        e.sum(
            "rocketmq_pop_revive_in_message_total",
            &[pop[0], pop[1], ("revive_message_type", "CK")]
        )
        .is_some_and(|n| n >= 1.0),
        "{:#?}",
        e.find("rocketmq_pop_revive_in_message_total", &[])
    );
    assert_eq!(
        e.sum(
            "rocketmq_messages_out_total",
            &[pop[0], pop[1], ("is_retry", "false")]
        ),
        Some(10.0)
    );

    // The name server: both brokers live, their registrations timed.
    let n = scrape(&ns_m).unwrap();
    assert_eq!(n.sum("sluice_namesrv_live_brokers", &[]), Some(2.0));
    assert!(n.sum("sluice_namesrv_topics", &[]).unwrap() >= 3.0);
    assert!(
        n.sum(
            "rocketmq_rpc_latency_milliseconds_count",
            &[("request_code", "register_broker")]
        )
        .unwrap()
            >= 2.0
    );
    assert!(
        n.samples
            .iter()
            .all(|s| s.label("node_type") == Some("namesrv"))
    );

    // Every metric the Grafana dashboard draws is one this loaded cluster exports.
    let mut exported: BTreeSet<String> = BTreeSet::new();
    for e in [scrape(&a_m).unwrap(), scrape(&b_m).unwrap(), n] {
        exported.extend(e.samples.iter().map(|s| s.name.clone()));
    }
    let missing: Vec<String> = dashboard_metrics()
        .into_iter()
        .filter(|m| !exported.contains(m) && !NOT_LOADED_HERE.contains(&m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard draws metrics the cluster did not export: {missing:?}"
    );
}

/// Dashboard metrics this test's load does not make: group commit is SYNC_FLUSH's.
const NOT_LOADED_HERE: &[&str] = &[
    "sluice_store_group_commit_size_bucket",
    "sluice_store_group_commit_size_count",
    "sluice_store_group_commit_size_sum",
];

/// The metric names in the queries of deploy/grafana/sluice-dashboard.json.
fn dashboard_metrics() -> BTreeSet<String> {
    let path = workspace_root().join("deploy/grafana/sluice-dashboard.json");
    let text = std::fs::read_to_string(&path).expect("the dashboard");
    let board: serde_json::Value = serde_json::from_str(&text).expect("dashboard JSON");
    let mut queries = Vec::new();
    collect_exprs(&board, &mut queries);
    assert!(queries.len() > 40, "{} queries", queries.len());
    queries
        .iter()
        .flat_map(|q| q.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|t| t.starts_with("rocketmq_") || t.starts_with("sluice_"))
        .map(str::to_owned)
        .collect()
}

/// Every `expr` of a target and `query` of a variable, at any depth.
fn collect_exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("expr" | "definition", serde_json::Value::String(q)) => out.push(q.clone()),
                    _ => collect_exprs(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_exprs(v, out)),
        _ => {}
    }
}
