//! An idle master and slave sleep: no busy loop while waiting for data (the master
//! waits on the log's growth future, both sides on their timers). Alone in its binary
//! so the process's CPU time is ours to measure.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns

mod support;

use std::time::Duration;

use ha::HaLog;
use support::{MemLog, fast_config, init_tracing, start_master, start_slave};
use test_support::wait_until;

/// utime + stime of this process, in clock ticks (usually 10 ms).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the parenthesised command name; utime and stime are 14 and 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn idle_replication_does_not_spin() {
    init_tracing();
    let mlog = MemLog::new(64 * 1024);
    mlog.put(&[1; 1000]);
    let master = start_master(&mlog, fast_config());
    let slog = MemLog::new(64 * 1024);
    let _slave = start_slave(&slog, fast_config(), &master);
    assert!(wait_until(Duration::from_secs(5), || {
        slog.max_offset() == mlog.max_offset()
    }));
    let before = cpu_ticks();
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_ticks() - before;
    // Heartbeats every 100 ms on both sides cost next to nothing; a spinning loop
    // would burn the whole second (100 ticks).
    assert!(used <= 10, "{used} ticks of CPU in 1 s of idling");
    // Still live.
    mlog.put(&[2; 1000]);
    assert!(wait_until(Duration::from_secs(5), || {
        slog.max_offset() == mlog.max_offset()
    }));
}
