//! Child processes of the drivers (`bench`, `reliability`): [`Proc`] runs one in a process
//! group of its own, stopped on drop (SIGTERM to the group, SIGKILL after a grace period) and
//! on panic (drop runs while unwinding); every child the test harness starts
//! ([`crate::harness::child`]) is [`track`]ed; on Ctrl-C / SIGTERM of a driver,
//! [`install_signal_handler`] kills every group and tracked process still alive and runs the
//! hooks registered with [`on_interrupt`] (unmounting a scratch file system, say). Also their
//! CPU time and anonymous RSS from `/proc`.

use crate::spawn::GatedCommand;
use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// How long a group may take to exit after SIGTERM before it is killed. Short: the stores
/// are thrown away after every run, and a JVM broker takes ~7 s to shut down cleanly.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Process groups alive right now (their leaders' pids).
static GROUPS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
/// Single child processes alive right now (in the driver's own process group).
static TRACKED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
/// What runs after the kills on an interrupt.
static HOOKS: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

fn groups() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    GROUPS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn tracked() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    TRACKED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Registers a child process (not a group leader) to be killed on an interrupt. Call
/// [`untrack`] once it has been waited for, before its pid can be reused.
pub fn track(pid: u32) {
    tracked().insert(pid);
}

/// Forgets a child registered with [`track`].
pub fn untrack(pid: u32) {
    tracked().remove(&pid);
}

/// Registers `hook` to run on an interrupt, after every child is killed.
pub fn on_interrupt(hook: fn()) {
    let mut hooks = HOOKS.lock().unwrap_or_else(PoisonError::into_inner);
    if !hooks.contains(&hook) {
        hooks.push(hook);
    }
}

/// Sends `signal` (`TERM`, `KILL`) to process group `pgid`.
fn signal_group(pgid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .gated_status();
}

/// Kills every registered process group and tracked process at once (SIGKILL).
pub fn kill_all() {
    let all: Vec<u32> = groups().iter().copied().collect();
    for pgid in all {
        signal_group(pgid, "KILL");
    }
    let singles: Vec<u32> = tracked().iter().copied().collect();
    for pid in singles {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .gated_status();
    }
}

/// On SIGINT or SIGTERM of the driver: kill every child group and tracked child, run the
/// [`on_interrupt`] hooks, exit 130.
pub fn install_signal_handler() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let _ = thread::Builder::new()
            .name("driver-signals".to_owned())
            .spawn(|| {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                rt.block_on(async {
                    let Ok(mut term) =
                        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = term.recv() => {}
                    }
                });
                eprintln!("interrupted: killing the child processes");
                kill_all();
                // Killed processes release their files (mounts) once reaped by the kernel.
                thread::sleep(Duration::from_millis(300));
                let hooks = HOOKS.lock().unwrap_or_else(PoisonError::into_inner).clone();
                for hook in hooks {
                    hook();
                }
                std::process::exit(130);
            });
    });
}

/// One child process (and everything it starts), in its own process group.
#[derive(Debug)]
pub struct Proc {
    /// Short name (`mqbroker-master`, `rocketmq-namesrv`).
    pub name: String,
    child: Option<Child>,
    pid: u32,
    /// Where stdout and stderr go.
    pub log: PathBuf,
}

impl Proc {
    /// Spawns `cmd` with stdout and stderr appended to `log`, in a new process group.
    ///
    /// # Errors
    /// The log cannot be created or the program cannot be started.
    pub fn spawn(name: &str, cmd: Command, log: &Path) -> io::Result<Self> {
        Self::spawn_split(name, cmd, log, None)
    }

    /// As [`spawn`](Self::spawn), with stdout to its own file when `stdout` is given.
    ///
    /// # Errors
    /// A file cannot be created or the program cannot be started.
    pub fn spawn_split(
        name: &str,
        mut cmd: Command,
        log: &Path,
        stdout: Option<&Path>,
    ) -> io::Result<Self> {
        let err = File::options().create(true).append(true).open(log)?;
        let out = match stdout {
            Some(path) => File::create(path)?,
            None => err.try_clone()?,
        };
        cmd.stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let child = cmd
            .gated_spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start {name} ({cmd:?}): {e}")))?;
        let pid = child.id();
        groups().insert(pid);
        Ok(Proc {
            name: name.to_owned(),
            child: Some(child),
            pid,
            log: log.to_owned(),
        })
    }

    /// Its pid (also its process group id).
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether it still runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)))
    }

    /// Waits until a TCP connect to `addr` succeeds; fails early when it exits.
    ///
    /// # Errors
    /// It exited or `timeout` passed; the message holds the end of its log.
    pub fn wait_connectable(&mut self, addr: SocketAddr, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            if !self.is_running() {
                return Err(format!(
                    "{} exited before serving on {addr}\n{}",
                    self.name,
                    self.log_tail(40)
                ));
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{} not serving on {addr} after {timeout:?}\n{}",
                    self.name,
                    self.log_tail(40)
                ));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for it to exit by itself, at most `timeout` (then it is stopped).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            match self.child.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => {
                    self.child = None;
                    groups().remove(&self.pid);
                    // Anything it left behind in its group goes too.
                    signal_group(self.pid, "KILL");
                    return Some(status);
                }
                Some(Ok(None)) => thread::sleep(Duration::from_millis(20)),
                _ => return None,
            }
        }
        self.stop();
        None
    }

    /// The last `lines` lines of its log.
    #[must_use]
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        let from = all.len().saturating_sub(lines);
        format!(
            "----- {} ({}) -----\n{}",
            self.name,
            self.log.display(),
            all[from..].join("\n")
        )
    }

    /// SIGTERM to the group, SIGKILL after [`STOP_GRACE`]; returns how the leader exited.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.stop_within(STOP_GRACE)
    }

    /// SIGTERM to the group, SIGKILL after `grace` (a clean shutdown that must not be cut
    /// short); returns how the leader exited.
    pub fn stop_within(&mut self, grace: Duration) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        signal_group(self.pid, "TERM");
        let deadline = Instant::now() + grace;
        let mut status = None;
        while Instant::now() < deadline {
            if let Ok(Some(s)) = child.try_wait() {
                status = Some(s);
                break;
            }
            thread::sleep(Duration::from_millis(20));
        }
        // Whatever is left of the group (or a leader that ignored SIGTERM).
        signal_group(self.pid, "KILL");
        if status.is_none() {
            status = child.wait().ok();
        }
        groups().remove(&self.pid);
        status
    }
}

impl Proc {
    /// SIGKILL to the group at once (a crash); returns how the leader exited.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        signal_group(self.pid, "KILL");
        let status = child.wait().ok();
        groups().remove(&self.pid);
        status
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

// ---------------------------------------------------------------- /proc

/// Clock ticks per second (`getconf CLK_TCK`; 100 on every Linux we run on).
fn clock_ticks() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .gated_output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// The sum of two CPU-time fields of a `/proc/.../stat` file, in seconds. Fields are
/// numbered as in proc(5), from 1; the command name may hold spaces, so they are counted
/// after its closing paren (which ends field 2).
fn stat_cpu_seconds(path: &str, field_a: usize, field_b: usize) -> Option<f64> {
    let stat = fs::read_to_string(path).ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<f64>().ok();
    Some((field(field_a)? + field(field_b)?) / clock_ticks())
}

/// User + system CPU seconds of `pid` so far (`/proc/PID/stat` utime + stime), threads
/// included.
#[must_use]
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    stat_cpu_seconds(&format!("/proc/{pid}/stat"), 14, 15)
}

/// User + system CPU seconds of this process so far (`/proc/self/stat` utime + stime): a
/// load generated in the driver's own threads.
#[must_use]
pub fn own_cpu_seconds() -> f64 {
    stat_cpu_seconds("/proc/self/stat", 14, 15).unwrap_or(0.0)
}

/// User + system CPU seconds of this process's children that have exited and been waited
/// for (`/proc/self/stat` cutime + cstime): the load generator's, once an `mqbench` run ends.
#[must_use]
pub fn children_cpu_seconds() -> f64 {
    stat_cpu_seconds("/proc/self/stat", 16, 17).unwrap_or(0.0)
}

/// `RssAnon` of `pid` in bytes (`/proc/PID/status`): resident anonymous memory, page
/// cache and mapped files excluded.
#[must_use]
pub fn rss_anon(pid: u32) -> Option<u64> {
    status_kib(pid, "RssAnon:").map(|k| k * 1024)
}

/// `VmRSS` of `pid` in bytes (mapped store files included), for reference.
#[must_use]
pub fn vm_rss(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:").map(|k| k * 1024)
}

/// `RssFile` of `pid` in bytes: resident pages of mapped files (the store's page cache
/// as this process maps it).
#[must_use]
pub fn rss_file(pid: u32) -> Option<u64> {
    status_kib(pid, "RssFile:").map(|k| k * 1024)
}

/// Resident bytes of each file `pid` maps (`/proc/PID/smaps`, `Rss:` summed per path);
/// anonymous mappings are left out.
#[must_use]
pub fn mapped_file_rss(pid: u32) -> Vec<(PathBuf, u64)> {
    let Ok(text) = fs::read_to_string(format!("/proc/{pid}/smaps")) else {
        return Vec::new();
    };
    let mut out: std::collections::BTreeMap<PathBuf, u64> = std::collections::BTreeMap::new();
    let mut current: Option<PathBuf> = None;
    for line in text.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            // A mapping's header: range perms offset dev inode [path].
            current = line
                .split_whitespace()
                .nth(5)
                .filter(|p| p.starts_with('/'))
                .map(PathBuf::from);
        } else if let (Some(path), Some(kib)) = (&current, line.strip_prefix("Rss:")) {
            let kib: u64 = kib
                .split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            *out.entry(path.clone()).or_default() += kib * 1024;
        }
    }
    out.into_iter().collect()
}

fn status_kib(pid: u32, key: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Busy CPU seconds of the whole machine so far (`/proc/stat`: user, nice, system, irq,
/// softirq, steal).
fn machine_busy_seconds() -> Option<f64> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let busy = [0, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|i| v.get(*i))
        .sum::<f64>();
    Some(busy / clock_ticks())
}

/// Samples, once a second, the CPU the whole machine spends minus what `pids` spend: the
/// other work sharing the cores while something is measured.
#[derive(Debug)]
pub struct OtherCpuSampler {
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<Vec<f64>>>,
}

impl OtherCpuSampler {
    /// Starts sampling; `pids` are the measured processes (a gone one counts as its last
    /// reading).
    #[must_use]
    pub fn start(pids: Vec<u32>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            thread::Builder::new()
                .name("bench-other-cpu".to_owned())
                .spawn(move || {
                    let mut last_own: Vec<f64> = pids
                        .iter()
                        .map(|p| cpu_seconds(*p).unwrap_or(0.0))
                        .collect();
                    let mut last_all = machine_busy_seconds().unwrap_or(0.0);
                    let mut last_at = Instant::now();
                    let mut out = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        thread::sleep(Duration::from_millis(100));
                        if last_at.elapsed() < Duration::from_secs(1) {
                            continue;
                        }
                        let secs = last_at.elapsed().as_secs_f64();
                        last_at = Instant::now();
                        let all = machine_busy_seconds().unwrap_or(last_all);
                        let mut own = 0.0;
                        for (pid, last) in pids.iter().zip(last_own.iter_mut()) {
                            let now = cpu_seconds(*pid).unwrap_or(*last);
                            own += now - *last;
                            *last = now;
                        }
                        out.push(((all - last_all - own) / secs * 100.0).max(0.0));
                        last_all = all;
                    }
                    out
                })
                .ok()
        };
        OtherCpuSampler { stop, thread }
    }

    /// Stops; the other work's CPU, % of one core, one value a second.
    #[must_use]
    pub fn finish(mut self) -> Vec<f64> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for OtherCpuSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Samples the `RssAnon` of some processes every 200 ms until dropped; keeps each one's peak.
#[derive(Debug)]
pub struct RssSampler {
    stop: Arc<AtomicBool>,
    peaks: Arc<Vec<AtomicU64>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl RssSampler {
    /// Starts sampling `pids`.
    #[must_use]
    pub fn start(pids: Vec<u32>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peaks: Arc<Vec<AtomicU64>> = Arc::new(pids.iter().map(|_| AtomicU64::new(0)).collect());
        let thread = {
            let (stop, peaks) = (Arc::clone(&stop), Arc::clone(&peaks));
            thread::Builder::new()
                .name("bench-rss".to_owned())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        for (pid, peak) in pids.iter().zip(peaks.iter()) {
                            if let Some(rss) = rss_anon(*pid) {
                                peak.fetch_max(rss, Ordering::Relaxed);
                            }
                        }
                        thread::sleep(Duration::from_millis(200));
                    }
                })
                .ok()
        };
        RssSampler {
            stop,
            peaks,
            thread,
        }
    }

    /// Stops and returns each process's peak, in the order given.
    #[must_use]
    pub fn finish(mut self) -> Vec<u64> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peaks
            .iter()
            .map(|p| p.load(Ordering::Relaxed))
            .collect()
    }
}

impl Drop for RssSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_and_rss() {
        let me = std::process::id();
        assert!(cpu_seconds(me).is_some());
        assert!(rss_anon(me).unwrap() > 0);
        assert!(vm_rss(me).unwrap() >= rss_anon(me).unwrap());
        assert!(rss_file(me).is_some());
        // The test binary itself is a mapped file.
        assert!(mapped_file_rss(me).iter().any(|(_, b)| *b > 0));
        let sampler = RssSampler::start(vec![me]);
        thread::sleep(Duration::from_millis(300));
        assert!(sampler.finish()[0] > 0);
        assert!(machine_busy_seconds().is_some_and(|s| s > 0.0));
        let other = OtherCpuSampler::start(vec![me]);
        thread::sleep(Duration::from_millis(1150));
        let seconds = other.finish();
        assert_eq!(seconds.len(), 1, "{seconds:?}");
        assert!(seconds[0] >= 0.0);
    }

    #[test]
    fn waited_for_children_count_in_children_cpu() {
        let before = children_cpu_seconds();
        let status = Command::new("/bin/sh")
            .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .gated_status()
            .unwrap();
        assert!(status.success());
        assert!(children_cpu_seconds() > before);
    }

    #[test]
    fn group_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("/bin/sh");
        // A child of the child: it must go with the group.
        cmd.args(["-c", "sleep 30 & echo $! > grandchild; wait"]);
        cmd.current_dir(dir.path());
        let mut p = Proc::spawn("sh", cmd, &dir.path().join("sh.log")).unwrap();
        let file = dir.path().join("grandchild");
        let deadline = Instant::now() + Duration::from_secs(5);
        while !file.exists() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        thread::sleep(Duration::from_millis(50));
        let grandchild = fs::read_to_string(&file).unwrap().trim().to_owned();
        assert!(p.is_running());
        assert!(groups().contains(&p.pid()));
        drop(p);
        thread::sleep(Duration::from_millis(100));
        let stat = fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty() || stat.contains(") Z"),
            "grandchild still alive: {stat}"
        );
    }
}
