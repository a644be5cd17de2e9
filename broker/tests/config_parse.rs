//! Operator input to the broker's config: bad values are errors that name their key,
//! never panics.

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
