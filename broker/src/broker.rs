//! `Broker`: the state of one broker node (RocketMQ's BrokerController) — config,
//! store, topic/group/offset tables, client tables, registration — shared by every
//! processor and service.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{RwLock, RwLockReadGuard};
use remoting::client::ClientConfig;
use remoting::{RemotingClient, RequestHook};
use store::{MessageStore, StoreConfig};

use crate::assignment::RequestModes;
use crate::client_manager::{ConsumerManager, ProducerManager};
use crate::cold_read::ColdReadThresholds;
use crate::config::{BrokerConfig, BrokerRole};
use crate::consumer_offset::ConsumerOffsetManager;
use crate::delay_offset::DelayOffsets;
use crate::filter::ConsumerFilters;
use crate::persist;
use crate::pull_hold::PullHold;
use crate::rebalance_lock::RebalanceLockManager;
use crate::registration::{Identity, NamesrvClient};
use crate::replication::Replication;
use crate::stats::BrokerStats;
use crate::subscription_group::SubscriptionGroupManager;
use crate::topic_config::TopicConfigManager;

/// Why a broker could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// Bad settings.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The store could not be opened.
    #[error("message store: {0}")]
    Store(#[from] store::StoreError),
    /// A config/*.json file could not be loaded.
    #[error(transparent)]
    ConfigFile(#[from] remoting::config_file::ConfigFileError),
    /// A port could not be bound.
    #[error("cannot listen on {addr} ({key}): {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The setting that names the port (`listenPort`, `fastListenPort`).
        key: &'static str,
        /// Cause.
        source: std::io::Error,
    },
    /// The HA service of the role could not start.
    #[error(transparent)]
    Replication(#[from] ha::HaError),
    /// The auth settings or metadata cannot be used.
    #[error(transparent)]
    Auth(#[from] auth::AuthError),
}

/// One broker node.
#[derive(Debug)]
pub struct Broker {
    config: RwLock<BrokerConfig>,
    /// The message store.
    pub store: Arc<MessageStore>,
    /// Topics.
    pub topics: TopicConfigManager,
    /// Subscription groups.
    pub groups: SubscriptionGroupManager,
    /// Consumer offsets.
    pub offsets: ConsumerOffsetManager,
    /// Orderly POP batches.
    pub order_info: crate::pop::order_info::ConsumerOrderInfo,
    /// PULL/POP modes of groups (broker-side rebalance).
    pub request_modes: RequestModes,
    /// Delay offsets (the schedule service's progress).
    pub delay_offsets: Arc<DelayOffsets>,
    /// Connected consumers.
    pub consumers: ConsumerManager,
    /// Connected producers.
    pub producers: ProducerManager,
    /// Orderly consumers' queue locks.
    pub locks: RebalanceLockManager,
    /// Consumer groups' SQL92 filters (shared with the dispatch listener that fills
    /// their match bits).
    pub filters: Arc<ConsumerFilters>,
    /// Name server client.
    pub namesrv: NamesrvClient,
    /// Counters.
    pub stats: BrokerStats,
    /// RocketMQ 5's metrics (recording once `metricsExporterType=PROM` turns them on).
    pub metrics: crate::meters::BrokerMetrics,
    /// Pulls held for long polling.
    pub pull_hold: Arc<PullHold>,
    /// Per-group cold-read thresholds (kept and shown, never applied: see the module).
    pub cold_read: ColdReadThresholds,
    /// Master/slave replication.
    pub replication: Replication,
    /// Asks a slave to copy its master's tables at once.
    pub sync_now: tokio::sync::Notify,
    /// Authentication and authorization of every request; users and ACLs.
    pub guard: Arc<auth::Guard>,
    /// Signs this broker's own requests (registration, slave sync, calls to its peer) with
    /// `innerClientAuthenticationCredentials`.
    inner_hook: Option<Arc<dyn RequestHook>>,
    listen_port: u16,
    /// The role the broker was configured with (a switch back to master restores it).
    start_role: BrokerRole,
    store_host: SocketAddr,
    boot_time: i64,
}

impl Broker {
    /// Opens the store and the config tables. `listen_port` is the bound main port
    /// (it is in every message id).
    ///
    /// # Errors
    /// Bad settings, or a store or config file that cannot be opened.
    pub fn open(
        config: BrokerConfig,
        store_config: StoreConfig,
        ha_config: ha::HaConfig,
        listen_port: u16,
    ) -> Result<Self, BrokerError> {
        Broker::open_with_auth(
            config,
            store_config,
            ha_config,
            &auth::AuthConfig::default(),
            listen_port,
        )
    }

    /// [`open`](Self::open), checking requests as `auth_config` says; its users and ACLs
    /// live in `<storePathRootDir>/config` unless `authConfigPath` says otherwise.
    ///
    /// # Errors
    /// As [`open`](Self::open), and auth settings or metadata that cannot be used.
    pub fn open_with_auth(
        mut config: BrokerConfig,
        store_config: StoreConfig,
        mut ha_config: ha::HaConfig,
        auth_config: &auth::AuthConfig,
        listen_port: u16,
    ) -> Result<Self, BrokerError> {
        config.sanitize()?;
        ha_config
            .sanitize()
            .map_err(|e| crate::config::ConfigError::Invalid(e.to_string()))?;
        // The store sanitizes its own settings (once: its warnings are not repeated).
        let store = Arc::new(MessageStore::open(store_config)?);
        let root = store.config().store_path_root_dir.clone();
        if !config.broker_role.is_master() {
            store.set_writable(false)?;
        }
        let ha_listen = format!(
            "{}:{}",
            config.bind_address,
            config.ha_listen_port(listen_port)
        )
        .parse()
        .map_err(|_| {
            crate::config::ConfigError::Invalid(format!("bad bindAddress {}", config.bind_address))
        })?;
        let replication = Replication::new(
            ha_config,
            Arc::clone(&store),
            ha_listen,
            config.server_socket_backlog,
            &root,
        )?;
        let topics =
            TopicConfigManager::load(&config, persist::config_path(&root, persist::TOPICS_JSON))?;
        let groups = SubscriptionGroupManager::load(
            persist::config_path(&root, persist::SUBSCRIPTION_GROUP_JSON),
            config.auto_create_subscription_group,
        )?;
        // Over the recovered CommitLog: a pop's handed-out move counts if its checkpoint
        // survived.
        let offsets = ConsumerOffsetManager::load_over_log(
            persist::config_path(&root, persist::CONSUMER_OFFSET_JSON),
            Some(store.commit_log().max_offset().0),
        )?;
        let request_modes = RequestModes::load(persist::config_path(
            &root,
            persist::MESSAGE_REQUEST_MODE_JSON,
        ))?;
        let order_info = crate::pop::order_info::ConsumerOrderInfo::load(persist::config_path(
            &root,
            persist::CONSUMER_ORDER_INFO_JSON,
        ))?;
        let delay_offsets = Arc::new(DelayOffsets::load(persist::config_path(
            &root,
            persist::DELAY_OFFSET_JSON,
        ))?);
        let guard = Arc::new(auth::Guard::open(
            auth_config,
            &config.broker_cluster_name,
            &root.join("config"),
        )?);
        let inner_hook = guard
            .inner_credentials()
            .map(|c| Arc::new(c) as Arc<dyn RequestHook>);
        let namesrv = NamesrvClient::new(
            RemotingClient::new(ClientConfig::default()).with_hook(inner_hook.clone()),
            config.namesrv_addrs(),
            Duration::from_millis(config.register_broker_timeout_mills),
        );
        let store_host = store_host(&config.broker_ip1(), listen_port);
        let config_role = config.broker_role;
        Ok(Broker {
            config: RwLock::new(config),
            store,
            topics,
            groups,
            offsets,
            request_modes,
            order_info,
            delay_offsets,
            consumers: ConsumerManager::default(),
            producers: ProducerManager::default(),
            locks: RebalanceLockManager::default(),
            filters: Arc::new(ConsumerFilters::default()),
            namesrv,
            stats: BrokerStats::default(),
            metrics: crate::meters::BrokerMetrics::new(),
            pull_hold: Arc::new(PullHold::default()),
            cold_read: ColdReadThresholds::default(),
            sync_now: tokio::sync::Notify::new(),
            guard,
            inner_hook,
            replication,
            start_role: config_role,
            listen_port,
            store_host,
            boot_time: crate::clock::now_ms(),
        })
    }

    /// What this broker signs its own requests with (`None`: it does not sign).
    #[must_use]
    pub fn inner_hook(&self) -> Option<Arc<dyn RequestHook>> {
        self.inner_hook.clone()
    }

    /// A client for this broker's own requests to other servers, signed as
    /// `innerClientAuthenticationCredentials` says.
    #[must_use]
    pub fn inner_client(&self) -> RemotingClient {
        RemotingClient::default().with_hook(self.inner_hook())
    }

    /// The current settings.
    pub fn config(&self) -> RwLockReadGuard<'_, BrokerConfig> {
        self.config.read()
    }

    /// Changes settings at run time (UPDATE_BROKER_CONFIG).
    pub fn update_config(&self, f: impl FnOnce(&mut BrokerConfig)) {
        f(&mut self.config.write());
    }

    /// The bound main port.
    #[must_use]
    pub fn listen_port(&self) -> u16 {
        self.listen_port
    }

    /// `brokerIP1:listenPort`, the store host of every message.
    #[must_use]
    pub fn store_host(&self) -> SocketAddr {
        self.store_host
    }

    /// When the broker started (ms since the epoch).
    #[must_use]
    pub fn boot_time(&self) -> i64 {
        self.boot_time
    }

    /// The current role.
    #[must_use]
    pub fn role(&self) -> BrokerRole {
        self.config.read().broker_role
    }

    /// The role configured at start.
    #[must_use]
    pub fn start_role(&self) -> BrokerRole {
        self.start_role
    }

    /// Who this broker is, for registration.
    #[must_use]
    pub fn identity(&self) -> Identity {
        let c = self.config.read();
        Identity {
            cluster_name: c.broker_cluster_name.clone(),
            broker_name: c.broker_name.clone(),
            broker_addr: c.broker_addr(self.listen_port),
            ha_server_addr: format!("{}:{}", c.broker_ip2(), c.ha_listen_port(self.listen_port)),
            broker_id: c.broker_id,
            permission: c.broker_permission,
            compressed: c.compressed_register,
        }
    }

    /// The store's root directory.
    #[must_use]
    pub fn store_root(&self) -> &Path {
        &self.store.config().store_path_root_dir
    }
}

/// The store host address for message ids: `brokerIP1:listenPort`.
fn store_host(ip: &str, port: u16) -> SocketAddr {
    format!("{ip}:{port}")
        .parse()
        .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], port)))
}
