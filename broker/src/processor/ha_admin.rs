//! The HA admin codes of Apache's mqadmin: GET_BROKER_HA_STATUS (907, `mqadmin haStatus`)
//! and RESET_MASTER_FLUSH_OFFSET (908, `mqadmin resetMasterFlushOffset`). sluice's own
//! view with promotions and fencing is SLUICE_HA_STATUS ([`super::role`]).

use remoting::protocol::role::{
    HaClientRuntimeInfo, HaConnectionRuntimeInfo, HaRuntimeInfo, ResetMasterFlushOffsetHeader,
};
use remoting::{RemotingCommand, fastjson};

use super::{Handled, Refusal, success};
use crate::broker::Broker;

/// GET_BROKER_HA_STATUS: a master's slaves (in sync when within `haMaxGapNotInSync`), or a
/// slave's link to its master (`DefaultHAService.getRuntimeInfo`).
pub fn ha_runtime_info(broker: &Broker) -> Handled {
    let max_offset = broker.store.commit_log().max_offset().0;
    let mut info = HaRuntimeInfo::default();
    match broker.replication.status() {
        ha::HaStatus::Master(m) => {
            info.master = true;
            info.master_commit_log_max_offset = max_offset;
            let gap = broker.replication.config().ha_max_gap_not_in_sync;
            for s in m.slaves {
                let ack = s.ack_offset.unwrap_or(0);
                let diff = max_offset.saturating_sub(ack);
                let in_sync = s.ack_offset.is_some() && diff < gap;
                info.in_sync_slave_nums += i32::from(in_sync);
                info.ha_connection_info.push(HaConnectionRuntimeInfo {
                    addr: s.addr.to_string(),
                    slave_ack_offset: ack,
                    diff,
                    in_sync,
                    transferred_byte_in_second: s.bytes_last_second,
                    transfer_from_where: s.transfer_offset.unwrap_or(0),
                });
            }
        }
        ha::HaStatus::Slave(c) => {
            info.ha_client_runtime_info = HaClientRuntimeInfo {
                master_addr: c.master_addr,
                transferred_byte_in_second: c.bytes_last_second,
                max_offset,
                last_read_timestamp: c.last_read_ms.unwrap_or(0),
                last_write_timestamp: c.last_report_ms.unwrap_or(0),
                master_flush_offset: broker.store.checkpoint().master_flushed_offset(),
                activated: c.connected.is_some(),
            };
        }
        ha::HaStatus::Stopped => {
            // A master between roles, or a broker whose HA service is down: what Apache
            // says when it has no HA runtime info.
            return Err(Refusal::system(
                "Can not get HARuntimeInfo, may be duplicationEnable is true",
            ));
        }
    }
    Ok(success().with_body(fastjson::to_vec(&info, fastjson::KeyStyle::Fastjson)?))
}

/// RESET_MASTER_FLUSH_OFFSET: a slave (broker id not 0) keeps the given offset as the
/// master's flushed offset in its checkpoint; a master ignores it (as Apache).
pub fn reset_master_flush_offset(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: ResetMasterFlushOffsetHeader = request.decode_header()?;
    if broker.config().broker_id != 0 {
        if let Some(offset) = h.master_flush_offset {
            let checkpoint = broker.store.checkpoint();
            checkpoint.set_master_flushed_offset(offset);
            checkpoint
                .flush()
                .map_err(|e| Refusal::system(format!("cannot write the checkpoint: {e}")))?;
        }
    }
    Ok(success())
}
