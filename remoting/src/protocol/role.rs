//! sluice's role-switch requests (private codes, see [`crate::code`]): SLUICE_SWITCH_ROLE
//! (40001) and SLUICE_HA_STATUS (40002). The broker serves them, `mqadmin switchRole` /
//! `haStatus` send them, and a promoting broker sends FENCE to its master; all three use
//! the types here.

use std::fmt;

use serde::{Deserialize, Serialize};

// `ext_field!` names ExtField, ExtFieldError and ExtFields.
use crate::ext_header::{ExtField, ExtScalar, ext_field};
use crate::{ExtFieldError, ExtFields, ext_header};

/// What a SLUICE_SWITCH_ROLE asks the broker to become (`role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SwitchTarget {
    /// The master (brokerId 0) of its pair.
    #[default]
    Master,
    /// A slave of a given master.
    Slave,
    /// Broker to broker: a master whose slave is being promoted stops taking writes
    /// until it is demoted or made master again.
    Fence,
}

impl SwitchTarget {
    /// The wire name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SwitchTarget::Master => "MASTER",
            SwitchTarget::Slave => "SLAVE",
            SwitchTarget::Fence => "FENCE",
        }
    }
}

impl fmt::Display for SwitchTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl ExtScalar for SwitchTarget {
    fn parse_ext(text: &str) -> Option<Self> {
        [
            SwitchTarget::Master,
            SwitchTarget::Slave,
            SwitchTarget::Fence,
        ]
        .into_iter()
        .find(|t| text.trim().eq_ignore_ascii_case(t.name()))
    }
    fn format_ext(&self) -> String {
        self.name().to_owned()
    }
}

/// The master role a promotion asks for (`brokerRole`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MasterRole {
    /// SEND_OK once a slave holds the message.
    SyncMaster,
    /// SEND_OK once stored here.
    AsyncMaster,
}

impl MasterRole {
    /// The wire name, as `brokerRole` spells it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            MasterRole::SyncMaster => "SYNC_MASTER",
            MasterRole::AsyncMaster => "ASYNC_MASTER",
        }
    }

    /// The role named `text` (any case).
    #[must_use]
    pub fn from_name(text: &str) -> Option<Self> {
        [MasterRole::SyncMaster, MasterRole::AsyncMaster]
            .into_iter()
            .find(|r| text.trim().eq_ignore_ascii_case(r.name()))
    }
}

impl ExtScalar for MasterRole {
    fn parse_ext(text: &str) -> Option<Self> {
        MasterRole::from_name(text)
    }
    fn format_ext(&self) -> String {
        self.name().to_owned()
    }
}

ext_field!(SwitchTarget, MasterRole);

ext_header! {
    /// SLUICE_SWITCH_ROLE (40001) request.
    pub struct SwitchRoleRequestHeader {
        /// MASTER, SLAVE or FENCE.
        role: SwitchTarget = "role",
        /// For MASTER: the master role (default: the broker's start role if a master,
        /// else its `masterRoleOnSwitch`).
        broker_role: Option<MasterRole> = "brokerRole",
        /// For SLAVE: the new master's main `ip:port`.
        master_address: Option<String> = "masterAddress",
        /// For SLAVE: the new master's HA `ip:port`, if not asked from the master.
        ha_master_address: Option<String> = "haMasterAddress",
        /// For SLAVE: the broker id (> 0; default its current one, or 1).
        broker_id: Option<i64> = "brokerId",
    }
}

/// SLUICE_HA_STATUS (40002) answer body; also the answer to FENCE.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct HaStatusBody {
    /// ASYNC_MASTER | SYNC_MASTER | SLAVE.
    pub role: String,
    /// Broker id.
    pub broker_id: i64,
    /// CommitLog max offset.
    pub max_offset: u64,
    /// Where the log ended when this broker was promoted (a new master), if it was.
    pub promoted_at_offset: Option<u64>,
    /// Id of that promotion.
    pub promotion_epoch: Option<u64>,
    /// `ip:port` slaves connect to.
    pub ha_address: String,
    /// Highest offset a slave acknowledged (masters).
    pub slave_ack_offset: Option<u64>,
    /// Connected slaves (masters).
    pub slaves: Vec<String>,
    /// Master HA address (slaves).
    pub master: Option<String>,
    /// Whether the HA client is connected (slaves).
    pub connected: bool,
    /// Whether this master is fenced: read-only for a slave's promotion.
    pub fenced: bool,
}

impl HaStatusBody {
    /// Whether the broker is a master (of either kind).
    #[must_use]
    pub fn is_master(&self) -> bool {
        self.role.ends_with("MASTER")
    }
}

/// SLUICE_SWITCH_ROLE answer body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct SwitchResult {
    /// The role now.
    pub role: String,
    /// The broker id now.
    pub broker_id: i64,
    /// Where the log was cut, if it was.
    pub truncated_to: Option<u64>,
    /// Whether the role changed (false: it already had it).
    pub changed: bool,
    /// The old master this promotion fenced (made read-only and caught up with) first:
    /// a planned switchover. `None`: it could not be reached (a failover).
    pub fenced: Option<String>,
    /// How long the switch took, ms.
    pub took_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CommandHeader;

    #[test]
    fn switch_header_round_trips_and_parses_any_case() {
        let h = SwitchRoleRequestHeader {
            role: SwitchTarget::Slave,
            broker_role: None,
            master_address: Some("127.0.0.1:10911".into()),
            ha_master_address: None,
            broker_id: Some(2),
        };
        let mut ext = ExtFields::default();
        h.write_to(&mut ext);
        assert_eq!(ext.get("role"), Some("SLAVE"));
        assert_eq!(SwitchRoleRequestHeader::read_from(&ext).unwrap(), h);

        let mut ext = ExtFields::default();
        ext.insert("role", "master");
        ext.insert("brokerRole", "sync_master");
        let h = SwitchRoleRequestHeader::read_from(&ext).unwrap();
        assert_eq!(h.role, SwitchTarget::Master);
        assert_eq!(h.broker_role, Some(MasterRole::SyncMaster));
    }

    #[test]
    fn unknown_roles_are_refused_naming_the_field() {
        let mut ext = ExtFields::default();
        ext.insert("role", "MASTERX");
        let e = SwitchRoleRequestHeader::read_from(&ext).unwrap_err();
        assert!(e.to_string().contains("<role>"), "{e}");
        let mut ext = ExtFields::default();
        ext.insert("role", "MASTER");
        ext.insert("brokerRole", "SLAVE");
        let e = SwitchRoleRequestHeader::read_from(&ext).unwrap_err();
        assert!(e.to_string().contains("<brokerRole>"), "{e}");
        assert!(SwitchRoleRequestHeader::read_from(&ExtFields::default()).is_err());
    }

    #[test]
    fn ha_status_reads_bodies_without_the_newer_fields() {
        let body: HaStatusBody =
            crate::fastjson::from_slice(br#"{"role":"SLAVE","brokerId":1,"maxOffset":7}"#).unwrap();
        assert!(!body.is_master() && !body.fenced && body.max_offset == 7);
    }
}

/// GET_BROKER_HA_STATUS (907) answer body (RocketMQ's `HARuntimeInfo`, what `mqadmin
/// haStatus` prints): a master's slaves, or a slave's link to its master.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct HaRuntimeInfo {
    /// A master (of either kind).
    pub master: bool,
    /// The master's CommitLog max offset.
    pub master_commit_log_max_offset: u64,
    /// Slaves within `haMaxGapNotInSync` of it.
    pub in_sync_slave_nums: i32,
    /// One per connected slave (masters).
    pub ha_connection_info: Vec<HaConnectionRuntimeInfo>,
    /// The link to the master (slaves).
    pub ha_client_runtime_info: HaClientRuntimeInfo,
}

/// One slave connection as its master sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct HaConnectionRuntimeInfo {
    /// The slave's `ip:port`.
    pub addr: String,
    /// Last offset it acknowledged.
    pub slave_ack_offset: u64,
    /// Master max offset minus that.
    pub diff: u64,
    /// Within `haMaxGapNotInSync`.
    pub in_sync: bool,
    /// Bytes sent to it in the last whole second.
    pub transferred_byte_in_second: u64,
    /// Next offset sent to it.
    pub transfer_from_where: u64,
}

/// A slave's link to its master.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct HaClientRuntimeInfo {
    /// The master HA address followed.
    pub master_addr: Option<String>,
    /// Bytes received in the last whole second.
    pub transferred_byte_in_second: u64,
    /// This broker's CommitLog max offset.
    pub max_offset: u64,
    /// When bytes last came from the master, ms since the epoch.
    pub last_read_timestamp: u64,
    /// When a report was last written to it, ms since the epoch.
    pub last_write_timestamp: u64,
    /// The master's flushed offset as last set (`resetMasterFlushOffset`).
    pub master_flush_offset: i64,
    /// Connected now.
    pub activated: bool,
}

ext_header! {
    /// RESET_MASTER_FLUSH_OFFSET (908) request.
    pub struct ResetMasterFlushOffsetHeader {
        master_flush_offset: Option<i64> = "masterFlushOffset",
    }
}
