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

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc, oneshot};

use crate::command::RemotingCommand;
use crate::connection::{Channel, InProcess, RequestHandler};
use crate::error::{RemotingError, Result};

/// An in-process connection to a request handler (see the module docs).
pub struct LocalClient {
    handler: Arc<dyn RequestHandler>,
    channel: Channel,
    calls: Arc<InProcess>,
    next_opaque: AtomicI32,
    server_requests: Mutex<Option<mpsc::UnboundedReceiver<RemotingCommand>>>,
    burst: Arc<Burst>,
}

/// When the handler's burst ends: a socket's burst is what one read brought; here it is the
/// calls made while the burst's end was pending. The first call of a burst wakes the task
/// that ends it; that task yields once (the calls running at the moment add theirs) and then
/// tells the handler. So concurrent calls share one end, as the frames of one read do (the
/// broker merges the acks of a burst into one record).
#[derive(Debug, Default)]
struct Burst {
    open: AtomicBool,
    wake: Notify,
}

impl Burst {
    fn touch(&self) {
        if !self.open.swap(true, Ordering::AcqRel) {
            self.wake.notify_one();
        }
    }
}

impl std::fmt::Debug for LocalClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalClient")
            .field("channel", &self.channel)
            .field("pending", &self.calls.pending.lock().len())
            .finish_non_exhaustive()
    }
}

impl LocalClient {
    /// A connection to `handler` that looks to it like one from `peer`. Must be called
    /// within a tokio runtime: tasks route the handler's own requests and end its bursts.
    #[must_use]
    pub fn new(handler: Arc<dyn RequestHandler>, peer: SocketAddr) -> Self {
        let calls = Arc::new(InProcess::default());
        let (channel, mut queue) = Channel::in_process(peer, Arc::clone(&calls));
        let (requests_tx, requests_rx) = mpsc::unbounded_channel();
        // Responses complete their calls as they are sent; what comes here is the handler's
        // own requests.
        tokio::spawn(async move {
            while let Some(command) = queue.recv().await {
                if !command.is_response() {
                    let _ = requests_tx.send(command);
                }
            }
        });
        let burst = Arc::new(Burst::default());
        {
            let (burst, handler, channel) =
                (Arc::clone(&burst), Arc::clone(&handler), channel.clone());
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = burst.wake.notified() => {}
                        () = channel.closed() => break,
                    }
                    tokio::task::yield_now().await;
                    burst.open.store(false, Ordering::Release);
                    handler.on_burst_end(&channel);
                }
            });
        }
        LocalClient {
            handler,
            channel,
            calls,
            next_opaque: AtomicI32::new(1),
            server_requests: Mutex::new(Some(requests_rx)),
            burst,
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
        self.calls.pending.lock().insert(opaque, tx);
        self.handler.on_request(&self.channel, request);
        self.burst.touch();
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(_)) => Err(RemotingError::ConnectionClosed(self.addr())),
            Err(_) => {
                self.calls.pending.lock().remove(&opaque);
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
        self.burst.touch();
    }

    /// Answers a request the handler sent this client (`request`'s opaque on `response`):
    /// the handler's call waiting on the channel gets it, as from a socket.
    pub fn answer(&self, request: &RemotingCommand, response: RemotingCommand) {
        self.channel.complete(response.answering(request));
    }

    /// Closes the connection: the handler learns of it as of a closed socket, and
    /// waiting calls fail.
    pub fn close(&self) {
        self.channel.close();
        self.handler.on_close(&self.channel);
        self.calls.pending.lock().clear();
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

    /// Holds every request's answer until the burst ends, as the broker holds acks, and
    /// counts the ends.
    #[derive(Default)]
    struct Batching {
        held: parking_lot::Mutex<Vec<(Channel, RemotingCommand)>>,
        ends: std::sync::atomic::AtomicUsize,
    }

    impl RequestHandler for Batching {
        fn on_request(&self, channel: &Channel, request: RemotingCommand) {
            self.held.lock().push((channel.clone(), request));
        }

        fn on_burst_end(&self, _channel: &Channel) {
            self.ends.fetch_add(1, Ordering::Relaxed);
            for (channel, request) in self.held.lock().drain(..) {
                let ok = RemotingCommand::response(ResponseCode::Success, None::<String>);
                let _ = channel.send(ok.answering(&request));
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_calls_share_a_burst_and_none_is_left_unended() {
        let handler = Arc::new(Batching::default());
        let c = Arc::new(LocalClient::new(
            handler.clone(),
            SocketAddr::from(([127, 0, 0, 1], 4001)),
        ));
        let calls: Vec<_> = (0..200)
            .map(|_| {
                let c = Arc::clone(&c);
                tokio::spawn(async move {
                    c.invoke(RemotingCommand::request(7), Duration::from_secs(5))
                        .await
                })
            })
            .collect();
        for call in calls {
            assert_eq!(
                call.await.unwrap().unwrap().code(),
                0,
                "every call answered"
            );
        }
        let ends = handler.ends.load(Ordering::Relaxed);
        assert!((1..200).contains(&ends), "{ends} burst ends for 200 calls");
        // A lone call still gets its burst ended.
        let r = c
            .invoke(RemotingCommand::request(7), Duration::from_secs(5))
            .await;
        assert_eq!(r.unwrap().code(), 0);
    }

    #[tokio::test]
    async fn a_request_of_the_handler_is_answered_through_the_client() {
        let c = client();
        let mut from_server = c.server_requests().unwrap();
        let channel = c.channel().clone();
        let asked = tokio::spawn(async move {
            channel
                .invoke(RemotingCommand::request(307), Duration::from_secs(5))
                .await
        });
        let request = from_server.recv().await.unwrap();
        c.answer(
            &request,
            RemotingCommand::response(ResponseCode::Success, Some("info".to_owned())),
        );
        let answer = asked.await.unwrap().unwrap();
        assert_eq!(answer.remark(), Some("info"));
    }
}
