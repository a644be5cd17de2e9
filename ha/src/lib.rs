//! Master/slave replication for sluice over Apache RocketMQ's classic HA protocol
//! (`HAService` / `DefaultHAService`), byte for byte, on raw mio.
//!
//! The wire is plain TCP on the master's `haListenPort` with two fixed layouts and
//! nothing else: the slave sends its CommitLog max offset as a bare big-endian i64
//! (right after connecting — the first report is the transfer start — then after
//! appended data and every `haSendHeartbeatInterval`); the master answers with frames
//! `i64 phyOffset | i32 size | size bytes` of raw CommitLog bytes, or a header-only
//! heartbeat when idle. Because nothing else is exchanged, a Java RocketMQ slave can
//! follow a sluice master and a sluice slave a Java master.
//!
//! `ha` depends on nothing of ours: the broker implements [`HaLog`] over the store
//! and drives an [`HaService`].
//!
//! # Layout
//!
//! - [`frame`]: sans-io codecs of the report and the transfer frame (byte tables).
//! - [`log`]: the [`HaLog`] trait, the seam to the store.
//! - `accept`: the master's mio loop — listener, slave connections, waking on log growth.
//! - `connection`: one slave on the master — reports in, frames out (no socket inside).
//! - [`group_transfer`]: sync replication — slave acks, `push2SlaveMaxOffset`, and
//!   the runtime-agnostic [`SlaveWait`] future.
//! - `client`: the slave's mio loop — connect, report, append, reconnect.
//! - `service`: [`HaService`], the handle the broker holds (start, stop, waits, status).
//! - [`config`], [`status`], `net` (socket options), `error`.

mod accept;
mod client;
pub mod config;
mod connection;
mod error;
pub mod frame;
pub mod group_transfer;
pub mod log;
mod net;
mod rate;
mod service;
pub mod status;
#[cfg(test)]
mod test_util;

pub use accept::closed_connections;
pub use config::HaConfig;
pub use error::{ConfigError, FrameError, HaError, LogError, Result};
pub use group_transfer::{GroupTransfer, ReplicaStatus, SlaveRegistration, SlaveWait};
pub use log::{GrowthWait, HaLog};
pub use net::listen;
pub use service::{HaRole, HaService};
pub use status::{ClientStatus, Divergence, HaStatus, MasterStatus, SlaveStatus};
