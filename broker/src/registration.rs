//! Registration with the name servers (`BrokerOuterAPI`): REGISTER_BROKER to every
//! name server every `registerNameServerPeriod` and whenever topics change,
//! UNREGISTER_BROKER on clean shutdown. A slave learns its master's addresses from
//! the answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::join_all;
use parking_lot::RwLock;
use remoting::protocol::body::KvTable;
use remoting::protocol::constants::perm;
use remoting::protocol::namesrv::{
    RegisterBrokerRequestHeader, RegisterBrokerResponseHeader, UnregisterBrokerRequestHeader,
};
use remoting::protocol::topic::{RegisterBrokerBody, TopicConfigSerializeWrapper};
use remoting::{RemotingClient, RemotingCommand, RequestCode, ResponseCode, fastjson};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

/// Who this broker is, as registered (read afresh for every registration: a role
/// switch or a permission change takes effect at the next one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Cluster.
    pub cluster_name: String,
    /// Broker name.
    pub broker_name: String,
    /// `ip:port` of the main port.
    pub broker_addr: String,
    /// `ip:port` of the HA port.
    pub ha_server_addr: String,
    /// 0 = master.
    pub broker_id: i64,
    /// Broker permission; topics are registered with it when it is not RW.
    pub permission: i32,
    /// Send the zlib body.
    pub compressed: bool,
}

/// What a name server answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registered {
    /// The master's HA address (slaves).
    pub ha_server_addr: Option<String>,
    /// The master's main address (slaves).
    pub master_addr: Option<String>,
    /// Ordered topics (`ORDER_TOPIC_CONFIG` namespace).
    pub order_topics: Vec<String>,
}

/// Talks to every name server on behalf of the broker.
#[derive(Debug)]
pub struct NamesrvClient {
    client: RemotingClient,
    addrs: RwLock<Vec<String>>,
    timeout: Duration,
    last: RwLock<Registered>,
    /// Notified when the master address learned from the name servers changes.
    master_changed: Arc<Notify>,
    /// A name server did not accept a registration since the last `take_missed`.
    missed: AtomicBool,
}

impl NamesrvClient {
    /// A client for the given name servers.
    #[must_use]
    pub fn new(client: RemotingClient, addrs: Vec<String>, timeout: Duration) -> Self {
        NamesrvClient {
            client,
            addrs: RwLock::new(addrs),
            timeout,
            last: RwLock::new(Registered::default()),
            master_changed: Arc::new(Notify::new()),
            missed: AtomicBool::new(false),
        }
    }

    /// The name server addresses.
    #[must_use]
    pub fn addrs(&self) -> Vec<String> {
        self.addrs.read().clone()
    }

    /// Replaces the name server list (UPDATE_BROKER_CONFIG of namesrvAddr).
    pub fn set_addrs(&self, addrs: Vec<String>) {
        *self.addrs.write() = addrs;
    }

    /// What the last successful registration answered.
    #[must_use]
    pub fn last(&self) -> Registered {
        self.last.read().clone()
    }

    /// Notified when the master address changes.
    #[must_use]
    pub fn master_changed(&self) -> Arc<Notify> {
        Arc::clone(&self.master_changed)
    }

    /// Registers with every name server at once; returns the first good answer.
    pub async fn register(
        &self,
        id: &Identity,
        topics: TopicConfigSerializeWrapper,
    ) -> Option<Registered> {
        let body = match registration_body(id, topics).encode(id.compressed) {
            Ok(b) => b,
            Err(e) => {
                warn!(error = %e, "cannot encode registration");
                return None;
            }
        };
        let crc = crc32(&body);
        let header = RegisterBrokerRequestHeader {
            broker_name: id.broker_name.clone(),
            broker_addr: id.broker_addr.clone(),
            cluster_name: id.cluster_name.clone(),
            ha_server_addr: id.ha_server_addr.clone(),
            broker_id: id.broker_id,
            heartbeat_timeout_millis: None,
            enable_acting_master: None,
            compressed: Some(id.compressed),
            body_crc32: Some(crc),
        };
        let addrs = self.addrs();
        let calls = addrs.iter().map(|addr| {
            let request = RemotingCommand::request_with(RequestCode::RegisterBroker, &header)
                .with_body(body.clone());
            async move { (addr, self.client.invoke(addr, request, self.timeout).await) }
        });
        let mut first = None;
        for (addr, result) in join_all(calls).await {
            match result {
                Ok(resp) if resp.code() == ResponseCode::Success.code() => {
                    debug!(namesrv = %addr, "registered");
                    if first.is_none() {
                        first = Some(parse_registered(&resp));
                    }
                }
                Ok(resp) => {
                    self.missed.store(true, Ordering::Relaxed);
                    warn!(namesrv = %addr, code = resp.code(), remark = ?resp.remark(), "registration refused")
                }
                Err(e) => {
                    self.missed.store(true, Ordering::Relaxed);
                    warn!(namesrv = %addr, error = %e, "registration failed")
                }
            }
        }
        if let Some(reg) = &first {
            let mut last = self.last.write();
            let master_moved =
                last.master_addr != reg.master_addr || last.ha_server_addr != reg.ha_server_addr;
            *last = reg.clone();
            drop(last);
            if master_moved {
                info!(master = ?reg.master_addr, ha = ?reg.ha_server_addr, "master address from name server");
                self.master_changed.notify_waiters();
            }
        }
        first
    }

    /// A topic's route from the first name server that has it (`None`: none has, or
    /// none answered).
    pub async fn topic_route(
        &self,
        topic: &str,
    ) -> Option<remoting::protocol::route::TopicRouteData> {
        let header = remoting::protocol::namesrv::GetRouteInfoRequestHeader {
            topic: topic.to_owned(),
            accept_standard_json_only: Some(true),
        };
        for addr in self.addrs() {
            let request = RemotingCommand::request_with(RequestCode::GetRouteinfoByTopic, &header);
            match self.client.invoke(&addr, request, self.timeout).await {
                Ok(resp) if resp.code() == ResponseCode::Success.code() => {
                    match remoting::fastjson::from_slice(&resp.body.to_bytes()) {
                        Ok(route) => return Some(route),
                        Err(e) => warn!(namesrv = %addr, %topic, error = %e, "unreadable route"),
                    }
                }
                Ok(_) => {}
                Err(e) => debug!(namesrv = %addr, %topic, error = %e, "route query failed"),
            }
        }
        None
    }

    /// Whether a name server refused or missed a registration since the last call
    /// (the topics it carried must go out again).
    pub fn take_missed(&self) -> bool {
        self.missed.swap(false, Ordering::Relaxed)
    }

    /// UNREGISTER_BROKER to every name server (clean shutdown).
    pub async fn unregister(&self, id: &Identity) {
        let header = UnregisterBrokerRequestHeader {
            broker_name: id.broker_name.clone(),
            broker_addr: id.broker_addr.clone(),
            cluster_name: id.cluster_name.clone(),
            broker_id: id.broker_id,
        };
        let addrs = self.addrs();
        let calls = addrs.iter().map(|addr| {
            let request = RemotingCommand::request_with(RequestCode::UnregisterBroker, &header);
            async move { (addr, self.client.invoke(addr, request, self.timeout).await) }
        });
        for (addr, result) in join_all(calls).await {
            match result {
                Ok(_) => info!(namesrv = %addr, "unregistered"),
                Err(e) => warn!(namesrv = %addr, error = %e, "unregister failed"),
            }
        }
    }
}

/// The body: the topic table, with every topic's permission replaced by the broker's
/// when the broker is not both readable and writable (as RocketMQ does).
fn registration_body(id: &Identity, mut topics: TopicConfigSerializeWrapper) -> RegisterBrokerBody {
    if !perm::is_readable(id.permission) || !perm::is_writeable(id.permission) {
        for config in topics.topic_config_table.values_mut() {
            config.perm = id.permission;
        }
    }
    RegisterBrokerBody {
        topic_config_serialize_wrapper: topics,
        filter_server_list: Vec::new(),
    }
}

fn parse_registered(resp: &RemotingCommand) -> Registered {
    let header = resp
        .decode_header::<RegisterBrokerResponseHeader>()
        .unwrap_or_default();
    let body = resp.body.to_bytes();
    let order_topics = if body.is_empty() {
        Vec::new()
    } else {
        fastjson::from_slice::<KvTable>(&body)
            .map(|kv| kv.table.into_keys().collect())
            .unwrap_or_default()
    };
    Registered {
        ha_server_addr: header.ha_server_addr.filter(|a| !a.is_empty()),
        master_addr: header.master_addr.filter(|a| !a.is_empty()),
        order_topics,
    }
}

/// CRC32 of the body as the name server checks it (`UtilAll.crc32`: masked to 31 bits).
fn crc32(body: &[u8]) -> i32 {
    // The mask keeps the value within i32's positive range.
    #[allow(clippy::cast_possible_wrap)]
    let v = (crc32fast::hash(body) & 0x7FFF_FFFF) as i32;
    v
}
