//! Recovery speed (criterion): the pure scan over a 256 MiB CommitLog file of 1 KiB
//! records, with and without CRC checks; and, with `SLUICE_BENCH_10G=1`, opening a
//! store of 1 000 consume queues and 10 GiB of CommitLog (1 KiB bodies, two index keys
//! each), after a clean stop (`open_10g/normal`) and after a crash (`abort` left:
//! `open_10g/abnormal`). The 10 GiB store is built once under `SLUICE_BENCH_DIR`
//! (default `/tmp/sluice-bench-10g`, about 11 GiB) and reused.
//! `cargo bench -p store --bench recovery -- --warm-up-time 1 --measurement-time 3`
//! `SLUICE_BENCH_10G=1 cargo bench -p store --bench recovery -- open_10g`
#![allow(clippy::unwrap_used)] // bench harness code

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use message::properties;
use message::record::{RecordFields, body_crc, encode, encode_blank};
use store::recovery::scan;
use store::{MessageInner, MessageStore, StoreConfig};

const FILE: usize = 256 << 20;

fn file_of_records(body_len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; FILE];
    let body: Vec<u8> = (0..body_len).map(|i| i as u8).collect();
    let host = "10.0.0.1:10911".parse().unwrap();
    let mut pos = 0usize;
    let mut q = 0u64;
    loop {
        let f = RecordFields {
            body_crc: body_crc(&body),
            queue_id: (q % 8) as i32,
            flag: 0,
            queue_offset: q / 8,
            physical_offset: pos as u64,
            sys_flag: 0,
            born_timestamp: 1,
            born_host: host,
            store_timestamp: 2,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: &body,
            topic: b"BenchTopic",
            properties: [b"TAGS\x01t\x02KEYS\x01k", &[], &[]],
        };
        let len = f.encoded_len().unwrap();
        if pos + len + 8 > FILE {
            encode_blank(&mut buf[pos..], (FILE - pos) as u32);
            return buf;
        }
        encode(&mut buf[pos..pos + len], &f);
        pos += len;
        q += 1;
    }
}

fn recovery(c: &mut Criterion) {
    let mut g = c.benchmark_group("recovery_scan");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(FILE as u64));
    for body in [128usize, 1024, 4096] {
        let bytes = file_of_records(body);
        for crc in [true, false] {
            g.bench_function(
                format!("{body}/{}", if crc { "crc" } else { "nocrc" }),
                |b| {
                    b.iter(|| {
                        let mut n = 0u64;
                        let s = scan(&bytes, 0, FILE, crc, |_, m| n += m.queue_offset & 1);
                        assert_eq!(s.stop, store::recovery::StopReason::EndOfFile);
                        std::hint::black_box(n)
                    })
                },
            );
        }
    }
    g.finish();
}

const TEN_GIB: u64 = 10 << 30;

fn store_10g() -> Option<PathBuf> {
    if std::env::var("SLUICE_BENCH_10G").map_or(true, |v| v != "1") {
        return None;
    }
    let dir = PathBuf::from(
        std::env::var("SLUICE_BENCH_DIR").unwrap_or_else(|_| "/tmp/sluice-bench-10g".into()),
    );
    let done = dir.join("bench-complete");
    if done.exists() {
        return Some(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let s = MessageStore::open(StoreConfig::with_root(&dir)).unwrap();
    let host: SocketAddr = "10.0.0.1:10911".parse().unwrap();
    let body = Bytes::from(vec![b'r'; 1024]);
    let started = Instant::now();
    let mut i = 0u64;
    while s.max_phy_offset() < TEN_GIB {
        let q = i % 1000;
        let uniq = format!("0A000001{i:024X}");
        let key = format!("order-{i}");
        let m = MessageInner {
            topic: format!("Topic{}", q / 8),
            queue_id: (q % 8) as i32,
            flag: 0,
            body: body.clone(),
            properties: properties::build([
                ("TAGS", "TagA"),
                ("KEYS", key.as_str()),
                ("UNIQ_KEY", uniq.as_str()),
            ]),
            sys_flag: 0,
            born_timestamp: 1_700_000_000_000,
            born_host: host,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        };
        assert!(s.put_message(&m).status.is_ok());
        i += 1;
    }
    assert!(s.wait_dispatched(Duration::from_secs(600)));
    s.shutdown().unwrap();
    eprintln!(
        "built the 10 GiB store: {i} records, 1000 queues, in {:?}",
        started.elapsed()
    );
    std::fs::write(&done, b"").unwrap();
    Some(dir)
}

fn open_10g(c: &mut Criterion) {
    let Some(dir) = store_10g() else {
        return;
    };
    let mut g = c.benchmark_group("open_10g");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    for abnormal in [false, true] {
        g.bench_function(if abnormal { "abnormal" } else { "normal" }, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    if abnormal {
                        std::fs::write(dir.join("abort"), b"").unwrap();
                    }
                    let start = Instant::now();
                    let s = MessageStore::open(StoreConfig::with_root(&dir)).unwrap();
                    let took = start.elapsed();
                    total += took;
                    let cl = s.commit_log().recovery_report().clone();
                    let logics = *s.logics_recovery();
                    eprintln!(
                        "open {took:?}: commit log {:?} {:?} from {} ({} records checked), consume queues + index {:?} ({} queues, {} re-dispatched)",
                        cl.mode,
                        cl.elapsed,
                        cl.scanned_from,
                        cl.records,
                        logics.elapsed,
                        logics.queues,
                        logics.redispatched_records
                    );
                    assert_eq!(logics.queues, 1000);
                    s.shutdown().unwrap();
                }
                total
            });
        });
    }
    g.finish();
}

criterion_group!(benches, recovery, open_10g);
criterion_main!(benches);
