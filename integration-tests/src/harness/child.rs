//! One child process, whatever it runs: our binaries (`mqnamesrv`, `mqbroker`), an Apache
//! broker, a client test program (Java, Go, Rust), a build script.
//!
//! A [`ChildProcess`] runs in a [`TestDir`] of its own (its working directory), with stdout and
//! stderr in `<dir>/<name>.stdout.log` / `.stderr.log`:
//! - [`start`](ChildProcess::start) waits until it is ready: a listening line and a TCP
//!   connect, a TCP connect, or as soon as it is spawned ([`Readiness`]);
//! - a client program's stdout lines are also kept as they come ([`ProcessSpec::program`]), so
//!   a test can wait for one (`STARTED`) and read what it printed when it ends
//!   ([`wait`](ChildProcess::wait), [`terminate`](ChildProcess::terminate):
//!   a [`ChildOutput`]);
//! - [`stop`](ChildProcess::stop) sends SIGTERM and SIGKILL after a grace period;
//!   [`restart`](ChildProcess::restart) starts it again on the same directory, logs (a marker
//!   is appended) and reserved ports;
//! - dropped, it is stopped (our binaries) or killed at once (client programs); when the test
//!   is failing, the end of both logs is printed and the directory kept.
//!
//! Every child is registered with [`crate::procs`], so an interrupted driver kills them all.
//! Our binaries get `RUST_LOG=info` (or `$SLUICE_CHILD_RUST_LOG`), never the test's own
//! `RUST_LOG`, so readiness lines are always logged.

use crate::spawn::GatedCommand;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::dir::TestDir;
use super::output::ChildOutput;
use crate::ports::PortReservation;

/// How long a child may take to become ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a child may take to exit after SIGTERM before it is killed (default of
/// [`ProcessSpec::stop_grace`]).
pub const STOP_GRACE: Duration = Duration::from_secs(10);
/// Lines of each log printed when a test fails.
const LOG_TAIL_LINES: usize = 60;
/// The marker `mqnamesrv` and `mqbroker` log once serving.
pub const LISTENING_MARKER: &str = "listening on ";
/// Set to keep each client program's directory (its `HOME`, with its logs) after the test.
pub const KEEP_HOME_ENV: &str = "SLUICE_JAVA_KEEP_HOME";

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

/// What to run: program, arguments, environment, readiness, and how it is watched.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Short name for log files and messages (`mqnamesrv`, `mqbroker-a`, `Producer`).
    pub name: String,
    /// The executable.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<OsString>,
    /// Extra environment (on top of the inherited one).
    pub envs: Vec<(OsString, OsString)>,
    /// Inherited variables it must not see.
    pub envs_removed: Vec<OsString>,
    /// When it is ready.
    pub readiness: Readiness,
    /// How long it may take to become ready.
    pub ready_timeout: Duration,
    /// How long [`ChildProcess::stop`] waits after SIGTERM before it kills it.
    pub stop_grace: Duration,
    /// Whether it gets our `RUST_LOG` (our binaries) or inherits the test's (client programs).
    pub own_rust_log: bool,
    /// Whether its stdout lines are kept as they come, to wait on (client programs).
    pub capture: bool,
    /// Whether dropping it kills it at once (client programs) rather than stopping it.
    pub kill_on_drop: bool,
}

impl ProcessSpec {
    /// One of our servers: `program` with no arguments, ready on its listening line, stopped
    /// (SIGTERM first) when dropped.
    #[must_use]
    pub fn new(name: &str, program: impl Into<PathBuf>) -> Self {
        ProcessSpec {
            name: name.to_owned(),
            program: program.into(),
            args: Vec::new(),
            envs: Vec::new(),
            envs_removed: Vec::new(),
            readiness: Readiness::ListeningLine,
            ready_timeout: READY_TIMEOUT,
            stop_grace: STOP_GRACE,
            own_rust_log: true,
            capture: false,
            kill_on_drop: false,
        }
    }

    /// A client program or a build: ready once spawned, the test's environment as it is, its
    /// stdout lines kept, killed at once when dropped.
    #[must_use]
    pub fn program(name: &str, program: impl Into<PathBuf>) -> Self {
        ProcessSpec {
            readiness: Readiness::Spawned,
            own_rust_log: false,
            capture: true,
            kill_on_drop: true,
            ..Self::new(name, program)
        }
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    #[must_use]
    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
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

    /// Hides an inherited environment variable.
    #[must_use]
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.envs_removed.push(key.as_ref().to_owned());
        self
    }

    /// Sets the readiness condition.
    #[must_use]
    pub fn readiness(mut self, readiness: Readiness) -> Self {
        self.readiness = readiness;
        self
    }

    /// The command line, for messages (a Java class path abbreviated).
    #[must_use]
    pub fn describe(&self) -> String {
        let mut s = self.program.to_string_lossy().into_owned();
        for arg in &self.args {
            let arg = arg.to_string_lossy();
            s.push(' ');
            // A Java class path is long and the same every time; keep messages readable.
            if arg.len() > 200 && arg.contains(':') {
                s.push_str("<classpath>");
            } else {
                s.push_str(&arg);
            }
        }
        s
    }

    /// The command, run in `dir`, stdin closed; stdout and stderr are the caller's.
    fn command(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).current_dir(dir).stdin(Stdio::null());
        if self.own_rust_log {
            let level =
                std::env::var_os("SLUICE_CHILD_RUST_LOG").unwrap_or_else(|| OsString::from("info"));
            cmd.env("RUST_LOG", level);
        }
        for key in &self.envs_removed {
            cmd.env_remove(key);
        }
        cmd.envs(self.envs.iter().map(|(k, v)| (k, v)));
        cmd
    }

    fn log_paths(&self, dir: &Path) -> (PathBuf, PathBuf) {
        (
            dir.join(format!("{}.stdout.log", self.name)),
            dir.join(format!("{}.stderr.log", self.name)),
        )
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
        let (stdout_path, stderr_path) = self.log_paths(dir);
        let log = |p: &Path| File::create(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let started = Instant::now();
        let mut child = self
            .command(dir)
            .stdout(log(&stdout_path))
            .stderr(log(&stderr_path))
            .gated_spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.name));
        let status = wait_exit(&mut child, timeout).or_else(|| {
            let _ = child.kill();
            let _ = child.wait();
            None
        });
        Exited {
            status,
            elapsed: started.elapsed(),
            stdout: fs::read_to_string(&stdout_path).unwrap_or_default(),
            stderr: fs::read_to_string(&stderr_path).unwrap_or_default(),
        }
    }
}

/// Stdout lines as they arrive, so a test can wait for one (e.g. `STARTED`).
#[derive(Debug, Default)]
struct Lines {
    lines: Vec<String>,
    eof: bool,
}

type SharedLines = Arc<(Mutex<Lines>, Condvar)>;

/// A running child. Stopped (SIGTERM, then SIGKILL) or killed when dropped.
pub struct ChildProcess {
    spec: ProcessSpec,
    /// `None` once handed to a [`ChildOutput`].
    dir: Option<TestDir>,
    child: Option<Child>,
    stdout_path: PathBuf,
    stderr_path: PathBuf,
    listening: Option<SocketAddr>,
    /// Ports reserved for this process, held for its whole life.
    ports: Vec<PortReservation>,
    starts: u32,
    /// Where this start's output begins in the stdout and stderr logs.
    log_offsets: (u64, u64),
    started: Instant,
    /// Stdout lines so far, with [`ProcessSpec::capture`].
    lines: SharedLines,
    /// Copies a captured stdout to its log and its lines.
    reader: Option<JoinHandle<()>>,
}

impl fmt::Debug for ChildProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildProcess")
            .field("name", &self.spec.name)
            .field("pid", &self.pid())
            .field("listening", &self.listening)
            .field("dir", &self.dir)
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
        let mut process = Self::new(spec, dir, ports);
        process.spawn_and_wait();
        process
    }

    /// Spawns `spec` in `dir` without waiting for anything (a client program, a build).
    ///
    /// # Errors
    /// When it cannot be started.
    pub fn spawn(spec: ProcessSpec, dir: TestDir) -> std::io::Result<Self> {
        let mut process = Self::new(spec, dir, Vec::new());
        process.spawn_child()?;
        Ok(process)
    }

    fn new(spec: ProcessSpec, dir: TestDir, ports: Vec<PortReservation>) -> Self {
        let (stdout_path, stderr_path) = spec.log_paths(dir.path());
        ChildProcess {
            spec,
            dir: Some(dir),
            child: None,
            stdout_path,
            stderr_path,
            listening: None,
            ports,
            starts: 0,
            log_offsets: (0, 0),
            started: Instant::now(),
            lines: SharedLines::default(),
            reader: None,
        }
    }

    fn spawn_child(&mut self) -> std::io::Result<()> {
        for port in &mut self.ports {
            port.release_listener();
        }
        self.starts += 1;
        let (stdout, stdout_offset) = self.open_log(&self.stdout_path)?;
        let (stderr, stderr_offset) = self.open_log(&self.stderr_path)?;
        self.log_offsets = (stdout_offset, stderr_offset);
        let mut cmd = self.spec.command(self.dir());
        cmd.stderr(stderr);
        if self.spec.capture {
            cmd.stdout(Stdio::piped());
        } else {
            cmd.stdout(stdout.try_clone()?);
        }
        let mut child = cmd.gated_spawn()?;
        crate::procs::track(child.id());
        self.started = Instant::now();
        self.listening = None;
        if let Some(out) = child.stdout.take() {
            let sink = Arc::clone(&self.lines);
            sink.0.lock().unwrap_or_else(PoisonError::into_inner).eof = false;
            self.reader = Some(thread::spawn(move || copy_lines(out, stdout, &sink)));
        }
        self.child = Some(child);
        Ok(())
    }

    /// [`start`](Self::start) for a process given reserved ports: when it exits at once
    /// because one of them is taken after all (`Address already in use` in its stderr: a
    /// process outside the reservations bound it between our check and its bind), it is
    /// started again from `make` (fresh ports, a fresh directory), three times at most.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    #[must_use]
    pub fn start_on_free_ports(
        mut make: impl FnMut() -> (ProcessSpec, TestDir, Vec<PortReservation>),
    ) -> Self {
        const ATTEMPTS: usize = 3;
        for attempt in 1..=ATTEMPTS {
            let (spec, dir, ports) = make();
            let mut process = Self::new(spec, dir, ports);
            let status = match process.try_spawn_and_wait() {
                Ok(()) => return process,
                Err(status) => status,
            };
            let stderr = process.stderr();
            if attempt == ATTEMPTS || !stderr.contains("Address already in use") {
                // Drop prints the end of its logs.
                panic!(
                    "{} exited before it was ready ({status})",
                    process.spec.name
                );
            }
            eprintln!(
                "harness: {} found a reserved port taken ({}); starting it again on other ports",
                process.spec.name,
                stderr.trim()
            );
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Keeps `ports` reserved for as long as this process handle lives.
    pub fn keep_ports(&mut self, ports: Vec<PortReservation>) {
        self.ports.extend(ports);
    }

    fn spawn_and_wait(&mut self) {
        if let Err(status) = self.try_spawn_and_wait() {
            // Drop prints the end of its logs.
            panic!("{} exited before it was ready ({status})", self.spec.name);
        }
    }

    /// Spawns and waits until ready; `Err` with its exit status when it exits first.
    ///
    /// # Panics
    /// When it cannot be spawned or is not ready in time.
    fn try_spawn_and_wait(&mut self) -> Result<(), std::process::ExitStatus> {
        if let Err(e) = self.spawn_child() {
            panic!(
                "cannot start {} ({}): {e}",
                self.spec.name,
                self.spec.program.display()
            );
        }
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
                return Err(status);
            }
            if self.check_ready() {
                return Ok(());
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
    fn open_log(&self, path: &Path) -> std::io::Result<(File, u64)> {
        let mut file = OpenOptions::new().create(true).append(true).open(path)?;
        if self.starts > 1 {
            writeln!(file, "----- harness: start #{} -----", self.starts)?;
        }
        let offset = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok((file, offset))
    }

    /// Whether this start is ready (its logs are read from where this start began).
    fn check_ready(&mut self) -> bool {
        match self.spec.readiness.clone() {
            Readiness::Spawned => true,
            Readiness::Connect(addr) => {
                TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            }
            Readiness::ListeningLine => {
                let (stdout_offset, stderr_offset) = self.log_offsets;
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
    ///
    /// # Panics
    /// After [`wait`](Self::wait) or [`terminate`](Self::terminate) handed it on.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir
            .as_ref()
            .expect("the directory is still this process's")
            .path()
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
        test_support::wait_until_every(Duration::from_millis(20), timeout, || {
            self.stdout().contains(needle) || self.stderr().contains(needle)
        })
    }

    /// How many times its log says `needle` (stdout and stderr, all starts).
    #[must_use]
    pub fn count_in_log(&self, needle: &str) -> usize {
        self.stdout().matches(needle).count() + self.stderr().matches(needle).count()
    }

    /// The stdout lines seen so far (kept as they come with [`ProcessSpec::capture`], else
    /// read from the log).
    #[must_use]
    pub fn stdout_lines(&self) -> Vec<String> {
        if !self.spec.capture {
            return self.stdout().lines().map(str::to_owned).collect();
        }
        self.lines
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .lines
            .clone()
    }

    /// Waits until a stdout line starts with `prefix` (looking at every line so far) and
    /// returns it; `None` when the process closed stdout or `timeout` passed first.
    pub fn wait_for_line(&self, prefix: &str, timeout: Duration) -> Option<String> {
        let mut found = None;
        self.wait_until(timeout, |lines| {
            found = lines.iter().find(|l| l.starts_with(prefix)).cloned();
            found.is_some()
        });
        found
    }

    /// Waits until `done` holds for the stdout lines so far (checked at once and after each
    /// new line); false when the process closed stdout or `timeout` passed first. Without
    /// [`ProcessSpec::capture`] the log is read every 20 ms until `timeout`.
    pub fn wait_until(&self, timeout: Duration, mut done: impl FnMut(&[String]) -> bool) -> bool {
        if !self.spec.capture {
            return test_support::wait_until_every(Duration::from_millis(20), timeout, || {
                done(&self.stdout_lines())
            });
        }
        let deadline = Instant::now() + timeout;
        let (lock, cond) = &*self.lines;
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

    /// Stops it: SIGTERM, then SIGKILL if it is still running after its
    /// [`stop_grace`](ProcessSpec::stop_grace). Returns how it exited (`None` if it was not
    /// running).
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.listening = None;
        let mut child = self.child.take()?;
        let grace = self.spec.stop_grace;
        let status = match child.try_wait() {
            Ok(Some(status)) => Some(status),
            _ => {
                terminate(&child);
                wait_exit(&mut child, grace).or_else(|| {
                    eprintln!(
                        "{} ignored SIGTERM for {grace:?}, killing it",
                        self.spec.name
                    );
                    let _ = child.kill();
                    child.wait().ok()
                })
            }
        };
        crate::procs::untrack(child.id());
        self.join_reader();
        status
    }

    /// Kills it with SIGKILL at once (crash tests). Returns how it exited.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        self.listening = None;
        let mut child = self.child.take()?;
        let _ = child.kill();
        let status = child.wait().ok();
        crate::procs::untrack(child.id());
        self.join_reader();
        status
    }

    fn join_reader(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
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

    /// Waits for it to exit, killing it after `timeout`, and returns what it printed.
    #[must_use]
    pub fn wait(mut self, timeout: Duration) -> ChildOutput {
        self.finish(timeout)
    }

    /// Sends SIGTERM (our programs then shut their client down cleanly, print their result
    /// line and exit), waits up to `timeout` for the exit, kills it after that, and returns
    /// what it printed.
    #[must_use]
    pub fn terminate(mut self, timeout: Duration) -> ChildOutput {
        if let Some(child) = self.child.as_mut() {
            if matches!(child.try_wait(), Ok(None)) {
                terminate(child);
            }
        }
        self.finish(timeout)
    }

    fn finish(&mut self, timeout: Duration) -> ChildOutput {
        let mut status = None;
        let mut timed_out = false;
        if let Some(mut child) = self.child.take() {
            status = wait_exit(&mut child, timeout);
            if status.is_none() {
                timed_out = true;
                // SIGKILL: a JVM gets no chance to hang in shutdown hooks.
                let _ = child.kill();
                let _ = child.wait();
            }
            crate::procs::untrack(child.id());
        }
        self.join_reader();
        let stdout = if self.spec.capture {
            let lines = self.lines.0.lock().unwrap_or_else(PoisonError::into_inner);
            let mut s = lines.lines.join("\n");
            if !lines.lines.is_empty() {
                s.push('\n');
            }
            s
        } else {
            self.stdout()
        };
        let stderr = self.stderr();
        let mut dir = self.dir.take();
        if std::env::var_os(KEEP_HOME_ENV).is_some() {
            if let Some(d) = dir.as_mut() {
                d.keep();
            }
        }
        ChildOutput {
            command: self.spec.describe(),
            status,
            timed_out,
            stdout,
            stderr,
            elapsed: self.started.elapsed(),
            home: dir,
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let failing = thread::panicking();
        let status = if self.spec.kill_on_drop {
            self.kill()
        } else {
            self.stop()
        };
        if failing && self.dir.is_some() {
            eprintln!(
                "{} stopped ({}), logs in {}\n{}",
                self.spec.name,
                status.map_or_else(|| "was not running".to_owned(), |s| s.to_string()),
                self.dir().display(),
                self.log_tails()
            );
        }
    }
}

/// Runs a build step (a build script, cargo) to completion in a directory of its own
/// (`sluice-<label>-*`), killing it after `timeout`.
///
/// # Errors
/// It cannot be started, or it fails: everything it printed.
pub fn run_build(label: &str, spec: ProcessSpec, timeout: Duration) -> Result<ChildOutput, String> {
    let command = spec.describe();
    let out = ChildProcess::spawn(spec, TestDir::new(label))
        .map_err(|e| format!("cannot run {command}: {e}"))?
        .wait(timeout);
    if out.success() {
        Ok(out)
    } else {
        Err(out.to_string())
    }
}

/// SIGTERM to `child`.
fn terminate(child: &Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .gated_status();
}

/// Waits up to `timeout` for `child` to exit by itself; `None` when it still runs.
fn wait_exit(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
            _ => return None,
        }
    }
}

/// Copies a captured stdout to its log, keeping its lines.
fn copy_lines(out: ChildStdout, mut log: File, sink: &(Mutex<Lines>, Condvar)) {
    let mut reader = BufReader::new(out);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).unwrap_or(0);
        if n > 0 {
            let _ = log.write_all(&buf);
        }
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

    fn shell(script: &str) -> ChildProcess {
        let spec = ProcessSpec::program("sh", "sh").arg("-c").arg(script);
        ChildProcess::spawn(spec, TestDir::new("harness-program")).unwrap()
    }

    #[test]
    fn output_timeout_and_terminate() {
        let p = shell("echo STARTED g; echo oops >&2; exec sleep 30");
        assert_eq!(
            p.wait_for_line("STARTED", Duration::from_secs(10))
                .as_deref(),
            Some("STARTED g")
        );
        let out = p.wait(Duration::from_millis(200));
        assert!(out.timed_out && out.status.is_none());
        assert_eq!(out.stdout, "STARTED g\n");
        assert_eq!(out.stderr, "oops\n");
        let logged = fs::read_to_string(out.home().unwrap().join("sh.stdout.log")).unwrap();
        assert_eq!(logged, "STARTED g\n", "captured stdout is logged too");

        let p = shell("trap 'echo BYE; exit 3' TERM; echo UP; while :; do sleep 0.05; done");
        assert!(p.wait_until(Duration::from_secs(10), |l| l.iter().any(|l| l == "UP")));
        let out = p.terminate(Duration::from_secs(10));
        assert_eq!((out.code(), out.timed_out), (Some(3), false), "{out}");
        assert_eq!(out.first_line_starting_with("BYE"), Some("BYE"));
        out.assert_failed();
    }

    #[test]
    fn a_finished_program_closes_its_lines() {
        let p = shell("echo one; echo two");
        assert!(!p.wait_until(Duration::from_secs(10), |l| l.len() > 2));
        assert_eq!(p.stdout_lines(), ["one", "two"]);
        let out = p.wait(Duration::from_secs(10));
        assert!(out.success(), "{out}");
    }
}
