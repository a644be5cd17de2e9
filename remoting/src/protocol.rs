//! Typed headers and JSON bodies of the protocol, grouped by who serves them.
//!
//! Layout:
//! - [`constants`]: permissions, system topic names, version ordinals.
//! - [`namesrv`]: name server request/response headers.
//! - [`route`]: `TopicRouteData`, `QueueData`, `BrokerData`, `ClusterInfo`.
//! - [`topic`]: `TopicConfig`, `DataVersion`, the topic config wrapper, `RegisterBrokerBody`.
//! - [`body`]: small shared bodies (`KVTable`, `TopicList`).

pub mod body;
pub mod constants;
pub mod namesrv;
pub mod route;
pub mod topic;
