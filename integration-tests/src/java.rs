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
//! Client tests run against a [`TestCluster`](crate::harness::TestCluster) (our `mqnamesrv` +
//! `mqbroker`, or an external cluster named by `SLUICE_TEST_NAMESRV_ADDR`), spawn consumers that
//! run alongside ([`ChildProcess::wait_until`], [`ChildProcess::terminate`]) and read the
//! programs' result lines with [`Sent::all`], [`Recv::all`] and [`last_allocation`].
//!
//! [`apache_dist`] resolves Apache RocketMQ's own name server and broker the same way
//! (`java-broker/build.sh`), for the bench driver and the HA interop tests.
//!
//! Every JVM gets a fresh temp directory as `user.home` (the clients and mqadmin log under
//! `~/logs/rocketmqlogs`), `ROCKETMQ_HOME` pointing at the build's `rocketmq-home` (mqadmin 4.x
//! needs `conf/logback_tools.xml` there), and the name server HTTP lookup pointed at a closed
//! loopback port. Name server addresses given to [`JavaTools::mqadmin`] or as `--namesrv` must be on
//! loopback.

use crate::spawn::GatedCommand;
use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::harness::build::target_dir;
use crate::harness::child::run_build;
use crate::harness::tools::{self, Tool, java_binary};
use crate::harness::{ChildOutput, ChildProcess, ProcessSpec, TestDir};
use crate::ports::{assert_loopback, assert_loopback_args};

/// The RocketMQ 4.x version under test.
pub const V4: &str = "4.9.8";
/// The RocketMQ 5.x version under test.
pub const V5: &str = "5.3.3";

/// How long [`JavaTools::produce`] lets a producer run.
pub const PRODUCE_TIMEOUT: Duration = Duration::from_secs(90);

/// One `#[test]` per client version for each scenario `fn(version: &str)` named:
/// `scenario::v4_9_8` ([`V4`]) and `scenario::v5_3_3` ([`V5`]); each needs Java and Maven
/// ([`require_tools!`](crate::require_tools)).
#[macro_export]
macro_rules! test_each_client_version {
    ($($scenario:ident),+ $(,)?) => {
        $(
            mod $scenario {
                #[test]
                fn v4_9_8() {
                    $crate::require_tools!(Java, Maven);
                    super::$scenario($crate::java::V4);
                }

                #[test]
                fn v5_3_3() {
                    $crate::require_tools!(Java, Maven);
                    super::$scenario($crate::java::V5);
                }
            }
        )+
    };
}
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

    /// Like [`JavaTools::get`], returning the build failure (or the missing tool) instead of
    /// panicking.
    ///
    /// # Errors
    /// Java or Maven is not installed, or the build failed (Maven's output).
    pub fn try_get(version: &str) -> Result<&'static JavaTools, String> {
        if let Some(absent) = tools::missing(&[Tool::Java, Tool::Maven]) {
            return Err(format!("the Java test programs need {absent}"));
        }
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
        let spec = ProcessSpec::program("build", "bash")
            .arg(&script)
            .arg(version)
            .arg(&out_dir);
        let started = Instant::now();
        let out = run_build("java-build", spec, BUILD_TIMEOUT)?;
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

    /// A `java` run of `class` with our JVM flags, the class path, `ROCKETMQ_HOME`, and `home`
    /// as `user.home` and log root (and working directory: the child's directory).
    ///
    /// # Panics
    /// When a name server argument is not on loopback.
    #[must_use]
    pub fn spec(
        &self,
        class: &str,
        args: &[&str],
        home: &Path,
        jvm_props: &[String],
    ) -> ProcessSpec {
        assert_loopback_args(args);
        let name = class.rsplit('.').next().unwrap_or(class);
        ProcessSpec::program(name, java_binary())
            .args(JVM_FLAGS)
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
    }

    /// Starts `class` in the background (a consumer that must be running before messages are
    /// sent, say). The process is killed when the handle is dropped.
    ///
    /// # Panics
    /// When `java` cannot be started.
    #[must_use]
    pub fn spawn(&self, class: &str, args: &[&str]) -> ChildProcess {
        self.spawn_with(class, args, &[])
    }

    fn spawn_with(&self, class: &str, args: &[&str], jvm_props: &[String]) -> ChildProcess {
        let home = TestDir::new("java");
        let spec = self.spec(class, args, home.path(), jvm_props);
        match ChildProcess::spawn(spec, home) {
            Ok(p) => p,
            Err(e) => panic!("cannot start java ({}): {e}", java_binary().display()),
        }
    }

    /// Runs `class` to completion, killing it after `timeout`.
    #[must_use]
    pub fn run(&self, class: &str, args: &[&str], timeout: Duration) -> ChildOutput {
        self.spawn(class, args).wait(timeout)
    }

    /// Sends `count` messages to `topic` with `sluice.it.Producer` (`extra`: its further
    /// flags, e.g. `--tag`, `--body-prefix`) and returns what it reports as sent, all of them.
    ///
    /// # Panics
    /// When the producer fails or reports fewer than `count` sends.
    pub fn produce(&self, namesrv: &str, topic: &str, count: usize, extra: &[&str]) -> Vec<Sent> {
        let count_s = count.to_string();
        let mut args = vec!["--namesrv", namesrv, "--topic", topic, "--count", &count_s];
        args.extend_from_slice(extra);
        let out = self.run("sluice.it.Producer", &args, PRODUCE_TIMEOUT);
        out.assert_ok();
        let sent = Sent::all(out.stdout.lines());
        assert_eq!(sent.len(), count, "{out}");
        sent
    }

    /// Runs the official mqadmin sub command `args[0]` with `args[1..]` and `-n namesrv`, with
    /// [`MQADMIN_TIMEOUT`]. Exit status is non-zero when the command printed a stack trace or
    /// does not exist (see [`MQADMIN_CLASS`]); stdout is mqadmin's, untouched.
    #[must_use]
    pub fn mqadmin(&self, namesrv: &str, args: &[&str]) -> ChildOutput {
        self.mqadmin_with_timeout(namesrv, args, MQADMIN_TIMEOUT)
    }

    /// [`JavaTools::mqadmin`] with another timeout.
    pub fn mqadmin_with_timeout(
        &self,
        namesrv: &str,
        args: &[&str],
        timeout: Duration,
    ) -> ChildOutput {
        assert_loopback(namesrv);
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["-n", namesrv]);
        self.mqadmin_raw_with_timeout(&all, timeout)
    }

    /// mqadmin with exactly `args` (no `-n`): `&[]` prints the command list, `&["help", "topicRoute"]`
    /// a command's options.
    #[must_use]
    pub fn mqadmin_raw(&self, args: &[&str]) -> ChildOutput {
        self.mqadmin_raw_with_timeout(args, MQADMIN_TIMEOUT)
    }

    /// Runs many official mqadmin commands (each with `-n namesrv` added) one after another
    /// in one JVM (`MqAdmin --batch`), each within `per_command`; their outcomes in order.
    ///
    /// # Panics
    /// When the batch cannot be written or run, or its output is not framed as expected.
    #[must_use]
    pub fn mqadmin_batch(
        &self,
        namesrv: &str,
        commands: &[Vec<String>],
        per_command: Duration,
    ) -> Vec<MqadminRun> {
        assert_loopback(namesrv);
        let dir = tempfile::tempdir().expect("a temp dir for the batch");
        let file = dir.path().join("batch.tsv");
        let mut text = String::new();
        for args in commands {
            assert_loopback_args(&args.iter().map(String::as_str).collect::<Vec<_>>());
            assert!(args.iter().all(|a| !a.contains(['\t', '\n'])), "{args:?}");
            text.push_str(&args.join("\t"));
            text.push_str("\t-n\t");
            text.push_str(namesrv);
            text.push('\n');
        }
        std::fs::write(&file, text).expect("the batch file");
        let count = u32::try_from(commands.len()).unwrap_or(u32::MAX);
        let total = per_command * count + Duration::from_secs(60);
        let props = [format!("-Dsluice.it.timeoutMs={}", total.as_millis())];
        let file_arg = file.display().to_string();
        let per_ms = per_command.as_millis().to_string();
        let out = self
            .spawn_with(MQADMIN_CLASS, &["--batch", &file_arg, &per_ms], &props)
            .wait(total + Duration::from_secs(10));
        assert!(out.success(), "mqadmin batch: {out}");
        let stdout = frames(&out.stdout);
        let stderr = frames(&out.stderr);
        assert_eq!(stdout.len(), commands.len(), "mqadmin batch stdout: {out}");
        commands
            .iter()
            .zip(stdout.into_iter().zip(stderr))
            .map(|(args, ((status, stdout), (_, stderr)))| MqadminRun {
                args: args.clone(),
                status,
                stdout,
                stderr,
            })
            .collect()
    }

    fn mqadmin_raw_with_timeout(&self, args: &[&str], timeout: Duration) -> ChildOutput {
        // The wrapper's own watchdog fires a little before ours, so its "ERR timeout" is seen.
        let inner = timeout
            .saturating_sub(Duration::from_secs(2))
            .max(Duration::from_secs(1));
        let props = [format!("-Dsluice.it.timeoutMs={}", inner.as_millis())];
        self.spawn_with(MQADMIN_CLASS, args, &props).wait(timeout)
    }
}

/// One command of [`JavaTools::mqadmin_batch`].
#[derive(Debug, Clone)]
pub struct MqadminRun {
    /// The command and its arguments (without `-n`).
    pub args: Vec<String>,
    /// 0 done, 1 failed (a stack trace or no such command), 124 not done in time.
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl MqadminRun {
    /// Exit 0 and no exception printed.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.status == 0 && !self.stderr.contains("Exception")
    }
}

impl std::fmt::Display for MqadminRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "mqadmin {} (status {})\n--- stdout\n{}--- stderr\n{}",
            self.args.join(" "),
            self.status,
            self.stdout,
            self.stderr
        )
    }
}

/// The `@@@ BEGIN i` … `@@@ END i status` frames of a batch's stream: (status, text) each.
fn frames(stream: &str) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in stream.lines() {
        // A command's last line may lack its newline: the marker then ends that line.
        let (text, marker) = match line.find("@@@ ") {
            Some(at) => (&line[..at], Some(&line[at..])),
            None => (line, None),
        };
        if let (Some(current), false) = (current.as_mut(), text.is_empty() && marker.is_some()) {
            current.push_str(text);
            current.push('\n');
        }
        let Some(marker) = marker else { continue };
        if marker.starts_with("@@@ BEGIN ") {
            current = Some(String::new());
        } else if let Some(rest) = marker.strip_prefix("@@@ END ") {
            let status = rest
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(-1);
            out.push((status, current.take().unwrap_or_default()));
        }
    }
    out
}

/// `$SLUICE_JAVA_CACHE`, else `$CARGO_TARGET_DIR/java-it`, else `<workspace>/target/java-it`.
#[must_use]
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = env::var_os("SLUICE_JAVA_CACHE") {
        return PathBuf::from(dir);
    }
    target_dir().join("java-it")
}

// ---------------------------------------------------------------- Apache RocketMQ's broker

/// A resolved Apache RocketMQ name server + broker (`org.apache.rocketmq:rocketmq-namesrv` /
/// `rocketmq-broker` from Maven Central).
#[derive(Debug, Clone)]
pub struct ApacheDist {
    /// Version (`5.3.3`).
    pub version: String,
    /// `:`-separated jars.
    pub classpath: String,
    /// A directory to use as `ROCKETMQ_HOME`.
    pub home: PathBuf,
}

/// Resolves Apache RocketMQ's name server + broker `version` with
/// `integration-tests/java-broker/build.sh` (the one place that fetches Apache RocketMQ; it does
/// nothing when its outputs are up to date) into `<cache_dir>/apache-broker`, once per version
/// and process.
///
/// # Errors
/// Java or Maven is missing, or `build.sh` fails (no network and no cached jars).
pub fn apache_dist(version: &str) -> Result<ApacheDist, String> {
    static RESOLVED: Mutex<BTreeMap<String, ApacheDist>> = Mutex::new(BTreeMap::new());
    let mut resolved = RESOLVED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(dist) = resolved.get(version) {
        return Ok(dist.clone());
    }
    if let Some(absent) = tools::missing(&[Tool::Java, Tool::Maven]) {
        return Err(format!("Apache RocketMQ's broker needs {absent}"));
    }
    let out_dir = cache_dir().join("apache-broker");
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("java-broker")
        .join("build.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(version)
        .arg(&out_dir)
        .gated_output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} {version} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let dir = out_dir.join(version);
    let cp_file = dir.join("classpath.txt");
    let classpath = fs::read_to_string(&cp_file)
        .map_err(|e| format!("{}: {e}", cp_file.display()))?
        .trim()
        .to_owned();
    if !classpath.contains("rocketmq-namesrv") {
        return Err(format!(
            "{} holds no rocketmq-namesrv jar",
            cp_file.display()
        ));
    }
    let dist = ApacheDist {
        version: version.to_owned(),
        classpath,
        home: dir.join("rocketmq-home"),
    };
    resolved.insert(version.to_owned(), dist.clone());
    Ok(dist)
}

// ---------------------------------------------------------------- result lines of the programs

/// A `SENT` line of `sluice.it.Producer`:
/// `SENT <msgId> <offsetMsgId> <queueId> <queueOffset> <status> i=<i> tag=<t> keys=<k> okey=<k>
/// due=<ms>` (`-` for none; oneway sends have queue id and offset -1 and status `ONEWAY`; `due`:
/// a timer message's due time, `--timer`).
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
    /// A timer message's due time (epoch ms, the producer's clock).
    pub due: Option<i64>,
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
            due: labelled(&f[5..], "due").and_then(|d| d.parse().ok()),
        })
    }

    /// Every `SENT` line of `lines`.
    pub fn all<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<Sent> {
        lines.into_iter().filter_map(Sent::parse).collect()
    }
}

/// One delivery printed by `sluice.it.PushConsumer` or `sluice.it.LitePullConsumer`: its `RECV`
/// line and the `PROPS` / `TIMER` / `SEQ` / `RETRY` lines printed with it.
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
    /// `key=value` fields of the `TIMER` line (a timer message): recv, due, sent, born, store,
    /// reconsume, out, enqueue, dequeue, roll, delaySec, delayMs, deliverMs, realTopic,
    /// realQid, names (see `Timer.java`).
    pub timer: BTreeMap<String, String>,
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
                "PROPS" | "TIMER" => {
                    let map = if tag == "PROPS" {
                        &mut last.props
                    } else {
                        &mut last.timer
                    };
                    for kv in f {
                        if let Some((k, v)) = kv.split_once('=') {
                            map.insert(k.to_owned(), v.to_owned());
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

    /// A `TIMER` field as a number (`recv`, `due`, `out`, ...); `None` when missing or `-`.
    #[must_use]
    pub fn timer_i64(&self, key: &str) -> Option<i64> {
        self.timer.get(key).and_then(|v| v.parse().ok())
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

    #[test]
    fn parses_result_lines() {
        let out = ChildOutput::from_stdout(
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
            "SENT CD - -1 -1 ONEWAY i=4 tag=- keys=- okey=k-1 due=1234",
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
        assert_eq!((sent[0].due, sent[1].due), (None, Some(1234)));

        let lines = [
            "STARTED g",
            "ALLOC T 2 0,1",
            "RECV AB 2 5 msg 3",
            "PROPS AB topic=T tags=TagA keys=key-3 reconsume=0 born=10 store=12 delay=-",
            "SEQ k-1 7 2 5 AB",
            "RETRY AB 0",
            "RECV CD 1 0 x",
            "TIMER CD recv=20 due=19 sent=9 out=18000 enqueue=- names=A,B",
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
        assert!(recv[0].timer.is_empty());
        assert_eq!(recv[1].timer_i64("recv"), Some(20));
        assert_eq!(recv[1].timer_i64("out"), Some(18000));
        assert_eq!(recv[1].timer_i64("enqueue"), None);
        assert_eq!(recv[1].timer.get("names").map(String::as_str), Some("A,B"));
        assert_eq!(last_allocation(&lines, "T"), Some((1, vec![0, 1, 2, 3])));
        assert_eq!(last_allocation(&lines, "U"), None);
    }
}
