//! Test programs run as child processes — the Java clients and `mqadmin`, the Go and Rust
//! client programs, builds — with their output captured as it comes, so a test can wait for a
//! line (`STARTED`), stop the program (SIGTERM, then SIGKILL) and read what it printed.
//!
//! One runner for every language: [`crate::java`], [`crate::go`] and [`crate::rust_client`]
//! differ in how they build and launch their programs, not in how a running program is watched.

use std::env;
use std::fmt;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// Failure messages show at most this many trailing stderr lines (client logs are chatty).
const STDERR_TAIL_LINES: usize = 150;

/// Set to keep each program's temp `HOME` (and its logs) after the test.
pub const KEEP_HOME_ENV: &str = "SLUICE_JAVA_KEEP_HOME";

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

/// Stdout lines as they arrive, so a test can wait for one (e.g. `STARTED`).
#[derive(Debug, Default)]
struct Lines {
    lines: Vec<String>,
    eof: bool,
}

/// A running test program, its output captured as it comes. Killed on drop.
#[derive(Debug)]
pub struct ChildProcess {
    child: Option<Child>,
    command: String,
    started: Instant,
    stdout: Arc<(Mutex<Lines>, Condvar)>,
    stderr: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
    home: Option<TempDir>,
}

impl ChildProcess {
    /// Spawns `cmd` with piped stdout/stderr; `home` is removed when the output is dropped.
    ///
    /// # Errors
    /// When the program cannot be started.
    pub fn spawn(mut cmd: Command, home: Option<TempDir>) -> std::io::Result<ChildProcess> {
        let command = describe(&cmd);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn()?;
        crate::procs::track(child.id());
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
        Ok(ChildProcess {
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
        let mut found = None;
        self.wait_until(timeout, |lines| {
            found = lines.iter().find(|l| l.starts_with(prefix)).cloned();
            found.is_some()
        });
        found
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
    pub fn wait(mut self, timeout: Duration) -> ChildOutput {
        self.finish(Some(timeout))
    }

    /// Sends SIGTERM (our programs then shut their client down cleanly, print their result line
    /// and exit), waits up to `timeout` for the exit, kills it after that, and returns what it
    /// printed.
    pub fn terminate(mut self, timeout: Duration) -> ChildOutput {
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
    pub fn kill(mut self) -> ChildOutput {
        self.finish(None)
    }

    fn finish(&mut self, timeout: Option<Duration>) -> ChildOutput {
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
                        // SIGKILL: a JVM gets no chance to hang in shutdown hooks.
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
            crate::procs::untrack(child.id());
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
        if env::var_os(KEEP_HOME_ENV).is_some() {
            if let Some(h) = home.as_mut() {
                h.disable_cleanup(true);
            }
        }
        ChildOutput {
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

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            crate::procs::untrack(child.id());
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
        // A Java class path is long and the same every time; keep messages readable.
        if arg.len() > 200 && arg.contains(':') {
            s.push_str("<classpath>");
        } else {
            s.push_str(&arg);
        }
    }
    s
}

/// What a test program printed and how it ended.
#[derive(Debug)]
pub struct ChildOutput {
    /// The command line (a class path abbreviated), for messages.
    pub command: String,
    /// `None` when the process was killed: timeout or [`ChildProcess::kill`].
    pub status: Option<ExitStatus>,
    /// Killed because it ran past its timeout.
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// The program's `HOME` (a JVM's `user.home`, with client and tools logs under `logs/`),
    /// removed when this is dropped unless [`KEEP_HOME_ENV`] is set.
    home: Option<TempDir>,
}

impl ChildOutput {
    /// An output that came from no process: `stdout` as given, killed status. For parsing tests.
    pub fn from_stdout(stdout: &str) -> ChildOutput {
        ChildOutput {
            command: "test".into(),
            status: None,
            timed_out: false,
            stdout: stdout.into(),
            stderr: String::new(),
            elapsed: Duration::ZERO,
            home: None,
        }
    }

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

    /// The program's `HOME`, while this output lives.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_ref().map(TempDir::path)
    }

    /// Panics, printing everything (and the tail of the program's logs), unless the exit status
    /// is 0.
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

    /// The last lines of every `*.log` under `HOME/logs`, for failure messages.
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

impl fmt::Display for ChildOutput {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_timeout_and_terminate() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo STARTED g; echo oops >&2; exec sleep 30"]);
        let p = ChildProcess::spawn(cmd, None).unwrap();
        assert_eq!(
            p.wait_for_line("STARTED", Duration::from_secs(10))
                .as_deref(),
            Some("STARTED g")
        );
        let out = p.wait(Duration::from_millis(200));
        assert!(out.timed_out && out.status.is_none());
        assert_eq!(out.stdout, "STARTED g\n");
        assert_eq!(out.stderr, "oops\n");

        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "trap 'echo BYE; exit 3' TERM; echo UP; while :; do sleep 0.05; done",
        ]);
        let p = ChildProcess::spawn(cmd, None).unwrap();
        assert!(p.wait_until(Duration::from_secs(10), |l| l.iter().any(|l| l == "UP")));
        let out = p.terminate(Duration::from_secs(10));
        assert_eq!((out.code(), out.timed_out), (Some(3), false), "{out}");
        assert_eq!(out.first_line_starting_with("BYE"), Some("BYE"));
        out.assert_failed();
    }

    #[test]
    #[should_panic(expected = "expected success")]
    fn assert_ok_panics_on_a_killed_process() {
        ChildOutput::from_stdout("").assert_ok();
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

    #[test]
    fn stderr_is_trimmed_in_messages() {
        let mut out = ChildOutput::from_stdout("");
        out.stderr = (0..400).map(|i| format!("line {i}\n")).collect();
        let text = out.to_string();
        assert!(text.contains("last 150 of 400 lines"), "{text}");
        assert!(text.contains("line 399") && !text.contains("line 249\n"));
    }
}
