//! One framed TCP connection, the same for servers and clients.
//!
//! Requests and responses interleave in both directions (a broker calls its
//! clients over their own connection), so each connection has:
//! - a read task that splits frames, completes pending requests with their
//!   responses, and queues requests;
//! - a request task that hands queued requests, in order, to a [`RequestHandler`] —
//!   so a slow request (a put that faults in a fresh page) never stops the socket
//!   from being read, as Netty's read loop never waits for RocketMQ's executors;
//! - a write task that drains an outgoing queue and writes batches of frames with
//!   vectored writes, bodies straight from their buffers (mapped CommitLog slices
//!   included) without copying large ones;
//! - a [`Channel`] handle, cheap to clone, through which anyone sends, invokes
//!   (opaque correlation with a timeout) or closes.
//!
//! A frame that can never be valid closes this connection only, with the reason
//! logged. A connection without traffic for the idle time is closed.
//!
//! An idle connection costs little: its read buffer is allocated only once the socket
//! has bytes, and given back when the connection has been quiet for a while with no
//! partial frame in it (or at once after a frame larger than the usual buffer), so
//! thousands of connected-but-quiet clients hold no 64 KiB buffers. A server counts its
//! connections with [`OpenConnections`] instead of keeping a list of them.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tracing::{Instrument, debug, debug_span, trace};

use crate::command::{Body, FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand};
use crate::error::{RemotingError, Result};
use crate::frame::FrameDecoder;

/// Single bodies up to this size are copied next to their header (one iovec is
/// cheaper than two); larger ones, and every part of a multi-part body, are written
/// from their own buffers.
const INLINE_BODY_MAX: usize = 4096;
/// At most this many bytes are gathered into one vectored write.
const WRITE_BATCH_BYTES: usize = 1 << 20;
/// At most this many buffers per vectored write (IOV_MAX is 1024 on Linux).
const WRITE_BATCH_SLICES: usize = 512;
/// Requests read but not yet handled, per connection; beyond this the read task waits
/// (TCP pushes back on the client) instead of buffering without bound.
const REQUEST_QUEUE: usize = 4096;
/// The read buffer grows in steps of this much (and starts at it).
const READ_CHUNK: usize = 64 * 1024;
/// Below this much free room the read buffer grows before the next read.
const READ_SPARE_MIN: usize = 4096;
/// An empty read buffer larger than this (it grew for a big frame) is dropped at once;
/// the next read starts a fresh [`READ_CHUNK`].
const READ_BUFFER_KEEP: usize = 2 * READ_CHUNK;
/// An empty read buffer is dropped after this long without traffic.
const READ_BUFFER_RELEASE: Duration = Duration::from_secs(5);

/// Most requests handled before [`RequestHandler::on_burst_end`] is called even though
/// more are queued.
pub const BURST_MAX: usize = 64;

/// What a connection does with the requests it receives.
pub trait RequestHandler: Send + Sync + 'static {
    /// Called, in the connection's request task and in arrival order, for every request
    /// (never for responses).
    fn on_request(&self, channel: &Channel, request: RemotingCommand);

    /// Called in the request task after a burst of requests: when every request received
    /// so far was handed to [`on_request`](Self::on_request), and at least every
    /// [`BURST_MAX`] requests under a load that never lets the queue empty. Work a
    /// handler batches across requests (one record for many acks) is done here.
    fn on_burst_end(&self, _channel: &Channel) {}

    /// Called once when the connection has closed.
    fn on_close(&self, _channel: &Channel) {}
}

/// Counts open connections without holding them. A connection started with
/// [`spawn_counted`] counts itself in, and out once its writer has written what was
/// queued and shut the socket down; a server waits for zero at shutdown
/// ([`all_closed`](Self::all_closed)). Cloning shares the count.
#[derive(Debug, Clone, Default)]
pub struct OpenConnections(Arc<OpenState>);

#[derive(Debug, Default)]
struct OpenState {
    count: AtomicUsize,
    none_left: Notify,
}

impl OpenConnections {
    /// Connections open now.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.count.load(Ordering::Acquire)
    }

    /// Whether none is open.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resolves once no connection is open.
    pub async fn all_closed(&self) {
        loop {
            // Registered before the check, so a close in between is not missed.
            let notified = self.0.none_left.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_empty() {
                return;
            }
            notified.await;
        }
    }

    /// Counts one connection in until the returned entry is dropped; hand it to
    /// [`spawn_counted`], which keeps it until the connection's writer is done.
    #[must_use]
    pub fn enter(&self) -> OpenEntry {
        self.0.count.fetch_add(1, Ordering::AcqRel);
        OpenEntry(self.clone())
    }
}

/// One counted connection (see [`OpenConnections::enter`]); counts it out when dropped.
#[derive(Debug)]
pub struct OpenEntry(OpenConnections);

impl Drop for OpenEntry {
    fn drop(&mut self) {
        if self.0.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.0.none_left.notify_waiters();
        }
    }
}

/// Settings of one connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionOptions {
    /// Frames longer than this close the connection.
    pub max_frame_len: usize,
    /// Close after this long without reading or writing anything; `None` = never.
    pub idle_timeout: Option<Duration>,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        ConnectionOptions {
            max_frame_len: crate::frame::DEFAULT_MAX_FRAME_LEN,
            idle_timeout: Some(Duration::from_secs(120)),
        }
    }
}

/// A handle to one live connection.
#[derive(Clone)]
pub struct Channel {
    inner: Arc<ChannelInner>,
}

struct ChannelInner {
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    outgoing: mpsc::UnboundedSender<RemotingCommand>,
    pending: Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>,
    next_opaque: AtomicI32,
    closed: AtomicBool,
    close_tx: watch::Sender<bool>,
    /// Milliseconds since `epoch()` of the last read or write.
    last_activity: AtomicU64,
    /// A deferred response was queued since the writer last looked (see `send_late`).
    late: AtomicBool,
    /// The server's own process on the other end ([`Channel::in_process`]): the client's
    /// waiting calls, completed by the responses sent here without a queue in between.
    in_process: Option<Arc<InProcess>>,
}

/// The calls of an in-process client waiting for their responses, by opaque.
#[derive(Debug, Default)]
pub(crate) struct InProcess {
    pub(crate) pending: Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>,
}

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("id", &self.inner.id)
            .field("peer", &self.inner.peer)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl PartialEq for Channel {
    fn eq(&self, other: &Self) -> bool {
        self.inner.id == other.inner.id
    }
}

impl Eq for Channel {}

impl std::hash::Hash for Channel {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.id.hash(state);
    }
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_millis() -> u64 {
    u64::try_from(epoch().elapsed().as_millis()).unwrap_or(u64::MAX)
}

static NEXT_CHANNEL_ID: AtomicU64 = AtomicU64::new(1);
/// Connections (of any kind) closed since the process started.
static CLOSED: AtomicU64 = AtomicU64::new(0);

/// How many connections have closed since the process started (a housekeeping task
/// compares it across ticks to notice a storm, see [`crate::heap::StormTrim`]).
#[must_use]
pub fn closed_total() -> u64 {
    CLOSED.load(Ordering::Relaxed)
}

impl Channel {
    /// A channel with no socket behind it: whatever is sent on it comes out of the
    /// returned receiver. For testing processors without a network.
    #[must_use]
    pub fn detached(peer: SocketAddr) -> (Channel, mpsc::UnboundedReceiver<RemotingCommand>) {
        Channel::without_socket(peer, None)
    }

    fn without_socket(
        peer: SocketAddr,
        in_process: Option<Arc<InProcess>>,
    ) -> (Channel, mpsc::UnboundedReceiver<RemotingCommand>) {
        let (outgoing, queue) = mpsc::unbounded_channel();
        let (close_tx, _) = watch::channel(false);
        let channel = Channel {
            inner: Arc::new(ChannelInner {
                id: NEXT_CHANNEL_ID.fetch_add(1, Ordering::Relaxed),
                peer,
                local: SocketAddr::from(([127, 0, 0, 1], 0)),
                outgoing,
                pending: Mutex::new(HashMap::new()),
                next_opaque: AtomicI32::new(1),
                closed: AtomicBool::new(false),
                close_tx,
                last_activity: AtomicU64::new(now_millis()),
                late: AtomicBool::new(false),
                in_process,
            }),
        };
        (channel, queue)
    }

    /// A [`detached`](Self::detached) channel for a client inside the server's own process
    /// (`crate::local::LocalClient`: the gRPC endpoint of a broker calling that broker).
    /// Such a client is the server itself, which checked its callers at its own door: the
    /// server's request checks (authentication, ACLs) do not apply to it again. Responses
    /// sent on it complete the client's calls in `calls` at once; the receiver gets the rest
    /// (the server's own requests).
    pub(crate) fn in_process(
        peer: SocketAddr,
        calls: Arc<InProcess>,
    ) -> (Channel, mpsc::UnboundedReceiver<RemotingCommand>) {
        Channel::without_socket(peer, Some(calls))
    }

    /// Whether the other end is the server's own process ([`in_process`](Self::in_process)).
    #[must_use]
    pub fn is_in_process(&self) -> bool {
        self.inner.in_process.is_some()
    }

    /// Process-unique id of this connection.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The remote address.
    #[must_use]
    pub fn peer_addr(&self) -> SocketAddr {
        self.inner.peer
    }

    /// The local address.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.local
    }

    /// Whether the connection has closed (or is closing).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Queues a command for writing (a response, or a request whose answer nobody awaits).
    ///
    /// # Errors
    /// `ConnectionClosed` when the connection is gone.
    pub fn send(&self, command: RemotingCommand) -> Result<()> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        if let Some(calls) = &self.inner.in_process {
            if command.is_response() {
                // Straight to the waiting call: no queue, no task in between.
                let waiter = calls.pending.lock().remove(&command.opaque());
                if let Some(waiter) = waiter {
                    let _ = waiter.send(command);
                } else {
                    debug!(
                        opaque = command.opaque(),
                        code = command.code(),
                        "in-process response for no waiting call (timed out?)"
                    );
                }
                return Ok(());
            }
        }
        self.inner
            .outgoing
            .send(command)
            .map_err(|_| self.closed_error())
    }

    /// Queues a response that was completed after its request's turn: by a group
    /// commit, a slave's ack, a long-polling wake-up. Those complete many requests at
    /// once, each in its own task; the writer, woken by the first, lets the others
    /// queue theirs before it writes, so that they share one syscall.
    ///
    /// # Errors
    /// `ConnectionClosed` when the connection is gone.
    pub fn send_late(&self, command: RemotingCommand) -> Result<()> {
        self.inner.late.store(true, Ordering::Release);
        self.send(command)
    }

    /// Whether a late response was queued since the last call.
    fn take_late(&self) -> bool {
        self.inner.late.swap(false, Ordering::AcqRel)
    }

    /// Sends a request and waits for its response.
    ///
    /// The request's opaque is replaced by a fresh one.
    ///
    /// # Errors
    /// `Timeout` when no response arrives within `timeout`, `ConnectionClosed` when the
    /// connection closes first.
    pub async fn invoke(
        &self,
        mut request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        let opaque = self.inner.next_opaque.fetch_add(1, Ordering::Relaxed);
        request.header.opaque = opaque;
        request.header.flag &= !(FLAG_RESPONSE | FLAG_ONEWAY);
        let (tx, rx) = oneshot::channel();
        self.inner.pending.lock().insert(opaque, tx);
        if let Err(e) = self.send(request) {
            self.inner.pending.lock().remove(&opaque);
            return Err(e);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(_)) => Err(self.closed_error()),
            Err(_) => {
                self.inner.pending.lock().remove(&opaque);
                Err(RemotingError::Timeout {
                    addr: self.inner.peer.to_string(),
                    opaque,
                    timeout,
                })
            }
        }
    }

    /// Sends a request that expects no response.
    ///
    /// # Errors
    /// `ConnectionClosed` when the connection is gone.
    pub fn invoke_oneway(&self, mut request: RemotingCommand) -> Result<()> {
        request.header.opaque = self.inner.next_opaque.fetch_add(1, Ordering::Relaxed);
        request.header.flag = (request.header.flag | FLAG_ONEWAY) & !FLAG_RESPONSE;
        self.send(request)
    }

    /// Closes the connection: reading stops, what is queued is still written.
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.close_tx.send_replace(true);
    }

    /// Resolves once the connection is closed.
    pub async fn closed(&self) {
        let mut rx = self.inner.close_tx.subscribe();
        // wait_for returns at once if the value is already true; an error means the
        // sender is gone, which also means closed.
        let _ = rx.wait_for(|closed| *closed).await;
    }

    fn closed_error(&self) -> RemotingError {
        RemotingError::ConnectionClosed(self.inner.peer.to_string())
    }

    fn touch(&self) {
        self.inner
            .last_activity
            .store(now_millis(), Ordering::Relaxed);
    }

    pub(crate) fn complete(&self, response: RemotingCommand) {
        let waiter = self.inner.pending.lock().remove(&response.opaque());
        if let Some(tx) = waiter {
            let _ = tx.send(response);
        } else {
            debug!(
                peer = %self.inner.peer,
                opaque = response.opaque(),
                code = response.code(),
                "response for no pending request (timed out?)"
            );
        }
    }
}

/// Starts the read and write tasks of a connected socket and returns its channel.
///
/// Must be called inside a tokio runtime.
///
/// # Errors
/// When the socket's addresses cannot be read.
pub fn spawn(
    stream: TcpStream,
    handler: Arc<dyn RequestHandler>,
    options: ConnectionOptions,
    shutdown: Option<watch::Receiver<bool>>,
) -> io::Result<Channel> {
    start(stream, None, handler, options, shutdown, None)
}

/// [`spawn`] for a server's socket accepted from `peer`: closes when `shutdown` turns
/// true, and keeps `entry` (its count in the server's [`OpenConnections`]) until its
/// writer is done.
///
/// # Errors
/// When the socket's local address cannot be read.
pub fn spawn_counted(
    stream: TcpStream,
    peer: SocketAddr,
    handler: Arc<dyn RequestHandler>,
    options: ConnectionOptions,
    shutdown: watch::Receiver<bool>,
    entry: OpenEntry,
) -> io::Result<Channel> {
    start(
        stream,
        Some(peer),
        handler,
        options,
        Some(shutdown),
        Some(entry),
    )
}

fn start(
    stream: TcpStream,
    peer: Option<SocketAddr>,
    handler: Arc<dyn RequestHandler>,
    options: ConnectionOptions,
    shutdown: Option<watch::Receiver<bool>>,
    entry: Option<OpenEntry>,
) -> io::Result<Channel> {
    let peer = match peer {
        Some(peer) => peer,
        None => stream.peer_addr()?,
    };
    let local = stream.local_addr()?;
    crate::net::tune_stream(&stream);
    let (read_half, write_half) = stream.into_split();
    let (outgoing, queue) = mpsc::unbounded_channel();
    let (close_tx, close_rx) = watch::channel(false);
    let channel = Channel {
        inner: Arc::new(ChannelInner {
            id: NEXT_CHANNEL_ID.fetch_add(1, Ordering::Relaxed),
            peer,
            local,
            outgoing,
            pending: Mutex::new(HashMap::new()),
            next_opaque: AtomicI32::new(1),
            closed: AtomicBool::new(false),
            close_tx,
            last_activity: AtomicU64::new(now_millis()),
            late: AtomicBool::new(false),
            in_process: None,
        }),
    };
    channel.touch();
    // A debug span: an enabled span lives in the subscriber's registry, whose slots (and
    // their field maps) are kept for reuse; created for every connection of a storm they
    // stay allocated, scattered among freed connection memory so that it cannot be given
    // back. Warnings carry `peer` themselves.
    let span = debug_span!("conn", id = channel.id(), %peer);
    let (requests, pending) = mpsc::channel(REQUEST_QUEUE);
    tokio::spawn(
        write_loop(channel.clone(), write_half, queue, close_rx, entry).instrument(span.clone()),
    );
    tokio::spawn(
        request_loop(channel.clone(), pending, Arc::clone(&handler)).instrument(span.clone()),
    );
    tokio::spawn(
        read_loop(
            channel.clone(),
            read_half,
            handler,
            requests,
            options,
            shutdown,
        )
        .instrument(span),
    );
    Ok(channel)
}

/// Hands requests to the handler one at a time, in arrival order, and tells it when a
/// burst ends.
async fn request_loop(
    channel: Channel,
    mut pending: mpsc::Receiver<RemotingCommand>,
    handler: Arc<dyn RequestHandler>,
) {
    while let Some(request) = pending.recv().await {
        handler.on_request(&channel, request);
        let mut in_burst = 1;
        while let Ok(next) = pending.try_recv() {
            handler.on_request(&channel, next);
            in_burst += 1;
            if in_burst == BURST_MAX {
                handler.on_burst_end(&channel);
                in_burst = 0;
            }
        }
        handler.on_burst_end(&channel);
    }
}

async fn read_loop(
    channel: Channel,
    mut socket: OwnedReadHalf,
    handler: Arc<dyn RequestHandler>,
    requests: mpsc::Sender<RemotingCommand>,
    options: ConnectionOptions,
    shutdown: Option<watch::Receiver<bool>>,
) {
    let decoder = FrameDecoder::new(options.max_frame_len);
    // Allocated at the first readable event (see the module docs).
    let mut buf = BytesMut::new();
    let mut close_rx = channel.inner.close_tx.subscribe();
    let mut shutdown = shutdown;
    let reason = 'conn: loop {
        // Take every complete frame already buffered.
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => match RemotingCommand::from_frame(frame) {
                    Ok(cmd) if cmd.is_response() => channel.complete(cmd),
                    Ok(cmd) => {
                        if requests.send(cmd).await.is_err() {
                            break 'conn "request task gone";
                        }
                    }
                    Err(e) => {
                        log_limit::limited!(
                            warn!(error = %e, peer = %channel.peer_addr(), "closing connection: malformed frame")
                        );
                        break 'conn "malformed frame";
                    }
                },
                Ok(None) => break,
                Err(e) => {
                    log_limit::limited!(
                        warn!(error = %e, peer = %channel.peer_addr(), "closing connection: malformed frame")
                    );
                    break 'conn "malformed frame";
                }
            }
        }
        if buf.is_empty() && buf.capacity() > READ_BUFFER_KEEP {
            // It grew for a big frame: do not keep that much per connection.
            buf = BytesMut::new();
        }
        let idle = idle_deadline(&channel, options.idle_timeout);
        let release = (buf.is_empty() && buf.capacity() > 0)
            .then(|| quiet_deadline(&channel, READ_BUFFER_RELEASE));
        let wake = match (idle, release) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        tokio::select! {
            read = read_some(&mut socket, &mut buf) => match read {
                Ok(0) => break "closed by peer",
                Ok(_) => channel.touch(),
                Err(e) => {
                    debug!(error = %e, "read failed");
                    break "read error";
                }
            },
            () = sleep_until_opt(wake) => {
                // Writes also count as activity: only close if nothing moved since.
                if idle_deadline(&channel, options.idle_timeout).is_some_and(|d| d <= tokio::time::Instant::now()) {
                    break "idle timeout";
                }
                if buf.is_empty() && quiet_deadline(&channel, READ_BUFFER_RELEASE) <= tokio::time::Instant::now() {
                    buf = BytesMut::new();
                }
            }
            _ = close_rx.wait_for(|c| *c) => break "closed locally",
            () = wait_shutdown(&mut shutdown) => break "server shutdown",
        }
    };
    debug!(reason, "connection closing");
    CLOSED.fetch_add(1, Ordering::Relaxed);
    channel.close();
    // Fail every request still waiting for a response.
    channel.inner.pending.lock().clear();
    handler.on_close(&channel);
}

/// Reads what the socket has into `buf`, allocating or growing it first: an unallocated
/// buffer is allocated only once bytes (or the end) have arrived. Cancel safe (a buffer
/// grown before the cancel just stays).
async fn read_some(socket: &mut OwnedReadHalf, buf: &mut BytesMut) -> io::Result<usize> {
    if buf.capacity() == 0 {
        // A peek, not `readable()`: tokio reports a fresh socket readable before anything
        // arrived. Peeking consumes nothing; 0 is the end of the stream.
        if socket.peek(&mut [0u8; 1]).await? == 0 {
            return Ok(0);
        }
    }
    if buf.capacity() - buf.len() < READ_SPARE_MIN {
        buf.reserve(READ_CHUNK);
    }
    socket.read_buf(buf).await
}

fn idle_deadline(channel: &Channel, idle: Option<Duration>) -> Option<tokio::time::Instant> {
    idle.map(|idle| quiet_deadline(channel, idle))
}

/// When the connection will have been without traffic for `quiet`.
fn quiet_deadline(channel: &Channel, quiet: Duration) -> tokio::time::Instant {
    let last = channel.inner.last_activity.load(Ordering::Relaxed);
    let elapsed = Duration::from_millis(now_millis().saturating_sub(last));
    tokio::time::Instant::now() + quiet.saturating_sub(elapsed)
}

async fn sleep_until_opt(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

async fn wait_shutdown(shutdown: &mut Option<watch::Receiver<bool>>) {
    match shutdown {
        Some(rx) => {
            if rx.wait_for(|s| *s).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

async fn write_loop(
    channel: Channel,
    mut socket: OwnedWriteHalf,
    mut queue: mpsc::UnboundedReceiver<RemotingCommand>,
    mut close_rx: watch::Receiver<bool>,
    // Dropped when this returns: the connection is counted out of its server then.
    _counted: Option<OpenEntry>,
) {
    let mut batch = WriteBatch::default();
    loop {
        let first = tokio::select! {
            cmd = queue.recv() => cmd,
            _ = close_rx.wait_for(|c| *c) => None,
        };
        let Some(first) = first else { break };
        batch.push(&first);
        drain_into(&mut batch, &mut queue);
        if channel.take_late() && batch.has_room() {
            // Late responses complete together, from tasks woken together; this
            // writer, woken by the first, would run before the rest and write each
            // in its own syscall. One yield lets the others queue theirs.
            tokio::task::yield_now().await;
            drain_into(&mut batch, &mut queue);
        }
        if let Err(e) = batch.write_to(&mut socket).await {
            debug!(error = %e, "write failed");
            channel.close();
            return;
        }
        channel.touch();
    }
    // Closing: write what was queued before the close, then shut the socket down.
    while let Ok(cmd) = queue.try_recv() {
        batch.push(&cmd);
        if !batch.has_room() {
            break;
        }
    }
    if !batch.is_empty() {
        let _ = batch.write_to(&mut socket).await;
    }
    let _ = socket.shutdown().await;
    trace!("writer done");
}

/// Moves queued commands into `batch` while it has room.
fn drain_into(batch: &mut WriteBatch, queue: &mut mpsc::UnboundedReceiver<RemotingCommand>) {
    while batch.has_room() {
        match queue.try_recv() {
            Ok(cmd) => batch.push(&cmd),
            Err(_) => break,
        }
    }
}

/// Frames gathered for one vectored write.
#[derive(Default)]
struct WriteBatch {
    /// Headers and small bodies, appended back to back.
    scratch: BytesMut,
    /// The buffers to write in order: pieces of `scratch` and large bodies.
    slices: Vec<Bytes>,
    bytes: usize,
}

impl WriteBatch {
    fn push(&mut self, cmd: &RemotingCommand) {
        if let Err(e) = cmd.encode_head(&mut self.scratch) {
            log_limit::limited!(
                warn!(error = %e, code = cmd.code(), "dropping unencodable command")
            );
            return;
        }
        // A multi-part body is made of slices handed out to be written as they are
        // (messages in the mapped CommitLog): never copied. A small single body is
        // cheaper copied next to its header than written as its own iovec.
        let inline = matches!(cmd.body, Body::One(_));
        for part in cmd.body.parts() {
            if inline && part.len() <= INLINE_BODY_MAX {
                self.scratch.extend_from_slice(part);
            } else {
                self.flush_scratch();
                self.bytes += part.len();
                self.slices.push(part.clone());
            }
        }
        self.flush_scratch();
    }

    fn flush_scratch(&mut self) {
        if !self.scratch.is_empty() {
            let piece = self.scratch.split().freeze();
            self.bytes += piece.len();
            self.slices.push(piece);
        }
    }

    fn has_room(&self) -> bool {
        self.bytes < WRITE_BATCH_BYTES && self.slices.len() < WRITE_BATCH_SLICES
    }

    fn is_empty(&self) -> bool {
        self.slices.is_empty()
    }

    async fn write_to(&mut self, socket: &mut OwnedWriteHalf) -> io::Result<()> {
        let mut index = 0;
        let mut offset = 0;
        while index < self.slices.len() {
            let io: Vec<IoSlice<'_>> = std::iter::once(IoSlice::new(&self.slices[index][offset..]))
                .chain(self.slices[index + 1..].iter().map(|b| IoSlice::new(b)))
                .take(WRITE_BATCH_SLICES)
                .collect();
            let mut written = socket.write_vectored(&io).await?;
            if written == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            while written > 0 {
                let left = self.slices[index].len() - offset;
                if written >= left {
                    written -= left;
                    index += 1;
                    offset = 0;
                } else {
                    offset += written;
                    written = 0;
                }
            }
        }
        self.slices.clear();
        self.bytes = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_written_from_their_own_buffers() {
        let parts: Vec<Bytes> = (0..3u8).map(|i| Bytes::from(vec![i; 100])).collect();
        let cmd = RemotingCommand::response(0, None).with_body(Body::Parts(parts.clone()));
        let mut batch = WriteBatch::default();
        batch.push(&cmd);
        // Header first, then exactly the parts: same memory, not copies.
        assert_eq!(batch.slices.len(), 1 + parts.len());
        for (slice, part) in batch.slices[1..].iter().zip(&parts) {
            assert_eq!(slice.as_ptr(), part.as_ptr());
        }
        // A small single body rides along with its header.
        let mut batch = WriteBatch::default();
        batch.push(&RemotingCommand::response(0, None).with_body(vec![7u8; 100]));
        assert_eq!(batch.slices.len(), 1);
    }
}
