//! The broker's role and its state machine: master (brokerId 0) or slave, and the
//! switches between them (sluice's SLUICE_SWITCH_ROLE, see `remoting::code`). The role
//! owns what follows it: the master-only services (schedule, timer delivery, transaction check-back,
//! POP revive)
//! start and stop here and nowhere else, the HA service changes side here, and the
//! name-server registration learns the broker's identity from here.
//!
//! - Slave → master ([`promote`]): bind the HA port, fence the old master and catch up
//!   with it (a planned switchover), stop following, cut a partial tail, start the HA
//!   master service, record the promotion point, take writes, start the master-only
//!   services, register as brokerId 0. Every step that can fail comes before anything a
//!   failure would have to undo; a failure leaves the read-only slave it was.
//! - Master → slave ([`demote`]): stop taking writes and the master-only services
//!   first (a demotion failing half way leaves a read-only slave, never a second
//!   writable master), unfence the new master if this broker's promotion fenced it,
//!   cut the log back to the new master's promotion point, follow it, register with a
//!   slave id.
//! - FENCE ([`fence`]): what a promoting slave asks of its master.
//! - [`Role::follow`]: a slave learning a (new) master from the name server.
//!
//! Switches are serialised by one lock and idempotent, so racing requests leave one
//! consistent role and at most one schedule service running.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use remoting::protocol::role::{HaStatusBody, SwitchResult, SwitchRoleRequestHeader, SwitchTarget};
use tracing::info;

use crate::broker::Broker;
use crate::pop::PopService;
use crate::schedule::ScheduleService;
use crate::timer::TimerService;
use crate::transaction::check::TransactionCheckService;

mod demote;
mod fence;
mod follow;
mod peer;
mod promote;

pub use peer::fetch_status;

/// Why a switch was refused or failed; each says what the broker is now.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SwitchError {
    /// The request cannot be carried out as asked (INVALID_PARAMETER).
    #[error("{0}")]
    Invalid(String),
    /// A promotion failed; nothing changed.
    #[error("cannot switch to {to}: {why}; still {role} (brokerId {id}), read-only")]
    StillSlave {
        /// The role asked for.
        to: &'static str,
        /// Why.
        why: String,
        /// The role it keeps.
        role: &'static str,
        /// The broker id it keeps.
        id: i64,
    },
    /// A demotion got as far as a read-only slave, but it does not replicate.
    #[error("now a read-only SLAVE (brokerId {id}) that does not replicate: {why}")]
    NotFollowing {
        /// The slave's id.
        id: i64,
        /// Why.
        why: String,
    },
    /// Another broker could not be asked, or refused (a peer call).
    #[error("{0}")]
    Peer(String),
    /// The store refused a change of writability.
    #[error("{0}")]
    Store(#[from] store::StoreError),
    /// Only a master can be fenced, or run a master's services.
    #[error("{0}")]
    NotMaster(&'static str),
    /// A master without its HA service.
    #[error("{role} without a running HA service: {why}")]
    NoHa {
        /// The master role.
        role: &'static str,
        /// Why.
        why: String,
    },
}

/// The role of one broker: the state machine and the services that follow it.
#[derive(Debug)]
pub struct Role {
    broker: Arc<Broker>,
    /// Delay message delivery (masters).
    schedule: Arc<ScheduleService>,
    /// Transaction check-backs (masters).
    transactions: Arc<TransactionCheckService>,
    /// Timer messages: enqueue on every role, delivery on masters.
    timer: Arc<TimerService>,
    /// POP: queue state on every role, revive on masters.
    pop: Arc<PopService>,
    /// Serialises switches.
    switch_lock: tokio::sync::Mutex<()>,
    /// Fenced for a slave's promotion: takes no writes and is not registered with the
    /// name servers, so routes lead to the new master only.
    fenced: AtomicBool,
}

impl Role {
    /// The role of `broker` as configured, with its master-only services stopped; the
    /// timer files are opened and recovered here.
    ///
    /// # Errors
    /// The timer files cannot be opened.
    pub fn new(broker: Arc<Broker>) -> Result<Arc<Self>, store::StoreError> {
        let schedule =
            ScheduleService::new(Arc::clone(&broker.store), Arc::clone(&broker.delay_offsets));
        broker.store.add_dispatch_listener(schedule.listener());
        let timer = TimerService::open(Arc::clone(&broker.store))?;
        broker.store.add_dispatch_listener(timer.listener());
        let pop = PopService::new(Arc::clone(&broker), Arc::clone(&timer));
        Ok(Arc::new(Role {
            broker,
            schedule,
            transactions: TransactionCheckService::new(),
            timer,
            pop,
            switch_lock: tokio::sync::Mutex::new(()),
            fenced: AtomicBool::new(false),
        }))
    }

    /// The broker.
    #[must_use]
    pub fn broker(&self) -> &Arc<Broker> {
        &self.broker
    }

    /// The schedule (delay) service.
    #[must_use]
    pub fn schedule(&self) -> &Arc<ScheduleService> {
        &self.schedule
    }

    /// The timer service.
    #[must_use]
    pub fn timer(&self) -> &Arc<TimerService> {
        &self.timer
    }

    /// POP consumption's state and its revive service.
    #[must_use]
    pub fn pop(&self) -> &Arc<PopService> {
        &self.pop
    }

    /// The transaction check-back service.
    #[must_use]
    pub fn transactions(&self) -> &Arc<TransactionCheckService> {
        &self.transactions
    }

    /// Whether this master is fenced (out of the routes, no writes).
    #[must_use]
    pub fn is_fenced(&self) -> bool {
        self.fenced.load(Ordering::Acquire)
    }

    /// At start: a master runs its master-only services.
    pub fn start(&self) {
        if self.broker.role().is_master() {
            self.start_master_services();
        }
    }

    /// At shutdown: stops the master-only services.
    pub fn stop(&self) {
        self.stop_master_services();
    }

    /// SLUICE_SWITCH_ROLE: one switch at a time, timed.
    ///
    /// # Errors
    /// The switch was refused or failed; the error says what the broker is now.
    pub async fn switch(
        self: &Arc<Self>,
        request: &SwitchRoleRequestHeader,
    ) -> Result<SwitchResult, SwitchError> {
        let _guard = self.switch_lock.lock().await;
        let started = Instant::now();
        let mut result = match request.role {
            SwitchTarget::Master => promote::run(self, request.broker_role).await?,
            SwitchTarget::Slave => demote::run(self, request).await?,
            SwitchTarget::Fence => {
                return Err(SwitchError::Invalid(
                    "FENCE answers an HA status; use Role::fence".into(),
                ));
            }
        };
        result.took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        info!(role = %result.role, id = result.broker_id, changed = result.changed, took_ms = result.took_ms, "role switch done");
        Ok(result)
    }

    /// FENCE (see [`fence`]), under the switch lock.
    ///
    /// # Errors
    /// Not a master, or the store refused to stop taking writes.
    pub async fn fence(self: &Arc<Self>) -> Result<HaStatusBody, SwitchError> {
        let _guard = self.switch_lock.lock().await;
        fence::run(self).await
    }

    /// SLUICE_HA_STATUS: the role, the log end, the promotion point and the HA state.
    #[must_use]
    pub fn status(&self) -> HaStatusBody {
        let broker = &self.broker;
        let config = broker.config();
        let mut body = HaStatusBody {
            role: config.broker_role.name().to_owned(),
            broker_id: config.broker_id,
            max_offset: broker.store.commit_log().max_offset().0,
            promoted_at_offset: broker.replication.promoted_at(),
            promotion_epoch: broker.replication.promotion_epoch(),
            ha_address: format!(
                "{}:{}",
                config.broker_ip2(),
                broker.replication.listen_addr().port()
            ),
            fenced: self.is_fenced(),
            ..HaStatusBody::default()
        };
        drop(config);
        match broker.replication.status() {
            ha::HaStatus::Master(m) => {
                body.slave_ack_offset = Some(m.push2_slave_max_offset);
                body.slaves = m.slaves.iter().map(|s| s.addr.to_string()).collect();
            }
            ha::HaStatus::Slave(c) => {
                body.master = c.master_addr.clone();
                body.connected = c.connected.is_some();
            }
            _ => {}
        }
        body
    }

    fn start_master_services(&self) {
        self.schedule.start(&self.broker);
        self.timer.start_delivery(&self.broker);
        self.transactions.start(&self.broker);
        self.pop.start_revive();
    }

    fn stop_master_services(&self) {
        self.schedule.stop();
        self.timer.stop_delivery();
        self.transactions.stop();
        self.pop.stop_revive();
    }

    /// Registers the broker's current identity with every name server.
    async fn register(&self) {
        self.broker
            .namesrv
            .register(&self.broker.identity(), self.broker.topics.wrapper())
            .await;
    }

    /// What the broker is now, for a switch's answer.
    fn result(&self, truncated_to: Option<u64>, changed: bool) -> SwitchResult {
        let c = self.broker.config();
        SwitchResult {
            role: c.broker_role.name().to_owned(),
            broker_id: c.broker_id,
            truncated_to,
            changed,
            fenced: None,
            took_ms: 0,
        }
    }
}
