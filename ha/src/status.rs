//! Snapshots of the HA state for admin requests (RocketMQ's `HARuntimeInfo`):
//! connected slaves and their acks on a master, the master link on a slave.

use std::net::SocketAddr;

/// What [`HaService::status`](crate::HaService::status) reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HaStatus {
    /// Running as master.
    Master(MasterStatus),
    /// Running as slave.
    Slave(ClientStatus),
    /// Stopped.
    Stopped,
}

/// A master's replication state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterStatus {
    /// Where the HA listener is bound.
    pub listen_addr: SocketAddr,
    /// `push2SlaveMaxOffset`: the highest offset any slave acknowledged.
    pub push2_slave_max_offset: u64,
    /// Connected slaves, in connection order.
    pub slaves: Vec<SlaveStatus>,
}

/// One connected slave as the master sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlaveStatus {
    /// The slave's address.
    pub addr: SocketAddr,
    /// Last offset it reported (`slaveAckOffset`); `None` before its first report.
    pub ack_offset: Option<u64>,
    /// Next offset the master sends it (`transferFromWhere`); `None` before the
    /// first report.
    pub transfer_offset: Option<u64>,
    /// Bytes written to it, headers included.
    pub bytes_sent: u64,
    /// Bytes written to it in the last whole second (`transferredByteInSecond`).
    pub bytes_last_second: u64,
    /// When it connected, ms since the epoch.
    pub connected_at_ms: u64,
    /// When its last report arrived, ms since the epoch.
    pub last_report_ms: Option<u64>,
}

/// A slave's link to its master.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClientStatus {
    /// The master HA address the client follows (`haMasterAddress` or the name
    /// server's `haServerAddr`).
    pub master_addr: Option<String>,
    /// The master's socket address while connected.
    pub connected: Option<SocketAddr>,
    /// Last offset reported to the master.
    pub reported_offset: Option<u64>,
    /// When the last report was queued, ms since the epoch.
    pub last_report_ms: Option<u64>,
    /// When bytes last arrived from the master, ms since the epoch.
    pub last_read_ms: Option<u64>,
    /// Bytes received from masters, headers included.
    pub bytes_received: u64,
    /// Bytes received in the last whole second (`transferredByteInSecond`).
    pub bytes_last_second: u64,
    /// Connections established so far.
    pub connects: u64,
    /// Set when the master showed that it lacks this slave's tail; cleared by
    /// [`HaService::resync_from`](crate::HaService::resync_from).
    pub divergence: Option<Divergence>,
}

/// The master does not have this slave's tail: the slave ends at `own_max`, the
/// master announced `master_offset` (less). Classic HA cannot say where the two logs
/// part, so cutting the tail is the operator's or the role switch's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Divergence {
    /// The slave's max offset.
    pub own_max: u64,
    /// The offset the master sent (its max offset when it refused the slave).
    pub master_offset: u64,
    /// When it was seen, ms since the epoch.
    pub at_ms: u64,
}
