//! The broker's request handler called in-process (`remoting::local::LocalClient` over
//! `broker::server::dispatcher`), as the gRPC endpoint's local mode calls it (issue 17):
//! the same answers as over a socket, and a held pull answered later through the
//! detached channel.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use remoting::local::LocalClient;
use remoting::protocol::broker::PullMessageRequestHeader;
use remoting::protocol::constants::pull_sys_flag;
use remoting::{RemotingCommand, RequestCode};
use support::{Running, T, send_request};

fn pull(offset: i64, suspend_ms: i64) -> RemotingCommand {
    let header = PullMessageRequestHeader {
        consumer_group: "cg".into(),
        topic: "LocalT".into(),
        queue_id: 0,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: pull_sys_flag::SUBSCRIPTION | pull_sys_flag::SUSPEND,
        commit_offset: 0,
        suspend_timeout_millis: suspend_ms,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        ..PullMessageRequestHeader::default()
    };
    RemotingCommand::request_with(RequestCode::PullMessage, &header)
}

#[tokio::test]
async fn sends_and_held_pulls_go_through_the_broker_in_process() {
    let b = Running::start(|_, _| {}).await;
    let local = Arc::new(LocalClient::new(
        Arc::new(broker::server::dispatcher(&b.role)),
        SocketAddr::from(([127, 0, 0, 1], 50_000)),
    ));
    let r = local
        .invoke(send_request("LocalT", 0, b"first", ""), T)
        .await
        .unwrap();
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    let r = local.invoke(pull(0, 1000), T).await.unwrap();
    assert_eq!(r.code(), 0, "found: {:?}", r.remark());

    // Nothing at offset 1 yet: the pull is held and answered once a message arrives.
    let held = {
        let local = Arc::clone(&local);
        tokio::spawn(async move { local.invoke(pull(1, 5000), T).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!held.is_finished(), "held, not answered at once");
    let r = b.call(send_request("LocalT", 0, b"second", "")).await;
    assert_eq!(r.code(), 0);
    let r = held.await.unwrap().unwrap();
    assert_eq!(r.code(), 0, "woken by the send: {:?}", r.remark());

    // An unknown code is refused as over a socket.
    let r = local
        .invoke(RemotingCommand::request(99_999), T)
        .await
        .unwrap();
    assert_eq!(
        r.code(),
        b.call(RemotingCommand::request(99_999)).await.code()
    );
    local.close();
    b.stop().await;
}
