//! What the per-request check costs: a SEND_MESSAGE_V2 with a 1 KiB body (14 header fields),
//! checked with everything off, with authentication (HMAC-SHA1 over fields and body), and with
//! authentication and authorization (a normal user whose ACL has five entries).
#![allow(clippy::unwrap_used, reason = "bench setup")]

use std::hint::black_box;
use std::net::SocketAddr;

use auth::{AuthConfig, Credentials, Guard};
use criterion::{Criterion, criterion_group, criterion_main};
use remoting::{RemotingCommand, RequestCode};

fn send() -> RemotingCommand {
    let mut r = RemotingCommand::request(RequestCode::SendMessageV2).with_body(vec![b'x'; 1024]);
    for (k, v) in [
        ("a", "producer_group"),
        ("b", "orders_eu"),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", "1"),
        ("f", "0"),
        ("g", "1733000000000"),
        ("h", "0"),
        ("i", "KEYS\u{1}k1\u{2}UNIQ_KEY\u{1}7F0000010001"),
        ("j", "0"),
        ("k", "false"),
        ("m", "false"),
        ("n", "broker-a"),
    ] {
        r.header.ext_fields.insert(k, v);
    }
    Credentials::new("alice", "alice-secret").sign(&mut r);
    r
}

fn guard(authn: bool, authz: bool) -> (Guard, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = AuthConfig {
        authentication_enabled: authn,
        authorization_enabled: authz,
        ..AuthConfig::default()
    };
    let g = Guard::open(&config, "DefaultCluster", dir.path()).unwrap();
    let store = g.store();
    store
        .create_user(auth::store::UserChange {
            username: Some("alice".into()),
            password: Some("alice-secret".into()),
            ..Default::default()
        })
        .unwrap();
    for (resource, decision) in [
        ("Topic:orders_*", auth::model::Decision::Allow),
        ("Topic:orders_us", auth::model::Decision::Deny),
        ("Group:g_*", auth::model::Decision::Allow),
        ("Topic:audit", auth::model::Decision::Allow),
        ("Topic:*", auth::model::Decision::Deny),
    ] {
        let draft = auth::store::PolicyDraft {
            policy_type: None,
            entries: vec![auth::store::EntryDraft {
                resource: auth::model::Resource::parse(resource),
                actions: vec![auth::model::Action::Pub, auth::model::Action::Sub],
                source_ips: vec!["127.0.0.0/8".into()],
                decision: Some(decision),
            }],
        };
        store.put_acl(Some("User:alice"), vec![draft]).unwrap();
    }
    (g, dir)
}

fn bench(c: &mut Criterion) {
    let request = send();
    let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    for (name, authn, authz) in [
        ("check/off", false, false),
        ("check/authentication", true, false),
        ("check/authentication+authorization", true, true),
    ] {
        let (g, _dir) = guard(authn, authz);
        assert!(g.check(&request, peer).is_ok());
        c.bench_function(name, |b| {
            b.iter(|| black_box(g.check(black_box(&request), peer)))
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
