//! RocketMQ 5's gRPC clients through sluice's own proxy (issue 17): `mqproxy` in cluster mode
//! in front of our `mqnamesrv` + `mqbroker`, driven by the official gRPC SDKs — Java
//! (`rocketmq-client-java`), Go (`golang/v5`) and Python (`rocketmq-python-client`) — with the
//! case programs tests/grpc_proxy.rs runs through Apache's proxy (`integration-tests/grpc/`).
//!
//! `native::<case>_<sdk>`: the cases that send and then consume (`normal`, `fifo`, `delay`) run
//! send-only (`--consume no`) and the test reads back what the broker stored, over remoting:
//! each message once under the id the send answered, its tag, keys, property and message group
//! as sent, a message group's messages in one queue in order, a delay message visible from its
//! delivery time on. So does `transaction`: its program still ends the transactions and
//! answers the check-backs, and the test reads back the committed ones (once; the check-back's
//! at least once), none of the rolled-back ones, and the CHECK lines of the two left open. The
//! broker and mqproxy get tests/grpc_proxy.rs's settings (a check-back round every 2 s, the
//! groups registered every 2 s, long polls held at most 5 s).
//!
//! `apache::<case>_<sdk>` runs the same send-only case through Apache's proxy 5.3.3 in front of
//! the same cluster (needs Java and Maven too), checks it the same way, and compares the
//! stored properties with what mqproxy stored for the same case and SDK (values that differ by
//! nature masked: ids, times, addresses): the reference for what the proxy writes.
//!
//! `auth::<right|wrong>_key_<sdk>`: a second system whose broker has ACL 2.0 on (a super user
//! the proxy signs its own requests as, `innerClientAuthenticationCredentials`; a normal user
//! `alice` with Pub and Sub on her topic) and whose mqproxy authenticates and authorizes every
//! call against the broker's users: the `normal` case run as alice sends all its messages; run
//! with a wrong secret key it sends none, and hears the refusal (`check signature failed.`).
//! `local_auth::<right|wrong>_key_<sdk>`: the same through that broker's own gRPC endpoint
//! (local mode), checked against its users because its settings turn authentication on. The
//! test itself is checked through Apache's proxy 5.3.3 with its documented auth settings: over
//! the same sluice broker (`apache_auth::`) and over Apache's broker 5.3.3 with ACL 2.0
//! (`apache_broker_auth::`), both passing the same way. `tls::normal_go`: the Go SDK with TLS
//! on (its default) through a mqproxy that serves TLS only (`tlsServerMode=enforcing`,
//! test-mode certificate), the stored messages checked as in `native::`; `local_tls::normal_go`
//! the same through the local system's endpoint with its default settings (permissive: TLS and
//! plaintext on one port).
//!
//! `local::<case>_<sdk>` runs the same send-only cases against the gRPC endpoint inside
//! `mqbroker` (local mode: `enableGrpcProxy=true`), a second system of its own (name server
//! and broker), and checks them the same way.
//!
//! `received::<case>_<sdk>` (mqproxy) and `local_received::<case>_<sdk>` (local mode): the
//! whole case, consuming too (ReceiveMessage, AckMessage, ChangeInvisibleDuration,
//! QueryAssignment over POP), judged as tests/grpc_proxy.rs judges it through Apache's proxy:
//! `normal`, `fifo` (its group orderly), `delay`, `simple`, `push`, `transaction`,
//! `priority` (a backlog received highest priority first; tests/grpc_proxy.rs runs it through
//! Apache's proxy 5.4.0) and `recall` (Java: a delay message recalled, RecallMessage).
//!
//! Test names are `<kind>::<case>_<sdk>`; each system (name server, broker, mqproxy; the local
//! one; the auth ones; Apache's proxies) is started when a trial first needs it and serves all
//! that need it; trials run three at a time (`--test-threads` to change), none sharing a topic
//! or group with another.
//! Its own `main` (libtest-mimic): the usual filters, `--ignored`, `--list`.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use integration_tests::grpc::stored::{self, Stored};
use integration_tests::grpc::{
    CASES, CaseRun, RunOptions, SEND_CASES, Sdk, check_deliveries, group, message_type, sdks_of,
    topic, warm_up,
};
use integration_tests::harness::tools::{self, Tool};
use integration_tests::harness::{
    ApacheBroker, ApacheProxy, BrokerProcess, ChildOutput, MqProxy, NamesrvProcess,
};
use libtest_mimic::{Arguments, Failed, Trial};

/// Queues of each test topic.
const QUEUES: i32 = 4;
/// How long one case program may run.
const CASE_TIMEOUT: Duration = Duration::from_secs(150);
/// How long the stored messages may take to appear (delay messages: up to 6 s after the send,
/// at most 10 s late).
const READ_BACK: Duration = Duration::from_secs(20);
/// How long an `apache::` trial waits for its `native::` twin's messages (the twin may run
/// beside it; when the filter left it out, the comparison is skipped after this).
const NATIVE_WAIT: Duration = Duration::from_secs(60);
/// Trials run at once unless `--test-threads` says otherwise: most of a trial is waiting
/// (a JVM starting, invisible durations, timers), and trials of different systems, cases and
/// SDKs share no topic or group.
const TRIAL_THREADS: usize = 3;
/// The Apache proxy the reference trials run through.
const APACHE_PROXY: &str = "5.3.3";
/// The cluster of the broker (Apache's proxy's `rocketMQClusterName`).
const CLUSTER: &str = "DefaultCluster";
/// Broker settings, as tests/grpc_proxy.rs gives its brokers: timers on (delay case), a
/// check-back round every 2 s (half messages are checked once older than
/// `transactionTimeOut`, 6 s).
const BROKER_SETTINGS: [(&str, &str); 3] = [
    ("timerWheelEnable", "true"),
    ("transactionCheckInterval", "2000"),
    ("recallMessageEnable", "true"),
];
/// mqproxy settings, as tests/grpc_proxy.rs gives Apache's proxy: the transactional producer
/// groups registered with the brokers every 2 s (20 s by default: a broker checks back only on
/// a group it has a heartbeat of), a consumer's long poll held at most 5 s.
const PROXY_SETTINGS: [(&str, &str); 2] = [
    ("transactionHeartbeatPeriodSecond", "2"),
    ("grpcClientConsumerMaxLongPollingTimeoutMillis", "5000"),
];
/// The cases `native::` runs send-only and reads back: the send cases, and the transaction
/// case (its program ends the transactions and answers the check-backs without consuming).
const NATIVE_CASES: [&str; 4] = ["normal", "fifo", "delay", "transaction"];

/// The cases `received::` and `local_received::` run whole: every case of the programs,
/// priority too (RocketMQ 5.4's priority messages: no 5.3.3 proxy serves them, so
/// tests/grpc_proxy.rs checks the case itself through Apache's proxy 5.4.0).
fn received_cases() -> impl Iterator<Item = &'static str> {
    CASES.into_iter().chain(["priority", "recall"])
}

/// How many messages a send case sends.
fn sent_count(case: &str) -> usize {
    match case {
        "normal" => 8,
        "fifo" => 12,
        // The committed ones.
        "transaction" => 4,
        _ => 3,
    }
}

/// The topic of a full case: a send-only case's own, apart from its send-only run's (a new POP
/// group starts at a queue's first message when that is still in memory, as RocketMQ's
/// `initPopOffsetByCheckMsgInMem`: it would receive the send-only run's messages too).
fn received_topic(case: &str, sdk: Sdk) -> String {
    if NATIVE_CASES.contains(&case) {
        format!("{}_received", topic(case, sdk))
    } else {
        topic(case, sdk)
    }
}

/// The topic the reference run through Apache's proxy uses.
fn apache_topic(case: &str, sdk: Sdk) -> String {
    format!("{}_apache", topic(case, sdk))
}

// ------------------------------------------------------------------------------- the systems

/// Which sluice endpoint a trial talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `mqproxy` in front of the broker.
    Cluster,
    /// The endpoint inside `mqbroker`.
    Local,
}

impl Mode {
    /// The prefix of the send-only trials' names.
    fn send_prefix(self) -> &'static str {
        match self {
            Mode::Cluster => "native",
            Mode::Local => "local",
        }
    }

    /// The prefix of the full trials' names.
    fn received_prefix(self) -> &'static str {
        match self {
            Mode::Cluster => "received",
            Mode::Local => "local_received",
        }
    }
}

/// What a trial needs of a system: where the SDKs connect, the broker that stores, and the
/// log of whatever serves gRPC.
trait Sluice: Send + Sync {
    fn grpc_endpoint(&self) -> String;
    fn broker_addr(&self) -> String;
    fn grpc_log(&self) -> String;
}

impl Sluice for System {
    fn grpc_endpoint(&self) -> String {
        self.proxy.grpc_endpoint()
    }
    fn broker_addr(&self) -> String {
        self.broker.addr()
    }
    fn grpc_log(&self) -> String {
        self.proxy.log()
    }
}

impl Sluice for LocalSystem {
    fn grpc_endpoint(&self) -> String {
        self.broker.grpc_endpoint()
    }
    fn broker_addr(&self) -> String {
        self.broker.addr()
    }
    fn grpc_log(&self) -> String {
        self.broker.log()
    }
}

/// The test topics on `broker`, and the FIFO cases' orderly groups.
fn create_topics(broker: &BrokerProcess, with_apache: bool) {
    for case in received_cases() {
        for &sdk in sdks_of(case) {
            let attr = format!("+message.type={}", message_type(case));
            broker.create_topic_with_attributes(&topic(case, sdk), QUEUES, &attr);
            if with_apache && SEND_CASES.contains(&case) {
                broker.create_topic_with_attributes(&apache_topic(case, sdk), QUEUES, &attr);
            }
            if NATIVE_CASES.contains(&case) {
                broker.create_topic_with_attributes(&received_topic(case, sdk), QUEUES, &attr);
            }
            if case == "fifo" {
                broker.create_group(&group(case, sdk), true);
            }
        }
    }
}

/// Name server and a broker serving gRPC itself (local mode); fields drop in order.
#[derive(Debug)]
struct LocalSystem {
    broker: BrokerProcess,
    _ns: NamesrvProcess,
}

impl LocalSystem {
    fn start() -> LocalSystem {
        let started = Instant::now();
        let ns = NamesrvProcess::start();
        let broker = BrokerProcess::start_with_grpc(&ns.addr(), &BROKER_SETTINGS, &PROXY_SETTINGS);
        create_topics(&broker, false);
        broker.create_topic_with_attributes(LOCAL_TLS_TOPIC, QUEUES, "+message.type=NORMAL");
        warm(&broker.grpc_endpoint(), CLUSTER, None);
        eprintln!(
            "grpc_native: local system up in {:.1}s (gRPC in mqbroker at {}, broker {}, name server {})",
            started.elapsed().as_secs_f64(),
            broker.grpc_endpoint(),
            broker.addr(),
            ns.addr()
        );
        LocalSystem { broker, _ns: ns }
    }
}

/// Name server, broker and mqproxy; fields drop in order (proxy first).
#[derive(Debug)]
struct System {
    proxy: MqProxy,
    broker: BrokerProcess,
    ns: NamesrvProcess,
}

impl System {
    fn start() -> System {
        let started = Instant::now();
        let ns = NamesrvProcess::start();
        let broker = BrokerProcess::start_with(&ns.addr(), &BROKER_SETTINGS);
        create_topics(&broker, true);
        // After the topics: routes are cached a few seconds.
        let proxy = MqProxy::start(&ns.addr(), &PROXY_SETTINGS);
        warm(&proxy.grpc_endpoint(), CLUSTER, None);
        eprintln!(
            "grpc_native: system up in {:.1}s (mqproxy at {}, broker {}, name server {})",
            started.elapsed().as_secs_f64(),
            proxy.grpc_endpoint(),
            broker.addr(),
            ns.addr()
        );
        System { proxy, broker, ns }
    }
}

type Slot<T> = Mutex<Option<Result<Arc<T>, String>>>;

static SYSTEM: Slot<System> = Mutex::new(None);
static LOCAL: Slot<LocalSystem> = Mutex::new(None);
static APACHE: Slot<ApacheProxy> = Mutex::new(None);
static AUTH: Slot<AuthSystem> = Mutex::new(None);
static AUTH_APACHE_PROXY: Slot<ApacheProxy> = Mutex::new(None);
static AUTH_APACHE: Slot<ApacheAuthSystem> = Mutex::new(None);
static TLS_PROXY: Slot<MqProxy> = Mutex::new(None);

/// The value of `slot`, started by `start` on first use; a start that failed fails every
/// later use the same way.
fn started<T>(slot: &Slot<T>, what: &str, start: impl FnOnce() -> T) -> Result<Arc<T>, String> {
    let mut guard = slot.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(s) = guard.as_ref() {
        return s.clone();
    }
    let result = catch_unwind(AssertUnwindSafe(start))
        .map(Arc::new)
        .map_err(|p| {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            format!("{what} did not start: {why}")
        });
    *guard = Some(result.clone());
    result
}

/// Makes `endpoint`'s first, slow call ([`warm_up`]) for the route of `topic`, signed with
/// `credentials` when given; a system that never answers does not start. The topic must be
/// routed already (the cluster's own topic, or one the start waited for): proxies keep a
/// missing route for a while.
fn warm(endpoint: &str, topic: &str, credentials: Option<(&str, &str)>) {
    match warm_up(endpoint, topic, credentials) {
        Ok(took) => eprintln!(
            "grpc_native: {endpoint} answered its first call in {:.1}s",
            took.as_secs_f64()
        ),
        Err(why) => panic!("{why}"),
    }
}

fn system() -> Result<Arc<System>, String> {
    started(&SYSTEM, "the sluice system", System::start)
}

fn local_system() -> Result<Arc<LocalSystem>, String> {
    started(&LOCAL, "the local-mode system", LocalSystem::start)
}

/// The system of `mode`, started on first use.
fn sluice(mode: Mode) -> Result<Arc<dyn Sluice>, String> {
    let system: Arc<dyn Sluice> = match mode {
        Mode::Cluster => system()?,
        Mode::Local => local_system()?,
    };
    Ok(system)
}

fn apache_proxy(namesrv: &str) -> Result<Arc<ApacheProxy>, String> {
    started(&APACHE, "Apache's proxy", || {
        let proxy = ApacheProxy::start(APACHE_PROXY, namesrv, CLUSTER, &[]);
        warm(&proxy.grpc_endpoint(), CLUSTER, None);
        proxy
    })
}

// ------------------------------------------------------------------------------- the trials

/// The tail of what `log` holds past `offset` (at most 60 lines).
fn log_since(log: &str, offset: usize) -> String {
    let tail = log.get(offset..).unwrap_or("");
    let lines: Vec<&str> = tail.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

fn failure(what: &str, out: &ChildOutput, proxy_log: &str) -> Failed {
    Failed::from(format!(
        "{what}\n{out}\n--- proxy log during the case\n{proxy_log}"
    ))
}

/// Runs `case` of `sdk`'s program against `endpoint` on `topic`; the parsed run, or why the
/// program failed (with `log()` from `log_offset` on).
fn run_program(
    case: &str,
    sdk: Sdk,
    endpoint: &str,
    topic: &str,
    options: RunOptions,
    log: &dyn Fn() -> String,
) -> Result<(CaseRun, ChildOutput), Failed> {
    let offset = log().len();
    let started = Instant::now();
    let out = sdk.program().run_with(
        case,
        endpoint,
        topic,
        &group(case, sdk),
        CASE_TIMEOUT,
        options,
    );
    eprintln!(
        "grpc_native: {case} {} via {endpoint}: {:.1}s, exit {:?}",
        sdk.name(),
        started.elapsed().as_secs_f64(),
        out.code()
    );
    let run = CaseRun::parse(&out.stdout);
    if let Some(why) = run.failure(&out) {
        return Err(failure(&why, &out, &log_since(&log(), offset)));
    }
    Ok((run, out))
}

/// `native::<case>_<sdk>` (`local::` in local mode): send-only through sluice's endpoint,
/// read back.
fn native(case: &'static str, sdk: Sdk, mode: Mode) -> Result<(), Failed> {
    if !tools::available(sdk.tools()) {
        return Ok(());
    }
    let system = sluice(mode)?;
    let t = topic(case, sdk);
    let options = RunOptions {
        consume: false,
        tls: false,
    };
    let log = || system.grpc_log();
    let (run, out) = run_program(case, sdk, &system.grpc_endpoint(), &t, options, &log)?;
    let got = stored::wait_for(
        &system.broker_addr(),
        &t,
        QUEUES,
        sent_count(case),
        READ_BACK,
    );
    stored::check_stored(case, &run, &got)
        .map_err(|why| failure(&format!("{why}\nstored: {got:#?}"), &out, ""))
}

/// `apache::<case>_<sdk>`: the same through Apache's proxy; the stored properties compared with
/// mqproxy's.
fn apache(case: &'static str, sdk: Sdk) -> Result<(), Failed> {
    let mut needed = vec![Tool::Java, Tool::Maven];
    needed.extend_from_slice(sdk.tools());
    if !tools::available(&needed) {
        return Ok(());
    }
    let system = system()?;
    let proxy = apache_proxy(&system.ns.addr())?;
    let t = apache_topic(case, sdk);
    let log = || proxy.log();
    let (run, out) = run_program(
        case,
        sdk,
        &proxy.grpc_endpoint(),
        &t,
        RunOptions {
            consume: false,
            // Apache's proxy negotiates TLS or plaintext: the SDK's default.
            tls: true,
        },
        &log,
    )?;
    let got = stored::wait_for(
        &system.broker.addr(),
        &t,
        QUEUES,
        sent_count(case),
        READ_BACK,
    );
    stored::check_stored(case, &run, &got)
        .map_err(|why| failure(&format!("{why}\nstored: {got:#?}"), &out, ""))?;
    // What mqproxy stored for the same case and SDK: its trial starts earlier, and may still
    // be running beside this one.
    let ours = stored::wait_for(
        &system.broker.addr(),
        &topic(case, sdk),
        QUEUES,
        sent_count(case),
        NATIVE_WAIT,
    );
    if ours.is_empty() {
        eprintln!(
            "grpc_native: apache::{case}_{}: no mqproxy run to compare with",
            sdk.name()
        );
        return Ok(());
    }
    compare(case, &ours, &got).map_err(Failed::from)
}

/// mqproxy's stored messages against Apache's proxy's: the same properties (varying values
/// masked) per message, and a message group in the same queue.
fn compare(case: &str, ours: &[Stored], theirs: &[Stored]) -> Result<(), String> {
    let (a, b) = (
        stored::comparable_properties(ours),
        stored::comparable_properties(theirs),
    );
    let mut diffs = Vec::new();
    for (body, props) in &b {
        match a.get(body) {
            Some(mine) if mine == props => {}
            Some(mine) => diffs.push(format!(
                "{body}: mqproxy {mine:?}\n  Apache's proxy {props:?}"
            )),
            None => diffs.push(format!("{body}: not stored through mqproxy")),
        }
    }
    if case == "fifo" {
        let queue_of = |stored: &[Stored], g: usize| {
            stored
                .iter()
                .find(|s| s.body == format!("fifo-{g}-0"))
                .map(|s| s.queue_id)
        };
        for g in 0..3 {
            if queue_of(ours, g) != queue_of(theirs, g) {
                diffs.push(format!(
                    "group-{g}: queue {:?} through mqproxy, {:?} through Apache's proxy",
                    queue_of(ours, g),
                    queue_of(theirs, g)
                ));
            }
        }
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "mqproxy stored other properties than Apache's proxy:\n{}",
            diffs.join("\n")
        ))
    }
}

/// `received::<case>_<sdk>`: the whole case, consuming too.
fn received(case: &'static str, sdk: Sdk, mode: Mode) -> Result<(), Failed> {
    if !tools::available(sdk.tools()) {
        return Ok(());
    }
    let system = sluice(mode)?;
    let options = RunOptions {
        consume: true,
        tls: false,
    };
    let log = || system.grpc_log();
    let (run, out) = run_program(
        case,
        sdk,
        &system.grpc_endpoint(),
        &received_topic(case, sdk),
        options,
        &log,
    )?;
    check_deliveries(case, &run).map_err(|why| failure(&why, &out, ""))
}

// ------------------------------------------------------------------------ auth and TLS

/// The user the ACL broker is set up with and the proxy signs its own requests as.
const ROOT: (&str, &str) = integration_tests::acl::ROOT;
/// The normal user the SDKs sign as.
const ALICE: (&str, &str) = ("alice", "alice-secret");

/// The topic of the auth trials of `sdk`.
fn auth_topic(sdk: Sdk) -> String {
    format!("auth_normal_{}", sdk.name())
}

/// Name server, ACL-enabled broker serving gRPC itself too (local mode: its endpoint checks
/// calls because the broker's settings turn authentication on), mqproxy with authentication
/// and authorization on; fields drop in order (proxy first).
#[derive(Debug)]
struct AuthSystem {
    proxy: MqProxy,
    broker: BrokerProcess,
    ns: NamesrvProcess,
}

/// Apache's proxy with authentication and authorization on, over Apache's ACL-enabled broker
/// 5.3.3 (on a sluice name server); fields drop in order.
#[derive(Debug)]
struct ApacheAuthSystem {
    proxy: ApacheProxy,
    _broker: ApacheBroker,
    _ns: NamesrvProcess,
}

/// The ACL 2.0 broker settings every auth system's broker gets.
fn acl_broker_settings() -> Vec<(&'static str, String)> {
    integration_tests::acl::acl_2_settings()
}

/// What the auth trials need on an ACL-enabled broker at `broker_addr` registered with the
/// name server at `namesrv`: each SDK's topic, alice, her ACL (Pub and Sub on those topics),
/// the topics routed.
fn prepare_acl(namesrv: &str, broker_addr: &str) {
    let admin = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["-c", CLUSTER, "--accessKey", ROOT.0, "--secretKey", ROOT.1]);
        integration_tests::harness::mqadmin(namesrv, &all).assert_ok();
    };
    let topics: Vec<String> = Sdk::ALL.iter().map(|s| auth_topic(*s)).collect();
    for t in &topics {
        let header = remoting::protocol::broker::CreateTopicRequestHeader {
            topic: t.clone(),
            default_topic: "TBW102".to_owned(),
            read_queue_nums: QUEUES,
            write_queue_nums: QUEUES,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".to_owned(),
            topic_sys_flag: Some(0),
            order: false,
            attributes: Some("+message.type=NORMAL".to_owned()),
            force: None,
        };
        let request = remoting::RemotingCommand::request_with(
            remoting::RequestCode::UpdateAndCreateTopic,
            &header,
        );
        let response = integration_tests::acl::signed_request(broker_addr, ROOT, request).unwrap();
        assert_eq!(response.code(), 0, "create {t}: {:?}", response.remark());
    }
    admin(&["createUser", "-u", ALICE.0, "-p", ALICE.1]);
    let resources: Vec<String> = topics.iter().map(|t| format!("Topic:{t}")).collect();
    admin(&[
        "createAcl",
        "-s",
        "User:alice",
        "-r",
        &resources.join(","),
        "-a",
        "Pub,Sub",
        "-d",
        "Allow",
    ]);
    // The topics' routes: the broker registers them with its next heartbeat.
    let routed = || {
        topics.iter().all(|t| {
            let header = remoting::protocol::namesrv::GetRouteInfoRequestHeader {
                topic: t.clone(),
                accept_standard_json_only: Some(true),
            };
            integration_tests::client::try_request(
                namesrv,
                remoting::RemotingCommand::request_with(
                    remoting::RequestCode::GetRouteinfoByTopic,
                    &header,
                ),
            )
            .is_ok_and(|r| r.code() == 0)
        })
    };
    assert!(
        integration_tests::harness::wait_until(Duration::from_secs(40), routed),
        "the auth topics were never routed"
    );
}

/// The inner credentials of every proxy in front of an ACL broker: the broker's super user.
fn inner_credentials() -> String {
    format!(r#"{{"accessKey":"{}","secretKey":"{}"}}"#, ROOT.0, ROOT.1)
}

/// Apache's proxy 5.3.3 in front of the ACL cluster of `namesrv`, checking calls against the
/// brokers' users as its documentation sets it up.
fn apache_auth_proxy(namesrv: &str) -> ApacheProxy {
    let text = |v: &str| serde_json::Value::String(v.to_owned());
    ApacheProxy::start(
        APACHE_PROXY,
        namesrv,
        CLUSTER,
        &[
            ("authenticationEnabled", serde_json::Value::Bool(true)),
            (
                "authenticationProvider",
                text(
                    "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider",
                ),
            ),
            (
                "authenticationMetadataProvider",
                text("org.apache.rocketmq.proxy.auth.ProxyAuthenticationMetadataProvider"),
            ),
            ("authorizationEnabled", serde_json::Value::Bool(true)),
            (
                "authorizationProvider",
                text(
                    "org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider",
                ),
            ),
            (
                "authorizationMetadataProvider",
                text("org.apache.rocketmq.proxy.auth.ProxyAuthorizationMetadataProvider"),
            ),
            (
                "innerClientAuthenticationCredentials",
                text(&inner_credentials()),
            ),
            (
                "enableAclRpcHookForClusterMode",
                serde_json::Value::Bool(true),
            ),
        ],
    )
}

/// [`apache_auth_proxy`], after its first call as alice.
fn warmed_auth_proxy(namesrv: &str) -> ApacheProxy {
    let proxy = apache_auth_proxy(namesrv);
    warm(&proxy.grpc_endpoint(), &auth_topic(Sdk::Go), Some(ALICE));
    proxy
}

impl AuthSystem {
    fn start() -> AuthSystem {
        let ns = NamesrvProcess::start();
        let settings = acl_broker_settings();
        let pairs: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let broker = BrokerProcess::start_with_grpc(&ns.addr(), &pairs, &[]);
        prepare_acl(&ns.addr(), &broker.addr());
        let inner = inner_credentials();
        let proxy = MqProxy::start(
            &ns.addr(),
            &[
                ("authenticationEnabled", "true"),
                ("authorizationEnabled", "true"),
                ("innerClientAuthenticationCredentials", &inner),
            ],
        );
        for endpoint in [proxy.grpc_endpoint(), broker.grpc_endpoint()] {
            warm(&endpoint, &auth_topic(Sdk::Go), Some(ALICE));
        }
        AuthSystem { proxy, broker, ns }
    }
}

impl ApacheAuthSystem {
    fn start() -> ApacheAuthSystem {
        let ns = NamesrvProcess::start();
        let settings = acl_broker_settings();
        let pairs: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let broker = ApacheBroker::start("5.3.3", &ns.addr(), "ASYNC_MASTER", 0, &pairs);
        prepare_acl(&ns.addr(), &broker.addr());
        ApacheAuthSystem {
            proxy: warmed_auth_proxy(&ns.addr()),
            _broker: broker,
            _ns: ns,
        }
    }
}

fn auth_system() -> Result<Arc<AuthSystem>, String> {
    started(&AUTH, "the ACL system", AuthSystem::start)
}

/// Reads the current log of an endpoint.
type LogReader = Box<dyn Fn() -> String>;

/// Which endpoint an auth trial calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AuthVia {
    /// mqproxy over the sluice ACL broker: `auth::`.
    Mqproxy,
    /// That broker's own endpoint: `local_auth::`.
    Local,
    /// Apache's proxy over that broker: `apache_auth::`.
    ApacheProxy,
    /// Apache's proxy over Apache's ACL broker (the test itself checked): `apache_broker_auth::`.
    Apache,
}

impl AuthVia {
    const ALL: [AuthVia; 4] = [
        AuthVia::Mqproxy,
        AuthVia::Local,
        AuthVia::ApacheProxy,
        AuthVia::Apache,
    ];

    fn prefix(self) -> &'static str {
        match self {
            AuthVia::Mqproxy => "auth",
            AuthVia::Local => "local_auth",
            AuthVia::ApacheProxy => "apache_auth",
            AuthVia::Apache => "apache_broker_auth",
        }
    }

    /// The endpoint and a reader of its log.
    fn endpoint(self) -> Result<(String, LogReader), String> {
        Ok(match self {
            AuthVia::Mqproxy => {
                let system = auth_system()?;
                (
                    system.proxy.grpc_endpoint(),
                    Box::new(move || system.proxy.log()),
                )
            }
            AuthVia::Local => {
                let system = auth_system()?;
                (
                    system.broker.grpc_endpoint(),
                    Box::new(move || system.broker.log()),
                )
            }
            AuthVia::ApacheProxy => {
                let system = auth_system()?;
                let proxy = started(&AUTH_APACHE_PROXY, "Apache's proxy with ACLs", || {
                    warmed_auth_proxy(&system.ns.addr())
                })?;
                (proxy.grpc_endpoint(), Box::new(move || proxy.log()))
            }
            AuthVia::Apache => {
                let system = started(
                    &AUTH_APACHE,
                    "Apache's ACL broker and proxy",
                    ApacheAuthSystem::start,
                )?;
                (
                    system.proxy.grpc_endpoint(),
                    Box::new(move || system.proxy.log()),
                )
            }
        })
    }
}

/// `<prefix>::<right|wrong>_key_<sdk>` ([`AuthVia`]): the send-only `normal` case signed as
/// alice, with her secret key (every message sent) or a wrong one (none sent, the refusal
/// `check signature failed.` heard by the program).
fn signed_send(sdk: Sdk, right_key: bool, via: AuthVia) -> Result<(), Failed> {
    if !tools::available(sdk.tools()) {
        return Ok(());
    }
    let (endpoint, log_now) = via.endpoint()?;
    let offset = log_now().len();
    let secret = if right_key {
        ALICE.1
    } else {
        "not-alice-secret"
    };
    let out = sdk.program().run_as(
        "normal",
        &endpoint,
        &auth_topic(sdk),
        &group("normal", sdk),
        CASE_TIMEOUT,
        RunOptions {
            consume: false,
            tls: false,
        },
        Some((ALICE.0, secret)),
    );
    let run = CaseRun::parse(&out.stdout);
    let log = log_since(&log_now(), offset);
    if right_key {
        if let Some(why) = run.failure(&out) {
            return Err(failure(&why, &out, &log));
        }
        if run.sent.len() != sent_count("normal") {
            return Err(failure(
                &format!(
                    "{} sends answered, {} expected",
                    run.sent.len(),
                    sent_count("normal")
                ),
                &out,
                &log,
            ));
        }
        return Ok(());
    }
    if out.success() || !run.sent.is_empty() {
        return Err(failure(
            &format!("a wrong key sent {} messages", run.sent.len()),
            &out,
            &log,
        ));
    }
    // What the program heard (the endpoint's log may hold another trial's refusal).
    if !out.to_string().contains("check signature failed") {
        return Err(failure(
            "the program did not hear the refused signature",
            &out,
            &log,
        ));
    }
    Ok(())
}

/// The topic of `local_tls::normal_go`, created with the local system.
const LOCAL_TLS_TOPIC: &str = "local_tls_normal_go";

/// `tls::normal_go`: the Go SDK over TLS (its default) to a mqproxy that serves TLS only.
fn tls_normal_go() -> Result<(), Failed> {
    if !tools::available(Sdk::Go.tools()) {
        return Ok(());
    }
    let system = system()?;
    let t = "tls_normal_go";
    let proxy = started(&TLS_PROXY, "mqproxy with TLS", || {
        system
            .broker
            .create_topic_with_attributes(t, QUEUES, "+message.type=NORMAL");
        MqProxy::start(
            &system.ns.addr(),
            &[
                ("tlsServerMode", "enforcing"),
                ("tlsTestModeEnable", "true"),
            ],
        )
    })?;
    tls_send(&proxy.grpc_endpoint(), &system.broker.addr(), t, &|| {
        proxy.log()
    })
}

/// `local_tls::normal_go`: the Go SDK over TLS to the broker's own endpoint with the default
/// settings (permissive, as Apache's: TLS and plaintext on one port).
fn local_tls_normal_go() -> Result<(), Failed> {
    if !tools::available(Sdk::Go.tools()) {
        return Ok(());
    }
    let system = local_system()?;
    let broker = &system.broker;
    tls_send(
        &broker.grpc_endpoint(),
        &broker.addr(),
        LOCAL_TLS_TOPIC,
        &|| broker.log(),
    )
}

/// The Go SDK's `normal` case over TLS through `endpoint` to `topic`, the messages read back
/// from the broker at `broker_addr` and checked.
fn tls_send(
    endpoint: &str,
    broker_addr: &str,
    topic: &str,
    log: &dyn Fn() -> String,
) -> Result<(), Failed> {
    let options = RunOptions {
        consume: false,
        tls: true,
    };
    let (run, out) = run_program("normal", Sdk::Go, endpoint, topic, options, log)?;
    let got = stored::wait_for(broker_addr, topic, QUEUES, sent_count("normal"), READ_BACK);
    stored::check_stored("normal", &run, &got)
        .map_err(|why| failure(&format!("{why}\nstored: {got:#?}"), &out, ""))
}

// ------------------------------------------------------------------------------- main

fn main() {
    let mut args = Arguments::from_args();
    args.test_threads = Some(args.test_threads.unwrap_or(TRIAL_THREADS));
    let mut trials = Vec::new();
    for mode in [Mode::Cluster, Mode::Local] {
        for case in NATIVE_CASES {
            for sdk in Sdk::ALL {
                trials.push(Trial::test(
                    format!("{}::{case}_{}", mode.send_prefix(), sdk.name()),
                    move || native(case, sdk, mode),
                ));
            }
        }
    }
    for case in SEND_CASES {
        for sdk in Sdk::ALL {
            trials.push(Trial::test(
                format!("apache::{case}_{}", sdk.name()),
                move || apache(case, sdk),
            ));
        }
    }
    for via in AuthVia::ALL {
        for sdk in Sdk::ALL {
            for (kind, right) in [("right", true), ("wrong", false)] {
                trials.push(Trial::test(
                    format!("{}::{kind}_key_{}", via.prefix(), sdk.name()),
                    move || signed_send(sdk, right, via),
                ));
            }
        }
    }
    trials.push(Trial::test("tls::normal_go", tls_normal_go));
    trials.push(Trial::test("local_tls::normal_go", local_tls_normal_go));
    for mode in [Mode::Cluster, Mode::Local] {
        for case in received_cases() {
            for &sdk in sdks_of(case) {
                trials.push(Trial::test(
                    format!("{}::{case}_{}", mode.received_prefix(), sdk.name()),
                    move || received(case, sdk, mode),
                ));
            }
        }
    }
    let conclusion = libtest_mimic::run(&args, trials);
    drop(
        TLS_PROXY
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(),
    );
    drop(
        AUTH_APACHE
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(),
    );
    drop(
        AUTH_APACHE_PROXY
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(),
    );
    drop(AUTH.lock().unwrap_or_else(PoisonError::into_inner).take());
    drop(APACHE.lock().unwrap_or_else(PoisonError::into_inner).take());
    drop(SYSTEM.lock().unwrap_or_else(PoisonError::into_inner).take());
    drop(LOCAL.lock().unwrap_or_else(PoisonError::into_inner).take());
    conclusion.exit();
}
