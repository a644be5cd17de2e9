//! Test harness for sluice's integration tests: real `mqnamesrv` / `mqbroker`
//! processes on loopback ports, driven by the standard RocketMQ clients.
//!
//! Layout:
//! - `ports`: free loopback ports, reserved so parallel tests do not collide.
//! - `process`: spawn one of our binaries, wait for readiness, kill on drop, keep logs on failure.
//! - `client`: a blocking remoting client and a broker stand-in for name server tests.
//! - `java`: build and run the Java test programs and the official `mqadmin`
//!   (rocketmq-client / rocketmq-tools from Maven Central) for a given RocketMQ version.
//! - `go`: build and run the Go test programs (Apache's rocketmq-client-go); also the process
//!   runner (`ClientProcess`, `ClientOutput`) shared with `rust_client`.
//! - `rust_client`: build and run the test programs on rocketmq-client-rust (crates.io).
//! - `drill`: failover drills with the official Java client — the pair, the switch steps, the
//!   books of what was acknowledged and what was drained (tests/ha_drill.rs, `reliability`).
//! - `flood`: connection storms (open, time, hold, close, read the server's memory).
//! - `bench`: the side-by-side bench driver against Apache RocketMQ (`--bin bench`).
//! - `reliability`: the reliability driver (`--bin reliability`, RELIABILITY.md).
//! - shared by the drivers: `procs` (child processes killed on drop, panic and Ctrl-C;
//!   `/proc` figures), `machine` (the machine description), `driver` (build, copy and describe
//!   the binaries), `stats` (medians, number formatting).
#![allow(
    clippy::unwrap_used,
    reason = "test harness: a failed setup step should fail the test loudly"
)]

pub mod bench;
pub mod child;
pub mod client;
pub mod client_suite;
pub mod drill;
pub mod driver;
pub mod flood;
pub mod go;
pub mod java;
pub mod machine;
pub mod ports;
pub mod process;
pub mod procs;
pub mod reliability;
pub mod rust_client;
pub mod stats;
