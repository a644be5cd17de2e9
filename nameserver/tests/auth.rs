//! The name server with authentication and authorization on (sluice's; Apache's name server
//! checks nothing): signed requests only, route lookups allowed by the asker's ACL, brokers
//! registering as a super user, the AUTH_* admin requests on its own users and ACLs.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;
use std::time::Duration;

use auth::{AuthConfig, Credentials};
use nameserver::NamesrvConfig;
use remoting::protocol::namesrv::GetRouteInfoRequestHeader;
use remoting::{RemotingClient, RemotingCommand, RequestCode, RequestHook, ResponseCode};

const T: Duration = Duration::from_secs(3);

async fn call(addr: &str, who: Option<(&str, &str)>, request: RemotingCommand) -> RemotingCommand {
    let hook = who.map(|(a, s)| Arc::new(Credentials::new(a, s)) as Arc<dyn RequestHook>);
    let client = RemotingClient::default().with_hook(hook);
    let r = client.invoke(addr, request, T).await.unwrap();
    client.close_all();
    r
}

fn route(topic: &str) -> RemotingCommand {
    RemotingCommand::request_with(
        RequestCode::GetRouteinfoByTopic,
        &GetRouteInfoRequestHeader {
            topic: topic.into(),
            accept_standard_json_only: None,
        },
    )
}

fn with(code: RequestCode, pairs: &[(&str, &str)], body: &str) -> RemotingCommand {
    let mut r = RemotingCommand::request(code).with_body(body.as_bytes().to_vec());
    for (k, v) in pairs {
        r.header.ext_fields.insert(*k, *v);
    }
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_every_request_when_on() {
    let dir = tempfile::tempdir().unwrap();
    let config = NamesrvConfig {
        bind_address: "127.0.0.1".into(),
        listen_port: 0,
        kv_config_path: dir.path().join("kv.json").display().to_string(),
        config_store_path: dir.path().join("namesrv.properties").display().to_string(),
        ..NamesrvConfig::default()
    };
    let auth = AuthConfig {
        authentication_enabled: true,
        authorization_enabled: true,
        init_authentication_user: Some(r#"{"username":"root","password":"root-pw"}"#.into()),
        ..AuthConfig::default()
    };
    let guard = Arc::new(auth::Guard::open(&auth, "DefaultCluster", dir.path()).unwrap());
    let listener = nameserver::bind(&config).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let started = nameserver::start(listener, config, Arc::new(nameserver::SystemClock))
        .unwrap()
        .with_guard(guard);
    let server = tokio::spawn(started.serve(async {
        let _ = stop_rx.await;
    }));

    let root = Some(("root", "root-pw"));
    let no_permission = ResponseCode::NoPermission.code();
    let unsigned = call(&addr, None, route("TopicA")).await;
    assert_eq!(
        (unsigned.code(), unsigned.remark()),
        (no_permission, Some("username cannot be null."))
    );
    assert_eq!(
        call(&addr, root, route("TopicA")).await.code(),
        ResponseCode::TopicNotExist.code()
    );
    // Users are managed on the name server itself.
    let create = with(
        RequestCode::AuthCreateUser,
        &[("username", "alice")],
        r#"{"password":"alice-pw","username":"alice"}"#,
    );
    assert_eq!(call(&addr, root, create).await.code(), 0);
    let alice = Some(("alice", "alice-pw"));
    let refused = call(&addr, alice, route("TopicA")).await;
    assert_eq!(
        (refused.code(), refused.remark()),
        (
            no_permission,
            Some(
                "User:alice has no permission to access Topic:TopicA from 127.0.0.1, no matched policies."
            )
        )
    );
    let acl = with(
        RequestCode::AuthCreateAcl,
        &[("subject", "User:alice")],
        r#"{"policies":[{"entries":[{"actions":["Sub"],"decision":"Allow","resource":"Topic:Topic*"}]}],"subject":"User:alice"}"#,
    );
    assert_eq!(call(&addr, root, acl).await.code(), 0);
    assert_eq!(
        call(&addr, alice, route("TopicA")).await.code(),
        ResponseCode::TopicNotExist.code()
    );
    // Registering needs Cluster:Update: a normal user may not.
    let register = with(
        RequestCode::RegisterBroker,
        &[("clusterName", "DefaultCluster")],
        "",
    );
    assert_eq!(call(&addr, alice, register).await.code(), no_permission);

    stop_tx.send(()).unwrap();
    server.await.unwrap();
    // The users live in the directory given.
    assert!(dir.path().join(auth::store::USERS_FILE).exists());
}
