//! Fencing, the first step of a planned switchover. The promoting slave sends FENCE to
//! its master: the master stops taking writes (puts in progress finish first), stops
//! its master-only services and leaves the routes, but keeps its role and its HA
//! service, so the slave catches up with everything it acknowledged before taking
//! over. Without this a master goes on acknowledging sends between its slave's
//! promotion and its own demotion, and the demotion cuts them: lost SEND_OKs. A switch
//! to master on the fenced master, or its demotion, ends the fence.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use remoting::protocol::role::HaStatusBody;
use tracing::{info, warn};

use super::peer::{self, Fenced};
use super::{Role, SwitchError};

/// How long a promotion waits for its log to reach the fenced master's end.
const CATCH_UP_WAIT: Duration = Duration::from_secs(10);

/// FENCE on this broker (a master): read-only, services stopped, out of the routes.
/// Answers its HA status: `maxOffset` is the end the slave must reach.
pub(super) async fn run(role: &Arc<Role>) -> Result<HaStatusBody, SwitchError> {
    let broker = &role.broker;
    if !broker.role().is_master() {
        return Err(SwitchError::NotMaster("only a master can be fenced"));
    }
    broker.store.set_writable(false)?;
    role.stop_master_services();
    // Out of the routes too: two brokers registered as the master would take turns in
    // them at every registration.
    role.fenced.store(true, Ordering::Release);
    broker.namesrv.unregister(&broker.identity()).await;
    warn!(
        max_offset = broker.store.commit_log().max_offset().0,
        "fenced for the promotion of a slave: no writes until demoted or switched to master again"
    );
    Ok(role.status())
}

/// The fenced master a promotion caught up with: its address and role (to unfence it
/// if the promotion fails later).
#[derive(Debug, Clone)]
pub(super) struct OldMaster {
    pub(super) addr: String,
    pub(super) role: String,
}

impl OldMaster {
    /// Lets it take writes again.
    pub(super) async fn unfence(&self, broker: &crate::broker::Broker) {
        peer::unfence(broker, &self.addr, &self.role).await;
    }
}

/// Before a promotion: fences the master this slave follows, if it can be reached, and
/// waits until this broker holds everything it had. `Ok(None)`: no master to fence (it
/// is gone: a failover). `Err` after a fence the log did not catch up with (the master
/// was told to take writes again).
pub(super) async fn fence_old_master(role: &Role) -> Result<Option<OldMaster>, String> {
    let broker = &role.broker;
    let Some(addr) = broker.namesrv.last().master_addr else {
        return Ok(None);
    };
    let status = match peer::send_fence(broker, &addr)
        .await
        .map_err(|e| e.to_string())?
    {
        Fenced::Yes(status) => status,
        Fenced::Refused(why) => {
            warn!(
                master = addr,
                why, "the master cannot be fenced; promoting without it"
            );
            return Ok(None);
        }
        Fenced::Unreachable(why) => {
            info!(
                master = addr,
                why, "the master is not reachable; promoting without fencing it"
            );
            return Ok(None);
        }
    };
    let old = OldMaster {
        addr,
        role: status.role,
    };
    let end = status.max_offset;
    if !catch_up(role, end).await {
        old.unfence(broker).await;
        return Err(format!(
            "did not catch up with the fenced master {} (offset {end}) within {CATCH_UP_WAIT:?}",
            old.addr
        ));
    }
    info!(
        master = old.addr,
        end, "old master fenced, log caught up with it"
    );
    Ok(Some(old))
}

/// Waits until this broker's log reaches `end`, at most [`CATCH_UP_WAIT`].
async fn catch_up(role: &Role, end: u64) -> bool {
    let store = Arc::clone(&role.broker.store);
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + CATCH_UP_WAIT;
        let watch = store.commit_log().readable_watch();
        // A wait can end early (interrupted); only the deadline ends this one.
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            if watch.wait_blocking(end, left) >= end {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    })
    .await
    .unwrap_or(false)
}
