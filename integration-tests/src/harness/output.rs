//! What a finished child printed and how it ended ([`ChildOutput`]): the result lines of the
//! client test programs (`SENT`, `RECV`, `OK`, ...), and failure messages that show everything,
//! with the tail of the program's own logs.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use super::dir::TestDir;

/// Failure messages show at most this many trailing stderr lines (client logs are chatty).
const STDERR_TAIL_LINES: usize = 150;

/// What a test program printed and how it ended.
#[derive(Debug)]
pub struct ChildOutput {
    /// The command line (a class path abbreviated), for messages.
    pub command: String,
    /// `None` when the process was killed (its timeout passed).
    pub status: Option<ExitStatus>,
    /// Killed because it ran past its timeout.
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// The program's directory, its `HOME` (a JVM's `user.home`, with client and tools logs
    /// under `logs/`): removed when this is dropped unless the test fails or
    /// [`KEEP_HOME_ENV`](super::child::KEEP_HOME_ENV) is set.
    pub(super) home: Option<TestDir>,
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
        self.home.as_ref().map(TestDir::path)
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
    #[should_panic(expected = "expected success")]
    fn assert_ok_panics_on_a_killed_process() {
        ChildOutput::from_stdout("").assert_ok();
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
