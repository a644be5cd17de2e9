//! Master (or slave) → slave of a given master.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use remoting::protocol::role::{SwitchResult, SwitchRoleRequestHeader};
use store::PhyOffset;
use tracing::{info, warn};

use super::peer::{self, fetch_status};
use super::{Role, SwitchError};
use crate::config::BrokerRole;

/// SLUICE_SWITCH_ROLE role=SLAVE.
pub(super) async fn run(
    role: &Arc<Role>,
    request: &SwitchRoleRequestHeader,
) -> Result<SwitchResult, SwitchError> {
    let broker = &role.broker;
    let master = request
        .master_address
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned);
    let broker_id = match request.broker_id {
        Some(id) if id > 0 => id,
        Some(id) => {
            return Err(SwitchError::Invalid(format!("brokerId '{id}' must be > 0")));
        }
        None if broker.config().broker_id > 0 => broker.config().broker_id,
        None => 1,
    };
    // Ask the new master where its log ended at promotion and where its HA port is.
    let status = match &master {
        Some(addr) => Some(fetch_status(broker, addr).await?),
        None => None,
    };
    let ha_addr = request
        .ha_master_address
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .or_else(|| status.as_ref().map(|s| s.ha_address.clone()));
    if ha_addr.is_none() {
        return Err(SwitchError::Invalid(
            "switching to SLAVE needs masterAddress (the new master's ip:port) or haMasterAddress"
                .into(),
        ));
    }
    info!(master = ?master, ha = ?ha_addr, broker_id, "switching to slave");
    // A demotion that fails half way leaves a read-only slave, never a master: the new
    // master may already take writes, and two writable masters of one pair diverge.
    broker.store.set_writable(false)?;
    role.stop_master_services();
    broker.update_config(|c| {
        c.broker_role = BrokerRole::SLAVE;
        c.broker_id = broker_id;
    });
    // A fenced master being demoted registers again, as the slave it now is.
    role.fenced.store(false, Ordering::Release);
    broker.replication.set_promoted_at(None);
    // Told to follow a master that is fenced (this broker's promotion fenced it, and is
    // now undone): it is the master again, and takes writes once this one no longer does.
    if let (Some(addr), Some(s)) = (&master, status.as_ref().filter(|s| s.fenced)) {
        peer::unfence(broker, addr, &s.role).await;
    }
    let not_following = |why: String| SwitchError::NotFollowing { id: broker_id, why };
    let own_end = broker.store.commit_log().max_offset().0;
    let cut_at = status
        .as_ref()
        .and_then(|s| s.promoted_at_offset.or(Some(s.max_offset)));
    let mut truncated = None;
    if let Some(point) = cut_at.filter(|p| own_end > *p) {
        warn!(
            own_end,
            point, "cutting the tail the new master does not have"
        );
        // Nothing may read (a master's connections pushing frames) or append (a slave's
        // client) at the tail while it is cut; `start_slave` below starts the client again.
        broker.replication.stop();
        let store = Arc::clone(&broker.store);
        let cut = tokio::task::spawn_blocking(move || store.truncate_dirty(PhyOffset(point)))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| format!("cannot cut the divergent tail: {e}")));
        if let Err(why) = cut {
            role.register().await;
            return Err(not_following(why));
        }
        truncated = Some(point);
    }
    broker
        .replication
        .set_followed_epoch(status.as_ref().and_then(|s| s.promotion_epoch));
    let started = broker.replication.start_slave(ha_addr);
    role.register().await;
    started.map_err(|e| not_following(format!("cannot start the HA client: {e}")))?;
    broker.sync_now.notify_one();
    Ok(role.result(truncated, true))
}
