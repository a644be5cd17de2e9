//! A small async client over [`RemotingClient`]: name server lookups with a route cache,
//! and the message calls (send, batch send, pull, query, view, consumer offsets).
//! Admin calls to brokers are in [`crate::admin`] on the same type.
//!
//! Why not a full producer/consumer: the tools need exact control over each request
//! (which broker, which queue, which flags) and plain results; rebalancing, retries and
//! heartbeats are the job of the standard clients we test against.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use remoting::client::ClientConfig as RemotingConfig;
use remoting::protocol::body::TopicList;
use remoting::protocol::broker::{
    GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader, GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader, PullMessageRequestHeader, PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader, QueryMessageRequestHeader,
    SearchOffsetRequestHeader, SearchOffsetResponseHeader, SendMessageRequestHeaderV2,
    SendMessageResponseHeader, UpdateConsumerOffsetRequestHeader, ViewMessageRequestHeader,
};
use remoting::protocol::constants::UNIQUE_KEY_QUERY;
use remoting::protocol::namesrv::{GetRouteInfoRequestHeader, GetTopicsByClusterRequestHeader};
use remoting::protocol::route::{ClusterInfo, TopicRouteData};
use remoting::{CommandHeader, RemotingClient, RemotingCommand, RequestCode, ResponseCode};
use serde::de::DeserializeOwned;

use crate::error::{Result, ToolsError, op_name};
use crate::stored::{self, StoredMessage};

/// Java's `DefaultMQAdminExt` timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Pull sysFlag bits (`PullSysFlag`).
pub use remoting::protocol::constants::pull_sys_flag as pull_flag;

/// Outcome of a pull (`PullStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullStatus {
    /// SUCCESS: messages in the body.
    Found,
    /// PULL_NOT_FOUND (19).
    NoNewMsg,
    /// PULL_RETRY_IMMEDIATELY (20).
    NoMatchedMsg,
    /// PULL_OFFSET_MOVED (21).
    OffsetIllegal,
}

impl PullStatus {
    /// Java's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            PullStatus::Found => "FOUND",
            PullStatus::NoNewMsg => "NO_NEW_MSG",
            PullStatus::NoMatchedMsg => "NO_MATCHED_MSG",
            PullStatus::OffsetIllegal => "OFFSET_ILLEGAL",
        }
    }
}

/// A pull response.
#[derive(Debug, Clone)]
pub struct PullResult {
    /// Status.
    pub status: PullStatus,
    /// Where to pull next.
    pub next_begin_offset: i64,
    /// Queue min offset.
    pub min_offset: i64,
    /// Queue max offset.
    pub max_offset: i64,
    /// Broker id to pull from next.
    pub suggest_which_broker_id: i64,
    /// Stored records (empty unless `Found`).
    pub body: Bytes,
}

impl PullResult {
    /// The stored messages of a `Found` pull from `addr`.
    ///
    /// # Errors
    /// Records that do not decode.
    pub fn messages(&self, addr: &str) -> Result<Vec<StoredMessage>> {
        decode_records(RequestCode::PullMessage.code(), addr, &self.body)
    }
}

/// A send response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendResult {
    /// SUCCESS, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE.
    pub code: i32,
    /// Offset msg id(s) (comma-joined for batches).
    pub offset_msg_id: String,
    /// Queue written.
    pub queue_id: i32,
    /// First queue offset.
    pub queue_offset: i64,
}

impl SendResult {
    /// Java's `SendStatus` name for the code.
    #[must_use]
    pub fn status(&self) -> &'static str {
        send_status(self.code)
    }
}

/// `SendStatus` of a send response code.
#[must_use]
pub fn send_status(code: i32) -> &'static str {
    match ResponseCode::try_from(code) {
        Ok(ResponseCode::Success) => "SEND_OK",
        Ok(ResponseCode::FlushDiskTimeout) => "FLUSH_DISK_TIMEOUT",
        Ok(ResponseCode::FlushSlaveTimeout) => "FLUSH_SLAVE_TIMEOUT",
        Ok(ResponseCode::SlaveNotAvailable) => "SLAVE_NOT_AVAILABLE",
        _ => "FAILED",
    }
}

/// Whether a send response code means "stored" (a SendResult, not an exception).
#[must_use]
pub fn is_send_ok(code: i32) -> bool {
    matches!(
        ResponseCode::try_from(code),
        Ok(ResponseCode::Success
            | ResponseCode::FlushDiskTimeout
            | ResponseCode::FlushSlaveTimeout
            | ResponseCode::SlaveNotAvailable)
    )
}

struct Inner {
    remoting: RemotingClient,
    namesrv: Vec<String>,
    /// Index of the name server to try first (sticky, like Java's client).
    namesrv_next: AtomicUsize,
    timeout: Duration,
    routes: Mutex<HashMap<String, Arc<TopicRouteData>>>,
}

/// The tools' client. Cheap to clone; clones share connections and the route cache.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("namesrv", &self.inner.namesrv)
            .field("timeout", &self.inner.timeout)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for the given name servers (may be empty for broker-only use).
    #[must_use]
    pub fn new(namesrv: Vec<String>, timeout: Duration) -> Self {
        Self::with_remoting(
            RemotingClient::new(RemotingConfig::default()),
            namesrv,
            timeout,
        )
    }

    /// A client over an existing remoting client (to share or separate connections).
    #[must_use]
    pub fn with_remoting(
        remoting: RemotingClient,
        namesrv: Vec<String>,
        timeout: Duration,
    ) -> Self {
        Client {
            inner: Arc::new(Inner {
                remoting,
                namesrv,
                namesrv_next: AtomicUsize::new(0),
                timeout,
                routes: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The request timeout.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// The name servers.
    #[must_use]
    pub fn namesrv(&self) -> &[String] {
        &self.inner.namesrv
    }

    /// The underlying remoting client.
    #[must_use]
    pub fn remoting(&self) -> &RemotingClient {
        &self.inner.remoting
    }

    /// Closes every connection.
    pub fn shutdown(&self) {
        self.inner.remoting.close_all();
    }

    // ------------------------------------------------------------ transport

    /// Sends `request` to `addr` and returns the response, whatever its code.
    ///
    /// # Errors
    /// Transport failures only.
    pub async fn invoke_raw(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        let code = request.code();
        self.inner
            .remoting
            .invoke(addr, request, timeout)
            .await
            .map_err(|source| ToolsError::Remoting {
                op: op_name(code),
                addr: addr.to_owned(),
                source,
            })
    }

    /// Sends `request` and requires a SUCCESS response.
    ///
    /// # Errors
    /// Transport failure or a non-success code.
    pub async fn call(&self, addr: &str, request: RemotingCommand) -> Result<RemotingCommand> {
        self.call_with_timeout(addr, request, self.inner.timeout)
            .await
    }

    /// [`call`](Self::call) with a given timeout.
    ///
    /// # Errors
    /// Transport failure or a non-success code.
    pub async fn call_with_timeout(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        let code = request.code();
        let response = self.invoke_raw(addr, request, timeout).await?;
        expect_success(code, addr, response)
    }

    /// Sends a oneway request.
    ///
    /// # Errors
    /// Connecting or writing failed.
    pub async fn oneway(&self, addr: &str, request: RemotingCommand) -> Result<()> {
        let code = request.code();
        self.inner
            .remoting
            .invoke_oneway(addr, request)
            .await
            .map_err(|source| ToolsError::Remoting {
                op: op_name(code),
                addr: addr.to_owned(),
                source,
            })
    }

    /// Sends `request` to a name server, moving on to the next one on transport
    /// failures. Returns the response whatever its code, and the address that answered.
    ///
    /// # Errors
    /// No name server configured, or none answered.
    pub async fn invoke_namesrv(
        &self,
        request: RemotingCommand,
    ) -> Result<(String, RemotingCommand)> {
        let list = &self.inner.namesrv;
        if list.is_empty() {
            return Err(ToolsError::NoNamesrv);
        }
        let start = self.inner.namesrv_next.load(Ordering::Relaxed);
        let mut last = None;
        for i in 0..list.len() {
            let index = (start + i) % list.len();
            let addr = &list[index];
            match self
                .invoke_raw(addr, request.clone(), self.inner.timeout)
                .await
            {
                Ok(response) => {
                    self.inner.namesrv_next.store(index, Ordering::Relaxed);
                    return Ok((addr.clone(), response));
                }
                Err(e) => {
                    tracing::debug!(addr = %addr, error = %e, "name server failed");
                    last = Some(e);
                }
            }
        }
        let last = last.unwrap_or(ToolsError::NoNamesrv);
        if list.len() == 1 {
            return Err(last);
        }
        Err(ToolsError::NamesrvUnavailable {
            tried: list.len(),
            last: Box::new(last),
        })
    }

    /// [`invoke_namesrv`](Self::invoke_namesrv) requiring SUCCESS.
    ///
    /// # Errors
    /// No name server answered, or it answered with an error code.
    pub async fn call_namesrv(&self, request: RemotingCommand) -> Result<RemotingCommand> {
        let code = request.code();
        let (addr, response) = self.invoke_namesrv(request).await?;
        expect_success(code, &addr, response)
    }

    /// Sends `request` to every name server; returns the failures.
    pub async fn call_every_namesrv(&self, request: &RemotingCommand) -> Vec<ToolsError> {
        let mut errors = Vec::new();
        for addr in &self.inner.namesrv {
            if let Err(e) = self.call(addr, request.clone()).await {
                errors.push(e);
            }
        }
        errors
    }

    // ------------------------------------------------------------ name server

    /// GET_ROUTEINFO_BY_TOPIC, bypassing and refreshing the cache.
    ///
    /// # Errors
    /// [`ToolsError::NoRoute`] when the name server answers TOPIC_NOT_EXIST; others as usual.
    pub async fn fetch_route(&self, topic: &str) -> Result<Arc<TopicRouteData>> {
        let header = GetRouteInfoRequestHeader {
            topic: topic.to_owned(),
            accept_standard_json_only: Some(true),
        };
        let request = RemotingCommand::request_with(RequestCode::GetRouteinfoByTopic, &header);
        let (addr, response) = self.invoke_namesrv(request).await?;
        if response.code() == ResponseCode::TopicNotExist.code() {
            self.inner.routes.lock().remove(topic);
            return Err(ToolsError::NoRoute {
                topic: topic.to_owned(),
                remark: response.remark().unwrap_or_default().trim().to_owned(),
            });
        }
        let response = expect_success(RequestCode::GetRouteinfoByTopic.code(), &addr, response)?;
        let route: TopicRouteData = parse_body(&response, &addr)?;
        let route = Arc::new(route);
        self.inner
            .routes
            .lock()
            .insert(topic.to_owned(), Arc::clone(&route));
        Ok(route)
    }

    /// The route of `topic`, from the cache when there.
    ///
    /// # Errors
    /// As [`fetch_route`](Self::fetch_route).
    pub async fn route(&self, topic: &str) -> Result<Arc<TopicRouteData>> {
        if let Some(route) = self.inner.routes.lock().get(topic) {
            return Ok(Arc::clone(route));
        }
        self.fetch_route(topic).await
    }

    /// GET_BROKER_CLUSTER_INFO.
    ///
    /// # Errors
    /// As [`call_namesrv`](Self::call_namesrv), or an unparsable body.
    pub async fn cluster_info(&self) -> Result<ClusterInfo> {
        let request = RemotingCommand::request(RequestCode::GetBrokerClusterInfo);
        let (addr, response) = self.invoke_namesrv(request).await?;
        let response = expect_success(RequestCode::GetBrokerClusterInfo.code(), &addr, response)?;
        parse_body(&response, &addr)
    }

    /// GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
    ///
    /// # Errors
    /// As [`cluster_info`](Self::cluster_info).
    pub async fn all_topics(&self) -> Result<TopicList> {
        let request = RemotingCommand::request(RequestCode::GetAllTopicListFromNameserver);
        let (addr, response) = self.invoke_namesrv(request).await?;
        let response = expect_success(
            RequestCode::GetAllTopicListFromNameserver.code(),
            &addr,
            response,
        )?;
        parse_body(&response, &addr)
    }

    /// GET_TOPICS_BY_CLUSTER.
    ///
    /// # Errors
    /// As [`cluster_info`](Self::cluster_info).
    pub async fn topics_by_cluster(&self, cluster: &str) -> Result<TopicList> {
        let header = GetTopicsByClusterRequestHeader {
            cluster: cluster.to_owned(),
        };
        let request = RemotingCommand::request_with(RequestCode::GetTopicsByCluster, &header);
        let (addr, response) = self.invoke_namesrv(request).await?;
        let response = expect_success(RequestCode::GetTopicsByCluster.code(), &addr, response)?;
        parse_body(&response, &addr)
    }

    // ------------------------------------------------------------ messages

    /// SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE when `batch`), waiting for the answer.
    /// Codes that mean "stored" give a [`SendResult`]; any other is an error.
    ///
    /// # Errors
    /// Transport failure, a refusal code, or a success response without its header.
    pub async fn send(
        &self,
        addr: &str,
        header: &SendMessageRequestHeaderV2,
        body: Bytes,
        batch: bool,
        timeout: Duration,
    ) -> Result<SendResult> {
        let code = if batch {
            RequestCode::SendBatchMessage
        } else {
            RequestCode::SendMessageV2
        };
        let request = RemotingCommand::request_with(code, header).with_body(body);
        let response = self.invoke_raw(addr, request, timeout).await?;
        send_result(code.code(), addr, &response)
    }

    /// SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE oneway.
    ///
    /// # Errors
    /// Connecting or writing failed.
    pub async fn send_oneway(
        &self,
        addr: &str,
        header: &SendMessageRequestHeaderV2,
        body: Bytes,
        batch: bool,
    ) -> Result<()> {
        let code = if batch {
            RequestCode::SendBatchMessage
        } else {
            RequestCode::SendMessageV2
        };
        let request = RemotingCommand::request_with(code, header)
            .with_body(body)
            .oneway();
        self.oneway(addr, request).await
    }

    /// PULL_MESSAGE. `timeout` must exceed the header's suspend time for long polling.
    ///
    /// # Errors
    /// Transport failure or a code other than 0/19/20/21.
    pub async fn pull(
        &self,
        addr: &str,
        header: &PullMessageRequestHeader,
        timeout: Duration,
    ) -> Result<PullResult> {
        let request = RemotingCommand::request_with(RequestCode::PullMessage, header);
        let response = self.invoke_raw(addr, request, timeout).await?;
        let status = match ResponseCode::try_from(response.code()) {
            Ok(ResponseCode::Success) => PullStatus::Found,
            Ok(ResponseCode::PullNotFound) => PullStatus::NoNewMsg,
            Ok(ResponseCode::PullRetryImmediately) => PullStatus::NoMatchedMsg,
            Ok(ResponseCode::PullOffsetMoved) => PullStatus::OffsetIllegal,
            _ => {
                return Err(response_error(
                    RequestCode::PullMessage.code(),
                    addr,
                    &response,
                ));
            }
        };
        let h: PullMessageResponseHeader =
            decode_header(&response, RequestCode::PullMessage.code(), addr)?;
        Ok(PullResult {
            status,
            next_begin_offset: h.next_begin_offset,
            min_offset: h.min_offset,
            max_offset: h.max_offset,
            suggest_which_broker_id: h.suggest_which_broker_id,
            body: response.body.to_bytes(),
        })
    }

    /// QUERY_MESSAGE to one broker; `Ok(vec![])` when it answers QUERY_NOT_FOUND.
    ///
    /// # Errors
    /// Transport failure, another error code, or records that do not decode.
    pub async fn query_message(
        &self,
        addr: &str,
        header: &QueryMessageRequestHeader,
        unique_key: bool,
    ) -> Result<Vec<StoredMessage>> {
        let mut request = RemotingCommand::request_with(RequestCode::QueryMessage, header);
        if unique_key {
            request.header.ext_fields.insert(UNIQUE_KEY_QUERY, "true");
        }
        // Java waits 3x the admin timeout for queries.
        let response = self
            .invoke_raw(addr, request, self.inner.timeout * 3)
            .await?;
        if response.code() == ResponseCode::QueryNotFound.code() {
            return Ok(Vec::new());
        }
        let response = expect_success(RequestCode::QueryMessage.code(), addr, response)?;
        decode_records(
            RequestCode::QueryMessage.code(),
            addr,
            &response.body.to_bytes(),
        )
    }

    /// VIEW_MESSAGE_BY_ID: the record at `offset` of the broker at `addr`.
    ///
    /// # Errors
    /// Transport failure, an error code, or a body that is not exactly one record.
    pub async fn view_message(
        &self,
        addr: &str,
        topic: Option<&str>,
        offset: i64,
    ) -> Result<StoredMessage> {
        let header = ViewMessageRequestHeader {
            topic: topic.map(str::to_owned),
            offset,
        };
        let request = RemotingCommand::request_with(RequestCode::ViewMessageById, &header);
        let response = self.call(addr, request).await?;
        let code = RequestCode::ViewMessageById.code();
        decode_records(code, addr, &response.body.to_bytes())?
            .into_iter()
            .next()
            .ok_or_else(|| {
                ToolsError::NotFound(format!("{addr} returned no message at offset {offset}"))
            })
    }

    /// QUERY_CONSUMER_OFFSET; `None` for QUERY_NOT_FOUND.
    ///
    /// # Errors
    /// Transport failure or another error code.
    pub async fn query_consumer_offset(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
    ) -> Result<Option<i64>> {
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id,
            set_zero_if_not_found: None,
        };
        let code = RequestCode::QueryConsumerOffset;
        let response = self
            .invoke_raw(
                addr,
                RemotingCommand::request_with(code, &header),
                self.inner.timeout,
            )
            .await?;
        if response.code() == ResponseCode::QueryNotFound.code() {
            return Ok(None);
        }
        let response = expect_success(code.code(), addr, response)?;
        let h: QueryConsumerOffsetResponseHeader = decode_header(&response, code.code(), addr)?;
        Ok(Some(h.offset))
    }

    /// UPDATE_CONSUMER_OFFSET (two-way, so the caller knows it landed).
    ///
    /// # Errors
    /// Transport failure or an error code.
    pub async fn update_consumer_offset(
        &self,
        addr: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Result<()> {
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id,
            commit_offset: offset,
        };
        self.call(
            addr,
            RemotingCommand::request_with(RequestCode::UpdateConsumerOffset, &header),
        )
        .await
        .map(drop)
    }

    /// GET_MAX_OFFSET (next offset to be written).
    ///
    /// # Errors
    /// Transport failure or an error code.
    pub async fn max_offset(&self, addr: &str, topic: &str, queue_id: i32) -> Result<i64> {
        let header = GetMaxOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            committed: None,
        };
        let code = RequestCode::GetMaxOffset;
        let response = self
            .call(addr, RemotingCommand::request_with(code, &header))
            .await?;
        let h: GetMaxOffsetResponseHeader = decode_header(&response, code.code(), addr)?;
        Ok(h.offset)
    }

    /// GET_MIN_OFFSET.
    ///
    /// # Errors
    /// Transport failure or an error code.
    pub async fn min_offset(&self, addr: &str, topic: &str, queue_id: i32) -> Result<i64> {
        let header = GetMinOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
        };
        let code = RequestCode::GetMinOffset;
        let response = self
            .call(addr, RemotingCommand::request_with(code, &header))
            .await?;
        let h: GetMinOffsetResponseHeader = decode_header(&response, code.code(), addr)?;
        Ok(h.offset)
    }

    /// SEARCH_OFFSET_BY_TIMESTAMP.
    ///
    /// # Errors
    /// Transport failure or an error code.
    pub async fn search_offset(
        &self,
        addr: &str,
        topic: &str,
        queue_id: i32,
        timestamp: i64,
    ) -> Result<i64> {
        let header = SearchOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            timestamp,
            boundary_type: None,
        };
        let code = RequestCode::SearchOffsetByTimestamp;
        let response = self
            .call(addr, RemotingCommand::request_with(code, &header))
            .await?;
        let h: SearchOffsetResponseHeader = decode_header(&response, code.code(), addr)?;
        Ok(h.offset)
    }
}

// ---------------------------------------------------------------- response helpers

/// The error for a non-success response.
#[must_use]
pub fn response_error(request_code: i32, addr: &str, response: &RemotingCommand) -> ToolsError {
    ToolsError::Response {
        op: op_name(request_code),
        addr: addr.to_owned(),
        code: response.code(),
        remark: response.remark().unwrap_or_default().to_owned(),
    }
}

/// `response` if SUCCESS, else its error.
///
/// # Errors
/// The response code is not SUCCESS.
pub fn expect_success(
    request_code: i32,
    addr: &str,
    response: RemotingCommand,
) -> Result<RemotingCommand> {
    if response.code() == ResponseCode::Success.code() {
        Ok(response)
    } else {
        Err(response_error(request_code, addr, &response))
    }
}

/// A typed response header.
///
/// # Errors
/// A required field is missing or invalid.
pub fn decode_header<H: CommandHeader>(
    response: &RemotingCommand,
    request_code: i32,
    addr: &str,
) -> Result<H> {
    response
        .decode_header::<H>()
        .map_err(|source| ToolsError::Header {
            op: op_name(request_code),
            addr: addr.to_owned(),
            source,
        })
}

/// A fastjson body (bare or object keys accepted).
///
/// # Errors
/// The body does not parse as `T`.
pub fn parse_body<T: DeserializeOwned>(response: &RemotingCommand, addr: &str) -> Result<T> {
    remoting::fastjson::from_slice(&response.body.to_bytes()).map_err(|source| ToolsError::Body {
        op: format!("response {}", response.code()),
        addr: addr.to_owned(),
        source,
    })
}

fn decode_records(request_code: i32, addr: &str, body: &[u8]) -> Result<Vec<StoredMessage>> {
    stored::decode_all(body).map_err(|source| ToolsError::Decode {
        op: op_name(request_code),
        addr: addr.to_owned(),
        source,
    })
}

/// Interprets a send response.
///
/// # Errors
/// A refusal code, or a "stored" code without the response header.
pub fn send_result(
    request_code: i32,
    addr: &str,
    response: &RemotingCommand,
) -> Result<SendResult> {
    if !is_send_ok(response.code()) {
        return Err(response_error(request_code, addr, response));
    }
    let h: SendMessageResponseHeader = decode_header(response, request_code, addr)?;
    Ok(SendResult {
        code: response.code(),
        offset_msg_id: h.msg_id,
        queue_id: h.queue_id,
        queue_offset: h.queue_offset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_results() {
        let mut ok = RemotingCommand::response(ResponseCode::FlushDiskTimeout, None);
        ok.header
            .ext_fields
            .insert("msgId", "7F000001000051AF0000000000000000");
        ok.header.ext_fields.insert("queueId", "2");
        ok.header.ext_fields.insert("queueOffset", "9");
        let r = send_result(310, "b", &ok).unwrap();
        assert_eq!(
            (r.status(), r.queue_id, r.queue_offset),
            ("FLUSH_DISK_TIMEOUT", 2, 9)
        );

        let refused = RemotingCommand::response(ResponseCode::NoPermission, Some("no".to_owned()));
        let e = send_result(310, "b:1", &refused).unwrap_err();
        assert_eq!(e.response_code(), Some(16));
        assert_eq!(e.to_string(), "SEND_MESSAGE_V2 to b:1: CODE: 16  DESC: no");

        // Stored, but no header: a broker bug the tool must report, not panic on.
        let bare = RemotingCommand::response(ResponseCode::Success, None);
        assert!(matches!(
            send_result(310, "b", &bare),
            Err(ToolsError::Header { .. })
        ));
    }
}
