//! A client of a [`RequestHandler`] in the same process: requests go straight to the
//! handler (a server's [`Dispatcher`](crate::server::Dispatcher)), with no socket and no
//! frames, and come back exactly as they would over a connection.
//!
//! Why: the gRPC endpoint's local mode (issue 17: the proxy inside `mqbroker`) must run the
//! broker's request semantics without a network hop, and through the very code a remote
//! client reaches, so that local and cluster mode cannot drift apart. A
//! [`in_process`](Channel::in_process) channel stands for the client: whatever the handler
//! sends on it — a response given at once, one completed later (a held pull, a durable
//! send), or a request of the server's own (CHECK_TRANSACTION_STATE to a producer) — comes
//! out of its queue; responses are matched to their requests by opaque, requests are handed
//! to [`LocalClient::server_requests`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

use crate::command::RemotingCommand;
use crate::connection::{Channel, RequestHandler};
use crate::error::{RemotingError, Result};

type Pending = Arc<Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>>;

/// An in-process connection to a request handler (see the module docs).
pub struct LocalClient {
    handler: Arc<dyn RequestHandler>,
    channel: Channel,
    pending: Pending,
    next_opaque: AtomicI32,
    server_requests: Mutex<Option<mpsc::UnboundedReceiver<RemotingCommand>>>,
}

impl std::fmt::Debug for LocalClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalClient")
            .field("channel", &self.channel)
            .field("pending", &self.pending.lock().len())
            .finish_non_exhaustive()
    }
}

impl LocalClient {
    /// A connection to `handler` that looks to it like one from `peer`. Must be called
    /// within a tokio runtime: a task routes what the handler sends on the connection.
    #[must_use]
    pub fn new(handler: Arc<dyn RequestHandler>, peer: SocketAddr) -> Self {
        let (channel, mut queue) = Channel::in_process(peer);
        let pending: Pending = Arc::default();
        let (requests_tx, requests_rx) = mpsc::unbounded_channel();
        let routes = Arc::clone(&pending);
        tokio::spawn(async move {
            while let Some(command) = queue.recv().await {
                if command.is_response() {
                    if let Some(waiter) = routes.lock().remove(&command.opaque()) {
                        let _ = waiter.send(command);
                    }
                } else {
                    let _ = requests_tx.send(command);
                }
            }
        });
        LocalClient {
            handler,
            channel,
            pending,
            next_opaque: AtomicI32::new(1),
            server_requests: Mutex::new(Some(requests_rx)),
        }
    }

    /// The channel the handler sees (to tell which producers and consumers are ours).
    #[must_use]
    pub fn channel(&self) -> &Channel {
        &self.channel
    }

    /// The requests the handler sends to this client (taken once).
    pub fn server_requests(&self) -> Option<mpsc::UnboundedReceiver<RemotingCommand>> {
        self.server_requests.lock().take()
    }

    /// Sends `request` and waits for its response, as
    /// [`RemotingClient::invoke`](crate::client::RemotingClient::invoke) does over a
    /// connection. The request's opaque is replaced by a fresh one.
    ///
    /// # Errors
    /// `Timeout` when no response comes within `timeout`, `ConnectionClosed` when the
    /// client is closed.
    pub async fn invoke(
        &self,
        mut request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        if self.channel.is_closed() {
            return Err(RemotingError::ConnectionClosed(self.addr()));
        }
        let opaque = self.next_opaque.fetch_add(1, Ordering::Relaxed);
        request.header.opaque = opaque;
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(opaque, tx);
        self.handler.on_request(&self.channel, request);
        // A burst of one: what the handler batches across requests is done now.
        self.handler.on_burst_end(&self.channel);
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(_)) => Err(RemotingError::ConnectionClosed(self.addr())),
            Err(_) => {
                self.pending.lock().remove(&opaque);
                Err(RemotingError::Timeout {
                    addr: self.addr(),
                    opaque,
                    timeout,
                })
            }
        }
    }

    /// Sends `request` one-way: no response is awaited.
    pub fn invoke_oneway(&self, request: RemotingCommand) {
        let mut request = request.oneway();
        request.header.opaque = self.next_opaque.fetch_add(1, Ordering::Relaxed);
        self.handler.on_request(&self.channel, request);
        self.handler.on_burst_end(&self.channel);
    }

    /// Closes the connection: the handler learns of it as of a closed socket, and
    /// waiting calls fail.
    pub fn close(&self) {
        self.channel.close();
        self.handler.on_close(&self.channel);
        self.pending.lock().clear();
    }

    fn addr(&self) -> String {
        format!("local:{}", self.channel.peer_addr())
    }
}

impl Drop for LocalClient {
    fn drop(&mut self) {
        if !self.channel.is_closed() {
            self.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::ResponseCode;
    use crate::server::{Dispatcher, Processor, Reply};

    /// Answers code 1 at once, code 2 later, code 3 through the channel (as a held pull),
    /// and code 4 never; sends a request of its own on code 5.
    struct Echo;

    impl Processor for Echo {
        fn process(&self, channel: &Channel, request: RemotingCommand) -> Reply {
            let ok = || RemotingCommand::response(ResponseCode::Success, None::<String>);
            match request.code() {
                1 => Reply::Now(ok()),
                2 => Reply::later(async move { Some(ok()) }),
                3 => {
                    let channel = channel.clone();
                    tokio::spawn(async move {
                        let r = RemotingCommand::response(
                            ResponseCode::Success,
                            Some("late".to_owned()),
                        )
                        .answering(&request);
                        let _ = channel.send_late(r);
                    });
                    Reply::Nothing
                }
                5 => {
                    let _ = channel.send(RemotingCommand::request(39));
                    Reply::Now(ok())
                }
                _ => Reply::Nothing,
            }
        }
    }

    fn client() -> LocalClient {
        let mut d = Dispatcher::default();
        d.set_default(Arc::new(Echo));
        LocalClient::new(Arc::new(d), SocketAddr::from(([127, 0, 0, 1], 4000)))
    }

    #[tokio::test]
    async fn answers_now_later_and_through_the_channel_come_back_to_their_requests() {
        let c = client();
        let t = Duration::from_secs(2);
        for code in [1, 2, 3] {
            let r = c.invoke(RemotingCommand::request(code), t).await.unwrap();
            assert!(r.is_response());
            assert_eq!(r.code(), 0, "code {code}");
        }
        let late = c.invoke(RemotingCommand::request(3), t).await.unwrap();
        assert_eq!(late.remark(), Some("late"));
        let none = c
            .invoke(RemotingCommand::request(4), Duration::from_millis(50))
            .await;
        assert!(
            matches!(none, Err(RemotingError::Timeout { .. })),
            "{none:?}"
        );
        let mut from_server = c.server_requests().unwrap();
        assert!(c.server_requests().is_none(), "taken once");
        c.invoke(RemotingCommand::request(5), t).await.unwrap();
        let request = from_server.recv().await.unwrap();
        assert_eq!(request.code(), 39);
        c.close();
        let closed = c.invoke(RemotingCommand::request(1), t).await;
        assert!(matches!(closed, Err(RemotingError::ConnectionClosed(_))));
    }
}
