//! Connection storms against real processes (issue 12, item 3): 10,000 loopback
//! connections opened at once to the broker's main port, to the name server, and to
//! the broker's HA port (connections that send nothing), then closed.
//!
//! Each must be accepted by the server within [`ACCEPT_BOUND`] (release binaries;
//! [`ACCEPT_BOUND_DEBUG`] for a debug build) (a 128-entry listen
//! backlog drops SYNs, which the kernel retries a second later and more: tens of
//! seconds), and once closed the server's `VmRSS` must come back within
//! [`RESIDUE_BOUND`] of where it was (freed connection memory kept by malloc showed as
//! ~145 MiB). The figures are printed (`--nocapture`).
//!
//! The storms run one at a time (one lock): each holds 10,000 descriptors in this
//! process and 10,000 ephemeral ports.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use integration_tests::flood::{StormPlan, StormReport, raise_nofile_limit, storm};
use integration_tests::harness::{BrokerProcess, NamesrvProcess};
use remoting::{RemotingCommand, RequestCode};

/// Connections per storm.
const CONNECTIONS: usize = 10_000;
/// The bound on accepting all of them, for the release binaries operators run
/// (`SLUICE_BIN_DIR=target/release`: 0.6-1.4 s on the 2-core machine).
const ACCEPT_BOUND: Duration = Duration::from_secs(2);
/// The bound for an unoptimized build (`cargo test`'s own): it accepts slower, so a few
/// SYNs wait out one or two kernel retries (7.3 s seen twice on 2026-12-02, the client's
/// own connects as slow: the machine, not the server). Still far below what a
/// 128-entry backlog gave (40-60 s).
const ACCEPT_BOUND_DEBUG: Duration = Duration::from_secs(10);
/// The bound on `VmRSS` after close minus before.
const RESIDUE_BOUND: i64 = 20 * 1024 * 1024;
/// Descriptors this process needs: the connections, plus room for the harness.
const FDS_NEEDED: u64 = CONNECTIONS as u64 + 512;

static ONE_STORM_AT_A_TIME: Mutex<()> = Mutex::new(());

fn check(report: &StormReport) {
    println!("{report}");
    assert_eq!(report.failed, 0, "connects failed:\n{report}");
    assert_eq!(report.opened, CONNECTIONS, "{report}");
    let accepted = report
        .accepted_in
        .unwrap_or_else(|| panic!("the server never held every connection:\n{report}"));
    let bound = if integration_tests::harness::optimized_binaries() {
        ACCEPT_BOUND
    } else {
        ACCEPT_BOUND_DEBUG
    };
    assert!(
        accepted < bound,
        "accepting {CONNECTIONS} connections took {accepted:?} (bound {bound:?}):\n{report}"
    );
    assert_eq!(
        report.probes_answered, report.probes_sent,
        "not every probed connection was answered:\n{report}"
    );
    assert!(
        report.released,
        "the server kept connections open:\n{report}"
    );
    assert!(
        report.residue() < RESIDUE_BOUND,
        "VmRSS after close is {} MiB above before (bound {} MiB):\n{report}",
        report.residue() / (1024 * 1024),
        RESIDUE_BOUND / (1024 * 1024)
    );
}

/// Takes the lock and makes sure this process can hold the connections.
fn prepare() -> std::sync::MutexGuard<'static, ()> {
    let guard = ONE_STORM_AT_A_TIME
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let limit = raise_nofile_limit();
    assert!(
        limit >= FDS_NEEDED,
        "RLIMIT_NOFILE is {limit}, the storm needs {FDS_NEEDED} descriptors (raise the hard limit)"
    );
    guard
}

fn broker_pid(broker: &mut BrokerProcess) -> u32 {
    broker.process().pid().expect("mqbroker is running")
}

#[test]
fn broker_main_port_survives_a_connection_storm() {
    let _one = prepare();
    let ns = NamesrvProcess::start();
    let mut broker = BrokerProcess::start(&ns.addr());
    let pid = broker_pid(&mut broker);
    let addr: SocketAddr = broker.addr().parse().unwrap();
    let plan = StormPlan::new("broker", addr, pid, CONNECTIONS)
        .probe(RemotingCommand::request(RequestCode::GetBrokerRuntimeInfo));
    check(&storm(&plan));
}

#[test]
fn name_server_survives_a_connection_storm() {
    let _one = prepare();
    let mut ns = NamesrvProcess::start();
    let addr = ns.socket_addr();
    let pid = ns.process().pid().expect("mqnamesrv is running");
    let plan = StormPlan::new("name server", addr, pid, CONNECTIONS)
        .probe(RemotingCommand::request(RequestCode::GetBrokerClusterInfo));
    check(&storm(&plan));
}

#[test]
fn ha_port_survives_a_connection_storm() {
    let _one = prepare();
    let ns = NamesrvProcess::start();
    let mut broker = BrokerProcess::start(&ns.addr());
    let pid = broker_pid(&mut broker);
    let mut addr: SocketAddr = broker.addr().parse().unwrap();
    // haListenPort is listenPort + 1 (the harness sets it so).
    addr.set_port(addr.port() + 1);
    let plan = StormPlan::new("ha", addr, pid, CONNECTIONS);
    check(&storm(&plan));
}
