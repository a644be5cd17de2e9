//! The Go side of the integration tests: programs built on Apache's `rocketmq-client-go`
//! (`github.com/apache/rocketmq-client-go/v2`, pinned in `integration-tests/go/go.mod`), run as
//! separate processes against our `mqnamesrv` / `mqbroker`. Also home of [`ClientProcess`] /
//! [`ClientOutput`], the runner shared with [`crate::rust_client`].
//!
//! [`GoTools::get`] builds `integration-tests/go` (see its README) with `go/build.sh` once per
//! process; `build.sh` skips the build when the binaries are up to date and holds a `flock` on the
//! output directory, so parallel test binaries build one at a time and share it. The output
//! directory is `$SLUICE_GO_CACHE`, else `$CARGO_TARGET_DIR/go-it`, else `<workspace>/target/go-it`;
//! modules come from the Go module cache (`~/go/pkg/mod`), compiled packages from Go's build cache.
//!
//! ```no_run
//! use std::time::Duration;
//! use integration_tests::go::{GoTools, PRODUCER};
//!
//! let go = GoTools::get();
//! let out = go.run(
//!     PRODUCER,
//!     &["--namesrv", "127.0.0.1:9876", "--topic", "TopicTest", "--count", "3", "--mode", "async"],
//!     Duration::from_secs(60),
//! );
//! out.assert_ok();
//! assert!(out.sent().iter().all(|s| s.status == "SEND_OK"));
//! ```
//!
//! Every program gets a fresh temp directory as `HOME` (and working directory) and no
//! `NAMESRV_ADDR`; name server addresses given as `--namesrv` must be on loopback (the programs
//! check it too). Result lines are the Java programs' (`SENT`, `RECV`, `STARTED`, `OK`/`ERR`); the
//! client's own log goes to stderr, which failure messages print.

use std::collections::BTreeMap;
use std::env;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::java::assert_loopback;

/// The Go producer: sync / async / oneway sends, optionally batched.
pub const PRODUCER: &str = "producer";
/// The Go push consumer (clustering or broadcasting).
pub const PUSH_CONSUMER: &str = "push-consumer";
/// The Go client module the programs are built with (version in `go/go.mod`).
pub const GO_CLIENT_MODULE: &str = "github.com/apache/rocketmq-client-go/v2";

/// A cold build downloads ~10 MB of modules and compiles them: about a minute on 2 cores.
const BUILD_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// Stderr lines a failure message shows (the clients log a lot at info level).
const STDERR_TAIL_LINES: usize = 150;

/// The built Go test programs.
#[derive(Debug)]
pub struct GoTools {
    dir: PathBuf,
}

static GO_TOOLS: OnceLock<Result<GoTools, String>> = OnceLock::new();

impl GoTools {
    /// The programs, built on first use in this process.
    ///
    /// # Panics
    /// When the build fails, with the Go tool's output.
    pub fn get() -> &'static GoTools {
        match Self::try_get() {
            Ok(tools) => tools,
            Err(e) => panic!("cannot build the Go test programs:\n{e}"),
        }
    }

    /// Like [`GoTools::get`], returning the build failure instead of panicking.
    ///
    /// # Errors
    /// The build's output when it failed (remembered: later calls fail the same way).
    pub fn try_get() -> Result<&'static GoTools, String> {
        // Other threads wanting the tools wait for this build (build.sh serialises processes).
        GO_TOOLS
            .get_or_init(Self::build)
            .as_ref()
            .map_err(Clone::clone)
    }

    fn build() -> Result<GoTools, String> {
        let dir = cache_dir();
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("go")
            .join("build.sh");
        let mut cmd = Command::new("bash");
        cmd.arg(&script).arg(&dir);
        let started = Instant::now();
        let out = ClientProcess::spawn(cmd, None)
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?
            .wait(BUILD_TIMEOUT);
        if !out.success() {
            return Err(out.to_string());
        }
        if !out.stderr.is_empty() {
            // "build.sh: Go programs built in 41s" when it did build; visible with --nocapture.
            eprint!("{}", out.stderr);
        }
        tracing::debug!(elapsed = ?started.elapsed(), "go programs ready");
        Ok(GoTools { dir })
    }

    /// The directory holding the binaries.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of one program ([`PRODUCER`], [`PUSH_CONSUMER`]).
    pub fn program(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A command for `program` with `home` as `HOME` and working directory. Stdio is left to the
    /// caller.
    ///
    /// # Panics
    /// When a `--namesrv` argument is not on loopback.
    pub fn command(&self, program: &str, args: &[&str], home: &Path) -> Command {
        client_command(&self.program(program), args, home)
    }

    /// Starts `program` in the background (a consumer that must be running before messages are
    /// sent, say). The process is killed when the handle is dropped.
    ///
    /// # Panics
    /// When it cannot be started.
    pub fn spawn(&self, program: &str, args: &[&str]) -> ClientProcess {
        spawn_client(&self.program(program), args)
    }

    /// Runs `program` to completion, killing it after `timeout`.
    pub fn run(&self, program: &str, args: &[&str], timeout: Duration) -> ClientOutput {
        self.spawn(program, args).wait(timeout)
    }
}

/// `$SLUICE_GO_CACHE`, else `$CARGO_TARGET_DIR/go-it`, else `<workspace>/target/go-it`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = env::var_os("SLUICE_GO_CACHE") {
        return PathBuf::from(dir);
    }
    target_dir().join("go-it")
}

/// `$CARGO_TARGET_DIR` (relative to the workspace when relative), else `<workspace>/target`.
pub(crate) fn target_dir() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    match env::var_os("CARGO_TARGET_DIR") {
        Some(t) if Path::new(&t).is_absolute() => PathBuf::from(t),
        Some(t) => workspace.join(t),
        None => workspace.join("target"),
    }
}

// ---------------------------------------------------------------- client processes

/// A command for a client test program: loopback-checked `--namesrv`, `home` as `HOME` and
/// working directory, no `NAMESRV_ADDR`, and the HTTP name server lookup (used by clients that
/// have no name server configured) pointed at a closed loopback port.
pub(crate) fn client_command(program: &Path, args: &[&str], home: &Path) -> Command {
    check_namesrv_args(args);
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("HOME", home)
        .env_remove("NAMESRV_ADDR")
        .env("rocketmq.namesrv.domain", "127.0.0.1:9")
        .current_dir(home);
    cmd
}

/// Spawns a client test program with a fresh temp `HOME`.
pub(crate) fn spawn_client(program: &Path, args: &[&str]) -> ClientProcess {
    let home = tempfile::Builder::new()
        .prefix("sluice-client-")
        .tempdir()
        .expect("create a temp dir for the program's HOME");
    let cmd = client_command(program, args, home.path());
    match ClientProcess::spawn(cmd, Some(home)) {
        Ok(p) => p,
        Err(e) => panic!("cannot start {}: {e}", program.display()),
    }
}

fn check_namesrv_args(args: &[&str]) {
    for pair in args.windows(2) {
        if matches!(pair[0], "--namesrv" | "-n" | "-namesrv") {
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

/// A running client test program (Go or Rust) or build, its output captured as it comes. Killed
/// on drop.
#[derive(Debug)]
pub struct ClientProcess {
    child: Option<Child>,
    command: String,
    started: Instant,
    stdout: Arc<(Mutex<Lines>, Condvar)>,
    stderr: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
    home: Option<TempDir>,
}

impl ClientProcess {
    /// Spawns `cmd` with piped stdout/stderr; `home` is removed when the output is dropped.
    ///
    /// # Errors
    /// When the program cannot be started.
    pub fn spawn(mut cmd: Command, home: Option<TempDir>) -> std::io::Result<ClientProcess> {
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
        Ok(ClientProcess {
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

    /// Waits for the process to exit, killing it after `timeout`, and returns what it printed.
    pub fn wait(mut self, timeout: Duration) -> ClientOutput {
        self.finish(Some(timeout))
    }

    /// Kills the process now and returns what it printed.
    pub fn kill(mut self) -> ClientOutput {
        self.finish(None)
    }

    fn finish(&mut self, timeout: Option<Duration>) -> ClientOutput {
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
        ClientOutput {
            command: self.command.clone(),
            status,
            timed_out,
            stdout,
            stderr,
            elapsed: self.started.elapsed(),
            _home: self.home.take(),
        }
    }
}

impl Drop for ClientProcess {
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
        s.push(' ');
        s.push_str(&arg.to_string_lossy());
    }
    s
}

/// One `SENT <msgId> <offsetMsgId> <queueId> <queueOffset> <status>` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The client's message id (`-` when it reported none).
    pub msg_id: String,
    /// The broker's offset message id (`-` when the client reported none).
    pub offset_msg_id: String,
    /// Queue the message went to.
    pub queue_id: i32,
    /// Its offset in that queue.
    pub queue_offset: u64,
    /// `SEND_OK`, `FLUSH_DISK_TIMEOUT`, ...
    pub status: String,
}

/// One `RECV <msgId> <queueId> <queueOffset> <body>` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The message id as the client reports it.
    pub msg_id: String,
    /// Queue it came from.
    pub queue_id: i32,
    /// Its offset in that queue.
    pub queue_offset: u64,
    /// The body, escaped (printable text as is).
    pub body: String,
}

/// What a client test program printed and how it ended.
#[derive(Debug)]
pub struct ClientOutput {
    /// The command line, for messages.
    pub command: String,
    /// `None` when the process was killed: timeout or [`ClientProcess::kill`].
    pub status: Option<ExitStatus>,
    /// Killed because it ran past its timeout.
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    _home: Option<TempDir>,
}

impl ClientOutput {
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

    /// For each stdout line that starts with `prefix`, the rest of it split on whitespace.
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

    /// The `SENT` lines, parsed.
    ///
    /// # Panics
    /// On a malformed `SENT` line.
    #[track_caller]
    pub fn sent(&self) -> Vec<Sent> {
        self.fields("SENT ")
            .into_iter()
            .map(|f| match f.as_slice() {
                [msg_id, offset_msg_id, queue_id, queue_offset, status] => Sent {
                    msg_id: (*msg_id).to_owned(),
                    offset_msg_id: (*offset_msg_id).to_owned(),
                    queue_id: queue_id.parse().expect("SENT queue id"),
                    queue_offset: queue_offset.parse().expect("SENT queue offset"),
                    status: (*status).to_owned(),
                },
                _ => panic!("malformed SENT line {f:?}:\n{self}"),
            })
            .collect()
    }

    /// The `RECV` lines, parsed (the body is everything after the queue offset).
    ///
    /// # Panics
    /// On a malformed `RECV` line.
    #[track_caller]
    pub fn received(&self) -> Vec<Received> {
        self.lines_starting_with("RECV ")
            .into_iter()
            .map(|l| {
                let mut parts = l["RECV ".len()..].splitn(4, ' ');
                let (Some(msg_id), Some(queue_id), Some(queue_offset)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    panic!("malformed RECV line {l:?}:\n{self}");
                };
                Received {
                    msg_id: msg_id.to_owned(),
                    queue_id: queue_id.parse().expect("RECV queue id"),
                    queue_offset: queue_offset.parse().expect("RECV queue offset"),
                    body: parts.next().unwrap_or("").to_owned(),
                }
            })
            .collect()
    }

    /// Panics, printing everything, unless the exit status is 0.
    #[track_caller]
    pub fn assert_ok(&self) -> &Self {
        if !self.success() {
            panic!("expected success:\n{self}");
        }
        self
    }

    /// Panics, printing everything, unless the process exited by itself with a non-zero status.
    #[track_caller]
    pub fn assert_failed(&self) -> &Self {
        if self.success() || self.status.is_none() {
            panic!("expected a failure exit:\n{self}");
        }
        self
    }
}

impl fmt::Display for ClientOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "command: {}", self.command)?;
        match (self.status, self.timed_out) {
            (_, true) => writeln!(f, "status: killed after timeout ({:?})", self.elapsed)?,
            (Some(s), _) => writeln!(f, "status: {s} after {:?}", self.elapsed)?,
            (None, _) => writeln!(f, "status: killed after {:?}", self.elapsed)?,
        }
        writeln!(f, "--- stdout\n{}", self.stdout.trim_end())?;
        let lines: Vec<&str> = self.stderr.trim_end().lines().collect();
        let skipped = lines.len().saturating_sub(STDERR_TAIL_LINES);
        if skipped > 0 {
            writeln!(
                f,
                "--- stderr (last {STDERR_TAIL_LINES} of {} lines)",
                lines.len()
            )?;
        } else {
            writeln!(f, "--- stderr")?;
        }
        writeln!(f, "{}", lines[skipped..].join("\n"))
    }
}

/// The queue offsets of `sent`, per queue id, in ascending order.
pub fn offsets_by_queue(sent: &[Sent]) -> BTreeMap<i32, Vec<u64>> {
    let mut per_queue: BTreeMap<i32, Vec<u64>> = BTreeMap::new();
    for s in sent {
        per_queue
            .entry(s.queue_id)
            .or_default()
            .push(s.queue_offset);
    }
    for offsets in per_queue.values_mut() {
        offsets.sort_unstable();
    }
    per_queue
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(stdout: &str) -> ClientOutput {
        ClientOutput {
            command: "test".into(),
            status: None,
            timed_out: false,
            stdout: stdout.into(),
            stderr: String::new(),
            elapsed: Duration::ZERO,
            _home: None,
        }
    }

    #[test]
    fn parses_result_lines() {
        let out = output(
            "SENT ABC 7F00 3 7 SEND_OK\nSENT - 7F01 3 8 SEND_OK\nSTARTED g\n\
             RECV ABC 3 7 msg-1 with spaces\nRECV DEF 0 0 \nOK sent=2\n",
        );
        let sent = out.sent();
        assert_eq!(sent.len(), 2);
        assert_eq!(
            sent[0],
            Sent {
                msg_id: "ABC".into(),
                offset_msg_id: "7F00".into(),
                queue_id: 3,
                queue_offset: 7,
                status: "SEND_OK".into()
            }
        );
        assert_eq!(offsets_by_queue(&sent), BTreeMap::from([(3, vec![7, 8])]));
        let recv = out.received();
        assert_eq!(recv[0].body, "msg-1 with spaces");
        assert_eq!(recv[1].body, "");
        assert_eq!(out.first_line_starting_with("OK"), Some("OK sent=2"));
        assert!(!out.success());
    }

    #[test]
    fn process_output_and_timeout() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo STARTED g; echo oops >&2; exec sleep 30"]);
        let p = ClientProcess::spawn(cmd, None).unwrap();
        assert_eq!(
            p.wait_for_line("STARTED", Duration::from_secs(10))
                .as_deref(),
            Some("STARTED g")
        );
        let out = p.wait(Duration::from_millis(200));
        assert!(out.timed_out && out.status.is_none());
        assert_eq!(out.stdout, "STARTED g\n");
        assert_eq!(out.stderr, "oops\n");
    }

    #[test]
    fn refuses_a_remote_name_server() {
        let home = std::env::temp_dir();
        let _ = client_command(Path::new("true"), &["--namesrv", "127.0.0.1:1"], &home);
        let remote = std::panic::catch_unwind(|| {
            client_command(Path::new("true"), &["--namesrv", "10.1.2.3:9876"], &home)
        });
        assert!(remote.is_err());
    }

    #[test]
    fn stderr_is_trimmed_in_messages() {
        let mut out = output("");
        out.stderr = (0..400).map(|i| format!("line {i}\n")).collect();
        let text = out.to_string();
        assert!(text.contains("last 150 of 400 lines"), "{text}");
        assert!(text.contains("line 399") && !text.contains("line 249\n"));
    }
}
