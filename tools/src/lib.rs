//! `mqadmin` and `mqbench`: the operator CLI and the load generator, speaking RocketMQ's
//! remoting protocol to name servers and brokers (ours or Apache RocketMQ's).
//!
//! Layout:
//! - [`client`]: async client over `remoting::RemotingClient` — name server lookups with a
//!   route cache, send / batch send / pull / query / view, consumer offsets.
//! - [`admin`]: broker and name server admin calls, cluster lookups.
//! - [`stored`]: stored messages of pull/query/view bodies, over the `message` crate's
//!   record codec (which also owns properties, message ids and the batch body).
//! - [`uniq_id`]: this host and process as a producer of `UNIQ_KEY`s.
//! - [`mqadmin`]: the `mqadmin` sub commands, RocketMQ's names, flags and output.
//! - [`mqbench`]: the `mqbench` producer and consumer benchmarks.
//! - [`publish`]: writable queues of a topic, send headers and message properties.
//! - [`time`]: the clock and the timestamp formats mqadmin prints and parses.
//! - [`error`]: the error type, `ToolsError`.
#![allow(
    clippy::write_literal,
    reason = "table headers keep Java's format strings: one padded column per argument"
)]

pub mod admin;
pub mod client;
pub mod error;
pub mod mqadmin;
pub mod mqbench;
pub mod publish;
pub mod stored;
pub mod time;
pub mod uniq_id;

pub use client::Client;
pub use error::{Result, ToolsError};
