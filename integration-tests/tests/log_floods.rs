//! What a client can make a broker log is bounded: repeated errors are written once, then
//! at most once per interval with a count (`suppressed=N`), never once per request.
//!
//! `a_full_disk_does_not_flood_the_log`: `mqbroker` runs under a file-size limit
//! (`ulimit -f`, SIGXFSZ ignored) below the size of one CommitLog file, so no CommitLog
//! file can be created — a full disk as the put path sees it. 2 000 sends are all refused
//! (not one acknowledged), and the broker writes a handful of ERROR lines for them, not
//! one per send (it wrote ~690 a second before the limit).
//!
//! `garbage_from_many_clients_does_not_flood_the_log`: 300 connections to a broker's main
//! port and 300 to its HA port each send bytes that are not a frame. Each is closed; the
//! broker logs a few lines for them, not one (or three) per connection.

#![allow(clippy::unwrap_used, reason = "test: a failed step should fail loudly")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use integration_tests::client::{SyncClient, send_request};
use integration_tests::harness::{ChildProcess, ProcessSpec, TestDir, binary, workspace_root};

const SENDS: usize = 2_000;

fn broker_toml() -> std::path::PathBuf {
    workspace_root().join("deploy").join("broker.toml")
}

#[test]
fn a_full_disk_does_not_flood_the_log() {
    let dir = TestDir::new("log-flood");
    let ports = integration_tests::ports::reserve_consecutive(4);
    let port = ports[2].port();
    // 128 MiB CommitLog files; files may grow to 81 920 blocks (40 MiB of 512-byte blocks,
    // 80 MiB of 1024-byte ones, as shells differ) — room for the 38.7 MB timer wheel, which
    // the broker creates at start, not for a CommitLog file.
    let spec = ProcessSpec::new("mqbroker", "sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 81920; exec \"$0\" \"$@\"")
        .arg(binary("broker", "mqbroker"))
        .loopback_broker(&broker_toml(), &dir.path().join("store"), port)
        .setting("mappedFileSizeCommitLog", 128 * 1024 * 1024);
    let mut broker = ChildProcess::start(spec, dir, ports);
    let addr = broker.listening_addr().unwrap().to_string();
    let client = SyncClient::new();
    let started = Instant::now();
    let mut acked = 0;
    for _ in 0..SENDS {
        if client.invoke(&addr, send_request("Flood", b"x")).code() == 0 {
            acked += 1;
        }
    }
    let took = started.elapsed();
    assert_eq!(
        acked, 0,
        "a send was acknowledged with no CommitLog file to hold it"
    );
    let log = format!("{}\n{}", broker.stdout(), broker.stderr());
    let errors: Vec<&str> = log.lines().filter(|l| l.contains("ERROR")).collect();
    eprintln!(
        "{SENDS} refused sends in {took:?}: {} ERROR lines:\n{}",
        errors.len(),
        errors.join("\n")
    );
    assert!(
        errors.len() <= 6,
        "{} ERROR lines for {SENDS} refused sends in {took:?}",
        errors.len()
    );
    assert!(broker.is_running(), "the broker died");
}

#[test]
fn garbage_from_many_clients_does_not_flood_the_log() {
    const CLIENTS: usize = 300;
    let dir = TestDir::new("log-garbage");
    let ports = integration_tests::ports::reserve_consecutive(4);
    let port = ports[2].port();
    let spec = ProcessSpec::new("mqbroker", binary("broker", "mqbroker")).loopback_broker(
        &broker_toml(),
        &dir.path().join("store"),
        port,
    );
    let mut broker = ChildProcess::start(spec, dir, ports);
    let before = broker.stdout().lines().count() + broker.stderr().lines().count();
    for target in [port, port + 1] {
        for i in 0..CLIENTS {
            let mut s = TcpStream::connect(("127.0.0.1", target)).unwrap();
            // A frame whose length is negative, then whatever; the HA port reads it as
            // a report of a negative offset.
            let _ = s.write_all(&[
                0xff,
                0xff,
                0xff,
                0xf0,
                1,
                2,
                3,
                u8::try_from(i % 250).unwrap(),
            ]);
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut sink = [0u8; 64];
            // Wait for the close, so the broker has logged what it logs for this one.
            while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let log = format!("{}\n{}", broker.stdout(), broker.stderr());
    let lines: Vec<&str> = log
        .lines()
        .skip(before)
        .filter(|l| !l.trim().is_empty())
        .collect();
    eprintln!(
        "{} garbage connections: {} log lines:\n{}",
        2 * CLIENTS,
        lines.len(),
        lines.join("\n")
    );
    assert!(
        lines.len() <= 10,
        "{} log lines for {} garbage connections",
        lines.len(),
        2 * CLIENTS
    );
    assert!(broker.is_running(), "the broker died");
}
