//! Request-reply through a broker in process: a reply (SEND_REPLY_MESSAGE(_V2)) is pushed
//! to the requester's connection, found by the client id in REPLY_TO_CLIENT
//! (PUSH_REPLY_MESSAGE_TO_CLIENT), and stored in `<cluster>_REPLY_TOPIC`; every way it
//! cannot be delivered is answered with Apache's code and remark.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use message::properties;
use remoting::client::ClientConfig;
use remoting::connection::RequestHandler;
use remoting::protocol::broker::{
    ReplyMessageRequestHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
};
use remoting::protocol::heartbeat::{HeartbeatData, ProducerData};
use remoting::{Channel, RemotingClient, RemotingCommand, RequestCode, ResponseCode};
use support::{Running, T};
use tokio::sync::mpsc;

const REPLY_TOPIC: &str = "DefaultCluster_REPLY_TOPIC";
const REQUESTER: &str = "127.0.0.1@requester";

/// Answers every push with `code` and hands the push to the test.
struct Requester {
    code: Arc<AtomicI32>,
    pushes: mpsc::UnboundedSender<RemotingCommand>,
}

impl RequestHandler for Requester {
    fn on_request(&self, channel: &Channel, request: RemotingCommand) {
        let mut answer = RemotingCommand::response(self.code.load(Ordering::SeqCst), None);
        answer.header.opaque = request.header.opaque;
        let _ = channel.send(answer);
        let _ = self.pushes.send(request);
    }
}

/// A producer that sent its heartbeat (client id [`REQUESTER`]): the target of replies.
async fn requester(
    b: &Running,
) -> (
    RemotingClient,
    Arc<AtomicI32>,
    mpsc::UnboundedReceiver<RemotingCommand>,
) {
    let code = Arc::new(AtomicI32::new(ResponseCode::Success.code()));
    let (tx, pushes) = mpsc::unbounded_channel();
    let client = RemotingClient::with_handler(
        ClientConfig::default(),
        Arc::new(Requester {
            code: Arc::clone(&code),
            pushes: tx,
        }),
    );
    let data = HeartbeatData {
        client_id: REQUESTER.into(),
        producer_data_set: vec![ProducerData {
            group_name: "requesters".into(),
        }],
        ..HeartbeatData::default()
    };
    let hb = RemotingCommand::request(RequestCode::HeartBeat)
        .with_body(serde_json::to_vec(&data).unwrap());
    assert_eq!(client.invoke(&b.addr, hb, T).await.unwrap().code(), 0);
    (client, code, pushes)
}

fn reply_props(to: Option<&str>) -> String {
    let mut p =
        "CORRELATION_ID\u{1}corr-1\u{2}MSG_TYPE\u{1}reply\u{2}UNIQ_KEY\u{1}u1\u{2}".to_owned();
    if let Some(to) = to {
        p.push_str(&format!("REPLY_TO_CLIENT\u{1}{to}\u{2}"));
    }
    p
}

/// A reply as the Java client sends it (V2, one-letter keys), or the long form (V1).
fn reply(v2: bool, props: &str, body: &'static [u8]) -> RemotingCommand {
    let header = SendMessageRequestHeader {
        producer_group: "responders".into(),
        topic: REPLY_TOPIC.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        flag: 3,
        properties: Some(props.into()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        batch: Some(false),
        max_reconsume_times: None,
    };
    let command = if v2 {
        RemotingCommand::request_with(
            RequestCode::SendReplyMessageV2,
            &SendMessageRequestHeaderV2::from(header),
        )
    } else {
        RemotingCommand::request_with(RequestCode::SendReplyMessage, &header)
    };
    command.with_body(Bytes::from_static(body))
}

async fn next_push(pushes: &mut mpsc::UnboundedReceiver<RemotingCommand>) -> RemotingCommand {
    tokio::time::timeout(Duration::from_secs(5), pushes.recv())
        .await
        .expect("no push within 5 s")
        .unwrap()
}

#[tokio::test]
async fn a_reply_is_pushed_to_its_requester_and_stored() {
    let b = Running::start(|_, _| {}).await;
    let (_requester, _code, mut pushes) = requester(&b).await;
    for (v2, body) in [(true, &b"pong-v2"[..]), (false, &b"pong-v1"[..])] {
        let before = b.broker.store.max_offset_in_queue(REPLY_TOPIC, 0);
        let resp = b.call(reply(v2, &reply_props(Some(REQUESTER)), body)).await;
        assert_eq!(resp.code(), 0, "{:?}", resp.header.remark);
        let h: SendMessageResponseHeader = resp.decode_header().unwrap();
        assert_ne!(h.msg_id, "0", "a stored reply names its message id");
        assert_eq!(
            (h.queue_id, h.queue_offset),
            (0, i64::try_from(before).unwrap())
        );

        let push = next_push(&mut pushes).await;
        assert_eq!(push.code(), RequestCode::PushReplyMessageToClient.code());
        let ph: ReplyMessageRequestHeader = push.decode_header().unwrap();
        assert_eq!(
            (ph.topic.as_str(), ph.queue_id, ph.flag),
            (REPLY_TOPIC, 0, 3)
        );
        assert_eq!(ph.producer_group, "responders");
        assert_eq!(ph.born_timestamp, 1_700_000_000_000);
        assert_eq!(ph.store_host, b.broker.store_host().to_string());
        assert!(ph.born_host.starts_with("127.0.0.1:"), "{}", ph.born_host);
        let props = ph.properties.unwrap();
        assert_eq!(properties::get(&props, "CORRELATION_ID"), Some("corr-1"));
        assert!(properties::get(&props, "PUSH_REPLY_TIME").is_some());
        assert_eq!(push.body.to_bytes(), body);

        b.dispatched(REPLY_TOPIC, 0, before + 1).await;
    }
    b.stop().await;
}

#[tokio::test]
async fn undeliverable_replies_are_refused_as_apache_refuses_them() {
    let b = Running::start(|_, _| {}).await;
    let (_requester, code, mut pushes) = requester(&b).await;

    let resp = b.call(reply(true, &reply_props(None), b"x")).await;
    assert_eq!(resp.code(), ResponseCode::SystemError.code());
    assert_eq!(
        resp.header.remark.as_deref(),
        Some("reply message properties[REPLY_TO_CLIENT] is null")
    );

    let resp = b
        .call(reply(true, &reply_props(Some("10.0.0.9@gone")), b"x"))
        .await;
    assert_eq!(resp.code(), ResponseCode::SystemError.code());
    assert_eq!(
        resp.header.remark.as_deref(),
        Some("push reply message fail, channel of <10.0.0.9@gone> not found.")
    );

    // The requester does not take it.
    code.store(ResponseCode::SystemError.code(), Ordering::SeqCst);
    let resp = b
        .call(reply(true, &reply_props(Some(REQUESTER)), b"x"))
        .await;
    assert_eq!(resp.code(), ResponseCode::SystemError.code());
    assert_eq!(
        resp.header.remark.as_deref(),
        Some(format!("push reply message to {REQUESTER}fail.").as_str())
    );
    assert!(next_push(&mut pushes).await.code() == RequestCode::PushReplyMessageToClient.code());
    b.stop().await;
}

#[tokio::test]
async fn without_store_reply_message_enable_a_reply_is_only_pushed() {
    let b = Running::start(|c, _| c.store_reply_message_enable = false).await;
    let (_requester, _code, mut pushes) = requester(&b).await;
    let resp = b
        .call(reply(true, &reply_props(Some(REQUESTER)), b"pong"))
        .await;
    assert_eq!(resp.code(), 0, "{:?}", resp.header.remark);
    let h: SendMessageResponseHeader = resp.decode_header().unwrap();
    assert_eq!((h.msg_id.as_str(), h.queue_id, h.queue_offset), ("0", 0, 0));
    assert_eq!(next_push(&mut pushes).await.body.to_bytes(), &b"pong"[..]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        b.broker.store.max_offset_in_queue(REPLY_TOPIC, 0),
        0,
        "nothing stored"
    );
    b.stop().await;
}

#[tokio::test]
async fn a_reply_that_cannot_be_stored_is_not_answered_success() {
    // A slave stores nothing: the push may succeed, the put does not, and the responder
    // is told so (Apache would answer SUCCESS).
    let b = Running::start(|c, _| {
        c.broker_role = broker::config::BrokerRole::SLAVE;
        c.broker_id = 1;
    })
    .await;
    let (_requester, _code, mut pushes) = requester(&b).await;
    let resp = b
        .call(reply(true, &reply_props(Some(REQUESTER)), b"pong"))
        .await;
    assert_eq!(
        resp.code(),
        ResponseCode::ServiceNotAvailable.code(),
        "{:?}",
        resp.header.remark
    );
    assert_eq!(next_push(&mut pushes).await.body.to_bytes(), &b"pong"[..]);
    b.stop().await;
}
