//! The harness every integration test runs our binaries with: real `mqnamesrv` / `mqbroker`
//! processes on loopback ports, in temp dirs, stopped when the test ends, their logs printed
//! and kept when it fails. One file a job:
//!
//! - [`build`]: find or build our binaries (`SLUICE_BIN_DIR`, [`build::optimized_binaries`]).
//! - [`tools`]: Java, Maven, Go — installed or not, and what a test does when one is missing.
//! - [`dir`]: a test's working directory ([`TestDir`]), kept when the test fails.
//! - [`child`]: one child process ([`ChildProcess`]): spawn, readiness, logs, stop, kill on drop.
//! - [`output`]: what a finished child printed ([`ChildOutput`]).
//! - [`namesrv`]: a running `mqnamesrv` ([`NamesrvProcess`]).
//! - [`broker`]: a running `mqbroker` ([`BrokerProcess`]) and what tests ask a broker
//!   ([`ha_status`], [`registered_ids`], ...).
//! - [`apache`]: Apache RocketMQ's own broker, registered with our name server
//!   ([`ApacheBroker`]), and its own name server ([`ApacheNamesrv`]).
//! - [`proxy`]: Apache RocketMQ's proxy in cluster mode, for the gRPC SDKs ([`ApacheProxy`]).
//! - [`mqproxy`]: sluice's own gRPC proxy, cluster mode ([`MqProxy`]).
//! - [`ha_pair`]: a name server and a master/slave pair ([`HaPair`]), identical stores.
//! - [`cluster`]: the cluster a client test talks to ([`TestCluster`]), ours or an external one.
//! - [`mqadmin`](mod@mqadmin): our `mqadmin` as a command ([`MqadminOutput`], [`create_topic`]).
//! - [`wait`]: the polling wait ([`wait_until`]).
//!
//! The names most tests use are re-exported here.

pub mod apache;
pub mod broker;
pub mod build;
pub mod child;
pub mod cluster;
pub mod dir;
pub mod ha_pair;
pub mod mqadmin;
pub mod mqproxy;
pub mod namesrv;
pub mod output;
pub mod proxy;
pub mod tools;
pub mod wait;

pub use apache::{ApacheBroker, ApacheNamesrv};
pub use broker::{
    BrokerProcess, HA_BROKER_NAME, HaStatus, broker_has_topic, ha_status, registered_ids,
    wait_caught_up,
};
pub use build::{binary, optimized_binaries, workspace_root};
pub use child::{ChildProcess, Exited, ProcessSpec, Readiness};
pub use cluster::{TestCluster, unique_name};
pub use dir::TestDir;
pub use ha_pair::{HaPair, compare_store_files};
pub use mqadmin::{MqadminOutput, create_topic, mqadmin, update_topic};
pub use mqproxy::MqProxy;
pub use namesrv::NamesrvProcess;
pub use output::ChildOutput;
pub use proxy::ApacheProxy;
pub use wait::wait_until;
