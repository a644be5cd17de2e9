//! Replication throughput over loopback with the in-memory log (catch-up of a large
//! backlog, and following live 1 KiB puts), the end-to-end latency of one sync put
//! (append on the master -> frame -> slave append -> report -> waiter resolved), and
//! the waiter's own wake-up latency (ack -> parked thread running again).
//!
//! `cargo bench -p ha --bench replication`
#![allow(clippy::unwrap_used)] // bench harness code

#[path = "../tests/support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ha::{GroupTransfer, GrowthWait, HaConfig, HaLog, HaService, LogError, ReplicaStatus};
use support::{MemLog, Rng, start_master};
use test_support::{block_on, wait_until};

const FILE: u64 = 64 * 1024 * 1024;
const BACKLOG: u64 = 256 * 1024 * 1024;

fn config() -> HaConfig {
    HaConfig::default()
}

fn filled(bytes: u64, record: usize) -> MemLog {
    let log = MemLog::new(FILE);
    let mut rng = Rng::new(1);
    let rec = rng.record(record, record);
    while log.max_offset() < bytes {
        log.put(&rec);
    }
    log
}

/// A slave holding the master's first record, so it asks for everything after it.
fn seeded_slave(master: &MemLog, record: usize) -> MemLog {
    let slave = MemLog::new(FILE);
    slave.append(0, &master.bytes(0, record as u64)).unwrap();
    slave
}

fn follow(log: &MemLog, addr: SocketAddr) -> HaService {
    HaService::start_slave(config(), log.dyn_log(), Some(addr.to_string())).unwrap()
}

/// A slave log that only counts: isolates the protocol and socket cost from the
/// first-touch page faults of a fresh in-memory log.
#[derive(Debug)]
struct CountingLog(AtomicU64);

impl HaLog for CountingLog {
    fn max_offset(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
    fn min_offset(&self) -> u64 {
        0
    }
    fn file_size(&self) -> u64 {
        FILE
    }
    fn read(&self, _offset: u64, _max_len: usize) -> Option<Bytes> {
        None
    }
    fn wait_beyond(&self, _offset: u64) -> GrowthWait {
        Box::pin(std::future::pending())
    }
    fn append(&self, offset: u64, data: &[u8]) -> Result<(), LogError> {
        let end = self.max_offset();
        if offset != end {
            return Err(LogError::OffsetMismatch {
                requested: offset,
                actual: end,
            });
        }
        self.0.store(end + data.len() as u64, Ordering::Release);
        Ok(())
    }
    fn truncate(&self, offset: u64) -> Result<(), LogError> {
        self.0.store(offset, Ordering::Release);
        Ok(())
    }
}

fn throughput(c: &mut Criterion) {
    let mut g = c.benchmark_group("replication");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(15));

    // Catch-up: the slave is BACKLOG behind; time until it holds everything.
    let mlog = filled(BACKLOG, 4096);
    let master = start_master(&mlog, config());
    let addr = master.listen_addr().unwrap();
    g.throughput(Throughput::Bytes(mlog.max_offset() - 4096));
    g.bench_function("catch_up_256MiB", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let slog = seeded_slave(&mlog, 4096);
                let t0 = Instant::now();
                let slave = follow(&slog, addr);
                assert!(wait_until(Duration::from_secs(60), || {
                    slog.max_offset() == mlog.max_offset()
                }));
                total += t0.elapsed();
                slave.stop();
            }
            total
        });
    });
    g.bench_function("catch_up_256MiB_counting_slave", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let slog = Arc::new(CountingLog(AtomicU64::new(4096)));
                let t0 = Instant::now();
                let slave =
                    HaService::start_slave(config(), slog.clone(), Some(addr.to_string())).unwrap();
                assert!(wait_until(Duration::from_secs(60), || {
                    slog.max_offset() == mlog.max_offset()
                }));
                total += t0.elapsed();
                slave.stop();
            }
            total
        });
    });
    master.stop();
    drop(mlog);

    // Live: 64 MiB of 1 KiB puts while the slave follows; time until it has the last.
    const LIVE: u64 = 64 * 1024 * 1024;
    g.throughput(Throughput::Bytes(LIVE));
    g.bench_function("follow_live_1KiB_puts_64MiB", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mlog = MemLog::new(FILE);
                mlog.put(&[0; 1024]);
                let master = start_master(&mlog, config());
                let slog = seeded_slave(&mlog, 1024);
                let slave = follow(&slog, master.listen_addr().unwrap());
                assert!(wait_until(Duration::from_secs(5), || {
                    master.push2_slave_max_offset() == 1024
                }));
                let rec = [7u8; 1024];
                let t0 = Instant::now();
                let mut end = 0;
                while end < LIVE + 1024 {
                    end = mlog.put(&rec);
                }
                assert!(wait_until(Duration::from_secs(60), || {
                    slog.max_offset() == end
                }));
                total += t0.elapsed();
                slave.stop();
                master.stop();
            }
            total
        });
    });
    g.finish();
}

fn sync_put_latency(c: &mut Criterion) {
    let mut g = c.benchmark_group("sync_put");
    let mlog = MemLog::new(FILE);
    mlog.put(&[0; 1024]);
    let master = start_master(&mlog, config());
    let slog = seeded_slave(&mlog, 1024);
    let slave = follow(&slog, master.listen_addr().unwrap());
    assert!(wait_until(Duration::from_secs(5), || master.is_slave_ok(1024)));
    let rec = [3u8; 1024];
    g.bench_function("put_1KiB_until_slave_ack", |b| {
        b.iter(|| {
            let end = mlog.put(&rec);
            assert_eq!(block_on(master.wait_for_slave(end)), ReplicaStatus::PutOk);
        });
    });
    slave.stop();
    master.stop();
    g.finish();
}

/// Parks until woken; signals `registered` after the first (pending) poll.
fn wait_parked(fut: ha::SlaveWait, registered: &mpsc::Sender<()>) -> (ReplicaStatus, Instant) {
    struct ThreadWaker(std::thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    let mut first = true;
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return (v, Instant::now());
        }
        if first {
            first = false;
            registered.send(()).unwrap();
        }
        std::thread::park();
    }
}

fn waiter_wakeup(c: &mut Criterion) {
    let mut g = c.benchmark_group("group_transfer");
    let gt = Arc::new(GroupTransfer::start(u64::MAX, Duration::from_secs(10)).unwrap());
    let slave = gt.register_slave("127.0.0.1:1".parse().unwrap());
    slave.ack(0);
    let (go_tx, go_rx) = mpsc::channel::<u64>();
    let (reg_tx, reg_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<Instant>();
    let waiter = {
        let gt = Arc::clone(&gt);
        std::thread::spawn(move || {
            while let Ok(target) = go_rx.recv() {
                let (status, at) = wait_parked(gt.wait_for_slave(target), &reg_tx);
                assert_eq!(status, ReplicaStatus::PutOk);
                done_tx.send(at).unwrap();
            }
        })
    };
    let mut next = 0u64;
    g.bench_function("ack_to_parked_waiter_running", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                next += 1;
                go_tx.send(next).unwrap();
                reg_rx.recv().unwrap();
                let t0 = Instant::now();
                slave.ack(next);
                let woke = done_rx.recv().unwrap();
                total += woke.saturating_duration_since(t0);
            }
            total
        });
    });
    drop(go_tx);
    waiter.join().unwrap();
    g.finish();
}

criterion_group!(benches, throughput, sync_put_latency, waiter_wakeup);
criterion_main!(benches);
