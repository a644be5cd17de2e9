//! The Java side of the integration tests: the official Apache RocketMQ clients and the official
//! `mqadmin` (`rocketmq-client` / `rocketmq-tools` from Maven Central), for one RocketMQ version at
//! a time, run as separate JVMs against our `mqnamesrv` / `mqbroker`.
//!
//! [`JavaTools::get`] builds `integration-tests/java` (see its README) with `java/build.sh` once per
//! version and process; `build.sh` itself skips the build when its outputs are up to date and holds
//! a `flock` on the cache directory, so parallel test binaries build one at a time and share it.
//! The cache directory is `$SLUICE_JAVA_CACHE`, else `$CARGO_TARGET_DIR/java-it`, else
//! `<workspace>/target/java-it`.
//!
//! ```no_run
//! use std::time::Duration;
//! use integration_tests::java::{JavaTools, V4};
//!
//! let java = JavaTools::get(V4);
//! let namesrv = "127.0.0.1:9876";
//! let out = java.mqadmin(namesrv, &["clusterList"]);
//! out.assert_ok();
//! assert!(out.stdout.starts_with("#Cluster Name"));
//!
//! let probe = java.run(
//!     "sluice.it.RouteProbe",
//!     &["--namesrv", namesrv, "--topic", "TopicTest", "--wait-ms", "10000"],
//!     Duration::from_secs(60),
//! );
//! probe.assert_ok();
//! let queues = probe.fields("QUEUE "); // [["broker-a", "0"], ["broker-a", "1"], ...]
//! assert_eq!(queues.len(), 8);
//! ```
//!
//! Client tests run against a [`TestCluster`] (our `mqnamesrv` + `mqbroker`, or an external cluster
//! named by `SLUICE_TEST_NAMESRV_ADDR`), spawn consumers that run alongside
//! ([`JavaProcess::wait_until`], [`JavaProcess::terminate`]) and read the programs' result lines
//! with [`Sent::all`], [`Recv::all`] and [`last_allocation`].
//!
//! Every JVM gets a fresh temp directory as `user.home` (the clients and mqadmin log under
//! `~/logs/rocketmqlogs`), `ROCKETMQ_HOME` pointing at the build's `rocketmq-home` (mqadmin 4.x
//! needs `conf/logback_tools.xml` there), and the name server HTTP lookup pointed at a closed
//! loopback port. Name server addresses given to [`JavaTools::mqadmin`] or as `--namesrv` must be on
//! loopback.

use std::collections::BTreeMap;
use std::env;
use std::fmt;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tempfile::TempDir;

use crate::process::{BrokerProcess, NamesrvProcess};

/// The RocketMQ 4.x version under test.
pub const V4: &str = "4.9.8";
/// The RocketMQ 5.x version under test.
pub const V5: &str = "5.3.3";
/// Both versions, for tests that run against each.
pub const VERSIONS: [&str; 2] = [V4, V5];

/// Default hard timeout of one `mqadmin` invocation.
pub const MQADMIN_TIMEOUT: Duration = Duration::from_secs(60);
/// A cold build downloads ~40-70 MB from Maven Central; a warm one takes seconds.
const BUILD_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// Keep each JVM small and quick to start: tests run many of them on a 2-core machine.
const JVM_FLAGS: &[&str] = &[
    "-Xms64m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.net.preferIPv4Stack=true",
    // Where a client with no name server configured would look one up over HTTP: a closed port.
    "-Drocketmq.namesrv.domain=127.0.0.1:9",
];

/// The wrapper around `MQAdminStartup.main0` that gives mqadmin a real exit status and exits as
/// soon as the command is done (see `java/README.md`).
pub const MQADMIN_CLASS: &str = "sluice.it.MqAdmin";
/// The official entry point, unwrapped: always exits 0, lingers ~3 s after the command.
pub const MQADMIN_OFFICIAL_CLASS: &str = "org.apache.rocketmq.tools.command.MQAdminStartup";

/// The built Java programs and official tools for one RocketMQ version.
#[derive(Debug)]
pub struct JavaTools {
    version: String,
    dir: PathBuf,
    classpath: String,
    rocketmq_home: PathBuf,
}

static BUILT: Mutex<BTreeMap<String, &'static JavaTools>> = Mutex::new(BTreeMap::new());

impl JavaTools {
    /// The tools for `version` (e.g. [`V4`], [`V5`]), built on first use in this process.
    ///
    /// # Panics
    /// When the build fails, with Maven's output.
    pub fn get(version: &str) -> &'static JavaTools {
        match Self::try_get(version) {
            Ok(tools) => tools,
            Err(e) => panic!("cannot build the Java test programs for RocketMQ {version}:\n{e}"),
        }
    }

    /// Like [`JavaTools::get`], returning the build failure instead of panicking.
    pub fn try_get(version: &str) -> Result<&'static JavaTools, String> {
        // Held during the build: a second thread wanting any version waits rather than racing
        // (build.sh serialises across processes too).
        let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tools) = built.get(version) {
            return Ok(tools);
        }
        let tools: &'static JavaTools = Box::leak(Box::new(Self::build(version)?));
        built.insert(version.to_owned(), tools);
        Ok(tools)
    }

    fn build(version: &str) -> Result<JavaTools, String> {
        let out_dir = cache_dir();
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("java")
            .join("build.sh");
        let mut cmd = Command::new("bash");
        cmd.arg(&script).arg(version).arg(&out_dir);
        let started = Instant::now();
        let out = JavaProcess::spawn(cmd, None)
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?
            .wait(BUILD_TIMEOUT);
        if !out.success() {
            return Err(out.to_string());
        }
        if !out.stderr.is_empty() {
            // "build.sh: RocketMQ 4.9.8 built in 41s" when it did build; visible with --nocapture.
            eprint!("{}", out.stderr);
        }
        tracing::debug!(version, elapsed = ?started.elapsed(), "java tools ready");
        let dir = out_dir.join(version);
        let deps = fs::read_to_string(dir.join("classpath.txt"))
            .map_err(|e| format!("{}: {e}", dir.join("classpath.txt").display()))?;
        let classpath = format!("{}:{}", deps.trim(), dir.join("app.jar").display());
        Ok(JavaTools {
            version: version.to_owned(),
            rocketmq_home: dir.join("rocketmq-home"),
            dir,
            classpath,
        })
    }

    /// The RocketMQ version these tools were built against.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// `<cache>/<version>`: `app.jar`, `classpath.txt`, `rocketmq-home/`, `build/`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The full class path: every dependency, then `app.jar`.
    pub fn classpath(&self) -> &str {
        &self.classpath
    }

    /// The `ROCKETMQ_HOME` given to every JVM.
    pub fn rocketmq_home(&self) -> &Path {
        &self.rocketmq_home
    }

    /// A `java` command for `class` with our JVM flags, the class path, `ROCKETMQ_HOME`, and `home`
    /// as `user.home` and log root. Stdio is left to the caller.
    pub fn command(&self, class: &str, args: &[&str], home: &Path) -> Command {
        self.command_with(class, args, home, &[])
    }

    fn command_with(
        &self,
        class: &str,
        args: &[&str],
        home: &Path,
        jvm_props: &[String],
    ) -> Command {
        check_namesrv_args(args);
        let mut cmd = Command::new(java_binary());
        cmd.args(JVM_FLAGS)
            .arg(format!("-Duser.home={}", home.display()))
            .arg(format!(
                "-Drocketmq.client.logRoot={}",
                home.join("logs").display()
            ))
            .arg(format!(
                "-Drocketmq.log.root={}",
                home.join("logs").display()
            ))
            .args(jvm_props)
            .arg("-cp")
            .arg(&self.classpath)
            .arg(class)
            .args(args)
            .env("ROCKETMQ_HOME", &self.rocketmq_home)
            .env_remove("NAMESRV_ADDR")
            .current_dir(home);
        cmd
    }

    /// Starts `class` in the background (a consumer that must be running before messages are
    /// sent, say). The process is killed when the handle is dropped.
    ///
    /// # Panics
    /// When `java` cannot be started.
    pub fn spawn(&self, class: &str, args: &[&str]) -> JavaProcess {
        self.spawn_with(class, args, &[])
    }

    fn spawn_with(&self, class: &str, args: &[&str], jvm_props: &[String]) -> JavaProcess {
        let home = tempfile::Builder::new()
            .prefix("sluice-java-")
            .tempdir()
            .expect("create a temp dir for the JVM's user.home");
        let cmd = self.command_with(class, args, home.path(), jvm_props);
        match JavaProcess::spawn(cmd, Some(home)) {
            Ok(p) => p,
            Err(e) => panic!("cannot start java ({}): {e}", java_binary().display()),
        }
    }

    /// Runs `class` to completion, killing it after `timeout`.
    pub fn run(&self, class: &str, args: &[&str], timeout: Duration) -> JavaOutput {
        self.spawn(class, args).wait(timeout)
    }

    /// Runs the official mqadmin sub command `args[0]` with `args[1..]` and `-n namesrv`, with
    /// [`MQADMIN_TIMEOUT`]. Exit status is non-zero when the command printed a stack trace or
    /// does not exist (see [`MQADMIN_CLASS`]); stdout is mqadmin's, untouched.
    pub fn mqadmin(&self, namesrv: &str, args: &[&str]) -> JavaOutput {
        self.mqadmin_with_timeout(namesrv, args, MQADMIN_TIMEOUT)
    }

    /// [`JavaTools::mqadmin`] with another timeout.
    pub fn mqadmin_with_timeout(
        &self,
        namesrv: &str,
        args: &[&str],
        timeout: Duration,
    ) -> JavaOutput {
        assert_loopback(namesrv);
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["-n", namesrv]);
        self.mqadmin_raw_with_timeout(&all, timeout)
    }

    /// mqadmin with exactly `args` (no `-n`): `&[]` prints the command list, `&["help", "topicRoute"]`
    /// a command's options.
    pub fn mqadmin_raw(&self, args: &[&str]) -> JavaOutput {
        self.mqadmin_raw_with_timeout(args, MQADMIN_TIMEOUT)
    }

    fn mqadmin_raw_with_timeout(&self, args: &[&str], timeout: Duration) -> JavaOutput {
        // The wrapper's own watchdog fires a little before ours, so its "ERR timeout" is seen.
        let inner = timeout
            .saturating_sub(Duration::from_secs(2))
            .max(Duration::from_secs(1));
        let props = [format!("-Dsluice.it.timeoutMs={}", inner.as_millis())];
        self.spawn_with(MQADMIN_CLASS, args, &props).wait(timeout)
    }
}

/// `$SLUICE_JAVA_CACHE`, else `$CARGO_TARGET_DIR/java-it`, else `<workspace>/target/java-it`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = env::var_os("SLUICE_JAVA_CACHE") {
        return PathBuf::from(dir);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = match env::var_os("CARGO_TARGET_DIR") {
        Some(t) if Path::new(&t).is_absolute() => PathBuf::from(t),
        Some(t) => workspace.join(t),
        None => workspace.join("target"),
    };
    target.join("java-it")
}

fn java_binary() -> PathBuf {
    if let Some(home) = env::var_os("JAVA_HOME") {
        let java = Path::new(&home).join("bin").join("java");
        if java.is_file() {
            return java;
        }
    }
    PathBuf::from("java")
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

fn check_namesrv_args(args: &[&str]) {
    for pair in args.windows(2) {
        if matches!(pair[0], "--namesrv" | "-n" | "--namesrvAddr") {
            assert_loopback(pair[1]);
        }
    }
}

/// Stdout lines as they arrive, so a test can wait for one (e.g. `STARTED`).
#[derive(Debug, Default)]
struct Lines {
    lines: Vec<String>,
    eof: bool,
}

/// A running JVM (or build), its output captured as it comes. Killed on drop.
#[derive(Debug)]
pub struct JavaProcess {
    child: Option<Child>,
    command: String,
    started: Instant,
    stdout: Arc<(Mutex<Lines>, Condvar)>,
    stderr: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
    home: Option<TempDir>,
}

impl JavaProcess {
    fn spawn(mut cmd: Command, home: Option<TempDir>) -> std::io::Result<JavaProcess> {
        let command = describe(&cmd);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn()?;
        let stdout = Arc::new((Mutex::new(Lines::default()), Condvar::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            let sink = Arc::clone(&stdout);
            readers.push(thread::spawn(move || read_lines(out, &sink)));
        }
        if let Some(mut err) = child.stderr.take() {
            let sink = Arc::clone(&stderr);
            readers.push(thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    sink.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .extend_from_slice(&buf[..n]);
                }
            }));
        }
        Ok(JavaProcess {
            child: Some(child),
            command,
            started: Instant::now(),
            stdout,
            stderr,
            readers,
            home,
        })
    }

    /// The OS process id.
    pub fn id(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Waits until a stdout line starts with `prefix` (looking at every line so far) and returns
    /// it; `None` when the process closed stdout or `timeout` passed first.
    pub fn wait_for_line(&self, prefix: &str, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        let (lock, cond) = &*self.stdout;
        let mut lines = lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(line) = lines.lines.iter().find(|l| l.starts_with(prefix)) {
                return Some(line.clone());
            }
            let now = Instant::now();
            if lines.eof || now >= deadline {
                return None;
            }
            lines = cond
                .wait_timeout(lines, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The stdout lines seen so far.
    pub fn stdout_lines(&self) -> Vec<String> {
        self.stdout
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .lines
            .clone()
    }

    /// Waits until `done` holds for the stdout lines so far (checked at once and after each new
    /// line); false when the process closed stdout or `timeout` passed first.
    pub fn wait_until(&self, timeout: Duration, mut done: impl FnMut(&[String]) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let (lock, cond) = &*self.stdout;
        let mut lines = lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if done(&lines.lines) {
                return true;
            }
            let now = Instant::now();
            if lines.eof || now >= deadline {
                return false;
            }
            lines = cond
                .wait_timeout(lines, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Waits for the process to exit, killing it after `timeout`, and returns what it printed.
    pub fn wait(mut self, timeout: Duration) -> JavaOutput {
        self.finish(Some(timeout))
    }

    /// Sends SIGTERM (our programs then shut their client down cleanly, print their result line
    /// and exit), waits up to `timeout` for the exit, kills it after that, and returns what it
    /// printed.
    pub fn terminate(mut self, timeout: Duration) -> JavaOutput {
        if let Some(child) = self.child.as_mut() {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
        self.finish(Some(timeout))
    }

    /// Kills the process now and returns what it printed.
    pub fn kill(mut self) -> JavaOutput {
        self.finish(None)
    }

    fn finish(&mut self, timeout: Option<Duration>) -> JavaOutput {
        let mut status = None;
        let mut timed_out = false;
        if let Some(mut child) = self.child.take() {
            let deadline = timeout.map(|t| Instant::now() + t);
            loop {
                match child.try_wait() {
                    Ok(Some(s)) => {
                        status = Some(s);
                        break;
                    }
                    Ok(None) if deadline.is_some_and(|d| Instant::now() < d) => {
                        thread::sleep(Duration::from_millis(20));
                    }
                    Ok(None) | Err(_) => {
                        timed_out = timeout.is_some();
                        // SIGKILL: the JVM gets no chance to hang in shutdown hooks.
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
        }
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        let stdout = {
            let lines = self.stdout.0.lock().unwrap_or_else(PoisonError::into_inner);
            let mut s = lines.lines.join("\n");
            if !lines.lines.is_empty() {
                s.push('\n');
            }
            s
        };
        let stderr =
            String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(PoisonError::into_inner))
                .into_owned();
        let mut home = self.home.take();
        if env::var_os("SLUICE_JAVA_KEEP_HOME").is_some() {
            if let Some(h) = home.as_mut() {
                h.disable_cleanup(true);
            }
        }
        JavaOutput {
            command: self.command.clone(),
            status,
            timed_out,
            stdout,
            stderr,
            elapsed: self.started.elapsed(),
            home,
        }
    }
}

impl Drop for JavaProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn read_lines(out: ChildStdout, sink: &(Mutex<Lines>, Condvar)) {
    let mut reader = BufReader::new(out);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).unwrap_or(0);
        let (lock, cond) = sink;
        let mut lines = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if n == 0 {
            lines.eof = true;
            cond.notify_all();
            return;
        }
        let line = String::from_utf8_lossy(&buf);
        lines
            .lines
            .push(line.trim_end_matches(['\n', '\r']).to_owned());
        cond.notify_all();
    }
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        let arg = arg.to_string_lossy();
        s.push(' ');
        // The class path is long and the same every time; keep messages readable.
        if arg.len() > 200 && arg.contains(':') {
            s.push_str("<classpath>");
        } else {
            s.push_str(&arg);
        }
    }
    s
}

/// What a JVM printed and how it ended.
#[derive(Debug)]
pub struct JavaOutput {
    /// The command line (class path abbreviated), for messages.
    pub command: String,
    /// `None` when the process was killed: timeout or [`JavaProcess::kill`].
    pub status: Option<ExitStatus>,
    /// Killed because it ran past its timeout.
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// The JVM's `user.home` (client and tools logs under `logs/`), removed when this is dropped
    /// unless `SLUICE_JAVA_KEEP_HOME` is set.
    home: Option<TempDir>,
}

impl JavaOutput {
    /// Exited by itself with status 0.
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// The exit code, if it exited by itself.
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// Stdout lines that start with `prefix`, whole.
    pub fn lines_starting_with(&self, prefix: &str) -> Vec<&str> {
        self.stdout
            .lines()
            .filter(|l| l.starts_with(prefix))
            .collect()
    }

    /// For each stdout line that starts with `prefix`, the rest of it split on whitespace:
    /// `fields("QUEUE ")` on `QUEUE broker-a 3` gives `[["broker-a", "3"]]`.
    pub fn fields(&self, prefix: &str) -> Vec<Vec<&str>> {
        self.lines_starting_with(prefix)
            .into_iter()
            .map(|l| l[prefix.len()..].split_whitespace().collect())
            .collect()
    }

    /// The first stdout line that starts with `prefix`.
    pub fn first_line_starting_with(&self, prefix: &str) -> Option<&str> {
        self.stdout.lines().find(|l| l.starts_with(prefix))
    }

    /// The JVM's `user.home`, while this output lives.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_ref().map(TempDir::path)
    }

    /// Panics, printing everything (and the tail of the JVM's logs), unless the exit status is 0.
    #[track_caller]
    pub fn assert_ok(&self) -> &Self {
        if !self.success() {
            panic!("expected success:\n{self}{}", self.log_tails());
        }
        self
    }

    /// Panics, printing everything, unless the process exited by itself with a non-zero status.
    #[track_caller]
    pub fn assert_failed(&self) -> &Self {
        if self.success() || self.status.is_none() {
            panic!("expected a failure exit:\n{self}{}", self.log_tails());
        }
        self
    }

    /// The last lines of every `*.log` under `user.home/logs`, for failure messages.
    fn log_tails(&self) -> String {
        let Some(home) = self.home() else {
            return String::new();
        };
        let mut files = Vec::new();
        collect_logs(&home.join("logs"), &mut files, 0);
        files.sort();
        let mut s = String::new();
        for file in files {
            let Ok(text) = fs::read_to_string(&file) else {
                continue;
            };
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(30)..];
            if !tail.is_empty() {
                s.push_str(&format!(
                    "--- tail of {}\n{}\n",
                    file.display(),
                    tail.join("\n")
                ));
            }
        }
        s
    }
}

fn collect_logs(dir: &Path, files: &mut Vec<PathBuf>, depth: usize) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && depth < 4 {
            collect_logs(&path, files, depth + 1);
        } else if path.extension().is_some_and(|e| e == "log") {
            files.push(path);
        }
    }
}

impl fmt::Display for JavaOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "command: {}", self.command)?;
        match (self.status, self.timed_out) {
            (_, true) => writeln!(f, "status: killed after timeout ({:?})", self.elapsed)?,
            (Some(s), _) => writeln!(f, "status: {s} after {:?}", self.elapsed)?,
            (None, _) => writeln!(f, "status: killed after {:?}", self.elapsed)?,
        }
        writeln!(f, "--- stdout\n{}", self.stdout.trim_end())?;
        writeln!(f, "--- stderr\n{}", self.stderr.trim_end())
    }
}

// ---------------------------------------------------------------- the cluster under test

/// Name server of an already running cluster to test instead of starting ours (loopback only).
pub const EXTERNAL_NAMESRV_ENV: &str = "SLUICE_TEST_NAMESRV_ADDR";
/// Address of that cluster's broker (`127.0.0.1:10911`), for tests that need it.
pub const EXTERNAL_BROKER_ENV: &str = "SLUICE_TEST_BROKER_ADDR";
/// A shell command that restarts that broker on its store and returns once it serves again.
pub const EXTERNAL_RESTART_ENV: &str = "SLUICE_TEST_BROKER_RESTART_CMD";

/// The cluster a client test talks to: our `mqnamesrv` + one `mqbroker` (master `broker-a`),
/// started for the test and stopped when this is dropped, or — when [`EXTERNAL_NAMESRV_ENV`] is
/// set — a cluster already running (Apache RocketMQ's, say), used as it is. Tests on an external
/// cluster must pick names of their own ([`unique_name`]): it keeps its topics and groups.
#[derive(Debug)]
pub struct TestCluster {
    // Dropped in this order: the broker first, while the name server still answers.
    broker: Option<BrokerProcess>,
    namesrv: Option<NamesrvProcess>,
    namesrv_addr: String,
    broker_addr: Option<String>,
}

impl TestCluster {
    /// Our cluster with the default broker settings, or the external one.
    ///
    /// # Panics
    /// When our processes do not start, or the external name server is not on loopback.
    #[must_use]
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Our cluster with extra broker settings (`-o key=value`), or the external one (the settings
    /// are then not applied).
    ///
    /// # Panics
    /// As [`TestCluster::start`].
    #[must_use]
    pub fn start_with(broker_settings: &[(&str, &str)]) -> Self {
        if let Some(ns) = env::var(EXTERNAL_NAMESRV_ENV)
            .ok()
            .filter(|v| !v.is_empty())
        {
            assert_loopback(&ns);
            let broker_addr = env::var(EXTERNAL_BROKER_ENV).ok().filter(|v| !v.is_empty());
            if let Some(addr) = &broker_addr {
                assert_loopback(addr);
            }
            return TestCluster {
                namesrv: None,
                broker: None,
                namesrv_addr: ns,
                broker_addr,
            };
        }
        let namesrv = NamesrvProcess::start();
        let broker = BrokerProcess::start_with(&namesrv.addr(), broker_settings);
        TestCluster {
            namesrv_addr: namesrv.addr(),
            broker_addr: Some(broker.addr()),
            namesrv: Some(namesrv),
            broker: Some(broker),
        }
    }

    /// The name server address, as `--namesrv` takes it.
    #[must_use]
    pub fn namesrv(&self) -> &str {
        &self.namesrv_addr
    }

    /// The broker's address (external: only when [`EXTERNAL_BROKER_ENV`] is set).
    #[must_use]
    pub fn broker_addr(&self) -> Option<&str> {
        self.broker_addr.as_deref()
    }

    /// Whether this is an external cluster.
    #[must_use]
    pub fn is_external(&self) -> bool {
        self.broker.is_none()
    }

    /// Our name server process; `None` on an external cluster.
    pub fn namesrv_process(&mut self) -> Option<&mut NamesrvProcess> {
        self.namesrv.as_mut()
    }

    /// Our broker process (logs, kill, ...); `None` on an external cluster.
    pub fn broker_process(&mut self) -> Option<&mut BrokerProcess> {
        self.broker.as_mut()
    }

    /// Restarts the broker on the same store and port: ours through [`BrokerProcess::restart`]
    /// (SIGTERM, then start again and wait until it serves), an external one by running
    /// [`EXTERNAL_RESTART_ENV`] with `sh -c`. Returns false, doing nothing, on an external cluster
    /// without that command.
    ///
    /// # Panics
    /// When the broker does not come back, or the command fails.
    pub fn restart_broker(&mut self) -> bool {
        if let Some(broker) = self.broker.as_mut() {
            broker.restart();
            return true;
        }
        let Some(cmd) = env::var(EXTERNAL_RESTART_ENV)
            .ok()
            .filter(|v| !v.is_empty())
        else {
            return false;
        };
        let out = Command::new("sh")
            .args(["-c", &cmd])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
        assert!(
            out.status.success(),
            "{cmd:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        true
    }
}

/// `<prefix>_<hex ms since the epoch><hex pid><counter>`: a topic or group name no earlier run on
/// the same (external) cluster used. Only characters RocketMQ allows in names.
#[must_use]
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}_{ms:x}{:x}{n}", std::process::id())
}

// ---------------------------------------------------------------- result lines of the programs

/// A `SENT` line of `sluice.it.Producer`:
/// `SENT <msgId> <offsetMsgId> <queueId> <queueOffset> <status> i=<i> tag=<t> keys=<k> okey=<k>`
/// (`-` for none; oneway sends have queue id and offset -1 and status `ONEWAY`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub msg_id: String,
    pub offset_msg_id: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub status: String,
    /// The message's index `i`: its body is `<body-prefix>-<i>`.
    pub index: usize,
    pub tag: Option<String>,
    pub keys: Option<String>,
    pub order_key: Option<String>,
}

impl Sent {
    /// Parses one line; `None` unless it is a well-formed `SENT` line.
    #[must_use]
    pub fn parse(line: &str) -> Option<Sent> {
        let rest = line.strip_prefix("SENT ")?;
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() < 5 {
            return None;
        }
        Some(Sent {
            msg_id: f[0].to_owned(),
            offset_msg_id: f[1].to_owned(),
            queue_id: f[2].parse().ok()?,
            queue_offset: f[3].parse().ok()?,
            status: f[4].to_owned(),
            index: labelled(&f[5..], "i")?.parse().ok()?,
            tag: labelled(&f[5..], "tag").and_then(dash_none),
            keys: labelled(&f[5..], "keys").and_then(dash_none),
            order_key: labelled(&f[5..], "okey").and_then(dash_none),
        })
    }

    /// Every `SENT` line of `lines`.
    pub fn all<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<Sent> {
        lines.into_iter().filter_map(Sent::parse).collect()
    }
}

/// One delivery printed by `sluice.it.PushConsumer` or `sluice.it.LitePullConsumer`: its `RECV`
/// line and the `PROPS` / `SEQ` / `RETRY` lines printed with it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recv {
    pub msg_id: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    /// Escaped as the programs print it (`\n`, `\\`, `\xNN`).
    pub body: String,
    /// `key=value` fields of the `PROPS` line (`--props`): topic, tags, keys, reconsume,
    /// offsetMsgId, born, store, recv, delay.
    pub props: BTreeMap<String, String>,
    /// `(orderKey, seq)` of the `SEQ` line (messages of `Producer --order-keys`).
    pub seq: Option<(String, u64)>,
    /// The reconsume times of the `RETRY` line: this delivery failed on purpose.
    pub retry: Option<u32>,
}

impl Recv {
    /// The deliveries in `lines`, in order.
    pub fn all<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<Recv> {
        let mut out: Vec<Recv> = Vec::new();
        for line in lines {
            if let Some(rest) = line.strip_prefix("RECV ") {
                let mut f = rest.splitn(4, ' ');
                let (Some(id), Some(q), Some(off)) = (f.next(), f.next(), f.next()) else {
                    continue;
                };
                let (Ok(queue_id), Ok(queue_offset)) = (q.parse(), off.parse()) else {
                    continue;
                };
                out.push(Recv {
                    msg_id: id.to_owned(),
                    queue_id,
                    queue_offset,
                    body: f.next().unwrap_or("").to_owned(),
                    ..Recv::default()
                });
                continue;
            }
            let Some(last) = out.last_mut() else {
                continue;
            };
            let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
            let mut f = rest.split_whitespace();
            if f.next() != Some(last.msg_id.as_str()) && tag != "SEQ" {
                continue;
            }
            match tag {
                "PROPS" => {
                    for kv in f {
                        if let Some((k, v)) = kv.split_once('=') {
                            last.props.insert(k.to_owned(), v.to_owned());
                        }
                    }
                }
                "SEQ" => {
                    let g: Vec<&str> = rest.split_whitespace().collect();
                    if g.len() >= 5 && g[4] == last.msg_id {
                        last.seq = g[1].parse().ok().map(|seq| (g[0].to_owned(), seq));
                    }
                }
                "RETRY" => last.retry = f.next().and_then(|n| n.parse().ok()),
                _ => {}
            }
        }
        out
    }

    /// A `PROPS` field as a number (`born`, `store`, `recv`, `reconsume`).
    #[must_use]
    pub fn prop_i64(&self, key: &str) -> Option<i64> {
        self.props.get(key).and_then(|v| v.parse().ok())
    }

    /// A `PROPS` field, `None` for a missing one, `-` or `null`.
    #[must_use]
    pub fn prop(&self, key: &str) -> Option<&str> {
        self.props
            .get(key)
            .map(String::as_str)
            .filter(|v| *v != "-" && *v != "null")
    }
}

/// `ALLOC <topic> <consumers> <queueIds|->` lines of `sluice.it.PushConsumer`: the latest share
/// of `topic` printed, as (number of consumers in the group, queue ids).
#[must_use]
pub fn last_allocation<S: AsRef<str>>(lines: &[S], topic: &str) -> Option<(usize, Vec<i32>)> {
    lines.iter().rev().find_map(|l| {
        let f: Vec<&str> = l.as_ref().split_whitespace().collect();
        if f.len() != 4 || f[0] != "ALLOC" || f[1] != topic {
            return None;
        }
        let queues = if f[3] == "-" {
            Vec::new()
        } else {
            f[3].split(',').filter_map(|q| q.parse().ok()).collect()
        };
        Some((f[2].parse().ok()?, queues))
    })
}

fn labelled<'a>(fields: &[&'a str], key: &str) -> Option<&'a str> {
    fields
        .iter()
        .find_map(|f| f.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

fn dash_none(v: &str) -> Option<String> {
    (v != "-").then(|| v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(stdout: &str) -> JavaOutput {
        JavaOutput {
            command: "test".into(),
            status: None,
            timed_out: false,
            stdout: stdout.into(),
            stderr: String::new(),
            elapsed: Duration::ZERO,
            home: None,
        }
    }

    #[test]
    fn parses_result_lines() {
        let out = output(
            "BROKER c b 0 127.0.0.1:10911\nQUEUE broker-a 0\nQUEUE broker-a 1\nOK queues=2\n",
        );
        assert_eq!(
            out.lines_starting_with("QUEUE "),
            ["QUEUE broker-a 0", "QUEUE broker-a 1"]
        );
        assert_eq!(out.fields("QUEUE "), [["broker-a", "0"], ["broker-a", "1"]]);
        assert_eq!(out.first_line_starting_with("OK"), Some("OK queues=2"));
        assert!(out.first_line_starting_with("ERR").is_none());
        assert!(!out.success());
    }

    #[test]
    fn parses_producer_and_consumer_lines() {
        let sent = Sent::all([
            "SENT AB 7F01 2 5 SEND_OK i=3 tag=TagA keys=key-3 okey=-",
            "SENT CD - -1 -1 ONEWAY i=4 tag=- keys=- okey=k-1",
            "OK sent=2",
        ]);
        assert_eq!(sent.len(), 2);
        assert_eq!(
            (sent[0].queue_id, sent[0].queue_offset, sent[0].index),
            (2, 5, 3)
        );
        assert_eq!(sent[0].tag.as_deref(), Some("TagA"));
        assert_eq!(sent[0].keys.as_deref(), Some("key-3"));
        assert_eq!(sent[0].order_key, None);
        assert_eq!(
            (sent[1].status.as_str(), sent[1].tag.clone()),
            ("ONEWAY", None)
        );
        assert_eq!(sent[1].order_key.as_deref(), Some("k-1"));

        let lines = [
            "STARTED g",
            "ALLOC T 2 0,1",
            "RECV AB 2 5 msg 3",
            "PROPS AB topic=T tags=TagA keys=key-3 reconsume=0 born=10 store=12 delay=-",
            "SEQ k-1 7 2 5 AB",
            "RETRY AB 0",
            "RECV CD 1 0 x",
            "ALLOC T 1 0,1,2,3",
        ];
        let recv = Recv::all(lines);
        assert_eq!(recv.len(), 2);
        assert_eq!(recv[0].body, "msg 3");
        assert_eq!(recv[0].prop("tags"), Some("TagA"));
        assert_eq!(recv[0].prop("delay"), None);
        assert_eq!(recv[0].prop_i64("store"), Some(12));
        assert_eq!(recv[0].seq, Some(("k-1".to_owned(), 7)));
        assert_eq!(recv[0].retry, Some(0));
        assert_eq!((recv[1].queue_id, recv[1].retry), (1, None));
        assert_eq!(last_allocation(&lines, "T"), Some((1, vec![0, 1, 2, 3])));
        assert_eq!(last_allocation(&lines, "U"), None);
        assert_ne!(unique_name("T"), unique_name("T"));
    }

    #[test]
    #[should_panic(expected = "expected success")]
    fn assert_ok_panics_on_a_killed_process() {
        output("").assert_ok();
    }

    #[test]
    fn loopback_only() {
        assert_loopback("127.0.0.1:9876");
        assert_loopback("127.0.0.1:9876;localhost:9877");
        check_namesrv_args(&["--topic", "T", "--namesrv", "127.0.0.2:1"]);
        let remote = std::panic::catch_unwind(|| assert_loopback("127.0.0.1:1;10.0.0.1:9876"));
        assert!(remote.is_err());
    }

    #[test]
    fn process_output_and_timeout() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo READY; echo oops >&2; exec sleep 30"]);
        let p = JavaProcess::spawn(cmd, None).unwrap();
        assert_eq!(
            p.wait_for_line("READY", Duration::from_secs(10)).as_deref(),
            Some("READY")
        );
        let out = p.wait(Duration::from_millis(200));
        assert!(out.timed_out && out.status.is_none());
        assert_eq!(out.stdout, "READY\n");
        assert_eq!(out.stderr, "oops\n");

        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo ERR x; exit 3"]);
        let out = JavaProcess::spawn(cmd, None)
            .unwrap()
            .wait(Duration::from_secs(10));
        assert_eq!(out.code(), Some(3));
        out.assert_failed();
    }

    /// Needs Maven Central (or a warm ~/.m2): builds the 4.x programs and runs the official mqadmin.
    #[test]
    fn mqadmin_lists_its_commands() {
        let java = JavaTools::get(V4);
        let out = java.mqadmin_raw(&[]);
        out.assert_ok();
        assert!(
            out.stdout
                .starts_with("The most commonly used mqadmin commands are:"),
            "{out}"
        );
        assert!(
            out.lines_starting_with("   clusterList ").len() == 1,
            "{out}"
        );

        let out = java.mqadmin_raw(&["noSuchCommand"]);
        out.assert_failed();
        assert_eq!(
            out.stdout.trim(),
            "The sub command noSuchCommand not exist."
        );
    }
}
