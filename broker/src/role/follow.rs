//! A slave starts following a master it learned from the name server (e.g. an old
//! master restarted as the slave of its successor).

use std::sync::Arc;

use store::PhyOffset;
use tracing::{error, warn};

use super::Role;
use super::peer::ask_status;

impl Role {
    /// Follows `master` (main address) at `ha_addr`: first cuts any tail past the
    /// master's promotion point — bytes there never came from this master — then points
    /// the HA client at it.
    ///
    /// Returns whether the HA client now follows it. It does not when the master cannot
    /// be asked (unreachable: asked again at the next registration) or the divergent
    /// tail cannot be cut: following with it would append the master's bytes after
    /// bytes the master never had. A master that answers but does not know
    /// SLUICE_HA_STATUS (an Apache broker) has no promotion point to cut to; it is
    /// followed as it is.
    pub async fn follow(&self, master: &str, ha_addr: &str) -> bool {
        let _guard = self.switch_lock.lock().await;
        let broker = &self.broker;
        if broker.role().is_master() {
            return false;
        }
        let (point, epoch) = match ask_status(broker, master).await {
            Ok(Some(status)) => (status.promoted_at_offset, status.promotion_epoch),
            Ok(None) => (None, None),
            Err(e) => {
                warn!(master, error = %e, "cannot ask the master for its promotion point; not following it yet");
                return false;
            }
        };
        let own_end = broker.store.commit_log().max_offset().0;
        // Already following this very promotion: everything past the point came from it.
        let already = epoch.is_some() && epoch == broker.replication.followed_epoch();
        if let Some(point) = point.filter(|p| own_end > *p && !already) {
            warn!(
                own_end,
                point, master, "cutting the tail the new master does not have before following it"
            );
            broker.replication.stop();
            let store = Arc::clone(&broker.store);
            let cut = tokio::task::spawn_blocking(move || store.truncate_dirty(PhyOffset(point)))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| e.to_string()));
            if let Err(e) = cut {
                error!(error = %e, "cannot cut the divergent tail; not following the new master");
                return false;
            }
        }
        broker.replication.set_followed_epoch(epoch);
        if let Err(e) = broker.replication.start_slave(Some(ha_addr.to_owned())) {
            error!(error = %e, "cannot start the HA client");
            return false;
        }
        true
    }
}
