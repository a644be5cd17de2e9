//! The tokio client: one connection per address, opened on first use and again
//! after it closes; sync (awaited), oneway and fire-and-forget async invocation.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::net::TcpStream;
use tracing::debug;

use crate::code::ResponseCode;
use crate::command::RemotingCommand;
use crate::connection::{self, Channel, ConnectionOptions, RequestHandler};
use crate::error::{RemotingError, Result};

/// Client settings.
#[derive(Debug, Clone, Copy)]
pub struct ClientConfig {
    /// Limit for establishing a connection (`connectTimeoutMillis`, 3 s).
    pub connect_timeout: Duration,
    /// Frame limit and idle timeout of client connections.
    pub connection: ConnectionOptions,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            connect_timeout: Duration::from_secs(3),
            connection: ConnectionOptions::default(),
        }
    }
}

/// Answers server-initiated requests when the client has nothing better to do:
/// REQUEST_CODE_NOT_SUPPORTED for two-way requests, silence for oneway ones.
#[derive(Debug, Default)]
pub struct RefuseRequests;

impl RequestHandler for RefuseRequests {
    fn on_request(&self, channel: &Channel, request: RemotingCommand) {
        if request.is_oneway() {
            return;
        }
        let code = request.code();
        let response = request.reply(
            ResponseCode::RequestCodeNotSupported,
            Some(format!(" request type {code} not supported")),
        );
        let _ = channel.send(response);
    }
}

type Slot = Arc<tokio::sync::Mutex<Option<Channel>>>;

/// Changes every request a [`RemotingClient`] sends, just before it goes out (RocketMQ's
/// `RPCHook.doBeforeRequest`): the ACL signature of an authenticated client is one.
pub trait RequestHook: Send + Sync + fmt::Debug + 'static {
    /// Adds to or rewrites `request`.
    fn before_request(&self, request: &mut RemotingCommand);
}

/// A remoting client with a connection cache keyed by `host:port`.
#[derive(Clone)]
pub struct RemotingClient {
    config: ClientConfig,
    handler: Arc<dyn RequestHandler>,
    hook: Option<Arc<dyn RequestHook>>,
    slots: Arc<Mutex<HashMap<String, Slot>>>,
}

impl fmt::Debug for RemotingClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemotingClient")
            .field("config", &self.config)
            .field("addresses", &self.slots.lock().len())
            .field("hook", &self.hook)
            .finish_non_exhaustive()
    }
}

impl Default for RemotingClient {
    fn default() -> Self {
        RemotingClient::new(ClientConfig::default())
    }
}

impl RemotingClient {
    /// A client that refuses server-initiated requests.
    #[must_use]
    pub fn new(config: ClientConfig) -> Self {
        RemotingClient::with_handler(config, Arc::new(RefuseRequests))
    }

    /// A client whose connections hand server-initiated requests to `handler`.
    #[must_use]
    pub fn with_handler(config: ClientConfig, handler: Arc<dyn RequestHandler>) -> Self {
        RemotingClient {
            config,
            handler,
            hook: None,
            slots: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The same client, passing every request it sends through `hook` first (`None`: none).
    #[must_use]
    pub fn with_hook(mut self, hook: Option<Arc<dyn RequestHook>>) -> Self {
        self.hook = hook;
        self
    }

    fn prepare(&self, request: &mut RemotingCommand) {
        if let Some(hook) = &self.hook {
            hook.before_request(request);
        }
    }

    /// The live connection to `addr`, connecting if there is none.
    ///
    /// # Errors
    /// The address is invalid, or connecting failed or timed out.
    pub async fn channel(&self, addr: &str) -> Result<Channel> {
        let slot = self
            .slots
            .lock()
            .entry(addr.to_owned())
            .or_default()
            .clone();
        // One connect at a time per address; others wait and reuse it.
        let mut guard = slot.lock().await;
        if let Some(ch) = guard.as_ref().filter(|c| !c.is_closed()) {
            return Ok(ch.clone());
        }
        let target = crate::net::resolve(addr).await?;
        let stream = tokio::time::timeout(self.config.connect_timeout, TcpStream::connect(target))
            .await
            .map_err(|_| RemotingError::ConnectTimeout {
                addr: addr.to_owned(),
                timeout: self.config.connect_timeout,
            })?
            .map_err(|source| RemotingError::Connect {
                addr: addr.to_owned(),
                source,
            })?;
        let channel = connection::spawn(
            stream,
            Arc::clone(&self.handler),
            self.config.connection,
            None,
        )?;
        debug!(addr, id = channel.id(), "connected");
        *guard = Some(channel.clone());
        Ok(channel)
    }

    /// Sends `request` to `addr` and waits for the response.
    ///
    /// # Errors
    /// Connecting failed, the connection closed, or no response within `timeout`.
    pub async fn invoke(
        &self,
        addr: &str,
        mut request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        self.prepare(&mut request);
        let channel = self.channel(addr).await?;
        let result = channel.invoke(request, timeout).await;
        if matches!(result, Err(RemotingError::ConnectionClosed(_))) {
            self.close(addr);
        }
        result
    }

    /// Sends a oneway request to `addr`.
    ///
    /// # Errors
    /// Connecting failed or the connection is closed.
    pub async fn invoke_oneway(&self, addr: &str, mut request: RemotingCommand) -> Result<()> {
        self.prepare(&mut request);
        self.channel(addr).await?.invoke_oneway(request)
    }

    /// Closes and forgets the connection to `addr`.
    pub fn close(&self, addr: &str) {
        if let Some(slot) = self.slots.lock().remove(addr) {
            if let Ok(guard) = slot.try_lock() {
                if let Some(ch) = guard.as_ref() {
                    ch.close();
                }
            }
        }
    }

    /// Closes every connection.
    pub fn close_all(&self) {
        let slots: Vec<Slot> = self.slots.lock().drain().map(|(_, s)| s).collect();
        for slot in slots {
            if let Ok(guard) = slot.try_lock() {
                if let Some(ch) = guard.as_ref() {
                    ch.close();
                }
            }
        }
    }
}
