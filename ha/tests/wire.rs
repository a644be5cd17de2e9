//! The protocol on the wire, against hand-driven sockets standing in for a Java
//! peer: what a sluice master sends a slave, and what a sluice slave sends a master,
//! byte for byte.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns

mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use ha::frame::{TRANSFER_HEADER_SIZE, TransferHeader};
use ha::{HaConfig, HaLog, HaService, HaStatus, ReplicaStatus};
use support::{MemLog, Rng, fast_config, init_tracing, start_master};
use test_support::{block_on, wait_until};

const FILE: u64 = 64 * 1024;

fn connect(master: &HaService) -> TcpStream {
    let s = TcpStream::connect(master.listen_addr().unwrap()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

fn report(s: &mut TcpStream, offset: u64) {
    s.write_all(&(offset as i64).to_be_bytes()).unwrap();
}

/// Reads one transfer frame; `None` at EOF.
fn read_frame(s: &mut TcpStream) -> Option<(u64, Vec<u8>)> {
    let mut head = [0u8; TRANSFER_HEADER_SIZE];
    match s.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => return None,
        Err(e) if e.kind() == ErrorKind::ConnectionReset => return None,
        Err(e) => panic!("read: {e}"),
    }
    let off = i64::from_be_bytes(head[..8].try_into().unwrap());
    let size = i32::from_be_bytes(head[8..].try_into().unwrap());
    assert!(off >= 0 && size >= 0);
    let mut body = vec![0u8; size as usize];
    s.read_exact(&mut body).unwrap();
    Some((off as u64, body))
}

fn ack_of(master: &HaService) -> Option<u64> {
    match master.status() {
        HaStatus::Master(m) => m.slaves.first().and_then(|s| s.ack_offset),
        _ => None,
    }
}

fn slave_count(master: &HaService) -> usize {
    match master.status() {
        HaStatus::Master(m) => m.slaves.len(),
        _ => 0,
    }
}

fn log_with_files(files: u64) -> MemLog {
    let log = MemLog::new(FILE);
    let mut rng = Rng::new(21);
    while log.max_offset() < files * FILE + 1000 {
        log.put(&rng.record(100, 5000));
    }
    log
}

#[test]
fn master_frames_are_batched_contiguous_and_never_cross_a_file() {
    init_tracing();
    let log = log_with_files(3);
    let max = log.max_offset();
    let cfg = HaConfig {
        ha_transfer_batch_size: 10_000,
        ..fast_config()
    };
    let master = start_master(&log, cfg);
    let mut s = connect(&master);
    let start = FILE / 2 + 123;
    // The first report, written in three pieces.
    let bytes = (start as i64).to_be_bytes();
    for part in [&bytes[..3], &bytes[3..5], &bytes[5..]] {
        s.write_all(part).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut at = start;
    let mut frames = 0;
    while at < max {
        let (off, body) = read_frame(&mut s).unwrap();
        if body.is_empty() {
            continue; // a heartbeat may come in between
        }
        assert_eq!(off, at, "contiguous");
        assert!(body.len() <= 10_000, "batch size");
        assert_eq!(off / FILE, (off + body.len() as u64 - 1) / FILE, "one file");
        assert_eq!(body, log.bytes(off, off + body.len() as u64));
        at += body.len() as u64;
        frames += 1;
    }
    assert!(frames > 15);
    // Caught up and idle: a 12-byte heartbeat carrying the next offset.
    let (off, body) = read_frame(&mut s).unwrap();
    assert_eq!((off, body.len()), (max, 0));
    // Nothing was acked beyond the first report.
    assert_eq!(ack_of(&master), Some(start));
    report(&mut s, max);
    assert!(wait_until(Duration::from_secs(5), || ack_of(&master) == Some(max)));
    assert_eq!(master.push2_slave_max_offset(), max);
}

#[test]
fn master_uses_the_first_report_as_start_and_the_last_complete_one_as_ack() {
    init_tracing();
    let log = log_with_files(1);
    let max = log.max_offset();
    let master = start_master(&log, fast_config());
    let mut s = connect(&master);
    report(&mut s, 100);
    assert!(wait_until(Duration::from_secs(5), || ack_of(&master) == Some(100)));
    // Two reports and half of a third in one write: the last complete one counts.
    let mut buf = Vec::new();
    buf.extend_from_slice(&200i64.to_be_bytes());
    buf.extend_from_slice(&300i64.to_be_bytes());
    buf.extend_from_slice(&400i64.to_be_bytes()[..4]);
    s.write_all(&buf).unwrap();
    assert!(wait_until(Duration::from_secs(5), || ack_of(&master) == Some(300)));
    s.write_all(&400i64.to_be_bytes()[4..]).unwrap();
    assert!(wait_until(Duration::from_secs(5), || ack_of(&master) == Some(400)));
    // The transfer started at the first report, whatever came later.
    let (off, body) = read_frame(&mut s).unwrap();
    assert_eq!(off, 100);
    assert_eq!(body, log.bytes(100, 100 + body.len() as u64));
    assert!(max > 400);
}

#[test]
fn empty_slave_report_starts_at_the_last_file() {
    init_tracing();
    let log = log_with_files(2);
    let max = log.max_offset();
    let master = start_master(&log, fast_config());
    let mut s = connect(&master);
    report(&mut s, 0);
    let (off, body) = read_frame(&mut s).unwrap();
    assert_eq!(off, max - max % FILE);
    assert!(!body.is_empty());
}

#[test]
fn report_beyond_the_master_closes_the_connection_and_is_never_acked() {
    init_tracing();
    let log = log_with_files(0);
    let max = log.max_offset();
    let cfg = HaConfig {
        slave_timeout: 300,
        ..fast_config()
    };
    let master = start_master(&log, cfg);
    // A well-behaved slave, so sync waits are attempted.
    let mut good = connect(&master);
    report(&mut good, max);
    assert!(wait_until(Duration::from_secs(5), || master.is_slave_ok(max + 1000)));

    let mut bad = connect(&master);
    report(&mut bad, max + 1000);
    // The master tells it where it ends, then closes.
    assert_eq!(read_frame(&mut bad), Some((max, Vec::new())));
    assert_eq!(read_frame(&mut bad), None, "closed");
    assert!(wait_until(Duration::from_secs(5), || slave_count(&master) == 1));
    assert_eq!(master.push2_slave_max_offset(), max);
    assert_eq!(
        block_on(master.wait_for_slave(max + 1000)),
        ReplicaStatus::FlushSlaveTimeout,
        "an offset the master does not have is never acked"
    );

    // A later report beyond the end closes too (the 4.9.8 rule).
    report(&mut good, max + 1);
    let mut rest = Vec::new();
    let _ = good.read_to_end(&mut rest);
    assert!(wait_until(Duration::from_secs(5), || slave_count(&master) == 0));
    assert_eq!(master.push2_slave_max_offset(), max);
}

#[test]
fn sync_waiter_times_out_when_the_slave_does_not_ack() {
    init_tracing();
    let log = log_with_files(0);
    let cfg = HaConfig {
        slave_timeout: 200,
        ..fast_config()
    };
    let master = start_master(&log, cfg);
    let mut s = connect(&master);
    report(&mut s, 0);
    assert!(wait_until(Duration::from_secs(5), || ack_of(&master) == Some(0)));
    let t0 = Instant::now();
    assert_eq!(
        block_on(master.wait_for_slave(log.max_offset())),
        ReplicaStatus::FlushSlaveTimeout
    );
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_millis(200) && waited < Duration::from_secs(2));
    // The ack arrives: a new wait for the same offset resolves.
    report(&mut s, log.max_offset());
    assert_eq!(
        block_on(master.wait_for_slave(log.max_offset())),
        ReplicaStatus::PutOk
    );
}

#[test]
fn silent_slave_is_closed_after_housekeeping() {
    init_tracing();
    let log = log_with_files(0);
    let cfg = HaConfig {
        ha_send_heartbeat_interval: 50,
        ha_housekeeping_interval: 300,
        ..fast_config()
    };
    let master = start_master(&log, cfg);
    let mut s = connect(&master);
    report(&mut s, log.max_offset());
    assert!(wait_until(Duration::from_secs(5), || slave_count(&master) == 1));
    let t0 = Instant::now();
    // Heartbeats flow, then the master gives up on the silent slave.
    let mut heartbeats = 0;
    while let Some((_, body)) = read_frame(&mut s) {
        assert!(body.is_empty());
        heartbeats += 1;
    }
    assert!(heartbeats >= 2);
    assert!(t0.elapsed() >= Duration::from_millis(250));
    assert!(wait_until(Duration::from_secs(5), || slave_count(&master) == 0));
}

#[test]
fn slave_reports_appends_and_resyncs_on_a_bad_offset() {
    init_tracing();
    let fake = TcpListener::bind("127.0.0.1:0").unwrap();
    let slog = MemLog::new(FILE);
    slog.put(&[9; 1000]);
    let cfg = HaConfig {
        ha_send_heartbeat_interval: 100,
        ..fast_config()
    };
    let slave = HaService::start_slave(
        cfg,
        slog.dyn_log(),
        Some(fake.local_addr().unwrap().to_string()),
    )
    .unwrap();
    let (mut m, _) = fake.accept().unwrap();
    m.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut r = [0u8; 8];
    m.read_exact(&mut r).unwrap();
    assert_eq!(
        u64::from_be_bytes(r),
        1000,
        "reports its max offset on connect"
    );

    // A frame at its offset, trickled in small pieces, then a heartbeat.
    let body: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
    let mut wire = TransferHeader::new(1000, body.len())
        .unwrap()
        .to_bytes()
        .to_vec();
    wire.extend_from_slice(&body);
    wire.extend_from_slice(&TransferHeader::heartbeat(6000).unwrap().to_bytes());
    for chunk in wire.chunks(777) {
        m.write_all(chunk).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    // It appends at exactly that offset and reports the new end.
    let mut got = 0;
    while got != 6000 {
        m.read_exact(&mut r).unwrap();
        got = u64::from_be_bytes(r);
        assert!(got == 1000 || got == 6000, "report {got}");
    }
    assert_eq!(slog.bytes(1000, 6000), body);
    // Idle: it re-reports its offset about every heartbeat interval.
    m.read_exact(&mut r).unwrap();
    assert_eq!(u64::from_be_bytes(r), 6000);

    // A frame at the wrong offset: it drops the connection...
    let mut bad = TransferHeader::new(7000, 3).unwrap().to_bytes().to_vec();
    bad.extend_from_slice(b"xyz");
    m.write_all(&bad).unwrap();
    let mut rest = Vec::new();
    let _ = m.read_to_end(&mut rest);
    assert!(rest.len() % 8 == 0, "only whole reports");
    assert_eq!(slog.max_offset(), 6000, "nothing appended");
    // ...and reconnects, reporting its own end again.
    let (mut m2, _) = fake.accept().unwrap();
    m2.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    m2.read_exact(&mut r).unwrap();
    assert_eq!(u64::from_be_bytes(r), 6000);
    match slave.status() {
        HaStatus::Slave(c) => assert!(c.connects >= 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn slave_drops_a_silent_master_and_reconnects() {
    init_tracing();
    let fake = TcpListener::bind("127.0.0.1:0").unwrap();
    let slog = MemLog::new(FILE);
    let cfg = HaConfig {
        ha_send_heartbeat_interval: 50,
        ha_housekeeping_interval: 300,
        ..fast_config()
    };
    let _slave = HaService::start_slave(
        cfg,
        slog.dyn_log(),
        Some(fake.local_addr().unwrap().to_string()),
    )
    .unwrap();
    let (mut m, _) = fake.accept().unwrap();
    m.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let t0 = Instant::now();
    let mut all = Vec::new();
    let _ = m.read_to_end(&mut all);
    let silent = t0.elapsed();
    assert!(
        silent >= Duration::from_millis(250),
        "closed after {silent:?}"
    );
    assert!(
        all.len() >= 16 && all.len() % 8 == 0,
        "reports: {}",
        all.len()
    );
    assert!(
        all.chunks(8).all(|c| c == [0u8; 8]),
        "an empty slave reports 0"
    );
    let (_m2, _) = fake.accept().unwrap();
}
