//! The broker's side of master/slave replication: the `ha` crate's log trait over the
//! store, the HA service for the current role, and the promotion point a new master
//! keeps so that its old master can rejoin as a slave without a divergent tail.
//!
//! A master runs the HA accept service on `haListenPort`; a slave runs the HA client
//! towards its master. A slave promoted to master records where its log ended at
//! promotion (`promotedAtOffset`, persisted in `config/haPromotion.json`): every byte
//! below it came from the old master, so when the old master rejoins as a slave it
//! cuts its own log back to that point — anything past it was never replicated, and
//! the new master's bytes there differ — and then follows. The promotion point is
//! served by the private SLUICE_HA_STATUS request.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ha::{GrowthWait, HaConfig, HaLog, HaService, HaStatus, LogError, SlaveWait};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use store::{MessageStore, PhyOffset, StoreError};
use tracing::{info, warn};

use crate::persist;

/// The store as the HA crate sees it.
#[derive(Debug)]
pub struct StoreLog(pub Arc<MessageStore>);

impl HaLog for StoreLog {
    fn max_offset(&self) -> u64 {
        self.0.commit_log().max_offset().0
    }

    fn min_offset(&self) -> u64 {
        self.0.commit_log().min_offset().0
    }

    fn file_size(&self) -> u64 {
        self.0.config().mapped_file_size_commit_log
    }

    fn read(&self, offset: u64, max_len: usize) -> Option<Bytes> {
        let bytes = self.0.commit_log().read_from(PhyOffset(offset))?;
        Some(bytes.slice(..bytes.len().min(max_len)))
    }

    fn wait_beyond(&self, offset: u64) -> GrowthWait {
        let wait = self
            .0
            .commit_log()
            .readable_watch()
            .wait(offset + 1, Duration::from_secs(3600));
        Box::pin(async move {
            let _ = wait.await;
        })
    }

    fn append(&self, offset: u64, data: &[u8]) -> Result<(), LogError> {
        self.0
            .append_raw(PhyOffset(offset), data)
            .map_err(|e| match e {
                StoreError::OffsetMismatch { requested, actual } => {
                    LogError::OffsetMismatch { requested, actual }
                }
                e => LogError::store(e),
            })
    }

    fn truncate(&self, offset: u64) -> Result<(), LogError> {
        self.0
            .truncate_dirty(PhyOffset(offset))
            .map_err(LogError::store)
    }
}

/// `config/haPromotion.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Promotion {
    /// End of the log when this broker was promoted, if it was.
    promoted_at_offset: Option<u64>,
    /// A random id of that promotion: a slave that already followed this master since
    /// it was promoted has no divergent tail.
    promotion_epoch: Option<u64>,
    /// The promotion epoch of the master this broker last followed as a slave.
    followed_epoch: Option<u64>,
}

/// The promotion state before a change (see [`Replication::set_promoted_at`]).
#[derive(Debug, Clone, Copy)]
pub struct PromotionMark(Promotion);

/// Replication of one broker.
#[derive(Debug)]
pub struct Replication {
    config: HaConfig,
    log: Arc<StoreLog>,
    listen: SocketAddr,
    /// Listen backlog of the HA port (`serverSocketBacklog`).
    backlog: u32,
    service: Mutex<Option<HaService>>,
    promotion: Mutex<Promotion>,
    promotion_path: PathBuf,
}

impl Replication {
    /// Replication over `store`, the HA listener on `listen` (with a listen backlog
    /// of `backlog`) when master.
    ///
    /// # Errors
    /// haPromotion.json exists but does not parse.
    pub fn new(
        config: HaConfig,
        store: Arc<MessageStore>,
        listen: SocketAddr,
        backlog: u32,
        config_root: &std::path::Path,
    ) -> Result<Self, remoting::config_file::ConfigFileError> {
        let promotion_path = persist::config_path(config_root, "haPromotion.json");
        let promotion = persist::load::<Promotion>(&promotion_path)?.unwrap_or_default();
        Ok(Replication {
            config,
            log: Arc::new(StoreLog(store)),
            listen,
            backlog,
            service: Mutex::new(None),
            promotion: Mutex::new(promotion),
            promotion_path,
        })
    }

    /// The HA settings.
    #[must_use]
    pub fn config(&self) -> &HaConfig {
        &self.config
    }

    /// Where the HA listener is bound (running master side), or binds.
    #[must_use]
    pub fn listen_addr(&self) -> SocketAddr {
        self.service
            .lock()
            .as_ref()
            .and_then(HaService::listen_addr)
            .unwrap_or(self.listen)
    }

    /// Whether the master side runs.
    #[must_use]
    pub fn is_master_running(&self) -> bool {
        self.service
            .lock()
            .as_ref()
            .is_some_and(|s| s.role() == ha::HaRole::Master && s.is_running())
    }

    /// Binds the HA listener. A role switch binds first, before anything it would
    /// have to undo: a port that cannot be bound leaves the broker as it was.
    ///
    /// # Errors
    /// The port cannot be bound (the error names the address).
    pub fn bind(&self) -> Result<std::net::TcpListener, ha::HaError> {
        ha::listen(self.listen, self.backlog).map_err(|source| ha::HaError::Bind {
            addr: self.listen,
            source,
        })
    }

    /// Runs the master side, binding its listener (already running: nothing to do).
    ///
    /// # Errors
    /// The HA port cannot be bound, or the service cannot start.
    pub fn start_master(&self) -> Result<(), ha::HaError> {
        if self.is_master_running() {
            return Ok(());
        }
        self.start_master_on(self.bind()?)
    }

    /// Runs the master side on a bound `listener`, stopping a slave side first.
    ///
    /// # Errors
    /// The service cannot start (poll or thread creation).
    pub fn start_master_on(&self, listener: std::net::TcpListener) -> Result<(), ha::HaError> {
        let mut service = self.service.lock();
        if let Some(s) = service.take() {
            s.stop();
        }
        let log: Arc<dyn HaLog> = self.log.clone();
        *service = Some(HaService::start_master(self.config.clone(), log, listener)?);
        info!(listen = %self.listen, "HA master service started");
        Ok(())
    }

    /// Runs the slave side towards `master_ha_addr` (stopping a master side first).
    ///
    /// # Errors
    /// The client could not start.
    pub fn start_slave(&self, master_ha_addr: Option<String>) -> Result<(), ha::HaError> {
        let mut service = self.service.lock();
        if let Some(s) = service.as_ref() {
            if s.role() == ha::HaRole::Slave && s.is_running() {
                if let Some(addr) = master_ha_addr {
                    s.update_master_address(&addr);
                }
                return Ok(());
            }
            s.stop();
        }
        let log: Arc<dyn HaLog> = self.log.clone();
        *service = Some(HaService::start_slave(
            self.config.clone(),
            log,
            master_ha_addr.clone(),
        )?);
        info!(master = ?master_ha_addr, "HA client started");
        Ok(())
    }

    /// Stops whichever side runs.
    pub fn stop(&self) {
        if let Some(s) = self.service.lock().take() {
            s.stop();
        }
    }

    /// A slave learned (another) master HA address.
    pub fn update_master_address(&self, addr: &str) {
        if let Some(s) = self.service.lock().as_ref() {
            if s.role() == ha::HaRole::Slave {
                s.update_master_address(addr);
            }
        }
    }

    /// Resolves when a slave holds everything below `offset` (sync master), or with
    /// FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE. Without a running master side there
    /// is no slave to hold anything: SLAVE_NOT_AVAILABLE, never "nothing to wait for".
    pub fn wait_for_slave(&self, offset: u64) -> SlaveWait {
        match self.service.lock().as_ref() {
            Some(s) if s.role() == ha::HaRole::Master => s.wait_for_slave(offset),
            _ => SlaveWait::ready(ha::ReplicaStatus::SlaveNotAvailable),
        }
    }

    /// RocketMQ's `isSlaveOK`: a running master side has a slave within
    /// `haMaxGapNotInSync` of `offset`, so a wait for it would be attempted.
    #[must_use]
    pub fn is_slave_ok(&self, offset: u64) -> bool {
        self.service
            .lock()
            .as_ref()
            .is_some_and(|s| s.role() == ha::HaRole::Master && s.is_slave_ok(offset))
    }

    /// The HA status.
    #[must_use]
    pub fn status(&self) -> HaStatus {
        self.service
            .lock()
            .as_ref()
            .map_or(HaStatus::Stopped, HaService::status)
    }

    /// Where this broker's log ended when it was promoted, if it was.
    #[must_use]
    pub fn promoted_at(&self) -> Option<u64> {
        self.promotion.lock().promoted_at_offset
    }

    /// The id of this broker's promotion, if it was promoted.
    #[must_use]
    pub fn promotion_epoch(&self) -> Option<u64> {
        self.promotion.lock().promotion_epoch
    }

    /// The promotion epoch of the master this broker last followed.
    #[must_use]
    pub fn followed_epoch(&self) -> Option<u64> {
        self.promotion.lock().followed_epoch
    }

    /// Records a promotion at `offset` (with a fresh epoch), or clears it with `None`
    /// on demotion. Returns what it replaced, for a switch that has to roll back.
    pub fn set_promoted_at(&self, offset: Option<u64>) -> PromotionMark {
        let mut before = PromotionMark(Promotion::default());
        self.update(|p| {
            before = PromotionMark(*p);
            p.promoted_at_offset = offset;
            p.promotion_epoch = offset.map(|_| fastrand::u64(1..));
        });
        before
    }

    /// Puts back what [`set_promoted_at`](Self::set_promoted_at) replaced.
    pub fn restore_promotion(&self, mark: PromotionMark) {
        self.update(|p| *p = mark.0);
    }

    /// The master HA address the slave side follows, if it runs and knows one.
    #[must_use]
    pub fn followed_master(&self) -> Option<String> {
        match self.status() {
            HaStatus::Slave(c) => c.master_addr,
            _ => None,
        }
    }

    /// Records that this slave now follows the master promoted as `epoch`.
    pub fn set_followed_epoch(&self, epoch: Option<u64>) {
        self.update(|p| p.followed_epoch = epoch);
    }

    fn update(&self, f: impl FnOnce(&mut Promotion)) {
        let mut p = self.promotion.lock();
        f(&mut p);
        if let Err(e) = persist::save(&self.promotion_path, &*p) {
            warn!(error = %e, "cannot persist haPromotion.json");
        }
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &Arc<MessageStore> {
        &self.log.0
    }
}
