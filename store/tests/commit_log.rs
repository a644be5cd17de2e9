//! CommitLog behaviour through the public API: put/read, roll with BLANK, batches,
//! size limits, SYNC_FLUSH group commit (also with the transient pool), poisoning,
//! normal and abnormal recovery, HA append/truncate, and the golden layout check.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Rng, batch, config, msg, store_host};
use message::id::OffsetMsgId;
use message::record::{self, Record};
use store::offset_watch::block_on;
use store::{FlushDiskType, MessageStore, PhyOffset, PutMessageStatus, RecordAt, RecoveryMode};

fn decode(bytes: &[u8]) -> record::StoredMessage<'_> {
    match record::decode(bytes) {
        Ok(Some(Record::Message(m))) => m,
        other => panic!("not a message: {other:?}"),
    }
}

/// Walks the whole log through `record_at`, checking every record; returns them.
fn walk(store: &MessageStore) -> Vec<(u64, bytes::Bytes)> {
    let log = store.commit_log();
    let mut out = Vec::new();
    let mut at = log.min_offset();
    while at < log.max_offset() {
        match log.record_at(at).unwrap() {
            Some(RecordAt::Message(b)) => {
                let m = decode(&b);
                m.verify_crc().unwrap();
                assert_eq!(m.physical_offset, at.0);
                let len = b.len() as u64;
                out.push((at.0, b));
                at = PhyOffset(at.0 + len);
            }
            Some(RecordAt::EndOfFile { next }) => at = next,
            None => panic!("hole at {at}"),
        }
    }
    assert_eq!(at, log.max_offset());
    out
}

#[test]
fn put_read_queue_offsets_and_msg_ids() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        MessageStore::open(config(dir.path(), 64 * 1024, FlushDiskType::ASYNC_FLUSH)).unwrap();
    let log = store.commit_log();
    let mut ends = Vec::new();
    for i in 0..50u64 {
        let r = log.put(&msg(
            if i % 2 == 0 { "A" } else { "B" },
            (i % 3) as i32,
            format!("body-{i}"),
        ));
        assert_eq!(r.status, PutMessageStatus::PutOk);
        let a = r.append.unwrap();
        assert_eq!(
            OffsetMsgId::decode(&a.msg_id()),
            Ok(OffsetMsgId {
                addr: store_host(),
                offset: a.wrote_offset.0
            })
        );
        ends.push((a.wrote_offset, a.queue_offset));
        assert_eq!(
            block_on(log.wait_flushed(a.end_offset())),
            PutMessageStatus::PutOk
        );
    }
    let records = walk(&store);
    assert_eq!(records.len(), 50);
    let mut next = std::collections::HashMap::new();
    for (i, (off, b)) in records.iter().enumerate() {
        let m = decode(b);
        assert_eq!(PhyOffset(*off), ends[i].0);
        assert_eq!(m.body, format!("body-{i}").as_bytes());
        let n = next.entry((m.topic.to_owned(), m.queue_id)).or_insert(0u64);
        assert_eq!(m.queue_offset, *n);
        assert_eq!(ends[i].1.0, *n);
        *n += 1;
        assert_eq!(
            message::properties::get(&m.properties_str(), "TAGS"),
            Some("tag-a")
        );
    }
    assert_eq!(log.queue_offset("A", 0).0, next[&("A".to_owned(), 0)]);
}

#[test]
fn roll_writes_blank_marker_and_next_file_starts_at_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), 4096, FlushDiskType::ASYNC_FLUSH)).unwrap();
    let log = store.commit_log();
    let body = vec![b'x'; 1000];
    let mut offs = vec![];
    for _ in 0..5 {
        let r = log.put(&msg("T", 0, body.clone()));
        offs.push(r.append.unwrap().wrote_offset.0);
    }
    // 1000 + 91 + 1 + 18 = 1110 bytes: three fit (3330 + 8 <= 4096), the fourth rolls.
    assert_eq!(offs, vec![0, 1110, 2220, 4096, 5206]);
    let eof = log.record_at(PhyOffset(3330)).unwrap();
    assert_eq!(
        eof,
        Some(RecordAt::EndOfFile {
            next: PhyOffset(4096)
        })
    );
    store.shutdown().unwrap();
    let raw = std::fs::read(dir.path().join("commitlog/00000000000000000000")).unwrap();
    assert_eq!(&raw[3330..3334], &(4096u32 - 3330).to_be_bytes());
    assert_eq!(&raw[3334..3338], &[0xCB, 0xD4, 0x31, 0x94]);
    assert!(dir.path().join("commitlog/00000000000000004096").exists());
}

#[test]
fn batch_put_is_one_append_with_consecutive_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        MessageStore::open(config(dir.path(), 64 * 1024, FlushDiskType::ASYNC_FLUSH)).unwrap();
    let log = store.commit_log();
    log.put(&msg("B", 1, "before"));
    let r = log.put_batch(&batch("B", 1, &[b"one", b"two", b"three"]));
    assert_eq!(r.status, PutMessageStatus::PutOk);
    let a = r.append.unwrap();
    assert_eq!(a.msg_num, 3);
    assert_eq!(a.queue_offset.0, 1);
    assert_eq!(a.msg_id().split(',').count(), 3);
    let recs = walk(&store);
    assert_eq!(recs.len(), 4);
    for (i, (off, b)) in recs[1..].iter().enumerate() {
        let m = decode(b);
        assert_eq!(*off, a.record_offsets[i].0);
        assert_eq!(m.queue_offset, 1 + i as u64);
        assert_eq!(m.properties, b"UNIQ_KEY\x01u\x02CLUSTER\x01c1");
    }
    assert_eq!(log.queue_offset("B", 1).0, 4);
    let mut bad = batch("B", 1, &[b"x"]);
    bad.body.truncate(bad.body.len() - 1);
    assert_eq!(log.put_batch(&bad).status, PutMessageStatus::MessageIllegal);
}

#[test]
fn size_limits_have_statuses() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), 8192, FlushDiskType::ASYNC_FLUSH)).unwrap();
    let log = store.commit_log();
    assert_eq!(
        log.put(&msg("T", 0, vec![0u8; 64 * 1024 + 1])).status,
        PutMessageStatus::MessageIllegal
    );
    assert_eq!(
        log.put(&msg("T", 0, vec![0u8; 8192])).status,
        PutMessageStatus::MessageIllegal,
        "never fits a file"
    );
    let mut m = msg("T", 0, "x");
    m.properties = "a".repeat(40_000);
    assert_eq!(log.put(&m).status, PutMessageStatus::PropertiesSizeExceeded);
    assert_eq!(log.max_offset().0, 0, "nothing written");
    assert_eq!(log.put(&msg("T", 0, "ok")).status, PutMessageStatus::PutOk);
    store.shutdown().unwrap();
    assert_eq!(
        log.put(&msg("T", 0, "late")).status,
        PutMessageStatus::ServiceNotAvailable
    );
}

fn sync_flush_many_writers(pool: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), 64 * 1024, FlushDiskType::SYNC_FLUSH);
    c.transient_store_pool_enable = pool;
    c.transient_store_pool_size = 3;
    c.commit_interval_commit_log = 200; // the group commit must not wait for it
    let store = Arc::new(MessageStore::open(c).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..100 {
                    let r = store.commit_log().put(&msg("S", t, format!("{t}-{i}")));
                    let a = r.append.unwrap();
                    let started = std::time::Instant::now();
                    assert_eq!(
                        block_on(store.commit_log().wait_flushed(a.end_offset())),
                        PutMessageStatus::PutOk
                    );
                    assert!(started.elapsed() < Duration::from_secs(2));
                    assert!(store.commit_log().flushed_offset() >= a.end_offset());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(walk(&store).len(), 800);
}

#[test]
fn sync_flush_group_commit() {
    sync_flush_many_writers(false);
}

#[test]
fn sync_flush_with_transient_pool() {
    sync_flush_many_writers(true);
}

#[test]
fn async_flush_with_transient_pool_becomes_readable_after_commit() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), 16 * 1024, FlushDiskType::ASYNC_FLUSH);
    c.transient_store_pool_enable = true;
    c.transient_store_pool_size = 2;
    c.commit_commit_log_least_pages = 0;
    let store = MessageStore::open(c).unwrap();
    let log = store.commit_log();
    let mut end = PhyOffset(0);
    for i in 0..100 {
        end = log
            .put(&msg("P", 0, vec![i as u8; 500]))
            .append
            .unwrap()
            .end_offset();
    }
    let got = log
        .readable_watch()
        .wait_blocking(end.0, Duration::from_secs(5));
    assert!(got >= end.0);
    assert_eq!(walk(&store).len(), 100);
    store.shutdown().unwrap();
    // The store lock is held until the store is dropped.
    drop(store);
    let store =
        MessageStore::open(config(dir.path(), 16 * 1024, FlushDiskType::ASYNC_FLUSH)).unwrap();
    assert_eq!(
        store.commit_log().recovery_report().mode,
        RecoveryMode::Normal
    );
    assert_eq!(walk(&store).len(), 100);
}

#[test]
fn poisoned_writer_fails_fast_until_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path(), 64 * 1024, FlushDiskType::SYNC_FLUSH);
    let store = MessageStore::open(c.clone()).unwrap();
    let log = store.commit_log();
    let a = log.put(&msg("T", 0, "one")).append.unwrap();
    assert_eq!(
        block_on(log.wait_flushed(a.end_offset())),
        PutMessageStatus::PutOk
    );
    log.poison_for_test("simulated fdatasync EIO");
    assert_eq!(
        log.put(&msg("T", 0, "two")).status,
        PutMessageStatus::WriterPoisoned
    );
    assert_eq!(
        log.put_batch(&batch("T", 0, &[b"x"])).status,
        PutMessageStatus::WriterPoisoned
    );
    assert_eq!(
        block_on(log.wait_flushed(PhyOffset(a.end_offset().0 + 1))),
        PutMessageStatus::WriterPoisoned
    );
    assert!(log.append_raw(log.max_offset(), b"zz").is_err());
    assert_eq!(
        PutMessageStatus::WriterPoisoned.rocketmq(),
        PutMessageStatus::ServiceNotAvailable
    );
    drop(store);
    assert!(
        dir.path().join("abort").exists(),
        "a poisoned store recovers abnormally"
    );
    let store = MessageStore::open(c).unwrap();
    assert_eq!(
        store.commit_log().recovery_report().mode,
        RecoveryMode::Abnormal
    );
    assert_eq!(walk(&store).len(), 1);
    assert_eq!(
        store.commit_log().put(&msg("T", 0, "three")).status,
        PutMessageStatus::PutOk
    );
}

#[test]
fn normal_reopen_continues_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path(), 4096, FlushDiskType::ASYNC_FLUSH);
    let store = MessageStore::open(c.clone()).unwrap();
    for i in 0..40 {
        store.commit_log().put(&msg("T", 2, vec![b'a'; 100 + i]));
    }
    let end = store.commit_log().max_offset();
    store.shutdown().unwrap();
    assert!(!dir.path().join("abort").exists());
    drop(store);
    let store = MessageStore::open(c).unwrap();
    let rep = store.commit_log().recovery_report().clone();
    assert_eq!(rep.mode, RecoveryMode::Normal);
    assert_eq!(rep.end_offset, end.0);
    assert_eq!(rep.truncated_bytes, 0);
    let r = store.commit_log().put(&msg("T", 2, "next")).append.unwrap();
    assert_eq!(
        r.queue_offset.0, 40,
        "queue offsets rebuilt from records, also of older files"
    );
    assert_eq!(walk(&store).len(), 41);
}

#[test]
fn abnormal_recovery_cuts_garbage_and_bad_crc() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path(), 4096, FlushDiskType::ASYNC_FLUSH);
    let store = MessageStore::open(c.clone()).unwrap();
    let mut offs = vec![];
    for i in 0..30u8 {
        offs.push(
            store
                .commit_log()
                .put(&msg("T", 0, vec![i; 300]))
                .append
                .unwrap(),
        );
    }
    let end = store.commit_log().max_offset().0;
    store.shutdown().unwrap();
    drop(store);

    // Garbage after the end of the last file, as a torn write leaves it.
    let last = dir
        .path()
        .join(format!("commitlog/{:020}", end - end % 4096));
    let mut raw = std::fs::read(&last).unwrap();
    let rel = (end % 4096) as usize;
    raw[rel..rel + 50].copy_from_slice(&[0xAB; 50]);
    std::fs::write(&last, &raw).unwrap();
    std::fs::write(dir.path().join("abort"), b"").unwrap();
    let store = MessageStore::open(c.clone()).unwrap();
    let rep = store.commit_log().recovery_report().clone();
    assert_eq!(rep.mode, RecoveryMode::Abnormal);
    assert_eq!(rep.end_offset, end);
    assert_eq!(rep.truncated_bytes, 50);
    assert_eq!(walk(&store).len(), 30);
    store.shutdown().unwrap();
    drop(store);
    let raw = std::fs::read(&last).unwrap();
    assert!(
        raw[rel..].iter().all(|&b| b == 0),
        "garbage zero-filled on disk"
    );

    // A flipped body byte in record 10: it and everything after it go.
    let victim = &offs[10];
    let path = dir.path().join(format!(
        "commitlog/{:020}",
        victim.wrote_offset.0 - victim.wrote_offset.0 % 4096
    ));
    let mut raw = std::fs::read(&path).unwrap();
    raw[(victim.wrote_offset.0 % 4096) as usize + 100] ^= 0x55;
    std::fs::write(&path, &raw).unwrap();
    std::fs::write(dir.path().join("abort"), b"").unwrap();
    let store = MessageStore::open(c).unwrap();
    let rep = store.commit_log().recovery_report().clone();
    assert_eq!(rep.end_offset, victim.wrote_offset.0);
    assert!(matches!(
        rep.stop,
        Some(store::recovery::StopReason::Invalid(
            record::RecordError::Crc { .. }
        ))
    ));
    assert!(rep.removed_nonempty_files > 0);
    assert_eq!(walk(&store).len(), 10);
    let next = store
        .commit_log()
        .put(&msg("T", 0, "after"))
        .append
        .unwrap();
    assert_eq!(next.wrote_offset, victim.wrote_offset);
    assert_eq!(next.queue_offset.0, 10);
}

#[test]
fn append_raw_replicates_and_truncate_dirty_cuts() {
    let a_dir = tempfile::tempdir().unwrap();
    let b_dir = tempfile::tempdir().unwrap();
    let master =
        MessageStore::open(config(a_dir.path(), 4096, FlushDiskType::ASYNC_FLUSH)).unwrap();
    let slave = MessageStore::open(config(b_dir.path(), 4096, FlushDiskType::ASYNC_FLUSH)).unwrap();
    let mut rng = Rng(7);
    let mut appends = vec![];
    for i in 0..60 {
        appends.push(
            master
                .commit_log()
                .put(&msg("R", i % 2, vec![b'r'; 10 + rng.below(500) as usize]))
                .append
                .unwrap(),
        );
    }
    // Ship in uneven chunks, as HA frames would.
    let mut at = PhyOffset(0);
    while at < master.commit_log().max_offset() {
        let chunk = master.commit_log().read_from(at).unwrap();
        let n = chunk.len().min(1 + rng.below(700) as usize);
        slave.commit_log().append_raw(at, &chunk[..n]).unwrap();
        at = PhyOffset(at.0 + n as u64);
    }
    assert!(matches!(
        slave.commit_log().append_raw(PhyOffset(at.0 + 1), b"x"),
        Err(store::StoreError::OffsetMismatch { .. })
    ));
    let m = walk(&master);
    let s = walk(&slave);
    assert_eq!(m, s);
    // Read slices pin the bytes: truncation waits for them (here: drop them first).
    drop((m, s));

    let cut = appends[40].wrote_offset;
    let held = slave
        .commit_log()
        .read(appends[10].wrote_offset, 8)
        .unwrap();
    drop(held);
    // The store-level truncation also cuts consume queues and index, and takes the
    // queue offsets from the consume queues.
    slave.truncate_dirty(cut).unwrap();
    assert_eq!(slave.commit_log().max_offset(), cut);
    assert_eq!(walk(&slave).len(), 40);
    let next = slave
        .commit_log()
        .put(&msg("R", 0, "new master"))
        .append
        .unwrap();
    assert_eq!(next.wrote_offset, cut);
    assert_eq!(next.queue_offset.0, 20);
}

#[test]
fn record_at_out_of_range_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), 4096, FlushDiskType::ASYNC_FLUSH)).unwrap();
    let log = store.commit_log();
    assert_eq!(log.record_at(PhyOffset(0)).unwrap(), None);
    let a = log.put(&msg("T", 0, "abc")).append.unwrap();
    assert!(
        log.record_at(PhyOffset(a.end_offset().0 + 100_000))
            .is_err()
    );
    assert!(
        log.record_at(PhyOffset(5)).is_err(),
        "not a record boundary"
    );
    assert!(log.read(PhyOffset(0), 10_000).is_none());
}

/// An independent decoder, written from the documented layout (not using
/// `message::record`), reads a store written by our code field by field.
#[test]
fn golden_layout_read_by_independent_decoder() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), 4096, FlushDiskType::ASYNC_FLUSH)).unwrap();
    let log = store.commit_log();
    let mut m1 = msg("TopicTest", 3, "Hello RocketMQ");
    m1.flag = 5;
    m1.reconsume_times = 2;
    m1.prepared_transaction_offset = 77;
    let r1 = log.put(&m1).append.unwrap();
    let mut m2 = msg("T6", 1, vec![0xEE; 3900]);
    m2.born_host = "[2001:db8::1]:1234".parse().unwrap();
    m2.properties = String::new();
    let r2 = log.put(&m2).append.unwrap();
    store.shutdown().unwrap();
    drop(store);

    let f0 = std::fs::read(dir.path().join("commitlog/00000000000000000000")).unwrap();
    let f1 = std::fs::read(dir.path().join("commitlog/00000000000000004096")).unwrap();
    assert_eq!(f0.len(), 4096);
    let be32 = |b: &[u8], o: usize| u32::from_be_bytes(b[o..o + 4].try_into().unwrap());
    let be64 = |b: &[u8], o: usize| u64::from_be_bytes(b[o..o + 8].try_into().unwrap());

    // Record 1: IPv4 hosts; expected bytes built by hand from the layout table.
    let props = b"TAGS\x01tag-a\x02KEYS\x01k1";
    let body = b"Hello RocketMQ";
    let total = 4
        + 4
        + 4
        + 4
        + 4
        + 8
        + 8
        + 4
        + 8
        + 8
        + 8
        + 8
        + 4
        + 8
        + 4
        + body.len()
        + 1
        + 9
        + 2
        + props.len();
    let mut want = Vec::new();
    want.extend_from_slice(&(total as u32).to_be_bytes());
    want.extend_from_slice(&[0xDA, 0xA3, 0x20, 0xA7]);
    want.extend_from_slice(&(crc32fast::hash(body) & 0x7FFF_FFFF).to_be_bytes());
    want.extend_from_slice(&3u32.to_be_bytes());
    want.extend_from_slice(&5u32.to_be_bytes());
    want.extend_from_slice(&0u64.to_be_bytes()); // queue offset
    want.extend_from_slice(&0u64.to_be_bytes()); // physical offset
    want.extend_from_slice(&0u32.to_be_bytes()); // sysflag
    want.extend_from_slice(&1_700_000_000_000u64.to_be_bytes());
    want.extend_from_slice(&[10, 1, 2, 3, 0, 0, 0x9C, 0x40]); // 10.1.2.3:40000
    want.extend_from_slice(&(r1.store_timestamp as u64).to_be_bytes());
    want.extend_from_slice(&[10, 9, 8, 7, 0, 0, 0x2A, 0x9F]); // 10.9.8.7:10911
    want.extend_from_slice(&2u32.to_be_bytes());
    want.extend_from_slice(&77u64.to_be_bytes());
    want.extend_from_slice(&(body.len() as u32).to_be_bytes());
    want.extend_from_slice(body);
    want.push(9);
    want.extend_from_slice(b"TopicTest");
    want.extend_from_slice(&(props.len() as u16).to_be_bytes());
    want.extend_from_slice(props);
    assert_eq!(&f0[..total], &want[..], "record 1 byte for byte");
    assert_eq!(r1.wrote_bytes, total);

    // Record 2 did not fit after record 1: BLANK marker, then file 1.
    assert_eq!(r2.wrote_offset.0, 4096);
    assert_eq!(be32(&f0, total) as usize, 4096 - total);
    assert_eq!(be32(&f0, total + 4), 0xCBD4_3194);
    let r = &f1;
    assert_eq!(be32(r, 4), 0xDAA3_20A7);
    assert_eq!(be32(r, 8), crc32fast::hash(&[0xEE; 3900]) & 0x7FFF_FFFF);
    assert_eq!(be64(r, 28), 4096, "physical offset");
    assert_eq!(be32(r, 36), 0x10, "born host v6 flag");
    assert_eq!(
        &r[48..64],
        &"2001:db8::1"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets()
    );
    assert_eq!(be32(r, 64), 1234);
    assert_eq!(be64(r, 68) as i64, r2.store_timestamp);
    assert_eq!(&r[76..84], &[10, 9, 8, 7, 0, 0, 0x2A, 0x9F]);
    let body_at = 76 + 8 + 4 + 8;
    assert_eq!(be32(r, body_at) as usize, 3900);
    assert_eq!(r[body_at + 4 + 3900], 2);
    assert_eq!(&r[body_at + 4 + 3901..body_at + 4 + 3903], b"T6");
    assert_eq!(&r[body_at + 4 + 3903..body_at + 4 + 3905], &[0, 0]);
    assert_eq!(be32(r, 0) as usize, body_at + 4 + 3905);

    // Checkpoint layout: physicMsgTimestamp @0 is the last store time.
    let cp = std::fs::read(dir.path().join("checkpoint")).unwrap();
    assert_eq!(cp.len(), 4096);
    assert_eq!(be64(&cp, 0) as i64, r2.store_timestamp);
}

/// Power loss through the "durable image" seam: bytes past the last completed sync
/// are dropped, zeroed or garbled page by page before reopening a copy.
#[test]
fn power_loss_keeps_a_valid_prefix_with_every_acknowledged_record() {
    let mut rng = Rng(Rng::seed());
    for round in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path(), 16 * 1024, FlushDiskType::SYNC_FLUSH);
        let store = Arc::new(MessageStore::open(c).unwrap());
        let acked = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let (store, acked, stop) =
                    (Arc::clone(&store), Arc::clone(&acked), Arc::clone(&stop));
                let mut rng = Rng(rng.next() | 1);
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let body = vec![t as u8; 1 + rng.below(2000) as usize];
                        let a = store.commit_log().put(&msg("P", t, body)).append.unwrap();
                        if block_on(store.commit_log().wait_flushed(a.end_offset()))
                            == PutMessageStatus::PutOk
                        {
                            acked.lock().push((a.wrote_offset.0, a.wrote_bytes));
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50 + rng.below(150)));
        // The durable image: everything below `durable` was synced. Acks so far are
        // all below it.
        let acked_now: Vec<(u64, usize)> = acked.lock().clone();
        let durable = store.commit_log().flushed_offset().0;
        let copy = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(copy.path().join("commitlog")).unwrap();
        let mut original = std::collections::BTreeMap::new();
        for e in std::fs::read_dir(dir.path().join("commitlog")).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(from) = store::mapped_file::parse_file_name(&name) else {
                continue;
            };
            let bytes = std::fs::read(e.path()).unwrap();
            original.insert(from, bytes);
        }
        std::fs::copy(
            dir.path().join("checkpoint"),
            copy.path().join("checkpoint"),
        )
        .unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        drop(store);
        for (from, bytes) in &original {
            let mut b = bytes.clone();
            for page in (0..b.len()).step_by(4096) {
                let (start, end) = (from + page as u64, from + (page + 4096) as u64);
                if end <= durable {
                    continue;
                }
                let lo = if start < durable {
                    (durable - from) as usize
                } else {
                    page
                };
                match rng.below(3) {
                    0 => {}
                    1 => b[lo..page + 4096].fill(0),
                    _ => b[lo..page + 4096]
                        .iter_mut()
                        .for_each(|x| *x = rng.next() as u8),
                }
            }
            std::fs::write(
                copy.path()
                    .join("commitlog")
                    .join(store::mapped_file::file_name(*from)),
                &b,
            )
            .unwrap();
        }
        std::fs::write(copy.path().join("abort"), b"").unwrap();

        let reopened =
            MessageStore::open(config(copy.path(), 16 * 1024, FlushDiskType::SYNC_FLUSH)).unwrap();
        let rep = reopened.commit_log().recovery_report().clone();
        assert_eq!(rep.mode, RecoveryMode::Abnormal);
        eprintln!(
            "power loss round {round}: durable {durable}, recovered end {}, truncated {} bytes, removed {} files, stop {:?}",
            rep.end_offset, rep.truncated_bytes, rep.removed_files, rep.stop
        );
        let max_acked = acked_now
            .iter()
            .map(|(o, l)| o + *l as u64)
            .max()
            .unwrap_or(0);
        assert!(
            rep.end_offset >= max_acked,
            "round {round}: end {} < acked {}",
            rep.end_offset,
            max_acked
        );
        let recs = walk(&reopened);
        // Exactly a prefix of what was written: every recovered record equals the
        // original bytes at its offset.
        for (off, b) in &recs {
            let from = off - off % (16 * 1024);
            let rel = (off - from) as usize;
            assert_eq!(
                &original[&from][rel..rel + b.len()],
                &b[..],
                "round {round}: record at {off} differs"
            );
        }
        let offsets: std::collections::HashSet<u64> = recs.iter().map(|(o, _)| *o).collect();
        for (off, len) in &acked_now {
            assert!(
                offsets.contains(off),
                "round {round}: acknowledged record at {off} ({len} bytes) lost"
            );
        }
    }
}
