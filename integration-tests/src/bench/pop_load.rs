//! The load of the POP scenarios (issue 16), in the driver's process: `consumers` tasks,
//! each popping a topic (queue −1, `maxMsgNums` 32) and acking every message it got
//! before its next pop, one ACK_MESSAGE per message (all of a pop's in flight at once, as
//! the Java push consumer's consume threads send them) or one BATCH_ACK_MESSAGE per pop.
//! Requests and receipts are [`crate::pop`]'s; the transport is one [`RemotingClient`]
//! connection, as a client has per broker.
//!
//! Every delivery is counted by the message's `UNIQ_KEY`: the run is consumed once every
//! message of the backlog has been acked, and a message delivered again (after its ack
//! succeeded, or at all) is a redelivery. The caller lets the consumers keep popping for a
//! while after that (the linger), longer than the invisible time plus the broker's revive
//! latency, so that an ack the broker lost would show as a redelivery.
//!
//! The consumers outlive their broker: a request that fails (connection refused while it
//! is down, closed by its crash, timed out) is counted by kind and the consumer tries
//! again after a pause, on a new connection; a message whose ack failed comes back after
//! its invisible time like any un-acked one. The per-message books ([`PopOutcome::messages`])
//! let a caller compare what was delivered and acked with what it sent (the reliability
//! driver's `pop-kill9`).

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, DefaultHasher, Hash, Hasher};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use remoting::{RemotingClient, RemotingCommand, ResponseCode};

use crate::pop::{PoppedMessage, ack_request, batch_ack_request, pop_request, popped};
use crate::timers::now_ms;

/// How the consumers ack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckMode {
    /// One ACK_MESSAGE per message.
    Single,
    /// One BATCH_ACK_MESSAGE per pop.
    Batch,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct PopLoad {
    /// The broker.
    pub addr: String,
    /// Its name (receipts built from a response header carry it).
    pub broker_name: String,
    /// Topic popped.
    pub topic: String,
    /// Consumer group.
    pub group: String,
    /// Concurrent consumers.
    pub consumers: usize,
    /// `maxMsgNums` of a pop.
    pub max: i32,
    /// Invisible time of a pop, ms.
    pub invisible_ms: i64,
    /// Poll time of a pop (held when nothing is found), ms.
    pub poll_ms: i64,
    /// How the consumers ack.
    pub ack: AckMode,
    /// Messages of the backlog: consumed once this many distinct ones are acked.
    pub expect: u64,
    /// Where a progress line goes every second.
    pub progress: Option<PathBuf>,
    /// Messages per second the consumers together take at most (`None`: as fast as they
    /// can): a consumer holds what it popped, not acked, until the deliveries so far are
    /// within the rate (as a consumer busy processing them would).
    pub rate: Option<f64>,
    /// Send a failed ack again (a transport error: the broker down, the connection cut, a
    /// timeout) after [`ACK_RETRY_DELAY`], until it is answered, as the 5.x SDKs' push
    /// consumers do.
    pub retry_acks: bool,
    /// Hash every delivered body ([`Delivery::body`], [`Delivery::body_changed`]): costs the
    /// load generator a hash per message.
    pub check_bodies: bool,
}

/// Pause before a failed ack is sent again ([`PopLoad::retry_acks`]): the 5.x SDKs'
/// `ACK_MESSAGE_FAILURE_BACKOFF_DELAY`.
pub const ACK_RETRY_DELAY: Duration = Duration::from_secs(1);

/// What one message (by its identity, [`identity_of_key`]) went through.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// Times delivered.
    pub deliveries: u32,
    /// Whether an ack of it succeeded.
    pub acked: bool,
    /// Whether an ack of it was answered SUCCESS before its receipt's invisible time ran
    /// out (pop time + invisible time, the broker's clock: the same host's).
    pub acked_in_time: bool,
    /// Deliveries after an ack of it had been answered SUCCESS in time.
    pub after_ack: u32,
    /// Deliveries after an ack of it had been answered SUCCESS only after its invisible
    /// time (the broker may have revived it meanwhile: allowed).
    pub after_late_ack: u32,
    /// Acks of it the broker answered with an error.
    pub acks_refused: u32,
    /// Acks of it that got no answer (a transport error, after any retries): the broker
    /// may have stored them.
    pub acks_unanswered: u32,
    /// [`body_hash`] of its first delivery (with [`PopLoad::check_bodies`]).
    pub body: Option<u64>,
    /// Deliveries whose body differed from the first's.
    pub body_changed: u32,
}

/// The hash of a message identity: `UNIQ_KEY`s are unique already, so one multiply
/// spreads them well enough, at a fraction of SipHash's cost on the load's hot path.
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u128(&mut self, id: u128) {
        let folded = (id as u64) ^ ((id >> 64) as u64).rotate_left(29);
        self.0 = (self.0 ^ folded).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A map by message identity.
pub type IdMap<V> = HashMap<u128, V, BuildHasherDefault<IdHasher>>;

#[derive(Debug, Default)]
struct Tally {
    seen: IdMap<Delivery>,
    delivered: u64,
    redelivered: u64,
    redelivered_acked: u64,
    acked_unique: u64,
    errors: BTreeMap<String, u64>,
    pop_micros: Vec<u32>,
    ack_micros: Vec<u32>,
}

impl Tally {
    fn error(&mut self, kind: String) {
        *self.errors.entry(kind).or_default() += 1;
    }
}

struct Shared {
    load: PopLoad,
    client: RemotingClient,
    stop: AtomicBool,
    tally: Mutex<Tally>,
    pops: AtomicU64,
    empty_pops: AtomicU64,
    ack_requests: AtomicU64,
    /// Messages whose ack succeeded (every success, repeats included).
    acks_ok: AtomicU64,
    started: Instant,
    consumed: OnceLock<Duration>,
}

impl Shared {
    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The figures of a finished run.
#[derive(Debug, Clone, Default)]
pub struct PopOutcome {
    /// First pop to the last message of the backlog acked, s (`None`: not consumed).
    pub consume_secs: Option<f64>,
    /// Deliveries, redeliveries included.
    pub delivered: u64,
    /// Distinct messages delivered.
    pub unique: u64,
    /// Distinct messages acked.
    pub acked: u64,
    /// Deliveries of a message delivered before.
    pub redelivered: u64,
    /// ... of which after its ack had succeeded.
    pub redelivered_acked: u64,
    /// POP_MESSAGE requests answered.
    pub pops: u64,
    /// ... that found nothing.
    pub empty_pops: u64,
    /// ACK_MESSAGE or BATCH_ACK_MESSAGE requests sent.
    pub ack_requests: u64,
    /// Failed requests by kind.
    pub errors: BTreeMap<String, u64>,
    /// Pop round trip (request to response), ms: p50, p99.
    pub pop_ms: (f64, f64),
    /// Ack round trip, ms: p50, p99.
    pub ack_ms: (f64, f64),
    /// Every message delivered or acked, by identity ([`identity_of_key`]).
    pub messages: IdMap<Delivery>,
}

/// A load under way.
pub struct Running {
    runtime: tokio::runtime::Runtime,
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("load", &self.shared.load)
            .finish_non_exhaustive()
    }
}

/// Starts the consumers on a runtime of two worker threads (the machine's cores).
///
/// # Errors
/// The runtime cannot be built.
pub fn start(load: PopLoad) -> Result<Running, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("pop load runtime: {e}"))?;
    // Room for the backlog (a warm-up expects no end: room for a few seconds of it).
    let expect = usize::try_from(load.expect.min(1 << 20)).unwrap_or(0);
    let shared = Arc::new(Shared {
        client: RemotingClient::default(),
        stop: AtomicBool::new(false),
        tally: Mutex::new(Tally {
            seen: IdMap::with_capacity_and_hasher(
                expect + expect / 8,
                BuildHasherDefault::default(),
            ),
            pop_micros: Vec::with_capacity(expect / 16),
            ack_micros: Vec::with_capacity(expect),
            ..Tally::default()
        }),
        pops: AtomicU64::new(0),
        empty_pops: AtomicU64::new(0),
        ack_requests: AtomicU64::new(0),
        acks_ok: AtomicU64::new(0),
        started: Instant::now(),
        consumed: OnceLock::new(),
        load,
    });
    let mut tasks: Vec<_> = (0..shared.load.consumers.max(1))
        .map(|_| runtime.spawn(consume(Arc::clone(&shared))))
        .collect();
    if let Some(path) = shared.load.progress.clone() {
        let file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        tasks.push(runtime.spawn(report(Arc::clone(&shared), file)));
    }
    Ok(Running {
        runtime,
        shared,
        tasks,
    })
}

impl Running {
    /// Waits until the backlog is consumed (every message acked), `timeout` passes, or no
    /// message is acked for `stall`; returns the time from the start, or `None`.
    #[must_use]
    pub fn wait_consumed(&self, timeout: Duration, stall: Duration) -> Option<Duration> {
        let deadline = Instant::now() + timeout;
        let (mut acked, mut moved) = (0, Instant::now());
        loop {
            if let Some(d) = self.shared.consumed.get() {
                return Some(*d);
            }
            let now = self.shared.tally().acked_unique;
            if now != acked {
                (acked, moved) = (now, Instant::now());
            }
            if Instant::now() >= deadline || moved.elapsed() >= stall {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether every message of the backlog has been acked.
    #[must_use]
    pub fn consumed(&self) -> bool {
        self.shared.consumed.get().is_some()
    }

    /// Distinct messages acked so far.
    #[must_use]
    pub fn acked(&self) -> u64 {
        self.shared.tally().acked_unique
    }

    /// Successful acks so far (of messages; a message acked twice counts twice).
    #[must_use]
    pub fn acks_ok(&self) -> u64 {
        self.shared.acks_ok.load(Ordering::Relaxed)
    }

    /// Asks the consumers to stop after their current pop and its acks.
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }

    /// Stops the consumers (a pop still held after its poll time and some is abandoned)
    /// and returns the figures.
    #[must_use]
    pub fn finish(self) -> PopOutcome {
        self.stop();
        let grace = Duration::from_millis(u64::try_from(self.shared.load.poll_ms).unwrap_or(0))
            + Duration::from_secs(5);
        self.runtime.block_on(async {
            for t in self.tasks {
                let abort = t.abort_handle();
                if tokio::time::timeout(grace, t).await.is_err() {
                    abort.abort();
                }
            }
        });
        self.shared.client.close_all();
        let s = &self.shared;
        let mut t = s.tally();
        let unique = t.seen.len() as u64;
        let pop_ms = percentiles(&mut t.pop_micros);
        let ack_ms = percentiles(&mut t.ack_micros);
        PopOutcome {
            consume_secs: s.consumed.get().map(Duration::as_secs_f64),
            delivered: t.delivered,
            unique,
            acked: t.acked_unique,
            redelivered: t.redelivered,
            redelivered_acked: t.redelivered_acked,
            pops: s.pops.load(Ordering::Relaxed),
            empty_pops: s.empty_pops.load(Ordering::Relaxed),
            ack_requests: s.ack_requests.load(Ordering::Relaxed),
            errors: std::mem::take(&mut t.errors),
            pop_ms,
            ack_ms,
            messages: std::mem::take(&mut t.seen),
        }
    }
}

/// A line a second: acked, delivered, redelivered, errors.
async fn report(s: Arc<Shared>, mut file: std::fs::File) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    while !s.stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let line = {
            let t = s.tally();
            format!(
                "[{:>5.0}s] acked {} of {}, delivered {}, redelivered {} ({} after an ack), pops {} ({} empty), errors {}\n",
                s.started.elapsed().as_secs_f64(),
                t.acked_unique,
                s.load.expect,
                t.delivered,
                t.redelivered,
                t.redelivered_acked,
                s.pops.load(Ordering::Relaxed),
                s.empty_pops.load(Ordering::Relaxed),
                t.errors.values().sum::<u64>()
            )
        };
        let _ = file.write_all(line.as_bytes());
    }
}

/// p50 and p99 of round trips in µs, as ms.
#[allow(clippy::cast_precision_loss, reason = "percentiles for display")]
fn percentiles(micros: &mut [u32]) -> (f64, f64) {
    if micros.is_empty() {
        return (0.0, 0.0);
    }
    micros.sort_unstable();
    let at = |q: f64| {
        let i = ((micros.len() - 1) as f64 * q).round() as usize;
        f64::from(micros[i.min(micros.len() - 1)]) / 1000.0
    };
    (at(0.5), at(0.99))
}

fn micros(since: Instant) -> u32 {
    u32::try_from(since.elapsed().as_micros()).unwrap_or(u32::MAX)
}

/// The identity of a message whose `UNIQ_KEY` is 32 hex digits (`mqbench`'s, a Java
/// client's).
#[must_use]
pub fn identity_of_key(key: &str) -> Option<u128> {
    (key.len() == 32)
        .then(|| u128::from_str_radix(key, 16).ok())
        .flatten()
}

/// The hash of a body the books compare ([`Delivery::body`]): the same in every process.
#[must_use]
pub fn body_hash(body: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    body.hash(&mut h);
    h.finish()
}

/// The identity of a message: its `UNIQ_KEY` ([`identity_of_key`]), else a hash of
/// whatever it has.
fn identity(m: &PoppedMessage) -> u128 {
    if let Some(id) = m.uniq_key.as_deref().and_then(identity_of_key) {
        return id;
    }
    let mut a = DefaultHasher::new();
    (m.uniq_key.as_deref(), &m.body).hash(&mut a);
    let mut b = DefaultHasher::new();
    (1u8, m.uniq_key.as_deref(), &m.body).hash(&mut b);
    (u128::from(a.finish()) << 64) | u128::from(b.finish())
}

/// A failed request's kind (the counts' key): stable across requests and restarts.
fn error_kind(e: &remoting::RemotingError) -> &'static str {
    use remoting::RemotingError as E;
    match e {
        E::Connect { source, .. } if source.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused"
        }
        E::Connect { .. } => "connect failed",
        E::ConnectTimeout { .. } => "connect timeout",
        E::Timeout { .. } => "timeout",
        E::ConnectionClosed(_) => "connection closed",
        _ => "transport",
    }
}

/// Whether a pop's answer is "nothing there" rather than a failure.
fn is_empty_answer(code: i32) -> bool {
    [
        ResponseCode::PollingTimeout,
        ResponseCode::PullNotFound,
        ResponseCode::NoMessage,
    ]
    .iter()
    .any(|c| c.code() == code)
}

async fn consume(s: Arc<Shared>) {
    let l = &s.load;
    let rpc_timeout =
        Duration::from_millis(u64::try_from(l.poll_ms).unwrap_or(0)) + Duration::from_secs(10);
    while !s.stop.load(Ordering::Relaxed) {
        let request = pop_request(
            &l.group,
            &l.topic,
            l.max,
            l.invisible_ms,
            l.poll_ms,
            now_ms(),
        );
        let at = Instant::now();
        let response = match s.client.invoke(&l.addr, request, rpc_timeout).await {
            Ok(r) => r,
            Err(e) => {
                s.tally().error(format!("pop: {}", error_kind(&e)));
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let took = micros(at);
        s.pops.fetch_add(1, Ordering::Relaxed);
        let code = response.code();
        if code != ResponseCode::Success.code() {
            if is_empty_answer(code) {
                s.empty_pops.fetch_add(1, Ordering::Relaxed);
            } else {
                s.tally().error(format!("pop: code {code}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            continue;
        }
        let messages = match popped(&response, &l.group, &l.broker_name) {
            Ok(m) => m,
            Err(e) => {
                s.tally().error(format!("pop response: {e}"));
                continue;
            }
        };
        let ids: Vec<u128> = messages.iter().map(identity).collect();
        let hashes: Vec<Option<u64>> = messages
            .iter()
            .map(|m| l.check_bodies.then(|| body_hash(&m.body)))
            .collect();
        {
            let mut t = s.tally();
            t.pop_micros.push(took);
            for (id, hash) in ids.iter().zip(&hashes) {
                t.delivered += 1;
                let seen = t.seen.entry(*id).or_default();
                seen.deliveries += 1;
                if seen.deliveries == 1 || seen.body.is_none() {
                    seen.body = *hash;
                } else if hash.is_some() && *hash != seen.body {
                    seen.body_changed += 1;
                }
                let (again, acked) = (seen.deliveries > 1, seen.acked);
                if seen.acked_in_time {
                    seen.after_ack += 1;
                } else if acked {
                    seen.after_late_ack += 1;
                }
                if again {
                    t.redelivered += 1;
                    if acked {
                        t.redelivered_acked += 1;
                    }
                }
            }
        }
        if messages.is_empty() {
            continue;
        }
        if let Some(rate) = l.rate.filter(|r| *r > 0.0) {
            // The messages are "processed" (held, not acked) until the deliveries so far
            // are within the rate.
            #[allow(clippy::cast_precision_loss, reason = "a pace")]
            let due = Duration::from_secs_f64(s.tally().delivered as f64 / rate);
            if let Some(wait) = due.checked_sub(s.started.elapsed()) {
                tokio::time::sleep(wait).await;
            }
        }
        match l.ack {
            AckMode::Single => ack_each(&s, &messages, &ids).await,
            AckMode::Batch => ack_batch(&s, &messages, &ids).await,
        }
    }
}

/// One ACK_MESSAGE per message, all in flight at once.
async fn ack_each(s: &Arc<Shared>, messages: &[PoppedMessage], ids: &[u128]) {
    let l = &s.load;
    // All in flight at once, on this task (the client's connection multiplexes them).
    let acks = messages.iter().zip(ids).map(|(m, id)| {
        let request = ack_request(&l.group, m);
        let (id, deadline) = (*id, deadline(m));
        async move {
            let (result, took) = invoke_ack(s, request).await;
            (id, deadline, result, took)
        }
    });
    for (id, deadline, result, took) in futures::future::join_all(acks).await {
        settle(s, &[id], deadline, &result, took);
    }
}

/// One BATCH_ACK_MESSAGE for the whole pop.
async fn ack_batch(s: &Arc<Shared>, messages: &[PoppedMessage], ids: &[u128]) {
    let l = &s.load;
    let request = match batch_ack_request(&l.group, &l.topic, messages) {
        Ok(r) => r,
        Err(e) => {
            s.tally().error(format!("batch ack: {e}"));
            return;
        }
    };
    let deadline = messages.iter().map(deadline).min().unwrap_or(i64::MAX);
    let (result, took) = invoke_ack(s, request).await;
    settle(s, ids, deadline, &result, took);
}

/// When the receipt of `m` runs out: its pop time + invisible time (ms since the epoch).
fn deadline(m: &PoppedMessage) -> i64 {
    m.extra.pop_time.saturating_add(m.extra.invisible_time)
}

/// Sends an ack, again after each transport error with [`PopLoad::retry_acks`] (until it
/// is answered or the load stops); the last answer and the last attempt's round trip. A
/// failed attempt that is retried is counted as an error here.
async fn invoke_ack(
    s: &Shared,
    request: RemotingCommand,
) -> (Result<RemotingCommand, remoting::RemotingError>, u32) {
    loop {
        s.ack_requests.fetch_add(1, Ordering::Relaxed);
        let at = Instant::now();
        let result = s
            .client
            .invoke(&s.load.addr, request.clone(), Duration::from_secs(10))
            .await;
        let took = micros(at);
        // Past the receipt's invisible time too: the broker may hold the first attempt
        // (its answer lost), and a late SUCCESS is told apart in the books.
        let again = s.load.retry_acks && !s.stop.load(Ordering::Relaxed);
        match &result {
            Err(e) if again => {
                s.tally()
                    .error(format!("ack: {} (sent again)", error_kind(e)));
                tokio::time::sleep(ACK_RETRY_DELAY).await;
            }
            _ => return (result, took),
        }
    }
}

/// Records an ack's answer for the messages it acked; the last of the backlog marks the
/// run consumed.
fn settle(
    s: &Shared,
    ids: &[u128],
    deadline: i64,
    result: &Result<RemotingCommand, remoting::RemotingError>,
    took: u32,
) {
    let in_time = now_ms() < deadline;
    let mut t = s.tally();
    t.ack_micros.push(took);
    match result {
        Ok(r) if r.code() == ResponseCode::Success.code() => {
            s.acks_ok.fetch_add(ids.len() as u64, Ordering::Relaxed);
            for id in ids {
                let seen = t.seen.entry(*id).or_default();
                seen.acked_in_time |= in_time;
                if !seen.acked {
                    seen.acked = true;
                    t.acked_unique += 1;
                }
            }
            if t.acked_unique >= s.load.expect {
                let _ = s.consumed.set(s.started.elapsed());
            }
        }
        Ok(r) => {
            for id in ids {
                t.seen.entry(*id).or_default().acks_refused += 1;
            }
            t.error(format!("ack: code {}", r.code()));
        }
        Err(e) => {
            for id in ids {
                t.seen.entry(*id).or_default().acks_unanswered += 1;
            }
            t.error(format!("ack: {}", error_kind(e)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_round_trips() {
        let mut v: Vec<u32> = (1..=100).map(|i| i * 1000).collect();
        let (p50, p99) = percentiles(&mut v);
        assert!((p50 - 50.0).abs() <= 1.0, "{p50}");
        assert!((p99 - 99.0).abs() <= 1.0, "{p99}");
        assert_eq!(percentiles(&mut []), (0.0, 0.0));
    }

    #[test]
    fn identities_and_error_kinds() {
        let key = "7F0000010A2B18B4AAC27A5E1C3D0000";
        assert_eq!(identity_of_key(key), u128::from_str_radix(key, 16).ok());
        assert_eq!(identity_of_key("pc12"), None);
        assert_eq!(body_hash(b"abc"), body_hash(b"abc"));
        assert_ne!(body_hash(b"abc"), body_hash(b"abd"));
        let refused = remoting::RemotingError::Connect {
            addr: "127.0.0.1:1".to_owned(),
            source: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        };
        assert_eq!(error_kind(&refused), "connection refused");
        assert_eq!(
            error_kind(&remoting::RemotingError::ConnectionClosed("x".to_owned())),
            "connection closed"
        );
    }

    #[test]
    fn empty_answers_are_not_errors() {
        assert!(is_empty_answer(ResponseCode::PollingTimeout.code()));
        assert!(is_empty_answer(ResponseCode::PullNotFound.code()));
        assert!(!is_empty_answer(ResponseCode::SystemBusy.code()));
    }
}
