//! A broker in process on real loopback sockets, driven with our own remoting client:
//! shared by the broker's integration tests and its benches
//! (`#[path = "../tests/support/mod.rs"] mod support;`).
#![allow(dead_code, reason = "each test or bench uses part of it")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use broker::broker::Broker;
use broker::config::BrokerConfig;
use bytes::Bytes;
use remoting::protocol::broker::SendMessageRequestHeaderV2;
use remoting::{RemotingClient, RemotingCommand, RequestCode};
use store::StoreConfig;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// Request timeout.
pub const T: Duration = Duration::from_secs(5);

/// A running broker: its address (and VIP channel's), the broker itself, a client.
pub struct Running {
    pub addr: String,
    pub vip_addr: Option<String>,
    pub broker: Arc<Broker>,
    pub role: Arc<broker::role::Role>,
    pub client: RemotingClient,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Running {
    /// A broker on a free port with a fresh store (1 MiB CommitLog files), after `tweak`.
    pub async fn start(tweak: impl FnOnce(&mut BrokerConfig, &mut StoreConfig)) -> Self {
        Self::start_with(false, tweak).await
    }

    /// [`Running::start`], also serving a VIP channel on a second free port.
    pub async fn start_with_vip_channel(
        tweak: impl FnOnce(&mut BrokerConfig, &mut StoreConfig),
    ) -> Self {
        Self::start_with(true, tweak).await
    }

    async fn start_with(
        vip_channel: bool,
        tweak: impl FnOnce(&mut BrokerConfig, &mut StoreConfig),
    ) -> Self {
        Self::start_in(tempfile::tempdir().unwrap(), vip_channel, tweak).await
    }

    /// Stops the broker cleanly and starts it again on the same store (a new port),
    /// after `tweak`.
    pub async fn restart(
        mut self,
        tweak: impl FnOnce(&mut BrokerConfig, &mut StoreConfig),
    ) -> Self {
        let vip_channel = self.vip_addr.is_some();
        self.shut_down().await;
        let Running {
            broker, role, _dir, ..
        } = self;
        drop((role, broker));
        Self::start_in(_dir, vip_channel, tweak).await
    }

    async fn start_in(
        dir: tempfile::TempDir,
        vip_channel: bool,
        tweak: impl FnOnce(&mut BrokerConfig, &mut StoreConfig),
    ) -> Self {
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_env_filter("info")
            .try_init();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let vip = if vip_channel {
            Some(TcpListener::bind("127.0.0.1:0").await.unwrap())
        } else {
            None
        };
        let vip_addr = vip.as_ref().map(|l| l.local_addr().unwrap().to_string());
        let mut config = BrokerConfig {
            broker_name: "broker-a".into(),
            bind_address: "127.0.0.1".into(),
            ha_listen_port: Some(0),
            broker_ip1: Some("127.0.0.1".into()),
            namesrv_addr: None,
            ..BrokerConfig::default()
        };
        let mut store = StoreConfig::with_root(dir.path().join("store"));
        store.mapped_file_size_commit_log = 1024 * 1024;
        tweak(&mut config, &mut store);
        let broker = Arc::new(
            tokio::task::spawn_blocking(move || {
                Broker::open(config, store, ha::HaConfig::default(), port)
            })
            .await
            .unwrap()
            .unwrap(),
        );
        let (stop, stopped) = oneshot::channel::<()>();
        let started = broker::server::start(Arc::clone(&broker), listener, vip).unwrap();
        let role = Arc::clone(started.role());
        let done = tokio::spawn(started.serve(async {
            let _ = stopped.await;
        }));
        Running {
            addr: format!("127.0.0.1:{port}"),
            vip_addr,
            broker,
            role,
            client: RemotingClient::default(),
            stop: Some(stop),
            done: Some(done),
            _dir: dir,
        }
    }

    /// One request to the main port.
    pub async fn call(&self, request: RemotingCommand) -> RemotingCommand {
        self.client.invoke(&self.addr, request, T).await.unwrap()
    }

    /// A SEND_MESSAGE_V2 of `body` with `props`.
    pub async fn send(
        &self,
        topic: &str,
        queue_id: i32,
        body: &[u8],
        props: &str,
    ) -> RemotingCommand {
        self.call(send_request(topic, queue_id, body, props)).await
    }

    /// Waits until dispatch has made `count` messages of the queue readable (a send is
    /// acknowledged when stored; dispatch follows within moments).
    pub async fn dispatched(&self, topic: &str, queue_id: i32, count: u64) {
        let deadline = Instant::now() + T;
        while self.broker.store.max_offset_in_queue(topic, queue_id) < count {
            assert!(
                Instant::now() < deadline,
                "{topic}/{queue_id} not dispatched"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Stops the broker and waits for its clean shutdown.
    pub async fn stop(mut self) {
        self.shut_down().await;
    }

    async fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(done) = self.done.take() {
            done.await.unwrap();
        }
    }
}

/// A SEND_MESSAGE_V2 request as a producer of group `pg` sends it.
pub fn send_request(topic: &str, queue_id: i32, body: &[u8], props: &str) -> RemotingCommand {
    send_request_as("pg", 0, topic, queue_id, body, props)
}

/// A SEND_MESSAGE_V2 request from a producer of `group`, with `sys_flag`.
pub fn send_request_as(
    group: &str,
    sys_flag: i32,
    topic: &str,
    queue_id: i32,
    body: &[u8],
    props: &str,
) -> RemotingCommand {
    let header = SendMessageRequestHeaderV2 {
        producer_group: group.into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag,
        born_timestamp: broker::clock::now_ms(),
        flag: 0,
        properties: Some(props.into()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: None,
    };
    RemotingCommand::request_with(RequestCode::SendMessageV2, &header)
        .with_body(Bytes::copy_from_slice(body))
}
