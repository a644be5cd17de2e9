//! Sync replication ("group transfer"): the table of connected slaves with their
//! acked offsets, `push2SlaveMaxOffset` (the highest offset any slave acked), and
//! futures that resolve once a slave holds an offset.
//!
//! A SYNC_MASTER put awaits [`GroupTransfer::wait_for_slave`] after its local
//! append. The future is runtime-agnostic: the master's event loop completes it from
//! the ack path (no thread blocks per put), and one small timer thread
//! (`ha-group-transfer`, RocketMQ's `GroupTransferService`) completes the ones whose
//! deadline passes with FLUSH_SLAVE_TIMEOUT.
//!
//! Semantics follow RocketMQ 4.9: one slave ack suffices; SLAVE_NOT_AVAILABLE at once
//! when no slave is connected or the best one is `haMaxGapNotInSync` or more behind.
//! Two deliberate differences: "best slave" is the best *connected* slave that has
//! reported (4.9 compares with `push2SlaveMaxOffset`, which a long-gone slave may have
//! raised), and an ack only counts if the master held that offset when it arrived —
//! the connection layer closes a slave reporting more than the master's max offset
//! before the report reaches this table, so a waiter never resolves for bytes only a
//! slave has (RocketMQ #1155, #3015).

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex};
use tracing::{debug, error, info};

use crate::status::SlaveStatus;

/// Outcome of waiting for a slave, as RocketMQ's `PutMessageStatus` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplicaStatus {
    /// A slave acknowledged the offset (`PUT_OK`).
    PutOk,
    /// No slave acknowledged it in time (`FLUSH_SLAVE_TIMEOUT`, response code 12).
    FlushSlaveTimeout,
    /// No slave connected, the best one is too far behind, or HA stopped
    /// (`SLAVE_NOT_AVAILABLE`, response code 11).
    SlaveNotAvailable,
}

const PENDING: u8 = 0;
const OK: u8 = 1;
const TIMEOUT: u8 = 2;
const UNAVAILABLE: u8 = 3;
/// Stored in an ack atomic while the slave has not reported yet.
const NO_OFFSET: u64 = u64::MAX;

fn decode_status(v: u8) -> Option<ReplicaStatus> {
    match v {
        OK => Some(ReplicaStatus::PutOk),
        TIMEOUT => Some(ReplicaStatus::FlushSlaveTimeout),
        UNAVAILABLE => Some(ReplicaStatus::SlaveNotAvailable),
        _ => None,
    }
}

fn encode_status(s: ReplicaStatus) -> u8 {
    match s {
        ReplicaStatus::PutOk => OK,
        ReplicaStatus::FlushSlaveTimeout => TIMEOUT,
        ReplicaStatus::SlaveNotAvailable => UNAVAILABLE,
    }
}

pub(crate) fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn opt(v: u64) -> Option<u64> {
    (v != NO_OFFSET).then_some(v)
}

/// Live counters of one slave connection, shared by the event loop (writer) and the
/// status API (reader).
#[derive(Debug)]
pub(crate) struct SlaveEntry {
    addr: SocketAddr,
    connected_at_ms: u64,
    ack: AtomicU64,
    transfer: AtomicU64,
    bytes_sent: AtomicU64,
    rate: crate::rate::ByteRate,
    last_report_ms: AtomicU64,
}

impl SlaveEntry {
    fn status(&self) -> SlaveStatus {
        let last = self.last_report_ms.load(Ordering::Relaxed);
        SlaveStatus {
            addr: self.addr,
            ack_offset: opt(self.ack.load(Ordering::Acquire)),
            transfer_offset: opt(self.transfer.load(Ordering::Relaxed)),
            bytes_sent: self.bytes_sent.load(Ordering::Relaxed),
            bytes_last_second: self.rate.last_second(now_millis()),
            connected_at_ms: self.connected_at_ms,
            last_report_ms: (last != 0).then_some(last),
        }
    }
}

#[derive(Debug)]
struct Slot {
    state: AtomicU8,
    waker: Mutex<Option<Waker>>,
}

impl Slot {
    /// Sets the outcome once; returns the waker to wake (outside any table lock).
    fn complete(&self, status: ReplicaStatus) -> Option<Waker> {
        self.state
            .compare_exchange(
                PENDING,
                encode_status(status),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .ok()?;
        self.waker.lock().take()
    }
}

#[derive(Debug, Default)]
struct Waiters {
    next_id: u64,
    /// (target offset, id) -> (deadline, slot).
    by_target: BTreeMap<(u64, u64), (Instant, Arc<Slot>)>,
    /// (deadline, id) -> target offset.
    by_deadline: BTreeMap<(Instant, u64), u64>,
}

impl Waiters {
    fn remove(&mut self, target: u64, id: u64, deadline: Instant) {
        self.by_deadline.remove(&(deadline, id));
        self.by_target.remove(&(target, id));
    }
}

#[derive(Debug)]
struct Inner {
    max_gap: u64,
    timeout: Duration,
    push2_slave_max: AtomicU64,
    slaves: Mutex<BTreeMap<u64, Arc<SlaveEntry>>>,
    next_slave: AtomicU64,
    waiters: Mutex<Waiters>,
    pending: AtomicUsize,
    cvar: Condvar,
    closed: AtomicBool,
}

impl Inner {
    fn best_ack(&self) -> Option<u64> {
        let slaves = self.slaves.lock();
        slaves
            .values()
            .filter_map(|s| opt(s.ack.load(Ordering::Acquire)))
            .max()
    }

    fn advance(&self, offset: u64) {
        let prev = self.push2_slave_max.fetch_max(offset, Ordering::SeqCst);
        if offset <= prev || self.pending.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut done = Vec::new();
        {
            let mut w = self.waiters.lock();
            while let Some(entry) = w.by_target.first_entry() {
                let (target, id) = *entry.key();
                if target > offset {
                    break;
                }
                let (deadline, slot) = entry.remove();
                w.by_deadline.remove(&(deadline, id));
                done.push(slot);
            }
            self.pending.store(w.by_target.len(), Ordering::SeqCst);
        }
        for slot in done {
            if let Some(waker) = slot.complete(ReplicaStatus::PutOk) {
                waker.wake();
            }
        }
    }

    /// Timer thread body: completes waiters whose deadline passed; on close,
    /// completes every waiter with SLAVE_NOT_AVAILABLE.
    fn run_timer(&self) {
        let mut w = self.waiters.lock();
        loop {
            let closed = self.closed.load(Ordering::SeqCst);
            let now = Instant::now();
            let mut expired = Vec::new();
            while let Some(entry) = w.by_deadline.first_entry() {
                if !closed && entry.key().0 > now {
                    break;
                }
                let (_, id) = *entry.key();
                let target = entry.remove();
                if let Some((_, slot)) = w.by_target.remove(&(target, id)) {
                    expired.push(slot);
                }
            }
            self.pending.store(w.by_target.len(), Ordering::SeqCst);
            if !expired.is_empty() {
                let status = if closed {
                    ReplicaStatus::SlaveNotAvailable
                } else {
                    ReplicaStatus::FlushSlaveTimeout
                };
                drop(w);
                debug!(count = expired.len(), ?status, "slave waits ended");
                for slot in expired {
                    if let Some(waker) = slot.complete(status) {
                        waker.wake();
                    }
                }
                w = self.waiters.lock();
                continue;
            }
            if closed {
                return;
            }
            match w.by_deadline.first_key_value().map(|(k, _)| k.0) {
                Some(deadline) => {
                    self.cvar.wait_until(&mut w, deadline);
                }
                None => self.cvar.wait(&mut w),
            }
        }
    }
}

/// The slave table and the sync-replication waiters of one master.
///
/// The master's event loop registers each slave connection
/// ([`register_slave`](Self::register_slave)) and feeds its reports through
/// [`SlaveRegistration::ack`]; puts wait with [`wait_for_slave`](Self::wait_for_slave).
#[derive(Debug)]
pub struct GroupTransfer {
    inner: Arc<Inner>,
    timer: Mutex<Option<JoinHandle<()>>>,
}

impl GroupTransfer {
    /// Starts the waiter table and its timer thread.
    ///
    /// `max_gap` is `haMaxGapNotInSync`; `timeout` is the default wait
    /// (`slaveTimeout`).
    ///
    /// # Errors
    /// The timer thread cannot be spawned.
    pub fn start(max_gap: u64, timeout: Duration) -> std::io::Result<Self> {
        let inner = Arc::new(Inner {
            max_gap,
            timeout,
            push2_slave_max: AtomicU64::new(0),
            slaves: Mutex::new(BTreeMap::new()),
            next_slave: AtomicU64::new(0),
            waiters: Mutex::new(Waiters::default()),
            pending: AtomicUsize::new(0),
            cvar: Condvar::new(),
            closed: AtomicBool::new(false),
        });
        let timer_inner = Arc::clone(&inner);
        let handle = std::thread::Builder::new()
            .name("ha-group-transfer".into())
            .spawn(move || {
                let span = tracing::info_span!("ha", service = "group-transfer");
                let _e = span.enter();
                timer_inner.run_timer();
            })?;
        Ok(GroupTransfer {
            inner,
            timer: Mutex::new(Some(handle)),
        })
    }

    /// Resolves once a slave has acknowledged `offset` (the end of the put, RocketMQ's
    /// `nextOffset = wroteOffset + wroteBytes`), with the default timeout.
    pub fn wait_for_slave(&self, offset: u64) -> SlaveWait {
        self.wait_for_slave_with_timeout(offset, self.inner.timeout)
    }

    /// As [`wait_for_slave`](Self::wait_for_slave) with an explicit timeout.
    pub fn wait_for_slave_with_timeout(&self, offset: u64, timeout: Duration) -> SlaveWait {
        let inner = &self.inner;
        if inner.closed.load(Ordering::SeqCst) || !self.is_slave_ok(offset) {
            return SlaveWait::ready(ReplicaStatus::SlaveNotAvailable);
        }
        if inner.push2_slave_max.load(Ordering::SeqCst) >= offset {
            return SlaveWait::ready(ReplicaStatus::PutOk);
        }
        if timeout.is_zero() {
            return SlaveWait::ready(ReplicaStatus::FlushSlaveTimeout);
        }
        let deadline = Instant::now() + timeout;
        let mut w = inner.waiters.lock();
        let id = w.next_id;
        w.next_id += 1;
        let slot = Arc::new(Slot {
            state: AtomicU8::new(PENDING),
            waker: Mutex::new(None),
        });
        w.by_target
            .insert((offset, id), (deadline, Arc::clone(&slot)));
        inner.pending.store(w.by_target.len(), Ordering::SeqCst);
        // Publish the entry (`pending`) before looking at the max again; `advance`
        // raises the max before looking at `pending`. With both SeqCst, an ack racing
        // this registration is seen here or sees the entry (no lost wake-up).
        if inner.push2_slave_max.load(Ordering::SeqCst) >= offset {
            w.by_target.remove(&(offset, id));
            inner.pending.store(w.by_target.len(), Ordering::SeqCst);
            return SlaveWait::ready(ReplicaStatus::PutOk);
        }
        let earliest = w
            .by_deadline
            .first_key_value()
            .is_none_or(|(k, _)| deadline < k.0);
        w.by_deadline.insert((deadline, id), offset);
        drop(w);
        if earliest {
            inner.cvar.notify_one();
        }
        SlaveWait {
            state: WaitState::Waiting {
                inner: Arc::clone(inner),
                slot,
                target: offset,
                id,
                deadline,
            },
        }
    }

    /// RocketMQ's `isSlaveOK(masterPutWhere)`: a slave is connected and has reported,
    /// and the best one is less than `haMaxGapNotInSync` behind `offset`.
    #[must_use]
    pub fn is_slave_ok(&self, offset: u64) -> bool {
        self.inner
            .best_ack()
            .is_some_and(|best| offset.saturating_sub(best) < self.inner.max_gap)
    }

    /// `push2SlaveMaxOffset`: the highest offset any slave acknowledged since start.
    #[must_use]
    pub fn push2_slave_max_offset(&self) -> u64 {
        self.inner.push2_slave_max.load(Ordering::SeqCst)
    }

    /// Connected slaves with their offsets, in connection order.
    #[must_use]
    pub fn slaves(&self) -> Vec<SlaveStatus> {
        self.inner
            .slaves
            .lock()
            .values()
            .map(|s| s.status())
            .collect()
    }

    /// Waits currently pending.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.inner.pending.load(Ordering::SeqCst)
    }

    /// Adds a connected slave; dropping the registration removes it.
    #[must_use]
    pub fn register_slave(&self, addr: SocketAddr) -> SlaveRegistration {
        let id = self.inner.next_slave.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(SlaveEntry {
            addr,
            connected_at_ms: now_millis(),
            ack: AtomicU64::new(NO_OFFSET),
            transfer: AtomicU64::new(NO_OFFSET),
            bytes_sent: AtomicU64::new(0),
            rate: crate::rate::ByteRate::default(),
            last_report_ms: AtomicU64::new(0),
        });
        self.inner.slaves.lock().insert(id, Arc::clone(&entry));
        SlaveRegistration {
            inner: Arc::clone(&self.inner),
            id,
            entry,
        }
    }

    /// Stops the timer thread and completes every pending wait with
    /// SLAVE_NOT_AVAILABLE; later waits get it at once. Idempotent.
    pub fn shutdown(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        {
            // Taking the lock orders the flag before the timer's next check.
            let _w = self.inner.waiters.lock();
            self.inner.cvar.notify_all();
        }
        if let Some(handle) = self.timer.lock().take() {
            if handle.join().is_err() {
                error!("group transfer timer thread panicked");
            } else {
                info!("group transfer stopped");
            }
        }
    }
}

impl Drop for GroupTransfer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A slave connection in the [`GroupTransfer`] table; dropping it removes the slave.
#[derive(Debug)]
pub struct SlaveRegistration {
    inner: Arc<Inner>,
    id: u64,
    entry: Arc<SlaveEntry>,
}

impl SlaveRegistration {
    /// Records a report of this slave: its ack, and `push2SlaveMaxOffset` if higher
    /// (completing the waits it satisfies). The caller has checked that the master
    /// holds `offset`.
    pub fn ack(&self, offset: u64) {
        self.entry.ack.store(offset, Ordering::Release);
        self.entry
            .last_report_ms
            .store(now_millis(), Ordering::Relaxed);
        self.inner.advance(offset);
    }

    /// Publishes the next offset the master will send this slave (status only).
    pub(crate) fn set_transfer_offset(&self, offset: u64) {
        self.entry.transfer.store(offset, Ordering::Relaxed);
    }

    /// Counts bytes written to this slave (status only).
    pub(crate) fn add_bytes_sent(&self, n: u64) {
        self.entry.bytes_sent.fetch_add(n, Ordering::Relaxed);
        self.entry.rate.add(n, now_millis());
    }
}

impl Drop for SlaveRegistration {
    fn drop(&mut self) {
        self.inner.slaves.lock().remove(&self.id);
    }
}

#[derive(Debug)]
enum WaitState {
    Ready(ReplicaStatus),
    Waiting {
        inner: Arc<Inner>,
        slot: Arc<Slot>,
        target: u64,
        id: u64,
        deadline: Instant,
    },
}

/// Future of [`GroupTransfer::wait_for_slave`]: resolves to the replica status of one
/// put. Dropping it cancels the wait.
#[derive(Debug)]
#[must_use = "a slave wait does nothing unless awaited"]
pub struct SlaveWait {
    state: WaitState,
}

impl SlaveWait {
    /// A wait that is already over.
    pub fn ready(status: ReplicaStatus) -> Self {
        SlaveWait {
            state: WaitState::Ready(status),
        }
    }
}

impl Future for SlaveWait {
    type Output = ReplicaStatus;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ReplicaStatus> {
        let this = self.get_mut();
        let (slot, status) = match &this.state {
            WaitState::Ready(s) => return Poll::Ready(*s),
            WaitState::Waiting { slot, .. } => {
                let s = decode_status(slot.state.load(Ordering::Acquire));
                (Arc::clone(slot), s)
            }
        };
        if let Some(s) = status {
            this.state = WaitState::Ready(s);
            return Poll::Ready(s);
        }
        {
            let mut w = slot.waker.lock();
            match w.as_mut() {
                Some(old) if old.will_wake(cx.waker()) => {}
                _ => *w = Some(cx.waker().clone()),
            }
        }
        // Re-check: `complete` sets the state before taking the waker.
        if let Some(s) = decode_status(slot.state.load(Ordering::Acquire)) {
            this.state = WaitState::Ready(s);
            return Poll::Ready(s);
        }
        Poll::Pending
    }
}

impl Drop for SlaveWait {
    fn drop(&mut self) {
        if let WaitState::Waiting {
            inner,
            slot,
            target,
            id,
            deadline,
        } = &self.state
        {
            if slot.state.load(Ordering::Acquire) == PENDING {
                let mut w = inner.waiters.lock();
                w.remove(*target, *id, *deadline);
                inner.pending.store(w.by_target.len(), Ordering::SeqCst);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::block_on;

    fn addr() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 4000))
    }

    #[test]
    fn no_slave_is_not_available_at_once() {
        let g = GroupTransfer::start(1 << 20, Duration::from_secs(5)).unwrap();
        assert_eq!(
            block_on(g.wait_for_slave(100)),
            ReplicaStatus::SlaveNotAvailable
        );
        // Connected but not reported yet: not available either.
        let s = g.register_slave(addr());
        assert!(!g.is_slave_ok(100));
        s.ack(0);
        assert!(g.is_slave_ok(100));
        drop(s);
        assert!(!g.is_slave_ok(100));
        assert!(g.slaves().is_empty());
    }

    #[test]
    fn gap_too_large_is_not_available() {
        let g = GroupTransfer::start(1000, Duration::from_secs(5)).unwrap();
        let s = g.register_slave(addr());
        s.ack(500);
        assert!(g.is_slave_ok(1499));
        assert!(!g.is_slave_ok(1500));
        assert_eq!(
            block_on(g.wait_for_slave(1500)),
            ReplicaStatus::SlaveNotAvailable
        );
    }

    #[test]
    fn resolves_on_ack_from_another_thread() {
        let g = Arc::new(GroupTransfer::start(1 << 20, Duration::from_secs(5)).unwrap());
        let s = g.register_slave(addr());
        s.ack(10);
        assert_eq!(block_on(g.wait_for_slave(10)), ReplicaStatus::PutOk);
        let waits: Vec<_> = (0..10).map(|i| g.wait_for_slave(100 + i * 10)).collect();
        assert_eq!(g.pending(), 10);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            s.ack(145);
            std::thread::sleep(Duration::from_millis(20));
            s.ack(1000);
            s
        });
        for w in waits {
            assert_eq!(block_on(w), ReplicaStatus::PutOk);
        }
        let _s = t.join().unwrap();
        assert_eq!(g.pending(), 0);
        assert_eq!(g.push2_slave_max_offset(), 1000);
        let st = g.slaves();
        assert_eq!(st.len(), 1);
        assert_eq!(st[0].ack_offset, Some(1000));
    }

    #[test]
    fn ack_racing_the_registration_is_not_lost() {
        let g = Arc::new(GroupTransfer::start(u64::MAX, Duration::from_secs(5)).unwrap());
        let s = g.register_slave(addr());
        s.ack(0);
        let (tx, rx) = std::sync::mpsc::channel::<u64>();
        let acker = std::thread::spawn(move || {
            while let Ok(v) = rx.recv() {
                s.ack(v);
            }
        });
        for i in 1..=5000u64 {
            // The ack is sent while the wait registers: no later ack would rescue a
            // lost wake-up, so it would end in a timeout.
            tx.send(i).unwrap();
            let t0 = Instant::now();
            assert_eq!(block_on(g.wait_for_slave(i)), ReplicaStatus::PutOk);
            assert!(t0.elapsed() < Duration::from_secs(1), "wait {i} stalled");
        }
        drop(tx);
        acker.join().unwrap();
        assert_eq!(g.pending(), 0);
    }

    #[test]
    fn times_out_and_cancels() {
        let g = GroupTransfer::start(1 << 20, Duration::from_millis(30)).unwrap();
        let s = g.register_slave(addr());
        s.ack(0);
        let t0 = Instant::now();
        assert_eq!(
            block_on(g.wait_for_slave(10)),
            ReplicaStatus::FlushSlaveTimeout
        );
        assert!(t0.elapsed() >= Duration::from_millis(30));
        assert_eq!(
            block_on(g.wait_for_slave_with_timeout(10, Duration::ZERO)),
            ReplicaStatus::FlushSlaveTimeout
        );
        let w = g.wait_for_slave_with_timeout(10, Duration::from_secs(60));
        assert_eq!(g.pending(), 1);
        drop(w);
        assert_eq!(g.pending(), 0);
    }

    #[test]
    fn shutdown_releases_waiters() {
        let g = GroupTransfer::start(1 << 20, Duration::from_secs(60)).unwrap();
        let s = g.register_slave(addr());
        s.ack(0);
        let w = g.wait_for_slave(10);
        g.shutdown();
        assert_eq!(block_on(w), ReplicaStatus::SlaveNotAvailable);
        assert_eq!(
            block_on(g.wait_for_slave(0)),
            ReplicaStatus::SlaveNotAvailable
        );
        g.shutdown();
    }
}
