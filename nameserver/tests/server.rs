//! The name server served in-process over real loopback sockets: wiring of the
//! processor, the connection listener and shutdown. (The `mqnamesrv` process itself
//! is tested in `integration-tests`.)
#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed step should fail the test loudly"
)]

use std::collections::BTreeMap;
use std::time::Duration;

use nameserver::NamesrvConfig;
use remoting::protocol::namesrv::{GetRouteInfoRequestHeader, RegisterBrokerRequestHeader};
use remoting::protocol::route::TopicRouteData;
use remoting::protocol::topic::{RegisterBrokerBody, TopicConfig};
use remoting::{RemotingClient, RemotingCommand, RequestCode, fastjson};

const TIMEOUT: Duration = Duration::from_secs(3);

fn register(id: i64, addr: &str, timeout_ms: Option<i64>) -> RemotingCommand {
    let mut body = RegisterBrokerBody::default();
    body.topic_config_serialize_wrapper.topic_config_table =
        BTreeMap::from([("TopicA".to_owned(), TopicConfig::new("TopicA", 4))]);
    body.topic_config_serialize_wrapper.data_version.counter = 1;
    let header = RegisterBrokerRequestHeader {
        broker_name: "broker-a".into(),
        broker_addr: addr.into(),
        cluster_name: "DefaultCluster".into(),
        ha_server_addr: "127.0.0.1:10912".into(),
        broker_id: id,
        heartbeat_timeout_millis: timeout_ms,
        ..RegisterBrokerRequestHeader::default()
    };
    RemotingCommand::request_with(RequestCode::RegisterBroker, &header)
        .with_body(body.encode(false).unwrap())
}

fn route() -> RemotingCommand {
    RemotingCommand::request_with(
        RequestCode::GetRouteinfoByTopic,
        &GetRouteInfoRequestHeader {
            topic: "TopicA".into(),
            accept_standard_json_only: None,
        },
    )
}

async fn wait_for(
    client: &RemotingClient,
    addr: &str,
    mut done: impl FnMut(&RemotingCommand) -> bool,
) {
    for _ in 0..200 {
        let r = client.invoke(addr, route(), TIMEOUT).await.unwrap();
        if done(&r) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_registers_expires_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let config = NamesrvConfig {
        bind_address: "127.0.0.1".into(),
        listen_port: 0,
        kv_config_path: dir.path().join("kv.json").display().to_string(),
        config_store_path: dir.path().join("namesrv.properties").display().to_string(),
        scan_not_active_broker_interval: 20,
        ..NamesrvConfig::default()
    };
    let listener = nameserver::bind(&config).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(nameserver::run(listener, config, async {
        let _ = stop_rx.await;
    }));

    let reader = RemotingClient::default();
    assert_eq!(
        reader.invoke(&addr, route(), TIMEOUT).await.unwrap().code(),
        17
    );

    // A broker on its own connection; closing the connection removes it at once.
    let broker = RemotingClient::default();
    let r = broker
        .invoke(&addr, register(0, "127.0.0.1:10911", None), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    let r = reader.invoke(&addr, route(), TIMEOUT).await.unwrap();
    let data: TopicRouteData = fastjson::from_slice(&r.body.to_bytes()).unwrap();
    assert_eq!(data.broker_datas[0].master_addr(), Some("127.0.0.1:10911"));
    broker.close_all();
    wait_for(&reader, &addr, |r| r.code() == 17).await;

    // A broker with a short expiry is dropped by the scan, and its connection closed.
    let broker = RemotingClient::default();
    let r = broker
        .invoke(&addr, register(0, "127.0.0.1:10911", Some(100)), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(r.code(), 0);
    let channel = broker.channel(&addr).await.unwrap();
    wait_for(&reader, &addr, |r| r.code() == 17).await;
    tokio::time::timeout(TIMEOUT, channel.closed())
        .await
        .expect("expired broker's connection closed");

    stop_tx.send(()).unwrap();
    tokio::time::timeout(TIMEOUT, server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
