//! The cluster a client test talks to ([`TestCluster`]): our `mqnamesrv` + one `mqbroker`
//! (master `broker-a`), started for the test and stopped when it ends, or — when
//! `SLUICE_TEST_NAMESRV_ADDR` is set — a cluster already running (Apache RocketMQ's, say), used
//! as it is; and [`unique_name`], the topic and group names tests on such a cluster need.

use crate::spawn::GatedCommand;
use std::env;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::broker::BrokerProcess;
use super::namesrv::NamesrvProcess;
use crate::ports::assert_loopback;

/// Name server of an already running cluster to test instead of starting ours (loopback only).
pub const EXTERNAL_NAMESRV_ENV: &str = "SLUICE_TEST_NAMESRV_ADDR";
/// Address of that cluster's broker (`127.0.0.1:10911`), for tests that need it.
pub const EXTERNAL_BROKER_ENV: &str = "SLUICE_TEST_BROKER_ADDR";
/// A shell command that restarts that broker on its store and returns once it serves again.
pub const EXTERNAL_RESTART_ENV: &str = "SLUICE_TEST_BROKER_RESTART_CMD";

/// The cluster a client test talks to: our `mqnamesrv` + one `mqbroker` (master `broker-a`),
/// started for the test and stopped when this is dropped, or — when [`EXTERNAL_NAMESRV_ENV`] is
/// set — a cluster already running (Apache RocketMQ's, say), used as it is. Tests on an external
/// cluster must pick names of their own ([`unique_name`]): it keeps its topics and groups.
#[derive(Debug)]
pub struct TestCluster {
    // Dropped in this order: the broker first, while the name server still answers.
    broker: Option<BrokerProcess>,
    namesrv: Option<NamesrvProcess>,
    namesrv_addr: String,
    broker_addr: Option<String>,
}

impl TestCluster {
    /// Our cluster with the default broker settings, or the external one.
    ///
    /// # Panics
    /// When our processes do not start, or the external name server is not on loopback.
    #[must_use]
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Our cluster with extra broker settings (`-o key=value`), or the external one (the settings
    /// are then not applied).
    ///
    /// # Panics
    /// As [`TestCluster::start`].
    #[must_use]
    pub fn start_with(broker_settings: &[(&str, &str)]) -> Self {
        if let Some(ns) = env::var(EXTERNAL_NAMESRV_ENV)
            .ok()
            .filter(|v| !v.is_empty())
        {
            assert_loopback(&ns);
            let broker_addr = env::var(EXTERNAL_BROKER_ENV).ok().filter(|v| !v.is_empty());
            if let Some(addr) = &broker_addr {
                assert_loopback(addr);
            }
            return TestCluster {
                namesrv: None,
                broker: None,
                namesrv_addr: ns,
                broker_addr,
            };
        }
        let namesrv = NamesrvProcess::start();
        let broker = BrokerProcess::start_with(&namesrv.addr(), broker_settings);
        TestCluster {
            namesrv_addr: namesrv.addr(),
            broker_addr: Some(broker.addr()),
            namesrv: Some(namesrv),
            broker: Some(broker),
        }
    }

    /// The name server address, as `--namesrv` takes it.
    #[must_use]
    pub fn namesrv(&self) -> &str {
        &self.namesrv_addr
    }

    /// The broker's address (external: only when [`EXTERNAL_BROKER_ENV`] is set).
    #[must_use]
    pub fn broker_addr(&self) -> Option<&str> {
        self.broker_addr.as_deref()
    }

    /// Whether this is an external cluster.
    #[must_use]
    pub fn is_external(&self) -> bool {
        self.broker.is_none()
    }

    /// Our name server process; `None` on an external cluster.
    pub fn namesrv_process(&mut self) -> Option<&mut NamesrvProcess> {
        self.namesrv.as_mut()
    }

    /// Our broker process (logs, kill, ...); `None` on an external cluster.
    pub fn broker_process(&mut self) -> Option<&mut BrokerProcess> {
        self.broker.as_mut()
    }

    /// Restarts the broker on the same store and port: ours through [`BrokerProcess::restart`]
    /// (SIGTERM, then start again and wait until it serves), an external one by running
    /// [`EXTERNAL_RESTART_ENV`] with `sh -c`. Returns false, doing nothing, on an external cluster
    /// without that command.
    ///
    /// # Panics
    /// When the broker does not come back, or the command fails.
    pub fn restart_broker(&mut self) -> bool {
        if let Some(broker) = self.broker.as_mut() {
            broker.restart();
            return true;
        }
        let Some(cmd) = env::var(EXTERNAL_RESTART_ENV)
            .ok()
            .filter(|v| !v.is_empty())
        else {
            return false;
        };
        let out = Command::new("sh")
            .args(["-c", &cmd])
            .gated_output()
            .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
        assert!(
            out.status.success(),
            "{cmd:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        true
    }
}

/// `<prefix>_<hex ms since the epoch><hex pid><counter>`: a topic or group name no earlier run on
/// the same (external) cluster used. Only characters RocketMQ allows in names.
#[must_use]
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}_{ms:x}{:x}{n}", std::process::id())
}
