//! `HaService`: the one handle the broker holds. It starts the master side (event
//! loop + group transfer) or the slave side (HA client) on named threads, answers
//! sync-replication waits and status requests, and stops everything, joining the
//! threads, as often as asked.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tracing::{error, info};

use crate::accept::{MasterLoop, MasterShared};
use crate::client::{ClientLoop, ClientShared};
use crate::config::HaConfig;
use crate::error::{HaError, Result};
use crate::group_transfer::{GroupTransfer, ReplicaStatus, SlaveWait};
use crate::log::HaLog;
use crate::status::{HaStatus, MasterStatus};

/// How long [`HaService::resync_from`] waits for the client thread to cut the log.
const RESYNC_ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Which side a service runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaRole {
    /// Serves slaves (ASYNC_MASTER / SYNC_MASTER).
    Master,
    /// Follows a master (SLAVE).
    Slave,
}

#[derive(Debug)]
struct Master {
    shared: Arc<MasterShared>,
    group: Arc<GroupTransfer>,
    listen_addr: SocketAddr,
}

#[derive(Debug)]
struct Slave {
    shared: Arc<ClientShared>,
}

#[derive(Debug)]
enum Side {
    Master(Master),
    Slave(Slave),
}

/// Master/slave replication of one broker over RocketMQ's classic HA protocol.
///
/// Role switch: stop this service and start one of the other role (a new master
/// starts with a fresh `push2SlaveMaxOffset` and slave table).
#[derive(Debug)]
pub struct HaService {
    side: Side,
    config: HaConfig,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl HaService {
    /// Starts the master side on `listener` (bound to `haListenPort`, e.g. with
    /// [`listen`](crate::listen)): accepts slaves, streams the log to them, and
    /// tracks their acks for [`wait_for_slave`](Self::wait_for_slave).
    ///
    /// # Errors
    /// Invalid config, or the poll, the listener or a thread cannot be set up.
    pub fn start_master(
        mut config: HaConfig,
        log: Arc<dyn HaLog>,
        listener: std::net::TcpListener,
    ) -> Result<HaService> {
        config.sanitize()?;
        let group = Arc::new(GroupTransfer::start(
            config.ha_max_gap_not_in_sync,
            config.slave_timeout(),
        )?);
        let (lp, shared) = MasterLoop::new(listener, log, config.clone(), Arc::clone(&group))?;
        let listen_addr = lp.local_addr();
        let thread = std::thread::Builder::new()
            .name("ha-master".into())
            .spawn(move || lp.run())
            .inspect_err(|_| group.shutdown())?;
        info!(listen = %listen_addr, "ha master service started");
        Ok(HaService {
            side: Side::Master(Master {
                shared,
                group,
                listen_addr,
            }),
            config,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Starts the slave side following `master_addr` (`host:port` of the master's HA
    /// port), or `haMasterAddress` from `config` when `None`; with neither it waits
    /// for [`update_master_address`](Self::update_master_address).
    ///
    /// # Errors
    /// Invalid config, or the poll or the thread cannot be set up.
    pub fn start_slave(
        mut config: HaConfig,
        log: Arc<dyn HaLog>,
        master_addr: Option<String>,
    ) -> Result<HaService> {
        config.sanitize()?;
        let addr = master_addr.or_else(|| config.ha_master_address.clone());
        let (lp, shared) = ClientLoop::new(&config, log, addr)?;
        let thread = std::thread::Builder::new()
            .name("ha-client".into())
            .spawn(move || lp.run())?;
        info!("ha slave service started");
        Ok(HaService {
            side: Side::Slave(Slave { shared }),
            config,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Stops the service: closes every connection, completes pending slave waits
    /// with SLAVE_NOT_AVAILABLE, and returns once the threads have exited.
    /// Idempotent; also done on drop.
    pub fn stop(&self) {
        // Held until the threads are joined, so a concurrent `stop` also returns only
        // then (the threads never touch this lock).
        let mut guard = self.thread.lock();
        let Some(thread) = guard.take() else {
            return;
        };
        match &self.side {
            Side::Master(m) => m.shared.stop(),
            Side::Slave(s) => s.shared.stop(),
        }
        if thread.join().is_err() {
            error!("ha thread panicked");
        }
        if let Side::Master(m) = &self.side {
            m.group.shutdown();
        }
        drop(guard);
        info!(role = ?self.role(), "ha service stopped");
    }

    /// Whether the service runs (not stopped).
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.thread.lock().is_some()
    }

    /// The side this service runs.
    #[must_use]
    pub fn role(&self) -> HaRole {
        match self.side {
            Side::Master(_) => HaRole::Master,
            Side::Slave(_) => HaRole::Slave,
        }
    }

    /// The master's bound HA address (`None` on a slave).
    #[must_use]
    pub fn listen_addr(&self) -> Option<SocketAddr> {
        match &self.side {
            Side::Master(m) => Some(m.listen_addr),
            Side::Slave(_) => None,
        }
    }

    /// Sync replication: resolves once a slave has acknowledged `offset` (the end of
    /// the put), FLUSH_SLAVE_TIMEOUT after `slaveTimeout`, SLAVE_NOT_AVAILABLE at once
    /// without a usable slave. Runtime-agnostic; no thread blocks while it waits. On a
    /// slave or a stopped service: SLAVE_NOT_AVAILABLE.
    pub fn wait_for_slave(&self, offset: u64) -> SlaveWait {
        self.wait_for_slave_with_timeout(offset, self.config.slave_timeout())
    }

    /// As [`wait_for_slave`](Self::wait_for_slave) with an explicit timeout (4.9 used
    /// `syncFlushTimeout`).
    pub fn wait_for_slave_with_timeout(&self, offset: u64, timeout: Duration) -> SlaveWait {
        match &self.side {
            Side::Master(m) => m.group.wait_for_slave_with_timeout(offset, timeout),
            Side::Slave(_) => SlaveWait::ready(ReplicaStatus::SlaveNotAvailable),
        }
    }

    /// RocketMQ's `isSlaveOK(masterPutWhere)`: whether a wait for `offset` would be
    /// attempted rather than answered SLAVE_NOT_AVAILABLE.
    #[must_use]
    pub fn is_slave_ok(&self, offset: u64) -> bool {
        match &self.side {
            Side::Master(m) => self.is_running() && m.group.is_slave_ok(offset),
            Side::Slave(_) => false,
        }
    }

    /// `push2SlaveMaxOffset`: the highest offset any slave acknowledged (0 on a slave).
    #[must_use]
    pub fn push2_slave_max_offset(&self) -> u64 {
        match &self.side {
            Side::Master(m) => m.group.push2_slave_max_offset(),
            Side::Slave(_) => 0,
        }
    }

    /// Sets the master's HA address (from the name server's registration answer or
    /// `haMasterAddress`); a different address drops the current connection and
    /// connects to the new one at once. Ignored on a master.
    pub fn update_master_address(&self, addr: &str) {
        if let Side::Slave(s) = &self.side {
            let addr = addr.trim();
            s.shared
                .set_master_address((!addr.is_empty()).then(|| addr.to_owned()));
        }
    }

    /// Slave: drops the master connection, cuts the local log back to `offset`
    /// ([`HaLog::truncate`], on the client thread, so no replicated append races
    /// it), and follows the master from there. For a slave whose tail the master
    /// lacks (see [`ClientStatus::divergence`](crate::ClientStatus::divergence)), or
    /// a role switch to a new master.
    ///
    /// # Errors
    /// Not a running slave, or the log refused the cut.
    pub fn resync_from(&self, offset: u64) -> Result<()> {
        let Side::Slave(s) = &self.side else {
            return Err(HaError::NotAvailable("resync needs a slave"));
        };
        if !self.is_running() {
            return Err(HaError::NotAvailable("ha client stopped"));
        }
        let rx = s.shared.request_resync(offset);
        let deadline = Instant::now() + RESYNC_ANSWER_TIMEOUT;
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(r) => return r.map_err(HaError::Log),
                Err(RecvTimeoutError::Timeout)
                    if self.is_running() && Instant::now() < deadline => {}
                Err(_) => return Err(HaError::NotAvailable("ha client did not answer")),
            }
        }
    }

    /// A snapshot for admin requests.
    #[must_use]
    pub fn status(&self) -> HaStatus {
        if !self.is_running() {
            return HaStatus::Stopped;
        }
        match &self.side {
            Side::Master(m) => HaStatus::Master(MasterStatus {
                listen_addr: m.listen_addr,
                push2_slave_max_offset: m.group.push2_slave_max_offset(),
                slaves: m.group.slaves(),
            }),
            Side::Slave(s) => HaStatus::Slave(s.shared.status()),
        }
    }
}

impl Drop for HaService {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}

    #[test]
    fn handles_cross_threads_and_tasks() {
        assert_send_sync::<HaService>();
        assert_send_sync::<GroupTransfer>();
        assert_send::<SlaveWait>();
        assert_send_sync::<HaStatus>();
    }

    #[test]
    fn invalid_config_is_refused_before_anything_starts() {
        let log: Arc<dyn HaLog> = crate::test_util::MemLog::new(1024).dyn_log();
        let cfg = HaConfig {
            ha_send_heartbeat_interval: 0,
            ..HaConfig::default()
        };
        assert!(matches!(
            HaService::start_slave(cfg, log, Some("127.0.0.1:1".into())),
            Err(HaError::Config(_))
        ));
    }
}
