//! The slave side (RocketMQ's `HAClient`): one mio thread that connects to the
//! master's HA address, reports the local max offset (right after connecting, after
//! appended data, and every `haSendHeartbeatInterval`), appends received frames at
//! exactly their offset through [`HaLog::append`], and reconnects with backoff.
//!
//! Differences from RocketMQ's client, all invisible on the wire: the first report
//! goes out at once (4.9's waits up to a heartbeat interval), the housekeeping timeout
//! counts from the last byte *read* (4.9's counted from its own last write, so it
//! never fired), reconnects back off from 100 ms to 5 s instead of a flat 5 s, and
//! reports are coalesced per socket read instead of one per frame.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use parking_lot::Mutex;
use tracing::{Span, debug, error, info, info_span, warn};

use crate::config::HaConfig;
use crate::error::{FrameError, LogError};
use crate::frame::{MAX_TRANSFER_BODY, REPORT_SIZE, TRANSFER_HEADER_SIZE, TransferHeader};
use crate::frame::{parse_transfer, report_bytes};
use crate::group_transfer::now_millis;
use crate::log::HaLog;
use crate::net;
use crate::status::{ClientStatus, Divergence};

const WAKER: Token = Token(0);
const FIRST_CONNECTION: usize = 1;
/// First reconnect delay; doubles per failed attempt.
const INITIAL_BACKOFF: Duration = Duration::from_millis(100);
/// Longest reconnect delay: RocketMQ's fixed retry period.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// A connect that takes longer fails (RocketMQ's `RemotingUtil.connect` timeout).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Initial read buffer; grows to [`MAX_READ_BUF`] when a frame needs it.
const INITIAL_READ_BUF: usize = 1024 * 1024;
/// Largest read buffer: one largest frame (RocketMQ's slave buffer is 4 MiB).
const MAX_READ_BUF: usize = TRANSFER_HEADER_SIZE + MAX_TRANSFER_BODY;
/// Compact or grow the read buffer when less than this is free at its end.
const MIN_READ_SPACE: usize = 64 * 1024;
/// Reads per loop turn before timers and the stop flag get a look.
const MAX_READS_PER_TURN: usize = 64;
/// Longest poll sleep (bounds a lost wake-up).
const MAX_POLL_SLEEP: Duration = Duration::from_secs(1);
/// Sentinel for "no offset" in atomics.
const NO_OFFSET: u64 = u64::MAX;

/// Why the slave drops its master connection.
#[derive(Debug)]
enum CloseReason {
    Eof,
    Io(io::Error),
    ConnectTimeout,
    Frame(FrameError),
    /// The master sent an offset below our end: it lacks our tail.
    Divergent {
        master: u64,
        own: u64,
    },
    /// The master sent an offset beyond our end: resynchronise from our end.
    OffsetMismatch {
        master: u64,
        own: u64,
    },
    Append(LogError),
    Housekeeping {
        silent: Duration,
    },
    AddressChanged,
    Resync,
    Stopped,
    Internal(&'static str),
}

/// Where the client thread answers a resync request.
type ResyncReply = mpsc::Sender<Result<(), LogError>>;

/// What the service handle shares with the client thread.
#[derive(Debug)]
pub(crate) struct ClientShared {
    stop: AtomicBool,
    waker: Waker,
    master_addr: Mutex<Option<String>>,
    addr_changed: AtomicBool,
    resync: Mutex<Option<(u64, ResyncReply)>>,
    connected: Mutex<Option<SocketAddr>>,
    divergence: Mutex<Option<Divergence>>,
    reported: AtomicU64,
    last_report_ms: AtomicU64,
    last_read_ms: AtomicU64,
    bytes_received: AtomicU64,
    rate: crate::rate::ByteRate,
    connects: AtomicU64,
}

impl ClientShared {
    /// Asks the thread to close the connection and return.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.wake();
    }

    fn wake(&self) {
        if let Err(e) = self.waker.wake() {
            error!(error = %e, "cannot wake the ha client");
        }
    }

    /// Sets the master's HA address; a change drops the connection and reconnects.
    pub(crate) fn set_master_address(&self, addr: Option<String>) {
        let mut cur = self.master_addr.lock();
        if *cur == addr {
            return;
        }
        info!(old = ?*cur, new = ?addr, "update master ha address");
        *cur = addr;
        drop(cur);
        self.addr_changed.store(true, Ordering::Release);
        self.wake();
    }

    /// Asks the thread to cut the log back to `offset` between connections; the
    /// answer comes on the returned channel.
    pub(crate) fn request_resync(&self, offset: u64) -> mpsc::Receiver<Result<(), LogError>> {
        let (tx, rx) = mpsc::channel();
        *self.resync.lock() = Some((offset, tx));
        self.wake();
        rx
    }

    pub(crate) fn status(&self) -> ClientStatus {
        let opt = |v: u64| (v != NO_OFFSET).then_some(v);
        let ms = |v: u64| (v != 0).then_some(v);
        ClientStatus {
            master_addr: self.master_addr.lock().clone(),
            connected: *self.connected.lock(),
            reported_offset: opt(self.reported.load(Ordering::Relaxed)),
            last_report_ms: ms(self.last_report_ms.load(Ordering::Relaxed)),
            last_read_ms: ms(self.last_read_ms.load(Ordering::Relaxed)),
            bytes_received: self.bytes_received.load(Ordering::Relaxed),
            bytes_last_second: self.rate.last_second(now_millis()),
            connects: self.connects.load(Ordering::Relaxed),
            divergence: *self.divergence.lock(),
        }
    }
}

/// Received bytes not yet dispatched: `buf[start..end]`.
struct ReadBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Bytes the frame at `start` needs in total (0 = unknown).
    need: usize,
}

impl std::fmt::Debug for ReadBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadBuf")
            .field("capacity", &self.buf.len())
            .field("start", &self.start)
            .field("end", &self.end)
            .field("need", &self.need)
            .finish()
    }
}

impl ReadBuf {
    fn new() -> Self {
        ReadBuf {
            buf: vec![0; INITIAL_READ_BUF],
            start: 0,
            end: 0,
            need: 0,
        }
    }

    fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.need = 0;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Free space to read into: compacts and grows as needed. `None` only if a frame
    /// does not fit the largest buffer, which the decoder's size limit rules out.
    fn spare(&mut self) -> Option<&mut [u8]> {
        if self.buf.len() - self.end
            < MIN_READ_SPACE.max(self.need.saturating_sub(self.end - self.start))
            && self.start > 0
        {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let want = self.need.max(self.end + MIN_READ_SPACE).min(MAX_READ_BUF);
        if want > self.buf.len() {
            let new_len = want.max(self.buf.len() * 2).min(MAX_READ_BUF);
            self.buf.resize(new_len, 0);
        }
        let spare = &mut self.buf[self.end..];
        (!spare.is_empty()).then_some(spare)
    }
}

/// The connection to the master.
#[derive(Debug)]
struct MasterConn {
    stream: TcpStream,
    token: Token,
    peer: SocketAddr,
    span: Span,
    connecting: bool,
    connect_deadline: Instant,
    /// An event arrived while connecting: check whether it completed.
    check_connect: bool,
    rbuf: ReadBuf,
    out: Vec<u8>,
    out_pos: usize,
    /// The last write hit `WouldBlock`.
    blocked: bool,
    writable: bool,
    read_more: bool,
    reported: u64,
    last_read: Instant,
    last_write: Instant,
    /// At least one frame was applied on this connection.
    got_frame: bool,
}

/// The slave's HA client loop; [`run`](Self::run) on its own thread.
pub(crate) struct ClientLoop {
    poll: Poll,
    log: Arc<dyn HaLog>,
    heartbeat: Duration,
    housekeeping: Duration,
    shared: Arc<ClientShared>,
    conn: Option<MasterConn>,
    next_token: usize,
    backoff: Duration,
    retry_at: Instant,
    busy: bool,
}

impl ClientLoop {
    /// Prepares the client for `master_addr` (which may be set later).
    pub(crate) fn new(
        config: &HaConfig,
        log: Arc<dyn HaLog>,
        master_addr: Option<String>,
    ) -> io::Result<(Self, Arc<ClientShared>)> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        let shared = Arc::new(ClientShared {
            stop: AtomicBool::new(false),
            waker,
            master_addr: Mutex::new(master_addr),
            addr_changed: AtomicBool::new(false),
            resync: Mutex::new(None),
            connected: Mutex::new(None),
            divergence: Mutex::new(None),
            reported: AtomicU64::new(NO_OFFSET),
            last_report_ms: AtomicU64::new(0),
            last_read_ms: AtomicU64::new(0),
            bytes_received: AtomicU64::new(0),
            rate: crate::rate::ByteRate::default(),
            connects: AtomicU64::new(0),
        });
        let this = ClientLoop {
            poll,
            log,
            heartbeat: config.heartbeat_interval(),
            housekeeping: config.housekeeping_interval(),
            shared: Arc::clone(&shared),
            conn: None,
            next_token: FIRST_CONNECTION,
            backoff: INITIAL_BACKOFF,
            retry_at: Instant::now(),
            busy: false,
        };
        Ok((this, shared))
    }

    /// Runs until [`ClientShared::stop`].
    pub(crate) fn run(mut self) {
        let span = info_span!("ha", service = "ha-client");
        let _e = span.enter();
        info!(master = ?*self.shared.master_addr.lock(), "ha client started");
        let mut events = Events::with_capacity(16);
        while !self.shared.stop.load(Ordering::Acquire) {
            let now = Instant::now();
            self.handle_resync(now);
            if self.shared.addr_changed.swap(false, Ordering::AcqRel) {
                self.close(CloseReason::AddressChanged, now);
                self.backoff = INITIAL_BACKOFF;
                self.retry_at = now;
            }
            if self.conn.is_none() && now >= self.retry_at {
                self.connect(now);
            }
            let timeout = self.timeout(Instant::now());
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    error!(error = %e, "ha client poll failed; replication stops");
                    break;
                }
            }
            self.busy = false;
            for ev in &events {
                let Some(conn) = self.conn.as_mut() else {
                    continue;
                };
                if ev.token() != conn.token {
                    continue;
                }
                if conn.connecting {
                    conn.check_connect = true;
                    continue;
                }
                if ev.is_writable() {
                    conn.blocked = false;
                }
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    conn.read_more = true;
                }
            }
            self.service(Instant::now());
        }
        self.close(CloseReason::Stopped, Instant::now());
        if let Some((_, reply)) = self.shared.resync.lock().take() {
            let _ = reply.send(Err(LogError::store(io::Error::other("ha client stopped"))));
        }
        info!("ha client stopped");
    }

    fn timeout(&self, now: Instant) -> Duration {
        if self.busy {
            return Duration::ZERO;
        }
        let at = match &self.conn {
            None => self.retry_at.min(now + MAX_POLL_SLEEP),
            Some(c) if c.connecting => c.connect_deadline.min(now + MAX_POLL_SLEEP),
            Some(c) => (c.last_read + self.housekeeping)
                .min(c.last_write + self.heartbeat)
                .min(now + MAX_POLL_SLEEP),
        };
        at.saturating_duration_since(now)
    }

    fn handle_resync(&mut self, now: Instant) {
        let Some((offset, reply)) = self.shared.resync.lock().take() else {
            return;
        };
        self.close(CloseReason::Resync, now);
        let result = self.log.truncate(offset);
        match &result {
            Ok(()) => {
                info!(offset, "local tail cut; following the master from there");
                *self.shared.divergence.lock() = None;
            }
            Err(e) => error!(offset, error = %e, "cannot cut the local tail"),
        }
        let _ = reply.send(result);
        self.backoff = INITIAL_BACKOFF;
        self.retry_at = now;
    }

    fn schedule_retry(&mut self, now: Instant) {
        self.retry_at = now + self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    fn connect(&mut self, now: Instant) {
        let Some(addr) = self.shared.master_addr.lock().clone() else {
            // Nothing to follow yet; an address update wakes us.
            self.retry_at = now + MAX_POLL_SLEEP;
            return;
        };
        let peer = match resolve(&addr) {
            Ok(p) => p,
            Err(e) => {
                warn!(master = %addr, error = %e, "cannot resolve the master ha address");
                self.schedule_retry(now);
                return;
            }
        };
        let span = info_span!("ha_conn", peer = %peer, role = "slave");
        let result = TcpStream::connect(peer).and_then(|mut stream| {
            let token = Token(self.next_token);
            self.next_token += 1;
            self.poll.registry().register(
                &mut stream,
                token,
                Interest::READABLE | Interest::WRITABLE,
            )?;
            Ok((stream, token))
        });
        match result {
            Ok((stream, token)) => {
                span.in_scope(|| debug!("connecting to master"));
                self.conn = Some(MasterConn {
                    stream,
                    token,
                    peer,
                    span,
                    connecting: true,
                    connect_deadline: now + CONNECT_TIMEOUT,
                    check_connect: false,
                    rbuf: ReadBuf::new(),
                    out: Vec::with_capacity(2 * REPORT_SIZE),
                    out_pos: 0,
                    blocked: false,
                    writable: true,
                    read_more: false,
                    reported: 0,
                    last_read: now,
                    last_write: now,
                    got_frame: false,
                });
            }
            Err(e) => {
                span.in_scope(|| warn!(error = %e, "cannot connect to master"));
                self.schedule_retry(now);
            }
        }
    }

    fn service(&mut self, now: Instant) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        let span = conn.span.clone();
        let _e = span.enter();
        let res = service_conn(
            conn,
            &*self.log,
            &self.shared,
            self.poll.registry(),
            self.heartbeat,
            self.housekeeping,
            now,
        );
        match res {
            Ok(busy) => self.busy |= busy,
            Err(reason) => self.close(reason, now),
        }
    }

    fn close(&mut self, reason: CloseReason, now: Instant) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let span = conn.span.clone();
        let _e = span.enter();
        match &reason {
            CloseReason::Divergent { master, own } => {
                error!(
                    own_max = own,
                    master_offset = master,
                    "master lacks this slave's tail; cut it (resync) to follow this master"
                );
                *self.shared.divergence.lock() = Some(Divergence {
                    own_max: *own,
                    master_offset: *master,
                    at_ms: now_millis(),
                });
            }
            CloseReason::OffsetMismatch { master, own } => warn!(
                own_max = own,
                master_offset = master,
                "master pushed an offset other than our max; resynchronising"
            ),
            CloseReason::Append(LogError::OffsetMismatch { requested, actual }) => warn!(
                requested,
                actual, "log refused replicated bytes at that offset; resynchronising"
            ),
            CloseReason::Append(e) => error!(error = %e, "cannot append replicated bytes"),
            CloseReason::Internal(what) => error!(what, "ha client internal error"),
            CloseReason::Eof => info!("master closed the connection"),
            CloseReason::Stopped | CloseReason::AddressChanged | CloseReason::Resync => {
                info!(reason = ?reason, "closing master connection");
            }
            CloseReason::Io(e) => warn!(error = %e, "master connection failed"),
            CloseReason::ConnectTimeout => warn!("connect to master timed out"),
            CloseReason::Frame(e) => warn!(error = %e, "invalid frame from master"),
            CloseReason::Housekeeping { silent } => warn!(
                silent_ms = u64::try_from(silent.as_millis()).unwrap_or(u64::MAX),
                "nothing from the master for the housekeeping interval"
            ),
        }
        if let Err(e) = self.poll.registry().deregister(&mut conn.stream) {
            debug!(error = %e, "deregister failed");
        }
        *self.shared.connected.lock() = None;
        if conn.got_frame {
            self.backoff = INITIAL_BACKOFF;
        }
        self.schedule_retry(now);
    }
}

fn resolve(addr: &str) -> io::Result<SocketAddr> {
    addr.trim()
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))
}

/// One loop turn on the master connection. Returns whether it wants another turn
/// at once.
fn service_conn(
    conn: &mut MasterConn,
    log: &dyn HaLog,
    shared: &ClientShared,
    registry: &Registry,
    heartbeat: Duration,
    housekeeping: Duration,
    now: Instant,
) -> Result<bool, CloseReason> {
    let mut busy = false;
    if conn.connecting {
        if conn.check_connect {
            conn.check_connect = false;
            if finish_connect(conn)? {
                established(conn, log, shared, registry, now)?;
            }
        }
        if conn.connecting {
            if now >= conn.connect_deadline {
                return Err(CloseReason::ConnectTimeout);
            }
            return Ok(false);
        }
    }
    if conn.read_more {
        conn.read_more = false;
        let mut reads = 0;
        loop {
            let Some(space) = conn.rbuf.spare() else {
                return Err(CloseReason::Internal("read buffer full"));
            };
            match conn.stream.read(space) {
                Ok(0) => return Err(CloseReason::Eof),
                Ok(n) => {
                    conn.rbuf.end += n;
                    conn.last_read = now;
                    let now_ms = now_millis();
                    shared.last_read_ms.store(now_ms, Ordering::Relaxed);
                    shared.bytes_received.fetch_add(n as u64, Ordering::Relaxed);
                    shared.rate.add(n as u64, now_ms);
                    if dispatch(&mut conn.rbuf, log)? {
                        conn.got_frame = true;
                        let max = log.max_offset();
                        if max > conn.reported {
                            queue_report(conn, shared, max, now)?;
                        }
                    }
                    reads += 1;
                    if reads >= MAX_READS_PER_TURN {
                        conn.read_more = true;
                        busy = true;
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(CloseReason::Io(e)),
            }
        }
    }
    let silent = now.saturating_duration_since(conn.last_read);
    if silent >= housekeeping {
        return Err(CloseReason::Housekeeping { silent });
    }
    if now.saturating_duration_since(conn.last_write) >= heartbeat {
        queue_report(conn, shared, log.max_offset(), now)?;
    }
    flush(conn, registry)?;
    Ok(busy)
}

/// Whether a non-blocking connect completed (mio: writable, no error, and a peer).
fn finish_connect(conn: &mut MasterConn) -> Result<bool, CloseReason> {
    match conn.stream.take_error() {
        Ok(None) => {}
        Ok(Some(e)) | Err(e) => return Err(CloseReason::Io(e)),
    }
    match conn.stream.peer_addr() {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
        Err(e) => Err(CloseReason::Io(e)),
    }
}

fn established(
    conn: &mut MasterConn,
    log: &dyn HaLog,
    shared: &ClientShared,
    registry: &Registry,
    now: Instant,
) -> Result<(), CloseReason> {
    conn.connecting = false;
    conn.read_more = true;
    conn.last_read = now;
    net::configure(&conn.stream);
    *shared.connected.lock() = Some(conn.peer);
    shared.connects.fetch_add(1, Ordering::Relaxed);
    let max = log.max_offset();
    info!(offset = max, "connected to master; reporting offset");
    // The first report is the transfer start (0 = an empty log: the master starts
    // at its last file).
    queue_report(conn, shared, max, now)?;
    flush(conn, registry)
}

/// Appends every complete frame in `rbuf`; returns whether data was appended.
fn dispatch(rbuf: &mut ReadBuf, log: &dyn HaLog) -> Result<bool, CloseReason> {
    let mut appended = false;
    loop {
        let src = rbuf.data();
        let Some((header, body)) =
            parse_transfer(src, MAX_TRANSFER_BODY).map_err(CloseReason::Frame)?
        else {
            if let Ok(Some(h)) = TransferHeader::decode(src, MAX_TRANSFER_BODY) {
                rbuf.need = TRANSFER_HEADER_SIZE + h.size();
            }
            return Ok(appended);
        };
        apply(log, header, body)?;
        appended |= !body.is_empty();
        let used = TRANSFER_HEADER_SIZE + body.len();
        rbuf.consume(used);
    }
}

/// Checks a frame against the local log and appends its body.
fn apply(log: &dyn HaLog, header: TransferHeader, body: &[u8]) -> Result<(), CloseReason> {
    let own = log.max_offset();
    let master = header.offset();
    // RocketMQ's rule: an empty slave takes whatever the master starts with;
    // otherwise every frame, heartbeats included, must start at our end.
    if own != 0 && master != own {
        return Err(if master < own {
            CloseReason::Divergent { master, own }
        } else {
            CloseReason::OffsetMismatch { master, own }
        });
    }
    if body.is_empty() {
        return Ok(());
    }
    log.append(master, body).map_err(CloseReason::Append)
}

/// Queues a report of `offset`, replacing reports not yet started (the master only
/// uses the last one) and keeping a partly written one whole.
fn queue_report(
    conn: &mut MasterConn,
    shared: &ClientShared,
    offset: u64,
    now: Instant,
) -> Result<(), CloseReason> {
    let bytes = report_bytes(offset).map_err(CloseReason::Frame)?;
    let partial = (conn.out.len() - conn.out_pos) % REPORT_SIZE;
    conn.out.drain(..conn.out_pos);
    conn.out_pos = 0;
    conn.out.truncate(partial);
    conn.out.extend_from_slice(&bytes);
    conn.reported = offset;
    conn.last_write = now;
    shared.reported.store(offset, Ordering::Relaxed);
    shared.last_report_ms.store(now_millis(), Ordering::Relaxed);
    Ok(())
}

/// Writes queued reports until done or `WouldBlock`; WRITABLE interest only while
/// some remain.
fn flush(conn: &mut MasterConn, registry: &Registry) -> Result<(), CloseReason> {
    while !conn.blocked && conn.out_pos < conn.out.len() {
        match conn.stream.write(&conn.out[conn.out_pos..]) {
            Ok(0) => return Err(CloseReason::Io(io::ErrorKind::WriteZero.into())),
            Ok(n) => conn.out_pos += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => conn.blocked = true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(CloseReason::Io(e)),
        }
    }
    if conn.out_pos == conn.out.len() {
        conn.out.clear();
        conn.out_pos = 0;
    }
    let want = conn.out_pos < conn.out.len();
    if want != conn.writable {
        let interest = if want {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        registry
            .reregister(&mut conn.stream, conn.token, interest)
            .map_err(CloseReason::Io)?;
        conn.writable = want;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::encode_transfer;
    use crate::test_util::MemLog;
    use bytes::BytesMut;

    #[test]
    fn dispatch_appends_at_exact_offsets_and_checks_them() {
        let log = MemLog::new(1024);
        let mut rbuf = ReadBuf::new();
        let mut wire = BytesMut::new();
        encode_transfer(0, b"abc", &mut wire).unwrap();
        encode_transfer(3, b"", &mut wire).unwrap();
        encode_transfer(3, b"defg", &mut wire).unwrap();
        encode_transfer(7, b"h", &mut wire).unwrap();
        // Feed all but the last byte: three frames apply, the fourth waits.
        let n = wire.len() - 1;
        rbuf.spare().unwrap()[..n].copy_from_slice(&wire[..n]);
        rbuf.end += n;
        assert!(dispatch(&mut rbuf, &log).unwrap());
        assert_eq!(log.bytes(0, log.max_offset()), b"abcdefg");
        assert_eq!(rbuf.data().len(), TRANSFER_HEADER_SIZE);
        assert_eq!(rbuf.need, TRANSFER_HEADER_SIZE + 1);
        rbuf.spare().unwrap()[0] = wire[n];
        rbuf.end += 1;
        assert!(dispatch(&mut rbuf, &log).unwrap());
        assert_eq!(log.bytes(0, log.max_offset()), b"abcdefgh");
        assert!(rbuf.data().is_empty());

        // Beyond our end: resync; below it: divergence.
        for (off, below) in [(20u64, false), (5, true)] {
            let mut wire = BytesMut::new();
            encode_transfer(off, b"x", &mut wire).unwrap();
            rbuf.spare().unwrap()[..wire.len()].copy_from_slice(&wire);
            rbuf.end += wire.len();
            match dispatch(&mut rbuf, &log) {
                Err(CloseReason::Divergent { master, own }) if below => {
                    assert_eq!((master, own), (5, 8));
                }
                Err(CloseReason::OffsetMismatch { master, own }) if !below => {
                    assert_eq!((master, own), (20, 8));
                }
                other => panic!("unexpected {other:?}"),
            }
            rbuf = ReadBuf::new();
        }
    }

    #[test]
    fn read_buffer_grows_for_large_frames_and_compacts() {
        let mut rbuf = ReadBuf::new();
        rbuf.end = INITIAL_READ_BUF - 10;
        rbuf.start = INITIAL_READ_BUF - 20;
        rbuf.need = 2 * INITIAL_READ_BUF;
        let len = rbuf.spare().unwrap().len();
        assert_eq!(rbuf.start, 0, "compacted");
        assert_eq!(rbuf.end, 10);
        assert!(len + 10 >= 2 * INITIAL_READ_BUF);
        rbuf.need = MAX_READ_BUF;
        assert!(rbuf.spare().is_some());
        assert_eq!(rbuf.buf.len(), MAX_READ_BUF);
    }
}
