//! `mqgrpc`: a message sent over RocketMQ 5's gRPC protocol, the way the SDKs send one, from
//! the command line (no Java, Go or Python needed): to try an endpoint (`mqproxy`, or
//! `mqbroker --enable-proxy`) and to show it working (`deploy/local-cluster.sh up`).
//!
//! `mqgrpc sendMessage -e 127.0.0.1:8081 -t TopicTest -p "hello" [-c TagA] [-k KEY]`:
//! QueryRoute at the endpoint, then, as an SDK's producer does, SendMessage to the endpoint
//! of a writable queue's master (in local mode that broker's own endpoint). Prints the route
//! and `SEND_OK msgId=... queue=... offset=... endpoint=...`, like `mqadmin sendMessage`;
//! any failure is one line on stderr and a non-zero exit. `-n COUNT [-s BYTES] [-j TASKS]`
//! sends COUNT messages (bodies of BYTES, TASKS calls in flight) and prints the rate: a load
//! to measure an endpoint with.

use std::net::IpAddr;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand};
use message::id::UniqIdGenerator;
use proxy::pb::messaging_service_client::MessagingServiceClient;
use proxy::pb::{self, Code, Encoding, MessageType, Permission};
use tonic::transport::Channel;

/// Limit of each call.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// A RocketMQ 5 gRPC client for the command line.
#[derive(Debug, Parser)]
#[command(name = "mqgrpc", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Sends one message, as an SDK's producer does.
    #[command(name = "sendMessage")]
    SendMessage {
        /// The gRPC endpoint (`host:port`) to ask for the route.
        #[arg(short = 'e', long = "endpoint")]
        endpoint: String,
        /// Topic.
        #[arg(short = 't', long = "topic")]
        topic: String,
        /// Message body.
        #[arg(short = 'p', long = "body")]
        body: String,
        /// Tag.
        #[arg(short = 'c', long = "tags")]
        tag: Option<String>,
        /// Key.
        #[arg(short = 'k', long = "keys")]
        keys: Option<String>,
        /// Messages to send (1).
        #[arg(short = 'n', long = "count", default_value_t = 1)]
        count: usize,
        /// Body size in bytes, padding the body given (0: the body as given).
        #[arg(short = 's', long = "size", default_value_t = 0)]
        size: usize,
        /// Sends in flight at once (1).
        #[arg(short = 'j', long = "tasks", default_value_t = 1)]
        tasks: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the runtime: {e}")),
    };
    let Command::SendMessage {
        endpoint,
        topic,
        body,
        tag,
        keys,
        count,
        size,
        tasks,
    } = cli.command;
    let mut body = body.into_bytes();
    if size > body.len() {
        body.resize(size, b'x');
    }
    let load = Load {
        count: count.max(1),
        tasks: tasks.max(1),
    };
    match runtime.block_on(send(&endpoint, &topic, body, tag, keys, load)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(cause: &str) -> ExitCode {
    eprintln!("mqgrpc: {cause}");
    ExitCode::FAILURE
}

fn client_id() -> String {
    format!("mqgrpc@{}", std::process::id())
}

/// A call with the headers every SDK sends.
fn request<T>(message: T) -> tonic::Request<T> {
    proxy::client::request(message, &client_id(), CALL_TIMEOUT)
}

async fn connect(endpoint: &str) -> Result<MessagingServiceClient<Channel>, String> {
    let channel = Channel::from_shared(format!("http://{endpoint}"))
        .map_err(|e| format!("endpoint {endpoint}: {e}"))?
        .connect_timeout(CALL_TIMEOUT)
        .connect()
        .await
        .map_err(|e| format!("cannot connect to {endpoint}: {e}"))?;
    Ok(MessagingServiceClient::new(channel))
}

fn check(status: Option<&pb::Status>, what: &str) -> Result<(), String> {
    let status = status.ok_or_else(|| format!("{what}: no status in the answer"))?;
    if status.code == Code::Ok as i32 {
        return Ok(());
    }
    let name = Code::try_from(status.code).map_or("?", |c| c.as_str_name());
    Err(format!(
        "{what}: {name} ({}) {}",
        status.code, status.message
    ))
}

fn now() -> prost_types::Timestamp {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    prost_types::Timestamp {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    }
}

/// How many messages, how many at once.
#[derive(Debug, Clone, Copy)]
struct Load {
    count: usize,
    tasks: usize,
}

async fn send(
    endpoint: &str,
    topic: &str,
    body: Vec<u8>,
    tag: Option<String>,
    keys: Option<String>,
    load: Load,
) -> Result<(), String> {
    let resource = pb::Resource {
        name: topic.to_owned(),
        ..pb::Resource::default()
    };
    let mut client = connect(endpoint).await?;
    let route = client
        .query_route(request(pb::QueryRouteRequest {
            topic: Some(resource.clone()),
            endpoints: Some(proxy::client::endpoints(endpoint)?),
        }))
        .await
        .map_err(|s| format!("QueryRoute at {endpoint}: {s}"))?
        .into_inner();
    check(route.status.as_ref(), "QueryRoute")?;
    // As the SDKs' producers: the writable queues of masters.
    let writable: Vec<&pb::MessageQueue> = route
        .message_queues
        .iter()
        .filter(|q| {
            matches!(
                Permission::try_from(q.permission),
                Ok(Permission::Write | Permission::ReadWrite)
            ) && q.broker.as_ref().is_some_and(|b| b.id == 0)
        })
        .collect();
    println!(
        "route of {topic} at {endpoint}: {} queues, {} writable",
        route.message_queues.len(),
        writable.len()
    );
    let Some(queue) = writable.get(fastrand::usize(..writable.len().max(1))) else {
        return Err(format!("no writable queue of {topic}"));
    };
    let broker = queue.broker.clone().unwrap_or_default();
    let target = broker
        .endpoints
        .as_ref()
        .and_then(|e| e.addresses.first())
        .map_or_else(|| endpoint.to_owned(), |a| format!("{}:{}", a.host, a.port));
    if target != endpoint {
        client = connect(&target).await?;
    }
    let ip = local_ip();
    let ids = std::sync::Arc::new(UniqIdGenerator::new(
        ip,
        u16::try_from(std::process::id() & 0xffff).unwrap_or(0),
        fastrand::u32(..),
    ));
    let message = std::sync::Arc::new(pb::Message {
        topic: Some(resource),
        body: body.into(),
        system_properties: Some(pb::SystemProperties {
            tag,
            keys: keys.into_iter().collect(),
            body_encoding: Encoding::Identity.into(),
            message_type: MessageType::Normal.into(),
            born_host: ip.to_string(),
            queue_id: queue.id,
            ..pb::SystemProperties::default()
        }),
        ..pb::Message::default()
    });
    let started = std::time::Instant::now();
    let mut workers = Vec::new();
    for worker in 0..load.tasks {
        let n = load.count / load.tasks + usize::from(worker < load.count % load.tasks);
        let (mut client, ids, message) = (client.clone(), ids.clone(), message.clone());
        let target = target.clone();
        workers.push(tokio::spawn(async move {
            let mut last = None;
            for _ in 0..n {
                let mut m = (*message).clone();
                let born = now();
                if let Some(sys) = m.system_properties.as_mut() {
                    sys.message_id =
                        ids.next_at(born.seconds * 1000 + i64::from(born.nanos / 1_000_000));
                    sys.born_timestamp = Some(born);
                }
                let sent = client
                    .send_message(request(pb::SendMessageRequest { messages: vec![m] }))
                    .await
                    .map_err(|s| format!("SendMessage at {target}: {s}"))?
                    .into_inner();
                check(sent.status.as_ref(), "SendMessage")?;
                let entry = sent
                    .entries
                    .into_iter()
                    .next()
                    .ok_or("SendMessage: no result entry")?;
                check(entry.status.as_ref(), "SendMessage")?;
                last = Some(entry);
            }
            Ok::<_, String>(last)
        }));
    }
    let mut last = None;
    for w in workers {
        if let Some(entry) = w.await.map_err(|e| e.to_string())?? {
            last = Some(entry);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let entry = last.ok_or("SendMessage: nothing sent")?;
    println!(
        "SEND_OK msgId={} broker={} queue={} offset={} endpoint={target}",
        entry.message_id, broker.name, queue.id, entry.offset
    );
    if load.count > 1 {
        #[allow(clippy::cast_precision_loss, reason = "a message count as a rate")]
        let rate = load.count as f64 / elapsed.max(1e-9);
        println!(
            "sent {} messages in {elapsed:.2} s: {rate:.0} msg/s ({} in flight)",
            load.count, load.tasks
        );
    }
    Ok(())
}

/// This host's address as a born host (the first non-loopback IPv4 one, else loopback).
fn local_ip() -> IpAddr {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| {
            s.connect("192.0.2.1:9")?;
            s.local_addr()
        })
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_unspecified())
        .unwrap_or(IpAddr::from([127, 0, 0, 1]))
}
