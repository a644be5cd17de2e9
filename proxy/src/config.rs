//! `ProxyConfig`: the settings of the gRPC endpoint, named as Apache's `rmq-proxy.json` keys
//! (`grpcServerPort`, `namesrvAddr`, ...), so an operator's file carries over.
//!
//! `mqproxy -pc FILE` takes that JSON file as is (any other file is read as TOML or
//! properties, as every sluice binary reads its config), `-o key=value` overrides, and
//! `-n` / `NAMESRV_ADDR` the name servers. Keys this proxy does not use are reported once.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use remoting::settings::{Settings, SettingsError};
use serde::{Deserialize, Serialize};

use crate::auth::UserCache;
use crate::convert::Limits;
use crate::tls::TlsConfig;

/// Settings of the proxy. Defaults are Apache's `ProxyConfig` defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProxyConfig {
    /// `namesrvAddr`: name servers, `;`-separated (required in cluster mode).
    pub namesrv_addr: String,
    /// `grpcServerPort`: the gRPC port (8081; 0: any free port).
    pub grpc_server_port: u16,
    /// `grpcBindAddress` (sluice's): the address the gRPC listener binds (all: `0.0.0.0`).
    pub grpc_bind_address: String,
    /// `maxMessageSize`: largest message body, bytes (4 MiB).
    pub max_message_size: usize,
    /// `enableMessageBodyEmptyCheck`: refuse empty bodies (true).
    pub enable_message_body_empty_check: bool,
    /// `maxUserPropertySize`: user properties + tag + keys, bytes (16 KiB).
    pub max_user_property_size: usize,
    /// `userPropertyMaxNum`: user properties per message (128).
    pub user_property_max_num: usize,
    /// `maxMessageGroupSize`: message groups are shorter, bytes (64).
    pub max_message_group_size: usize,
    /// `maxDelayTimeMills`: furthest delivery time, ms from now (1 day).
    pub max_delay_time_mills: i64,
    /// `maxTransactionRecoverySecond`: longest orphaned-transaction recovery, s (3600).
    pub max_transaction_recovery_second: i64,
    /// `channelExpiredTimeout`: a client neither heard of (settings, heartbeat) nor connected
    /// (telemetry stream) for this long is forgotten, ms (120 000).
    pub channel_expired_timeout: u64,
    /// `enableTopicMessageTypeCheck`: check sends against the topic's `message.type` (true);
    /// also what the clients are told to check (`validate_message_type`).
    pub enable_topic_message_type_check: bool,
    /// `grpcClientProducerMaxAttempts`: a producer's attempts per send (3).
    pub grpc_client_producer_max_attempts: i32,
    /// `grpcClientProducerBackoffInitialMillis`: its first retry delay, ms (10).
    pub grpc_client_producer_backoff_initial_millis: u64,
    /// `grpcClientProducerBackoffMaxMillis`: its longest retry delay, ms (1000).
    pub grpc_client_producer_backoff_max_millis: u64,
    /// `grpcClientProducerBackoffMultiplier`: growth of its retry delay (2).
    pub grpc_client_producer_backoff_multiplier: u32,
    /// `grpcClientConsumerMaxLongPollingTimeoutMillis`: a consumer's long poll, ms (20 000).
    pub grpc_client_consumer_max_long_polling_timeout_millis: u64,
    /// `grpcClientConsumerMinLongPollingTimeoutMillis`: the shortest long poll of a receive,
    /// ms (5000).
    pub grpc_client_consumer_min_long_polling_timeout_millis: u64,
    /// `grpcClientConsumerLongPollingBatchSize`: a consumer's receive batch (32).
    pub grpc_client_consumer_long_polling_batch_size: i32,
    /// `defaultInvisibleTimeMills`: the invisible time of a receive with `auto_renew`, ms
    /// (60 000).
    pub default_invisible_time_mills: i64,
    /// `minInvisibleTimeMillsForRecv`: the shortest invisible time a receive may ask, ms
    /// (10 000).
    pub min_invisible_time_mills_for_recv: i64,
    /// `maxInvisibleTimeMills`: the longest invisible time, ms (12 h; 0: no limit).
    pub max_invisible_time_mills: i64,
    /// `sendMessageTimeoutMillis` (sluice's): limit of one send to a broker, ms (3000).
    pub send_message_timeout_millis: u64,
    /// `transactionHeartbeatPeriodSecond`: how often the transactional producer groups are
    /// registered with their brokers, s (20); a broker checks back only on a group it has
    /// a heartbeat of.
    pub transaction_heartbeat_period_second: u64,
    /// `transactionHeartbeatBatchNum`: producer groups per heartbeat request (100).
    pub transaction_heartbeat_batch_num: usize,
    /// `transactionDataExpireMillis`: how long a half message's broker and offsets are kept
    /// for its EndTransaction, ms (30 000).
    pub transaction_data_expire_millis: u64,
    /// `transactionDataExpireScanPeriodMillis`: how often expired ones are dropped, ms
    /// (10 000).
    pub transaction_data_expire_scan_period_millis: u64,
    /// `transactionDataMaxNum`: entries kept per producer group and transaction id (15).
    pub transaction_data_max_num: usize,
    /// `rocketMQClusterName`: the cluster behind the proxy, whose brokers hold the users and
    /// ACLs (`DefaultCluster`).
    #[serde(rename = "rocketMQClusterName")]
    pub rocket_mq_cluster_name: String,
    /// Apache's auth keys (`authenticationEnabled`, `authorizationEnabled`,
    /// `innerClientAuthenticationCredentials`, `authConfigPath`, ...): [`crate::auth`].
    #[serde(skip)]
    pub auth: auth::AuthConfig,
    /// `userCacheRefreshSecond`, `aclCacheRefreshSecond`.
    #[serde(skip)]
    pub user_cache: UserCache,
    /// `tlsServerMode`, `tlsTestModeEnable`, `tlsCertPath`, `tlsKeyPath`: [`crate::tls`].
    #[serde(skip)]
    pub tls: TlsConfig,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        let limits = Limits::default();
        ProxyConfig {
            namesrv_addr: String::new(),
            grpc_server_port: 8081,
            grpc_bind_address: "0.0.0.0".to_owned(),
            max_message_size: limits.max_message_size,
            enable_message_body_empty_check: limits.enable_message_body_empty_check,
            max_user_property_size: limits.max_user_property_size,
            user_property_max_num: limits.user_property_max_num,
            max_message_group_size: limits.max_message_group_size,
            max_delay_time_mills: limits.max_delay_time_mills,
            max_transaction_recovery_second: limits.max_transaction_recovery_second,
            enable_topic_message_type_check: true,
            channel_expired_timeout: 120_000,
            grpc_client_producer_max_attempts: 3,
            grpc_client_producer_backoff_initial_millis: 10,
            grpc_client_producer_backoff_max_millis: 1000,
            grpc_client_producer_backoff_multiplier: 2,
            grpc_client_consumer_max_long_polling_timeout_millis: 20_000,
            grpc_client_consumer_min_long_polling_timeout_millis: 5_000,
            grpc_client_consumer_long_polling_batch_size: 32,
            default_invisible_time_mills: 60_000,
            min_invisible_time_mills_for_recv: 10_000,
            max_invisible_time_mills: 12 * 3600 * 1000,
            send_message_timeout_millis: 3000,
            transaction_heartbeat_period_second: 20,
            transaction_heartbeat_batch_num: 100,
            transaction_data_expire_millis: 30_000,
            transaction_data_expire_scan_period_millis: 10_000,
            transaction_data_max_num: 15,
            rocket_mq_cluster_name: "DefaultCluster".to_owned(),
            auth: auth::AuthConfig::default(),
            user_cache: UserCache::default(),
            tls: TlsConfig::default(),
        }
    }
}

/// Keys of Apache's `rmq-proxy.json` a sluice deployment may carry that this proxy takes
/// without using (cluster mode: there is one cluster behind it, and no remoting listener yet).
pub const ACCEPTED_UNUSED_KEYS: &[&str] = &[
    "proxyMode",
    "proxyName",
    "proxyClusterName",
    "remotingListenPort",
    "localServeAddr",
    "remotingAccessAddr",
    "enablePrintJstack",
    "grpcShutdownTimeSeconds",
];

impl ProxyConfig {
    /// Loads the settings: `file` (JSON as Apache's, else TOML or properties) and then
    /// `overrides` (`key=value`).
    ///
    /// # Errors
    /// The file cannot be read or parsed, or a value does not fit its key.
    pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<Self, SettingsError> {
        let json = file.filter(|p| {
            p.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        });
        let settings = match json {
            Some(path) => {
                let mut settings = Settings::from_pairs(json_pairs(path)?);
                for o in overrides {
                    let (k, v) = o
                        .split_once('=')
                        .ok_or_else(|| SettingsError::Override(o.clone()))?;
                    settings.set(k.trim(), v.trim());
                }
                settings
            }
            None => Settings::load(file, overrides)?,
        };
        let mut config: ProxyConfig = settings.deserialize()?;
        config.auth = settings.deserialize()?;
        config.user_cache = settings.deserialize()?;
        config.tls = settings.deserialize()?;
        settings.accept_keys(ACCEPTED_UNUSED_KEYS);
        settings.accept_keys(auth::config::ACCEPTED_UNUSED_KEYS);
        settings.warn_unknown();
        Ok(config)
    }

    /// The message limits of sends.
    #[must_use]
    pub fn limits(&self) -> Limits {
        Limits {
            max_message_size: self.max_message_size,
            enable_message_body_empty_check: self.enable_message_body_empty_check,
            max_user_property_size: self.max_user_property_size,
            user_property_max_num: self.user_property_max_num,
            max_message_group_size: self.max_message_group_size,
            max_delay_time_mills: self.max_delay_time_mills,
            max_transaction_recovery_second: self.max_transaction_recovery_second,
        }
    }

    /// The limit of one send to a broker.
    #[must_use]
    pub fn send_timeout(&self) -> Duration {
        Duration::from_millis(self.send_message_timeout_millis)
    }

    /// The name servers, in order.
    #[must_use]
    pub fn namesrv_list(&self) -> Vec<String> {
        remoting::net::split_addr_list(&self.namesrv_addr)
    }
}

/// The top-level keys of a JSON object file as text (strings as they are, other values as
/// JSON).
fn json_pairs(path: &Path) -> Result<BTreeMap<String, String>, SettingsError> {
    let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read {
        path: path.to_owned(),
        source,
    })?;
    let parse = |reason: String| SettingsError::Parse {
        path: path.to_owned(),
        reason,
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| parse(e.to_string()))?;
    let serde_json::Value::Object(map) = value else {
        return Err(parse("not a JSON object".to_owned()));
    };
    Ok(map
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            (k, text)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apache_json_file_and_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rmq-proxy.json");
        std::fs::write(
            &file,
            r#"{"rocketMQClusterName": "DefaultCluster", "namesrvAddr": "127.0.0.1:9876",
                "grpcServerPort": 18081, "enableTopicMessageTypeCheck": false}"#,
        )
        .unwrap();
        let config = ProxyConfig::load(Some(&file), &["grpcServerPort=0".to_owned()]).unwrap();
        assert_eq!(config.namesrv_addr, "127.0.0.1:9876");
        assert_eq!(config.grpc_server_port, 0);
        assert!(!config.enable_topic_message_type_check);
        assert_eq!(config.max_message_size, 4 * 1024 * 1024);

        let defaults = ProxyConfig::load(None, &[]).unwrap();
        assert_eq!(defaults.grpc_server_port, 8081);
        assert_eq!(defaults.transaction_heartbeat_period_second, 20);
        let fast =
            ProxyConfig::load(None, &["transactionHeartbeatPeriodSecond=2".to_owned()]).unwrap();
        assert_eq!(fast.transaction_heartbeat_period_second, 2);
        assert_eq!(defaults.limits(), Limits::default());
        assert!(!defaults.auth.authentication_enabled);
        assert_eq!(defaults.tls, TlsConfig::default());
        assert_eq!(
            defaults.tls.tls_server_mode,
            crate::tls::TlsMode::Permissive
        );
    }

    #[test]
    fn auth_and_tls_keys() {
        let config = ProxyConfig::load(
            None,
            &[
                "authenticationEnabled=true".to_owned(),
                "authorizationEnabled=true".to_owned(),
                r#"innerClientAuthenticationCredentials={"accessKey":"rocketmq","secretKey":"12345678"}"#.to_owned(),
                "userCacheRefreshSecond=5".to_owned(),
                "tlsServerMode=enforcing".to_owned(),
                "tlsTestModeEnable=false".to_owned(),
                "tlsCertPath=/etc/rocketmq/tls/rocketmq.crt".to_owned(),
                "rocketMQClusterName=C1".to_owned(),
            ],
        )
        .unwrap();
        assert!(config.auth.authentication_enabled && config.auth.authorization_enabled);
        assert_eq!(
            config.auth.inner_credentials().unwrap().unwrap().access_key,
            "rocketmq"
        );
        assert_eq!(config.user_cache.ttl(), Duration::from_secs(5));
        assert_eq!(config.tls.tls_server_mode, crate::tls::TlsMode::Enforcing);
        assert!(!config.tls.tls_test_mode_enable);
        assert_eq!(config.rocket_mq_cluster_name, "C1");
    }
}
