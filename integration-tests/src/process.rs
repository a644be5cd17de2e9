//! Our binaries as real child processes: build them once, start them in a temp dir
//! with `-c`/`-o` settings, wait until they serve, stop them on drop — and when a test
//! fails, print the end of their logs and keep their directory.
//!
//! - [`binary`] builds a package's binaries once per test process (`cargo build
//!   --bins -p <package>`, same profile and target dir as the running test) and
//!   returns the path of one. Parallel test binaries may build at the same time:
//!   cargo's own lock on the build directory makes them take turns, and the second
//!   finds everything fresh. `SLUICE_SKIP_BUILD=1` skips the build (CI builds first);
//!   `SLUICE_BIN_DIR` points at prebuilt binaries, and so does [`use_bin_dir`] (a driver's
//!   copy of them).
//! - [`ChildProcess`] is one running binary (generic; `BrokerProcess` will reuse it):
//!   stdout and stderr go to `<dir>/<name>.stdout.log` / `.stderr.log`, readiness is a
//!   log line or a TCP connect, drop sends SIGTERM and SIGKILL after a grace period.
//! - [`NamesrvProcess`] starts `mqnamesrv` from `deploy/namesrv.toml` on an OS-chosen
//!   loopback port and reports the address it logged.
//! - [`HaBrokerProcess`] is one broker of a master/slave pair (role and id changeable across
//!   restarts); [`ha_status`], [`wait_caught_up`], [`registered_ids`], [`mqadmin`] (ours) and
//!   [`compare_store_files`] are what the HA tests (`tests/ha_*.rs`) check it with.
//!
//! ```no_run
//! use integration_tests::client::FakeBroker;
//! use integration_tests::process::NamesrvProcess;
//!
//! let ns = NamesrvProcess::start();
//! let mut broker = FakeBroker::master(&ns.addr(), "broker-a", "127.0.0.1:10911").with_topic("TopicTest", 8, 6);
//! assert_eq!(broker.register().code(), 0);
//! // java.mqadmin(&ns.addr(), &["clusterList"]) ...
//! ```
//!
//! Children get `RUST_LOG=info` (or `$SLUICE_CHILD_RUST_LOG`), never the test's own
//! `RUST_LOG`, so readiness lines are always logged.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::ports::PortReservation;

/// How long a child may take to become ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a child may take to exit after SIGTERM before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);
/// Lines of each log printed when a test fails.
const LOG_TAIL_LINES: usize = 60;
/// The marker `mqnamesrv` (and later `mqbroker`) logs once serving.
pub const LISTENING_MARKER: &str = "listening on ";
/// Timeout of one request sent by [`SyncClient`].
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------- binaries

/// The workspace root (where `deploy/` is).
#[must_use]
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("integration-tests sits in the workspace root")
        .to_owned()
}

/// Prebuilt binaries set by [`use_bin_dir`].
static BIN_DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Makes every child of this process run our binaries from `dir` (prebuilt: nothing is
/// built), as `SLUICE_BIN_DIR` does. The first call wins; returns whether it was this one.
pub fn use_bin_dir(dir: &Path) -> bool {
    BIN_DIR.set(dir.to_owned()).is_ok()
}

/// The directory cargo put the running test's profile into (`target/debug`).
fn profile_dir() -> PathBuf {
    if let Some(dir) = BIN_DIR.get() {
        return dir.clone();
    }
    if let Some(dir) = std::env::var_os("SLUICE_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("path of the running test");
    // target/<profile>/deps/<test>-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("test binaries live in <target>/<profile>/deps")
        .to_owned()
}

/// Whether the binaries the tests run are an optimized build (`target/release`, or a
/// `SLUICE_BIN_DIR` of one): bounds that hold for what operators run are asserted as
/// they are only then.
#[must_use]
pub fn optimized_binaries() -> bool {
    profile_dir()
        .file_name()
        .is_some_and(|name| name != "debug")
}

/// Packages whose binaries this process has built (or failed to build).
static BUILT: Mutex<Option<HashMap<String, Result<(), String>>>> = Mutex::new(None);

/// Builds `package`'s binaries once per test process.
///
/// # Panics
/// When cargo fails, with its output.
pub fn ensure_built(package: &str) {
    if std::env::var_os("SLUICE_SKIP_BUILD").is_some_and(|v| v == "1")
        || std::env::var_os("SLUICE_BIN_DIR").is_some()
        || BIN_DIR.get().is_some()
    {
        return;
    }
    // Held while building: other threads of this process wait for the same build.
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    let result = built
        .get_or_insert_with(HashMap::new)
        .entry(package.to_owned())
        .or_insert_with(|| cargo_build(package))
        .clone();
    if let Err(e) = result {
        panic!("cannot build the binaries of {package}:\n{e}");
    }
}

fn cargo_build(package: &str) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace_root())
        .args(["build", "--bins", "-p", package]);
    match profile_dir().file_name().and_then(OsStr::to_str) {
        Some("debug") | None => {}
        Some("release") => {
            cmd.arg("--release");
        }
        Some(other) => {
            cmd.args(["--profile", other]);
        }
    }
    let started = Instant::now();
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cargo.to_string_lossy()))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    tracing::debug!(package, elapsed = ?started.elapsed(), "binaries built");
    Ok(())
}

/// The path of binary `name` of `package`, built first if needed.
///
/// # Panics
/// When the build fails or the binary is not there afterwards.
#[must_use]
pub fn binary(package: &str, name: &str) -> PathBuf {
    ensure_built(package);
    let path = profile_dir().join(name);
    assert!(
        path.is_file(),
        "{} does not exist after building {package}",
        path.display()
    );
    path
}

// ---------------------------------------------------------------- temp dirs

/// A test's working directory: deleted when dropped, kept (and its path printed)
/// when the test is failing or `SLUICE_KEEP_TEST_DIRS=1`.
pub struct TestDir {
    dir: Option<TempDir>,
    path: PathBuf,
}

impl fmt::Debug for TestDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TestDir").field(&self.path).finish()
    }
}

impl TestDir {
    /// A fresh directory named `sluice-<prefix>-XXXX` under the temp dir.
    ///
    /// # Panics
    /// When it cannot be created.
    #[must_use]
    pub fn new(prefix: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix(&format!("sluice-{prefix}-"))
            .tempdir()
            .expect("create a temp dir");
        let path = dir.path().to_owned();
        TestDir {
            dir: Some(dir),
            path,
        }
    }

    /// The directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let keep = thread::panicking()
            || std::env::var_os("SLUICE_KEEP_TEST_DIRS").is_some_and(|v| v == "1");
        if let (true, Some(dir)) = (keep, self.dir.take()) {
            let path = dir.keep();
            eprintln!("kept test dir {}", path.display());
        }
    }
}

// ---------------------------------------------------------------- child processes

/// When a started child counts as ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Its stdout or stderr shows [`LISTENING_MARKER`] followed by `ip:port`; the
    /// address becomes [`ChildProcess::listening_addr`] (an unspecified IP is read as
    /// 127.0.0.1), and a TCP connect to it must succeed.
    ListeningLine,
    /// A TCP connect to this address succeeds.
    Connect(SocketAddr),
    /// As soon as it is spawned.
    Spawned,
}

/// What to run: program, arguments, environment, readiness.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Short name for log files and messages (`mqnamesrv`, `broker-a-master`).
    pub name: String,
    /// The executable.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<OsString>,
    /// Extra environment (on top of the inherited one).
    pub envs: Vec<(OsString, OsString)>,
    /// When it is ready.
    pub readiness: Readiness,
    /// How long it may take to become ready.
    pub ready_timeout: Duration,
}

impl ProcessSpec {
    /// A spec for `program` with no arguments, ready on its listening line.
    #[must_use]
    pub fn new(name: &str, program: impl Into<PathBuf>) -> Self {
        ProcessSpec {
            name: name.to_owned(),
            program: program.into(),
            args: Vec::new(),
            envs: Vec::new(),
            readiness: Readiness::ListeningLine,
            ready_timeout: READY_TIMEOUT,
        }
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds `-o key=value`.
    #[must_use]
    pub fn setting(self, key: &str, value: impl fmt::Display) -> Self {
        self.arg("-o").arg(format!("{key}={value}"))
    }

    /// Adds what a stand-alone broker on loopback needs: `-c config`, no name server,
    /// `listenPort = port` (HA on `port + 1`, the VIP channel on `port - 2`), brokerIP1
    /// and bindAddress 127.0.0.1, the store under `store_root`, 4 MiB CommitLog files.
    #[must_use]
    pub fn loopback_broker(self, config: &Path, store_root: &Path, port: u16) -> Self {
        self.arg("-c")
            .arg(config)
            .setting("namesrvAddr", "")
            .setting("listenPort", port)
            .setting("haListenPort", port + 1)
            .setting("bindAddress", "127.0.0.1")
            .setting("brokerIP1", "127.0.0.1")
            .setting("storePathRootDir", store_root.display())
            .setting("mappedFileSizeCommitLog", 4 * 1024 * 1024)
    }

    /// Adds an environment variable.
    #[must_use]
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Sets the readiness condition.
    #[must_use]
    pub fn readiness(mut self, readiness: Readiness) -> Self {
        self.readiness = readiness;
        self
    }
}

/// How a binary expected to exit on its own did.
#[derive(Debug)]
pub struct Exited {
    /// Its exit status (`None`: still running after the timeout, then killed).
    pub status: Option<ExitStatus>,
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// Everything it wrote to stderr.
    pub stderr: String,
    /// From the spawn to the exit (or the kill).
    pub elapsed: Duration,
}

impl ProcessSpec {
    /// Runs it in `dir` until it exits on its own, killing it after `timeout`: for
    /// starts that must fail.
    ///
    /// # Panics
    /// When it cannot be spawned.
    #[must_use]
    pub fn run_to_exit(&self, dir: &Path, timeout: Duration) -> Exited {
        let stdout_path = dir.join(format!("{}.stdout.log", self.name));
        let stderr_path = dir.join(format!("{}.stderr.log", self.name));
        let log = |p: &Path| File::create(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let started = Instant::now();
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .current_dir(dir)
            .env("RUST_LOG", "info")
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log(&stdout_path))
            .stderr(log(&stderr_path))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.name));
        let status = loop {
            if let Ok(Some(status)) = child.try_wait() {
                break Some(status);
            }
            if started.elapsed() > timeout {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            thread::sleep(Duration::from_millis(5));
        };
        Exited {
            status,
            elapsed: started.elapsed(),
            stdout: fs::read_to_string(&stdout_path).unwrap_or_default(),
            stderr: fs::read_to_string(&stderr_path).unwrap_or_default(),
        }
    }
}

/// One of our binaries, running. Stopped (SIGTERM, then SIGKILL) when dropped.
pub struct ChildProcess {
    spec: ProcessSpec,
    dir: TestDir,
    child: Option<Child>,
    stdout_path: PathBuf,
    stderr_path: PathBuf,
    listening: Option<SocketAddr>,
    /// Ports reserved for this process, held for its whole life.
    ports: Vec<PortReservation>,
    starts: u32,
}

impl fmt::Debug for ChildProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildProcess")
            .field("name", &self.spec.name)
            .field("pid", &self.child.as_ref().map(Child::id))
            .field("listening", &self.listening)
            .field("dir", &self.dir.path)
            .finish_non_exhaustive()
    }
}

impl ChildProcess {
    /// Starts `spec` in `dir` and waits until it is ready. `ports` are released
    /// (their placeholder listeners closed) just before the spawn and stay reserved
    /// while this handle lives.
    ///
    /// # Panics
    /// When it cannot be spawned, exits early, or is not ready in time — with the end
    /// of its logs.
    #[must_use]
    pub fn start(spec: ProcessSpec, dir: TestDir, ports: Vec<PortReservation>) -> Self {
        let stdout_path = dir.path().join(format!("{}.stdout.log", spec.name));
        let stderr_path = dir.path().join(format!("{}.stderr.log", spec.name));
        let mut process = ChildProcess {
            spec,
            dir,
            child: None,
            stdout_path,
            stderr_path,
            listening: None,
            ports,
            starts: 0,
        };
        process.spawn_and_wait();
        process
    }

    fn spawn_and_wait(&mut self) {
        for port in &mut self.ports {
            port.release_listener();
        }
        self.starts += 1;
        let (stdout, stdout_offset) = self.open_log(&self.stdout_path);
        let (stderr, stderr_offset) = self.open_log(&self.stderr_path);
        let log_level =
            std::env::var_os("SLUICE_CHILD_RUST_LOG").unwrap_or_else(|| OsString::from("info"));
        let mut cmd = Command::new(&self.spec.program);
        cmd.args(&self.spec.args)
            .current_dir(self.dir.path())
            .env("RUST_LOG", log_level)
            .envs(self.spec.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        let child = cmd.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start {} ({}): {e}",
                self.spec.name,
                self.spec.program.display()
            )
        });
        crate::procs::track(child.id());
        self.child = Some(child);
        self.listening = None;
        let deadline = Instant::now() + self.spec.ready_timeout;
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                if let Some(c) = self.child.take() {
                    crate::procs::untrack(c.id());
                }
                // Drop prints the end of its logs.
                panic!("{} exited before it was ready ({status})", self.spec.name);
            }
            if self.check_ready(stdout_offset, stderr_offset) {
                return;
            }
            if Instant::now() > deadline {
                self.stop();
                panic!(
                    "{} not ready after {:?}",
                    self.spec.name, self.spec.ready_timeout
                );
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Opens a log for appending, marking a restart; returns the offset new output starts at.
    fn open_log(&self, path: &Path) -> (File, u64) {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
        if self.starts > 1 {
            let _ = writeln!(file, "----- harness: start #{} -----", self.starts);
        }
        let offset = file.metadata().map(|m| m.len()).unwrap_or(0);
        (file, offset)
    }

    fn check_ready(&mut self, stdout_offset: u64, stderr_offset: u64) -> bool {
        match self.spec.readiness.clone() {
            Readiness::Spawned => true,
            Readiness::Connect(addr) => {
                TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            }
            Readiness::ListeningLine => {
                let found = find_listening(&self.stdout_path, stdout_offset)
                    .or_else(|| find_listening(&self.stderr_path, stderr_offset));
                match found {
                    Some(addr)
                        if TcpStream::connect_timeout(&addr, Duration::from_millis(200))
                            .is_ok() =>
                    {
                        self.listening = Some(addr);
                        true
                    }
                    _ => false,
                }
            }
        }
    }

    /// The address from the listening line, once ready (with [`Readiness::ListeningLine`]).
    #[must_use]
    pub fn listening_addr(&self) -> Option<SocketAddr> {
        self.listening
    }

    /// The process's directory (its working directory and where its logs are).
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The ports reserved for it.
    #[must_use]
    pub fn ports(&self) -> &[PortReservation] {
        &self.ports
    }

    /// Its pid, while running.
    #[must_use]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether it is still running (reaps it if it exited).
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => true,
            Some(_) => {
                if let Some(c) = self.child.take() {
                    crate::procs::untrack(c.id());
                }
                false
            }
            None => false,
        }
    }

    /// Everything it wrote to stdout so far (all starts).
    #[must_use]
    pub fn stdout(&self) -> String {
        fs::read_to_string(&self.stdout_path).unwrap_or_default()
    }

    /// Everything it wrote to stderr so far (all starts).
    #[must_use]
    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// Waits until `needle` appears in its stdout or stderr; false on timeout.
    pub fn wait_for_log(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.stdout().contains(needle) || self.stderr().contains(needle) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The last lines of both logs, labelled, for failure messages.
    #[must_use]
    pub fn log_tails(&self) -> String {
        let mut out = String::new();
        for (label, text) in [("stdout", self.stdout()), ("stderr", self.stderr())] {
            let lines: Vec<&str> = text.lines().collect();
            let from = lines.len().saturating_sub(LOG_TAIL_LINES);
            out.push_str(&format!(
                "----- {} {label} (last {} of {} lines) -----\n",
                self.spec.name,
                lines.len() - from,
                lines.len()
            ));
            for line in &lines[from..] {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    /// Stops it: SIGTERM, then SIGKILL if it is still running after [`STOP_GRACE`].
    /// Returns how it exited (`None` if it was not running).
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.listening = None;
        let child = self.child.take()?;
        let pid = child.id();
        let status = Self::stop_child(&self.spec.name, child);
        crate::procs::untrack(pid);
        status
    }

    fn stop_child(name: &str, mut child: Child) -> Option<ExitStatus> {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            thread::sleep(Duration::from_millis(10));
        }
        eprintln!("{name} ignored SIGTERM for {STOP_GRACE:?}, killing it");
        let _ = child.kill();
        child.wait().ok()
    }

    /// Kills it with SIGKILL at once (crash tests). Returns how it exited.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        self.listening = None;
        let mut child = self.child.take()?;
        let _ = child.kill();
        let status = child.wait().ok();
        crate::procs::untrack(child.id());
        status
    }

    /// Copies its logs (`<name>.stdout.log`, `<name>.stderr.log`) into `dest`, which is
    /// created: a driver keeps them after the process's temp dir is gone.
    ///
    /// # Errors
    /// `dest` cannot be created or a log cannot be copied.
    pub fn save_logs(&self, dest: &Path) -> std::io::Result<()> {
        fs::create_dir_all(dest)?;
        for path in [&self.stdout_path, &self.stderr_path] {
            if let Some(name) = path.file_name() {
                if path.is_file() {
                    fs::copy(path, dest.join(name))?;
                }
            }
        }
        Ok(())
    }

    /// Stops it and starts it again with the same spec, directory and ports.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub fn restart(&mut self) {
        self.stop();
        self.spawn_and_wait();
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let failing = thread::panicking();
        let status = self.stop();
        if failing {
            eprintln!(
                "{} stopped ({}), logs in {}\n{}",
                self.spec.name,
                status.map_or_else(|| "was not running".to_owned(), |s| s.to_string()),
                self.dir.path().display(),
                self.log_tails()
            );
        }
    }
}

/// The address after the last [`LISTENING_MARKER`] in `path` from `offset` on.
fn find_listening(path: &Path, offset: u64) -> Option<SocketAddr> {
    let bytes = fs::read(path).ok()?;
    let start = usize::try_from(offset).ok()?.min(bytes.len());
    let text = String::from_utf8_lossy(&bytes[start..]);
    let at = text.rfind(LISTENING_MARKER)?;
    let token = text[at + LISTENING_MARKER.len()..]
        .split_whitespace()
        .next()?;
    let mut addr: SocketAddr = token.trim_end_matches([',', '.', ';']).parse().ok()?;
    if addr.ip().is_unspecified() {
        addr.set_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    Some(addr)
}

// ---------------------------------------------------------------- mqnamesrv

/// A running `mqnamesrv`, started from `deploy/namesrv.toml` with its files in a temp
/// dir, bound to an OS-chosen port on 127.0.0.1.
#[derive(Debug)]
pub struct NamesrvProcess {
    process: ChildProcess,
}

impl NamesrvProcess {
    /// Starts a name server with the sample config.
    ///
    /// # Panics
    /// When it does not start (with its logs).
    #[must_use]
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts a name server with extra `-o key=value` settings (they win over the
    /// defaults set here, e.g. `("scanNotActiveBrokerInterval", "100")`).
    ///
    /// # Panics
    /// When it does not start (with its logs).
    #[must_use]
    pub fn start_with(settings: &[(&str, &str)]) -> Self {
        let dir = TestDir::new("namesrv");
        let config = workspace_root().join("deploy").join("namesrv.toml");
        let mut spec = ProcessSpec::new("mqnamesrv", binary("nameserver", "mqnamesrv"))
            .arg("-c")
            .arg(&config)
            .setting("listenPort", 0)
            .setting("bindAddress", "127.0.0.1")
            .setting(
                "kvConfigPath",
                dir.path().join("namesrv").join("kvConfig.json").display(),
            )
            .setting(
                "configStorePath",
                dir.path()
                    .join("namesrv")
                    .join("namesrv.properties")
                    .display(),
            );
        for (key, value) in settings {
            spec = spec.setting(key, value);
        }
        NamesrvProcess {
            process: ChildProcess::start(spec, dir, Vec::new()),
        }
    }

    /// `127.0.0.1:port`, as clients and `mqadmin -n` take it.
    #[must_use]
    pub fn addr(&self) -> String {
        self.socket_addr().to_string()
    }

    /// The address it listens on.
    ///
    /// # Panics
    /// When it is not running.
    #[must_use]
    pub fn socket_addr(&self) -> SocketAddr {
        self.process.listening_addr().expect("mqnamesrv is running")
    }

    /// Where its KV table is persisted.
    #[must_use]
    pub fn kv_config_path(&self) -> PathBuf {
        self.process.dir().join("namesrv").join("kvConfig.json")
    }

    /// The process handle (logs, stop, kill, restart).
    #[must_use]
    pub fn process(&mut self) -> &mut ChildProcess {
        &mut self.process
    }

    /// Stops it and starts it again on the same files; it may get another port.
    ///
    /// # Panics
    /// When it does not come back.
    pub fn restart(&mut self) {
        self.process.restart();
    }
}

// ---------------------------------------------------------------- mqbroker

/// A running `mqbroker`, started from `deploy/broker.toml` with its store in a temp
/// dir, on a reserved loopback port (the same port across restarts, so clients and
/// message ids stay valid), registered with `namesrv`.
#[derive(Debug)]
pub struct BrokerProcess {
    process: ChildProcess,
    port: u16,
}

impl BrokerProcess {
    /// Starts a master `broker-a` registered with `namesrv`.
    ///
    /// # Panics
    /// When it does not start (with its logs).
    #[must_use]
    pub fn start(namesrv: &str) -> Self {
        Self::start_with(namesrv, &[])
    }

    /// Starts a broker with extra `-o key=value` settings (they win over the defaults
    /// set here, e.g. `("flushDiskType", "SYNC_FLUSH")`).
    ///
    /// # Panics
    /// When it does not start (with its logs).
    #[must_use]
    pub fn start_with(namesrv: &str, settings: &[(&str, &str)]) -> Self {
        let dir = TestDir::new("broker");
        // listenPort - 2 (the VIP channel) ..= listenPort + 1 (HA).
        let ports = crate::ports::reserve_consecutive(4);
        let port = ports[2].port();
        let config = workspace_root().join("deploy").join("broker.toml");
        let mut spec = ProcessSpec::new("mqbroker", binary("broker", "mqbroker"))
            .arg("-c")
            .arg(&config)
            .arg("-n")
            .arg(namesrv)
            .setting("listenPort", port)
            .setting("haListenPort", port + 1)
            .setting("bindAddress", "127.0.0.1")
            .setting("brokerIP1", "127.0.0.1")
            .setting("storePathRootDir", dir.path().join("store").display())
            .setting("mappedFileSizeCommitLog", 16 * 1024 * 1024);
        for (key, value) in settings {
            spec = spec.setting(key, value);
        }
        BrokerProcess {
            process: ChildProcess::start(spec, dir, ports),
            port,
        }
    }

    /// `127.0.0.1:port`.
    #[must_use]
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The store root.
    #[must_use]
    pub fn store_dir(&self) -> PathBuf {
        self.process.dir().join("store")
    }

    /// The process handle (logs, stop, kill, restart).
    #[must_use]
    pub fn process(&mut self) -> &mut ChildProcess {
        &mut self.process
    }

    /// Stops it and starts it again on the same store and port.
    ///
    /// # Panics
    /// When it does not come back.
    pub fn restart(&mut self) {
        self.process.restart();
    }
}

// ---------------------------------------------------------------- master/slave pairs (HA)

impl ChildProcess {
    /// Stops it (if running) and starts it again with `change` applied to its spec: same
    /// directory, logs (a restart marker is appended) and reserved ports. An HA drill uses it
    /// to bring a killed master back as a slave.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub fn restart_with(&mut self, change: impl FnOnce(&mut ProcessSpec)) {
        self.stop();
        change(&mut self.spec);
        self.spawn_and_wait();
    }

    /// How many times its log says `needle` (stdout and stderr, all starts).
    #[must_use]
    pub fn count_in_log(&self, needle: &str) -> usize {
        self.stdout().matches(needle).count() + self.stderr().matches(needle).count()
    }
}

/// Name of the broker pair every [`HaBrokerProcess`] belongs to (`deploy/broker.toml`'s).
pub const HA_BROKER_NAME: &str = "broker-a";

/// One `mqbroker` of a master/slave pair (brokerName [`HA_BROKER_NAME`]), started from
/// `deploy/broker.toml` with a role and an id, its store in a temp dir, 16 MiB CommitLog files.
///
/// Four consecutive loopback ports are reserved, `listenPort - 2 ..= listenPort + 1`:
/// `haListenPort` is `listenPort + 1` as RocketMQ's `BrokerStartup` sets it, and
/// `listenPort - 2` is where an Apache broker opens its "VIP" channel (a Java slave copies its
/// master's topic table from there), kept free for tests that stand one in. The role and id
/// change across restarts ([`restart_as`](Self::restart_as)); store, ports and logs stay.
///
/// ```no_run
/// use std::time::Duration;
/// use integration_tests::process::{HaBrokerProcess, NamesrvProcess};
///
/// let ns = NamesrvProcess::start();
/// let master = HaBrokerProcess::start_master("a", &ns.addr(), "SYNC_MASTER", &[]);
/// let slave = HaBrokerProcess::start("b", &ns.addr(), "SLAVE", 1, &[]);
/// slave.wait_following(&master, Duration::from_secs(10)).unwrap();
/// ```
#[derive(Debug)]
pub struct HaBrokerProcess {
    process: ChildProcess,
    port: u16,
    namesrv: String,
}

impl HaBrokerProcess {
    /// Starts broker `label` (names its directory and logs) with `brokerRole=role`,
    /// `brokerId=broker_id` and extra `-o` settings, registered with `namesrv`.
    ///
    /// A slave learns its master from its registrations, every `registerNameServerPeriod`
    /// (30 s): start it after its master is registered ([`start_master`](Self::start_master)
    /// waits for that) or it replicates nothing for up to 30 s.
    ///
    /// # Panics
    /// When it does not start (with its logs).
    #[must_use]
    pub fn start(
        label: &str,
        namesrv: &str,
        role: &str,
        broker_id: i64,
        settings: &[(&str, &str)],
    ) -> Self {
        let dir = TestDir::new(&format!("ha-{label}"));
        let ports = crate::ports::reserve_consecutive(4);
        let port = ports[2].port();
        let config = workspace_root().join("deploy").join("broker.toml");
        let mut spec = ProcessSpec::new(&format!("mqbroker-{label}"), binary("broker", "mqbroker"))
            .arg("-c")
            .arg(&config)
            .arg("-n")
            .arg(namesrv)
            .setting("brokerName", HA_BROKER_NAME)
            .setting("listenPort", port)
            .setting("haListenPort", port + 1)
            .setting("bindAddress", "127.0.0.1")
            .setting("brokerIP1", "127.0.0.1")
            .setting("storePathRootDir", dir.path().join("store").display())
            .setting("mappedFileSizeCommitLog", 16 * 1024 * 1024)
            .setting("brokerRole", role)
            .setting("brokerId", broker_id);
        for (key, value) in settings {
            spec = spec.setting(key, value);
        }
        HaBrokerProcess {
            process: ChildProcess::start(spec, dir, ports),
            port,
            namesrv: namesrv.to_owned(),
        }
    }

    /// Starts a master (`role` SYNC_MASTER or ASYNC_MASTER, id 0) and waits until the name
    /// server lists it, so slaves started next learn it at their first registration.
    ///
    /// # Panics
    /// When it does not start or register within [`READY_TIMEOUT`].
    #[must_use]
    pub fn start_master(label: &str, namesrv: &str, role: &str, settings: &[(&str, &str)]) -> Self {
        let master = Self::start(label, namesrv, role, 0, settings);
        let addr = master.addr();
        assert!(
            wait_until(READY_TIMEOUT, || registered_ids(namesrv, &addr)
                .contains(&0)),
            "{addr} did not register as master with {namesrv}"
        );
        master
    }

    /// `127.0.0.1:listenPort`.
    #[must_use]
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:haListenPort`.
    #[must_use]
    pub fn ha_addr(&self) -> String {
        format!("127.0.0.1:{}", self.port + 1)
    }

    /// `listenPort`.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The store root.
    #[must_use]
    pub fn store_dir(&self) -> PathBuf {
        self.process.dir().join("store")
    }

    /// `<store>/commitlog`.
    #[must_use]
    pub fn commit_log_dir(&self) -> PathBuf {
        self.store_dir().join("commitlog")
    }

    /// The process handle (logs, stop, kill).
    #[must_use]
    pub fn process(&mut self) -> &mut ChildProcess {
        &mut self.process
    }

    /// The process handle, read only (logs).
    #[must_use]
    pub fn process_ref(&self) -> &ChildProcess {
        &self.process
    }

    /// SIGKILL, at once.
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Stops it (if running) and starts it again on the same store, ports and logs as
    /// `brokerRole=role`, `brokerId=broker_id` (later `-o` settings win).
    ///
    /// # Panics
    /// When it does not come back.
    pub fn restart_as(&mut self, role: &str, broker_id: i64) {
        self.process.restart_with(|spec| {
            for setting in [
                format!("brokerRole={role}"),
                format!("brokerId={broker_id}"),
            ] {
                spec.args.push("-o".into());
                spec.args.push(setting.into());
            }
        });
    }

    /// Its SLUICE_HA_STATUS.
    ///
    /// # Errors
    /// It cannot be reached or does not answer.
    pub fn ha_status(&self) -> Result<HaStatus, String> {
        ha_status(&self.addr())
    }

    /// Waits until it is a connected slave of `master` holding everything the master has
    /// (same CommitLog max offset, acknowledged by the master). Call while nothing is sent.
    ///
    /// # Errors
    /// The last statuses seen, when that does not happen within `timeout`.
    pub fn wait_following(
        &self,
        master: &HaBrokerProcess,
        timeout: Duration,
    ) -> Result<(), String> {
        wait_caught_up(&master.addr(), &self.addr(), &master.ha_addr(), timeout)
    }

    /// Runs our `mqadmin` with `args` and `-n` this broker's name server.
    #[must_use]
    pub fn mqadmin(&self, args: &[&str]) -> MqadminOutput {
        mqadmin(&self.namesrv, args)
    }

    /// [`create_topic`] through this broker's name server.
    pub fn create_topic(&self, topic: &str, queues: u32) {
        create_topic(&self.namesrv, topic, queues);
    }

    /// Whether `topic` is in its topic table (GET_ALL_TOPIC_CONFIG); false when it cannot be
    /// asked.
    #[must_use]
    pub fn has_topic(&self, topic: &str) -> bool {
        broker_has_topic(&self.addr(), topic)
    }

    /// The max offset of consume queue (`topic`, `queue_id`) (GET_MAX_OFFSET); `None` when it
    /// cannot be asked.
    #[must_use]
    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> Option<i64> {
        let header = remoting::protocol::broker::GetMaxOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            committed: None,
        };
        let response = try_request(
            &self.addr(),
            remoting::RemotingCommand::request_with(remoting::RequestCode::GetMaxOffset, &header),
        )
        .ok()?;
        if response.code() != 0 {
            return None;
        }
        response.ext("offset")?.parse().ok()
    }
}

/// SLUICE_HA_STATUS (private request 40002) of a sluice broker, as `mqadmin haStatus` prints it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HaStatus {
    /// ASYNC_MASTER | SYNC_MASTER | SLAVE.
    pub role: String,
    pub broker_id: i64,
    /// CommitLog max offset.
    pub max_offset: u64,
    /// Where its log ended when it was promoted (a new master).
    pub promoted_at_offset: Option<u64>,
    /// `ip:port` of its HA listener.
    pub ha_address: String,
    /// Masters: the highest offset a slave acknowledged.
    pub slave_ack_offset: Option<u64>,
    /// Masters: connected slaves (their HA client addresses).
    pub slaves: Vec<String>,
    /// Slaves: the master HA address followed.
    pub master: Option<String>,
    /// Slaves: whether the HA client is connected.
    pub connected: bool,
}

impl HaStatus {
    /// A master role.
    #[must_use]
    pub fn is_master(&self) -> bool {
        self.role.ends_with("MASTER")
    }
}

/// Sends one request to `addr` on a small runtime of its own and waits for the answer
/// ([`REQUEST_TIMEOUT`]); unlike [`crate::client::SyncClient`], a broker that is down is an
/// answer here, not a panic.
///
/// # Errors
/// The transport error or timeout.
pub fn try_request(
    addr: &str,
    request: remoting::RemotingCommand,
) -> Result<remoting::RemotingCommand, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let client = remoting::RemotingClient::default();
    let code = request.code();
    let result = runtime
        .block_on(client.invoke(addr, request, REQUEST_TIMEOUT))
        .map_err(|e| format!("request {code} to {addr}: {e}"));
    client.close_all();
    result
}

/// SLUICE_HA_STATUS of the broker at `addr`.
///
/// # Errors
/// It cannot be reached, refuses, or answers something that does not parse.
pub fn ha_status(addr: &str) -> Result<HaStatus, String> {
    let response = try_request(
        addr,
        remoting::RemotingCommand::request(remoting::RequestCode::SluiceHaStatus),
    )?;
    if response.code() != 0 {
        return Err(format!(
            "{addr} answered SLUICE_HA_STATUS with {} {:?}",
            response.code(),
            response.remark()
        ));
    }
    let v: serde_json::Value = remoting::fastjson::from_slice(&response.body.to_bytes())
        .map_err(|e| format!("SLUICE_HA_STATUS body of {addr}: {e}"))?;
    let opt_u64 = |k: &str| v.get(k).and_then(serde_json::Value::as_u64);
    let opt_str = |k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    Ok(HaStatus {
        role: opt_str("role").unwrap_or_default(),
        broker_id: v
            .get("brokerId")
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(-1),
        max_offset: opt_u64("maxOffset").unwrap_or(0),
        promoted_at_offset: opt_u64("promotedAtOffset"),
        ha_address: opt_str("haAddress").unwrap_or_default(),
        slave_ack_offset: opt_u64("slaveAckOffset"),
        slaves: v
            .get("slaves")
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        master: opt_str("master"),
        connected: v
            .get("connected")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
    })
}

/// Waits until the slave at `slave_addr` follows `master_ha_addr`, is connected, and holds
/// everything the master at `master_addr` has, acknowledged.
///
/// # Errors
/// The last statuses seen, after `timeout`.
pub fn wait_caught_up(
    master_addr: &str,
    slave_addr: &str,
    master_ha_addr: &str,
    timeout: Duration,
) -> Result<(), String> {
    let mut last = String::new();
    let done = wait_until(timeout, || {
        let (m, s) = (ha_status(master_addr), ha_status(slave_addr));
        let ok = match (&m, &s) {
            (Ok(m), Ok(s)) => {
                m.is_master()
                    && !s.is_master()
                    && s.connected
                    && s.master.as_deref() == Some(master_ha_addr)
                    && s.max_offset == m.max_offset
                    && m.slave_ack_offset == Some(m.max_offset)
            }
            _ => false,
        };
        last = format!("master {m:?}\nslave {s:?}");
        ok
    });
    if done {
        Ok(())
    } else {
        Err(format!(
            "slave {slave_addr} did not catch up with {master_addr} in {timeout:?}:\n{last}"
        ))
    }
}

/// The broker ids the name server lists for `addr` in [`HA_BROKER_NAME`] (empty when it cannot
/// be asked).
#[must_use]
pub fn registered_ids(namesrv: &str, addr: &str) -> Vec<i64> {
    let Ok(response) = try_request(
        namesrv,
        remoting::RemotingCommand::request(remoting::RequestCode::GetBrokerClusterInfo),
    ) else {
        return Vec::new();
    };
    let Ok(info) = remoting::fastjson::from_slice::<remoting::protocol::route::ClusterInfo>(
        &response.body.to_bytes(),
    ) else {
        return Vec::new();
    };
    info.broker_addr_table
        .get(HA_BROKER_NAME)
        .map(|b| {
            b.broker_addrs
                .iter()
                .filter(|(_, a)| a.as_str() == addr)
                .map(|(id, _)| *id)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the broker at `addr` (any RocketMQ broker) has `topic` in its topic table
/// (GET_ALL_TOPIC_CONFIG); false when it cannot be asked.
#[must_use]
pub fn broker_has_topic(addr: &str, topic: &str) -> bool {
    try_request(
        addr,
        remoting::RemotingCommand::request(remoting::RequestCode::GetAllTopicConfig),
    )
    .is_ok_and(|r| {
        r.code() == 0
            && String::from_utf8_lossy(&r.body.to_bytes()).contains(&format!("\"{topic}\""))
    })
}

/// Polls `done` every 50 ms until it holds (true) or `timeout` passes (false).
pub fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// What our `mqadmin` printed.
#[derive(Debug)]
pub struct MqadminOutput {
    /// The arguments, for messages.
    pub args: Vec<String>,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// From spawn to exit.
    pub elapsed: Duration,
}

impl MqadminOutput {
    /// Panics with everything it printed unless it exited 0.
    #[track_caller]
    pub fn assert_ok(&self) -> &Self {
        assert!(self.status.success(), "{self}");
        self
    }

    /// The value of a `key: value` line (`switchRole` / `haStatus` print their JSON so).
    #[must_use]
    pub fn value(&self, key: &str) -> Option<&str> {
        self.stdout.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim())
        })
    }
}

impl fmt::Display for MqadminOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "mqadmin {} -> {} after {:?}",
            self.args.join(" "),
            self.status,
            self.elapsed
        )?;
        writeln!(f, "--- stdout\n{}", self.stdout.trim_end())?;
        writeln!(f, "--- stderr\n{}", self.stderr.trim_end())
    }
}

/// Creates (or updates) `topic` with `queues` read and write queues on every master of
/// DefaultCluster, with our `mqadmin updateTopic`.
///
/// # Panics
/// When the command fails.
pub fn create_topic(namesrv: &str, topic: &str, queues: u32) {
    update_topic(namesrv, ["-c", "DefaultCluster"], topic, queues).assert_ok();
}

/// `mqadmin updateTopic` on `target` (`["-c", cluster]` or `["-b", broker address]`) with
/// `queues` read and write queues.
///
/// # Panics
/// When mqadmin cannot be started.
#[must_use]
pub fn update_topic(namesrv: &str, target: [&str; 2], topic: &str, queues: u32) -> MqadminOutput {
    let queues = queues.to_string();
    mqadmin(
        namesrv,
        &[
            "updateTopic",
            target[0],
            target[1],
            "-t",
            topic,
            "-r",
            &queues,
            "-w",
            &queues,
        ],
    )
}

/// Runs our `mqadmin` (`tools` package) with `args`, then `-n namesrv`.
///
/// # Panics
/// When it cannot be started.
#[must_use]
pub fn mqadmin(namesrv: &str, args: &[&str]) -> MqadminOutput {
    let started = Instant::now();
    let out = Command::new(binary("tools", "mqadmin"))
        .args(args)
        .args(["-n", namesrv])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run mqadmin: {e}"));
    MqadminOutput {
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// Compares two directories of store files (`commitlog/`, `consumequeue/T/0/`) byte for byte:
/// the same file names, each with the same bytes. Returns how many files were compared.
///
/// # Errors
/// The first difference: a file on one side only, or the first differing byte offset.
pub fn compare_store_files(a: &Path, b: &Path) -> Result<usize, String> {
    let names = |dir: &Path| -> Result<Vec<String>, String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(Result::ok)
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        Ok(v)
    };
    let (na, nb) = (names(a)?, names(b)?);
    if na != nb {
        return Err(format!(
            "different files: {} has {na:?}, {} has {nb:?}",
            a.display(),
            b.display()
        ));
    }
    for name in &na {
        let (fa, fb) = (a.join(name), b.join(name));
        let ba = fs::read(&fa).map_err(|e| format!("{}: {e}", fa.display()))?;
        let bb = fs::read(&fb).map_err(|e| format!("{}: {e}", fb.display()))?;
        if ba != bb {
            let at = ba.iter().zip(&bb).position(|(x, y)| x != y);
            return Err(format!(
                "{} and {} differ (sizes {} / {}, first difference at byte {at:?})",
                fa.display(),
                fb.display(),
                ba.len(),
                bb.len()
            ));
        }
    }
    Ok(na.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_lifecycle_with_a_shell() {
        // Something listening, and a child that claims to be it.
        let mut port = crate::ports::reserve();
        port.release_listener();
        let listener = std::net::TcpListener::bind(port.addr()).unwrap();
        let script = format!("echo 'INFO x: listening on {}'; exec sleep 30", port.addr());
        let spec = ProcessSpec::new("fake", "/bin/sh").arg("-c").arg(&script);
        let mut child = ChildProcess::start(spec, TestDir::new("harness"), vec![]);
        assert_eq!(child.listening_addr(), Some(port.addr()));
        assert!(child.is_running());
        assert!(child.wait_for_log("listening on", Duration::from_secs(1)));
        assert!(!child.wait_for_log("never printed", Duration::from_millis(50)));
        let dir = child.dir().to_owned();
        assert!(dir.join("fake.stdout.log").exists());

        // SIGTERM ends `sleep`; the restart appends to the same log.
        let status = child.stop().unwrap();
        assert!(!status.success());
        assert!(!child.is_running() && child.listening_addr().is_none());
        child.restart();
        assert!(child.stdout().contains("----- harness: start #2 -----"));
        assert_eq!(child.stdout().matches("listening on").count(), 2);
        assert!(child.kill().is_some());
        drop(child);
        drop(listener);
        assert!(!dir.exists(), "temp dir removed when the test passes");
    }

    #[test]
    fn finds_the_listening_address() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("out.log");
        fs::write(&log, "x INFO listening on 0.0.0.0:9876 addr=0.0.0.0:9876\n").unwrap();
        assert_eq!(
            find_listening(&log, 0),
            Some("127.0.0.1:9876".parse().unwrap())
        );
        fs::write(
            &log,
            "old listening on 127.0.0.1:1\nnew listening on 127.0.0.1:2\n",
        )
        .unwrap();
        assert_eq!(find_listening(&log, 0).unwrap().port(), 2);
        assert_eq!(find_listening(&log, 1000), None);
        assert_eq!(find_listening(&dir.path().join("missing"), 0), None);
    }
}
