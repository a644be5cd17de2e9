//! `mqbench grpc-producer` and `mqbench grpc-consumer`: the load of RocketMQ 5's gRPC SDKs
//! (`apache.rocketmq.v2.MessagingService`), without an SDK's own batching, retries or
//! back-off, so that sluice's endpoint (`mqproxy`, or `mqbroker --enable-proxy`) and Apache's
//! proxy are measured the same way.
//!
//! Both open the telemetry stream an SDK opens first (its settings: a proxy serves a
//! consumer only once it has them) and keep it open for the run, with the headers every SDK
//! sends (`x-mq-client-id`, `x-mq-language`, `x-mq-protocol`, ...).
//!
//! - producer: `--threads` tasks, each with `--inflight` unary SendMessage calls outstanding,
//!   over `--connections` HTTP/2 connections; latency is the call's round trip.
//! - consumer: QueryRoute, then `--consumers` tasks each ReceiveMessage (a batch of
//!   `--batch`, long polling) from the readable queues in turn, acking what they received
//!   (`--ack each`: one AckMessage per message, as the Java SDK's `ack(message)`; `batch`:
//!   one per receive). `--messages N` stops at N received (a backlog read to its end);
//!   latency is born-to-receipt.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use proxy::pb::messaging_service_client::MessagingServiceClient;
use proxy::pb::{self, Code, receive_message_response::Content, telemetry_command::Command};
use tokio::sync::mpsc;
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};

use super::chart::ChartArgs;
use super::stats::{Recorder, Summary};
use super::status::{StatusArgs, StatusLine};
use super::{Run, parse_duration, report_progress, settings};
use crate::error::{Result, ToolsError};
use crate::time::now_millis;
use crate::uniq_id;

/// How long the settings' answer may take.
const SETTINGS_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a client heartbeats, as the SDKs do (a proxy forgets a client's settings after
/// `channelExpiredTimeout`, 120 s, without one).
const HEARTBEAT_PERIOD: Duration = Duration::from_secs(10);
/// A receive's deadline beyond its long-polling time.
const RECEIVE_MARGIN: Duration = Duration::from_secs(3);

/// `mqbench grpc-producer` options.
#[derive(Debug, Args)]
pub struct GrpcProducerArgs {
    /// The gRPC endpoint, `host:port`.
    #[arg(long = "endpoint", default_value = "127.0.0.1:8081")]
    pub endpoint: String,
    /// Topic (a NORMAL one).
    #[arg(short = 't', long = "topic", default_value = "BenchmarkTest")]
    pub topic: String,
    /// Body size in bytes.
    #[arg(long = "size", default_value_t = 1024)]
    pub size: usize,
    /// Sender tasks.
    #[arg(long = "threads", default_value_t = 16)]
    pub threads: usize,
    /// Calls outstanding per task.
    #[arg(long = "inflight", default_value_t = 16)]
    pub inflight: usize,
    /// HTTP/2 connections (tasks are spread over them).
    #[arg(long = "connections", default_value_t = 2)]
    pub connections: usize,
    /// How long to send (at most, with `--messages`).
    #[arg(long = "duration", value_parser = parse_duration, default_value = "30s")]
    pub duration: Duration,
    /// Stop once this many messages are stored.
    #[arg(long = "messages")]
    pub messages: Option<u64>,
    /// Tag of every message.
    #[arg(long = "tag")]
    pub tag: Option<String>,
    /// Deadline of each call, ms.
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
}

/// How a consumer acks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AckMode {
    /// One AckMessage per message (the SDKs' `ack(message)`).
    Each,
    /// One AckMessage per receive, with every message of it.
    Batch,
}

/// `mqbench grpc-consumer` options.
#[derive(Debug, Args)]
pub struct GrpcConsumerArgs {
    /// The gRPC endpoint, `host:port`.
    #[arg(long = "endpoint", default_value = "127.0.0.1:8081")]
    pub endpoint: String,
    /// Topic.
    #[arg(short = 't', long = "topic", default_value = "BenchmarkTest")]
    pub topic: String,
    /// Consumer group.
    #[arg(short = 'g', long = "group", default_value = "mqbench_grpc_consumer")]
    pub group: String,
    /// Receiving tasks.
    #[arg(long = "consumers", default_value_t = 8)]
    pub consumers: usize,
    /// Messages per receive.
    #[arg(long = "batch", default_value_t = 32)]
    pub batch: i32,
    /// How acks go.
    #[arg(long = "ack", value_enum, default_value_t = AckMode::Each)]
    pub ack: AckMode,
    /// Invisible duration of received messages.
    #[arg(long = "invisible", value_parser = parse_duration, default_value = "30s")]
    pub invisible: Duration,
    /// Long-polling time of a receive that finds nothing (at least the proxy's
    /// `grpcClientConsumerMinLongPollingTimeoutMillis`, 5 s by default, or it is refused).
    #[arg(long = "long-polling", value_parser = parse_duration, default_value = "5s")]
    pub long_polling: Duration,
    /// HTTP/2 connections.
    #[arg(long = "connections", default_value_t = 2)]
    pub connections: usize,
    /// How long to consume (at most, with `--messages`).
    #[arg(long = "duration", value_parser = parse_duration, default_value = "30s")]
    pub duration: Duration,
    /// Stop once this many messages are received and acked.
    #[arg(long = "messages")]
    pub messages: Option<u64>,
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

/// One client's identity and connections.
#[derive(Clone)]
struct Client {
    id: Arc<str>,
    channels: Arc<[Channel]>,
    endpoint: pb::Endpoints,
}

impl Client {
    async fn connect(endpoint: &str, connections: usize) -> Result<Client> {
        let address = proxy::client::endpoints(endpoint)
            .map_err(|e| ToolsError::Usage(format!("--endpoint: {e}")))?;
        let mut channels = Vec::with_capacity(connections.max(1));
        for _ in 0..connections.max(1) {
            let channel = Endpoint::from_shared(format!("http://{endpoint}"))
                .map_err(|e| ToolsError::Usage(format!("--endpoint {endpoint:?}: {e}")))?
                .tcp_nodelay(true)
                .connect()
                .await
                .map_err(|e| ToolsError::Usage(format!("cannot connect to {endpoint}: {e}")))?;
            channels.push(channel);
        }
        let id = format!(
            "mqbench@{}@{}",
            std::process::id(),
            now_millis().rem_euclid(1_000_000)
        );
        Ok(Client {
            id: id.into(),
            channels: channels.into(),
            endpoint: address,
        })
    }

    fn stub(&self, i: usize) -> MessagingServiceClient<Channel> {
        MessagingServiceClient::new(self.channels[i % self.channels.len()].clone())
            .max_decoding_message_size(64 << 20)
    }

    /// `message` with the headers an SDK puts on every call.
    fn request<T>(&self, message: T, timeout: Duration) -> tonic::Request<T> {
        proxy::client::request(message, &self.id, timeout)
    }

    /// Opens the telemetry stream with `settings` and waits for the proxy's answer; the
    /// returned sender keeps the stream open while it lives.
    async fn telemetry(
        &self,
        settings: pb::Settings,
    ) -> Result<mpsc::Sender<pb::TelemetryCommand>> {
        let (tx, rx) = mpsc::channel(4);
        self.heartbeat_while_open(&settings, &tx);
        tx.send(pb::TelemetryCommand {
            status: None,
            command: Some(Command::Settings(settings)),
        })
        .await
        .map_err(|_| ToolsError::Usage("telemetry stream closed".into()))?;
        let mut stub = self.stub(0);
        let call =
            stub.telemetry(self.request(ReceiverStream::new(rx), Duration::from_secs(86_400)));
        let mut answers = tokio::time::timeout(SETTINGS_TIMEOUT, call)
            .await
            .map_err(|_| ToolsError::Usage("no answer to the telemetry settings".into()))?
            .map_err(|s| ToolsError::Usage(format!("telemetry refused: {s}")))?
            .into_inner();
        match tokio::time::timeout(SETTINGS_TIMEOUT, answers.message()).await {
            Ok(Ok(Some(_))) => {}
            Ok(Ok(None)) => return Err(ToolsError::Usage("telemetry stream ended".into())),
            Ok(Err(s)) => return Err(ToolsError::Usage(format!("telemetry refused: {s}"))),
            Err(_) => {
                return Err(ToolsError::Usage(
                    "no answer to the telemetry settings".into(),
                ));
            }
        }
        // Later server commands are read and dropped.
        tokio::spawn(async move { while let Ok(Some(_)) = answers.message().await {} });
        Ok(tx)
    }

    /// Heartbeats every [`HEARTBEAT_PERIOD`], as the SDKs do, until `stream` closes (its
    /// sender dropped).
    fn heartbeat_while_open(
        &self,
        settings: &pb::Settings,
        stream: &mpsc::Sender<pb::TelemetryCommand>,
    ) {
        let group = match &settings.pub_sub {
            Some(pb::settings::PubSub::Subscription(s)) => s.group.clone(),
            _ => None,
        };
        let heartbeat = pb::HeartbeatRequest {
            group,
            client_type: settings.client_type.unwrap_or_default(),
        };
        let (client, stream) = (self.clone(), stream.clone());
        tokio::spawn(async move {
            let mut stub = client.stub(0);
            loop {
                tokio::select! {
                    () = tokio::time::sleep(HEARTBEAT_PERIOD) => {}
                    () = stream.closed() => return,
                }
                let request = client.request(heartbeat.clone(), SETTINGS_TIMEOUT);
                if let Err(status) = stub.heartbeat(request).await {
                    eprintln!("mqbench: heartbeat failed: {status}");
                }
            }
        });
    }

    fn settings(&self, kind: pb::ClientType, pub_sub: pb::settings::PubSub) -> pb::Settings {
        pb::Settings {
            client_type: Some(kind.into()),
            access_point: Some(self.endpoint.clone()),
            request_timeout: Some(prost_types::Duration {
                seconds: 3,
                nanos: 0,
            }),
            pub_sub: Some(pub_sub),
            user_agent: Some(pb::Ua {
                language: pb::Language::Rust.into(),
                version: env!("CARGO_PKG_VERSION").into(),
                platform: std::env::consts::OS.into(),
                hostname: String::new(),
            }),
            ..Default::default()
        }
    }
}

fn resource(name: &str) -> Option<pb::Resource> {
    Some(pb::Resource {
        resource_namespace: String::new(),
        name: name.to_owned(),
    })
}

fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        #[allow(clippy::cast_possible_truncation, reason = "below 10^9")]
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

fn duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        #[allow(clippy::cast_possible_wrap, reason = "below 10^9")]
        nanos: d.subsec_nanos() as i32,
    }
}

/// A status that is not OK, as an error kind and its message.
fn not_ok(status: Option<&pb::Status>) -> Option<(String, String)> {
    let s = status?;
    (s.code != Code::Ok as i32).then(|| {
        let name = Code::try_from(s.code)
            .map_or_else(|_| s.code.to_string(), |c| c.as_str_name().to_owned());
        (name, s.message.clone())
    })
}

/// `mqbench grpc-producer`.
///
/// # Errors
/// Bad arguments, or the endpoint cannot be reached or refuses the settings.
pub async fn run_producer(
    args: &GrpcProducerArgs,
    err: Arc<parking_lot::Mutex<Box<dyn Write + Send>>>,
) -> Result<Summary> {
    let client = Client::connect(&args.endpoint, args.connections).await?;
    let publishing = pb::settings::PubSub::Publishing(pb::Publishing {
        topics: resource(&args.topic).into_iter().collect(),
        max_body_size: 4 << 20,
        validate_message_type: true,
    });
    let _telemetry = client
        .telemetry(client.settings(pb::ClientType::Producer, publishing))
        .await?;
    let run = Arc::new(Run::default());
    let ids = Arc::new(uniq_id::local_generator());
    let body = bytes::Bytes::from(vec![b'x'; args.size]);
    let budget = args.messages.map(AtomicU64::new).map(Arc::new);
    let timeout = Duration::from_millis(args.timeout_ms);
    let header = format!(
        "mqbench grpc-producer: endpoint={} topic={} size={} threads={} inflight={} connections={}",
        args.endpoint, args.topic, args.size, args.threads, args.inflight, args.connections
    );
    let (status_line, err) = StatusLine::start(&args.status, &run, "sent", true, err);
    let reporter = tokio::spawn(report_progress(
        Arc::clone(&run),
        "grpc-send",
        Arc::clone(&err),
    ));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..args.threads.max(1) {
        for _ in 0..args.inflight.max(1) {
            let (client, run, ids, body, budget) = (
                client.clone(),
                Arc::clone(&run),
                Arc::clone(&ids),
                body.clone(),
                budget.clone(),
            );
            let topic = args.topic.clone();
            let tag = args.tag.clone();
            let recorder = run.latencies.recorder();
            tasks.push(tokio::spawn(async move {
                let mut stub = client.stub(t);
                while !run.stopped() {
                    if let Some(b) = &budget
                        && b.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                            n.checked_sub(1)
                        })
                        .is_err()
                    {
                        break;
                    }
                    let now = now_millis();
                    let message = pb::Message {
                        topic: resource(&topic),
                        user_properties: std::collections::HashMap::new(),
                        system_properties: Some(pb::SystemProperties {
                            tag: tag.clone(),
                            message_id: ids.next_at(now),
                            body_encoding: pb::Encoding::Identity.into(),
                            message_type: pb::MessageType::Normal.into(),
                            born_timestamp: Some(timestamp(now)),
                            born_host: "127.0.0.1".into(),
                            ..Default::default()
                        }),
                        body: body.clone(),
                    };
                    send_one(&client, &mut stub, message, timeout, &run, &recorder).await;
                }
            }));
        }
    }
    let stop = Arc::clone(&run);
    let duration = args.duration;
    let all_done = async {
        for t in tasks {
            let _ = t.await;
        }
    };
    tokio::select! {
        () = all_done => {}
        () = tokio::time::sleep(duration) => {}
    }
    stop.stop.store(true, Ordering::Relaxed);
    let elapsed = start.elapsed();
    let _ = reporter.await;
    status_line.finish();
    args.chart.write(&header, "send latency", &run.timeline)?;
    let _ = run.latencies.interval();
    Ok(Summary::new(
        "grpc-producer",
        settings([
            ("endpoint", args.endpoint.clone()),
            ("size", args.size.to_string()),
            ("threads", args.threads.to_string()),
            ("inflight", args.inflight.to_string()),
            ("connections", args.connections.to_string()),
        ]),
        elapsed,
        &run.counters,
        &run.latencies.total(),
    ))
}

async fn send_one(
    client: &Client,
    stub: &mut MessagingServiceClient<Channel>,
    message: pb::Message,
    timeout: Duration,
    run: &Run,
    recorder: &Recorder,
) {
    let bytes = message.body.len() as u64;
    let request = client.request(
        pb::SendMessageRequest {
            messages: vec![message],
        },
        timeout,
    );
    let sent = Instant::now();
    match stub.send_message(request).await {
        Ok(response) => {
            let response = response.into_inner();
            let refused = not_ok(response.status.as_ref()).or_else(|| {
                response
                    .entries
                    .iter()
                    .find_map(|e| not_ok(e.status.as_ref()))
            });
            match (refused, response.entries.len()) {
                (None, 1) => {
                    recorder.record(sent.elapsed());
                    run.counters.ok(1, bytes);
                }
                (Some((kind, why)), _) => run.counters.error(None, &kind, &why),
                (None, n) => run.counters.error(
                    None,
                    "entries",
                    &format!("{n} result entries for one message"),
                ),
            }
        }
        Err(status) => {
            run.counters
                .error(None, &format!("grpc {:?}", status.code()), status.message())
        }
    }
}

/// `mqbench grpc-consumer`.
///
/// # Errors
/// Bad arguments, the endpoint cannot be reached, refuses the settings or has no readable
/// queue of the topic.
pub async fn run_consumer(
    args: &GrpcConsumerArgs,
    err: Arc<parking_lot::Mutex<Box<dyn Write + Send>>>,
) -> Result<Summary> {
    let client = Client::connect(&args.endpoint, args.connections).await?;
    let filter = pb::FilterExpression {
        r#type: pb::FilterType::Tag.into(),
        expression: "*".into(),
    };
    let subscription = pb::settings::PubSub::Subscription(pb::Subscription {
        group: resource(&args.group),
        subscriptions: vec![pb::SubscriptionEntry {
            topic: resource(&args.topic),
            expression: Some(filter.clone()),
        }],
        fifo: Some(false),
        receive_batch_size: Some(args.batch),
        long_polling_timeout: Some(duration(args.long_polling)),
        ..Default::default()
    });
    let _telemetry = client
        .telemetry(client.settings(pb::ClientType::SimpleConsumer, subscription))
        .await?;
    let route = client
        .stub(0)
        .query_route(client.request(
            pb::QueryRouteRequest {
                topic: resource(&args.topic),
                endpoints: Some(client.endpoint.clone()),
            },
            Duration::from_secs(5),
        ))
        .await
        .map_err(|s| ToolsError::Usage(format!("QueryRoute failed: {s}")))?
        .into_inner();
    if let Some((kind, why)) = not_ok(route.status.as_ref()) {
        return Err(ToolsError::Usage(format!(
            "QueryRoute refused: {kind} {why}"
        )));
    }
    let readable: Arc<[pb::MessageQueue]> = route
        .message_queues
        .into_iter()
        .filter(|q| {
            matches!(
                pb::Permission::try_from(q.permission),
                Ok(pb::Permission::Read | pb::Permission::ReadWrite)
            )
        })
        .collect();
    if readable.is_empty() {
        return Err(ToolsError::Usage(format!(
            "no readable queue of {}",
            args.topic
        )));
    }
    let run = Arc::new(Run::default());
    let received = Arc::new(AtomicU64::new(0));
    let next_queue = Arc::new(AtomicUsize::new(0));
    let header = format!(
        "mqbench grpc-consumer: endpoint={} topic={} group={} consumers={} batch={} ack={:?}",
        args.endpoint, args.topic, args.group, args.consumers, args.batch, args.ack
    );
    let (status_line, err) = StatusLine::start(&args.status, &run, "received", false, err);
    let reporter = tokio::spawn(report_progress(
        Arc::clone(&run),
        "grpc-receive",
        Arc::clone(&err),
    ));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..args.consumers.max(1) {
        let (client, run, readable, received, next_queue) = (
            client.clone(),
            Arc::clone(&run),
            Arc::clone(&readable),
            Arc::clone(&received),
            Arc::clone(&next_queue),
        );
        let recorder = run.latencies.recorder();
        let group = args.group.clone();
        let topic = args.topic.clone();
        let (filter, batch, ack, invisible, long_polling, target) = (
            filter.clone(),
            args.batch,
            args.ack,
            args.invisible,
            args.long_polling,
            args.messages,
        );
        tasks.push(tokio::spawn(async move {
            let mut stub = client.stub(c);
            while !run.stopped() && target.is_none_or(|t| received.load(Ordering::Relaxed) < t) {
                let queue =
                    readable[next_queue.fetch_add(1, Ordering::Relaxed) % readable.len()].clone();
                let request = client.request(
                    pb::ReceiveMessageRequest {
                        group: resource(&group),
                        message_queue: Some(queue),
                        filter_expression: Some(filter.clone()),
                        batch_size: batch,
                        invisible_duration: Some(duration(invisible)),
                        auto_renew: false,
                        long_polling_timeout: Some(duration(long_polling)),
                        attempt_id: None,
                    },
                    long_polling + RECEIVE_MARGIN,
                );
                let messages = match receive(&mut stub, request).await {
                    Ok(m) => m,
                    Err((kind, why)) => {
                        run.counters.error(None, &kind, &why);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let now = now_millis();
                let mut entries = Vec::with_capacity(messages.len());
                for m in messages {
                    let sp = m.system_properties.unwrap_or_default();
                    if let Some(born) = sp.born_timestamp {
                        recorder.record_millis(
                            now - (born.seconds * 1000 + i64::from(born.nanos / 1_000_000)),
                        );
                    }
                    entries.push((
                        m.body.len() as u64,
                        pb::AckMessageEntry {
                            message_id: sp.message_id,
                            receipt_handle: sp.receipt_handle.unwrap_or_default(),
                            lite_topic: None,
                        },
                    ));
                }
                let groups: Vec<Vec<(u64, pb::AckMessageEntry)>> = match ack {
                    AckMode::Each => entries.into_iter().map(|e| vec![e]).collect(),
                    AckMode::Batch if entries.is_empty() => Vec::new(),
                    AckMode::Batch => vec![entries],
                };
                for acks in groups {
                    let n = acks.len() as u64;
                    let bytes = acks.iter().map(|(b, _)| b).sum();
                    let request = client.request(
                        pb::AckMessageRequest {
                            group: resource(&group),
                            topic: resource(&topic),
                            entries: acks.into_iter().map(|(_, e)| e).collect(),
                        },
                        Duration::from_secs(3),
                    );
                    match stub.ack_message(request).await {
                        Ok(r) => {
                            let r = r.into_inner();
                            match not_ok(r.status.as_ref()).or_else(|| {
                                r.entries.iter().find_map(|e| not_ok(e.status.as_ref()))
                            }) {
                                None => {
                                    run.counters.ok(n, bytes);
                                    received.fetch_add(n, Ordering::Relaxed);
                                }
                                Some((kind, why)) => {
                                    run.counters.error(None, &format!("ack {kind}"), &why)
                                }
                            }
                        }
                        Err(s) => run.counters.error(
                            None,
                            &format!("ack grpc {:?}", s.code()),
                            s.message(),
                        ),
                    }
                }
            }
        }));
    }
    let all_done = async {
        for t in tasks {
            let _ = t.await;
        }
    };
    tokio::select! {
        () = all_done => {}
        () = tokio::time::sleep(args.duration) => {}
    }
    run.stop.store(true, Ordering::Relaxed);
    let elapsed = start.elapsed();
    let _ = reporter.await;
    status_line.finish();
    args.chart
        .write(&header, "end-to-end latency", &run.timeline)?;
    let _ = run.latencies.interval();
    Ok(Summary::new(
        "grpc-consumer",
        settings([
            ("endpoint", args.endpoint.clone()),
            ("consumers", args.consumers.to_string()),
            ("batch", args.batch.to_string()),
            ("ack", format!("{:?}", args.ack).to_lowercase()),
        ]),
        elapsed,
        &run.counters,
        &run.latencies.total(),
    ))
}

/// The messages of one ReceiveMessage call (none: MESSAGE_NOT_FOUND), or why it failed.
async fn receive(
    stub: &mut MessagingServiceClient<Channel>,
    request: tonic::Request<pb::ReceiveMessageRequest>,
) -> std::result::Result<Vec<pb::Message>, (String, String)> {
    let grpc = |s: tonic::Status| {
        (
            format!("receive grpc {:?}", s.code()),
            s.message().to_owned(),
        )
    };
    let mut stream = stub
        .receive_message(request)
        .await
        .map_err(grpc)?
        .into_inner();
    let mut messages = Vec::new();
    while let Some(item) = stream.message().await.map_err(grpc)? {
        match item.content {
            Some(Content::Message(m)) => messages.push(m),
            Some(Content::Status(s)) if s.code == Code::MessageNotFound as i32 => {}
            Some(Content::Status(s)) => {
                if let Some((kind, why)) = not_ok(Some(&s)) {
                    return Err((format!("receive {kind}"), why));
                }
            }
            Some(Content::DeliveryTimestamp(_)) | None => {}
        }
    }
    Ok(messages)
}
