//! The Go side of the integration tests: programs built on Apache's `rocketmq-client-go`
//! (`github.com/apache/rocketmq-client-go/v2`, pinned in `integration-tests/go/go.mod`), run as
//! separate processes against our `mqnamesrv` / `mqbroker`, watched as any child is
//! ([`ChildProcess`]); [`ChildOutput::sent`] / [`ChildOutput::received`] parse the result lines
//! the Go and Rust programs share.
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
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::harness::build::target_dir;
use crate::harness::child::run_build;
use crate::harness::tools::{self, Tool};
use crate::harness::{ChildOutput, ChildProcess, ProcessSpec, TestDir};
use crate::ports::assert_loopback_args;

/// The Go producer: sync / async / oneway sends, optionally batched.
pub const PRODUCER: &str = "producer";
/// The Go push consumer (clustering or broadcasting).
pub const PUSH_CONSUMER: &str = "push-consumer";
/// The Go client module the programs are built with (version in `go/go.mod`).
pub const GO_CLIENT_MODULE: &str = "github.com/apache/rocketmq-client-go/v2";

/// A cold build downloads ~10 MB of modules and compiles them: about a minute on 2 cores.
const BUILD_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Built client test programs (the Go ones, the Rust ones) in one directory.
#[derive(Debug)]
pub struct ClientPrograms {
    dir: PathBuf,
}

impl ClientPrograms {
    /// The programs in `dir`.
    #[must_use]
    pub fn new(dir: PathBuf) -> Self {
        ClientPrograms { dir }
    }

    /// The directory holding the binaries.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of one program ([`PRODUCER`], [`PUSH_CONSUMER`], ...).
    #[must_use]
    pub fn program(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Starts `program` in the background (a consumer that must be running before messages are
    /// sent, say). The process is killed when the handle is dropped.
    ///
    /// # Panics
    /// When it cannot be started.
    #[must_use]
    pub fn spawn(&self, program: &str, args: &[&str]) -> ChildProcess {
        spawn_client(&self.program(program), args)
    }

    /// Runs `program` to completion, killing it after `timeout`.
    #[must_use]
    pub fn run(&self, program: &str, args: &[&str], timeout: Duration) -> ChildOutput {
        self.spawn(program, args).wait(timeout)
    }
}

/// Builds [`ClientPrograms`] once per process: `build` runs on the first call, its result
/// (failure included) is remembered.
pub(crate) fn built_once(
    cell: &'static OnceLock<Result<ClientPrograms, String>>,
    build: fn() -> Result<ClientPrograms, String>,
) -> Result<&'static ClientPrograms, String> {
    // Other threads wanting the programs wait for this build (the build scripts and cargo
    // serialise processes).
    cell.get_or_init(build).as_ref().map_err(Clone::clone)
}

/// The Go test programs.
#[derive(Debug)]
pub struct GoTools;

static GO_PROGRAMS: OnceLock<Result<ClientPrograms, String>> = OnceLock::new();

impl GoTools {
    /// The programs, built on first use in this process.
    ///
    /// # Panics
    /// When the build fails, with the Go tool's output.
    #[must_use]
    pub fn get() -> &'static ClientPrograms {
        match Self::try_get() {
            Ok(programs) => programs,
            Err(e) => panic!("cannot build the Go test programs:\n{e}"),
        }
    }

    /// Like [`GoTools::get`], returning the build failure instead of panicking.
    ///
    /// # Errors
    /// Go is not installed, or the build's output when it failed (remembered: later calls fail
    /// the same way).
    pub fn try_get() -> Result<&'static ClientPrograms, String> {
        if let Some(absent) = tools::missing(&[Tool::Go]) {
            return Err(format!("the Go test programs need {absent}"));
        }
        built_once(&GO_PROGRAMS, Self::build)
    }

    fn build() -> Result<ClientPrograms, String> {
        let dir = cache_dir();
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("go")
            .join("build.sh");
        let spec = ProcessSpec::program("build", "bash").arg(&script).arg(&dir);
        let started = Instant::now();
        let out = run_build("go-build", spec, BUILD_TIMEOUT)?;
        if !out.stderr.is_empty() {
            // "build.sh: Go programs built in 41s" when it did build; visible with --nocapture.
            eprint!("{}", out.stderr);
        }
        tracing::debug!(elapsed = ?started.elapsed(), "go programs ready");
        Ok(ClientPrograms { dir })
    }
}

/// `$SLUICE_GO_CACHE`, else `$CARGO_TARGET_DIR/go-it`, else `<workspace>/target/go-it`.
#[must_use]
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = env::var_os("SLUICE_GO_CACHE") {
        return PathBuf::from(dir);
    }
    target_dir().join("go-it")
}

// ---------------------------------------------------------------- client processes

/// A client test program's run: loopback-checked `--namesrv`, `home` as `HOME` (and working
/// directory: the child's directory), no `NAMESRV_ADDR`, and the HTTP name server lookup (used
/// by clients that have no name server configured) pointed at a closed loopback port.
///
/// # Panics
/// When a `--namesrv` argument is not on loopback.
pub(crate) fn client_spec(program: &Path, args: &[&str], home: &Path) -> ProcessSpec {
    assert_loopback_args(args);
    let name = program
        .file_name()
        .map_or_else(|| "client".to_owned(), |n| n.to_string_lossy().into_owned());
    ProcessSpec::program(&name, program)
        .args(args)
        .env("HOME", home)
        .env_remove("NAMESRV_ADDR")
        .env("rocketmq.namesrv.domain", "127.0.0.1:9")
}

/// Spawns a client test program with a fresh temp `HOME`.
///
/// # Panics
/// When it cannot be started.
pub(crate) fn spawn_client(program: &Path, args: &[&str]) -> ChildProcess {
    let home = TestDir::new("client");
    let spec = client_spec(program, args, home.path());
    match ChildProcess::spawn(spec, home) {
        Ok(p) => p,
        Err(e) => panic!("cannot start {}: {e}", program.display()),
    }
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

impl ChildOutput {
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

    #[test]
    fn parses_result_lines() {
        let out = ChildOutput::from_stdout(
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
    fn refuses_a_remote_name_server() {
        let home = std::env::temp_dir();
        let _ = client_spec(Path::new("true"), &["--namesrv", "127.0.0.1:1"], &home);
        let remote = std::panic::catch_unwind(|| {
            client_spec(Path::new("true"), &["--namesrv", "10.1.2.3:9876"], &home)
        });
        assert!(remote.is_err());
    }
}
