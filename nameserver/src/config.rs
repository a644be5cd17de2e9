//! `NamesrvConfig`: every setting of `mqnamesrv`, named as RocketMQ's
//! `NamesrvConfig` and `NettyServerConfig` keys so an operator's namesrv.conf loads as is.
//!
//! The config is also what GET_NAMESRV_CONFIG shows and UPDATE_NAMESRV_CONFIG changes
//! at run time, so it converts to and from properties text ([`NamesrvConfig::to_properties`],
//! [`NamesrvConfig::updated`]).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use remoting::settings::Settings;
use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::error::ConfigError;

/// `DEFAULT_BROKER_CHANNEL_EXPIRED_TIME`: a broker not heard from for this long is
/// removed, unless it registered with its own `heartbeatTimeoutMillis` (5.x).
pub const DEFAULT_BROKER_CHANNEL_EXPIRED_TIME_MS: i64 = 120_000;

/// Keys UPDATE_NAMESRV_CONFIG always refuses, whatever `configBlackList` says
/// (`DefaultRequestProcessor.initConfigBlackList`).
const BUILTIN_BLACK_LIST: [&str; 4] = [
    "configBlackList",
    "configStorePath",
    "kvConfigPath",
    "rocketmqHome",
];

/// Settings of the name server.
///
/// Loaded with [`Settings::deserialize`]: `#[serde(default)]` fills RocketMQ's defaults
/// for every key the file and the `-o` overrides do not set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NamesrvConfig {
    /// RocketMQ home directory; informational. Default: `$ROCKETMQ_HOME` or empty.
    pub rocketmq_home: String,
    /// Where the KV config table is persisted. Default: `~/namesrv/kvConfig.json`.
    pub kv_config_path: String,
    /// Where UPDATE_NAMESRV_CONFIG persists the whole config as properties text.
    /// Default: `~/namesrv/namesrv.properties`.
    pub config_store_path: String,
    /// Environment name (`productEnvName`); informational. Default: `center`.
    pub product_env_name: String,
    /// Cluster test mode; not supported, warned about when set. Default: false.
    pub cluster_test: bool,
    /// Adds `orderTopicConf` (KV namespace `ORDER_TOPIC_CONFIG`) to routes. Default: false.
    pub order_message_enable: bool,
    /// Answers REGISTER_BROKER with the `ORDER_TOPIC_CONFIG` table (5.x key; 4.9 always did). Default: true.
    pub return_order_topic_config_to_broker: bool,
    /// Period of the scan that removes brokers not heard from, in ms (5.x: 5000, 4.9: 10000).
    /// Default: 5000; at least 10.
    pub scan_not_active_broker_interval: u64,
    /// 5.x: a slave may act as master while its master is down (routes then show the
    /// smallest live id as id 0 for read-only queues). Default: false.
    pub support_acting_master: bool,
    /// Answers GET_ALL_TOPIC_LIST_FROM_NAMESERVER (SYSTEM_ERROR "disable" otherwise). Default: true.
    pub enable_all_topic_list: bool,
    /// Answers GET_TOPICS_BY_CLUSTER and the unit topic lists. Default: true.
    pub enable_topic_list: bool,
    /// 5.x: notify brokers when the smallest broker id of a group changes; not
    /// supported (acting-master setups only), warned about when set. Default: false.
    pub notify_min_broker_id_changed: bool,
    /// 5.x embedded controller; not supported, warned about when set. Default: false.
    pub enable_controller_in_namesrv: bool,
    /// 5.x: answer route queries with SYSTEM_ERROR "name server not ready" for
    /// `waitSecondsForService` after start. Default: false.
    pub need_wait_for_service: bool,
    /// See `needWaitForService`. Default: 45 s.
    pub wait_seconds_for_service: u64,
    /// 5.x: a master registration drops the broker's topics it no longer lists. Default: false.
    pub delete_topic_with_broker_registration: bool,
    /// `;`-separated keys UPDATE_NAMESRV_CONFIG refuses (besides the built-in ones).
    /// Default: `configBlackList;configStorePath;kvConfigPath`.
    pub config_black_list: String,
    /// Address the server binds (`bindAddress`, also accepted as `listenAddr`). Default: `0.0.0.0`.
    #[serde(alias = "listenAddr")]
    pub bind_address: String,
    /// Port the server listens on; 0 picks a free one (logged once bound). Default: 9876.
    pub listen_port: u16,
    /// Listen backlog (`serverSocketBacklog`): handshaken connections wait there to be
    /// accepted; a connect storm beyond it has SYNs dropped and retried seconds later.
    /// Default: 1024; > 0; the kernel caps it at `net.core.somaxconn`.
    pub server_socket_backlog: u32,
    /// Connections idle this long are closed; 0 = never. Default: 120 s.
    pub server_channel_max_idle_time_seconds: u64,
    /// Longest frame accepted (`com.rocketmq.remoting.frameMaxLength`); a longer one
    /// closes the connection. Default: 16 MiB; at least 1 KiB.
    pub frame_max_length: usize,
}

fn home_dir() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from)
}

fn under_home(file: &str) -> String {
    home_dir().join("namesrv").join(file).display().to_string()
}

impl Default for NamesrvConfig {
    fn default() -> Self {
        NamesrvConfig {
            rocketmq_home: std::env::var("ROCKETMQ_HOME").unwrap_or_default(),
            kv_config_path: under_home("kvConfig.json"),
            config_store_path: under_home("namesrv.properties"),
            product_env_name: "center".to_owned(),
            cluster_test: false,
            order_message_enable: false,
            return_order_topic_config_to_broker: true,
            scan_not_active_broker_interval: 5_000,
            support_acting_master: false,
            enable_all_topic_list: true,
            enable_topic_list: true,
            notify_min_broker_id_changed: false,
            enable_controller_in_namesrv: false,
            need_wait_for_service: false,
            wait_seconds_for_service: 45,
            delete_topic_with_broker_registration: false,
            config_black_list: "configBlackList;configStorePath;kvConfigPath".to_owned(),
            bind_address: "0.0.0.0".to_owned(),
            listen_port: 9876,
            server_socket_backlog: remoting::net::DEFAULT_SERVER_SOCKET_BACKLOG,
            server_channel_max_idle_time_seconds: 120,
            frame_max_length: remoting::frame::DEFAULT_MAX_FRAME_LEN,
        }
    }
}

/// Smallest accepted `scanNotActiveBrokerInterval`, so a typo cannot spin the scan.
const MIN_SCAN_INTERVAL_MS: u64 = 10;
/// Smallest accepted `frameMaxLength`: a registration of a handful of topics must fit.
const MIN_FRAME_MAX_LENGTH: usize = 1024;

impl NamesrvConfig {
    /// Loads the config from settings (file + overrides), sanitised.
    ///
    /// # Errors
    /// A value does not parse, or [`sanitize`](Self::sanitize) refuses the result.
    pub fn from_settings(settings: &Settings) -> Result<Self, ConfigError> {
        let mut config: NamesrvConfig = settings
            .deserialize()
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        config.sanitize()?;
        Ok(config)
    }

    /// Rejects impossible values and expands a leading `~/` in paths; warns about
    /// settings that are accepted but have no effect here.
    ///
    /// # Errors
    /// An empty path, an unparsable bind address, a scan interval below 10 ms, a zero
    /// listen backlog or a frame limit below 1 KiB.
    pub fn sanitize(&mut self) -> Result<(), ConfigError> {
        for (key, path) in [
            ("kvConfigPath", &mut self.kv_config_path),
            ("configStorePath", &mut self.config_store_path),
        ] {
            if path.trim().is_empty() {
                return Err(ConfigError::Invalid(format!("{key} must not be empty")));
            }
            if let Some(rest) = path.strip_prefix("~/") {
                *path = home_dir().join(rest).display().to_string();
            }
        }
        if self.bind_address.trim().parse::<IpAddr>().is_err() {
            return Err(ConfigError::Invalid(format!(
                "bindAddress '{}' is not an IP address",
                self.bind_address
            )));
        }
        self.bind_address = self.bind_address.trim().to_owned();
        if self.scan_not_active_broker_interval < MIN_SCAN_INTERVAL_MS {
            return Err(ConfigError::Invalid(format!(
                "scanNotActiveBrokerInterval {} ms is below {MIN_SCAN_INTERVAL_MS} ms",
                self.scan_not_active_broker_interval
            )));
        }
        if self.server_socket_backlog == 0 {
            return Err(ConfigError::Invalid(
                "serverSocketBacklog must be > 0".into(),
            ));
        }
        if self.frame_max_length < MIN_FRAME_MAX_LENGTH {
            return Err(ConfigError::Invalid(format!(
                "frameMaxLength {} is below {MIN_FRAME_MAX_LENGTH}",
                self.frame_max_length
            )));
        }
        for (key, set) in [
            ("clusterTest", self.cluster_test),
            (
                "notifyMinBrokerIdChanged",
                self.notify_min_broker_id_changed,
            ),
            (
                "enableControllerInNamesrv",
                self.enable_controller_in_namesrv,
            ),
        ] {
            if set {
                warn!(key, "setting is not supported by sluice and has no effect");
            }
        }
        Ok(())
    }

    /// The scan period.
    #[must_use]
    pub fn scan_interval(&self) -> Duration {
        Duration::from_millis(self.scan_not_active_broker_interval)
    }

    /// The idle timeout of connections, if any.
    #[must_use]
    pub fn idle_timeout(&self) -> Option<Duration> {
        (self.server_channel_max_idle_time_seconds > 0)
            .then(|| Duration::from_secs(self.server_channel_max_idle_time_seconds))
    }

    /// Every key with its value as text (GET_NAMESRV_CONFIG, the persisted config).
    #[must_use]
    pub fn to_properties(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(self) {
            for (key, value) in map {
                let text = match value {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                out.insert(key, text);
            }
        }
        out
    }

    /// The keys UPDATE_NAMESRV_CONFIG refuses: the built-in ones plus `configBlackList`.
    #[must_use]
    pub fn black_list(&self) -> Vec<String> {
        BUILTIN_BLACK_LIST
            .iter()
            .map(|s| (*s).to_owned())
            .chain(
                self.config_black_list
                    .split(';')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            )
            .collect()
    }

    /// This config with `updates` applied. As RocketMQ's `Configuration.update`, keys
    /// the config does not have are ignored; black-listed keys must be refused by the
    /// caller first ([`black_list`](Self::black_list)).
    ///
    /// # Errors
    /// A value does not parse as its key's type, or the result fails `sanitize`.
    pub fn updated(&self, updates: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut props = self.to_properties();
        for (key, value) in updates {
            if let Some(slot) = props.get_mut(key) {
                slot.clone_from(value);
            }
        }
        let settings = Settings::from_pairs(props);
        let mut next: NamesrvConfig = settings
            .deserialize()
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        next.sanitize()?;
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn defaults_are_rocketmq_defaults() {
        let c = NamesrvConfig::default();
        assert_eq!(c.listen_port, 9876);
        assert_eq!(c.scan_not_active_broker_interval, 5_000);
        assert_eq!(c.server_channel_max_idle_time_seconds, 120);
        assert_eq!(c.frame_max_length, 16 * 1024 * 1024);
        assert_eq!(c.server_socket_backlog, 1024);
        assert!(
            c.kv_config_path.ends_with("namesrv/kvConfig.json"),
            "{}",
            c.kv_config_path
        );
        assert!(!c.order_message_enable && !c.need_wait_for_service);
        assert_eq!(c.wait_seconds_for_service, 45);
    }

    #[test]
    fn loads_from_properties_and_overrides() {
        let s = Settings::from_pairs([
            ("listenPort", "0"),
            ("listenAddr", "127.0.0.1"),
            ("orderMessageEnable", "true"),
            ("kvConfigPath", "/tmp/x/kv.json"),
            ("brokerName", "unrelated"),
        ]);
        let c = NamesrvConfig::from_settings(&s).unwrap();
        assert_eq!(c.listen_port, 0);
        assert_eq!(c.bind_address, "127.0.0.1");
        assert!(c.order_message_enable);
        assert_eq!(c.kv_config_path, "/tmp/x/kv.json");
        assert_eq!(s.unknown_keys(), vec!["brokerName"]);
    }

    #[test]
    fn sanitize_rejects_nonsense() {
        for (k, v) in [
            ("bindAddress", "nowhere"),
            ("scanNotActiveBrokerInterval", "0"),
            ("frameMaxLength", "12"),
            ("serverSocketBacklog", "0"),
            ("kvConfigPath", " "),
        ] {
            let s = Settings::from_pairs([(k, v)]);
            assert!(
                NamesrvConfig::from_settings(&s).is_err(),
                "{k}={v} accepted"
            );
        }
        let s = Settings::from_pairs([("listenPort", "99999")]);
        assert!(NamesrvConfig::from_settings(&s).is_err());
    }

    #[test]
    fn tilde_is_expanded() {
        let s = Settings::from_pairs([("kvConfigPath", "~/ns/kv.json")]);
        let c = NamesrvConfig::from_settings(&s).unwrap();
        assert!(!c.kv_config_path.starts_with('~'));
        assert!(c.kv_config_path.ends_with("ns/kv.json"));
    }

    #[test]
    fn properties_round_trip_and_update() {
        let c = NamesrvConfig::default();
        let props = c.to_properties();
        assert_eq!(props["listenPort"], "9876");
        assert_eq!(props["orderMessageEnable"], "false");
        assert_eq!(props["bindAddress"], "0.0.0.0");
        let back: NamesrvConfig = Settings::from_pairs(props).deserialize().unwrap();
        assert_eq!(back, c);

        let updates: BTreeMap<String, String> = [
            ("orderMessageEnable".to_owned(), "true".to_owned()),
            ("noSuchKey".to_owned(), "1".to_owned()),
        ]
        .into();
        let next = c.updated(&updates).unwrap();
        assert!(next.order_message_enable);
        let bad: BTreeMap<String, String> =
            [("waitSecondsForService".to_owned(), "soon".to_owned())].into();
        assert!(c.updated(&bad).is_err());
    }

    fn keys() -> Vec<String> {
        NamesrvConfig::default()
            .to_properties()
            .into_keys()
            .collect()
    }

    fn value_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<u64>().prop_map(|n| n.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            prop::sample::select(vec![
                "0",
                "1",
                "9",
                "10",
                "1023",
                "1024",
                "65535",
                "65536",
                "true",
                "False",
                "",
                " ",
                "~/",
                "~/x",
                "127.0.0.1",
                " ::1 ",
                "0.0.0.0:1",
                "a;b",
            ])
            .prop_map(str::to_owned),
            "\\PC{0,16}",
        ]
    }

    proptest! {
        #[test]
        fn any_settings_load_or_fail_naming_a_key(
            picks in prop::collection::vec((any::<prop::sample::Index>(), value_text()), 0..10),
        ) {
            let keys = keys();
            let pairs: Vec<(String, String)> =
                picks.into_iter().map(|(i, v)| (i.get(&keys).clone(), v)).collect();
            match NamesrvConfig::from_settings(&Settings::from_pairs(pairs.clone())) {
                Ok(c) => {
                    let _ = (c.scan_interval(), c.idle_timeout(), c.black_list());
                    // A loaded config reads back from its own properties.
                    let back = NamesrvConfig::from_settings(&Settings::from_pairs(c.to_properties()));
                    prop_assert_eq!(back.ok(), Some(c));
                }
                Err(e) => {
                    let e = e.to_string();
                    prop_assert!(pairs.iter().any(|(k, _)| e.contains(k.as_str())), "{}", e);
                }
            }
        }

        #[test]
        fn updates_apply_or_fail_naming_a_key(
            picks in prop::collection::vec((any::<prop::sample::Index>(), value_text()), 0..6),
            unknown in "\\PC{0,10}",
        ) {
            let keys = keys();
            let mut updates: BTreeMap<String, String> =
                picks.into_iter().map(|(i, v)| (i.get(&keys).clone(), v)).collect();
            updates.insert(format!("x{unknown}"), unknown);
            let c = NamesrvConfig::default();
            match c.updated(&updates) {
                Ok(next) => {
                    for (k, v) in next.to_properties() {
                        if let Some(given) = updates.get(&k) {
                            // Paths may be expanded, everything else is as given (trimmed).
                            prop_assert!(v.trim().eq_ignore_ascii_case(given.trim()) || given.starts_with("~/"), "{} = {:?} for {:?}", k, v, given);
                        }
                    }
                }
                Err(e) => {
                    let e = e.to_string();
                    prop_assert!(updates.keys().any(|k| e.contains(k.as_str())), "{}", e);
                }
            }
        }
    }

    #[test]
    fn black_list_has_builtins_and_configured_keys() {
        let c = NamesrvConfig {
            config_black_list: "listenPort; ;".to_owned(),
            ..NamesrvConfig::default()
        };
        let list = c.black_list();
        for key in [
            "configBlackList",
            "configStorePath",
            "kvConfigPath",
            "rocketmqHome",
            "listenPort",
        ] {
            assert!(list.iter().any(|k| k == key), "{key} missing");
        }
    }
}
