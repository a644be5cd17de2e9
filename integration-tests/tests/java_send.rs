//! The official Java producers (rocketmq-client 4.9.8 and 5.3.3) against the real
//! `mqnamesrv` + `mqbroker`: topic auto-creation through TBW102 and sync sends.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::BTreeMap;
use std::time::Duration;

use integration_tests::harness::{BrokerProcess, NamesrvProcess};
use integration_tests::java::{JavaTools, VERSIONS};

#[test]
fn java_producers_send_to_an_auto_created_topic() {
    integration_tests::require_tools!(Java, Maven);
    let ns = NamesrvProcess::start();
    let _broker = BrokerProcess::start(&ns.addr());
    for version in VERSIONS {
        let java = JavaTools::get(version);
        let topic = format!("AutoTopic_{}", version.replace('.', "_"));
        let out = java.run(
            "sluice.it.Producer",
            &[
                "--namesrv",
                &ns.addr(),
                "--topic",
                &topic,
                "--count",
                "20",
                "--tag",
                "TagA",
            ],
            Duration::from_secs(90),
        );
        out.assert_ok();
        let sent = out.fields("SENT ");
        assert_eq!(sent.len(), 20, "{version}: {}", out.stdout);
        // Queue offsets are consecutive per queue, from 0.
        let mut per_queue: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for s in &sent {
            assert_eq!(s[4], "SEND_OK", "{version}: {s:?}");
            assert_eq!(s[1].len(), 32, "offset msg id: {s:?}");
            per_queue
                .entry(s[2].to_owned())
                .or_default()
                .push(s[3].parse().unwrap());
        }
        for (queue, offsets) in per_queue {
            let expected: Vec<u64> = (0..offsets.len() as u64).collect();
            assert_eq!(offsets, expected, "{version}: queue {queue}");
        }
    }
}
