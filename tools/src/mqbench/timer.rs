//! `mqbench timer`: timer messages (5.x `TIMER_DELIVER_MS`) and how late they arrive.
//!
//! Producers send `--messages N` messages whose due times are spread evenly over
//! `--window`, the first `--lead` after the sending starts; each body says its run, index,
//! due time and send time ([`body`]). Long-polling pull loops on every queue of the topic
//! (as `mqbench consumer` has them) receive them; each receipt's lateness is the
//! consumer's receive time minus the due time, both on this host's clock. That is what a
//! consumer sees: the broker's delivery, its dispatch and the long-poll wake-up. The
//! store timestamp of the delivered message gives the broker's own part (ms).
//!
//! The run waits until every message sent is received or `--grace` after the last due
//! time, then reports lateness percentiles, messages early, missing and duplicated.
//! `--send-only` and `--receive-only --run-id ID` split the two halves over two
//! processes (a broker restart between them); [`watch`] (`mqbench timer-watch`) follows
//! the broker's enqueue into the wheel.

pub mod body;
pub mod receipts;
pub mod watch;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use message::properties::keys;
use remoting::RemotingClient;
use remoting::client::ClientConfig as RemotingConfig;
use remoting::protocol::broker::PullMessageRequestHeader;
use remoting::protocol::constants::perm;
use remoting::protocol::heartbeat::{EXPRESSION_TYPE_TAG, SUB_ALL};
use serde::Serialize;
use tokio::sync::Semaphore;

use super::consumer::StartFrom;
use super::stamp::now_micros;
use super::stats::{Counters, Latencies, LatencySummary};
use super::{parse_duration, settings};
use crate::admin::select_addr;
use crate::client::{Client, DEFAULT_TIMEOUT, PullStatus, pull_flag};
use crate::error::{Result, ToolsError};
use crate::publish::{PublishQueue, message_properties, publish_queues, send_header};
use crate::stored::scan_store_times;
use crate::time::now_millis;
use crate::uniq_id;
use body::TimerStamp;
use receipts::{Receipts, Tally};

/// `mqbench timer` options.
#[derive(Debug, Args)]
#[allow(clippy::struct_excessive_bools, reason = "independent CLI switches")]
pub struct TimerArgs {
    /// Name server address list.
    #[arg(short = 'n', long = "namesrv", env = "NAMESRV_ADDR")]
    pub namesrv: Option<String>,
    /// The topic timers are delivered to.
    #[arg(short = 't', long = "topic", default_value = "TimerBench")]
    pub topic: String,
    /// Timer messages to send (the run's N).
    #[arg(long = "messages", default_value_t = 100_000)]
    pub messages: u64,
    /// Due times are spread evenly over this long.
    #[arg(long = "window", value_parser = parse_duration, default_value = "60s")]
    pub window: std::time::Duration,
    /// The first due time is this long after the sending starts.
    #[arg(long = "lead", value_parser = parse_duration, default_value = "10s")]
    pub lead: Duration,
    /// Body size in bytes (at least 40).
    #[arg(long = "size", default_value_t = 128)]
    pub size: usize,
    /// Sender tasks.
    #[arg(long = "threads", default_value_t = 8)]
    pub threads: usize,
    /// Requests in flight per sender task.
    #[arg(long = "inflight", default_value_t = 16)]
    pub inflight: usize,
    /// TCP connections for the senders.
    #[arg(long = "connections", default_value_t = 1)]
    pub connections: usize,
    /// Total sends per second (unlimited when absent).
    #[arg(long = "rate")]
    pub rate: Option<u64>,
    /// Producer group.
    #[arg(long = "group", default_value = "mqbench_timer_producer")]
    pub group: String,
    /// Consumer group.
    #[arg(
        short = 'g',
        long = "consumer-group",
        default_value = "mqbench_timer_consumer"
    )]
    pub consumer_group: String,
    /// Where the consumer starts: the queues' last offsets (default; before the sends) or
    /// their first (a receive-only run after the sends).
    #[arg(long = "from", value_enum)]
    pub from: Option<StartFrom>,
    /// maxMsgNums per pull.
    #[arg(long = "pull-batch", default_value_t = 32)]
    pub pull_batch: i32,
    /// Long-polling suspend time in milliseconds.
    #[arg(long = "suspend-ms", default_value_t = 15_000)]
    pub suspend_ms: i64,
    /// How long after the last due time to wait for messages still missing.
    #[arg(long = "grace", value_parser = parse_duration, default_value = "10s")]
    pub grace: Duration,
    /// Send timeout in milliseconds.
    #[arg(long = "timeout-ms", default_value_t = 3000)]
    pub timeout_ms: u64,
    /// Only send (the summary gives the run id and due times for `--receive-only`).
    #[arg(long = "send-only", conflicts_with = "receive_only")]
    pub send_only: bool,
    /// Only receive the `--messages` of run `--run-id`, due by `--last-due-ms`.
    #[arg(long = "receive-only", requires_all = ["run_id", "last_due_ms"])]
    pub receive_only: bool,
    /// The run's id (default: a new one).
    #[arg(long = "run-id")]
    pub run_id: Option<u64>,
    /// With `--receive-only`: the run's last due time (epoch ms).
    #[arg(long = "last-due-ms")]
    pub last_due_ms: Option<i64>,
    /// Print the summary as JSON.
    #[arg(long = "json")]
    pub json: bool,
}

/// The `mqbench timer` summary.
#[derive(Debug, Clone, Serialize)]
pub struct TimerSummary {
    /// `timer`.
    pub role: String,
    /// Settings, as given.
    pub settings: BTreeMap<String, String>,
    /// The run's id (bodies carry it).
    pub run_id: u64,
    /// Messages sent OK (received, in a receive-only run).
    pub messages: u64,
    /// Failed sends.
    pub errors: u64,
    /// Failed sends by response code / transport error.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// The first remark of each kind.
    pub error_samples: BTreeMap<String, String>,
    /// Epoch ms of the first send.
    pub send_started_ms: i64,
    /// Epoch ms when the last send was answered.
    pub send_finished_ms: i64,
    /// Sends per second.
    pub send_tps: f64,
    /// Send round trips.
    pub send_latency: LatencySummary,
    /// Due time of message 0 (epoch ms).
    pub first_due_ms: i64,
    /// Due time of message N-1 (epoch ms).
    pub last_due_ms: i64,
    /// Messages sent after their due time (they are delivered at once; raise `--lead`).
    pub sent_after_due: u64,
    /// The smallest time between a send and its due time (ms).
    pub min_lead_ms: f64,
    /// What the consumer saw (absent with `--send-only`).
    pub receipts: Option<Receipts>,
    /// Failed pulls.
    pub pull_errors: u64,
    /// Wall time of the run (seconds).
    pub duration_secs: f64,
}

impl TimerSummary {
    /// Whether the run holds a correctness failure: a message early or missing.
    #[must_use]
    pub fn failed_checks(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(r) = &self.receipts {
            if r.early > 0 {
                out.push(format!(
                    "{} message(s) received before their due time",
                    r.early
                ));
            }
            if r.broker_early > 0 {
                out.push(format!(
                    "{} message(s) stored by the broker before their due time",
                    r.broker_early
                ));
            }
            if r.missing > 0 {
                out.push(format!("{} message(s) sent but never received", r.missing));
            }
        }
        out
    }

    /// The human-readable summary.
    #[must_use]
    pub fn text(&self) -> String {
        let l = &self.send_latency;
        let mut s = format!(
            "=== timer summary ===\nsettings:  {}\nrun id:    {}\nsent:      {} ok, {} failed, {:.1} msg/s (send p50 {:.3} ms p99 {:.3} ms)\ndue:       {} .. {} (epoch ms); sent after due {}, least lead {:.1} ms",
            self.settings
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            self.run_id,
            self.messages,
            self.errors,
            self.send_tps,
            l.p50_ms,
            l.p99_ms,
            self.first_due_ms,
            self.last_due_ms,
            self.sent_after_due,
            self.min_lead_ms,
        );
        if let Some(r) = &self.receipts {
            let (c, b) = (&r.lateness, &r.broker_lateness);
            s.push_str(&format!(
                "\nreceived:  {} distinct, {} duplicates, {} missing, {} early (max {:.3} ms early), {} stored early, {} foreign\nlateness:  p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  p99.9 {:.3} ms  max {:.3} ms  mean {:.3} ms (consumer receipt - due)\nbroker:    p50 {:.0} ms  p90 {:.0} ms  p99 {:.0} ms  max {:.0} ms (store timestamp - due)\npull errors: {}",
                r.received, r.duplicates, r.missing, r.early, r.early_max_ms, r.broker_early, r.foreign,
                c.p50_ms, c.p90_ms, c.p99_ms, c.p999_ms, c.max_ms, c.mean_ms,
                b.p50_ms, b.p90_ms, b.p99_ms, b.max_ms,
                self.pull_errors,
            ));
        }
        for (kind, n) in &self.errors_by_kind {
            let sample = self.error_samples.get(kind).map_or("", String::as_str);
            s.push_str(&format!("\n  {kind}: {n}  (first: {})", sample.trim()));
        }
        for f in self.failed_checks() {
            s.push_str(&format!("\nFAILED:    {f}"));
        }
        s
    }
}

/// The due time of message `index` of `n` (see the module docs).
#[must_use]
pub fn due_ms(start_ms: i64, lead_ms: i64, window_ms: i64, index: u64, n: u64) -> i64 {
    let n = n.max(1);
    let spread = i128::from(window_ms) * i128::from(index) / i128::from(n);
    start_ms + lead_ms + i64::try_from(spread).unwrap_or(window_ms)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A new run id: this process and the time, distinct between runs.
fn new_run_id() -> u64 {
    let micros = u64::try_from(now_micros()).unwrap_or(0);
    micros ^ (u64::from(std::process::id()) << 44)
}

/// What the senders share.
struct SendPlan {
    queues: Vec<PublishQueue>,
    topic: String,
    group: String,
    run_id: u64,
    n: u64,
    size: usize,
    start_ms: i64,
    lead_ms: i64,
    window_ms: i64,
    timeout: Duration,
    inflight: usize,
    pace: Option<Duration>,
    next: AtomicU64,
    counters: Counters,
    latencies: Latencies,
    sent_after_due: AtomicU64,
    min_lead_us: AtomicI64,
}

async fn send_loop(
    plan: Arc<SendPlan>,
    client: Client,
    tally: Arc<Tally>,
    ids: Arc<message::id::UniqIdGenerator>,
) {
    let window = Arc::new(Semaphore::new(plan.inflight.max(1)));
    let recorder = plan.latencies.recorder();
    let mut next_at = tokio::time::Instant::now();
    loop {
        let index = plan.next.fetch_add(1, Ordering::Relaxed);
        if index >= plan.n {
            break;
        }
        if let Some(pace) = plan.pace {
            tokio::time::sleep_until(next_at).await;
            next_at += pace;
        }
        let queue = &plan.queues[usize::try_from(index).unwrap_or(0) % plan.queues.len()];
        let due = due_ms(plan.start_ms, plan.lead_ms, plan.window_ms, index, plan.n);
        let now = now_millis();
        let mut props = message_properties(None, None, &ids.next_at(now));
        props.insert(keys::TIMER_DELIVER_MS, due.to_string());
        let header = send_header(&plan.group, &plan.topic, queue, &props, now, false);
        let Ok(permit) = Arc::clone(&window).acquire_owned().await else {
            return;
        };
        let sent_us = now_micros();
        let lead_us = due.saturating_mul(1000) - sent_us;
        plan.min_lead_us.fetch_min(lead_us, Ordering::Relaxed);
        if lead_us < 0 {
            plan.sent_after_due.fetch_add(1, Ordering::Relaxed);
        }
        let body = TimerStamp {
            run_id: plan.run_id,
            index,
            due_ms: due,
            sent_us,
        }
        .encode(plan.size);
        let (plan, client, tally, recorder, addr) = (
            Arc::clone(&plan),
            client.clone(),
            Arc::clone(&tally),
            recorder.clone(),
            queue.addr.clone(),
        );
        tokio::spawn(async move {
            let started = Instant::now();
            match client.send(&addr, &header, body, false, plan.timeout).await {
                Ok(r) if r.code == 0 => {
                    recorder.record(started.elapsed());
                    tally.sent(index);
                    plan.counters.ok(1, plan.size as u64);
                }
                Ok(r) => plan
                    .counters
                    .error(Some(r.code), "", crate::client::send_status(r.code)),
                Err(e) => plan
                    .counters
                    .error(e.response_code(), "send failed", &e.detail()),
            }
            drop(permit);
        });
    }
    let _ = window
        .acquire_many(u32::try_from(plan.inflight.max(1)).unwrap_or(u32::MAX))
        .await;
}

/// One queue's long-polling pull loop.
struct PullLoop {
    client: Client,
    addr: String,
    topic: String,
    group: String,
    queue_id: i32,
    offset: i64,
    pull_batch: i32,
    suspend_ms: i64,
    tally: Arc<Tally>,
    errors: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl PullLoop {
    async fn run(mut self) {
        let rpc_timeout = Duration::from_millis(u64::try_from(self.suspend_ms).unwrap_or(15_000))
            + Duration::from_secs(15);
        let batch = usize::try_from(self.pull_batch).unwrap_or(32);
        let mut stamps = Vec::with_capacity(batch);
        while !self.stop.load(Ordering::Relaxed) {
            let header = PullMessageRequestHeader {
                consumer_group: self.group.clone(),
                topic: self.topic.clone(),
                queue_id: self.queue_id,
                queue_offset: self.offset,
                max_msg_nums: self.pull_batch,
                sys_flag: pull_flag::SUSPEND | pull_flag::SUBSCRIPTION,
                commit_offset: 0,
                suspend_timeout_millis: self.suspend_ms,
                subscription: Some(SUB_ALL.to_owned()),
                sub_version: 0,
                expression_type: Some(EXPRESSION_TYPE_TAG.to_owned()),
                ..PullMessageRequestHeader::default()
            };
            match self.client.pull(&self.addr, &header, rpc_timeout).await {
                Ok(r) => {
                    if r.status == PullStatus::Found {
                        // One receive time for the whole response: it arrived at once.
                        let received_us = now_micros();
                        let mut found = Vec::with_capacity(batch);
                        stamps.clear();
                        if scan_store_times(&r.body, &mut found).is_err() {
                            self.errors.fetch_add(1, Ordering::Relaxed);
                        }
                        stamps.extend(found.iter().filter_map(|(store_ms, body)| {
                            TimerStamp::decode(body).map(|s| (s, *store_ms))
                        }));
                        self.tally.record(received_us, &stamps);
                    }
                    self.offset = r.next_begin_offset;
                }
                Err(_) => {
                    self.errors.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }
}

/// Starts a pull loop on every readable queue of `topic`.
async fn start_consumer(
    client: &Client,
    args: &TimerArgs,
    from: StartFrom,
    tally: &Arc<Tally>,
    errors: &Arc<AtomicU64>,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<tokio::task::JoinHandle<()>>> {
    let topic = args.topic.trim();
    let route = client.fetch_route(topic).await?;
    let mut handles = Vec::new();
    for q in &route.queue_datas {
        if !perm::is_readable(q.perm) {
            continue;
        }
        let Some(addr) = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == q.broker_name)
            .and_then(select_addr)
        else {
            continue;
        };
        for queue_id in 0..q.read_queue_nums {
            let offset = match from {
                StartFrom::Last => client.max_offset(addr, topic, queue_id).await?,
                StartFrom::First => client.min_offset(addr, topic, queue_id).await?,
            };
            let l = PullLoop {
                client: client.clone(),
                addr: addr.to_owned(),
                topic: topic.to_owned(),
                group: args.consumer_group.clone(),
                queue_id,
                offset,
                pull_batch: args.pull_batch,
                suspend_ms: args.suspend_ms,
                tally: Arc::clone(tally),
                errors: Arc::clone(errors),
                stop: Arc::clone(stop),
            };
            handles.push(tokio::spawn(l.run()));
        }
    }
    if handles.is_empty() {
        return Err(ToolsError::NoRoute {
            topic: topic.to_owned(),
            remark: "no readable queue on any broker".to_owned(),
        });
    }
    Ok(handles)
}

/// Prints a line a second: sends, receipts, the interval's lateness.
async fn progress(
    plan: Option<Arc<SendPlan>>,
    tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
    err: Arc<parking_lot::Mutex<Box<dyn Write + Send>>>,
) {
    let start = Instant::now();
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    // A receive-only run expects all of the run's messages from the start.
    let sent_now = || {
        plan.as_ref().map_or(tally.len() as u64, |p| {
            p.counters.messages.load(Ordering::Relaxed)
        })
    };
    let (mut last_sent, mut last_received) = (sent_now(), 0);
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let sent = sent_now();
        let received = tally.received();
        let l = tally.interval();
        let _ = writeln!(
            err.lock(),
            "[{:>4}s] sent {:>7} msg/s  received {:>7} msg/s  pending {:>8}  lateness p50 {:>7.3} ms  p99 {:>8.3} ms  max {:>8.3} ms",
            start.elapsed().as_secs(),
            sent.saturating_sub(last_sent),
            received.saturating_sub(last_received),
            sent.saturating_sub(received),
            l.p50_ms,
            l.p99_ms,
            l.max_ms
        );
        (last_sent, last_received) = (sent, received);
    }
}

/// Runs the timer benchmark and returns its summary.
///
/// # Errors
/// Bad options, no name server, or no route.
#[allow(clippy::too_many_lines, reason = "the run's sequence, top to bottom")]
#[allow(clippy::cast_precision_loss, reason = "rates for display")]
pub async fn run(
    args: &TimerArgs,
    err: Arc<parking_lot::Mutex<Box<dyn Write + Send>>>,
) -> Result<TimerSummary> {
    let namesrv = super::namesrv_list(args.namesrv.as_deref())?;
    if args.threads == 0 || args.connections == 0 || args.messages == 0 {
        return Err(ToolsError::Usage(
            "--threads, --connections and --messages must be at least 1".to_owned(),
        ));
    }
    let n = usize::try_from(args.messages)
        .map_err(|_| ToolsError::Usage("--messages is too large".to_owned()))?;
    let started = Instant::now();
    let run_id = args.run_id.unwrap_or_else(new_run_id);
    let tally = Arc::new(Tally::new(run_id, n, args.receive_only));
    let stop = Arc::new(AtomicBool::new(false));
    let pull_errors = Arc::new(AtomicU64::new(0));
    let clients: Vec<Client> = (0..args.connections)
        .map(|_| {
            Client::with_remoting(
                RemotingClient::new(RemotingConfig::default()),
                namesrv.clone(),
                DEFAULT_TIMEOUT,
            )
        })
        .collect();
    let consumer_client = Client::new(namesrv.clone(), DEFAULT_TIMEOUT);
    let topic = args.topic.trim().to_owned();
    // The consumer starts before the sends when the topic exists, so nothing delivered
    // is missed; a topic the sends create is read from its first offset.
    let mut pullers = Vec::new();
    let mut deferred = false;
    if !args.send_only {
        let from = args.from.unwrap_or(if args.receive_only {
            StartFrom::First
        } else {
            StartFrom::Last
        });
        match start_consumer(&consumer_client, args, from, &tally, &pull_errors, &stop).await {
            Ok(h) => pullers = h,
            Err(ToolsError::NoRoute { .. }) if !args.receive_only => deferred = true,
            Err(e) => return Err(e),
        }
    }
    let mut summary = TimerSummary {
        role: "timer".to_owned(),
        settings: settings([
            ("topic", topic.clone()),
            ("messages", args.messages.to_string()),
            ("window_ms", millis(args.window).to_string()),
            ("lead_ms", millis(args.lead).to_string()),
            ("size", args.size.max(body::MIN_SIZE).to_string()),
            ("threads", args.threads.to_string()),
            ("inflight", args.inflight.to_string()),
            ("connections", args.connections.to_string()),
            (
                "rate",
                args.rate.map_or("unlimited".to_owned(), |r| r.to_string()),
            ),
            (
                "mode",
                if args.send_only {
                    "send-only"
                } else if args.receive_only {
                    "receive-only"
                } else {
                    "send+receive"
                }
                .to_owned(),
            ),
        ]),
        run_id,
        messages: 0,
        errors: 0,
        errors_by_kind: BTreeMap::new(),
        error_samples: BTreeMap::new(),
        send_started_ms: 0,
        send_finished_ms: 0,
        send_tps: 0.0,
        send_latency: LatencySummary::default(),
        first_due_ms: 0,
        last_due_ms: args.last_due_ms.unwrap_or(0),
        sent_after_due: 0,
        min_lead_ms: 0.0,
        receipts: None,
        pull_errors: 0,
        duration_secs: 0.0,
    };
    let mut plan = None;
    if !args.receive_only {
        let (queues, _) = publish_queues(&clients[0], &topic).await?;
        let pace = args
            .rate
            .filter(|r| *r > 0)
            .map(|rate| Duration::from_secs_f64(args.threads as f64 / rate as f64));
        let start_ms = now_millis();
        let p = Arc::new(SendPlan {
            queues,
            topic: topic.clone(),
            group: args.group.clone(),
            run_id,
            n: args.messages,
            size: args.size.max(body::MIN_SIZE),
            start_ms,
            lead_ms: millis(args.lead),
            window_ms: millis(args.window),
            timeout: Duration::from_millis(args.timeout_ms),
            inflight: args.inflight,
            pace,
            next: AtomicU64::new(0),
            counters: Counters::default(),
            latencies: Latencies::default(),
            sent_after_due: AtomicU64::new(0),
            min_lead_us: AtomicI64::new(i64::MAX),
        });
        summary.first_due_ms = due_ms(start_ms, p.lead_ms, p.window_ms, 0, p.n);
        summary.last_due_ms = due_ms(start_ms, p.lead_ms, p.window_ms, p.n - 1, p.n);
        plan = Some(p);
    }
    let _ = writeln!(
        err.lock(),
        "mqbench timer: topic={topic} run={run_id} messages={} window={:?} lead={:?} pullers={}{}",
        args.messages,
        args.window,
        args.lead,
        pullers.len(),
        if deferred {
            " (the topic has no route yet: the consumer starts after the sends)"
        } else {
            ""
        }
    );
    let reporter = tokio::spawn(progress(
        plan.clone(),
        Arc::clone(&tally),
        Arc::clone(&stop),
        Arc::clone(&err),
    ));
    if let Some(p) = &plan {
        summary.send_started_ms = now_millis();
        let send_clock = Instant::now();
        let ids = Arc::new(uniq_id::local_generator());
        let senders: Vec<_> = (0..args.threads)
            .map(|i| {
                tokio::spawn(send_loop(
                    Arc::clone(p),
                    clients[i % clients.len()].clone(),
                    Arc::clone(&tally),
                    Arc::clone(&ids),
                ))
            })
            .collect();
        for s in senders {
            let _ = s.await;
        }
        summary.send_finished_ms = now_millis();
        let secs = send_clock.elapsed().as_secs_f64().max(1e-9);
        let _ = p.latencies.interval();
        summary.messages = p.counters.messages.load(Ordering::Relaxed);
        summary.errors = p.counters.errors.load(Ordering::Relaxed);
        summary.errors_by_kind = p.counters.errors_by_kind();
        summary.error_samples = p.counters.error_samples();
        summary.send_tps = summary.messages as f64 / secs;
        summary.send_latency = LatencySummary::of(&p.latencies.total());
        summary.sent_after_due = p.sent_after_due.load(Ordering::Relaxed);
        let least = p.min_lead_us.load(Ordering::Relaxed);
        summary.min_lead_ms = if least == i64::MAX {
            0.0
        } else {
            least as f64 / 1000.0
        };
        if deferred {
            pullers = start_consumer(
                &consumer_client,
                args,
                StartFrom::First,
                &tally,
                &pull_errors,
                &stop,
            )
            .await?;
        }
    }
    if !args.send_only {
        let expected = if args.receive_only {
            args.messages
        } else {
            summary.messages
        };
        let until = summary.last_due_ms + millis(args.grace);
        while tally.received() < expected && now_millis() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        summary.receipts = Some(tally.receipts());
        if args.receive_only {
            summary.messages = tally.received();
        }
    }
    stop.store(true, Ordering::Relaxed);
    // Pulls parked in long polling are abandoned, not awaited.
    for h in &pullers {
        h.abort();
    }
    let _ = reporter.await;
    summary.pull_errors = pull_errors.load(Ordering::Relaxed);
    summary.duration_secs = started.elapsed().as_secs_f64();
    for c in &clients {
        c.shutdown();
    }
    consumer_client.shutdown();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_times_spread_evenly_over_the_window_after_the_lead() {
        let start = 1_764_600_000_000;
        assert_eq!(due_ms(start, 10_000, 60_000, 0, 100_000), start + 10_000);
        assert_eq!(
            due_ms(start, 10_000, 60_000, 50_000, 100_000),
            start + 40_000
        );
        assert_eq!(
            due_ms(start, 10_000, 60_000, 99_999, 100_000),
            start + 69_999
        );
        assert_eq!(due_ms(start, 0, 60_000, 0, 0), start);
        let dues: Vec<i64> = (0..1000).map(|i| due_ms(0, 0, 60_000, i, 1000)).collect();
        assert!(dues.windows(2).all(|w| w[1] - w[0] == 60));
    }
}
