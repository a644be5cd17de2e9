//! Operator input to the broker's config: bad values are errors that name their key,
//! never panics.

use broker::broker::Broker;
use broker::config::BrokerConfig;
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
