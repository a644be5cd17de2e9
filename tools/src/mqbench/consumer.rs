//! `mqbench consumer`: one long-polling pull loop per readable queue of the topic.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use remoting::protocol::broker::PullMessageRequestHeader;
use remoting::protocol::constants::perm;
use std::collections::BTreeSet;

use remoting::fastjson::{self, KeyStyle};
use remoting::protocol::heartbeat::{
    ConsumeFromWhere, ConsumeType, ConsumerData, EXPRESSION_TYPE_SQL92, EXPRESSION_TYPE_TAG,
    HeartbeatData, MessageModel, SUB_ALL, SubscriptionData,
};
use remoting::{RemotingCommand, RequestCode};

use super::chart::ChartArgs;
use super::stamp;
use super::stats::{Recorder, Summary};
use super::status::{StatusArgs, StatusLine};
use super::{Run, parse_duration, report_progress, settings};
use crate::admin::select_addr;
use crate::client::{Client, DEFAULT_TIMEOUT, PullStatus, pull_flag};
use crate::error::{Result, ToolsError};
use crate::stored::scan_records;
use crate::time::now_millis;

/// Where a queue's consumption starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StartFrom {
    /// The queue's max offset: only messages sent from now on.
    Last,
    /// The queue's min offset: everything stored.
    First,
}

/// `mqbench consumer` options.
#[derive(Debug, Args)]
pub struct ConsumerArgs {
    /// Name server address list.
    #[arg(short = 'n', long = "namesrv", env = "NAMESRV_ADDR")]
    pub namesrv: Option<String>,
    /// Topic (with `--topics N`, N > 1: `TOPIC-0` .. `TOPIC-(N-1)`).
    #[arg(short = 't', long = "topic", default_value = "BenchmarkTest")]
    pub topic: String,
    /// Number of topics to consume.
    #[arg(long = "topics", default_value_t = 1)]
    pub topics: usize,
    /// Consumer group.
    #[arg(short = 'g', long = "group", default_value = "mqbench_consumer")]
    pub group: String,
    /// How long to consume.
    #[arg(long = "duration", value_parser = parse_duration, default_value = "30s")]
    pub duration: Duration,
    /// Start at the last (default) or first offset of each queue.
    #[arg(long = "from", value_enum, default_value_t = StartFrom::Last)]
    pub from: StartFrom,
    /// maxMsgNums per pull.
    #[arg(long = "pull-batch", default_value_t = 32)]
    pub pull_batch: i32,
    /// Long-polling suspend time in milliseconds.
    #[arg(long = "suspend-ms", default_value_t = 15_000)]
    pub suspend_ms: i64,
    /// Stop each queue once it reaches the max offset it had at the start, and the run
    /// once every queue has (or `--duration` passes): a backlog catch-up read, timed.
    #[arg(long = "catch-up")]
    pub catch_up: bool,
    /// Subscribe with this SQL92 expression (pulls carry it, as a lite pull consumer's
    /// do) instead of every tag.
    #[arg(long = "sql", value_name = "EXPRESSION")]
    pub sql: Option<String>,
    /// Register the subscription with a heartbeat to every broker of the topic (again
    /// every 20 s), and pull without it, as a push consumer does (the broker filters
    /// with what the heartbeat registered). With `--duration 0s`: register and exit.
    #[arg(long = "heartbeat")]
    pub heartbeat: bool,
    /// Print the summary as JSON.
    #[arg(long = "json")]
    pub json: bool,
    /// The live status line.
    #[command(flatten)]
    pub status: StatusArgs,
    /// The chart of the run.
    #[command(flatten)]
    pub chart: ChartArgs,
}

struct QueueLoop {
    run: Arc<Run>,
    client: Client,
    addr: String,
    topic: String,
    group: String,
    queue_id: i32,
    offset: i64,
    /// With `--catch-up`: where this queue is done.
    until: Option<i64>,
    pull_batch: i32,
    suspend_ms: i64,
    /// (expression type, expression) of every pull.
    subscription: Arc<(String, String)>,
    /// Pull without the subscription (`--heartbeat` registered it).
    registered: bool,
    recorder: Recorder,
}

/// The subscription version `--heartbeat` registers (fixed: registering again keeps
/// what the broker compiled).
const SUB_VERSION: i64 = 1;

/// How often `--heartbeat` repeats its heartbeat (brokers expire clients after 120 s).
const HEARTBEAT_EVERY: Duration = Duration::from_secs(20);

/// A HEART_BEAT of one consumer of `group` subscribing `topic` with `subscription`.
fn heartbeat_request(
    group: &str,
    topic: &str,
    subscription: &(String, String),
) -> Result<RemotingCommand> {
    let (ty, expression) = subscription;
    let sub = if ty == EXPRESSION_TYPE_TAG {
        SubscriptionData::build_tag(topic, expression, SUB_VERSION)
    } else {
        SubscriptionData {
            class_filter_mode: false,
            topic: topic.to_owned(),
            sub_string: expression.clone(),
            tags_set: BTreeSet::new(),
            code_set: BTreeSet::new(),
            sub_version: SUB_VERSION,
            expression_type: ty.clone(),
            filter_class_source: None,
        }
    };
    let data = HeartbeatData {
        client_id: format!("127.0.0.1@mqbench-{}", std::process::id()),
        producer_data_set: Vec::new(),
        consumer_data_set: vec![ConsumerData {
            group_name: group.to_owned(),
            consume_type: ConsumeType::ConsumePassively,
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            subscription_data_set: vec![sub],
            unit_mode: false,
        }],
        heartbeat_fingerprint: 0,
        without_sub: false,
    };
    let body = fastjson::to_vec(&data, KeyStyle::Fastjson).map_err(ToolsError::Encode)?;
    Ok(RemotingCommand::request(RequestCode::HeartBeat).with_body(body))
}

/// Sends the heartbeat to every broker address; the first failure is the error.
async fn send_heartbeats(
    client: &Client,
    addrs: &[String],
    request: &RemotingCommand,
) -> Result<()> {
    for addr in addrs {
        client.call(addr, request.clone()).await?;
    }
    Ok(())
}

impl QueueLoop {
    async fn run(mut self) {
        let rpc_timeout = Duration::from_millis(u64::try_from(self.suspend_ms).unwrap_or(15_000))
            + Duration::from_secs(15);
        while !self.run.stopped() {
            if self.until.is_some_and(|end| self.offset >= end) {
                return;
            }
            let carried = !self.registered;
            let header = PullMessageRequestHeader {
                consumer_group: self.group.clone(),
                topic: self.topic.clone(),
                queue_id: self.queue_id,
                queue_offset: self.offset,
                max_msg_nums: self.pull_batch,
                sys_flag: if carried {
                    pull_flag::SUSPEND | pull_flag::SUBSCRIPTION
                } else {
                    pull_flag::SUSPEND
                },
                commit_offset: 0,
                suspend_timeout_millis: self.suspend_ms,
                subscription: carried.then(|| self.subscription.1.clone()),
                sub_version: if carried { 0 } else { SUB_VERSION },
                expression_type: Some(self.subscription.0.clone()),
                ..PullMessageRequestHeader::default()
            };
            match self.client.pull(&self.addr, &header, rpc_timeout).await {
                Ok(r) => {
                    if r.status == PullStatus::Found {
                        let now = now_millis();
                        let mut records =
                            Vec::with_capacity(usize::try_from(self.pull_batch).unwrap_or(0));
                        match scan_records(&r.body, &mut records) {
                            Ok(()) => {
                                let mut bytes = 0u64;
                                let now_us = stamp::now_micros();
                                for (born, body) in &records {
                                    match stamp::read(body) {
                                        Some(sent) => self.recorder.record(Duration::from_micros(
                                            u64::try_from(now_us - sent).unwrap_or(0),
                                        )),
                                        None => self.recorder.record_millis(now - born),
                                    }
                                    bytes += body.len() as u64;
                                }
                                self.run.counters.ok(records.len() as u64, bytes);
                            }
                            Err(e) => self.run.counters.error(None, "decode", &e.to_string()),
                        }
                    }
                    self.offset = r.next_begin_offset;
                }
                Err(e) => {
                    self.run
                        .counters
                        .error(e.response_code(), "pull failed", &e.detail());
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }
}

/// Runs the consumer benchmark and returns its summary.
///
/// # Errors
/// No name server, no route, or the starting offsets cannot be read.
pub async fn run(
    args: &ConsumerArgs,
    err: Arc<parking_lot::Mutex<Box<dyn Write + Send>>>,
) -> Result<Summary> {
    let namesrv = super::namesrv_list(args.namesrv.as_deref())?;
    let client = Client::new(namesrv, DEFAULT_TIMEOUT);
    let topic = args.topic.trim().to_owned();
    let run = Arc::new(Run::default());
    let subscription = Arc::new(match &args.sql {
        Some(sql) => (EXPRESSION_TYPE_SQL92.to_owned(), sql.clone()),
        None => (EXPRESSION_TYPE_TAG.to_owned(), SUB_ALL.to_owned()),
    });
    let mut loops = Vec::new();
    for name in super::producer::topic_names(&topic, args.topics) {
        let route = client.fetch_route(&name).await?;
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
                let max = client.max_offset(addr, &name, queue_id).await?;
                let offset = match args.from {
                    StartFrom::Last => max,
                    StartFrom::First => client.min_offset(addr, &name, queue_id).await?,
                };
                loops.push(QueueLoop {
                    run: Arc::clone(&run),
                    client: client.clone(),
                    addr: addr.to_owned(),
                    topic: name.clone(),
                    group: args.group.clone(),
                    queue_id,
                    offset,
                    until: args.catch_up.then_some(max),
                    pull_batch: args.pull_batch,
                    suspend_ms: args.suspend_ms,
                    subscription: Arc::clone(&subscription),
                    registered: args.heartbeat,
                    recorder: run.latencies.recorder(),
                });
            }
        }
    }
    let mut addrs: Vec<String> = loops.iter().map(|l| l.addr.clone()).collect();
    addrs.sort();
    addrs.dedup();
    let heartbeat = if args.heartbeat {
        let request = heartbeat_request(&args.group, &topic, &subscription)?;
        send_heartbeats(&client, &addrs, &request).await?;
        if args.duration.is_zero() {
            client.shutdown();
            return Ok(Summary::new(
                "consumer",
                settings([
                    ("topic", topic),
                    ("group", args.group.clone()),
                    ("registered", "true".to_owned()),
                ]),
                Duration::ZERO,
                &run.counters,
                &run.latencies.total(),
            ));
        }
        let (client, addrs) = (client.clone(), addrs.clone());
        Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT_EVERY).await;
                let _ = send_heartbeats(&client, &addrs, &request).await;
            }
        }))
    } else {
        None
    };
    if loops.is_empty() {
        return Err(ToolsError::NoRoute {
            topic,
            remark: "no readable queue on any broker".to_owned(),
        });
    }
    let header = format!(
        "mqbench consumer: topic={topic} topics={} group={} queues={} from={:?} catch_up={} subscription={} {}",
        args.topics.max(1),
        args.group,
        loops.len(),
        args.from,
        args.catch_up,
        subscription.0,
        subscription.1
    );
    let _ = writeln!(err.lock(), "{header}");
    let (status_line, err) = StatusLine::start(&args.status, &run, "received", false, err);
    let started = Instant::now();
    let reporter = tokio::spawn(report_progress(
        Arc::clone(&run),
        "received",
        Arc::clone(&err),
    ));
    let mut handles: Vec<_> = loops.into_iter().map(|l| tokio::spawn(l.run())).collect();
    if args.catch_up {
        // Done when every queue loop has returned, or at the deadline.
        let _ = tokio::time::timeout(args.duration, async {
            for h in &mut handles {
                let _ = h.await;
            }
        })
        .await;
    } else {
        tokio::time::sleep(args.duration).await;
    }
    run.stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed();
    // Pulls parked in long polling are abandoned, not awaited.
    for h in &handles {
        h.abort();
    }
    let _ = reporter.await;
    status_line.finish();
    args.chart
        .write(&header, "end-to-end latency", &run.timeline)?;
    if let Some(h) = heartbeat {
        h.abort();
    }
    let _ = run.latencies.interval();
    client.shutdown();
    Ok(Summary::new(
        "consumer",
        settings([
            ("topic", topic),
            ("topics", args.topics.max(1).to_string()),
            ("catch_up", args.catch_up.to_string()),
            ("group", args.group.clone()),
            ("from", format!("{:?}", args.from).to_lowercase()),
            ("pull_batch", args.pull_batch.to_string()),
            ("suspend_ms", args.suspend_ms.to_string()),
            ("sql", args.sql.clone().unwrap_or_default()),
            ("heartbeat", args.heartbeat.to_string()),
        ]),
        elapsed,
        &run.counters,
        &run.latencies.total(),
    ))
}
