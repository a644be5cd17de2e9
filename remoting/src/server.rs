//! The tokio server: accept loop, processor table keyed by request code, graceful shutdown.
//!
//! A processor is called in the connection's request task, so per-connection request
//! order is kept for everything a processor does synchronously (a put into the
//! CommitLog). Work that waits (group commit, long polling, a call to a client)
//! is returned as [`Reply::Later`] and runs in its own task.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::code::ResponseCode;
use crate::command::{FLAG_RESPONSE, RemotingCommand};
use crate::connection::{self, Channel, ConnectionOptions, OpenConnections, RequestHandler};

/// A response that is not ready yet.
pub type LaterReply = Pin<Box<dyn Future<Output = Option<RemotingCommand>> + Send + 'static>>;

/// What a processor does with a request.
pub enum Reply {
    /// Answer now.
    Now(RemotingCommand),
    /// Answer when the future resolves (`None`: no answer).
    Later(LaterReply),
    /// No answer from here (oneway handled, or the processor answers by itself later
    /// through the channel, as a held pull does).
    Nothing,
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Now(cmd) => f.debug_tuple("Now").field(&cmd.code()).finish(),
            Reply::Later(_) => f.write_str("Later"),
            Reply::Nothing => f.write_str("Nothing"),
        }
    }
}

impl Reply {
    /// Wraps a future that produces the response.
    pub fn later<F>(future: F) -> Self
    where
        F: Future<Output = Option<RemotingCommand>> + Send + 'static,
    {
        Reply::Later(Box::pin(future))
    }
}

/// Handles the requests of one or more codes.
pub trait Processor: Send + Sync + 'static {
    /// Handles one request. Responses get the request's opaque, flag and header
    /// encoding from the server; a processor only sets code, remark, extFields, body.
    fn process(&self, channel: &Channel, request: RemotingCommand) -> Reply;
}

/// Told about connections coming and going (brokers leaving the name server, clients
/// leaving a broker).
pub trait ConnectionListener: Send + Sync + 'static {
    /// A connection was accepted.
    fn on_connect(&self, _channel: &Channel) {}
    /// A connection closed.
    fn on_close(&self, _channel: &Channel) {}
    /// A burst of the connection's requests was handled
    /// ([`RequestHandler::on_burst_end`]): what a processor batched across requests is
    /// written and answered here.
    fn on_burst_end(&self, _channel: &Channel) {}
}

/// How an answered request went, for `rocketmq_rpc_latency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RpcResult {
    /// The response was queued on the connection.
    Success,
    /// A oneway request (nothing to answer).
    Oneway,
    /// The connection was gone when the response was ready.
    WriteChannelFailed,
}

impl RpcResult {
    /// RocketMQ's label value.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            RpcResult::Success => "success",
            RpcResult::Oneway => "oneway",
            RpcResult::WriteChannelFailed => "write_channel_failed",
        }
    }
}

/// One request answered: what `rocketmq_rpc_latency` records.
#[derive(Debug, Clone, Copy)]
pub struct RpcOutcome {
    /// The request's code.
    pub request_code: i32,
    /// The response's code (0 for a oneway request).
    pub response_code: i32,
    /// From the request's dispatch to its answer.
    pub elapsed: Duration,
    /// Whether the request was held for long polling before its answer.
    pub long_polling: bool,
    /// How the answer went.
    pub result: RpcResult,
}

/// Told about every request answered (the metrics of a process).
pub trait RpcObserver: Send + Sync + fmt::Debug + 'static {
    /// A request was answered.
    fn on_answered(&self, outcome: &RpcOutcome);
}

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Frames longer than this close the connection (`frameMaxLength`).
    pub max_frame_len: usize,
    /// Idle connections are closed after this long (`serverChannelMaxIdleTimeSeconds`).
    pub idle_timeout: Option<Duration>,
    /// How long shutdown waits for connections to flush.
    pub shutdown_grace: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_frame_len: crate::frame::DEFAULT_MAX_FRAME_LEN,
            idle_timeout: Some(Duration::from_secs(120)),
            shutdown_grace: Duration::from_secs(3),
        }
    }
}

/// Processor table and connection listeners; cheap to share between connections.
#[derive(Default, Clone)]
pub struct Dispatcher {
    processors: HashMap<i32, Arc<dyn Processor>>,
    default_processor: Option<Arc<dyn Processor>>,
    listeners: Vec<Arc<dyn ConnectionListener>>,
    observer: Option<Arc<dyn RpcObserver>>,
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut codes: Vec<_> = self.processors.keys().copied().collect();
        codes.sort_unstable();
        f.debug_struct("Dispatcher")
            .field("codes", &codes)
            .field("default", &self.default_processor.is_some())
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// An empty table: every request is answered REQUEST_CODE_NOT_SUPPORTED.
    #[must_use]
    pub fn new() -> Self {
        Dispatcher::default()
    }

    /// Routes the given codes to `processor`.
    pub fn register<C: Into<i32>>(
        &mut self,
        codes: impl IntoIterator<Item = C>,
        processor: &Arc<dyn Processor>,
    ) -> &mut Self {
        for code in codes {
            self.processors.insert(code.into(), Arc::clone(processor));
        }
        self
    }

    /// Routes every code without its own processor to `processor`.
    pub fn set_default(&mut self, processor: Arc<dyn Processor>) -> &mut Self {
        self.default_processor = Some(processor);
        self
    }

    /// Adds a connection listener.
    pub fn add_listener(&mut self, listener: Arc<dyn ConnectionListener>) -> &mut Self {
        self.listeners.push(listener);
        self
    }

    /// Tells `observer` about every request answered (held requests answered later by
    /// their processor are told by it: [`Self::observer`]).
    pub fn set_observer(&mut self, observer: Arc<dyn RpcObserver>) -> &mut Self {
        self.observer = Some(observer);
        self
    }

    /// The observer, if any.
    #[must_use]
    pub fn observer(&self) -> Option<&Arc<dyn RpcObserver>> {
        self.observer.as_ref()
    }

    /// Handles one request: finds its processor and sends what it answers.
    pub fn dispatch(&self, channel: &Channel, request: RemotingCommand) {
        let started = self.observer.as_ref().map(|_| Instant::now());
        let code = request.code();
        let oneway = request.is_oneway();
        let opaque = request.opaque();
        let serialize_type = request.serialize_type;
        let processor = self
            .processors
            .get(&code)
            .or(self.default_processor.as_ref());
        let reply = if let Some(p) = processor {
            p.process(channel, request)
        } else {
            log_limit::limited!(
                warn!(code, peer = %channel.peer_addr(), "request code not supported")
            );
            Reply::Now(RemotingCommand::response(
                ResponseCode::RequestCodeNotSupported,
                Some(format!(" request type {code} not supported")),
            ))
        };
        // The observer by reference: an answer now clones no Arc.
        let finish = move |observer: Option<&Arc<dyn RpcObserver>>,
                           channel: &Channel,
                           mut response: RemotingCommand,
                           late: bool| {
            let observe = |response_code, result| {
                observed(observer, started, code, response_code, result);
            };
            if oneway {
                observe(0, RpcResult::Oneway);
                return;
            }
            let response_code = response.code();
            // As `RemotingCommand::answering`, without keeping the request alive.
            response.header.opaque = opaque;
            response.header.flag |= FLAG_RESPONSE;
            response.serialize_type = serialize_type;
            let sent = if late {
                channel.send_late(response)
            } else {
                channel.send(response)
            };
            match sent {
                Ok(()) => observe(response_code, RpcResult::Success),
                Err(e) => {
                    observe(response_code, RpcResult::WriteChannelFailed);
                    debug!(error = %e, code, "response not sent");
                }
            }
        };
        match reply {
            Reply::Now(response) => finish(self.observer.as_ref(), channel, response, false),
            Reply::Later(future) => {
                let channel = channel.clone();
                let observer = self.observer.clone();
                tokio::spawn(async move {
                    if let Some(response) = future.await {
                        finish(observer.as_ref(), &channel, response, true);
                    }
                });
            }
            Reply::Nothing => {
                if oneway {
                    observed(self.observer.as_ref(), started, code, 0, RpcResult::Oneway);
                }
            }
        }
    }
}

/// Tells `observer` (if any) that request `code`, dispatched at `started`, was answered.
fn observed(
    observer: Option<&Arc<dyn RpcObserver>>,
    started: Option<Instant>,
    request_code: i32,
    response_code: i32,
    result: RpcResult,
) {
    if let (Some(o), Some(t)) = (observer, started) {
        o.on_answered(&RpcOutcome {
            request_code,
            response_code,
            elapsed: t.elapsed(),
            long_polling: false,
            result,
        });
    }
}

impl RequestHandler for Dispatcher {
    fn on_request(&self, channel: &Channel, request: RemotingCommand) {
        self.dispatch(channel, request);
    }

    fn on_close(&self, channel: &Channel) {
        for l in &self.listeners {
            l.on_close(channel);
        }
    }

    fn on_burst_end(&self, channel: &Channel) {
        for l in &self.listeners {
            l.on_burst_end(channel);
        }
    }
}

/// Serves `dispatcher` on `listener` until `shutdown` resolves, then stops accepting,
/// closes every connection (queued responses are still written) and returns once they
/// have all closed, or after [`ServerConfig::shutdown_grace`].
pub async fn run(
    listener: TcpListener,
    dispatcher: Dispatcher,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) {
    serve(
        listener,
        dispatcher,
        config,
        &OpenConnections::default(),
        shutdown,
    )
    .await;
}

/// [`run`], counting its connections in `open`. Accepting is O(1): the server keeps
/// no list of its connections. Each counts itself out as it closes, and shutdown
/// tells them all at once (one watch) and waits for the count to reach zero.
async fn serve(
    listener: TcpListener,
    dispatcher: Dispatcher,
    config: ServerConfig,
    open: &OpenConnections,
    shutdown: impl Future<Output = ()>,
) {
    let dispatcher = Arc::new(dispatcher);
    let (stop_tx, stop_rx) = watch::channel(false);
    let options = ConnectionOptions {
        max_frame_len: config.max_frame_len,
        idle_timeout: config.idle_timeout,
    };
    let local = listener
        .local_addr()
        .map_or_else(|_| "?".to_owned(), |a| a.to_string());
    info!(addr = %local, "remoting server listening");
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    // The loop only accepts; the connection is set up in its own task, so
                    // a storm of connects is taken off the listen queue as fast as it comes.
                    let entry = open.enter();
                    let dispatcher = Arc::clone(&dispatcher);
                    let stop = stop_rx.clone();
                    tokio::spawn(async move {
                        let handler: Arc<dyn RequestHandler> = dispatcher.clone();
                        match connection::spawn_counted(stream, peer, handler, options, stop, entry) {
                            Ok(channel) => {
                                debug!(%peer, id = channel.id(), "accepted");
                                for l in &dispatcher.listeners {
                                    l.on_connect(&channel);
                                }
                            }
                            Err(e) => debug!(error = %e, %peer, "accepted socket unusable"),
                        }
                    });
                }
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    log_limit::limited!(error!(error = %e, "accept failed"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            () = &mut shutdown => break,
        }
    }
    info!(addr = %local, connections = open.len(), "remoting server shutting down");
    drop(listener);
    stop_tx.send_replace(true);
    if tokio::time::timeout(config.shutdown_grace, open.all_closed())
        .await
        .is_err()
    {
        warn!(addr = %local, connections = open.len(), "connections still open after the shutdown grace");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpStream;

    const T: Duration = Duration::from_secs(5);

    async fn wait_count(open: &OpenConnections, n: usize) {
        tokio::time::timeout(T, async {
            while open.len() != n {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("open connections stayed {} (want {n})", open.len()));
    }

    /// The count follows connections as they close, with no accept in between to
    /// prune a list; shutdown closes the rest and returns once they are gone.
    #[tokio::test]
    async fn open_connections_are_counted_out_as_they_close() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let open = OpenConnections::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = {
            let open = open.clone();
            tokio::spawn(async move {
                serve(
                    listener,
                    Dispatcher::new(),
                    ServerConfig::default(),
                    &open,
                    async {
                        let _ = stopped.await;
                    },
                )
                .await;
            })
        };
        let mut clients = Vec::new();
        for _ in 0..3 {
            clients.push(TcpStream::connect(addr).await.unwrap());
        }
        wait_count(&open, 3).await;
        drop(clients.pop());
        drop(clients.pop());
        wait_count(&open, 1).await;

        stop.send(()).unwrap();
        tokio::time::timeout(T, server).await.unwrap().unwrap();
        assert_eq!(
            open.len(),
            0,
            "shutdown returned before its connections closed"
        );
        let mut last = clients.pop().unwrap();
        let mut byte = [0u8; 1];
        let n = tokio::time::timeout(T, last.read(&mut byte))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 0, "the server closed the remaining connection");
    }
}
