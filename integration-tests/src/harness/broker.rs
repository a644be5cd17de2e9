//! A running `mqbroker`, started from `deploy/broker.toml` with its store in a temp dir, on
//! reserved loopback ports (the same ports across restarts, so clients and message ids stay
//! valid), brokerIP1 and bindAddress 127.0.0.1, 16 MiB CommitLog files, registered with a name
//! server — and what tests ask a broker: its HA status (SLUICE_HA_STATUS), its topics, a queue's
//! max offset, where the name server lists it.
//!
//! A broker is either the plain master `broker-a` of `deploy/broker.toml`
//! ([`start`](BrokerProcess::start)) or one broker of the master/slave pair [`HA_BROKER_NAME`]
//! with a role and an id ([`start_as`](BrokerProcess::start_as),
//! [`start_master`](BrokerProcess::start_master)); role and id change across restarts
//! ([`restart_as`](BrokerProcess::restart_as)), store, ports and logs stay.
//!
//! Four consecutive loopback ports are reserved, `listenPort - 2 ..= listenPort + 1`:
//! `haListenPort` is `listenPort + 1` as RocketMQ's `BrokerStartup` sets it, and
//! `listenPort - 2` is where an Apache broker opens its "VIP" channel (a Java slave copies its
//! master's topic table from there), kept free for tests that stand one in.
//!
//! ```no_run
//! use std::time::Duration;
//! use integration_tests::harness::{BrokerProcess, NamesrvProcess};
//!
//! let ns = NamesrvProcess::start();
//! let master = BrokerProcess::start_master("a", &ns.addr(), "SYNC_MASTER", &[]);
//! let slave = BrokerProcess::start_as("b", &ns.addr(), "SLAVE", 1, &[]);
//! slave.wait_following(&master, Duration::from_secs(10)).unwrap();
//! ```

use std::path::PathBuf;
use std::time::Duration;

use super::build::{binary, workspace_root};
use super::child::{ChildProcess, ProcessSpec, READY_TIMEOUT};
use super::dir::TestDir;
use super::mqadmin::{MqadminOutput, create_topic, mqadmin};
use super::wait::wait_until;
use crate::client::try_request;

/// Name of the broker pair every broker started with a role belongs to (`deploy/broker.toml`'s).
pub const HA_BROKER_NAME: &str = "broker-a";

/// A running `mqbroker`. Stopped (SIGTERM, then SIGKILL) when dropped.
#[derive(Debug)]
pub struct BrokerProcess {
    process: ChildProcess,
    port: u16,
    /// `grpcServerPort` when the gRPC endpoint (local mode) is on.
    grpc_port: Option<u16>,
    namesrv: String,
}

impl BrokerProcess {
    /// Starts the master `broker-a` of `deploy/broker.toml` registered with `namesrv`.
    ///
    /// # Panics
    /// When it does not start (with its logs).
    #[must_use]
    pub fn start(namesrv: &str) -> Self {
        Self::start_with(namesrv, &[])
    }

    /// Starts it with extra `-o key=value` settings (they win over the defaults set here,
    /// e.g. `("flushDiskType", "SYNC_FLUSH")`).
    ///
    /// # Panics
    /// When it does not start (with its logs).
    #[must_use]
    pub fn start_with(namesrv: &str, settings: &[(&str, &str)]) -> Self {
        Self::launch("broker", "mqbroker", namesrv, &[], settings)
    }

    /// Starts the master `broker-a` with the gRPC endpoint on (`enableGrpcProxy=true`, local
    /// mode) on a reserved port, and extra `-o` settings.
    ///
    /// # Panics
    /// When it does not start (with its logs).
    #[must_use]
    pub fn start_with_grpc(
        namesrv: &str,
        settings: &[(&str, &str)],
        proxy_settings: &[(&str, &str)],
    ) -> Self {
        let grpc = crate::ports::reserve();
        let port = grpc.port().to_string();
        let mut all = vec![
            ("enableGrpcProxy", "true"),
            ("grpcServerPort", port.as_str()),
        ];
        all.extend_from_slice(settings);
        let mut broker = Self::launch_with(
            "broker-grpc",
            "mqbroker",
            namesrv,
            &[],
            &all,
            proxy_settings,
            vec![grpc],
        );
        broker.grpc_port = Some(port.parse().expect("a port"));
        broker
    }

    /// Starts broker `label` (names its directory and logs) of pair [`HA_BROKER_NAME`] with
    /// `brokerRole=role`, `brokerId=broker_id` and extra `-o` settings, registered with
    /// `namesrv`.
    ///
    /// A slave learns its master from its registrations, every `registerNameServerPeriod`
    /// (30 s): start it after its master is registered ([`start_master`](Self::start_master)
    /// waits for that) or it replicates nothing for up to 30 s.
    ///
    /// # Panics
    /// When it does not start (with its logs).
    #[must_use]
    pub fn start_as(
        label: &str,
        namesrv: &str,
        role: &str,
        broker_id: i64,
        settings: &[(&str, &str)],
    ) -> Self {
        let identity = [
            ("brokerName", HA_BROKER_NAME.to_owned()),
            ("brokerRole", role.to_owned()),
            ("brokerId", broker_id.to_string()),
        ];
        Self::launch(
            &format!("ha-{label}"),
            &format!("mqbroker-{label}"),
            namesrv,
            &identity,
            settings,
        )
    }

    /// Starts a master (`role` SYNC_MASTER or ASYNC_MASTER, id 0) and waits until the name
    /// server lists it, so slaves started next learn it at their first registration.
    ///
    /// # Panics
    /// When it does not start or register within [`READY_TIMEOUT`].
    #[must_use]
    pub fn start_master(label: &str, namesrv: &str, role: &str, settings: &[(&str, &str)]) -> Self {
        let master = Self::start_as(label, namesrv, role, 0, settings);
        let addr = master.addr();
        assert!(
            wait_until(READY_TIMEOUT, || registered_ids(namesrv, &addr)
                .contains(&0)),
            "{addr} did not register as master with {namesrv}"
        );
        master
    }

    fn launch(
        dir_prefix: &str,
        name: &str,
        namesrv: &str,
        identity: &[(&str, String)],
        settings: &[(&str, &str)],
    ) -> Self {
        Self::launch_with(
            dir_prefix,
            name,
            namesrv,
            identity,
            settings,
            &[],
            Vec::new(),
        )
    }

    fn launch_with(
        dir_prefix: &str,
        name: &str,
        namesrv: &str,
        identity: &[(&str, String)],
        settings: &[(&str, &str)],
        proxy_settings: &[(&str, &str)],
        mut extra_ports: Vec<crate::ports::PortReservation>,
    ) -> Self {
        // Free for the broker now; reserved until it stops (kept by its process handle).
        for p in &mut extra_ports {
            p.release_listener();
        }
        let config = workspace_root().join("deploy").join("broker.toml");
        let mut port = 0;
        let mut process = ChildProcess::start_on_free_ports(|| {
            let dir = TestDir::new(dir_prefix);
            // listenPort - 2 (the VIP channel) ..= listenPort + 1 (HA).
            let ports = crate::ports::reserve_consecutive(4);
            port = ports[2].port();
            let mut spec = ProcessSpec::new(name, binary("broker", "mqbroker"))
                .arg("-c")
                .arg(&config)
                .arg("-n")
                .arg(namesrv)
                .setting("listenPort", port)
                .setting("haListenPort", port + 1)
                .setting("bindAddress", "127.0.0.1")
                .setting("brokerIP1", "127.0.0.1")
                .setting("storePathRootDir", dir.path().join("store").display())
                .setting("mappedFileSizeCommitLog", 16 * 1024 * 1024);
            for (key, value) in identity {
                spec = spec.setting(key, value);
            }
            for (key, value) in settings {
                spec = spec.setting(key, value);
            }
            if !proxy_settings.is_empty() {
                // The gRPC endpoint's settings, as Apache's rmq-proxy.json (`-pc`).
                let file = dir.path().join("rmq-proxy.json");
                let json: serde_json::Map<String, serde_json::Value> = proxy_settings
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), serde_json::Value::String((*v).to_owned())))
                    .collect();
                std::fs::write(&file, serde_json::Value::Object(json).to_string())
                    .expect("rmq-proxy.json written");
                spec = spec.arg("-pc").arg(&file);
            }
            (spec, dir, ports)
        });
        process.keep_ports(extra_ports);
        BrokerProcess {
            process,
            port,
            grpc_port: None,
            namesrv: namesrv.to_owned(),
        }
    }

    /// `127.0.0.1:grpcServerPort`: the gRPC SDKs' endpoint, when started
    /// [`with_grpc`](Self::start_with_grpc).
    ///
    /// # Panics
    /// When the endpoint is off.
    #[must_use]
    pub fn grpc_endpoint(&self) -> String {
        format!(
            "127.0.0.1:{}",
            self.grpc_port
                .expect("the broker was started with its gRPC endpoint")
        )
    }

    /// What it logged so far (stdout and stderr).
    #[must_use]
    pub fn log(&self) -> String {
        format!("{}{}", self.process.stdout(), self.process.stderr())
    }

    /// `127.0.0.1:listenPort`.
    #[must_use]
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:haListenPort`.
    #[must_use]
    pub fn ha_addr(&self) -> String {
        format!("127.0.0.1:{}", self.port + 1)
    }

    /// `listenPort`.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The store root.
    #[must_use]
    pub fn store_dir(&self) -> PathBuf {
        self.process.dir().join("store")
    }

    /// `<store>/commitlog`.
    #[must_use]
    pub fn commit_log_dir(&self) -> PathBuf {
        self.store_dir().join("commitlog")
    }

    /// The process handle (logs, stop, kill, restart).
    #[must_use]
    pub fn process(&mut self) -> &mut ChildProcess {
        &mut self.process
    }

    /// The process handle, read only (logs).
    #[must_use]
    pub fn process_ref(&self) -> &ChildProcess {
        &self.process
    }

    /// SIGKILL, at once.
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Stops it and starts it again on the same store and ports.
    ///
    /// # Panics
    /// When it does not come back.
    pub fn restart(&mut self) {
        self.process.restart();
    }

    /// Stops it (if running) and starts it again on the same store, ports and logs as
    /// `brokerRole=role`, `brokerId=broker_id` (later `-o` settings win).
    ///
    /// # Panics
    /// When it does not come back.
    pub fn restart_as(&mut self, role: &str, broker_id: i64) {
        self.process.restart_with(|spec| {
            for setting in [
                format!("brokerRole={role}"),
                format!("brokerId={broker_id}"),
            ] {
                spec.args.push("-o".into());
                spec.args.push(setting.into());
            }
        });
    }

    /// Its SLUICE_HA_STATUS.
    ///
    /// # Errors
    /// It cannot be reached or does not answer.
    pub fn ha_status(&self) -> Result<HaStatus, String> {
        ha_status(&self.addr())
    }

    /// Waits until it is a connected slave of `master` holding everything the master has
    /// (same CommitLog max offset, acknowledged by the master). Call while nothing is sent.
    ///
    /// # Errors
    /// The last statuses seen, when that does not happen within `timeout`.
    pub fn wait_following(&self, master: &BrokerProcess, timeout: Duration) -> Result<(), String> {
        wait_caught_up(&master.addr(), &self.addr(), &master.ha_addr(), timeout)
    }

    /// Runs our `mqadmin` with `args` and `-n` this broker's name server.
    #[must_use]
    pub fn mqadmin(&self, args: &[&str]) -> MqadminOutput {
        mqadmin(&self.namesrv, args)
    }

    /// [`create_topic`] through this broker's name server.
    pub fn create_topic(&self, topic: &str, queues: u32) {
        create_topic(&self.namesrv, topic, queues);
    }

    /// Whether `topic` is in its topic table (GET_ALL_TOPIC_CONFIG); false when it cannot be
    /// asked.
    #[must_use]
    pub fn has_topic(&self, topic: &str) -> bool {
        broker_has_topic(&self.addr(), topic)
    }

    /// Creates `topic` with `queues` read and write queues and the 5.x topic attributes
    /// `attributes` (`+message.type=FIFO`, as Apache's `mqadmin updateTopic -a` sends them)
    /// with UPDATE_AND_CREATE_TOPIC, and waits until the name server routes it.
    ///
    /// # Panics
    /// When the broker refuses it or the route does not appear within 10 s.
    pub fn create_topic_with_attributes(&self, topic: &str, queues: i32, attributes: &str) {
        let header = remoting::protocol::broker::CreateTopicRequestHeader {
            topic: topic.to_owned(),
            default_topic: "TBW102".to_owned(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".to_owned(),
            topic_sys_flag: Some(0),
            order: false,
            attributes: Some(attributes.to_owned()),
            force: None,
        };
        let response = try_request(
            &self.addr(),
            remoting::RemotingCommand::request_with(
                remoting::RequestCode::UpdateAndCreateTopic,
                &header,
            ),
        )
        .unwrap_or_else(|e| panic!("create {topic}: {e}"));
        assert_eq!(
            response.code(),
            0,
            "create {topic}: {:?}",
            response.remark()
        );
        let routed = || {
            let header = remoting::protocol::namesrv::GetRouteInfoRequestHeader {
                topic: topic.to_owned(),
                accept_standard_json_only: Some(true),
            };
            try_request(
                &self.namesrv,
                remoting::RemotingCommand::request_with(
                    remoting::RequestCode::GetRouteinfoByTopic,
                    &header,
                ),
            )
            .is_ok_and(|r| r.code() == 0)
        };
        assert!(
            wait_until(Duration::from_secs(10), routed),
            "the name server never routed {topic}"
        );
    }

    /// Creates (or updates) subscription group `group`, orderly (`consumeMessageOrderly`, as
    /// Apache's `mqadmin updateSubGroup -o true`) or not, with
    /// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP.
    ///
    /// # Panics
    /// When the broker refuses it.
    pub fn create_group(&self, group: &str, orderly: bool) {
        let mut config = remoting::protocol::subscription::SubscriptionGroupConfig::new(group);
        config.consume_message_orderly = orderly;
        let body =
            serde_json::to_vec(&config).unwrap_or_else(|e| panic!("encode group {group}: {e}"));
        let response = try_request(
            &self.addr(),
            remoting::RemotingCommand::request(
                remoting::RequestCode::UpdateAndCreateSubscriptiongroup,
            )
            .with_body(body),
        )
        .unwrap_or_else(|e| panic!("create group {group}: {e}"));
        assert_eq!(
            response.code(),
            0,
            "create group {group}: {:?}",
            response.remark()
        );
    }

    /// The max offset of consume queue (`topic`, `queue_id`) (GET_MAX_OFFSET); `None` when it
    /// cannot be asked.
    #[must_use]
    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> Option<i64> {
        let header = remoting::protocol::broker::GetMaxOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            committed: None,
        };
        let response = try_request(
            &self.addr(),
            remoting::RemotingCommand::request_with(remoting::RequestCode::GetMaxOffset, &header),
        )
        .ok()?;
        if response.code() != 0 {
            return None;
        }
        response.ext("offset")?.parse().ok()
    }
}

/// A broker's SLUICE_HA_STATUS answer (the protocol's own type).
pub use remoting::protocol::role::HaStatusBody as HaStatus;

/// SLUICE_HA_STATUS of the broker at `addr`.
///
/// # Errors
/// It cannot be reached, refuses, or answers something that does not parse.
pub fn ha_status(addr: &str) -> Result<HaStatus, String> {
    let response = try_request(
        addr,
        remoting::RemotingCommand::request(remoting::RequestCode::SluiceHaStatus),
    )?;
    if response.code() != 0 {
        return Err(format!(
            "{addr} answered SLUICE_HA_STATUS with {} {:?}",
            response.code(),
            response.remark()
        ));
    }
    remoting::fastjson::from_slice(&response.body.to_bytes())
        .map_err(|e| format!("SLUICE_HA_STATUS body of {addr}: {e}"))
}

/// Waits until the slave at `slave_addr` follows `master_ha_addr`, is connected, and holds
/// everything the master at `master_addr` has, acknowledged.
///
/// # Errors
/// The last statuses seen, after `timeout`.
pub fn wait_caught_up(
    master_addr: &str,
    slave_addr: &str,
    master_ha_addr: &str,
    timeout: Duration,
) -> Result<(), String> {
    let mut last = String::new();
    let done = wait_until(timeout, || {
        let (m, s) = (ha_status(master_addr), ha_status(slave_addr));
        let ok = match (&m, &s) {
            (Ok(m), Ok(s)) => {
                m.is_master()
                    && !s.is_master()
                    && s.connected
                    && s.master.as_deref() == Some(master_ha_addr)
                    && s.max_offset == m.max_offset
                    && m.slave_ack_offset == Some(m.max_offset)
            }
            _ => false,
        };
        last = format!("master {m:?}\nslave {s:?}");
        ok
    });
    if done {
        Ok(())
    } else {
        Err(format!(
            "slave {slave_addr} did not catch up with {master_addr} in {timeout:?}:\n{last}"
        ))
    }
}

/// The broker ids the name server lists for `addr` in [`HA_BROKER_NAME`] (empty when it cannot
/// be asked).
#[must_use]
pub fn registered_ids(namesrv: &str, addr: &str) -> Vec<i64> {
    let Ok(response) = try_request(
        namesrv,
        remoting::RemotingCommand::request(remoting::RequestCode::GetBrokerClusterInfo),
    ) else {
        return Vec::new();
    };
    let Ok(info) = remoting::fastjson::from_slice::<remoting::protocol::route::ClusterInfo>(
        &response.body.to_bytes(),
    ) else {
        return Vec::new();
    };
    info.broker_addr_table
        .get(HA_BROKER_NAME)
        .map(|b| {
            b.broker_addrs
                .iter()
                .filter(|(_, a)| a.as_str() == addr)
                .map(|(id, _)| *id)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the broker at `addr` (any RocketMQ broker) has `topic` in its topic table
/// (GET_ALL_TOPIC_CONFIG); false when it cannot be asked.
#[must_use]
pub fn broker_has_topic(addr: &str, topic: &str) -> bool {
    try_request(
        addr,
        remoting::RemotingCommand::request(remoting::RequestCode::GetAllTopicConfig),
    )
    .is_ok_and(|r| {
        r.code() == 0
            && String::from_utf8_lossy(&r.body.to_bytes()).contains(&format!("\"{topic}\""))
    })
}
