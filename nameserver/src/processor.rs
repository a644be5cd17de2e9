//! The request processor: maps each name server request code to the route registry,
//! the KV table or the config, and answers with RocketMQ's response codes and remark
//! texts (`DefaultRequestProcessor` / `ClientRequestProcessor`).
//!
//! Failures are mapped to responses in one place (`RequestError`): a missing or
//! unparsable header field or a malformed body is answered SYSTEM_ERROR with a remark
//! saying what was wrong, and the connection stays open. Requests are handled inline
//! in the connection's request task; nothing here waits on the network, and the only
//! disk writes (KV table, config) are small and rare.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use remoting::fastjson::{self, KeyStyle};
use remoting::protocol::body::{properties_to_text, text_to_properties};
use remoting::protocol::constants::{system, version};
use remoting::protocol::namesrv::{
    AddWritePermOfBrokerResponseHeader, BrokerHeartbeatRequestHeader, BrokerNameRequestHeader,
    DeleteTopicFromNamesrvRequestHeader, GetBrokerMemberGroupRequestHeader,
    GetKvConfigResponseHeader, GetKvListByNamespaceRequestHeader, GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader, KvConfigKeyRequestHeader, PutKvConfigRequestHeader,
    QueryDataVersionRequestHeader, QueryDataVersionResponseHeader, RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader, TopicRequestHeader, UnregisterBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
};
use remoting::protocol::route::{TopicRouteData, route_key_style};
use remoting::protocol::topic::{DataVersion, RegisterBrokerBody, TopicConfigSerializeWrapper};
use remoting::server::{ConnectionListener, Processor, Reply};
use remoting::{BodyError, Channel, ExtFieldError, RemotingCommand, RequestCode, ResponseCode};
use serde::Serialize;
use tracing::{debug, error, info, warn};

use crate::clock::Clock;
use crate::config::NamesrvConfig;
use crate::kv_config::KvConfigManager;
use crate::route_info::{
    BrokerRegistration, GetBrokerMemberGroupResponseBody, RouteInfoManager, RouteOptions,
    UnregisterRequest,
};
use remoting::config_file as persist;

/// Every request code the name server answers; others get REQUEST_CODE_NOT_SUPPORTED.
pub const HANDLED_CODES: &[RequestCode] = &[
    RequestCode::PutKvConfig,
    RequestCode::GetKvConfig,
    RequestCode::DeleteKvConfig,
    RequestCode::QueryDataVersion,
    RequestCode::RegisterBroker,
    RequestCode::UnregisterBroker,
    RequestCode::BrokerHeartbeat,
    RequestCode::GetBrokerMemberGroup,
    RequestCode::GetRouteinfoByTopic,
    RequestCode::GetBrokerClusterInfo,
    RequestCode::WipeWritePermOfBroker,
    RequestCode::AddWritePermOfBroker,
    RequestCode::GetAllTopicListFromNameserver,
    RequestCode::DeleteTopicInNamesrv,
    RequestCode::RegisterTopicInNamesrv,
    RequestCode::GetKvlistByNamespace,
    RequestCode::GetTopicsByCluster,
    RequestCode::GetSystemTopicListFromNs,
    RequestCode::GetUnitTopicList,
    RequestCode::GetHasUnitSubTopicList,
    RequestCode::GetHasUnitSubUnunitTopicList,
    RequestCode::UpdateNamesrvConfig,
    RequestCode::GetNamesrvConfig,
];

/// `MQVersion.Version.V3_0_11`: brokers from this version on send a `RegisterBrokerBody`
/// (topics + filter servers); older ones send only the topic wrapper.
const V3_0_11: i32 = 37;

/// `FAQUrl.suggestTodo(FAQUrl.APPLY_TOPIC_URL)` as 4.9.8 writes it.
const APPLY_TOPIC_TIP: &str = "\nSee http://rocketmq.apache.org/docs/faq/ for further details.";

/// Where a request came from.
#[derive(Debug, Clone, Copy)]
pub struct Origin {
    /// Id of the connection ([`Channel::id`]).
    pub channel_id: u64,
    /// Remote address, for logs.
    pub peer: SocketAddr,
}

/// A request that cannot be served as sent; answered SYSTEM_ERROR.
#[derive(Debug, thiserror::Error)]
enum RequestError {
    /// A required header field is missing or a field does not parse.
    #[error("{0}")]
    Header(#[from] ExtFieldError),
    /// The body does not parse.
    #[error("Failed to decode {what}: {source}")]
    Body {
        what: &'static str,
        source: BodyError,
    },
    /// A body is required and absent.
    #[error("{0} body is missing")]
    MissingBody(&'static str),
}

impl RequestError {
    fn body(what: &'static str) -> impl FnOnce(BodyError) -> RequestError {
        move |source| RequestError::Body { what, source }
    }
}

fn response(code: ResponseCode, remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response(code, Some(remark.into()))
}

fn success() -> RemotingCommand {
    RemotingCommand::response(ResponseCode::Success, None)
}

/// Encodes a body; bodies are plain data, so a failure is a bug, answered SYSTEM_ERROR.
fn with_json_body<T: Serialize>(
    resp: RemotingCommand,
    body: &T,
    style: KeyStyle,
) -> RemotingCommand {
    match fastjson::to_vec(body, style) {
        Ok(bytes) => resp.with_body(bytes),
        Err(e) => {
            error!(error = %e, "cannot encode response body");
            response(
                ResponseCode::SystemError,
                format!("cannot encode response body: {e}"),
            )
        }
    }
}

/// The name server's request handling and the state it serves.
#[derive(Debug)]
pub struct NamesrvProcessor {
    config: RwLock<NamesrvConfig>,
    routes: RwLock<RouteInfoManager>,
    kv: KvConfigManager,
    clock: Arc<dyn Clock>,
    started_at: i64,
    /// Connections brokers registered on, so expired brokers' connections can be closed.
    broker_channels: Mutex<HashMap<u64, Channel>>,
    /// Checks every request when authentication or authorization is on.
    guard: Option<Arc<auth::Guard>>,
}

impl NamesrvProcessor {
    /// A processor serving an empty registry and the given (loaded) KV table.
    #[must_use]
    pub fn new(config: NamesrvConfig, kv: KvConfigManager, clock: Arc<dyn Clock>) -> Self {
        let routes = RouteInfoManager::new(route_options(&config));
        NamesrvProcessor {
            config: RwLock::new(config),
            routes: RwLock::new(routes),
            kv,
            started_at: clock.now_millis(),
            clock,
            broker_channels: Mutex::new(HashMap::new()),
            guard: None,
        }
    }

    /// The same processor, checking every request with `guard` and answering the AUTH_*
    /// admin requests on its users and ACLs.
    #[must_use]
    pub fn with_guard(mut self, guard: Arc<auth::Guard>) -> Self {
        self.guard = Some(guard);
        self
    }

    /// The guard, when there is one.
    #[must_use]
    pub fn guard(&self) -> Option<&Arc<auth::Guard>> {
        self.guard.as_ref()
    }

    /// A copy of the current config.
    #[must_use]
    pub fn config(&self) -> NamesrvConfig {
        self.config.read().clone()
    }

    /// Read access to the registry (tests, diagnostics).
    pub fn routes(&self) -> parking_lot::RwLockReadGuard<'_, RouteInfoManager> {
        self.routes.read()
    }

    /// Removes brokers not heard from in time and closes their connections.
    /// Returns how many were removed.
    pub fn scan_not_active_brokers(&self) -> usize {
        let now = self.clock.now_millis();
        let expired = self.routes.write().scan_not_active_brokers(now);
        for e in &expired {
            let channel = self.broker_channels.lock().get(&e.channel_id).cloned();
            if let Some(channel) = channel {
                info!(broker = %e.broker.broker_addr, peer = %channel.peer_addr(), "closing expired broker connection");
                channel.close();
            }
        }
        expired.len()
    }

    /// Handles one request and returns its response (code, remark, extFields, body;
    /// the server sets opaque, flag and encoding).
    #[tracing::instrument(level = "debug", skip_all, fields(code = request.code(), peer = %origin.peer))]
    pub fn handle(&self, origin: Origin, request: &RemotingCommand) -> RemotingCommand {
        let code = request.code();
        debug!("request");
        let result = match RequestCode::try_from(code) {
            Ok(RequestCode::PutKvConfig) => self.put_kv_config(request),
            Ok(RequestCode::GetKvConfig) => self.get_kv_config(request),
            Ok(RequestCode::DeleteKvConfig) => self.delete_kv_config(request),
            Ok(RequestCode::QueryDataVersion) => self.query_data_version(request),
            Ok(RequestCode::RegisterBroker) => self.register_broker(origin, request),
            Ok(RequestCode::UnregisterBroker) => self.unregister_broker(request),
            Ok(RequestCode::BrokerHeartbeat) => self.broker_heartbeat(request),
            Ok(RequestCode::GetBrokerMemberGroup) => self.broker_member_group(request),
            Ok(RequestCode::GetRouteinfoByTopic) => self.route_info_by_topic(request),
            Ok(RequestCode::GetBrokerClusterInfo) => Ok(self.cluster_info()),
            Ok(RequestCode::WipeWritePermOfBroker) => self.wipe_write_perm(origin, request),
            Ok(RequestCode::AddWritePermOfBroker) => self.add_write_perm(origin, request),
            Ok(RequestCode::GetAllTopicListFromNameserver) => Ok(self.all_topic_list(origin)),
            Ok(RequestCode::DeleteTopicInNamesrv) => self.delete_topic(request),
            Ok(RequestCode::RegisterTopicInNamesrv) => self.register_topic(request),
            Ok(RequestCode::GetKvlistByNamespace) => self.kv_list_by_namespace(request),
            Ok(RequestCode::GetTopicsByCluster) => self.topics_by_cluster(request),
            Ok(RequestCode::GetSystemTopicListFromNs) => {
                let list = self.routes.read().system_topic_list();
                Ok(with_json_body(success(), &list, KeyStyle::Fastjson))
            }
            Ok(RequestCode::GetUnitTopicList) => {
                Ok(self.topic_list_if_enabled(RouteInfoManager::unit_topics))
            }
            Ok(RequestCode::GetHasUnitSubTopicList) => {
                Ok(self.topic_list_if_enabled(RouteInfoManager::has_unit_sub_topics))
            }
            Ok(RequestCode::GetHasUnitSubUnunitTopicList) => {
                Ok(self.topic_list_if_enabled(RouteInfoManager::has_unit_sub_non_unit_topics))
            }
            Ok(RequestCode::UpdateNamesrvConfig) => Ok(self.update_config(origin, request)),
            Ok(RequestCode::GetNamesrvConfig) => Ok(self.get_config()),
            _ => Ok(response(
                ResponseCode::RequestCodeNotSupported,
                format!(" request type {code} not supported"),
            )),
        };
        result.unwrap_or_else(|e| {
            log_limit::limited!(warn!(code, peer = %origin.peer, error = %e, "request refused"));
            response(ResponseCode::SystemError, e.to_string())
        })
    }

    // ------------------------------------------------------------ KV config

    fn put_kv_config(&self, request: &RemotingCommand) -> Result<RemotingCommand, RequestError> {
        let h: PutKvConfigRequestHeader = request.decode_header()?;
        Ok(match self.kv.put(&h.namespace, &h.key, &h.value) {
            Ok(()) => success(),
            Err(e) => {
                error!(error = %e, "kv config not persisted");
                response(
                    ResponseCode::SystemError,
                    format!("kv config set but not persisted: {e}"),
                )
            }
        })
    }

    fn get_kv_config(&self, request: &RemotingCommand) -> Result<RemotingCommand, RequestError> {
        let h: KvConfigKeyRequestHeader = request.decode_header()?;
        Ok(match self.kv.get(&h.namespace, &h.key) {
            Some(value) => success().with_header(&GetKvConfigResponseHeader { value: Some(value) }),
            None => response(
                ResponseCode::QueryNotFound,
                format!("No config item, Namespace: {} Key: {}", h.namespace, h.key),
            ),
        })
    }

    fn delete_kv_config(&self, request: &RemotingCommand) -> Result<RemotingCommand, RequestError> {
        let h: KvConfigKeyRequestHeader = request.decode_header()?;
        Ok(match self.kv.delete(&h.namespace, &h.key) {
            Ok(()) => success(),
            Err(e) => {
                error!(error = %e, "kv config not persisted");
                response(
                    ResponseCode::SystemError,
                    format!("kv config deleted but not persisted: {e}"),
                )
            }
        })
    }

    fn kv_list_by_namespace(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, RequestError> {
        let h: GetKvListByNamespaceRequestHeader = request.decode_header()?;
        Ok(match self.kv.list(&h.namespace) {
            Some(table) => with_json_body(success(), &table, KeyStyle::Fastjson),
            None => response(
                ResponseCode::QueryNotFound,
                format!("No config item, Namespace: {}", h.namespace),
            ),
        })
    }

    // ------------------------------------------------------------ brokers

    fn register_broker(
        &self,
        origin: Origin,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, RequestError> {
        let h: RegisterBrokerRequestHeader = request.decode_header()?;
        let body = request.body.to_bytes();
        let expected_crc = h.body_crc32.unwrap_or(0);
        if expected_crc != 0 {
            let crc = if body.is_empty() {
                0
            } else {
                java_crc32(&body)
            };
            if crc != expected_crc {
                log_limit::limited!(
                    warn!(peer = %origin.peer, broker = %h.broker_addr, expected_crc, crc, "register broker: crc32 not match")
                );
                return Ok(response(ResponseCode::SystemError, "crc32 not match"));
            }
        }
        let (wrapper, filter_server_list) = if request.header.version >= V3_0_11 {
            let body = if body.is_empty() {
                RegisterBrokerBody::default()
            } else {
                RegisterBrokerBody::decode(&body, h.compressed.unwrap_or(false))
                    .map_err(RequestError::body("RegisterBrokerBody"))?
            };
            (
                body.topic_config_serialize_wrapper,
                Some(body.filter_server_list),
            )
        } else if body.is_empty() {
            (TopicConfigSerializeWrapper::default(), None)
        } else {
            let wrapper = fastjson::from_slice(&body)
                .map_err(RequestError::body("TopicConfigSerializeWrapper"))?;
            (wrapper, None)
        };
        let topics = wrapper.topic_config_table.len();
        let registration = BrokerRegistration {
            cluster_name: h.cluster_name,
            broker_addr: h.broker_addr,
            broker_name: h.broker_name,
            broker_id: h.broker_id,
            ha_server_addr: h.ha_server_addr,
            zone_name: request.ext("zoneName").map(str::to_owned),
            heartbeat_timeout_millis: h.heartbeat_timeout_millis,
            enable_acting_master: h.enable_acting_master,
            topic_config_wrapper: wrapper,
            filter_server_list,
            channel_id: origin.channel_id,
            single_topic_registration_possible: request.header.version >= version::V5_0_0,
        };
        debug!(broker = %registration.broker_addr, broker_id = registration.broker_id, topics, "register broker");
        let now = self.clock.now_millis();
        let result = match self.routes.write().register_broker(registration, now) {
            Ok(result) => result,
            Err(e) => {
                log_limit::limited!(
                    warn!(peer = %origin.peer, error = %e, "register broker refused")
                );
                return Ok(response(
                    ResponseCode::SystemError,
                    "register broker failed",
                ));
            }
        };
        let mut resp = success().with_header(&RegisterBrokerResponseHeader {
            ha_server_addr: result.ha_server_addr,
            master_addr: result.master_addr,
        });
        if self.config.read().return_order_topic_config_to_broker {
            if let Some(table) = self.kv.list(system::ORDER_TOPIC_CONFIG_NAMESPACE) {
                resp = with_json_body(resp, &table, KeyStyle::Fastjson);
            }
        }
        Ok(resp)
    }

    fn unregister_broker(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, RequestError> {
        let h: UnregisterBrokerRequestHeader = request.decode_header()?;
        self.routes.write().unregister_broker(&UnregisterRequest {
            cluster_name: h.cluster_name,
            broker_addr: h.broker_addr,
            broker_name: h.broker_name,
            broker_id: h.broker_id,
        });
        Ok(success())
    }

    fn query_data_version(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, RequestError> {
        let h: QueryDataVersionRequestHeader = request.decode_header()?;
        if request.body.is_empty() {
            return Err(RequestError::MissingBody("DataVersion"));
        }
        let data_version: DataVersion = fastjson::from_slice(&request.body.to_bytes())
            .map_err(RequestError::body("DataVersion"))?;
        let mut routes = self.routes.write();
        let changed =
            routes.is_broker_topic_config_changed(&h.cluster_name, &h.broker_addr, &data_version);
        if !changed {
            // 4.9.8: an unchanged version is a keep-alive (brokers with forceRegister=false).
            routes.update_broker_info_update_timestamp(
                &h.cluster_name,
                &h.broker_addr,
                self.clock.now_millis(),
            );
        }
        let mut resp = success().with_header(&QueryDataVersionResponseHeader { changed });
        if let Some(current) = routes.query_broker_topic_config(&h.cluster_name, &h.broker_addr) {
            resp = with_json_body(resp, current, KeyStyle::Fastjson);
        }
        Ok(resp)
    }

    fn broker_heartbeat(&self, request: &RemotingCommand) -> Result<RemotingCommand, RequestError> {
        let h: BrokerHeartbeatRequestHeader = request.decode_header()?;
        let known = self.routes.write().update_broker_info_update_timestamp(
            &h.cluster_name,
            &h.broker_addr,
            self.clock.now_millis(),
        );
        debug!(broker = %h.broker_addr, known, "broker heartbeat");
        Ok(success())
    }

    fn broker_member_group(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, RequestError> {
        let h: GetBrokerMemberGroupRequestHeader = request.decode_header()?;
        let body = GetBrokerMemberGroupResponseBody {
            broker_member_group: self
                .routes
                .read()
                .broker_member_group(&h.cluster_name, &h.broker_name),
        };
        Ok(with_json_body(success(), &body, KeyStyle::Fastjson))
    }

    fn wipe_write_perm(
        &self,
        origin: Origin,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, RequestError> {
        let h: BrokerNameRequestHeader = request.decode_header()?;
        let count = self
            .routes
            .write()
            .wipe_write_perm_of_broker(&h.broker_name);
        info!(broker_name = %h.broker_name, peer = %origin.peer, count, "wipe write perm of broker");
        Ok(success().with_header(&WipeWritePermOfBrokerResponseHeader {
            wipe_topic_count: count,
        }))
    }

    fn add_write_perm(
        &self,
        origin: Origin,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, RequestError> {
        let h: BrokerNameRequestHeader = request.decode_header()?;
        let count = self.routes.write().add_write_perm_of_broker(&h.broker_name);
        info!(broker_name = %h.broker_name, peer = %origin.peer, count, "add write perm of broker");
        Ok(success().with_header(&AddWritePermOfBrokerResponseHeader {
            add_topic_count: count,
        }))
    }

    // ------------------------------------------------------------ routes and topics

    fn route_info_by_topic(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, RequestError> {
        let h: GetRouteInfoRequestHeader = request.decode_header()?;
        let (need_wait, wait_secs, order_enabled) = {
            let c = self.config.read();
            (
                c.need_wait_for_service,
                c.wait_seconds_for_service,
                c.order_message_enable,
            )
        };
        let wait_ms = i64::try_from(wait_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
        if need_wait && self.clock.now_millis().saturating_sub(self.started_at) < wait_ms {
            log_limit::limited!(warn!(code = request.code(), "name server not ready"));
            return Ok(response(ResponseCode::SystemError, "name server not ready"));
        }
        let route = self.routes.read().pickup_topic_route_data(&h.topic);
        let Some(mut route) = route else {
            return Ok(response(
                ResponseCode::TopicNotExist,
                format!(
                    "No topic route info in name server for the topic: {}{APPLY_TOPIC_TIP}",
                    h.topic
                ),
            ));
        };
        if order_enabled {
            route.order_topic_conf = self.kv.get(system::ORDER_TOPIC_CONFIG_NAMESPACE, &h.topic);
        }
        let style = route_key_style(
            request.header.version,
            h.accept_standard_json_only.unwrap_or(false),
        );
        Ok(with_json_body(success(), &route, style))
    }

    fn cluster_info(&self) -> RemotingCommand {
        let info = self.routes.read().cluster_info();
        with_json_body(success(), &info, KeyStyle::Fastjson)
    }

    fn all_topic_list(&self, origin: Origin) -> RemotingCommand {
        let enabled = self.config.read().enable_all_topic_list;
        debug!(peer = %origin.peer, enabled, "get all topic list");
        if !enabled {
            return response(ResponseCode::SystemError, "disable");
        }
        let list = self.routes.read().all_topic_list();
        with_json_body(success(), &list, KeyStyle::Fastjson)
    }

    fn topics_by_cluster(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, RequestError> {
        if !self.config.read().enable_topic_list {
            return Ok(response(ResponseCode::SystemError, "disable"));
        }
        let h: GetTopicsByClusterRequestHeader = request.decode_header()?;
        let list = self.routes.read().topics_by_cluster(&h.cluster);
        Ok(with_json_body(success(), &list, KeyStyle::Fastjson))
    }

    fn topic_list_if_enabled(
        &self,
        pick: fn(&RouteInfoManager) -> remoting::protocol::body::TopicList,
    ) -> RemotingCommand {
        if !self.config.read().enable_topic_list {
            return response(ResponseCode::SystemError, "disable");
        }
        let list = pick(&self.routes.read());
        with_json_body(success(), &list, KeyStyle::Fastjson)
    }

    fn delete_topic(&self, request: &RemotingCommand) -> Result<RemotingCommand, RequestError> {
        let h: DeleteTopicFromNamesrvRequestHeader = request.decode_header()?;
        let cluster = h.cluster_name.as_deref().filter(|c| !c.is_empty());
        info!(topic = %h.topic, cluster = ?cluster, "delete topic in name server");
        self.routes.write().delete_topic(&h.topic, cluster);
        Ok(success())
    }

    fn register_topic(&self, request: &RemotingCommand) -> Result<RemotingCommand, RequestError> {
        let h: TopicRequestHeader = request.decode_header()?;
        if !request.body.is_empty() {
            let route: TopicRouteData = fastjson::from_slice(&request.body.to_bytes())
                .map_err(RequestError::body("TopicRouteData"))?;
            self.routes
                .write()
                .register_topic(&h.topic, route.queue_datas);
        }
        Ok(success())
    }

    // ------------------------------------------------------------ config

    fn update_config(&self, origin: Origin, request: &RemotingCommand) -> RemotingCommand {
        info!(peer = %origin.peer, "update name server config");
        if request.body.is_empty() {
            return success();
        }
        let text = String::from_utf8_lossy(&request.body.to_bytes()).into_owned();
        let updates = text_to_properties(&text);
        let mut config = self.config.write();
        let black_list = config.black_list();
        if let Some(key) = updates.keys().find(|k| black_list.iter().any(|b| b == *k)) {
            log_limit::limited!(warn!(key, "refusing to update a black-listed config key"));
            return response(
                ResponseCode::NoPermission,
                "Can not update config in black list.",
            );
        }
        let next = match config.updated(&updates) {
            Ok(next) => next,
            Err(e) => return response(ResponseCode::SystemError, e.to_string()),
        };
        for (key, value) in &updates {
            info!(key, value, "config updated");
        }
        *config = next;
        self.routes.write().set_options(route_options(&config));
        let text = properties_to_text(&config.to_properties());
        let path = std::path::PathBuf::from(&config.config_store_path);
        drop(config);
        // As RocketMQ: the change is in effect; a failed persist is only logged.
        if let Err(e) = persist::write_atomic(&path, text.as_bytes()) {
            error!(error = %e, "name server config not persisted");
        }
        success()
    }

    fn get_config(&self) -> RemotingCommand {
        let text = properties_to_text(&self.config.read().to_properties());
        success().with_body(text)
    }
}

fn route_options(config: &NamesrvConfig) -> RouteOptions {
    RouteOptions {
        support_acting_master: config.support_acting_master,
        delete_topic_with_broker_registration: config.delete_topic_with_broker_registration,
    }
}

/// `UtilAll.crc32`: CRC32 masked to 31 bits, as Java brokers compute `bodyCrc32`.
fn java_crc32(bytes: &[u8]) -> i32 {
    i32::try_from(crc32fast::hash(bytes) & 0x7FFF_FFFF).unwrap_or(0)
}

impl Processor for NamesrvProcessor {
    fn process(&self, channel: &Channel, request: RemotingCommand) -> Reply {
        if let Some(guard) = &self.guard {
            if let Err(refusal) = guard.check(&request, channel.peer_addr()) {
                return Reply::Now(refusal);
            }
            if let Some(answer) = guard.handle_admin(&request) {
                return Reply::Now(answer);
            }
        }
        let origin = Origin {
            channel_id: channel.id(),
            peer: channel.peer_addr(),
        };
        let response = self.handle(origin, &request);
        if request.code() == i32::from(RequestCode::RegisterBroker) && response.code() == 0 {
            self.broker_channels
                .lock()
                .entry(channel.id())
                .or_insert_with(|| channel.clone());
        }
        Reply::Now(response)
    }
}

impl ConnectionListener for NamesrvProcessor {
    fn on_close(&self, channel: &Channel) {
        if self.broker_channels.lock().remove(&channel.id()).is_none() {
            return;
        }
        let gone = self.routes.write().on_channel_destroy(channel.id());
        if !gone.is_empty() {
            info!(peer = %channel.peer_addr(), brokers = gone.len(), "broker connection closed, brokers removed");
        }
    }
}

#[cfg(test)]
mod tests;
