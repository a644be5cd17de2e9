//! Start and stop, over and over: every thread the services start is joined by
//! `stop`. Alone in its binary so the process's thread count is ours to check.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns

mod support;

use std::time::Duration;

use ha::{HaLog, HaStatus, ReplicaStatus};
use support::{MemLog, fast_config, init_tracing, start_master, start_slave};
use test_support::{block_on, wait_until};

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// The names of this process's threads, for a failure message.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|name| name.trim_end().to_owned())
        .collect()
}

/// Whether the thread count is back to `before`. `pthread_join` returns when the kernel
/// clears the thread's tid, a moment before the task leaves /proc/self/task, so a joined
/// thread may still be listed for a few milliseconds; a leaked one stays for good.
fn back_to(before: usize) -> bool {
    wait_until(Duration::from_secs(2), || threads() == before)
}

#[test]
fn start_stop_repeatedly_without_leaking_threads() {
    init_tracing();
    let mlog = MemLog::new(64 * 1024);
    mlog.put(&[1; 1000]);
    let before = threads();
    for round in 0..15 {
        let master = start_master(&mlog, fast_config());
        let slog = MemLog::new(64 * 1024);
        let slave = start_slave(&slog, fast_config(), &master);
        assert!(wait_until(Duration::from_secs(5), || {
            slog.max_offset() == mlog.max_offset()
        }));
        assert!(
            threads() >= before + 3,
            "ha-master, ha-group-transfer, ha-client"
        );
        // Either order, and stop twice.
        if round % 2 == 0 {
            master.stop();
            slave.stop();
        } else {
            slave.stop();
            master.stop();
        }
        master.stop();
        slave.stop();
        assert!(!master.is_running() && !slave.is_running());
        assert_eq!(master.status(), HaStatus::Stopped);
        assert_eq!(
            block_on(master.wait_for_slave(1)),
            ReplicaStatus::SlaveNotAvailable
        );
        assert!(
            back_to(before),
            "round {round}: threads joined, yet running: {:?}",
            thread_names()
        );
    }
    // Dropping a running service stops it too.
    {
        let master = start_master(&mlog, fast_config());
        let _slave = start_slave(&MemLog::new(64 * 1024), fast_config(), &master);
    }
    assert!(back_to(before), "still running: {:?}", thread_names());
}
