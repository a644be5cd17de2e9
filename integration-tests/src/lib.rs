//! Test harness for sluice's integration tests: real `mqnamesrv` / `mqbroker`
//! processes on loopback ports, driven by the standard RocketMQ clients.
//!
//! Layout:
//! - `harness`: our binaries as child processes — build, tools, dir, child, output, namesrv,
//!   broker, ha_pair, cluster, mqadmin, wait (see its docs); every test and driver starts them
//!   through it.
//! - `ports`: free loopback ports, reserved so parallel tests do not collide; loopback checks.
//! - `spawn`: every child started under a gate that a listener handing its port over closes
//!   through, so no child forked meanwhile keeps the port bound.
//! - `client`: a blocking remoting client, one-shot requests, and a broker stand-in for name
//!   server tests.
//! - `java`: build and run the Java test programs and the official `mqadmin`
//!   (rocketmq-client / rocketmq-tools from Maven Central) for a given RocketMQ version; Apache
//!   RocketMQ's own broker.
//! - `acl`: Apache's mqadmin signing as a user, `AuthProbe` and its lines, the ACL 2.0 broker
//!   settings (the auth tests).
//! - `go`: build and run the Go test programs (Apache's rocketmq-client-go); the result lines
//!   they share with `rust_client`.
//! - `grpc`: the official gRPC SDKs' case programs (Java, Go, Python) run against Apache's proxy
//!   (`harness::proxy`) or sluice's `mqproxy` (`harness::mqproxy`), the result lines they share,
//!   the cases' expectations, and what a send-only run left on the broker (`grpc::stored`).
//! - `rust_client`: build and run the test programs on rocketmq-client-rust (crates.io).
//! - `client_suite`: the scenarios every non-Java client must pass.
//! - `timer_deliveries`: the deliveries of 5.x timer messages a Java consumer printed: early,
//!   late, missing, duplicated (tests/timer_messages.rs). `timers`: timer sends, drains and the
//!   timer checkpoint over the remoting protocol (the store interop and failover tests).
//! - `drill`: failover drills with the official Java client — the producer's and the drain's
//!   books, the failover steps on a pair (tests/ha_drill.rs, `reliability`).
//! - `pop`: POP requests and responses as a RocketMQ 5 remoting client builds them.
//! - `exposition`: scraping a metrics endpoint and reading its Prometheus text.
//! - `flood`: connection storms (open, time, hold, close, read the server's memory).
//! - `bench`: the side-by-side bench driver against Apache RocketMQ (`--bin bench`).
//! - `reliability`: the reliability driver (`--bin reliability`, RELIABILITY.md).
//! - shared by the drivers: `procs` (process groups killed on drop, panic and Ctrl-C; the
//!   registry every child is in; `/proc` figures), `machine` (the machine description), `driver`
//!   (describe the build), `stats` (medians, number formatting).
#![allow(
    clippy::unwrap_used,
    reason = "test harness: a failed setup step should fail the test loudly"
)]

pub mod acl;
pub mod bench;
pub mod client;
pub mod client_suite;
pub mod drill;
pub mod driver;
pub mod exposition;
pub mod flood;
pub mod go;
pub mod grpc;
pub mod harness;
pub mod java;
pub mod machine;
pub mod pop;
pub mod ports;
pub mod procs;
pub mod reliability;
pub mod rust_client;
pub mod spawn;
pub mod stats;
pub mod timer_deliveries;
pub mod timers;
