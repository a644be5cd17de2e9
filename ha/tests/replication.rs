//! End-to-end replication over loopback: an in-process master and slave, each on the
//! in-memory log with 64 KiB "files", so the last-file start rule and frames at file
//! boundaries are exercised. Byte identity, reconnects, divergent tails, and the
//! sync-replication waiter.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns

mod support;

use std::time::{Duration, Instant};

use ha::{ClientStatus, HaConfig, HaLog, HaService, HaStatus, MasterStatus, ReplicaStatus};
use support::{MemLog, Rng, fast_config, init_tracing, start_master, start_slave};
use test_support::{block_on, wait_until};

const FILE: u64 = 64 * 1024;

fn master_status(s: &HaService) -> MasterStatus {
    match s.status() {
        HaStatus::Master(m) => m,
        other => panic!("not a master: {other:?}"),
    }
}

fn client_status(s: &HaService) -> ClientStatus {
    match s.status() {
        HaStatus::Slave(c) => c,
        other => panic!("not a slave: {other:?}"),
    }
}

fn fill(log: &MemLog, rng: &mut Rng, records: usize) {
    for _ in 0..records {
        log.put(&rng.record(50, 3000));
    }
}

fn caught_up(master: &MemLog, slave: &MemLog) -> bool {
    wait_until(Duration::from_secs(10), || {
        slave.max_offset() == master.max_offset()
    })
}

fn assert_identical(master: &MemLog, slave: &MemLog) {
    let (from, to) = (slave.min_offset(), slave.max_offset());
    assert_eq!(to, master.max_offset());
    let (a, b) = (master.bytes(from, to), slave.bytes(from, to));
    assert_eq!(a.len(), b.len());
    assert!(
        a == b,
        "slave bytes differ from the master's in [{from}, {to})"
    );
}

#[test]
fn replicates_byte_identically_under_concurrent_appends() {
    init_tracing();
    let mlog = MemLog::new(FILE);
    let mut rng = Rng::new(7);
    fill(&mlog, &mut rng, 100);
    let first_end = mlog.max_offset();
    // The slave already holds the first part, so it asks for everything after it.
    let slog = MemLog::new(FILE);
    slog.append(0, &mlog.bytes(0, first_end)).unwrap();

    let master = start_master(&mlog, fast_config());
    let slave = start_slave(&slog, fast_config(), &master);
    let writer = {
        let mlog = mlog.clone();
        std::thread::spawn(move || {
            let mut rng = Rng::new(11);
            for i in 0..3000 {
                mlog.put(&rng.record(50, 3000));
                if i % 100 == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        })
    };
    writer.join().unwrap();
    assert!(mlog.files() > 50, "many files: {}", mlog.files());
    assert!(caught_up(&mlog, &slog), "slave caught up");
    assert_eq!(slog.min_offset(), 0);
    assert_identical(&mlog, &slog);
    assert!(wait_until(Duration::from_secs(5), || {
        master.push2_slave_max_offset() == mlog.max_offset()
    }));
    let st = master_status(&master);
    assert_eq!(st.slaves.len(), 1);
    assert_eq!(st.slaves[0].ack_offset, Some(mlog.max_offset()));
    assert_eq!(st.slaves[0].transfer_offset, Some(mlog.max_offset()));
    let cs = client_status(&slave);
    assert_eq!(cs.connects, 1);
    assert_eq!(cs.reported_offset, Some(mlog.max_offset()));
    assert!(cs.connected.is_some());
}

#[test]
fn empty_slave_starts_at_the_masters_last_file() {
    init_tracing();
    let mlog = MemLog::new(FILE);
    let mut rng = Rng::new(3);
    fill(&mlog, &mut rng, 150);
    let max = mlog.max_offset();
    assert!(max > 3 * FILE);
    let master = start_master(&mlog, fast_config());
    let slog = MemLog::new(FILE);
    let _slave = start_slave(&slog, fast_config(), &master);
    assert!(caught_up(&mlog, &slog));
    assert_eq!(slog.min_offset(), max - max % FILE, "last file start");
    assert_identical(&mlog, &slog);
    // And it keeps following.
    fill(&mlog, &mut rng, 100);
    assert!(caught_up(&mlog, &slog));
    assert_identical(&mlog, &slog);
}

#[test]
fn slave_reconnects_after_the_master_restarts() {
    init_tracing();
    let mlog = MemLog::new(FILE);
    let mut rng = Rng::new(5);
    fill(&mlog, &mut rng, 20);
    let slog = MemLog::new(FILE);
    slog.append(0, &mlog.bytes(0, mlog.max_offset())).unwrap();
    let master = start_master(&mlog, fast_config());
    let addr = master.listen_addr().unwrap();
    let slave = start_slave(&slog, fast_config(), &master);
    fill(&mlog, &mut rng, 20);
    assert!(caught_up(&mlog, &slog));

    master.stop();
    assert!(wait_until(Duration::from_secs(5), || {
        client_status(&slave).connected.is_none()
    }));
    fill(&mlog, &mut rng, 50);
    std::thread::sleep(Duration::from_millis(300));
    let master = HaService::start_master(
        fast_config(),
        mlog.dyn_log(),
        ha::listen(addr, 1024).unwrap(),
    )
    .unwrap();
    assert!(caught_up(&mlog, &slog), "caught up after the restart");
    assert_identical(&mlog, &slog);
    assert!(client_status(&slave).connects >= 2);
    assert_eq!(master_status(&master).slaves.len(), 1);
}

#[test]
fn changing_the_master_address_moves_the_slave() {
    init_tracing();
    let mlog = MemLog::new(FILE);
    let mut rng = Rng::new(9);
    fill(&mlog, &mut rng, 30);
    // Two HA listeners over the same log: a master reachable at a new address.
    let a = start_master(&mlog, fast_config());
    let b = start_master(&mlog, fast_config());
    let slog = MemLog::new(FILE);
    slog.append(0, &mlog.bytes(0, 4096)).unwrap();
    let slave = start_slave(&slog, fast_config(), &a);
    assert!(caught_up(&mlog, &slog));
    assert_eq!(master_status(&a).slaves.len(), 1);

    let b_addr = b.listen_addr().unwrap();
    slave.update_master_address(&b_addr.to_string());
    assert!(wait_until(Duration::from_secs(5), || {
        client_status(&slave).connected == Some(b_addr)
    }));
    assert!(wait_until(Duration::from_secs(5), || {
        master_status(&a).slaves.is_empty() && master_status(&b).slaves.len() == 1
    }));
    fill(&mlog, &mut rng, 30);
    assert!(caught_up(&mlog, &slog));
    assert_identical(&mlog, &slog);
    assert_eq!(client_status(&slave).master_addr, Some(b_addr.to_string()));
}

#[test]
fn slave_with_a_longer_divergent_tail_is_refused_then_resynced() {
    init_tracing();
    let mlog = MemLog::new(FILE);
    let mut rng = Rng::new(13);
    fill(&mlog, &mut rng, 60);
    let m_max = mlog.max_offset();
    // The slave has the master's log plus a tail the master never had (an old
    // master's unreplicated writes after a failover).
    let slog = MemLog::new(FILE);
    slog.append(0, &mlog.bytes(0, m_max)).unwrap();
    slog.put(&[0xEE; 700]);
    let s_max = slog.max_offset();
    assert!(s_max > m_max);

    let master = start_master(&mlog, fast_config());
    let slave = start_slave(&slog, fast_config(), &master);
    assert!(wait_until(Duration::from_secs(5), || {
        client_status(&slave).divergence.is_some()
    }));
    let d = client_status(&slave).divergence.unwrap();
    assert_eq!((d.own_max, d.master_offset), (s_max, m_max));
    assert_eq!(
        master.push2_slave_max_offset(),
        0,
        "the bogus ack never counted"
    );
    assert_eq!(slog.max_offset(), s_max, "nothing cut without being asked");

    // The operator (or the role switch) cuts the tail; replication resumes.
    slave.resync_from(m_max).unwrap();
    assert_eq!(client_status(&slave).divergence, None);
    fill(&mlog, &mut rng, 40);
    assert!(caught_up(&mlog, &slog));
    assert_identical(&mlog, &slog);
    assert_eq!(slog.min_offset(), 0);
    assert!(wait_until(Duration::from_secs(5), || {
        master.push2_slave_max_offset() == mlog.max_offset()
    }));
}

#[test]
fn sync_waiter_resolves_on_the_slave_ack() {
    init_tracing();
    let mlog = MemLog::new(FILE);
    let mut rng = Rng::new(17);
    fill(&mlog, &mut rng, 10);
    let master = start_master(&mlog, fast_config());
    let slog = MemLog::new(FILE);
    let _slave = start_slave(&slog, fast_config(), &master);
    assert!(caught_up(&mlog, &slog));
    assert!(wait_until(Duration::from_secs(5), || master
        .is_slave_ok(mlog.max_offset())));
    for _ in 0..50 {
        let end = mlog.put(&rng.record(100, 2000));
        let t0 = Instant::now();
        assert_eq!(block_on(master.wait_for_slave(end)), ReplicaStatus::PutOk);
        assert!(t0.elapsed() < Duration::from_secs(1));
        assert!(slog.max_offset() >= end);
    }
}

#[test]
fn sync_waiter_without_a_slave_is_not_available_at_once() {
    init_tracing();
    let mlog = MemLog::new(FILE);
    mlog.put(&[1; 100]);
    let master = start_master(
        &mlog,
        HaConfig {
            slave_timeout: 10_000,
            ..fast_config()
        },
    );
    let t0 = Instant::now();
    assert_eq!(
        block_on(master.wait_for_slave(100)),
        ReplicaStatus::SlaveNotAvailable
    );
    assert!(
        t0.elapsed() < Duration::from_secs(1),
        "at once, not after slaveTimeout"
    );
    assert!(!master.is_slave_ok(100));

    // A slave too far behind (gap 1 KiB here) is as good as none.
    let cfg = HaConfig {
        ha_max_gap_not_in_sync: 1024,
        ..fast_config()
    };
    let mlog = MemLog::new(FILE);
    let master = start_master(&mlog, cfg.clone());
    let slog = MemLog::new(FILE);
    let slave = start_slave(&slog, cfg, &master);
    assert!(wait_until(Duration::from_secs(5), || master.is_slave_ok(0)));
    slave.stop();
    // The slave is gone; the master's log grows by more than the gap.
    for _ in 0..3 {
        mlog.put(&[2; 1000]);
    }
    assert!(wait_until(Duration::from_secs(5), || {
        master_status(&master).slaves.is_empty()
    }));
    assert_eq!(
        block_on(master.wait_for_slave(mlog.max_offset())),
        ReplicaStatus::SlaveNotAvailable
    );
    // On a slave, and after stop, the answer is the same.
    assert_eq!(
        block_on(slave.wait_for_slave(1)),
        ReplicaStatus::SlaveNotAvailable
    );
    master.stop();
    assert_eq!(
        block_on(master.wait_for_slave(1)),
        ReplicaStatus::SlaveNotAvailable
    );
}

#[test]
fn heartbeats_keep_an_idle_connection_alive() {
    init_tracing();
    let cfg = HaConfig {
        ha_send_heartbeat_interval: 50,
        ha_housekeeping_interval: 800,
        ..fast_config()
    };
    let mlog = MemLog::new(FILE);
    mlog.put(&[3; 500]);
    let master = start_master(&mlog, cfg.clone());
    let slog = MemLog::new(FILE);
    let slave = start_slave(&slog, cfg, &master);
    assert!(caught_up(&mlog, &slog));
    // Idle for three housekeeping intervals (kept generous: a loaded CI box can
    // stall a thread for a few hundred ms).
    for _ in 0..16 {
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(master_status(&master).slaves.len(), 1);
        assert!(client_status(&slave).connected.is_some());
    }
    assert_eq!(client_status(&slave).connects, 1, "never reconnected");
    let st = master_status(&master);
    assert!(st.slaves[0].bytes_sent >= 12 * 10, "heartbeats were sent");
    mlog.put(&[4; 500]);
    assert!(caught_up(&mlog, &slog));
}
