//! Typed headers and JSON bodies of the protocol, grouped by who serves them.
//!
//! Layout:
//! - [`constants`]: permissions, system topic names, version ordinals.
//! - [`namesrv`]: name server request/response headers.
//! - [`route`]: `TopicRouteData`, `QueueData`, `BrokerData`, `ClusterInfo`.
//! - [`topic`]: `TopicConfig`, `DataVersion`, the topic config wrapper, `RegisterBrokerBody`.
//! - [`body`]: small shared bodies (`KVTable`, `TopicList`).
//! - [`broker`]: broker request/response headers.
//! - [`heartbeat`]: `HeartbeatData`, subscriptions, `MessageQueue`, lock bodies.
//! - [`admin`]: stats, connections and offsets bodies read by `mqadmin`.
//! - [`auth`]: the AUTH_* admin requests of ACL 2.0 (users, ACLs).
//! - [`pop`]: POP consumption: extraInfo, retry topics, pop/ack headers, batch ack,
//!   broker-side rebalance bodies.
//! - [`subscription`]: subscription groups, consumer and delay offset tables.
//! - [`role`]: sluice's role switch and HA status (private codes).
//! - [`timer`]: the timer engine's admin requests.

pub mod admin;
pub mod auth;
pub mod body;
pub mod broker;
pub mod constants;
pub mod heartbeat;
pub mod namesrv;
pub mod pop;
pub mod role;
pub mod route;
pub mod subscription;
pub mod timer;
pub mod topic;
