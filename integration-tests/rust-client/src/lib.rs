//! The rocketmq-client-rust test programs of sluice's integration tests (`producer`, `consumer`
//! in `src/bin/`) and their shared plumbing.
//!
//! Layout:
//! - `harness`: result lines on stdout, argument parsing, the hard-timeout watchdog, loopback
//!   check, body escaping, exit codes — the conventions of `integration-tests/java`'s `Harness`.
//! - `client`: the client runtime every program needs (`RuntimeOwner` + `ClientRuntime`).

pub mod client;
pub mod harness;
