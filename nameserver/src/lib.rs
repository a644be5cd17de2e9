//! The sluice name server: the route registry RocketMQ clients and brokers talk to.
//!
//! Brokers register their topics every 30 s and are forgotten when they stop, their
//! connection closes, or they are not heard from for 120 s; producers and consumers
//! ask where a topic's queues live; operators keep a small KV table (ordered-topic
//! configs) here. Wire behaviour — codes, remarks, JSON forms — is Apache RocketMQ's
//! (4.9.8 and 5.x), so its clients, brokers and `mqadmin` work unmodified.
//!
//! Layout:
//! - [`config`]: `NamesrvConfig` (RocketMQ key names), sanitize, properties form.
//! - [`route_info`]: the registry tables and every rule on them; sans-io.
//! - [`kv_config`]: the KV table and its persistence to `kvConfigPath`.
//! - [`processor`]: request code → registry / KV / config, with RocketMQ's responses.
//! - [`server`]: bind, load, register the processor, expiry scan, serve until shutdown.
//! - [`metrics`]: the Prometheus endpoint (`metricsExporterType=PROM`).
//! - [`clock`]: the time source, a seam for expiry tests.
//! - [`error`]: typed errors.
//! - persistence: `remoting::config_file` (atomic writes with a `.bak`).

pub mod clock;
pub mod config;
pub mod error;
pub mod kv_config;
pub mod metrics;
pub mod processor;
pub mod route_info;
pub mod server;

pub use clock::{Clock, SystemClock};
pub use config::NamesrvConfig;
pub use error::{ConfigError, NamesrvError, Result};
pub use server::{Started, bind, run, run_with_clock, start};
