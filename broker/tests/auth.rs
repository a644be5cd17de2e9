//! Authentication and authorization on a broker in process: every request checked before its
//! processor, RocketMQ's refusal codes and remarks, the AUTH_* admin requests, the metadata
//! kept across a restart, and the 4.9 plain ACL.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;
use std::time::Duration;

use auth::{AuthConfig, Credentials};
use broker::broker::Broker;
use broker::config::BrokerConfig;
use bytes::Bytes;
use remoting::protocol::broker::SendMessageRequestHeaderV2;
use remoting::{RemotingClient, RemotingCommand, RequestCode, RequestHook, ResponseCode};
use store::StoreConfig;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const T: Duration = Duration::from_secs(5);
const ROOT: (&str, &str) = ("root", "root-secret");

struct Running {
    addr: String,
    role: Arc<broker::role::Role>,
    stop: oneshot::Sender<()>,
    done: tokio::task::JoinHandle<()>,
}

async fn start(dir: &std::path::Path, auth: AuthConfig) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = BrokerConfig {
        broker_name: "broker-a".into(),
        bind_address: "127.0.0.1".into(),
        ha_listen_port: Some(0),
        broker_ip1: Some("127.0.0.1".into()),
        namesrv_addr: None,
        ..BrokerConfig::default()
    };
    let mut store = StoreConfig::with_root(dir.join("store"));
    store.mapped_file_size_commit_log = 1024 * 1024;
    let broker = Arc::new(
        tokio::task::spawn_blocking(move || {
            Broker::open_with_auth(config, store, ha::HaConfig::default(), &auth, port)
        })
        .await
        .unwrap()
        .unwrap(),
    );
    let (stop, stopped) = oneshot::channel::<()>();
    let started = broker::server::start(broker, listener, None).unwrap();
    let role = Arc::clone(started.role());
    let done = tokio::spawn(started.serve(async {
        let _ = stopped.await;
    }));
    Running {
        addr: format!("127.0.0.1:{port}"),
        role,
        stop,
        done,
    }
}

impl Running {
    async fn stop(self) {
        let _ = self.stop.send(());
        self.done.await.unwrap();
    }

    /// One request, signed by `who` (`None`: unsigned).
    async fn call(&self, who: Option<(&str, &str)>, request: RemotingCommand) -> RemotingCommand {
        let hook = who.map(|(ak, sk)| Arc::new(Credentials::new(ak, sk)) as Arc<dyn RequestHook>);
        let client = RemotingClient::default().with_hook(hook);
        let response = client.invoke(&self.addr, request, T).await.unwrap();
        client.close_all();
        response
    }
}

fn acl_2(authn: bool, authz: bool) -> AuthConfig {
    AuthConfig {
        authentication_enabled: authn,
        authorization_enabled: authz,
        init_authentication_user: Some(format!(
            r#"{{"username":"{}","password":"{}"}}"#,
            ROOT.0, ROOT.1
        )),
        ..AuthConfig::default()
    }
}

fn send(topic: &str) -> RemotingCommand {
    let header = SendMessageRequestHeaderV2 {
        producer_group: "pg".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: broker::clock::now_ms(),
        flag: 0,
        properties: Some(String::new()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: None,
    };
    RemotingCommand::request_with(RequestCode::SendMessageV2, &header)
        .with_body(Bytes::from_static(b"hello"))
}

fn with(code: RequestCode, pairs: &[(&str, &str)], body: &str) -> RemotingCommand {
    let mut r = RemotingCommand::request(code).with_body(body.as_bytes().to_vec());
    for (k, v) in pairs {
        r.header.ext_fields.insert(*k, *v);
    }
    r
}

fn create_user(name: &str, password: &str) -> RemotingCommand {
    with(
        RequestCode::AuthCreateUser,
        &[("username", name)],
        &format!(r#"{{"password":"{password}","username":"{name}"}}"#),
    )
}

fn create_acl(
    subject: &str,
    resource: &str,
    actions: &str,
    ips: &str,
    decision: &str,
) -> RemotingCommand {
    let ips = if ips.is_empty() {
        String::new()
    } else {
        format!(r#","sourceIps":["{ips}"]"#)
    };
    with(
        RequestCode::AuthCreateAcl,
        &[("subject", subject)],
        &format!(
            r#"{{"policies":[{{"entries":[{{"actions":[{actions}],"decision":"{decision}","resource":"{resource}"{ips}}}]}}],"subject":"{subject}"}}"#
        ),
    )
}

fn answer(r: &RemotingCommand) -> (i32, String) {
    (r.code(), r.remark().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn authentication_refuses_what_apache_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), acl_2(true, false)).await;
    assert_eq!(
        b.call(Some(ROOT), create_user("alice", "alice-secret"))
            .await
            .code(),
        0
    );
    let no_permission = ResponseCode::NoPermission.code();
    assert_eq!(
        answer(&b.call(None, send("T1")).await),
        (no_permission, "username cannot be null.".into())
    );
    assert_eq!(
        answer(&b.call(Some(("alice", "wrong")), send("T1")).await),
        (no_permission, "check signature failed.".into())
    );
    assert_eq!(
        answer(&b.call(Some(("bob", "x")), send("T1")).await),
        (no_permission, "User:bob is not found.".into())
    );
    // Unknown codes are checked too (Apache's pipeline runs before any processor).
    assert_eq!(
        answer(&b.call(None, RemotingCommand::request(39_999)).await).0,
        no_permission
    );
    assert_eq!(
        b.call(Some(("alice", "alice-secret")), send("T1"))
            .await
            .code(),
        0
    );
    // A disabled user is refused.
    let disable = with(
        RequestCode::AuthUpdateUser,
        &[("username", "alice")],
        r#"{"userStatus":"disable","username":"alice"}"#,
    );
    assert_eq!(b.call(Some(ROOT), disable).await.code(), 0);
    assert_eq!(
        answer(&b.call(Some(("alice", "alice-secret")), send("T1")).await),
        (no_permission, "User:alice is disabled.".into())
    );
    b.stop().await;
}

/// The broker's own gRPC endpoint (local mode) calls it in-process after checking the call
/// itself: those requests are not checked again, while the same unsigned request from a
/// socket, even from loopback, is refused.
#[tokio::test]
async fn in_process_requests_are_the_brokers_own() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), acl_2(true, true)).await;
    let local = remoting::local::LocalClient::new(
        Arc::new(broker::server::dispatcher(&b.role)),
        "127.0.0.1:50001".parse().unwrap(),
    );
    assert_eq!(
        answer(&b.call(None, send("T1")).await),
        (
            ResponseCode::NoPermission.code(),
            "username cannot be null.".into()
        )
    );
    let r = local.invoke(send("T1"), T).await.unwrap();
    assert_eq!(answer(&r).0, 0, "{:?}", r.remark());
    local.close();
    b.stop().await;
}

#[tokio::test]
async fn authorization_follows_the_acl_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), acl_2(true, true)).await;
    let alice = Some(("alice", "alice-secret"));
    assert_eq!(
        b.call(Some(ROOT), create_user("alice", "alice-secret"))
            .await
            .code(),
        0
    );
    let allow = create_acl("User:alice", "Topic:ok*", r#""Pub""#, "127.0.0.1", "Allow");
    assert_eq!(answer(&b.call(Some(ROOT), allow).await), (0, String::new()));
    let deny = create_acl("User:alice", "Topic:ok-not", r#""Pub""#, "", "Deny");
    assert_eq!(b.call(Some(ROOT), deny).await.code(), 0);
    let elsewhere = create_acl("User:alice", "Topic:far", r#""Pub""#, "10.0.0.0/8", "Allow");
    assert_eq!(b.call(Some(ROOT), elsewhere).await.code(), 0);

    assert_eq!(b.call(alice, send("ok1")).await.code(), 0);
    let no_permission = ResponseCode::NoPermission.code();
    assert_eq!(
        answer(&b.call(alice, send("other")).await),
        (
            no_permission,
            "User:alice has no permission to access Topic:other from 127.0.0.1, no matched policies.".into()
        )
    );
    assert_eq!(
        answer(&b.call(alice, send("ok-not")).await),
        (
            no_permission,
            "User:alice has no permission to access Topic:ok-not from 127.0.0.1, the decision is deny.".into()
        )
    );
    assert_eq!(answer(&b.call(alice, send("far")).await).0, no_permission);
    // Admin requests need Cluster:Update; alice has none, root is super.
    assert_eq!(
        answer(&b.call(alice, create_user("carol", "carol-secret")).await),
        (
            no_permission,
            "User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies.".into()
        )
    );
    b.stop().await;

    // The users and ACLs are in files: a restart keeps them.
    let b = start(dir.path(), acl_2(true, true)).await;
    assert_eq!(b.call(alice, send("ok2")).await.code(), 0);
    assert_eq!(b.call(alice, send("other")).await.code(), no_permission);
    let list = b
        .call(Some(ROOT), with(RequestCode::AuthListAcl, &[], ""))
        .await;
    let body = String::from_utf8(list.body.to_bytes().to_vec()).unwrap();
    assert!(body.contains(r#""resource":"Topic:ok*""#), "{body}");
    let get = b
        .call(
            Some(ROOT),
            with(RequestCode::AuthGetUser, &[("username", "alice")], ""),
        )
        .await;
    assert!(String::from_utf8_lossy(&get.body.to_bytes()).contains(r#""userType":"Normal""#));
    b.stop().await;
}

#[tokio::test]
async fn without_checks_nothing_is_refused_and_admin_codes_still_work() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), AuthConfig::default()).await;
    assert_eq!(b.call(None, send("T1")).await.code(), 0);
    assert_eq!(
        b.call(None, create_user("alice", "alice-secret"))
            .await
            .code(),
        0
    );
    // With no access key, the "super user only" rule does not apply (Apache: auth is off).
    let sup = with(
        RequestCode::AuthCreateUser,
        &[("username", "boss")],
        r#"{"password":"boss-secret","userType":"Super","username":"boss"}"#,
    );
    assert_eq!(b.call(None, sup).await.code(), 0);
    b.stop().await;
}

#[tokio::test]
async fn plain_acl_refuses_as_4_9_8() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("conf")).unwrap();
    std::fs::write(
        home.join("conf/plain_acl.yml"),
        "accounts:\n  - accessKey: rocketmq2\n    secretKey: 12345678\n    defaultTopicPerm: DENY\n    topicPerms:\n      - open=PUB\n",
    )
    .unwrap();
    let config = AuthConfig {
        acl_enable: true,
        rocketmq_home: Some(home),
        ..AuthConfig::default()
    };
    let b = start(dir.path(), config).await;
    let me = Some(("rocketmq2", "12345678"));
    assert_eq!(b.call(me, send("open")).await.code(), 0);
    let (code, remark) = answer(&b.call(me, send("closed")).await);
    assert_eq!(code, ResponseCode::SystemError.code());
    assert_eq!(
        remark,
        "org.apache.rocketmq.acl.common.AclException: No default permission for topic:closed, org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:606)"
    );
    let (code, remark) = answer(&b.call(Some(("rocketmq2", "nope")), send("open")).await);
    assert_eq!(code, ResponseCode::SystemError.code());
    assert!(
        remark.contains("Check signature failed for accessKey=rocketmq2"),
        "{remark}"
    );
    b.stop().await;
}
