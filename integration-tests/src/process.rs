//! Our binaries as real child processes: build them once, start them in a temp dir
//! with `-c`/`-o` settings, wait until they serve, stop them on drop — and when a test
//! fails, print the end of their logs and keep their directory.
//!
//! - [`binary`] builds a package's binaries once per test process (`cargo build
//!   --bins -p <package>`, same profile and target dir as the running test) and
//!   returns the path of one. Parallel test binaries may build at the same time:
//!   cargo's own lock on the build directory makes them take turns, and the second
//!   finds everything fresh. `SLUICE_SKIP_BUILD=1` skips the build (CI builds first);
//!   `SLUICE_BIN_DIR` points at prebuilt binaries.
//! - [`ChildProcess`] is one running binary (generic; `BrokerProcess` will reuse it):
//!   stdout and stderr go to `<dir>/<name>.stdout.log` / `.stderr.log`, readiness is a
//!   log line or a TCP connect, drop sends SIGTERM and SIGKILL after a grace period.
//! - [`NamesrvProcess`] starts `mqnamesrv` from `deploy/namesrv.toml` on an OS-chosen
//!   loopback port and reports the address it logged.
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

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("integration-tests sits in the workspace root")
        .to_owned()
}

/// The directory cargo put the running test's profile into (`target/debug`).
fn profile_dir() -> PathBuf {
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

/// Packages whose binaries this process has built (or failed to build).
static BUILT: Mutex<Option<HashMap<String, Result<(), String>>>> = Mutex::new(None);

/// Builds `package`'s binaries once per test process.
///
/// # Panics
/// When cargo fails, with its output.
pub fn ensure_built(package: &str) {
    if std::env::var_os("SLUICE_SKIP_BUILD").is_some_and(|v| v == "1")
        || std::env::var_os("SLUICE_BIN_DIR").is_some()
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
        self.child = Some(child);
        self.listening = None;
        let deadline = Instant::now() + self.spec.ready_timeout;
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
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
                self.child = None;
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
        let mut child = self.child.take()?;
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
        eprintln!(
            "{} ignored SIGTERM for {STOP_GRACE:?}, killing it",
            self.spec.name
        );
        let _ = child.kill();
        child.wait().ok()
    }

    /// Kills it with SIGKILL at once (crash tests). Returns how it exited.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        self.listening = None;
        let mut child = self.child.take()?;
        let _ = child.kill();
        child.wait().ok()
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
        let ports = crate::ports::reserve_consecutive(2);
        let port = ports[0].addr().port();
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
