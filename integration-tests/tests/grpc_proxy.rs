//! RocketMQ 5's gRPC clients through Apache's own proxy (issue 16): `rocketmq-proxy` 5.3.3 in
//! cluster mode in front of a name server and broker, driven by the official gRPC SDKs — Java
//! (`rocketmq-client-java`), Go (`golang/v5`) and Python (`rocketmq-python-client`) — each case
//! run against two systems:
//!
//! - `sluice`: our `mqnamesrv` + `mqbroker` behind the proxy;
//! - `apache`: Apache RocketMQ 5.3.3's own name server and broker behind the same proxy: the
//!   reference that shows the case and its expectations are right.
//!
//! Priority messages (RIP-80) are new in 5.4: the proxy of 5.3.3 knows no `PRIORITY` topic
//! type. The `priority` case runs through `rocketmq-proxy` 5.4.0, against a sluice system and
//! Apache RocketMQ 5.4.0's (the [`Release::V5_4`] systems, started only for it).
//!
//! Cases (`integration-tests/grpc/README.md` describes what each program does): `normal`
//! (producer, SimpleConsumer with a tag filter), `fifo` (message groups, an orderly consumer
//! group), `delay` (a delivery timestamp), `transaction` (commit, rollback and a check-back),
//! `simple` (receive, ack, changeInvisibleDuration, redelivery after the invisible time) and
//! `push` (PushConsumer, a failed consumption redelivered), `recall` (Java: a delay message
//! recalled before it is due; 5.3.2+), and `priority` (a backlog of four priorities, higher ones
//! received first). Test names are
//! `<system>::<case>_<sdk>_<system>`; each case has a topic of its own with the right
//! `+message.type` (Apache's mqadmin `updateTopic -a`) and a group of its own.
//!
//! One proxy + cluster per system is shared by all its cases (distinct topics and groups), so
//! this test binary has its own `main` (libtest-mimic: the usual filters, `--ignored`,
//! `--list`): it starts a system when its first case runs and stops it after the last.
//! Cases that fail on sluice are listed in [`IGNORED_ON_SLUICE`] with the reason (run them with
//! `--ignored`); a failing case's message carries the proxy's errors during it.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use integration_tests::grpc::{
    CASES, CaseRun, Sdk, check_deliveries, group, message_type, topic, warm_up,
};
use integration_tests::harness::tools::{self, Tool};
use integration_tests::harness::{
    ApacheBroker, ApacheNamesrv, ApacheProxy, BrokerProcess, ChildOutput, NamesrvProcess,
};
use integration_tests::java::{JavaTools, V5};
use libtest_mimic::{Arguments, Failed, Trial};

/// The cluster both systems' brokers are in (the proxy's `rocketMQClusterName`).
const CLUSTER: &str = "DefaultCluster";
/// Queues of each test topic.
const QUEUES: &str = "4";
/// How long one case program may run.
const CASE_TIMEOUT: Duration = Duration::from_secs(150);
/// Broker settings both systems get: timers on (delay case), a check-back round every 2 s
/// (half messages are checked once older than `transactionTimeOut`, 6 s), recalls allowed
/// (`recall` case).
const BROKER_SETTINGS: [(&str, &str); 3] = [
    ("timerWheelEnable", "true"),
    ("transactionCheckInterval", "2000"),
    ("recallMessageEnable", "true"),
];

/// Proxy settings both systems get: the proxy heartbeats its transactional producer groups to
/// the brokers every 2 s (20 s by default: a broker can only check back on a group it has a
/// heartbeat of), and holds a consumer's long poll at most 5 s (20 s by default: a push
/// consumer's redelivery from the retry topic waits for its next poll).
const PROXY_SETTINGS: [(&str, i64); 2] = [
    ("transactionHeartbeatPeriodSecond", 2),
    ("grpcClientConsumerMaxLongPollingTimeoutMillis", 5000),
];

/// `<case>_<sdk>` cases that fail on sluice, with why; they run with `--ignored`.
const IGNORED_ON_SLUICE: &[(&str, &str)] = &[];

// ------------------------------------------------------------------------------- the systems

/// The Apache RocketMQ release of a system's proxy and of the reference name server and broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Release {
    /// 5.3.3: every case but `priority` (`recall` with Java only).
    V5_3,
    /// 5.4.0: the first release with priority messages.
    V5_4,
}

impl Release {
    fn version(self) -> &'static str {
        match self {
            Release::V5_3 => "5.3.3",
            Release::V5_4 => "5.4.0",
        }
    }

    /// The (case, SDK) pairs run through this release's proxy.
    fn cases(self) -> Vec<(&'static str, Sdk)> {
        match self {
            Release::V5_3 => CASES
                .into_iter()
                .flat_map(|case| Sdk::ALL.map(|sdk| (case, sdk)))
                .chain([("recall", Sdk::Java)])
                .collect(),
            Release::V5_4 => Sdk::ALL.map(|sdk| ("priority", sdk)).to_vec(),
        }
    }

    /// The release of the proxy a case runs through.
    fn of(case: &str) -> Release {
        if case == "priority" {
            Release::V5_4
        } else {
            Release::V5_3
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sluice,
    Apache,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Sluice => "sluice",
            Kind::Apache => "apache",
        }
    }
}

/// What is behind the proxy. Fields drop in order: broker, then name server.
#[derive(Debug)]
enum Backend {
    Sluice {
        _broker: BrokerProcess,
        ns: NamesrvProcess,
    },
    Apache {
        _broker: ApacheBroker,
        ns: ApacheNamesrv,
    },
}

impl Backend {
    fn namesrv(&self) -> String {
        match self {
            Backend::Sluice { ns, .. } => ns.addr(),
            Backend::Apache { ns, .. } => ns.addr(),
        }
    }
}

/// A proxy in front of a cluster with every case's topic and group created.
#[derive(Debug)]
struct System {
    // Dropped first: the proxy before what it fronts.
    proxy: ApacheProxy,
    backend: Backend,
    /// Topics or groups mqadmin could not create: (name, what it said).
    admin_failures: BTreeMap<String, String>,
    started_in: Duration,
}

impl System {
    fn start(kind: Kind, release: Release) -> System {
        let started = Instant::now();
        let apache = release.version();
        let backend = match kind {
            Kind::Sluice => {
                let ns = NamesrvProcess::start();
                let broker = BrokerProcess::start_with(&ns.addr(), &BROKER_SETTINGS);
                Backend::Sluice {
                    _broker: broker,
                    ns,
                }
            }
            Kind::Apache => {
                let ns = ApacheNamesrv::start(apache);
                let mut settings = BROKER_SETTINGS.to_vec();
                settings.push(("bindAddress", "127.0.0.1"));
                let broker = ApacheBroker::start_with_jvm_flags(
                    apache,
                    &ns.addr(),
                    "ASYNC_MASTER",
                    0,
                    &settings,
                    &["-XX:MaxDirectMemorySize=1g"],
                );
                Backend::Apache {
                    _broker: broker,
                    ns,
                }
            }
        };
        let admin_failures = create_topics_and_groups(&backend.namesrv(), release);
        // After the topics: the proxy caches routes, a missing one for a while.
        let proxy = ApacheProxy::start(
            release.version(),
            &backend.namesrv(),
            CLUSTER,
            &PROXY_SETTINGS.map(|(k, v)| (k, v.into())),
        );
        // Its first, slow call, for the cluster's own route (routed since the broker started:
        // the proxy would keep a missing route for a while).
        warm_up(&proxy.grpc_endpoint(), CLUSTER, None).unwrap_or_else(|why| panic!("{why}"));
        let system = System {
            proxy,
            backend,
            admin_failures,
            started_in: started.elapsed(),
        };
        eprintln!(
            "grpc_proxy: {} system up in {:.1}s (proxy {apache} at {}, name server {}){}",
            kind.name(),
            system.started_in.as_secs_f64(),
            system.proxy.grpc_endpoint(),
            system.backend.namesrv(),
            if system.admin_failures.is_empty() {
                String::new()
            } else {
                format!("; mqadmin failed for {:?}", system.admin_failures.keys())
            }
        );
        system
    }
}

/// The topic of every case of `release` (`updateTopic -a +message.type=...`) and the FIFO
/// cases' orderly groups (`updateSubGroup -o true`), with Apache's mqadmin 5.3.3 in one JVM;
/// what failed.
fn create_topics_and_groups(namesrv: &str, release: Release) -> BTreeMap<String, String> {
    let mut commands: Vec<Vec<String>> = Vec::new();
    let mut names = Vec::new();
    for (case, sdk) in release.cases() {
        let t = topic(case, sdk);
        let attr = format!("+message.type={}", message_type(case));
        commands.push(
            [
                "updateTopic",
                "-c",
                CLUSTER,
                "-t",
                &t,
                "-r",
                QUEUES,
                "-w",
                QUEUES,
                "-a",
                &attr,
            ]
            .map(str::to_owned)
            .to_vec(),
        );
        names.push(t);
        if case == "fifo" {
            let g = group(case, sdk);
            commands.push(
                ["updateSubGroup", "-c", CLUSTER, "-g", &g, "-o", "true"]
                    .map(str::to_owned)
                    .to_vec(),
            );
            names.push(g);
        }
    }
    let runs = JavaTools::get(V5).mqadmin_batch(namesrv, &commands, Duration::from_secs(30));
    names
        .into_iter()
        .zip(runs)
        .filter(|(_, run)| !run.ok() || !run.stdout.contains("success"))
        .map(|(name, run)| (name, run.to_string()))
        .collect()
}

/// A system: not started yet, running, or why it did not start.
type Slot = Mutex<Option<Result<Arc<System>, String>>>;

/// The four systems (sluice, Apache; each release), each started by its first case and
/// stopped after its last.
static SYSTEMS: [Slot; 4] = [
    Mutex::new(None),
    Mutex::new(None),
    Mutex::new(None),
    Mutex::new(None),
];

/// Cases of each system not finished yet (set by `main`): the last to finish stops it.
static UNFINISHED: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

fn index(kind: Kind, release: Release) -> usize {
    match (kind, release) {
        (Kind::Sluice, Release::V5_3) => 0,
        (Kind::Apache, Release::V5_3) => 1,
        (Kind::Sluice, Release::V5_4) => 2,
        (Kind::Apache, Release::V5_4) => 3,
    }
}

fn slot(kind: Kind, release: Release) -> &'static Slot {
    &SYSTEMS[index(kind, release)]
}

/// One case of the system is done: the last one stops it (with a filter, or cases ignored,
/// some never run: `main` stops the rest at the end).
fn finished(kind: Kind, release: Release) {
    if UNFINISHED[index(kind, release)].fetch_sub(1, Ordering::AcqRel) == 1 {
        let taken = slot(kind, release)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(taken);
    }
}

/// The running system of `kind` and `release`, started on first use (other cases wait
/// meanwhile); a start that failed fails every case of that system the same way.
fn system(kind: Kind, release: Release) -> Result<Arc<System>, String> {
    let mut guard = slot(kind, release)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(s) = guard.as_ref() {
        return s.clone();
    }
    let started = catch_unwind(AssertUnwindSafe(|| System::start(kind, release))).map_err(|p| {
        let why = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        format!(
            "the {} {} system did not start: {why}",
            kind.name(),
            release.version()
        )
    });
    let s = started.map(Arc::new);
    *guard = Some(s.clone());
    s
}

// ------------------------------------------------------------------------------- the cases

/// What a failed case says: the program's output and the proxy's complaints meanwhile.
fn failure(what: &str, out: &ChildOutput, proxy_errors: &str) -> Failed {
    Failed::from(format!(
        "{what}\n{out}\n--- proxy errors and warnings during the case\n{proxy_errors}"
    ))
}

/// `proxy.log` lines from `offset` on that are errors or warnings, with the exception lines
/// after them (at most 80 lines).
fn proxy_errors(system: &System, offset: usize) -> String {
    let log = system.proxy.log();
    let tail = log.get(offset..).unwrap_or("");
    let mut out = Vec::new();
    let mut in_trace = false;
    for line in tail.lines() {
        // Every client that goes away cancels its telemetry stream: not worth a line.
        let noise = line.contains("telemetry on error") || line.contains("client cancelled");
        let flagged = !noise && (line.contains(" ERROR ") || line.contains(" WARN "));
        let trace =
            line.starts_with('\t') || line.starts_with("Caused by") || line.contains("Exception:");
        if flagged || (in_trace && trace) {
            out.push(line);
            in_trace = flagged || trace;
        } else {
            in_trace = false;
        }
        if out.len() >= 80 {
            out.push("...");
            break;
        }
    }
    out.join("\n")
}

fn run_case(kind: Kind, case: &'static str, sdk: Sdk) -> Result<(), Failed> {
    let mut needed = vec![Tool::Java, Tool::Maven];
    needed.extend_from_slice(sdk.tools());
    if !tools::available(&needed) {
        return Ok(());
    }
    let program = sdk.program();
    let system = system(kind, Release::of(case))?;
    let (t, g) = (topic(case, sdk), group(case, sdk));
    if let Some(why) = system
        .admin_failures
        .get(&t)
        .or_else(|| system.admin_failures.get(&group(case, sdk)))
    {
        return Err(format!("mqadmin could not create what {case} needs:\n{why}").into());
    }
    let offset = system.proxy.log().len();
    let started = Instant::now();
    let out = program.run(case, &system.proxy.grpc_endpoint(), &t, &g, CASE_TIMEOUT);
    let took = started.elapsed();
    eprintln!(
        "grpc_proxy: {case} {} on {}: {:.1}s, exit {:?}",
        sdk.name(),
        kind.name(),
        took.as_secs_f64(),
        out.code()
    );
    let run = CaseRun::parse(&out.stdout);
    let checked = match run.failure(&out) {
        Some(why) => Err(why),
        None => check_deliveries(case, &run),
    };
    checked.map_err(|what| failure(&what, &out, &proxy_errors(&system, offset)))
}

// ------------------------------------------------------------------------------- main

fn main() {
    let args = Arguments::from_args();
    let ignored: BTreeMap<&str, &str> = IGNORED_ON_SLUICE.iter().copied().collect();
    let mut trials = Vec::new();
    // Grouped by system (libtest-mimic runs them in this order): one system up at a time
    // most of the run.
    for release in [Release::V5_3, Release::V5_4] {
        for kind in [Kind::Apache, Kind::Sluice] {
            for (case, sdk) in release.cases() {
                let name = format!("{case}_{}", sdk.name());
                let reason = (kind == Kind::Sluice)
                    .then(|| ignored.get(name.as_str()))
                    .flatten();
                UNFINISHED[index(kind, release)].fetch_add(1, Ordering::Relaxed);
                let trial = Trial::test(
                    format!("{}::{name}_{}", kind.name(), kind.name()),
                    move || {
                        let result = run_case(kind, case, sdk);
                        finished(kind, release);
                        result
                    },
                )
                .with_ignored_flag(reason.is_some());
                trials.push(trial);
            }
        }
    }
    let conclusion = libtest_mimic::run(&args, trials);
    // Every case is done: stop every system (their processes, their temp dirs).
    for s in &SYSTEMS {
        let taken = s.lock().unwrap_or_else(PoisonError::into_inner).take();
        drop(taken);
    }
    if !IGNORED_ON_SLUICE.is_empty() && !args.list {
        eprintln!("grpc_proxy: ignored on sluice:");
        for (name, why) in IGNORED_ON_SLUICE {
            eprintln!("  sluice::{name}_sluice: {why}");
        }
    }
    conclusion.exit();
}
