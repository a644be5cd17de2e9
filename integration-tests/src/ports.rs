//! Free loopback ports for the processes a test starts, reserved so that tests
//! running in parallel — threads of one test binary, or several test binaries —
//! never hand the same port to two processes.
//!
//! A reservation is three things at once:
//! - a port below the kernel's ephemeral range (`ip_local_port_range`), so no
//!   outgoing connection of any process on the machine can take it by accident;
//! - a listener bound on `127.0.0.1:port` until the child is about to start
//!   ([`PortReservation::release_listener`]), proving the port is free now; it is closed
//!   through [`crate::spawn::close_listener`], so no child forked meanwhile keeps it bound;
//! - a lock file `<tmp>/sluice-test-ports/<port>.lock` holding our pid, created with
//!   `O_EXCL` and removed on drop, so another test process skips the port even after
//!   our listener is closed and while our child owns it. Lock files of processes that
//!   are gone (crashed test runs) are taken over.
//!
//! Tests only ever talk to 127.0.0.0/8: [`assert_loopback`] and [`assert_loopback_args`] check
//! the name server addresses handed to a client or a cluster.
//!
//! Processes that can bind port 0 and report their address (`mqnamesrv -o
//! listenPort=0`) need no reservation at all; brokers, whose HA port is derived from
//! their listen port and whose address must be known before they start, do.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Lowest port handed out.
const RANGE_START: u16 = 15_000;
/// Used when `/proc/sys/net/ipv4/ip_local_port_range` cannot be read.
const DEFAULT_EPHEMERAL_START: u16 = 32_768;
/// Attempts before giving up (each tries one random candidate).
const MAX_ATTEMPTS: usize = 2_000;

/// One reserved loopback port. The port stays reserved until this is dropped.
pub struct PortReservation {
    port: u16,
    listener: Option<TcpListener>,
    lock_file: PathBuf,
}

impl fmt::Debug for PortReservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortReservation")
            .field("port", &self.port)
            .field("listening", &self.listener.is_some())
            .finish_non_exhaustive()
    }
}

impl PortReservation {
    /// The port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:port`.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, self.port))
    }

    /// Closes the placeholder listener so a child can bind the port (through the spawn gate:
    /// no child forked meanwhile keeps it bound). The lock file stays until the reservation is
    /// dropped.
    pub fn release_listener(&mut self) {
        if let Some(listener) = self.listener.take() {
            crate::spawn::close_listener(listener);
        }
    }
}

impl Drop for PortReservation {
    fn drop(&mut self) {
        self.release_listener();
        let _ = fs::remove_file(&self.lock_file);
    }
}

/// Reserves one free loopback port.
///
/// # Panics
/// When no port can be found (the range is exhausted or the temp dir is unusable).
#[must_use]
pub fn reserve() -> PortReservation {
    reserve_consecutive(1)
        .pop()
        .expect("reserve_consecutive(1) returns one port")
}

/// Reserves `n` free loopback ports in a row (`base`, `base + 1`, ...), for processes
/// whose ports are derived from one another (a broker's `listenPort - 2`, `listenPort`,
/// `listenPort + 1`).
///
/// # Panics
/// When `n` is 0 or no such run of ports can be found.
#[must_use]
pub fn reserve_consecutive(n: u16) -> Vec<PortReservation> {
    assert!(n > 0, "reserve at least one port");
    let end = ephemeral_start();
    assert!(
        end > RANGE_START + n,
        "no room below the ephemeral port range"
    );
    let dir = lock_dir();
    for _ in 0..MAX_ATTEMPTS {
        let base = RANGE_START
            + u16::try_from(next_random() % u64::from(end - RANGE_START - n)).unwrap_or(0);
        let mut run = Vec::with_capacity(usize::from(n));
        for port in base..base + n {
            match try_reserve(&dir, port) {
                Some(r) => run.push(r),
                None => break,
            }
        }
        if run.len() == usize::from(n) {
            return run;
        }
    }
    panic!("could not reserve {n} consecutive loopback ports in {RANGE_START}..{end}");
}

fn try_reserve(dir: &Path, port: u16) -> Option<PortReservation> {
    let lock_file = dir.join(format!("{port}.lock"));
    if !take_lock(&lock_file) {
        return None;
    }
    match TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)) {
        Ok(listener) => Some(PortReservation {
            port,
            listener: Some(listener),
            lock_file,
        }),
        Err(_) => {
            let _ = fs::remove_file(&lock_file);
            None
        }
    }
}

/// Creates the lock file, or takes it over when the process that wrote it is gone.
fn take_lock(path: &Path) -> bool {
    for _ in 0..2 {
        match OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(mut f) => {
                let _ = write!(f, "{}", std::process::id());
                return true;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let owner = fs::read_to_string(path)
                    .ok()
                    .and_then(|s| s.trim().parse::<u32>().ok());
                match owner {
                    // Written by a live process (maybe still writing its pid): taken.
                    Some(pid) if Path::new(&format!("/proc/{pid}")).exists() => return false,
                    None if lock_is_fresh(path) => return false,
                    // The owner died without cleaning up: take the port over.
                    _ => {
                        let _ = fs::remove_file(path);
                    }
                }
            }
            Err(_) => return false,
        }
    }
    false
}

/// A lock file without a pid yet is being written right now, unless it is old.
fn lock_is_fresh(path: &Path) -> bool {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|age| age.as_secs() < 10)
}

fn lock_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("sluice-test-ports");
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// The first port of the kernel's ephemeral range; ports at or above it may be taken
/// by any outgoing connection, so none is handed out there.
fn ephemeral_start() -> u16 {
    fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|p| p.parse().ok()))
        .unwrap_or(DEFAULT_EPHEMERAL_START)
}

/// A xorshift generator seeded from the clock and the pid: different test processes
/// start from different ports, and a test process walks the range.
fn next_random() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let mut x = STATE.load(Ordering::Relaxed);
    if x == 0 {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| u64::from(d.subsec_nanos()) ^ d.as_secs());
        x = (nanos ^ (u64::from(std::process::id()) << 32)) | 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, Ordering::Relaxed);
    x
}

/// Panics unless every address in a RocketMQ name server list (`a:p;b:p`) is on loopback: tests
/// never talk to anything else.
pub fn assert_loopback(namesrv: &str) {
    for addr in namesrv.split(';').map(str::trim).filter(|a| !a.is_empty()) {
        let host = match addr.rsplit_once(':') {
            Some((host, _port)) => host,
            None => addr,
        };
        let ok = host.starts_with("127.") || host == "localhost" || host == "[::1]";
        assert!(
            ok,
            "name server {addr:?} is not on loopback; tests only talk to 127.0.0.0/8"
        );
    }
}

/// Panics unless every name server given on a test program's command line (`--namesrv`, `-n`,
/// `-namesrv`, `--namesrvAddr`) is on loopback.
pub fn assert_loopback_args(args: &[&str]) {
    for pair in args.windows(2) {
        if matches!(pair[0], "--namesrv" | "-n" | "-namesrv" | "--namesrvAddr") {
            assert_loopback(pair[1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_are_distinct_and_released() {
        let a = reserve();
        let b = reserve();
        assert_ne!(a.port(), b.port());
        assert!(a.port() >= RANGE_START && a.port() < ephemeral_start());
        // Held: binding it again fails.
        assert!(TcpListener::bind(a.addr()).is_err());
        let lock = lock_dir().join(format!("{}.lock", a.port()));
        assert!(lock.exists());
        let mut a = a;
        a.release_listener();
        let child = TcpListener::bind(a.addr()).expect("released port is bindable");
        // Still reserved for everyone else while `a` lives.
        assert!(!take_lock(&lock));
        drop(child);
        drop(a);
        assert!(!lock.exists());
    }

    #[test]
    fn consecutive_runs() {
        let run = reserve_consecutive(3);
        assert_eq!(run.len(), 3);
        assert_eq!(run[1].port(), run[0].port() + 1);
        assert_eq!(run[2].port(), run[0].port() + 2);
    }

    #[test]
    fn stale_lock_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.lock");
        // A pid that cannot exist (above pid_max).
        fs::write(&path, "4194305").unwrap();
        assert!(take_lock(&path));
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            std::process::id().to_string()
        );
        assert!(!take_lock(&path));
    }

    #[test]
    fn loopback_only() {
        assert_loopback("127.0.0.1:9876");
        assert_loopback("127.0.0.1:9876;localhost:9877");
        assert_loopback_args(&["--namesrv", "127.0.0.1:1", "--topic", "10.0.0.1"]);
        for args in [
            &["--namesrv", "10.1.2.3:9876"][..],
            &["-n", "example.com:9876"],
            &["-namesrv", "127.0.0.1:1;192.168.0.1:2"],
            &["--namesrvAddr", "10.0.0.1:9876"],
        ] {
            assert!(
                std::panic::catch_unwind(|| assert_loopback_args(args)).is_err(),
                "{args:?}"
            );
        }
    }
}
