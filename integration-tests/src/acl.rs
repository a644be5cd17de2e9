//! The auth tests' tools: Apache's `mqadmin` signing as a user (its `$ROCKETMQ_HOME/conf/tools.yml`,
//! in a `ROCKETMQ_HOME` of its own per run), `sluice.it.AuthProbe` (sends and pulls signed with
//! the official `AclClientRPCHook`, or unsigned) and the lines it prints, and the broker settings
//! that turn ACL 2.0 on for sluice and Apache 5.3.3 alike.

#![allow(
    clippy::unwrap_used,
    reason = "test harness: a failed step should fail the test"
)]

use std::fs;
use std::time::Duration;

use crate::harness::{ChildOutput, ChildProcess, TestDir};
use crate::java::{JavaTools, MQADMIN_CLASS, MQADMIN_TIMEOUT};
use crate::ports::assert_loopback;
use remoting::{RemotingClient, RemotingCommand, RequestHook};

/// The super user every auth test broker starts with (`initAuthenticationUser`), who also
/// signs the broker's own requests (`innerClientAuthenticationCredentials`).
pub const ROOT: (&str, &str) = ("rocketmq", "12345678");

/// Broker settings for ACL 2.0: authentication and authorization on, Apache 5.3.3's default
/// providers named (without a metadata provider Apache refuses every request), the super user
/// [`ROOT`].
#[must_use]
pub fn acl_2_settings() -> Vec<(&'static str, String)> {
    vec![
        ("authenticationEnabled", "true".into()),
        ("authorizationEnabled", "true".into()),
        (
            "authenticationProvider",
            "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider".into(),
        ),
        (
            "authenticationMetadataProvider",
            "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider"
                .into(),
        ),
        (
            "authorizationProvider",
            "org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider".into(),
        ),
        (
            "authorizationMetadataProvider",
            "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider"
                .into(),
        ),
        (
            "initAuthenticationUser",
            format!(r#"{{"username":"{}","password":"{}"}}"#, ROOT.0, ROOT.1),
        ),
        (
            "innerClientAuthenticationCredentials",
            format!(r#"{{"accessKey":"{}","secretKey":"{}"}}"#, ROOT.0, ROOT.1),
        ),
    ]
}

/// Apache's `mqadmin` (`java`'s version) with `args` and `-n namesrv`, signing as `who`
/// (`None`: no `tools.yml`, unsigned).
///
/// # Panics
/// When the JVM cannot be started or `namesrv` is not on loopback.
#[must_use]
pub fn mqadmin_as(
    java: &JavaTools,
    namesrv: &str,
    who: Option<(&str, &str)>,
    args: &[&str],
) -> ChildOutput {
    assert_loopback(namesrv);
    let home = TestDir::new("mqadmin-auth");
    let rocketmq_home = home.path().join("rocketmq-home");
    let conf = rocketmq_home.join("conf");
    fs::create_dir_all(&conf).unwrap();
    if let Ok(entries) = fs::read_dir(java.rocketmq_home().join("conf")) {
        for e in entries.flatten() {
            if e.path().is_file() {
                fs::copy(e.path(), conf.join(e.file_name())).unwrap();
            }
        }
    }
    if let Some((ak, sk)) = who {
        fs::write(
            conf.join("tools.yml"),
            format!("accessKey: {ak}\nsecretKey: {sk}\n"),
        )
        .unwrap();
    }
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-n", namesrv]);
    let inner = MQADMIN_TIMEOUT.saturating_sub(Duration::from_secs(2));
    let props = [format!("-Dsluice.it.timeoutMs={}", inner.as_millis())];
    let spec = java
        .spec(MQADMIN_CLASS, &all, home.path(), &props)
        .env("ROCKETMQ_HOME", &rocketmq_home);
    ChildProcess::spawn(spec, home)
        .unwrap_or_else(|e| panic!("cannot start mqadmin: {e}"))
        .wait(MQADMIN_TIMEOUT)
}

/// What one `AuthProbe` step got: `Ok(detail)` or `Err((code, remark))`.
pub type Outcome = Result<String, (i32, String)>;

/// The probe's outcomes of `what` (`SEND` or `PULL`), in order.
#[must_use]
pub fn outcomes(out: &ChildOutput, what: &str) -> Vec<Outcome> {
    let ok = format!("{what} OK ");
    let fail = format!("{what} FAIL ");
    out.stdout
        .lines()
        .filter_map(|l| {
            if let Some(rest) = l.strip_prefix(&ok) {
                return Some(Ok(rest.to_owned()));
            }
            let rest = l.strip_prefix(&fail)?;
            let (code, remark) = rest.split_once(' ').unwrap_or((rest, ""));
            Some(Err((code.parse().unwrap_or(-1), remark.to_owned())))
        })
        .collect()
}

/// Runs `sluice.it.AuthProbe` against `namesrv` on `topic`: `sends` sends, then a pull from
/// queue 0 as `group` when `pull`, signed as `who`.
#[must_use]
pub fn probe(
    java: &JavaTools,
    namesrv: &str,
    who: Option<(&str, &str)>,
    topic: &str,
    group: &str,
    sends: usize,
    pull: bool,
) -> ChildOutput {
    let sends = sends.to_string();
    let mut args = vec![
        "--namesrv",
        namesrv,
        "--topic",
        topic,
        "--group",
        group,
        "--send",
        &sends,
    ];
    if let Some((ak, sk)) = who {
        args.extend(["--access-key", ak, "--secret-key", sk]);
    }
    if pull {
        args.push("--pull");
    }
    java.run("sluice.it.AuthProbe", &args, Duration::from_secs(90))
}

/// One request to `addr` signed as `who`, on a runtime of its own.
///
/// # Errors
/// It cannot be sent or is not answered.
pub fn signed_request(
    addr: &str,
    who: (&str, &str),
    request: RemotingCommand,
) -> Result<RemotingCommand, String> {
    assert_loopback(addr);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let hook = std::sync::Arc::new(auth::Credentials::new(who.0, who.1))
        as std::sync::Arc<dyn RequestHook>;
    let client = RemotingClient::default().with_hook(Some(hook));
    let result = runtime
        .block_on(client.invoke(addr, request, Duration::from_secs(5)))
        .map_err(|e| e.to_string());
    client.close_all();
    result
}
