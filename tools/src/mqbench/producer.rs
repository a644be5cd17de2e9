//! `mqbench producer`.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use clap::{Args, ValueEnum};
use message::batch::BatchEntry;
use message::id::UniqIdGenerator;
use remoting::client::ClientConfig as RemotingConfig;
use remoting::{RemotingClient, RemotingError};
use tokio::sync::Semaphore;

use super::chart::ChartArgs;
use super::stats::{Recorder, Summary};
use super::status::{StatusArgs, StatusLine};
use super::{Run, parse_duration, report_progress, settings};
use crate::client::{Client, DEFAULT_TIMEOUT};
use crate::error::{Result, ToolsError};
use crate::publish::{
    PublishQueue, batch_header_properties, message_properties, publish_queues, send_header,
};
use crate::time::now_millis;
use crate::uniq_id;

/// How requests are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// One request at a time per thread, waiting for each response.
    Sync,
    /// Up to `--inflight` requests outstanding per thread.
    Async,
    /// Fire and forget (no response; latency is the time to hand the frame to the socket).
    Oneway,
}

/// `mqbench producer` options.
#[derive(Debug, Args)]
pub struct ProducerArgs {
    /// Name server address list.
    #[arg(short = 'n', long = "namesrv", env = "NAMESRV_ADDR")]
    pub namesrv: Option<String>,
    /// Topic (created by the broker on first send if it allows auto-create). With
    /// `--topics N` (N > 1) the topics are `TOPIC-0` .. `TOPIC-(N-1)`, as `mqbench topics`
    /// creates them.
    #[arg(short = 't', long = "topic", default_value = "BenchmarkTest")]
    pub topic: String,
    /// Number of topics to spread the sends over (round robin over every queue of each).
    #[arg(long = "topics", default_value_t = 1)]
    pub topics: usize,
    /// Body size in bytes.
    #[arg(long = "size", default_value_t = 1024)]
    pub size: usize,
    /// Sender tasks.
    #[arg(long = "threads", default_value_t = 16)]
    pub threads: usize,
    /// How long to send (at most, with `--messages`).
    #[arg(long = "duration", value_parser = parse_duration, default_value = "30s")]
    pub duration: Duration,
    /// Stop once this many messages are stored (e.g. to fill a backlog of a given size).
    #[arg(long = "messages")]
    pub messages: Option<u64>,
    /// sync, async or oneway.
    #[arg(long = "mode", value_enum, default_value_t = Mode::Sync)]
    pub mode: Mode,
    /// Messages per request (> 1: SEND_BATCH_MESSAGE).
    #[arg(long = "batch", default_value_t = 1)]
    pub batch: usize,
    /// TCP connections per broker (threads are spread over them).
    #[arg(long = "connections", default_value_t = 1)]
    pub connections: usize,
    /// Total messages per second (unlimited when absent).
    #[arg(long = "rate")]
    pub rate: Option<u64>,
    /// Requests in flight per thread in async mode.
    #[arg(long = "inflight", default_value_t = 32)]
    pub inflight: usize,
    /// Producer group.
    #[arg(long = "group", default_value = "mqbench_producer")]
    pub group: String,
    /// Tag of every message.
    #[arg(long = "tag")]
    pub tag: Option<String>,
    /// Send timeout in milliseconds.
    #[arg(long = "timeout-ms", default_value_t = 3000)]
    pub timeout_ms: u64,
    /// Print the summary as JSON.
    #[arg(long = "json")]
    pub json: bool,
    /// The live status line.
    #[command(flatten)]
    pub status: StatusArgs,
    /// The chart of the run.
    #[command(flatten)]
    pub chart: ChartArgs,
    /// Stamp each body with its send time in microseconds (`mqbench consumer` then measures
    /// end-to-end latency from it instead of the millisecond born timestamp); costs an
    /// allocation per message.
    #[arg(long = "stamp")]
    pub stamp: bool,
    /// Give every message the user property NAME = its number modulo 100 (`0`..`99`, in
    /// send order over all threads), so a SQL92 consumer can select a known share of
    /// them (`NAME < 1`: 1%).
    #[arg(long = "bucket-property", value_name = "NAME")]
    pub bucket_property: Option<String>,
}

/// One queue to send to, with its topic.
#[derive(Debug, Clone)]
struct Target {
    topic: Arc<str>,
    queue: PublishQueue,
}

struct Worker {
    run: Arc<Run>,
    client: Client,
    queues: Arc<Vec<Target>>,
    ids: Arc<UniqIdGenerator>,
    body: Bytes,
    args: Arc<ArgsView>,
    recorder: Recorder,
    index: usize,
}

/// The options a worker needs (cheap to share).
struct ArgsView {
    group: String,
    tag: Option<String>,
    batch: usize,
    mode: Mode,
    inflight: usize,
    timeout: Duration,
    /// Per worker interval between requests when rate-limited.
    pace: Option<Duration>,
    /// Stamp single-message bodies with the send time (µs).
    stamp: bool,
    threads: usize,
    /// `--bucket-property` and the message counter it numbers.
    bucket: Option<(String, AtomicU64)>,
}

impl ArgsView {
    /// The properties of the next message.
    fn properties(&self, uniq_key: &str) -> message::properties::Properties {
        let mut p = message_properties(self.tag.as_deref(), None, uniq_key);
        if let Some((name, counter)) = &self.bucket {
            let n = counter.fetch_add(1, Ordering::Relaxed) % 100;
            p.insert(name.as_str(), n.to_string());
        }
        p
    }
}

fn transport_kind(e: &ToolsError) -> String {
    match e {
        ToolsError::Remoting { source, .. } => match source {
            RemotingError::Timeout { .. } => "timeout".to_owned(),
            RemotingError::ConnectionClosed(_) => "connection closed".to_owned(),
            RemotingError::Connect { .. } | RemotingError::ConnectTimeout { .. } => {
                "connect failed".to_owned()
            }
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}

impl Worker {
    /// The request for the next send: header and body.
    fn next_request(
        &self,
        topic: &str,
        queue: &PublishQueue,
    ) -> Result<(
        remoting::protocol::broker::SendMessageRequestHeaderV2,
        Bytes,
        bool,
    )> {
        let a = &self.args;
        let now = now_millis();
        if a.batch <= 1 {
            let props = a.properties(&self.ids.next_at(now));
            let body = if a.stamp {
                super::stamp::stamped(self.body.len(), super::stamp::now_micros())
            } else {
                self.body.clone()
            };
            return Ok((
                send_header(&a.group, topic, queue, &props, now, false),
                body,
                false,
            ));
        }
        let properties: Vec<String> = (0..a.batch)
            .map(|_| a.properties(&self.ids.next_at(now)).encode())
            .collect();
        let entries: Vec<BatchEntry<'_>> = properties
            .iter()
            .map(|p| BatchEntry {
                flag: 0,
                body: &self.body[..],
                properties: p,
            })
            .collect();
        let mut buf = BytesMut::new();
        message::batch::encode(&entries, &mut buf)?;
        let props = batch_header_properties();
        Ok((
            send_header(&a.group, topic, queue, &props, now, true),
            buf.freeze(),
            true,
        ))
    }

    #[allow(clippy::too_many_arguments, reason = "one send with its accounting")]
    async fn send_one(
        client: &Client,
        run: &Run,
        recorder: &Recorder,
        queue: &PublishQueue,
        header: &remoting::protocol::broker::SendMessageRequestHeaderV2,
        body: Bytes,
        batch: bool,
        messages: u64,
        payload: u64,
        timeout: Duration,
    ) {
        let started = Instant::now();
        match client.send(&queue.addr, header, body, batch, timeout).await {
            Ok(r) if r.code == 0 => {
                recorder.record(started.elapsed());
                run.counters.ok(messages, payload);
            }
            // Stored, but not as asked (FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT,
            // SLAVE_NOT_AVAILABLE): an error by code, as a benchmark must see it.
            Ok(r) => run
                .counters
                .error(Some(r.code), "", crate::client::send_status(r.code)),
            Err(e) => run
                .counters
                .error(e.response_code(), &transport_kind(&e), &e.detail()),
        }
    }

    async fn run(self) {
        let a = Arc::clone(&self.args);
        let window = Arc::new(Semaphore::new(a.inflight.max(1)));
        let messages = a.batch.max(1) as u64;
        let payload = messages * self.body.len() as u64;
        let mut seq = self.index;
        let mut next_at = tokio::time::Instant::now();
        while !self.run.stopped() {
            if let Some(pace) = a.pace {
                tokio::time::sleep_until(next_at).await;
                next_at += pace;
            }
            let target = &self.queues[seq % self.queues.len()];
            let queue = &target.queue;
            seq = seq.wrapping_add(a.threads);
            let (header, body, batch) = match self.next_request(&target.topic, queue) {
                Ok(r) => r,
                Err(e) => {
                    self.run
                        .counters
                        .error(None, "request encoding", &e.to_string());
                    return;
                }
            };
            match a.mode {
                Mode::Sync => {
                    Self::send_one(
                        &self.client,
                        &self.run,
                        &self.recorder,
                        queue,
                        &header,
                        body,
                        batch,
                        messages,
                        payload,
                        a.timeout,
                    )
                    .await;
                }
                Mode::Async => {
                    let Ok(permit) = Arc::clone(&window).acquire_owned().await else {
                        return;
                    };
                    let (client, run, recorder, queue) = (
                        self.client.clone(),
                        Arc::clone(&self.run),
                        self.recorder.clone(),
                        queue.clone(),
                    );
                    let timeout = a.timeout;
                    tokio::spawn(async move {
                        Self::send_one(
                            &client, &run, &recorder, &queue, &header, body, batch, messages,
                            payload, timeout,
                        )
                        .await;
                        drop(permit);
                    });
                }
                Mode::Oneway => {
                    let started = Instant::now();
                    match self
                        .client
                        .send_oneway(&queue.addr, &header, body, batch)
                        .await
                    {
                        Ok(()) => {
                            self.recorder.record(started.elapsed());
                            self.run.counters.ok(messages, payload);
                        }
                        Err(e) => {
                            self.run
                                .counters
                                .error(None, &transport_kind(&e), &e.detail());
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                }
            }
        }
        // Drain the async window: every permit back means every response is in.
        let _ = window
            .acquire_many(u32::try_from(a.inflight.max(1)).unwrap_or(u32::MAX))
            .await;
    }
}

/// Runs the producer benchmark and returns its summary.
///
/// # Errors
/// Bad options, no name server, or no writable route.
pub async fn run(
    args: &ProducerArgs,
    err: Arc<parking_lot::Mutex<Box<dyn Write + Send>>>,
) -> Result<Summary> {
    let namesrv = super::namesrv_list(args.namesrv.as_deref())?;
    if args.threads == 0 || args.connections == 0 || args.batch == 0 {
        return Err(ToolsError::Usage(
            "--threads, --connections and --batch must be at least 1".to_owned(),
        ));
    }
    let timeout = Duration::from_millis(args.timeout_ms);
    let clients: Vec<Client> = (0..args.connections)
        .map(|_| {
            Client::with_remoting(
                RemotingClient::new(RemotingConfig::default()),
                namesrv.clone(),
                DEFAULT_TIMEOUT,
            )
        })
        .collect();
    let topics = topic_names(args.topic.trim(), args.topics);
    let queues = lookup_targets(&clients[0], &topics, &err).await?;
    let queues = Arc::new(queues);
    let pace = args.rate.filter(|r| *r > 0).map(|rate| {
        // Each worker sends `batch` messages per request.
        let per_worker = rate as f64 / args.threads as f64 / args.batch as f64;
        Duration::from_secs_f64(1.0 / per_worker.max(1e-6))
    });
    let view = Arc::new(ArgsView {
        group: args.group.clone(),
        tag: args.tag.clone(),
        batch: args.batch,
        mode: args.mode,
        inflight: if args.mode == Mode::Async {
            args.inflight
        } else {
            1
        },
        timeout,
        pace,
        stamp: args.stamp,
        threads: args.threads,
        bucket: args
            .bucket_property
            .clone()
            .map(|name| (name, AtomicU64::new(0))),
    });
    let run = Arc::new(Run::default());
    let ids = Arc::new(uniq_id::local_generator());
    let body = Bytes::from(vec![b'x'; args.size]);
    let header = format!(
        "mqbench producer: topic={} topics={} queues={} size={} threads={} mode={:?} batch={} connections={} rate={}",
        args.topic.trim(),
        topics.len(),
        queues.len(),
        args.size,
        args.threads,
        args.mode,
        args.batch,
        args.connections,
        args.rate.map_or("unlimited".to_owned(), |r| r.to_string())
    );
    let _ = writeln!(err.lock(), "{header}");
    let (status_line, err) = StatusLine::start(&args.status, &run, "sent", true, err);
    let started = Instant::now();
    let reporter = tokio::spawn(report_progress(Arc::clone(&run), "sent", Arc::clone(&err)));
    let mut workers = Vec::with_capacity(args.threads);
    for index in 0..args.threads {
        let w = Worker {
            run: Arc::clone(&run),
            client: clients[index % clients.len()].clone(),
            queues: Arc::clone(&queues),
            ids: Arc::clone(&ids),
            body: body.clone(),
            args: Arc::clone(&view),
            recorder: run.latencies.recorder(),
            index,
        };
        workers.push(tokio::spawn(w.run()));
    }
    match args.messages {
        None => tokio::time::sleep(args.duration).await,
        Some(total) => {
            let deadline = tokio::time::Instant::now() + args.duration;
            while tokio::time::Instant::now() < deadline
                && run.counters.messages.load(Ordering::Relaxed) < total
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    run.stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.await;
    }
    let elapsed = started.elapsed();
    let _ = reporter.await;
    status_line.finish();
    args.chart.write(&header, "send latency", &run.timeline)?;
    let _ = run.latencies.interval();
    for c in &clients {
        c.shutdown();
    }
    Ok(Summary::new(
        "producer",
        settings([
            ("topic", args.topic.trim().to_owned()),
            ("topics", topics.len().to_string()),
            ("size", args.size.to_string()),
            ("threads", args.threads.to_string()),
            ("mode", format!("{:?}", args.mode).to_lowercase()),
            ("batch", args.batch.to_string()),
            ("connections", args.connections.to_string()),
            (
                "rate",
                args.rate.map_or("unlimited".to_owned(), |r| r.to_string()),
            ),
            ("inflight", view.inflight.to_string()),
            (
                "messages",
                args.messages
                    .map_or("unlimited".to_owned(), |m| m.to_string()),
            ),
        ]),
        elapsed,
        &run.counters,
        &run.latencies.total(),
    ))
}

/// `[topic]` for one topic, `topic-0 .. topic-(n-1)` for more.
#[must_use]
pub fn topic_names(topic: &str, n: usize) -> Vec<String> {
    if n <= 1 {
        vec![topic.to_owned()]
    } else {
        (0..n).map(|i| format!("{topic}-{i}")).collect()
    }
}

/// Route lookups of many topics at once (at most this many in flight).
const ROUTE_LOOKUPS_IN_FLIGHT: usize = 32;

/// The writable queues of every topic, topic by topic. Topics without a route go through
/// TBW102 (the broker creates them on first send).
async fn lookup_targets(
    client: &Client,
    topics: &[String],
    err: &Arc<parking_lot::Mutex<Box<dyn Write + Send>>>,
) -> Result<Vec<Target>> {
    type Lookup = Result<(Vec<PublishQueue>, bool)>;
    let mut results: Vec<Option<Lookup>> = (0..topics.len()).map(|_| None).collect();
    let mut pending = tokio::task::JoinSet::new();
    let mut next = 0;
    while next < topics.len() || !pending.is_empty() {
        while next < topics.len() && pending.len() < ROUTE_LOOKUPS_IN_FLIGHT {
            let (client, topic, i) = (client.clone(), topics[next].clone(), next);
            pending.spawn(async move { (i, publish_queues(&client, &topic).await) });
            next += 1;
        }
        if let Some(Ok((i, r))) = pending.join_next().await {
            results[i] = Some(r);
        }
    }
    let mut targets = Vec::new();
    let mut auto_created = 0usize;
    for (topic, r) in topics.iter().zip(results) {
        let Some(r) = r else {
            return Err(ToolsError::Usage(format!(
                "route lookup of {topic} did not finish"
            )));
        };
        let (queues, auto_create) = r?;
        auto_created += usize::from(auto_create);
        let topic: Arc<str> = Arc::from(topic.as_str());
        targets.extend(queues.into_iter().map(|queue| Target {
            topic: Arc::clone(&topic),
            queue,
        }));
    }
    if auto_created > 0 {
        let _ = writeln!(
            err.lock(),
            "{auto_created} of {} topic(s) have no route yet: sending through TBW102, the broker creates them",
            topics.len()
        );
    }
    Ok(targets)
}
