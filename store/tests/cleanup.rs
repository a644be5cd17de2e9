//! Expiry cleanup with a manual clock, a fake disk and small files: age, the
//! `deleteWhen` hour window, the disk-ratio triggers (at once, forced, puts refused
//! and accepted again), paced deletion, readers holding a file (waiting, then forced),
//! manual deletion, and consume-queue and index files following the CommitLog.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{keyed, small_config};
use store::clock::{local_hour, system_now_ms};
use store::{
    FlushDiskType, GetMessageStatus, ManualClock, ManualDiskUsage, MatchAll, MessageStore,
    PutMessageStatus, StoreConfig, StoreEnv,
};

const FILE: u64 = 4096;
const HOUR: i64 = 3_600_000;

struct Fixture {
    _dir: tempfile::TempDir,
    store: MessageStore,
    clock: Arc<ManualClock>,
    disk: Arc<ManualDiskUsage>,
    start: i64,
}

/// A store of `files` full 4 KiB commit log files (plus the current one) written
/// "now"; `delete_when` is set to an hour that is not now's nor `now + 73 h`'s unless
/// the test changes it.
fn fixture(files: usize, tweak: impl FnOnce(&mut StoreConfig)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut c = small_config(dir.path(), FILE, FlushDiskType::ASYNC_FLUSH);
    c.mapped_file_size_consume_queue = 20 * 4;
    c.max_index_num = 16;
    let start = system_now_ms();
    let busy = [
        local_hour(start),
        local_hour(start + 73 * HOUR),
        local_hour(start + 71 * HOUR),
    ];
    let quiet = (0..24).find(|h| !busy.contains(h)).unwrap();
    c.delete_when = format!("{quiet:02}");
    tweak(&mut c);
    let clock = Arc::new(ManualClock::new(start));
    let disk = Arc::new(ManualDiskUsage::new(0.5));
    let env = StoreEnv {
        clock: clock.clone(),
        disk: disk.clone(),
    };
    let store = MessageStore::open_with(c, env).unwrap();
    // 3 records of ~1 KiB per file.
    let body = vec![b'e'; 1000];
    let mut i = 0;
    while store.commit_log().files().len() <= files {
        let r = store.put_message(&keyed("T", i % 2, body.clone(), "", &format!("k{i}"), ""));
        assert!(r.status.is_ok());
        i += 1;
    }
    assert!(store.wait_dispatched(Duration::from_secs(10)));
    Fixture {
        _dir: dir,
        store,
        clock,
        disk,
        start,
    }
}

fn file_count(s: &MessageStore) -> usize {
    s.commit_log().files().len()
}

fn set_delete_hour(_f: &Fixture, at: i64) -> String {
    format!("{:02}", local_hour(at))
}

#[test]
fn age_and_hour_window() {
    // Not expired yet (71 h), hour in the window: nothing goes.
    let f = fixture(5, |_| {});
    let in_window_71 = set_delete_hour(&f, f.start + 71 * HOUR);
    drop(f);
    let f = fixture(5, |c| c.delete_when = in_window_71.clone());
    f.clock.set(f.start + 71 * HOUR);
    assert_eq!(f.store.run_cleanup().unwrap().commit_log_files, 0);
    assert_eq!(file_count(&f.store), 6);
    // Expired (73 h) but outside the window: nothing goes either.
    f.clock.set(f.start + 73 * HOUR);
    if local_hour(f.start + 73 * HOUR) != local_hour(f.start + 71 * HOUR) {
        assert_eq!(f.store.run_cleanup().unwrap().commit_log_files, 0);
        assert_eq!(file_count(&f.store), 6);
    }
    // Expired and in the window ("04;<hour>"): all but the newest go.
    let at = f.start + 73 * HOUR;
    let both = format!("04;{}", set_delete_hour(&f, at));
    drop(f);
    let f = fixture(5, |c| c.delete_when = both.clone());
    f.clock.set(at);
    let r = f.store.run_cleanup().unwrap();
    assert_eq!(r.commit_log_files, 5);
    assert_eq!(file_count(&f.store), 1);
    assert_eq!(f.store.min_phy_offset(), 5 * FILE);
}

#[test]
fn disk_ratio_triggers_and_refusal() {
    let f = fixture(4, |_| {});
    // Above diskMaxUsedSpaceRatio (75%): expired files go at once, whatever the hour;
    // unexpired ones stay.
    f.disk.set(Some(0.80));
    f.clock.set(f.start + HOUR);
    assert_eq!(f.store.run_cleanup().unwrap().commit_log_files, 0);
    f.clock.set(f.start + 73 * HOUR);
    assert_eq!(f.store.run_cleanup().unwrap().commit_log_files, 4);

    let f = fixture(4, |_| {});
    // Above 85%: files go regardless of age.
    f.disk.set(Some(0.86));
    assert_eq!(f.store.run_cleanup().unwrap().commit_log_files, 4);
    // ...unless cleanFileForciblyEnable is off.
    let g = fixture(2, |c| c.clean_file_forcibly_enable = false);
    g.disk.set(Some(0.86));
    assert_eq!(g.store.run_cleanup().unwrap().commit_log_files, 0);

    // Above 90%: puts refused with a clear reason, accepted again when usage falls.
    f.disk.set(Some(0.93));
    assert!(f.store.check_disk_space().disk_full);
    let r = f.store.put_message(&keyed("T", 0, "x", "", "", ""));
    assert_eq!(r.status, PutMessageStatus::DiskFull);
    assert_eq!(r.status.rocketmq(), PutMessageStatus::ServiceNotAvailable);
    let reason = f.store.put_refusal_reason().unwrap();
    assert!(
        reason.contains("93.0%") && reason.contains("90%"),
        "{reason}"
    );
    f.disk.set(Some(0.60));
    f.store.check_disk_space();
    assert!(f.store.put_refusal_reason().is_none());
    assert!(
        f.store
            .put_message(&keyed("T", 0, "x", "", "", ""))
            .status
            .is_ok()
    );
    // The cleanup pass itself also re-reads the disk.
    f.disk.set(Some(0.95));
    f.store.run_cleanup().unwrap();
    assert_eq!(
        f.store.put_message(&keyed("T", 0, "x", "", "", "")).status,
        PutMessageStatus::DiskFull
    );
    f.disk.set(None);
    f.store.run_cleanup().unwrap();
    assert!(
        f.store
            .put_message(&keyed("T", 0, "x", "", "", ""))
            .status
            .is_ok()
    );
}

#[test]
fn deletion_is_paced_and_batched() {
    let f = fixture(14, |c| c.disk_max_used_space_ratio = 10);
    f.disk.set(Some(0.5)); // above 10%: delete expired at once
    f.clock.set(f.start + 73 * HOUR);
    f.clock.take_sleeps();
    let r = f.store.run_cleanup().unwrap();
    assert_eq!(r.commit_log_files, 10, "at most 10 per pass");
    let sleeps: Vec<Duration> = f
        .clock
        .take_sleeps()
        .into_iter()
        .filter(|d| *d == Duration::from_millis(100))
        .collect();
    assert!(
        sleeps.len() >= 9,
        "deleteCommitLogFilesInterval between deletions: {sleeps:?}"
    );
    let r = f.store.run_cleanup().unwrap();
    assert_eq!(r.commit_log_files, 4);
    assert_eq!(file_count(&f.store), 1);
}

#[test]
fn readers_hold_a_file_until_forced() {
    let f = fixture(4, |c| c.disk_max_used_space_ratio = 10);
    f.clock.set(f.start + 73 * HOUR);
    // A reader holds a record of the second file.
    let held = f.store.look_message_by_offset(FILE).unwrap();
    let copy = held.to_vec();
    let r = f.store.run_cleanup().unwrap();
    assert_eq!(r.commit_log_files, 1, "stops at the file being read");
    assert_eq!(file_count(&f.store), 4);
    let second = f.store.commit_log().files()[0].path().to_owned();
    assert!(second.exists(), "not unlinked while read");
    assert_eq!(
        f.store.min_phy_offset(),
        2 * FILE,
        "min offset moves past the file being deleted"
    );
    // Its messages are being removed: a pull there says so and moves on.
    let r = f.store.get_message("T", 0, 0, 32, None, &MatchAll);
    assert_eq!(r.status, GetMessageStatus::OffsetTooSmall);
    let min = f.store.min_offset_in_queue("T", 0);
    let first_units = f.store.consume_queues().get("T", 0).unwrap();
    let r = f.store.get_message(
        "T",
        0,
        first_units.files()[0].from() / 20,
        32,
        None,
        &MatchAll,
    );
    assert!(
        matches!(
            r.status,
            GetMessageStatus::MessageWasRemoving
                | GetMessageStatus::OffsetTooSmall
                | GetMessageStatus::Found
        ),
        "{:?}",
        r.status
    );
    assert!(min > 0);
    // Two minutes later the deletion is forced; the reader's bytes stay valid.
    f.clock.advance(Duration::from_secs(121));
    let r = f.store.run_cleanup().unwrap();
    assert!(r.commit_log_files >= 1);
    assert!(!second.exists());
    assert_eq!(&held[..], &copy[..]);
    drop(held);
    assert_eq!(file_count(&f.store), 1);
}

#[test]
fn reader_released_then_next_pass_deletes() {
    let f = fixture(3, |c| c.disk_max_used_space_ratio = 10);
    f.clock.set(f.start + 73 * HOUR);
    let held = f.store.look_message_by_offset(0).unwrap();
    assert_eq!(f.store.run_cleanup().unwrap().commit_log_files, 0);
    drop(held);
    assert_eq!(f.store.run_cleanup().unwrap().commit_log_files, 3);
}

#[test]
fn manual_delete_ignores_the_hour() {
    let f = fixture(3, |_| {});
    f.clock.set(f.start + 73 * HOUR);
    assert_eq!(f.store.run_cleanup().unwrap().commit_log_files, 0);
    f.store.execute_delete_files_manually();
    assert_eq!(f.store.run_cleanup().unwrap().commit_log_files, 3);
}

#[test]
fn consume_queues_and_index_follow_the_commit_log() {
    let f = fixture(10, |c| c.disk_max_used_space_ratio = 10);
    let cq = f.store.consume_queues().get("T", 0).unwrap();
    let cq_files = cq.files().len();
    let index_files = f.store.index().unwrap().files().len();
    assert!(cq_files > 2 && index_files > 2, "{cq_files} {index_files}");
    f.clock.set(f.start + 73 * HOUR);
    let r = f.store.run_cleanup().unwrap();
    assert_eq!(r.commit_log_files, 10);
    assert!(r.consume_queue_files > 0, "{r:?}");
    assert!(r.index_files > 0, "{r:?}");
    let min_phy = f.store.min_phy_offset();
    // Every remaining unit and index file reaches the remaining log, except the last
    // file of each (never deleted).
    for q in [0, 1] {
        let cq = f.store.consume_queues().get("T", q).unwrap();
        let (min, max) = (
            f.store.min_offset_in_queue("T", q),
            f.store.max_offset_in_queue("T", q),
        );
        assert!(min > 0);
        let r = f.store.get_message("T", q, 0, 32, None, &MatchAll);
        assert_eq!(
            (r.status, r.next_begin_offset),
            (GetMessageStatus::OffsetTooSmall, min)
        );
        let r = f.store.get_message("T", q, min, 32, None, &MatchAll);
        if min < max {
            assert!(cq.unit_at(min).unwrap().commit_log_offset >= min_phy);
            assert_eq!(r.status, GetMessageStatus::Found);
        } else {
            assert_eq!(
                r.status,
                GetMessageStatus::OffsetOverflowOne,
                "every record of the queue expired"
            );
        }
    }
    for ix in f.store.index().unwrap().files().iter().rev().skip(1) {
        assert!(ix.end_phy_offset() as u64 >= min_phy);
    }
    // After a restart the min offsets are the same.
    let min0 = f.store.min_offset_in_queue("T", 0);
    let c = f.store.config().clone();
    let Fixture {
        _dir: dir, store, ..
    } = f;
    store.shutdown().unwrap();
    drop(store);
    let s = MessageStore::open(c).unwrap();
    assert_eq!(s.min_offset_in_queue("T", 0), min0);
    drop(s);
    drop(dir);
}
