//! The official gRPC SDKs as test drivers, through Apache's proxy
//! ([`ApacheProxy`](crate::harness::ApacheProxy)): one case program per SDK
//! (`integration-tests/grpc/`, its README describes the cases and the result lines they share),
//! built or installed once per process, run against a proxy's gRPC endpoint.
//!
//! - [`Sdk::Java`]: `org.apache.rocketmq:rocketmq-client-java` [`JAVA_SDK`] from Maven Central
//!   (`grpc/java/build.sh` into `<java cache>/grpc-java/<version>`, `~/.m2`);
//! - [`Sdk::Go`]: `github.com/apache/rocketmq-clients/golang/v5` (pinned in `grpc/go/go.mod`,
//!   the Go module cache; built into `<go cache>/grpc`);
//! - [`Sdk::Python`]: `rocketmq-python-client` from PyPI (pinned in
//!   `grpc/python/requirements.txt`, a venv in `$SLUICE_PYTHON_CACHE`, else
//!   `<target>/python-it`; pip's cache `$SLUICE_PIP_CACHE`, else `~/.cache/pip`).
//!
//! [`CaseRun::parse`] reads what a case program printed.

use std::collections::BTreeMap;
use std::env;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use crate::harness::build::target_dir;
use crate::harness::child::run_build;
use crate::harness::tools::{self, Tool, java_binary};
use crate::harness::{ChildOutput, ChildProcess, ProcessSpec, TestDir};

/// The Java gRPC SDK version (`rocketmq-client-java`).
pub const JAVA_SDK: &str = "5.2.0";
/// A cold build or install downloads the SDK and compiles: about a minute on 2 cores.
const BUILD_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// The cases every SDK's program runs (`grpc/README.md`).
pub const CASES: [&str; 6] = ["normal", "fifo", "delay", "transaction", "simple", "push"];

/// One of the official gRPC SDKs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sdk {
    Java,
    Go,
    Python,
}

impl Sdk {
    /// Every SDK under test.
    pub const ALL: [Sdk; 3] = [Sdk::Java, Sdk::Go, Sdk::Python];

    /// `java`, `go`, `python`: the suffix of test names, topics and groups.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Sdk::Java => "java",
            Sdk::Go => "go",
            Sdk::Python => "python",
        }
    }

    /// The tools its program needs.
    #[must_use]
    pub fn tools(self) -> &'static [Tool] {
        match self {
            Sdk::Java => &[Tool::Java, Tool::Maven],
            Sdk::Go => &[Tool::Go],
            Sdk::Python => &[Tool::Python],
        }
    }

    /// Its program, built (or installed) on first use in this process.
    ///
    /// # Panics
    /// When the build fails, with its output (remembered: later calls fail the same way).
    #[must_use]
    pub fn program(self) -> &'static CaseProgram {
        static BUILT: [OnceLock<Result<CaseProgram, String>>; 3] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let slot = match self {
            Sdk::Java => &BUILT[0],
            Sdk::Go => &BUILT[1],
            Sdk::Python => &BUILT[2],
        };
        match slot.get_or_init(|| self.build()).as_ref() {
            Ok(p) => p,
            Err(e) => panic!("cannot build the {} gRPC case program:\n{e}", self.name()),
        }
    }

    fn build(self) -> Result<CaseProgram, String> {
        if let Some(absent) = tools::missing(self.tools()) {
            return Err(format!("needs {absent}"));
        }
        let grpc = Path::new(env!("CARGO_MANIFEST_DIR")).join("grpc");
        let (script, args, out): (PathBuf, Vec<String>, PathBuf) = match self {
            Sdk::Java => {
                let out = crate::java::cache_dir().join("grpc-java");
                let args = vec![JAVA_SDK.to_owned(), out.display().to_string()];
                (grpc.join("java/build.sh"), args, out.join(JAVA_SDK))
            }
            Sdk::Go => {
                let out = crate::go::cache_dir().join("grpc");
                (
                    grpc.join("go/build.sh"),
                    vec![out.display().to_string()],
                    out,
                )
            }
            Sdk::Python => {
                let out = python_cache_dir();
                (
                    grpc.join("python/setup.sh"),
                    vec![out.display().to_string()],
                    out,
                )
            }
        };
        let spec = ProcessSpec::program("build", "bash")
            .arg(&script)
            .args(&args);
        let built = run_build(&format!("grpc-{}-build", self.name()), spec, BUILD_TIMEOUT)?;
        if !built.stderr.is_empty() {
            // "build.sh: ... done in 31s" when it did build; visible with --nocapture.
            eprint!("{}", built.stderr);
        }
        let command = match self {
            Sdk::Java => {
                let deps = std::fs::read_to_string(out.join("classpath.txt"))
                    .map_err(|e| format!("{}: {e}", out.join("classpath.txt").display()))?;
                let classpath = format!("{}:{}", deps.trim(), out.join("app.jar").display());
                let mut c: Vec<String> = [
                    "-Xms64m",
                    "-Xmx256m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-Djava.net.preferIPv4Stack=true",
                ]
                .map(str::to_owned)
                .to_vec();
                c.extend([
                    "-cp".to_owned(),
                    classpath,
                    "sluice.it.GrpcClient".to_owned(),
                ]);
                (java_binary(), c)
            }
            Sdk::Go => (out.join("grpc-client"), Vec::new()),
            Sdk::Python => (
                out.join("venv/bin/python"),
                vec![out.join("grpc_client.py").display().to_string()],
            ),
        };
        Ok(CaseProgram {
            sdk: self,
            program: command.0,
            leading: command.1,
        })
    }
}

/// `$SLUICE_PYTHON_CACHE`, else `$CARGO_TARGET_DIR/python-it`, else `<workspace>/target/python-it`:
/// the Python SDK's venv.
#[must_use]
pub fn python_cache_dir() -> PathBuf {
    if let Some(dir) = env::var_os("SLUICE_PYTHON_CACHE") {
        return PathBuf::from(dir);
    }
    target_dir().join("python-it")
}

/// One SDK's built case program.
#[derive(Debug)]
pub struct CaseProgram {
    sdk: Sdk,
    program: PathBuf,
    /// Arguments before the case's own (the JVM's flags and class, the Python script).
    leading: Vec<String>,
}

impl CaseProgram {
    /// Runs case `case` against the proxy at `endpoint` with `topic` and `group`, killed after
    /// `timeout` (its own watchdog fires 5 s earlier). The program gets a fresh temp `HOME`
    /// (the SDK's logs: `~/logs/rocketmq*`).
    ///
    /// # Panics
    /// When the endpoint is not on loopback or the program cannot be started.
    #[must_use]
    pub fn run(
        &self,
        case: &str,
        endpoint: &str,
        topic: &str,
        group: &str,
        timeout: Duration,
    ) -> ChildOutput {
        assert!(endpoint.starts_with("127."), "not on loopback: {endpoint}");
        let home = TestDir::new(&format!("grpc-{}-{case}", self.sdk.name()));
        let inner = timeout
            .saturating_sub(Duration::from_secs(5))
            .as_millis()
            .to_string();
        let mut spec = ProcessSpec::program(&format!("grpc-{}", self.sdk.name()), &self.program);
        if self.sdk == Sdk::Java {
            spec = spec
                .arg(format!("-Duser.home={}", home.path().display()))
                .arg(format!(
                    "-Drocketmq.log.root={}",
                    home.path().join("logs").display()
                ));
        }
        spec = spec
            .args(&self.leading)
            .arg(case)
            .args(["--endpoint", endpoint, "--topic", topic, "--group", group])
            .args(["--timeout-ms", &inner])
            .env("HOME", home.path())
            .env_remove("NAMESRV_ADDR")
            .env("PYTHONUNBUFFERED", "1");
        let child = match ChildProcess::spawn(spec, home) {
            Ok(c) => c,
            Err(e) => panic!("cannot start the {} case program: {e}", self.sdk.name()),
        };
        child.wait(timeout)
    }
}

// ---------------------------------------------------------------- result lines

/// `SENT <i> <msgId> at=<ms> [deliver=<ms>] [tx=<commit|rollback|unknown>]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub index: usize,
    pub msg_id: String,
    /// When the send returned (the program's clock, epoch ms).
    pub at: i64,
    /// The delivery timestamp it was given (delay case).
    pub deliver: Option<i64>,
    /// The local transaction's outcome (transaction case).
    pub tx: Option<String>,
}

/// `RECV <body> <msgId> attempt= tag= keys= group= deliver= born= recv= topic= idx=`: one
/// delivery (`-` for none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub body: String,
    pub msg_id: String,
    /// Every `key=value` field.
    pub fields: BTreeMap<String, String>,
}

impl Delivery {
    /// A field, `None` when missing or `-`.
    #[must_use]
    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .get(key)
            .map(String::as_str)
            .filter(|v| *v != "-")
    }

    /// A numeric field.
    #[must_use]
    pub fn number(&self, key: &str) -> Option<i64> {
        self.field(key).and_then(|v| v.parse().ok())
    }
}

/// An event on one message: `CHECK`, `CHANGE`, `SKIP`, `FAIL`, `ACK` lines
/// (`<KIND> <body> <msgId> [key=value]...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: String,
    pub body: String,
    pub msg_id: String,
    pub fields: BTreeMap<String, String>,
}

/// What a case program printed.
#[derive(Debug, Clone, Default)]
pub struct CaseRun {
    pub sent: Vec<Sent>,
    pub deliveries: Vec<Delivery>,
    pub events: Vec<Event>,
    /// The `OK ...` line.
    pub ok: Option<String>,
    /// Every `ERR ...` line.
    pub errors: Vec<String>,
    /// Every `RECVERR <error>` line: a receive that failed (not "no message").
    pub receive_errors: Vec<String>,
}

fn key_values<'a>(fields: impl Iterator<Item = &'a str>) -> BTreeMap<String, String> {
    fields
        .filter_map(|f| f.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

impl CaseRun {
    /// Parses a program's stdout; other lines are ignored.
    #[must_use]
    pub fn parse(stdout: &str) -> CaseRun {
        let mut run = CaseRun::default();
        for line in stdout.lines() {
            let mut f = line.split_whitespace();
            let Some(kind) = f.next() else { continue };
            match kind {
                "SENT" => {
                    let (Some(i), Some(id)) = (f.next(), f.next()) else {
                        continue;
                    };
                    let Ok(index) = i.parse() else { continue };
                    let kv = key_values(f);
                    run.sent.push(Sent {
                        index,
                        msg_id: id.to_owned(),
                        at: kv.get("at").and_then(|v| v.parse().ok()).unwrap_or(0),
                        deliver: kv.get("deliver").and_then(|v| v.parse().ok()),
                        tx: kv.get("tx").cloned(),
                    });
                }
                "RECV" | "CHECK" | "CHANGE" | "SKIP" | "FAIL" | "ACK" => {
                    let (Some(body), Some(id)) = (f.next(), f.next()) else {
                        continue;
                    };
                    let fields = key_values(f);
                    if kind == "RECV" {
                        run.deliveries.push(Delivery {
                            body: body.to_owned(),
                            msg_id: id.to_owned(),
                            fields,
                        });
                    } else {
                        run.events.push(Event {
                            kind: kind.to_owned(),
                            body: body.to_owned(),
                            msg_id: id.to_owned(),
                            fields,
                        });
                    }
                }
                "OK" => run.ok = Some(line.to_owned()),
                "ERR" => run.errors.push(line.to_owned()),
                "RECVERR" => run.receive_errors.push(line.to_owned()),
                _ => {}
            }
        }
        run
    }

    /// The deliveries of `body`, in order.
    #[must_use]
    pub fn deliveries_of(&self, body: &str) -> Vec<&Delivery> {
        self.deliveries.iter().filter(|d| d.body == body).collect()
    }

    /// The events of `kind`.
    #[must_use]
    pub fn events(&self, kind: &str) -> Vec<&Event> {
        self.events.iter().filter(|e| e.kind == kind).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_case_lines() {
        let run = CaseRun::parse(
            "STARTED g\nSENT 0 01AB at=10 deliver=20\nSENT 1 01AC at=11 tx=rollback\n\
             RECV delay-0 01AB attempt=1 tag=- keys=k-0 group=g-1 deliver=20 recv=21\n\
             CHANGE simple-1 01AC ms=2000 at=30\nACK delay-0 01AB\nRECVERR DEADLINE_EXCEEDED\nOK received=1\nERR x y\n",
        );
        assert_eq!(run.sent.len(), 2);
        assert_eq!((run.sent[0].at, run.sent[0].deliver), (10, Some(20)));
        assert_eq!(run.sent[1].tx.as_deref(), Some("rollback"));
        let d = &run.deliveries_of("delay-0")[0];
        assert_eq!(d.field("tag"), None);
        assert_eq!(d.field("group"), Some("g-1"));
        assert_eq!(d.number("recv"), Some(21));
        assert_eq!(run.events("CHANGE")[0].fields["ms"], "2000");
        assert_eq!(run.events("ACK").len(), 1);
        assert_eq!(run.ok.as_deref(), Some("OK received=1"));
        assert_eq!(run.errors, ["ERR x y"]);
        assert_eq!(run.receive_errors, ["RECVERR DEADLINE_EXCEEDED"]);
    }
}
