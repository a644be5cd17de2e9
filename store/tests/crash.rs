//! Crash test with a real `kill -9`.
//!
//! The test re-executes its own binary as a child (env `SLUICE_CRASH_CHILD=<dir>`)
//! that appends random-size records and batches under SYNC_FLUSH with small files (so
//! rolls happen) and prints `offset size crc` for every acknowledged record. The parent
//! kills it with SIGKILL at a random moment, reopens the store (abnormal recovery, the
//! `abort` file is left behind), and checks that every acknowledged record is present
//! and intact and that the whole recovered log is valid. The rounds continue on the
//! same store, so recovery also runs over logs that were recovered before.
//!
//! `SLUICE_CRASH_ROUNDS` (default 20) sets the number of rounds.
//!
//! A second phase runs a child under `ulimit -f` (file size limit below the CommitLog
//! file size, `SIGXFSZ` ignored): creating the file fails in `fallocate`, so puts must
//! answer `CREATE_MAPPED_FILE_FAILED` — a clear status, never a `SIGBUS`.

#![allow(clippy::unwrap_used)] // harness = false: main is the test

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Rng, batch, config, msg};
use message::record::{self, Record};
use store::offset_watch::block_on;
use store::{FlushDiskType, MessageStore, PhyOffset, PutMessageStatus, RecordAt};

const FILE_SIZE: u64 = 64 * 1024;

fn child(dir: &str) {
    let store = Arc::new(
        MessageStore::open(config(dir.as_ref(), FILE_SIZE, FlushDiskType::SYNC_FLUSH)).unwrap(),
    );
    let out = Arc::new(parking_lot::Mutex::new(std::io::stdout()));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (store, out) = (Arc::clone(&store), Arc::clone(&out));
            std::thread::spawn(move || {
                let mut rng = Rng(Rng::seed() ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                loop {
                    let log = store.commit_log();
                    let r = if rng.below(10) == 0 {
                        let a = vec![t as u8; rng.below(300) as usize];
                        let b = vec![0x5A; rng.below(3000) as usize];
                        log.put_batch(&batch("CB", t, &[&a, &b]))
                    } else {
                        let body: Vec<u8> =
                            (0..rng.below(6000)).map(|_| rng.next() as u8).collect();
                        log.put(&msg("C", t, body))
                    };
                    let Some(a) = r.append else {
                        panic!("put failed: {:?}", r.status)
                    };
                    if block_on(log.wait_flushed(a.end_offset())) != PutMessageStatus::PutOk {
                        continue;
                    }
                    // Report each record of the append with its CRC, read back.
                    let offsets = if a.record_offsets.is_empty() {
                        vec![a.wrote_offset]
                    } else {
                        a.record_offsets.clone()
                    };
                    let mut lines = String::new();
                    for off in offsets {
                        let Ok(Some(RecordAt::Message(b))) = log.record_at(off) else {
                            panic!("cannot read back {off}")
                        };
                        let Ok(Some(Record::Message(m))) = record::decode(&b) else {
                            panic!("cannot decode {off}")
                        };
                        lines.push_str(&format!("{} {} {}\n", off.0, b.len(), m.body_crc));
                    }
                    let mut o = out.lock();
                    o.write_all(lines.as_bytes()).unwrap();
                    o.flush().unwrap();
                }
            })
        })
        .collect();
    // The writers run until the parent kills us.
    drop(threads);
    loop {
        std::thread::park();
    }
}

fn verify(store: &MessageStore, acked: &BTreeMap<u64, (usize, u32)>, round: usize) {
    let log = store.commit_log();
    let rep = log.recovery_report();
    let max_acked = acked
        .iter()
        .map(|(o, (l, _))| o + *l as u64)
        .max()
        .unwrap_or(0);
    assert!(
        rep.end_offset >= max_acked,
        "round {round}: recovered end {} < acked end {max_acked}",
        rep.end_offset
    );
    for (off, (len, crc)) in acked {
        let Ok(Some(RecordAt::Message(b))) = log.record_at(PhyOffset(*off)) else {
            panic!("round {round}: acknowledged record at {off} missing")
        };
        let Ok(Some(Record::Message(m))) = record::decode(&b) else {
            panic!("round {round}: acknowledged record at {off} invalid")
        };
        assert_eq!(b.len(), *len, "round {round}: size at {off}");
        assert_eq!(m.body_crc, *crc, "round {round}: crc at {off}");
        m.verify_crc().unwrap();
    }
    // Nothing invalid is served: the whole log walks cleanly.
    let mut at = log.min_offset();
    let mut n = 0u64;
    while at < log.max_offset() {
        match log.record_at(at).unwrap() {
            Some(RecordAt::Message(b)) => {
                let Ok(Some(Record::Message(m))) = record::decode(&b) else {
                    panic!("round {round}: invalid record at {at}")
                };
                m.verify_crc().unwrap();
                assert_eq!(m.physical_offset, at.0);
                at = PhyOffset(at.0 + b.len() as u64);
                n += 1;
            }
            Some(RecordAt::EndOfFile { next }) => at = next,
            None => panic!("round {round}: hole at {at}"),
        }
    }
    eprintln!(
        "round {round}: {:?} recovery, {} acked, {n} records, end {}, truncated {} bytes, removed {} files, stop {:?}, {:?}",
        rep.mode,
        acked.len(),
        rep.end_offset,
        rep.truncated_bytes,
        rep.removed_files,
        rep.stop,
        rep.elapsed
    );
}

fn disk_full_child(dir: &str) {
    let store =
        MessageStore::open(config(dir.as_ref(), 1 << 20, FlushDiskType::ASYNC_FLUSH)).unwrap();
    for _ in 0..2 {
        let r = store.commit_log().put(&msg("F", 0, vec![1u8; 100]));
        println!("{}", r.status);
    }
    store.shutdown().unwrap();
    println!("clean exit");
}

/// Puts on a disk that refuses the space: clear status, process survives.
fn disk_full(exe: &std::path::Path) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 256; exec \"$0\"")
        .arg(exe)
        .env("SLUICE_DISK_FULL_CHILD", dir.path())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child died: {:?}, output {text}",
        out.status
    );
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        vec![
            "CREATE_MAPPED_FILE_FAILED",
            "CREATE_MAPPED_FILE_FAILED",
            "clean exit"
        ]
    );
    eprintln!("disk full: puts answered CREATE_MAPPED_FILE_FAILED, no signal");
}

fn main() {
    if let Ok(dir) = std::env::var("SLUICE_CRASH_CHILD") {
        child(&dir);
        return;
    }
    if let Ok(dir) = std::env::var("SLUICE_DISK_FULL_CHILD") {
        disk_full_child(&dir);
        return;
    }
    let rounds: usize = std::env::var("SLUICE_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng(Rng::seed());
    let mut acked: BTreeMap<u64, (usize, u32)> = BTreeMap::new();
    let started = Instant::now();
    disk_full(&exe);
    for round in 0..rounds {
        let mut child = Command::new(&exe)
            .env("SLUICE_CRASH_CHILD", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let mut it = line.split(' ').map(|v| v.parse::<u64>().unwrap());
                let (o, l, c) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
                lines.push((o, l as usize, c as u32));
            }
            lines
        });
        std::thread::sleep(Duration::from_millis(100 + rng.below(400)));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(!status.success(), "child must have been killed");
        // Lines already in the pipe were acknowledged before the kill.
        for (o, l, c) in reader.join().unwrap() {
            acked.insert(o, (l, c));
        }
        // Killed during its own startup (recovery of the previous round's store), the
        // child may not have created `abort` yet; the previous run stopped cleanly.
        let abnormal = dir.path().join("abort").exists();
        let store =
            MessageStore::open(config(dir.path(), FILE_SIZE, FlushDiskType::SYNC_FLUSH)).unwrap();
        let mode = store.commit_log().recovery_report().mode;
        assert_eq!(mode == store::RecoveryMode::Abnormal, abnormal);
        verify(&store, &acked, round);
        store.shutdown().unwrap();
    }
    assert!(!acked.is_empty(), "the child never acknowledged anything");
    println!(
        "crash: {rounds} rounds, {} acknowledged records verified in {:?}",
        acked.len(),
        started.elapsed()
    );
    println!("{} passed, 0 failed", rounds + 1);
}
