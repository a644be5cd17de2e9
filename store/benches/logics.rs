//! Consume queues, index and dispatch (criterion).
//! `cargo bench -p store --bench logics -- --warm-up-time 1 --measurement-time 5`
//!
//! * `dispatch/redispatch_200k/{16,1000}q`: dispatch throughput: a 200 000-record
//!   CommitLog (1 KiB bodies, 16 or 1 000 queues, a unique key and a key each) whose
//!   consume queues and index were deleted is opened; the time is the
//!   consume-queue/index part of recovery, which dispatches every record (figure:
//!   records/s; the 1 000-queue case includes creating 1 000 directories and files).
//! * `dispatch/lag/{max,200k,100k}`: one producer thread puts 100 000 × 1 KiB
//!   messages into 16 queues, as fast as it can or paced at 200 000 / 100 000 per
//!   second (bursts of 100, sleeping between), while dispatch follows; a listener measures each record's lag from the
//!   put call to its dispatch and prints the percentiles (the criterion time is the
//!   put phase).
//! * `get_message/32x1KiB`: pulls of 32 × 1 KiB messages from page cache, cycling
//!   over a 100 000-message queue (throughput: message bytes handed out).
//! * `query_message/by_key`: a key query against an index of 1 000 000 entries.
//!
//! The 1 000-queue / 10 GiB recovery case is in `benches/recovery.rs`.
#![allow(clippy::unwrap_used)] // bench harness code

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use message::properties;
use parking_lot::Mutex;
use store::{DispatchListener, DispatchRequest, MatchAll, MessageInner, MessageStore, StoreConfig};

fn message(topic: &str, queue_id: i32, body: &Bytes, seq: u64) -> MessageInner {
    let host: SocketAddr = "10.0.0.1:10911".parse().unwrap();
    let uniq = format!("0A000001{seq:024X}");
    let key = format!("order-{}", seq % 100_000);
    MessageInner {
        topic: topic.into(),
        queue_id,
        flag: 0,
        body: body.clone(),
        properties: properties::build([
            ("TAGS", "TagA"),
            ("KEYS", key.as_str()),
            ("UNIQ_KEY", uniq.as_str()),
            ("SEQ", seq.to_string().as_str()),
        ]),
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: host,
        store_host: host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

fn open(dir: &Path) -> MessageStore {
    let mut c = StoreConfig::with_root(dir);
    c.mapped_file_size_commit_log = 256 << 20;
    MessageStore::open(c).unwrap()
}

fn fill(s: &MessageStore, n: u64, queues: u64) {
    let body = Bytes::from(vec![b'b'; 1024]);
    for i in 0..n {
        let q = i % queues;
        let topic = format!("Topic{}", q / 8);
        assert!(
            s.put_message(&message(&topic, (q % 8) as i32, &body, i))
                .status
                .is_ok()
        );
    }
    assert!(s.wait_dispatched(Duration::from_secs(120)));
}

fn dispatch(c: &mut Criterion) {
    let mut g = c.benchmark_group("dispatch");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    const N: u64 = 200_000;
    for queues in [16u64, 1000] {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = open(dir.path());
            fill(&s, N, queues);
            s.shutdown().unwrap();
        }
        g.throughput(Throughput::Elements(N));
        g.bench_function(format!("redispatch_200k/{queues}q"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    std::fs::remove_dir_all(dir.path().join("consumequeue")).unwrap();
                    std::fs::remove_dir_all(dir.path().join("index")).unwrap();
                    let s = open(dir.path());
                    let rec = *s.logics_recovery();
                    assert_eq!(rec.redispatched_records, N);
                    total += rec.elapsed;
                    s.shutdown().unwrap();
                }
                total
            });
        });
    }

    g.throughput(Throughput::Elements(100_000));
    for rate in [0u64, 200_000, 100_000] {
        let name = if rate == 0 {
            "lag/max".to_owned()
        } else {
            format!("lag/{}k", rate / 1000)
        };
        g.bench_function(name, |b| {
            b.iter_custom(|iters| lag_run(iters, rate));
        });
    }
    g.finish();
}

/// Puts M messages (paced at `rate` per second, 0 = unpaced) and prints the dispatch
/// lag percentiles; returns the put phase's time.
fn lag_run(iters: u64, rate: u64) -> Duration {
    struct Lag {
        t0: Vec<AtomicU64>,
        base: Instant,
        lags: Mutex<Vec<u64>>,
    }
    impl DispatchListener for Lag {
        fn on_dispatch(&self, d: &DispatchRequest<'_>) {
            let now = self.base.elapsed().as_nanos() as u64;
            if let Some(seq) =
                properties::get(d.properties, "SEQ").and_then(|s| s.parse::<usize>().ok())
            {
                if let Some(t) = self.t0.get(seq) {
                    self.lags
                        .lock()
                        .push(now.saturating_sub(t.load(Ordering::Acquire)));
                }
            }
        }
    }
    const M: usize = 100_000;
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let dir = tempfile::tempdir().unwrap();
        let s = open(dir.path());
        let lag = Arc::new(Lag {
            t0: (0..M).map(|_| AtomicU64::new(0)).collect(),
            base: Instant::now(),
            lags: Mutex::new(Vec::with_capacity(M)),
        });
        s.add_dispatch_listener(lag.clone());
        let body = Bytes::from(vec![b'l'; 1024]);
        let msgs: Vec<MessageInner> = (0..M)
            .map(|i| message("Lag", (i % 16) as i32, &body, i as u64))
            .collect();
        let gap_ns = 1_000_000_000u64.checked_div(rate).unwrap_or(0);
        let start = Instant::now();
        for (i, m) in msgs.iter().enumerate() {
            // Paced in bursts of 100 (as a broker receives them), sleeping between.
            if gap_ns > 0 && i % 100 == 0 {
                let due = Duration::from_nanos(gap_ns * i as u64);
                if let Some(wait) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
            lag.t0[i].store(lag.base.elapsed().as_nanos() as u64, Ordering::Release);
            s.put_message(m);
        }
        total += start.elapsed();
        assert!(s.wait_dispatched(Duration::from_secs(60)));
        let mut l = lag.lags.lock().clone();
        l.sort_unstable();
        let p = |q: f64| l[((l.len() as f64 * q) as usize).min(l.len() - 1)] / 1000;
        eprintln!(
            "dispatch lag (us) at {} puts/s over {} records: p50 {} p90 {} p99 {} p99.9 {} max {}",
            if rate == 0 {
                "max".to_owned()
            } else {
                rate.to_string()
            },
            l.len(),
            p(0.5),
            p(0.9),
            p(0.99),
            p(0.999),
            l[l.len() - 1] / 1000
        );
        s.shutdown().unwrap();
    }
    total
}

fn get_message(c: &mut Criterion) {
    let mut g = c.benchmark_group("get_message");
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    const N: u64 = 100_000;
    let body = Bytes::from(vec![b'g'; 1024]);
    for i in 0..N {
        s.put_message(&message("Pull", 0, &body, i));
    }
    assert!(s.wait_dispatched(Duration::from_secs(60)));
    let r = s.get_message("Pull", 0, 0, 32, None, &MatchAll);
    assert_eq!(r.messages.len(), 32);
    let bytes: usize = r.messages.iter().map(Bytes::len).sum();
    eprintln!("32 records = {bytes} bytes handed out per pull");
    g.throughput(Throughput::Bytes(bytes as u64));
    let mut offset = 0u64;
    g.bench_function("32x1KiB", |b| {
        b.iter(|| {
            let r = s.get_message("Pull", 0, offset, 32, None, &MatchAll);
            offset = if r.next_begin_offset + 32 >= N {
                0
            } else {
                r.next_begin_offset
            };
            std::hint::black_box(r.messages.len())
        });
    });
    g.finish();
}

fn query(c: &mut Criterion) {
    let mut g = c.benchmark_group("query_message");
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    // 500 000 records x 2 keys = 1 000 000 index entries; 100 000 distinct KEYS values,
    // so a key query finds 5 records.
    const N: u64 = 500_000;
    let body = Bytes::from(vec![b'q'; 100]);
    for i in 0..N {
        s.put_message(&message("Query", (i % 4) as i32, &body, i));
    }
    assert!(s.wait_dispatched(Duration::from_secs(60)));
    let mut k = 0u64;
    g.bench_function("by_key", |b| {
        b.iter(|| {
            k = (k + 7919) % 100_000;
            let r = s.query_message("Query", &format!("order-{k}"), 32, 0, i64::MAX);
            assert_eq!(r.messages.len(), 5);
            std::hint::black_box(r.messages.len())
        });
    });
    g.bench_function("by_unique_key", |b| {
        b.iter(|| {
            k = (k + 7919) % N;
            let r = s.query_message("Query", &format!("0A000001{k:024X}"), 32, 0, i64::MAX);
            assert_eq!(r.messages.len(), 1);
            std::hint::black_box(r.messages.len())
        });
    });
    g.finish();
}

criterion_group!(benches, get_message, query, dispatch);
criterion_main!(benches);
