//! Operator input to the broker's config and the tables it loads at start: bad values
//! and garbled files are errors that name their key or file, never panics.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use broker::broker::Broker;
use broker::config::BrokerConfig;
use proptest::prelude::*;
use remoting::settings::Settings;
use store::StoreConfig;

#[test]
fn overflowing_delay_level_is_refused_naming_the_key() {
    // The broker's own parser multiplied without a check and panicked on this.
    let dir = tempfile::tempdir().unwrap();
    let mut store = StoreConfig::with_root(dir.path().join("store"));
    store.message_delay_level = "1s 300000000000000d".into();
    let config = BrokerConfig {
        broker_name: "broker-a".into(),
        bind_address: "127.0.0.1".into(),
        broker_ip1: Some("127.0.0.1".into()),
        ..BrokerConfig::default()
    };
    let e = Broker::open(config, store, ha::HaConfig::default(), 10911)
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("messageDelayLevel") && e.contains("'300000000000000d'"),
        "{e}"
    );
}

#[test]
fn bad_broker_role_names_the_key_and_the_roles() {
    let settings = Settings::load(None, &["brokerRole=MASTERX".into()]).unwrap();
    let e = settings
        .deserialize::<BrokerConfig>()
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "invalid setting: brokerRole = 'MASTERX' is not one of ASYNC_MASTER, SYNC_MASTER, SLAVE"
    );
    let settings = Settings::load(None, &["flushDiskType=async".into()]).unwrap();
    let e = settings
        .deserialize::<StoreConfig>()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("flushDiskType = 'async' is not one of ASYNC_FLUSH, SYNC_FLUSH"),
        "{e}"
    );
}

/// The keys a broker reads from its config file.
fn broker_keys() -> Vec<String> {
    let mut keys = Vec::new();
    for value in [
        serde_json::to_value(BrokerConfig::default()),
        serde_json::to_value(StoreConfig::default()),
        serde_json::to_value(ha::HaConfig::default()),
    ] {
        if let Ok(serde_json::Value::Object(map)) = value {
            keys.extend(map.keys().cloned());
        }
    }
    keys
}

/// Text an operator might give a key: numbers at and past every bound, words, lists.
fn value_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        (0u32..40).prop_map(|b| (1u64 << b).to_string()),
        prop::sample::select(vec![
            "0",
            "1",
            "-1",
            "4096",
            "18446744073709551615",
            "9223372036854775807",
            "2147483647",
            "2147483648",
            "4294967295",
            "65535",
            "65536",
            "true",
            "FALSE",
            "",
            " ",
            "SLAVE",
            "SYNC_MASTER",
            "SYNC_FLUSH",
            "1s 2s",
            "1é",
            "~/x",
            "127.0.0.1",
            "::1",
            "127.0.0.1:9876;localhost:1",
            "04;10",
            "99d",
        ])
        .prop_map(str::to_owned),
        "\\PC{0,20}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_settings_load_or_fail_naming_a_key(
        picks in prop::collection::vec((any::<prop::sample::Index>(), value_text()), 0..12),
    ) {
        let keys = broker_keys();
        let pairs: Vec<(String, String)> = picks
            .into_iter()
            .map(|(i, v)| (i.get(&keys).clone(), v))
            .collect();
        let settings = Settings::from_pairs(pairs.clone());
        let named = |e: &dyn std::error::Error| {
            let e = e.to_string();
            pairs.iter().any(|(k, _)| e.contains(k.as_str()))
        };
        match settings.deserialize::<BrokerConfig>() {
            Ok(mut c) => {
                if let Err(e) = c.sanitize() {
                    prop_assert!(named(&e), "{e}");
                }
                let _ = c.namesrv_addrs();
                let _ = c.ha_listen_port(c.listen_port);
                let _ = c.fast_listen_port(c.listen_port);
            }
            Err(e) => prop_assert!(named(&e), "{e}"),
        }
        match settings.deserialize::<StoreConfig>() {
            Ok(mut c) => {
                if let Err(e) = c.sanitize() {
                    prop_assert!(named(&e), "{e}");
                }
            }
            Err(e) => prop_assert!(named(&e), "{e}"),
        }
        match settings.deserialize::<ha::HaConfig>() {
            Ok(mut c) => {
                if let Err(e) = c.sanitize() {
                    prop_assert!(named(&e), "{e}");
                }
            }
            Err(e) => prop_assert!(named(&e), "{e}"),
        }
    }
}

/// The JSON tables a broker loads at start, under `<storePathRootDir>/config/`.
const CONFIG_FILES: [&str; 5] = [
    "topics.json",
    "subscriptionGroup.json",
    "consumerOffset.json",
    "delayOffset.json",
    "haPromotion.json",
];

fn open_with_config_file(name: &str, content: &[u8]) -> Result<Broker, String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::write(root.join("config").join(name), content).unwrap();
    let mut store = StoreConfig::with_root(&root);
    store.mapped_file_size_commit_log = 64 * 1024;
    let config = BrokerConfig {
        broker_name: "broker-a".into(),
        bind_address: "127.0.0.1".into(),
        broker_ip1: Some("127.0.0.1".into()),
        ha_listen_port: Some(0),
        ..BrokerConfig::default()
    };
    Broker::open(config, store, ha::HaConfig::default(), 10911).map_err(|e| e.to_string())
}

#[test]
fn garbled_config_files_are_errors_naming_the_file() {
    // Per file: valid JSON whose values have the wrong type.
    let wrong_types: [&[u8]; 5] = [
        br#"{"topicConfigTable":{"T":{"readQueueNums":"x"}}}"#,
        br#"{"subscriptionGroupTable":[1]}"#,
        br#"{"offsetTable":{"T@g":{1:"x"}}}"#,
        br#"{"offsetTable":{"1":true}}"#,
        br#"{"promotedAtOffset":-1}"#,
    ];
    for (name, wrong) in CONFIG_FILES.into_iter().zip(wrong_types) {
        for garbage in [
            &b"{\"topicConfigTable\":{"[..],
            b"\xff\xfe\x00garbage",
            b"[1,2,3]",
            b"",
            wrong,
        ] {
            let e = open_with_config_file(name, garbage)
                .err()
                .unwrap_or_else(|| {
                    panic!("{name} {:?} accepted", String::from_utf8_lossy(garbage))
                });
            assert!(e.contains(name), "{name}: {e}");
        }
    }
}

/// Each file's shape as RocketMQ writes it, to mutate.
const CONFIG_SAMPLES: [(&str, &str); 4] = [
    (
        "topics.json",
        r#"{"dataVersion":{"counter":3,"timestamp":1700000000000},"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":8}}}"#,
    ),
    (
        "subscriptionGroup.json",
        r#"{"dataVersion":{"counter":1,"timestamp":1},"subscriptionGroupTable":{"g":{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,"groupName":"g","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}}}"#,
    ),
    (
        "consumerOffset.json",
        r#"{"offsetTable":{"T@g":{0:12,1:7},"%RETRY%g@g":{0:0}}}"#,
    ),
    ("delayOffset.json", r#"{"offsetTable":{1:5,2:0,18:99}}"#),
];

/// Loads `bytes` as the broker loads `name`: the value, or an error naming the file.
fn load_as(name: &str, bytes: &[u8]) -> Result<(), String> {
    use broker::persist;
    use remoting::protocol::subscription::{
        ConsumerOffsetSerializeWrapper, DelayOffsetSerializeWrapper, SubscriptionGroupWrapper,
    };
    use remoting::protocol::topic::TopicConfigSerializeWrapper;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let result = match name {
        "topics.json" => persist::load::<TopicConfigSerializeWrapper>(&path).map(drop),
        "subscriptionGroup.json" => persist::load::<SubscriptionGroupWrapper>(&path).map(drop),
        "consumerOffset.json" => persist::load::<ConsumerOffsetSerializeWrapper>(&path).map(drop),
        _ => persist::load::<DelayOffsetSerializeWrapper>(&path).map(drop),
    };
    result.map_err(|e| e.to_string())
}

proptest! {
    #[test]
    fn config_files_load_or_fail_naming_the_file(
        which in 0usize..4,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 0..6),
        cut in any::<prop::sample::Index>(),
        raw in prop::option::weighted(0.2, prop::collection::vec(any::<u8>(), 0..64)),
    ) {
        let (name, sample) = CONFIG_SAMPLES[which];
        let mut bytes = sample.as_bytes().to_vec();
        for (at, byte, how) in edits {
            let i = at.index(bytes.len());
            match how {
                0 => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ => drop(bytes.remove(i)),
            }
        }
        if cut.index(4) == 0 {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        let bytes = raw.unwrap_or(bytes);
        if let Err(e) = load_as(name, &bytes) {
            prop_assert!(e.contains(name), "{}", e);
        }
    }
}

#[test]
fn config_samples_load() {
    for (name, sample) in CONFIG_SAMPLES {
        load_as(name, sample.as_bytes()).unwrap();
    }
}
