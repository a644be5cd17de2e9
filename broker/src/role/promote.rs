//! Slave → master, and master → master (the HA service must run; the role may change
//! between SYNC_MASTER and ASYNC_MASTER; a fenced master takes writes again).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use remoting::protocol::role::{MasterRole, SwitchResult};
use store::PhyOffset;
use tracing::{info, warn};

use super::fence::{self, OldMaster};
use super::{Role, SwitchError};
use crate::config::BrokerRole;

/// How long a promotion waits for dispatch to catch up with what was replicated.
const DISPATCH_WAIT: Duration = Duration::from_secs(5);

/// SLUICE_SWITCH_ROLE role=MASTER.
pub(super) async fn run(
    role: &Arc<Role>,
    asked: Option<MasterRole>,
) -> Result<SwitchResult, SwitchError> {
    let broker = &role.broker;
    let target = match asked {
        Some(MasterRole::SyncMaster) => BrokerRole::SYNC_MASTER,
        Some(MasterRole::AsyncMaster) => BrokerRole::ASYNC_MASTER,
        None if broker.start_role().is_master() => broker.start_role(),
        None => broker.config().master_role_on_switch,
    };
    let current = broker.role();
    let current_id = broker.config().broker_id;
    if current.is_master() && current_id == 0 {
        return stay_master(role, current, target).await;
    }
    info!(
        from = current.name(),
        to = target.name(),
        "switching to master"
    );
    let still = |why: String| SwitchError::StillSlave {
        to: target.name(),
        why,
        role: current.name(),
        id: current_id,
    };
    // Everything that can fail comes before anything a failure would have to undo: the
    // HA port first (a slave whose port is taken stays a read-only slave).
    let listener = broker
        .replication
        .bind()
        .map_err(|e| still(e.to_string()))?;
    // A planned switchover: the old master stops acknowledging and this log catches up
    // with it, so nothing it acknowledged is cut when it is demoted.
    let fenced = fence::fence_old_master(role).await.map_err(still)?;
    let following = broker.replication.followed_master();
    broker.replication.stop();
    let resume_following = || async {
        if let Err(e) = broker.replication.start_slave(following.clone()) {
            warn!(error = %e, "cannot restart the HA client after a failed switch");
        }
        if let Some(old) = &fenced {
            old.unfence(broker).await;
        }
    };
    let truncated = match cut_partial_tail(role).await {
        Ok(t) => t,
        Err(why) => {
            resume_following().await;
            return Err(still(why));
        }
    };
    if let Err(e) = broker.replication.start_master_on(listener) {
        resume_following().await;
        return Err(still(format!("cannot start the HA service: {e}")));
    }
    // The store takes writes only once the role that acknowledges them is in place.
    let promoted_at = broker.store.commit_log().max_offset().0;
    let before = broker.replication.set_promoted_at(Some(promoted_at));
    broker.update_config(|c| {
        c.broker_role = target;
        c.broker_id = 0;
    });
    if let Err(e) = broker.store.set_writable(true) {
        broker.update_config(|c| {
            c.broker_role = current;
            c.broker_id = current_id;
        });
        broker.replication.restore_promotion(before);
        resume_following().await;
        return Err(still(format!("the store cannot take writes: {e}")));
    }
    role.start_master_services();
    role.register().await;
    info!(promoted_at, fenced = ?fenced.as_ref().map(|o| &o.addr), "now master");
    let mut done = role.result(truncated, true);
    done.fenced = fenced.map(|OldMaster { addr, .. }| addr);
    Ok(done)
}

/// Dispatches whatever was received and cuts a record left partial by the old master's
/// death, so the log ends on a record boundary. Returns where it was cut, if it was.
async fn cut_partial_tail(role: &Role) -> Result<Option<u64>, String> {
    let store = Arc::clone(&role.broker.store);
    tokio::task::spawn_blocking(move || -> Result<Option<u64>, String> {
        store.wait_dispatched(DISPATCH_WAIT);
        let end = store.reput_from();
        if end < store.commit_log().max_offset().0 {
            store
                .truncate_dirty(PhyOffset(end))
                .map_err(|e| format!("cannot cut the partial tail: {e}"))?;
            return Ok(Some(end));
        }
        Ok(None)
    })
    .await
    .map_err(|e| e.to_string())?
}

/// A master asked to be a master: its HA service must run (started if it does not), the
/// role may change between SYNC_MASTER and ASYNC_MASTER, and a fenced master (whose
/// slave's promotion did not happen) takes writes again.
async fn stay_master(
    role: &Role,
    current: BrokerRole,
    target: BrokerRole,
) -> Result<SwitchResult, SwitchError> {
    let broker = &role.broker;
    broker
        .replication
        .start_master()
        .map_err(|e| SwitchError::NoHa {
            role: current.name(),
            why: e.to_string(),
        })?;
    let changed = current != target;
    if changed {
        info!(
            from = current.name(),
            to = target.name(),
            "changing master role"
        );
        broker.update_config(|c| c.broker_role = target);
    }
    broker.store.set_writable(true)?;
    let was_fenced = role.fenced.swap(false, Ordering::AcqRel);
    role.start_master_services();
    if changed || was_fenced {
        role.register().await;
    }
    Ok(role.result(None, changed))
}
