//! A restart reads what the store wrote, not the space it reserved: CommitLog files are
//! 1 GiB and `posix_fallocate`d, and a recovery that reads their never-written rest through
//! the mapping makes the kernel zero-fill a page cache page for every page of it — GiBs
//! resident and seconds of start-up for a store of a few MiB. Alone in its binary so the
//! process's resident file pages are ours to measure.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns

mod common;

use std::time::Instant;

use common::{config, msg};
use store::{FlushDiskType, MessageStore, PutMessageStatus, RecoveryMode};

/// `RssFile` of this process (file pages mapped and resident), in bytes.
fn rss_file() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("RssFile:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .unwrap();
    kb * 1024
}

#[test]
fn reopening_a_small_store_leaves_the_reserved_space_unread() {
    const FILE: u64 = 1 << 30;
    let dir = tempfile::tempdir().unwrap();
    let open = || MessageStore::open(config(dir.path(), FILE, FlushDiskType::ASYNC_FLUSH)).unwrap();
    let store = open();
    for i in 0..20_000 {
        let r = store
            .commit_log()
            .put(&msg("Restart", i % 4, vec![b'x'; 256]));
        assert_eq!(r.status, PutMessageStatus::PutOk);
    }
    let written = store.commit_log().max_offset().0;
    store.shutdown().unwrap();
    drop(store);

    for abnormal in [false, true] {
        if abnormal {
            std::fs::write(dir.path().join("abort"), b"").unwrap();
        }
        let before = rss_file();
        let started = Instant::now();
        let store = open();
        let elapsed = started.elapsed();
        let grown = rss_file().saturating_sub(before);
        let report = store.commit_log().recovery_report().clone();
        assert_eq!(
            report.mode,
            if abnormal {
                RecoveryMode::Abnormal
            } else {
                RecoveryMode::Normal
            }
        );
        assert_eq!(report.end_offset, written);
        eprintln!(
            "{:?} recovery of {} MiB: {elapsed:?}, {} MiB of file pages faulted in",
            report.mode,
            written >> 20,
            grown >> 20
        );
        // The written data (7 MiB), the consume queues, the index file and readahead
        // around them; the old recovery read the whole 1 GiB file.
        assert!(
            grown < 128 << 20,
            "{:?} recovery faulted in {} MiB of file pages for {} MiB of data",
            report.mode,
            grown >> 20,
            written >> 20
        );
        store.shutdown().unwrap();
    }
}
