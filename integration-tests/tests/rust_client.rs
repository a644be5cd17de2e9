//! `rocketmq-client-rust` 1.0.0 (crates.io; see `integration-tests/rust-client`) against the real
//! `mqnamesrv` + `mqbroker`: sync, async, batch and oneway sends to an auto-created topic, a push
//! consumer that receives every message exactly once, and the route reply this client needs.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::time::Duration;

use integration_tests::client::SyncClient;
use integration_tests::client_suite::{ClientUnderTest, ReceivedId};
use integration_tests::harness::{BrokerProcess, NamesrvProcess};
use integration_tests::rust_client::{CONSUMER, PRODUCER, RustClient};
use remoting::RemotingCommand;
use remoting::RequestCode;
use remoting::header::LanguageCode;
use remoting::protocol::namesrv::GetRouteInfoRequestHeader;

/// The version ordinal rocketmq-client-rust 1.0.0 puts in its requests (captured on the wire).
const RUST_CLIENT_VERSION: i32 = 474;

fn rust_client() -> ClientUnderTest {
    let rust = RustClient::get();
    ClientUnderTest {
        name: "Rust",
        producer: rust.program(PRODUCER),
        consumer: rust.program(CONSUMER),
        // This client sets a UNIQ_KEY on every message, batched ones included.
        batch_has_msg_ids: true,
        oneway_extra: &[],
        // Its MessageExt::msg_id() is the offset msg id (Java's getMsgId() is the UNIQ_KEY).
        received_id: ReceivedId::OffsetMsgId,
    }
}

/// What the client asks the name server (version 474, language RUST, no
/// `acceptStandardJsonOnly`) must come back as standard JSON whose BrokerData has
/// `enableActingMaster`: the client's `BrokerData` (rocketmq-protocol 1.0.0,
/// `route_data_view.rs`) has a required `enable_acting_master: bool` and a `HashMap<u64, _>` of
/// `brokerAddrs` that serde_json reads from quoted keys only. Apache's 5.3.3 name server answers
/// exactly this; a 4.9.x one (no `enableActingMaster`) could not serve this client.
#[test]
fn route_reply_is_what_rocketmq_client_rust_parses() {
    let ns = NamesrvProcess::start();
    let broker = BrokerProcess::start(&ns.addr());
    let mut request = RemotingCommand::request_with(
        RequestCode::GetRouteinfoByTopic,
        &GetRouteInfoRequestHeader {
            topic: "TBW102".to_owned(),
            accept_standard_json_only: None,
        },
    );
    request.header.version = RUST_CLIENT_VERSION;
    request.header.language = LanguageCode::Rust;
    let client = SyncClient::new();
    let mut response = None;
    for _ in 0..100 {
        let r = client.invoke(&ns.addr(), request.clone());
        if r.code() == 0 {
            response = Some(r);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let response = response.expect("TBW102 is routed once the broker registered");
    let body = response.body.to_bytes();
    let route: serde_json::Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
        panic!(
            "not standard JSON ({e}): {}",
            String::from_utf8_lossy(&body)
        )
    });
    let broker_data = &route["brokerDatas"][0];
    assert_eq!(broker_data["enableActingMaster"], serde_json::json!(false));
    assert_eq!(
        broker_data["brokerAddrs"],
        serde_json::json!({ "0": broker.addr() }),
        "brokerAddrs keys are quoted ids"
    );
}

#[test]
fn rust_producer_sends_sync_async_and_batch_to_an_auto_created_topic() {
    rust_client().sends_sync_async_and_batch();
}

#[test]
fn rust_producer_oneway_sends_land() {
    rust_client().oneway_sends_land();
}

#[test]
fn rust_push_consumer_receives_every_message_exactly_once() {
    rust_client().push_consumer_receives_every_message_exactly_once();
}
