//! Clients for synchronous tests: [`SyncClient`], a remoting client on its own
//! runtime; [`try_request`], one request for which a server that is down is an answer; and
//! [`FakeBroker`], a broker stand-in that registers topics with a name server and keeps its
//! connection (closing it makes the name server forget it).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use remoting::protocol::broker::{PullMessageRequestHeader, SendMessageRequestHeaderV2};
use remoting::protocol::constants::pull_sys_flag;
use remoting::protocol::namesrv::{RegisterBrokerRequestHeader, UnregisterBrokerRequestHeader};
use remoting::protocol::topic::{DataVersion, RegisterBrokerBody, TopicConfig};
use remoting::{RemotingClient, RemotingCommand, RequestCode};

/// Timeout of one request sent by [`SyncClient`] or [`try_request`].
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Sends one request to `addr` on a small runtime of its own and waits for the answer
/// ([`REQUEST_TIMEOUT`]); unlike [`SyncClient`], a broker that is down is an answer here, not a
/// panic.
///
/// # Errors
/// The transport error or timeout.
pub fn try_request(addr: &str, request: RemotingCommand) -> Result<RemotingCommand, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let client = RemotingClient::default();
    let code = request.code();
    let result = runtime
        .block_on(client.invoke(addr, request, REQUEST_TIMEOUT))
        .map_err(|e| format!("request {code} to {addr}: {e}"));
    client.close_all();
    result
}

/// A remoting client on its own small runtime, for synchronous tests.
///
/// Must not be used from inside an async runtime (its calls block on its own).
pub struct SyncClient {
    runtime: tokio::runtime::Runtime,
    client: RemotingClient,
}

impl fmt::Debug for SyncClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncClient")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl Default for SyncClient {
    fn default() -> Self {
        Self::new()
    }
}

impl SyncClient {
    /// A client with one background thread, so its connections keep reading between calls.
    ///
    /// # Panics
    /// When the runtime cannot be built.
    #[must_use]
    pub fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("build a tokio runtime");
        SyncClient {
            runtime,
            client: RemotingClient::default(),
        }
    }

    /// Sends `request` to `addr` and waits for the response.
    ///
    /// # Panics
    /// On a transport error or a timeout.
    pub fn invoke(&self, addr: &str, request: RemotingCommand) -> RemotingCommand {
        let code = request.code();
        self.runtime
            .block_on(self.client.invoke(addr, request, REQUEST_TIMEOUT))
            .unwrap_or_else(|e| panic!("request {code} to {addr} failed: {e}"))
    }

    /// Sends a oneway request.
    ///
    /// # Panics
    /// When it cannot be sent.
    pub fn invoke_oneway(&self, addr: &str, request: RemotingCommand) {
        self.runtime
            .block_on(self.client.invoke_oneway(addr, request))
            .unwrap_or_else(|e| panic!("oneway request to {addr} failed: {e}"));
    }

    /// Closes every connection.
    pub fn close_all(&self) {
        self.client.close_all();
    }
}

/// A stand-in for a broker: registers a topic table with a name server the way
/// `mqbroker` does (REGISTER_BROKER, version 409), over a connection it keeps open.
/// Dropping it (or [`disconnect`](Self::disconnect)) closes the connection, which
/// makes the name server forget the broker at once.
#[derive(Debug)]
pub struct FakeBroker {
    namesrv: String,
    client: SyncClient,
    /// The registration header (cluster, name, id, address, HA address...).
    pub header: RegisterBrokerRequestHeader,
    /// Topics registered.
    pub topics: BTreeMap<String, TopicConfig>,
    /// Version of the topic table; bumped by [`with_topic`](Self::with_topic).
    pub data_version: DataVersion,
}

impl FakeBroker {
    /// A broker of `DefaultCluster` with id `broker_id` at `broker_addr` (a loopback
    /// `ip:port`), HA address = port + 1, topic TBW102 (8 queues, perm 7) as a broker
    /// with `autoCreateTopicEnable` has. The name server never connects to it; when a
    /// client will (mqadmin `clusterList` asks brokers for runtime stats), use a port
    /// from [`crate::ports::reserve`] so the connection is refused at once rather than
    /// reaching another test's broker.
    #[must_use]
    pub fn new(namesrv: &str, broker_name: &str, broker_id: i64, broker_addr: &str) -> Self {
        let ha_server_addr = broker_addr
            .rsplit_once(':')
            .and_then(|(host, port)| {
                port.parse::<u16>()
                    .ok()
                    .map(|p| format!("{host}:{}", p.saturating_add(1)))
            })
            .unwrap_or_else(|| broker_addr.to_owned());
        let mut tbw = TopicConfig::new("TBW102", 8);
        tbw.perm = 7;
        FakeBroker {
            namesrv: namesrv.to_owned(),
            client: SyncClient::new(),
            header: RegisterBrokerRequestHeader {
                broker_name: broker_name.to_owned(),
                broker_addr: broker_addr.to_owned(),
                cluster_name: "DefaultCluster".to_owned(),
                ha_server_addr,
                broker_id,
                ..RegisterBrokerRequestHeader::default()
            },
            topics: BTreeMap::from([("TBW102".to_owned(), tbw)]),
            data_version: DataVersion {
                timestamp: 1,
                counter: 1,
                state_version: 0,
            },
        }
    }

    /// A master (id 0).
    #[must_use]
    pub fn master(namesrv: &str, broker_name: &str, broker_addr: &str) -> Self {
        Self::new(namesrv, broker_name, 0, broker_addr)
    }

    /// Adds (or replaces) a topic with `queues` read and write queues and `perm`.
    #[must_use]
    pub fn with_topic(mut self, name: &str, queues: i32, perm: i32) -> Self {
        let mut config = TopicConfig::new(name, queues);
        config.perm = perm;
        self.topics.insert(name.to_owned(), config);
        self.data_version.counter += 1;
        self
    }

    /// The REGISTER_BROKER request this broker sends.
    ///
    /// # Panics
    /// When the body cannot be encoded.
    #[must_use]
    pub fn register_request(&self) -> RemotingCommand {
        let mut body = RegisterBrokerBody::default();
        body.topic_config_serialize_wrapper.topic_config_table = self.topics.clone();
        body.topic_config_serialize_wrapper.data_version = self.data_version.clone();
        let compressed = self.header.compressed.unwrap_or(false);
        let bytes = body
            .encode(compressed)
            .expect("encode the registration body");
        let mut header = self.header.clone();
        // UtilAll.crc32: CRC32 masked to 31 bits.
        header.body_crc32 = Some(i32::try_from(crc32fast::hash(&bytes) & 0x7FFF_FFFF).unwrap_or(0));
        RemotingCommand::request_with(RequestCode::RegisterBroker, &header).with_body(bytes)
    }

    /// Registers with the name server; returns its response.
    pub fn register(&mut self) -> RemotingCommand {
        let request = self.register_request();
        self.client.invoke(&self.namesrv, request)
    }

    /// Unregisters (UNREGISTER_BROKER); returns the response.
    pub fn unregister(&mut self) -> RemotingCommand {
        let header = UnregisterBrokerRequestHeader {
            broker_name: self.header.broker_name.clone(),
            broker_addr: self.header.broker_addr.clone(),
            cluster_name: self.header.cluster_name.clone(),
            broker_id: self.header.broker_id,
        };
        self.client.invoke(
            &self.namesrv,
            RemotingCommand::request_with(RequestCode::UnregisterBroker, &header),
        )
    }

    /// Closes the connection to the name server.
    pub fn disconnect(&mut self) {
        self.client.close_all();
    }

    /// The client it uses (same connection).
    #[must_use]
    pub fn client(&self) -> &SyncClient {
        &self.client
    }
}

/// A SEND_MESSAGE_V2 of `body` to queue 0 of `topic` (tag `raw`), as a producer sends it.
#[must_use]
pub fn send_request(topic: &str, body: &'static [u8]) -> RemotingCommand {
    send_request_with(topic, body, "TAGS\u{1}raw\u{2}")
}

/// [`send_request`] with the properties `properties` (`k\u{1}v\u{2}`…).
#[must_use]
pub fn send_request_with(topic: &str, body: &'static [u8], properties: &str) -> RemotingCommand {
    let header = SendMessageRequestHeaderV2 {
        producer_group: "sluice_it_raw".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: 0,
        flag: 0,
        properties: Some(properties.into()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: None,
    };
    RemotingCommand::request_with(RequestCode::SendMessageV2, &header)
        .with_body(Bytes::from_static(body))
}

/// A PULL_MESSAGE of `group` reading `topic`'s queue `queue_id` from `offset` (32 at most,
/// TAG `*`, never held, nothing committed): how the tests read a queue back.
#[must_use]
pub fn read_request(group: &str, topic: &str, queue_id: i32, offset: i64) -> RemotingCommand {
    let header = PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: pull_sys_flag::SUBSCRIPTION,
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        ..PullMessageRequestHeader::default()
    };
    RemotingCommand::request_with(RequestCode::PullMessage, &header)
}
