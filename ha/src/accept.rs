//! The master's event loop (RocketMQ's `AcceptSocketService` plus the read and
//! write service threads of every `HAConnection`, on one mio thread): accepts slaves
//! on `haListenPort`, reads their reports until `WouldBlock`, pushes CommitLog bytes
//! with `WRITABLE` interest registered only while output is pending, and, when every
//! slave has caught up, sleeps on the log's growth future instead of polling the log.
//!
//! Waking on new data: the loop polls [`HaLog::wait_beyond`] with a task waker that
//! fires this loop's `mio::Waker`. Over the store that is a wait on the CommitLog's
//! readable offset, so a put wakes the loop once (one eventfd write) and the caught-up
//! slaves get the bytes within microseconds; an idle master makes no syscalls but the
//! heartbeat and housekeeping timers (the poll timeout is capped at 1 s only as a
//! safety net against a lost wake-up).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Wake};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use tracing::{Span, debug, debug_span, error, info, info_span};

use crate::config::HaConfig;
use crate::connection::{CloseReason, Connection, Fill};
use crate::frame::TransferHeader;
use crate::group_transfer::{GroupTransfer, SlaveRegistration};
use crate::log::{GrowthWait, HaLog};
use crate::net;

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
const FIRST_CONNECTION: usize = 2;
/// Longest poll sleep; every wake-up has its own source, this only bounds a lost one.
const MAX_POLL_SLEEP: Duration = Duration::from_secs(1);
/// Reads per connection per loop turn before other connections get their turn.
const MAX_READS_PER_TURN: usize = 64;
/// Fill-and-write rounds per connection per loop turn (8 frames each).
const MAX_WRITE_ROUNDS: usize = 16;
/// Pause before accepting again after `accept` failed (EMFILE and the like).
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// Bytes drained from a refused slave before closing, so the close sends FIN
/// after our last frame instead of a reset that could drop it.
const DRAIN_BEFORE_CLOSE: usize = 64 * 1024;
/// A slot not read for this long is read on the next sweep whether or not epoll said it
/// was readable (see [`MasterLoop::probe`]).
const PROBE_SILENT: Duration = Duration::from_secs(2);

/// Slave connections closed by every master loop of the process since it started.
static CLOSED: AtomicU64 = AtomicU64::new(0);

/// How many HA connections the master side has closed since the process started (the
/// broker's housekeeping notices a storm on the HA port from it).
#[must_use]
pub fn closed_connections() -> u64 {
    CLOSED.load(Ordering::Relaxed)
}

/// What the service handle shares with the loop thread.
#[derive(Debug)]
pub(crate) struct MasterShared {
    stop: AtomicBool,
    waker: Arc<Waker>,
}

impl MasterShared {
    /// Asks the loop to close every connection and return.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        if let Err(e) = self.waker.wake() {
            error!(error = %e, "cannot wake the ha master loop");
        }
    }
}

/// Wakes the mio loop from a `std::task::Waker` (the log's growth future).
struct LoopWake(Arc<Waker>);

impl Wake for LoopWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Err(e) = self.0.wake() {
            debug!(error = %e, "cannot wake the ha master loop");
        }
    }
}

struct Slot {
    stream: TcpStream,
    peer: SocketAddr,
    conn: Connection,
    slave: SlaveRegistration,
    span: Span,
    /// The last write hit `WouldBlock`; wait for a WRITABLE event.
    blocked: bool,
    /// WRITABLE interest is registered.
    writable: bool,
    /// Bytes may be waiting to be read.
    read_more: bool,
}

/// The master's HA event loop; [`run`](Self::run) on its own thread.
pub(crate) struct MasterLoop {
    poll: Poll,
    listener: TcpListener,
    local_addr: SocketAddr,
    slots: HashMap<Token, Slot>,
    next_token: usize,
    log: Arc<dyn HaLog>,
    config: HaConfig,
    group: Arc<GroupTransfer>,
    shared: Arc<MasterShared>,
    task_waker: std::task::Waker,
    growth: Option<(u64, GrowthWait)>,
    accept_retry: Option<Instant>,
    /// Slots with socket events (or new) this turn: serviced without a sweep of all.
    dirty: Vec<Token>,
    /// Slots that asked for another turn at once.
    again: Vec<Token>,
    /// Every slot needs a turn (the log grew, or a deadline is due).
    sweep: bool,
    /// The earliest deadline of any slot, as of its last service; a sweep then.
    next_sweep: Instant,
}

impl MasterLoop {
    /// Prepares the loop over a bound listener.
    pub(crate) fn new(
        listener: std::net::TcpListener,
        log: Arc<dyn HaLog>,
        config: HaConfig,
        group: Arc<GroupTransfer>,
    ) -> io::Result<(Self, Arc<MasterShared>)> {
        listener.set_nonblocking(true)?;
        let local_addr = listener.local_addr()?;
        let mut listener = TcpListener::from_std(listener);
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let shared = Arc::new(MasterShared {
            stop: AtomicBool::new(false),
            waker: Arc::clone(&waker),
        });
        let task_waker = std::task::Waker::from(Arc::new(LoopWake(waker)));
        let this = MasterLoop {
            poll,
            listener,
            local_addr,
            slots: HashMap::new(),
            next_token: FIRST_CONNECTION,
            log,
            config,
            group,
            shared: Arc::clone(&shared),
            task_waker,
            growth: None,
            accept_retry: None,
            dirty: Vec::new(),
            again: Vec::new(),
            sweep: false,
            next_sweep: Instant::now() + MAX_POLL_SLEEP,
        };
        Ok((this, shared))
    }

    /// The bound listen address.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Runs until [`MasterShared::stop`].
    pub(crate) fn run(mut self) {
        let span = info_span!("ha", service = "ha-master", listen = %self.local_addr);
        let _e = span.enter();
        info!("ha master started");
        let mut events = Events::with_capacity(128);
        while !self.shared.stop.load(Ordering::Acquire) {
            let timeout = self.timeout(Instant::now());
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    error!(error = %e, "ha master poll failed; replication stops");
                    break;
                }
            }
            // Only slots with events are serviced, unless the log grew or a deadline is
            // due: a storm of connections must not cost a walk over all of them per event.
            self.dirty.append(&mut self.again);
            for ev in &events {
                match ev.token() {
                    LISTENER => {
                        self.accept();
                    }
                    WAKER => {}
                    token => {
                        if let Some(slot) = self.slots.get_mut(&token) {
                            if ev.is_writable() {
                                slot.blocked = false;
                            }
                            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                                slot.read_more = true;
                            }
                            self.dirty.push(token);
                        }
                    }
                }
            }
            if self.accept_retry.is_some_and(|t| Instant::now() >= t) {
                self.accept_retry = None;
                self.accept();
            }
            self.poll_growth();
            if Instant::now() >= self.next_sweep {
                self.sweep = true;
                self.probe();
            }
            let (starved, swept) = self.service();
            self.arm_growth(starved, swept);
        }
        let tokens: Vec<Token> = self.slots.keys().copied().collect();
        for t in tokens {
            self.close(t, CloseReason::Stopped);
        }
        info!("ha master stopped");
    }

    fn timeout(&self, now: Instant) -> Duration {
        if self.sweep || !self.again.is_empty() {
            return Duration::ZERO;
        }
        let mut at = self.next_sweep;
        if let Some(t) = self.accept_retry {
            at = at.min(t);
        }
        at.saturating_duration_since(now)
    }

    /// Accepts every pending connection; how many there were.
    fn accept(&mut self) -> usize {
        let mut accepted = 0;
        loop {
            match self.listener.accept() {
                Ok((mut stream, peer)) => {
                    net::configure(&stream);
                    let token = Token(self.next_token);
                    self.next_token += 1;
                    // A debug span: enabled spans keep a registry slot each, which a storm of
                    // connections would leave allocated; the log lines name the peer.
                    let span = debug_span!("ha_conn", peer = %peer, role = "master");
                    let _e = span.enter();
                    if let Err(e) =
                        self.poll
                            .registry()
                            .register(&mut stream, token, Interest::READABLE)
                    {
                        log_limit::limited!(
                            warn!(error = %e, %peer, "cannot register slave connection")
                        );
                        continue;
                    }
                    log_limit::limited!(info!(%peer, "slave connected"));
                    accepted += 1;
                    self.dirty.push(token);
                    let slot = Slot {
                        stream,
                        peer,
                        conn: Connection::new(Instant::now(), &self.config),
                        slave: self.group.register_slave(peer),
                        span: span.clone(),
                        blocked: false,
                        writable: false,
                        read_more: true,
                    };
                    self.slots.insert(token, slot);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return accepted,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    log_limit::limited!(warn!(error = %e, "accept failed; retrying shortly"));
                    self.accept_retry = Some(Instant::now() + ACCEPT_RETRY);
                    return accepted;
                }
            }
        }
    }

    /// Once a sweep: accepts and reads without waiting for epoll to say so. The loop
    /// is edge-triggered, so a readiness notification that never arrives would leave
    /// the HA port not accepting and a slave's reports unread until it is closed as
    /// silent (a full test run once saw exactly that: a flood of connections never
    /// accepted by a loop that still kept its timers; never reproduced since). One
    /// accept and a read per silent slot per second bound such a loss to a second;
    /// finding anything this way is logged, as it means a notification was lost.
    fn probe(&mut self) {
        let found = self.accept();
        if found > 0 {
            log_limit::limited!(warn!(
                accepted = found,
                "ha master accepted connections epoll had not announced"
            ));
        }
        let now = Instant::now();
        for slot in self.slots.values_mut() {
            if !slot.read_more && slot.conn.silent_for(now) >= PROBE_SILENT {
                slot.read_more = true;
            }
        }
    }

    /// Services every slot on a sweep, else the dirty ones; returns the lowest offset a
    /// serviced slot is starved at (caught up, waiting for the log to grow), and whether
    /// that was every slot.
    fn service(&mut self) -> (Option<u64>, bool) {
        let now = Instant::now();
        let registry = self.poll.registry();
        let log = &*self.log;
        let mut closing = Vec::new();
        let mut starved: Option<u64> = None;
        let mut one = |token: Token, slot: &mut Slot, again: &mut Vec<Token>| {
            let span = slot.span.clone();
            let _e = span.enter();
            match service_slot(token, slot, log, registry, now) {
                Ok(busy) => {
                    if busy {
                        again.push(token);
                    }
                    if let Some(at) = slot.conn.starved_at() {
                        starved = Some(starved.map_or(at, |s| s.min(at)));
                    }
                    Some(slot.conn.next_deadline())
                }
                Err(reason) => {
                    closing.push((token, reason));
                    None
                }
            }
        };
        let swept = std::mem::take(&mut self.sweep);
        if swept {
            self.dirty.clear();
            let mut next = now + MAX_POLL_SLEEP;
            for (token, slot) in &mut self.slots {
                if let Some(d) = one(*token, slot, &mut self.again) {
                    next = next.min(d);
                }
            }
            self.next_sweep = next;
        } else {
            for token in self.dirty.drain(..) {
                if let Some(slot) = self.slots.get_mut(&token) {
                    if let Some(d) = one(token, slot, &mut self.again) {
                        self.next_sweep = self.next_sweep.min(d);
                    }
                }
            }
        }
        for (token, reason) in closing {
            self.close(token, reason);
        }
        (starved, swept)
    }

    fn close(&mut self, token: Token, reason: CloseReason) {
        let Some(mut slot) = self.slots.remove(&token) else {
            return;
        };
        CLOSED.fetch_add(1, Ordering::Relaxed);
        // A storm of connections grew the table; do not keep its size once they are gone
        // (shrinking at a quarter full keeps closing O(1) amortised).
        if self.slots.capacity() > 64 && self.slots.len() < self.slots.capacity() / 4 {
            self.slots.shrink_to_fit();
        }
        let span = slot.span.clone();
        let _e = span.enter();
        let peer = slot.peer;
        match &reason {
            CloseReason::AheadOfMaster { report, max } => {
                // The slave holds bytes this master does not: acking them would
                // confirm messages the master lost (RocketMQ #1155, #3015).
                log_limit::limited!(error!(
                    %peer,
                    report,
                    master_max = max,
                    "slave is ahead of the master; refusing it (its tail must be cut before it can follow)"
                ));
                // Tell it where we end (a heartbeat carries the master's offset): a
                // sluice slave records the divergence, a Java slave just disconnects.
                if slot.conn.at_frame_boundary() {
                    if let Ok(h) = TransferHeader::heartbeat(*max) {
                        let _ = slot.stream.write(&h.to_bytes());
                    }
                }
                drain(&mut slot.stream);
                let _ = slot.stream.shutdown(Shutdown::Write);
            }
            CloseReason::BelowMinOffset { offset, min } => {
                log_limit::limited!(error!(
                    %peer,
                    offset,
                    master_min = min,
                    "slave needs bytes the master no longer holds; it must be rebuilt"
                ));
            }
            CloseReason::Eof | CloseReason::Stopped => {
                log_limit::limited!(info!(%peer, reason = %reason, "slave connection closed"));
            }
            CloseReason::Io(_) | CloseReason::Frame(_) | CloseReason::Housekeeping { .. } => {
                log_limit::limited!(warn!(%peer, reason = %reason, "slave connection closed"));
            }
        }
        if let Err(e) = self.poll.registry().deregister(&mut slot.stream) {
            debug!(error = %e, "deregister failed");
        }
    }

    fn poll_growth(&mut self) {
        if let Some((_, fut)) = &mut self.growth {
            let mut cx = Context::from_waker(&self.task_waker);
            if fut.as_mut().poll(&mut cx).is_ready() {
                self.growth = None;
                // Every caught-up slave has new bytes.
                self.sweep = true;
            }
        }
    }

    /// Waits for the log to grow beyond the lowest offset a caught-up slave sits at:
    /// `starved`, over every slot when `swept`, else over the slots serviced this turn
    /// and the offset already waited for (slots not serviced have not moved).
    fn arm_growth(&mut self, starved: Option<u64>, swept: bool) {
        let armed = self.growth.as_ref().map(|(o, _)| *o);
        let lowest = match (starved, armed) {
            _ if swept => starved,
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Some(at) = lowest else {
            self.growth = None;
            return;
        };
        if armed == Some(at) {
            return;
        }
        let mut fut = self.log.wait_beyond(at);
        let mut cx = Context::from_waker(&self.task_waker);
        if fut.as_mut().poll(&mut cx).is_ready() {
            // Grew meanwhile: go round again without sleeping.
            self.growth = None;
            self.sweep = true;
        } else {
            self.growth = Some((at, fut));
        }
    }
}

/// One loop turn for one slave: read its reports, housekeeping, then fill and write
/// until caught up or the socket would block. Returns whether it wants another turn
/// at once.
fn service_slot(
    token: Token,
    slot: &mut Slot,
    log: &dyn HaLog,
    registry: &Registry,
    now: Instant,
) -> Result<bool, CloseReason> {
    let mut busy = false;
    if slot.read_more {
        slot.read_more = false;
        let mut buf = [0u8; 1024];
        let mut reads = 0;
        loop {
            match slot.stream.read(&mut buf) {
                Ok(0) => return Err(CloseReason::Eof),
                Ok(n) => {
                    if let Some(ack) = slot.conn.on_read(&buf[..n], now, || log.max_offset())? {
                        slot.slave.ack(ack);
                    }
                    reads += 1;
                    if reads >= MAX_READS_PER_TURN {
                        slot.read_more = true;
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
    if let Some(silent) = slot.conn.silent_too_long(now) {
        return Err(CloseReason::Housekeeping { silent });
    }
    for round in 1.. {
        let fill = slot.conn.fill(log, now)?;
        if !slot.blocked && slot.conn.has_output() {
            let (n, blocked) = slot
                .conn
                .write_to(&mut slot.stream, now)
                .map_err(CloseReason::Io)?;
            slot.blocked = blocked;
            slot.slave.add_bytes_sent(n as u64);
        }
        if let Some(next) = slot.conn.transfer_offset() {
            slot.slave.set_transfer_offset(next);
        }
        if slot.blocked || fill != Fill::Full {
            break;
        }
        if round >= MAX_WRITE_ROUNDS {
            busy = true;
            break;
        }
    }
    let want = slot.conn.has_output();
    if want != slot.writable {
        let interest = if want {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        registry
            .reregister(&mut slot.stream, token, interest)
            .map_err(CloseReason::Io)?;
        slot.writable = want;
    }
    Ok(busy)
}

fn drain(stream: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    let mut left = DRAIN_BEFORE_CLOSE;
    while left > 0 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::MemLog;

    /// A readiness notification that never comes (simulated by taking the listener out
    /// of epoll) delays an accept by a sweep, not forever.
    #[test]
    fn a_lost_listener_notification_delays_accepting_by_a_sweep_only() {
        let listener = crate::net::listen("127.0.0.1:0".parse().unwrap(), 16).unwrap();
        let mut config = HaConfig::default();
        config.sanitize().unwrap();
        let group = Arc::new(
            GroupTransfer::start(config.ha_max_gap_not_in_sync, Duration::from_secs(1)).unwrap(),
        );
        let log: Arc<dyn HaLog> = Arc::new(MemLog::new(64 * 1024));
        let (mut lp, shared) = MasterLoop::new(listener, log, config, Arc::clone(&group)).unwrap();
        let addr = lp.local_addr();
        lp.poll.registry().deregister(&mut lp.listener).unwrap();
        let thread = std::thread::spawn(move || lp.run());
        let _client = std::net::TcpStream::connect(addr).unwrap();
        let started = Instant::now();
        while group.slaves().is_empty() && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let waited = started.elapsed();
        shared.stop();
        thread.join().unwrap();
        assert!(
            waited < Duration::from_secs(3),
            "not accepted after {waited:?}"
        );
    }
}
