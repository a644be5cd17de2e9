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

/// The next request of `code` the broker sends (others, such as NOTIFY_CONSUMER_IDS_CHANGED,
/// passed over).
async fn next_of(
    asked: &mut tokio::sync::mpsc::UnboundedReceiver<RemotingCommand>,
    code: RequestCode,
) -> RemotingCommand {
    loop {
        let request = tokio::time::timeout(T, asked.recv())
            .await
            .unwrap()
            .unwrap();
        if request.code() == code.code() {
            return request;
        }
    }
}

/// A consumer of `group` registered on `local` as `client_id` (HEART_BEAT).
async fn register_consumer(local: &LocalClient, group: &str, client_id: &str) {
    use remoting::protocol::heartbeat::{
        ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData, MessageModel,
    };
    let data = HeartbeatData {
        client_id: client_id.into(),
        consumer_data_set: vec![ConsumerData {
            group_name: group.into(),
            consume_type: ConsumeType::ConsumePassively,
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            subscription_data_set: Vec::new(),
            unit_mode: false,
        }],
        ..HeartbeatData::default()
    };
    let hb = RemotingCommand::request(RequestCode::HeartBeat)
        .with_body(serde_json::to_vec(&data).unwrap());
    assert_eq!(local.invoke(hb, T).await.unwrap().code(), 0);
}

/// An admin's GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY reach the consumer's
/// own connection, the latter with what Apache's broker adds (its name, the message itself),
/// and the consumer's answers come back to the admin as they are.
#[tokio::test]
async fn an_admin_reaches_a_consumer_through_the_broker() {
    use remoting::protocol::broker::{
        ConsumeMessageDirectlyResultRequestHeader, GetConsumerRunningInfoRequestHeader,
        SendMessageResponseHeader,
    };
    let b = Running::start(|_, _| {}).await;
    let sent = b.send("DirectT", 0, b"direct body", "").await;
    assert_eq!(sent.code(), 0, "{:?}", sent.remark());
    let msg_id = sent
        .decode_header::<SendMessageResponseHeader>()
        .unwrap()
        .msg_id;
    let local = Arc::new(LocalClient::new(
        Arc::new(broker::server::dispatcher(&b.role)),
        SocketAddr::from(([127, 0, 0, 1], 50_002)),
    ));
    let mut asked = local.server_requests().unwrap();
    register_consumer(&local, "cg_direct", "client-a").await;

    let header = ConsumeMessageDirectlyResultRequestHeader {
        consumer_group: "cg_direct".into(),
        client_id: Some("client-a".into()),
        msg_id: Some(msg_id),
        broker_name: None,
        topic: Some("DirectT".into()),
        topic_sys_flag: None,
        group_sys_flag: None,
    };
    let admin = {
        let request = RemotingCommand::request_with(RequestCode::ConsumeMessageDirectly, &header);
        let addr = b.addr.clone();
        let client = b.client.clone();
        tokio::spawn(async move { client.invoke(&addr, request, T).await })
    };
    let relayed = next_of(&mut asked, RequestCode::ConsumeMessageDirectly).await;
    assert_eq!(
        relayed.header.ext_fields.get("brokerName"),
        Some("broker-a")
    );
    let body = relayed.body.to_bytes();
    let Ok(Some(message::record::Record::Message(m))) = message::record::decode(&body) else {
        panic!(
            "the relayed body is no message record: {} bytes",
            body.len()
        );
    };
    assert_eq!(m.body, b"direct body");
    local.answer(
        &relayed,
        RemotingCommand::response(remoting::ResponseCode::Success, None::<String>).with_body(
            bytes::Bytes::from_static(b"{\"consumeResult\":\"CR_SUCCESS\"}"),
        ),
    );
    let answer = admin.await.unwrap().unwrap();
    assert_eq!(answer.code(), 0);
    assert_eq!(
        answer.body.to_bytes().as_ref(),
        b"{\"consumeResult\":\"CR_SUCCESS\"}"
    );

    let info = GetConsumerRunningInfoRequestHeader {
        consumer_group: "cg_direct".into(),
        client_id: "client-a".into(),
        jstack_enable: Some(true),
    };
    let admin = {
        let request = RemotingCommand::request_with(RequestCode::GetConsumerRunningInfo, &info);
        let addr = b.addr.clone();
        let client = b.client.clone();
        tokio::spawn(async move { client.invoke(&addr, request, T).await })
    };
    let relayed = next_of(&mut asked, RequestCode::GetConsumerRunningInfo).await;
    assert_eq!(relayed.header.ext_fields.get("jstackEnable"), Some("true"));
    local.answer(
        &relayed,
        RemotingCommand::response(remoting::ResponseCode::Success, None::<String>)
            .with_body(bytes::Bytes::from_static(b"{\"jstack\":\"main\"}")),
    );
    assert_eq!(
        admin.await.unwrap().unwrap().body.to_bytes().as_ref(),
        b"{\"jstack\":\"main\"}"
    );
    local.close();
    b.stop().await;
}
