//! Put throughput (criterion). Run with e.g.
//! `cargo bench -p store --bench put -- --warm-up-time 1 --measurement-time 3`.
//!
//! * `put_hot/1w/{128,1024,4096}`: the put path alone, into a file that is already
//!   created and pre-faulted.
//! * `put_async/{1,4}w/{128,1024,4096}`: puts into the page cache under ASYNC_FLUSH,
//!   1 GiB files (rolls and page provisioning included), one or four writer threads.
//! * `raw_write/{128,1024,4096}`: plain `write(2)` of the same number of bytes in 1 MiB
//!   chunks to one file: the bandwidth the put path is compared with.
//! * `sustained/{put,raw}_1024`: 1 GiB written then synced, i.e. bound by the disk.
//! * `put_pool/1w/1024`: single writer with `transientStorePoolEnable`.
//! * `put_64w/{sync,async}/1024`: 64 writer threads, each waiting for its group
//!   commit (SYNC_FLUSH) vs not (ASYNC_FLUSH).
//! * `put_64t/{sync,async}/1024`: the same with 64 tokio tasks on 2 worker threads
//!   awaiting the flush future, as the broker will.
#![allow(clippy::unwrap_used)] // bench harness code

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use store::offset_watch::block_on;
use store::{FlushDiskType, MessageInner, MessageStore, PutMessageStatus, StoreConfig};

fn message(body: &Bytes, queue_id: i32) -> MessageInner {
    let host: SocketAddr = "10.0.0.1:10911".parse().unwrap();
    MessageInner {
        topic: "BenchTopic".into(),
        queue_id,
        flag: 0,
        body: body.clone(),
        properties: "TAGS\u{1}t\u{2}UNIQ_KEY\u{1}0A0000010000000000000000000000".into(),
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: host,
        store_host: host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

fn open(dir: &std::path::Path, flush: FlushDiskType) -> MessageStore {
    let mut c = StoreConfig::with_root(dir);
    c.flush_disk_type = flush;
    // `SLUICE_PREFAULT=0` measures without background pre-faulting.
    c.prefault_mapped_file_enable = std::env::var("SLUICE_PREFAULT").map_or(true, |v| v != "0");
    MessageStore::open(c).unwrap()
}

fn record_len(body: usize) -> u64 {
    let m = message(&Bytes::from(vec![0u8; body]), 0);
    (91 + m.topic.len() + body + m.properties.len()) as u64
}

/// `iters` puts split over `writers` threads; returns the wall time.
fn put_n(
    store: &Arc<MessageStore>,
    body: &Bytes,
    writers: usize,
    iters: u64,
    wait: bool,
) -> Duration {
    let per = iters.div_ceil(writers as u64);
    let start = Instant::now();
    std::thread::scope(|s| {
        for w in 0..writers {
            let (store, body) = (Arc::clone(store), body.clone());
            s.spawn(move || {
                let m = message(&body, w as i32 % 8);
                let log = store.commit_log();
                for _ in 0..per {
                    let r = log.put(&m);
                    debug_assert_eq!(r.status, PutMessageStatus::PutOk);
                    if wait {
                        let end = r.append.unwrap().end_offset();
                        assert_eq!(block_on(log.wait_flushed(end)), PutMessageStatus::PutOk);
                    }
                }
            });
        }
    });
    start.elapsed()
}

/// Writes back dirty pages left by earlier groups, so one group's writeback does not
/// slow the next group's syncs.
fn quiesce() {
    let _ = std::process::Command::new("sync").status();
}

/// The put path alone: each sample gets a fresh store whose first file is already
/// created and pre-faulted (one untimed put waits for it), so no page provisioning
/// happens inside the timed loop unless it rolls.
fn put_hot(c: &mut Criterion) {
    quiesce();
    let mut g = c.benchmark_group("put_hot");
    g.sample_size(10);
    for size in [128usize, 1024, 4096] {
        let body = Bytes::from(vec![b'x'; size]);
        g.throughput(Throughput::Bytes(record_len(size)));
        g.bench_function(format!("1w/{size}"), |b| {
            b.iter_custom(|iters| {
                let dir = tempfile::tempdir_in("/tmp").unwrap();
                let store = open(dir.path(), FlushDiskType::ASYNC_FLUSH);
                let m = message(&body, 0);
                let log = store.commit_log();
                log.put(&m);
                let start = Instant::now();
                for _ in 0..iters {
                    std::hint::black_box(log.put(&m));
                }
                start.elapsed()
            })
        });
    }
    g.finish();
}

fn put_async(c: &mut Criterion) {
    quiesce();
    let mut g = c.benchmark_group("put_async");
    g.sample_size(20);
    for size in [128usize, 1024, 4096] {
        let body = Bytes::from(vec![b'x'; size]);
        g.throughput(Throughput::Bytes(record_len(size)));
        for writers in [1usize, 4] {
            let dir = tempfile::tempdir_in("/tmp").unwrap();
            let store = Arc::new(open(dir.path(), FlushDiskType::ASYNC_FLUSH));
            g.bench_function(format!("{writers}w/{size}"), |b| {
                b.iter_custom(|iters| {
                    if writers == 1 {
                        let m = message(&body, 0);
                        let log = store.commit_log();
                        let start = Instant::now();
                        for _ in 0..iters {
                            std::hint::black_box(log.put(&m));
                        }
                        start.elapsed()
                    } else {
                        put_n(&store, &body, writers, iters, false)
                    }
                })
            });
        }
    }
    g.finish();
}

fn put_pool(c: &mut Criterion) {
    quiesce();
    let mut g = c.benchmark_group("put_pool");
    g.sample_size(20);
    let body = Bytes::from(vec![b'x'; 1024]);
    g.throughput(Throughput::Bytes(record_len(1024)));
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let mut cfg = StoreConfig::with_root(dir.path());
    cfg.transient_store_pool_enable = true;
    cfg.transient_store_pool_size = 3;
    let store = MessageStore::open(cfg).unwrap();
    g.bench_function("1w/1024", |b| {
        b.iter_custom(|iters| {
            let m = message(&body, 0);
            let log = store.commit_log();
            let start = Instant::now();
            for _ in 0..iters {
                std::hint::black_box(log.put(&m));
            }
            start.elapsed()
        })
    });
    g.finish();
}

fn raw_write(c: &mut Criterion) {
    quiesce();
    let mut g = c.benchmark_group("raw_write");
    g.sample_size(20);
    for size in [128usize, 1024, 4096] {
        let len = record_len(size);
        g.throughput(Throughput::Bytes(len));
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let chunk = vec![b'x'; 1 << 20];
        let mut file = std::fs::File::create(dir.path().join("raw")).unwrap();
        let mut written = 0u64;
        g.bench_function(format!("{size}"), |b| {
            b.iter_custom(|iters| {
                let mut left = iters * len;
                let start = Instant::now();
                while left > 0 {
                    let n = left.min(chunk.len() as u64) as usize;
                    file.write_all(&chunk[..n]).unwrap();
                    left -= n as u64;
                    written += n as u64;
                }
                let el = start.elapsed();
                // Keep the file like a CommitLog segment: start over every 1 GiB.
                if written > 1 << 30 {
                    file = std::fs::File::create(dir.path().join("raw")).unwrap();
                    written = 0;
                }
                el
            })
        });
    }
    g.finish();
}

/// 1 GiB then a sync: throughput bound by the disk, for the put path and plain writes.
fn sustained(c: &mut Criterion) {
    const TOTAL: u64 = 1 << 30;
    quiesce();
    let mut g = c.benchmark_group("sustained");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(TOTAL));
    let body = Bytes::from(vec![b'x'; 1024]);
    let n = TOTAL / record_len(1024);
    g.bench_function("put_1024", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = tempfile::tempdir_in("/tmp").unwrap();
                let store = open(dir.path(), FlushDiskType::ASYNC_FLUSH);
                let m = message(&body, 0);
                let log = store.commit_log();
                let start = Instant::now();
                let mut end = store::PhyOffset(0);
                for _ in 0..n {
                    end = log.put(&m).append.unwrap().end_offset();
                }
                log.durable_watch()
                    .wait_blocking(end.0, Duration::from_secs(600));
                total += start.elapsed();
            }
            total
        })
    });
    g.bench_function("raw_1024", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let chunk = vec![b'x'; 1 << 20];
            for _ in 0..iters {
                let dir = tempfile::tempdir_in("/tmp").unwrap();
                let mut file = std::fs::File::create(dir.path().join("raw")).unwrap();
                let start = Instant::now();
                for _ in 0..TOTAL / chunk.len() as u64 {
                    file.write_all(&chunk).unwrap();
                }
                file.sync_data().unwrap();
                total += start.elapsed();
            }
            total
        })
    });
    g.finish();
}

fn put_sync(c: &mut Criterion) {
    quiesce();
    let mut g = c.benchmark_group("put_64w");
    g.sample_size(10);
    let body = Bytes::from(vec![b'x'; 1024]);
    g.throughput(Throughput::Bytes(record_len(1024)));
    for (name, flush, wait) in [
        ("sync", FlushDiskType::SYNC_FLUSH, true),
        ("async", FlushDiskType::ASYNC_FLUSH, false),
    ] {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let store = Arc::new(open(dir.path(), flush));
        g.bench_function(format!("{name}/1024"), |b| {
            b.iter_custom(|iters| put_n(&store, &body, 64, iters, wait))
        });
    }
    g.finish();
}

/// 64 concurrent writers as tokio tasks (the broker's shape): each awaits its put's
/// flush future before the next put.
fn put_sync_tokio(c: &mut Criterion) {
    quiesce();
    let mut g = c.benchmark_group("put_64t");
    g.sample_size(10);
    let body = Bytes::from(vec![b'x'; 1024]);
    g.throughput(Throughput::Bytes(record_len(1024)));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    for (name, flush) in [
        ("sync", FlushDiskType::SYNC_FLUSH),
        ("async", FlushDiskType::ASYNC_FLUSH),
    ] {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let store = Arc::new(open(dir.path(), flush));
        g.bench_function(format!("{name}/1024"), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                rt.block_on(async {
                    let tasks: Vec<_> = (0..64u64)
                        .map(|t| {
                            let per = iters / 64 + u64::from(t < iters % 64);
                            let (store, body) = (Arc::clone(&store), body.clone());
                            tokio::spawn(async move {
                                let m = message(&body, (t % 8) as i32);
                                for _ in 0..per {
                                    let end =
                                        store.commit_log().put(&m).append.unwrap().end_offset();
                                    let st = store.commit_log().wait_flushed(end).await;
                                    assert_eq!(st, PutMessageStatus::PutOk);
                                }
                            })
                        })
                        .collect();
                    for t in tasks {
                        t.await.unwrap();
                    }
                });
                start.elapsed()
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    put_sync,
    put_sync_tokio,
    put_hot,
    put_async,
    put_pool,
    raw_write,
    sustained
);
criterion_main!(benches);
