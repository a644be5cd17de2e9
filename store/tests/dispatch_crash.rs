//! Crash between CommitLog append and dispatch, with a real `kill -9`.
//!
//! The test re-executes its own binary as a child (env `SLUICE_DISPATCH_CRASH_CHILD`)
//! that puts keyed, tagged messages (and some batches and transaction records) into
//! several topics and queues with small commit log, consume queue and index files, so
//! every kind of file rolls. A dispatch listener stalls now and then, so dispatch lags
//! the puts and the kill lands between append and dispatch (and, by chance, between
//! a unit and its index entries). The parent kills the child with SIGKILL at a random
//! moment, reopens the store (abnormal recovery) and checks, from the files alone with
//! the independent decoder: every acknowledged record is in the log; every record of
//! the log is in its consume queue exactly once, at its queue offset, with its size
//! and tags code, and nothing else is; every key of every record is in the index
//! exactly once; and queue offsets continue from the consume queues. Rounds continue
//! on the same store.
//!
//! `SLUICE_DISPATCH_CRASH_ROUNDS` (default 8) sets the number of rounds.

#![allow(clippy::unwrap_used)] // harness = false: main is the test

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{Rng, batch, golden_check, keyed, small_config};
use store::{
    DispatchListener, DispatchRequest, FlushDiskType, MessageStore, PhyOffset, RecordAt,
    StoreConfig,
};

const FILE: u64 = 64 * 1024;

fn cfg(dir: &std::path::Path) -> StoreConfig {
    let mut c = small_config(dir, FILE, FlushDiskType::ASYNC_FLUSH);
    // Make the kill land mid-roll of consume queue and index files often.
    c.mapped_file_size_consume_queue = 20 * 32;
    c.max_index_num = 128;
    c
}

/// Stalls dispatch for a moment every few hundred records.
struct Staller(AtomicU64);

impl DispatchListener for Staller {
    fn on_dispatch(&self, _d: &DispatchRequest<'_>) {
        if self.0.fetch_add(1, Ordering::Relaxed) % 200 == 199 {
            std::thread::sleep(Duration::from_millis(3));
        }
    }
}

fn child(dir: &str) {
    let store = Arc::new(MessageStore::open(cfg(dir.as_ref())).unwrap());
    store.add_dispatch_listener(Arc::new(Staller(AtomicU64::new(0))));
    let out = Arc::new(parking_lot::Mutex::new(std::io::stdout()));
    let threads: Vec<_> = (0..3)
        .map(|t| {
            let (store, out) = (Arc::clone(&store), Arc::clone(&out));
            std::thread::spawn(move || {
                let mut rng = Rng(Rng::seed() ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let mut i = 0u64;
                loop {
                    i += 1;
                    let topic = ["A", "B", "C", "D"][rng.below(4) as usize];
                    let q = rng.below(4) as i32;
                    let r = if rng.below(15) == 0 {
                        store.put_messages(&batch(topic, q, &[b"one", b"two"]))
                    } else {
                        let tags = ["x", "y", ""][rng.below(3) as usize];
                        let keys = format!("k{} t{t}", rng.below(50));
                        let body = vec![t as u8; rng.below(2000) as usize];
                        let mut m = keyed(topic, q, body, tags, &keys, &format!("U{t}-{i}"));
                        m.sys_flag = [0, 0, 0, 0, 0, 0x4, 0x8, 0xC][rng.below(8) as usize];
                        store.put_message(&m)
                    };
                    let Some(a) = r.append else {
                        panic!("put failed: {:?}", r.status)
                    };
                    let offsets = if a.record_offsets.is_empty() {
                        vec![a.wrote_offset]
                    } else {
                        a.record_offsets.clone()
                    };
                    let mut o = out.lock();
                    for off in offsets {
                        writeln!(o, "{}", off.0).unwrap();
                    }
                    o.flush().unwrap();
                }
            })
        })
        .collect();
    drop(threads);
    loop {
        std::thread::park();
    }
}

fn main() {
    if let Ok(dir) = std::env::var("SLUICE_DISPATCH_CRASH_CHILD") {
        child(&dir);
        return;
    }
    let rounds: usize = std::env::var("SLUICE_DISPATCH_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path());
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng(Rng::seed());
    let mut acked: BTreeSet<u64> = BTreeSet::new();
    let started = Instant::now();
    let mut redispatched_total = 0u64;
    let mut lagging_rounds = 0;
    for round in 0..rounds {
        let mut child = Command::new(&exe)
            .env("SLUICE_DISPATCH_CRASH_CHILD", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .map(|l| l.parse::<u64>().unwrap())
                .collect::<Vec<_>>()
        });
        std::thread::sleep(Duration::from_millis(150 + rng.below(450)));
        child.kill().unwrap(); // SIGKILL
        assert!(!child.wait().unwrap().success());
        acked.extend(reader.join().unwrap());
        let store = MessageStore::open(c.clone()).unwrap();
        let rec = *store.logics_recovery();
        redispatched_total += rec.redispatched_records;
        if rec.redispatched_records > 1 {
            lagging_rounds += 1;
        }
        // Every acknowledged record is there.
        for off in &acked {
            assert!(
                matches!(
                    store.commit_log().record_at(PhyOffset(*off)),
                    Ok(Some(RecordAt::Message(_)))
                ),
                "round {round}: acknowledged record at {off} missing"
            );
        }
        // Queue offsets continue from the consume queues.
        for t in ["A", "B", "C", "D"] {
            for q in 0..4 {
                assert_eq!(
                    store.commit_log().queue_offset(t, q).0,
                    store.max_offset_in_queue(t, q),
                    "round {round}: {t}/{q}"
                );
            }
        }
        store.shutdown().unwrap();
        drop(store);
        // From the files alone: every record in its queue and the index exactly once.
        golden_check(dir.path(), &c);
        eprintln!(
            "round {round}: {} acked, redispatched {} from {}, dropped units {}, removed index entries {}, {:?}",
            acked.len(),
            rec.redispatched_records,
            rec.redispatch_from,
            rec.dropped_units,
            rec.removed_index_entries,
            rec.elapsed
        );
    }
    assert!(!acked.is_empty(), "the child never acknowledged anything");
    println!(
        "dispatch crash: {rounds} rounds, {} acknowledged records, {redispatched_total} re-dispatched ({lagging_rounds} rounds killed with dispatch behind) in {:?}",
        acked.len(),
        started.elapsed()
    );
    println!("{rounds} passed, 0 failed");
}
