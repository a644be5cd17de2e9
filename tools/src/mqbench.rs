//! `mqbench`: the load generator every side-by-side benchmark uses. It speaks the
//! remoting protocol directly (no client-side batching, retries or compression), so
//! what it measures is the broker, the same way for sluice and Apache RocketMQ.
//!
//! - `mqbench producer`: SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE) in sync, async
//!   (a window of requests in flight per thread) or oneway mode, round robin over the
//!   topic's writable queues, optionally rate-limited.
//! - `mqbench consumer`: long-polling PULL_MESSAGE on every readable queue, latency from
//!   each message's born timestamp to its receipt; `--catch-up` times a backlog read.
//! - `mqbench topics`: creates many topics (`--count`) on every master of a cluster.
//! - `mqbench timer`: timer messages due over a window, and how late (or early) a
//!   long-polling consumer receives them; `mqbench timer-watch` follows the broker's
//!   enqueue of parked timers into its wheel.
//!
//! - `mqbench grpc-producer` / `grpc-consumer`: the same over RocketMQ 5's gRPC protocol,
//!   against a gRPC endpoint (sluice's `mqproxy` or `mqbroker --enable-proxy`, Apache's
//!   proxy): SendMessage; ReceiveMessage + AckMessage.
//!
//! Producer and consumer spread over `--topics N` topics named `TOPIC-0` .. `TOPIC-(N-1)`.
//!
//! Each second a progress line goes to stderr; the summary (text, or JSON with `--json`)
//! goes to stdout. When stderr is a terminal, producer, consumer and the gRPC modes also
//! keep a live status line at its bottom ([`status`]; `--no-progress` turns it off), and
//! `--chart FILE.svg` draws the run's seconds ([`chart`]).

pub mod chart;
pub mod consumer;
pub mod grpc;
pub mod producer;
pub mod stamp;
pub mod stats;
pub mod status;
pub mod timer;
pub mod topics;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};

use crate::error::{Result, ToolsError};
use stats::{Counters, Latencies, Summary, progress_line};

/// `mqbench` command line.
#[derive(Debug, Parser)]
#[command(
    name = "mqbench",
    about = "Remoting-protocol load generator for sluice and Apache RocketMQ"
)]
pub struct Cli {
    /// Producer, consumer or topic creation.
    #[command(subcommand)]
    pub command: BenchCommand,
    /// Runtime worker threads (OS threads that run the sender / puller tasks); default:
    /// one per core.
    #[arg(long = "io-threads", global = true)]
    pub io_threads: Option<usize>,
}

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Send messages as fast as allowed.
    Producer(producer::ProducerArgs),
    /// Pull messages with long polling and measure end-to-end latency.
    Consumer(consumer::ConsumerArgs),
    /// Create many topics at once, timed.
    Topics(topics::TopicsArgs),
    /// Send timer messages due over a window and measure how late they are received.
    Timer(timer::TimerArgs),
    /// Follow the broker's enqueue of parked timer messages into its wheel.
    TimerWatch(timer::watch::WatchArgs),
    /// Send over gRPC (`apache.rocketmq.v2` SendMessage) as fast as allowed.
    GrpcProducer(grpc::GrpcProducerArgs),
    /// Receive and ack over gRPC (ReceiveMessage, AckMessage).
    GrpcConsumer(grpc::GrpcConsumerArgs),
}

/// What a benchmark ends with.
#[derive(Debug)]
pub enum Outcome {
    /// Producer, consumer, topics.
    Plain(Summary),
    /// `timer`.
    Timer(Box<timer::TimerSummary>),
    /// `timer-watch`.
    Watch(Box<timer::watch::WatchSummary>),
}

impl Outcome {
    /// Prints the summary as text or JSON.
    ///
    /// # Errors
    /// Writing failed.
    pub fn print(&self, out: &mut dyn Write, json: bool) -> Result<()> {
        let (text, value) = match self {
            Outcome::Plain(s) => return print_summary(out, s, json),
            Outcome::Timer(s) => (s.text(), serde_json::to_string_pretty(s)),
            Outcome::Watch(s) => (s.text(), serde_json::to_string_pretty(s)),
        };
        if json {
            let text =
                value.map_err(|e| ToolsError::Usage(format!("cannot encode the summary: {e}")))?;
            writeln!(out, "{text}")?;
        } else {
            writeln!(out, "{text}")?;
        }
        Ok(())
    }

    /// Why the run counts as failed, if it does.
    #[must_use]
    pub fn failure(&self) -> Option<String> {
        match self {
            Outcome::Plain(s) if s.messages == 0 => Some(
                match s.role.as_str() {
                    "producer" | "grpc-producer" => "no message was sent",
                    "consumer" | "grpc-consumer" => "no message was received",
                    _ => "no topic was created",
                }
                .to_owned(),
            ),
            Outcome::Plain(_) => None,
            Outcome::Timer(s) if s.messages == 0 => Some("no timer message was sent".to_owned()),
            Outcome::Timer(s) => {
                let failed = s.failed_checks();
                (!failed.is_empty()).then(|| failed.join("; "))
            }
            Outcome::Watch(s) if !s.caught_up => {
                Some("the timer wheel did not catch up before the timeout".to_owned())
            }
            Outcome::Watch(_) => None,
        }
    }
}

/// Parses `30s`, `500ms`, `2m`, `1h` or plain seconds.
///
/// # Errors
/// Anything else.
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let t = text.trim();
    let (num, unit) = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((t, "s"), |i| t.split_at(i));
    let n: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {text:?}"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" | "" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "invalid duration unit in {text:?} (use ms, s, m or h)"
            ));
        }
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("invalid duration {text:?}: {e}"))
}

/// What a benchmark shares with the reporter.
#[derive(Debug, Default)]
pub struct Run {
    /// Message/byte/error counters.
    pub counters: Counters,
    /// Latency histograms.
    pub latencies: Latencies,
    /// Set when the duration is over.
    pub stop: AtomicBool,
    /// Each second's figures, as the progress lines print them (`--chart`).
    pub timeline: chart::Timeline,
}

impl Run {
    /// Whether workers should stop.
    #[must_use]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Prints a progress line every second until `run` stops; returns when it does.
pub async fn report_progress(
    run: Arc<Run>,
    what: &'static str,
    err: Arc<parking_lot::Mutex<Box<dyn Write + Send>>>,
) {
    let start = Instant::now();
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    let (mut last_msgs, mut last_bytes, mut last_errs) = (0, 0, 0);
    while !run.stopped() {
        tick.tick().await;
        let msgs = run.counters.messages.load(Ordering::Relaxed);
        let bytes = run.counters.bytes.load(Ordering::Relaxed);
        let errs = run.counters.errors.load(Ordering::Relaxed);
        let interval = run.latencies.interval();
        run.timeline.push(chart::Second {
            at: start.elapsed().as_secs(),
            messages: msgs - last_msgs,
            p99_ms: run.latencies.last_interval_p99_ms(),
            errors: errs - last_errs,
        });
        let line = progress_line(
            start.elapsed().as_secs(),
            msgs - last_msgs,
            bytes - last_bytes,
            errs - last_errs,
            &interval,
            what,
        );
        let _ = writeln!(err.lock(), "{line}");
        (last_msgs, last_bytes, last_errs) = (msgs, bytes, errs);
    }
}

/// Prints the summary as text or JSON.
///
/// # Errors
/// Writing failed.
pub fn print_summary(out: &mut dyn Write, summary: &Summary, json: bool) -> Result<()> {
    if json {
        let text = serde_json::to_string_pretty(summary)
            .map_err(|e| ToolsError::Usage(format!("cannot encode the summary: {e}")))?;
        writeln!(out, "{text}")?;
    } else {
        writeln!(out, "{}", summary.text())?;
    }
    Ok(())
}

/// The name servers of `-n` (`;`-separated).
///
/// # Errors
/// None given.
pub(crate) fn namesrv_list(namesrv: Option<&str>) -> Result<Vec<String>> {
    let list = namesrv
        .map(remoting::net::split_addr_list)
        .unwrap_or_default();
    if list.is_empty() {
        return Err(ToolsError::NoNamesrv);
    }
    Ok(list)
}

/// Settings recorded in the summary.
pub(crate) fn settings<const N: usize>(pairs: [(&str, String); N]) -> BTreeMap<String, String> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// The whole program.
#[must_use]
pub fn main_with<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = cli.io_threads.filter(|n| *n > 0) {
        builder.worker_threads(n);
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mqbench: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let err: Arc<parking_lot::Mutex<Box<dyn Write + Send>>> =
        Arc::new(parking_lot::Mutex::new(Box::new(std::io::stderr())));
    let result = runtime.block_on(async {
        match &cli.command {
            BenchCommand::Producer(args) => producer::run(args, err).await.map(Outcome::Plain),
            BenchCommand::Consumer(args) => consumer::run(args, err).await.map(Outcome::Plain),
            BenchCommand::Topics(args) => topics::run(args, err).await.map(Outcome::Plain),
            BenchCommand::Timer(args) => timer::run(args, err)
                .await
                .map(|s| Outcome::Timer(Box::new(s))),
            BenchCommand::TimerWatch(args) => timer::watch::run(args, err)
                .await
                .map(|s| Outcome::Watch(Box::new(s))),
            BenchCommand::GrpcProducer(args) => {
                grpc::run_producer(args, err).await.map(Outcome::Plain)
            }
            BenchCommand::GrpcConsumer(args) => {
                grpc::run_consumer(args, err).await.map(Outcome::Plain)
            }
        }
    });
    let outcome = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mqbench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let json = match &cli.command {
        BenchCommand::Producer(a) => a.json,
        BenchCommand::Consumer(a) => a.json,
        BenchCommand::Topics(a) => a.json,
        BenchCommand::Timer(a) => a.json,
        BenchCommand::TimerWatch(a) => a.json,
        BenchCommand::GrpcProducer(a) => a.json,
        BenchCommand::GrpcConsumer(a) => a.json,
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = outcome.print(&mut stdout, json) {
        eprintln!("mqbench: {e}");
        return ExitCode::FAILURE;
    }
    if let Some(why) = outcome.failure() {
        eprintln!("mqbench: {why}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn durations_never_panic(text in "\\PC{0,20}|[0-9.emsh ]{0,24}") {
            let _ = parse_duration(&text);
        }

        #[test]
        fn durations_read_back(n in 0u64..1_000_000_000, unit in 0usize..4) {
            let (suffix, want) = [
                ("ms", Duration::from_millis(n)),
                ("s", Duration::from_secs(n)),
                ("m", Duration::from_secs(n * 60)),
                ("h", Duration::from_secs(n * 3600)),
            ][unit];
            // Through an f64 of seconds: exact to well under a microsecond here.
            let got = parse_duration(&format!(" {n}{suffix} ")).unwrap();
            prop_assert!(got.abs_diff(want) < Duration::from_micros(1), "{:?} vs {:?}", got, want);
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "mqbench",
            "producer",
            "-n",
            "127.0.0.1:9876",
            "-t",
            "T",
            "--size",
            "1024",
            "--threads",
            "16",
            "--duration",
            "30s",
            "--mode",
            "async",
            "--batch",
            "8",
            "--connections",
            "2",
            "--rate",
            "1000",
            "--json",
        ])
        .unwrap();
        let BenchCommand::Producer(p) = cli.command else {
            panic!("producer")
        };
        assert_eq!(
            (p.size, p.threads, p.batch, p.connections, p.rate),
            (1024, 16, 8, 2, Some(1000))
        );
        assert_eq!(p.mode, producer::Mode::Async);
        assert_eq!(p.duration, Duration::from_secs(30));
        assert!(p.json);
        let cli = Cli::try_parse_from([
            "mqbench",
            "consumer",
            "-n",
            "x:1",
            "-t",
            "T",
            "-g",
            "G",
            "--duration",
            "10s",
        ])
        .unwrap();
        assert!(matches!(cli.command, BenchCommand::Consumer(ref c) if c.group == "G"));
        let cli = Cli::try_parse_from([
            "mqbench",
            "topics",
            "-n",
            "x:1",
            "-c",
            "C",
            "-t",
            "T",
            "--count",
            "10000",
            "--queues",
            "1",
            "--io-threads",
            "2",
        ])
        .unwrap();
        assert_eq!(cli.io_threads, Some(2));
        assert!(
            matches!(cli.command, BenchCommand::Topics(ref t) if t.count == 10_000 && t.queues == 1)
        );
        let cli = Cli::try_parse_from([
            "mqbench",
            "consumer",
            "-t",
            "T",
            "--topics",
            "3",
            "--from",
            "first",
            "--catch-up",
        ])
        .unwrap();
        assert!(
            matches!(cli.command, BenchCommand::Consumer(ref c) if c.topics == 3 && c.catch_up)
        );
        assert_eq!(
            producer::topic_names("T", 3),
            vec!["T-0".to_owned(), "T-1".to_owned(), "T-2".to_owned()]
        );
        assert_eq!(producer::topic_names("T", 1), vec!["T".to_owned()]);
        assert!(Cli::try_parse_from(["mqbench", "producer", "-t", "T", "--mode", "fast"]).is_err());
    }

    #[test]
    fn timer_cli_parses() {
        let cli = Cli::try_parse_from([
            "mqbench",
            "timer",
            "-n",
            "x:1",
            "--messages",
            "1000000",
            "--window",
            "2m",
            "--lead",
            "6m",
            "--send-only",
        ])
        .unwrap();
        let BenchCommand::Timer(t) = cli.command else {
            panic!("timer")
        };
        assert_eq!(t.messages, 1_000_000);
        assert_eq!(
            (t.window, t.lead),
            (Duration::from_secs(120), Duration::from_secs(360))
        );
        assert!(t.send_only && !t.receive_only);
        // A receive-only run names the run it receives.
        assert!(Cli::try_parse_from(["mqbench", "timer", "--receive-only"]).is_err());
        assert!(
            Cli::try_parse_from([
                "mqbench",
                "timer",
                "--receive-only",
                "--run-id",
                "7",
                "--last-due-ms",
                "1764600000000"
            ])
            .is_ok()
        );
        assert!(
            Cli::try_parse_from(["mqbench", "timer", "--send-only", "--receive-only"]).is_err()
        );
        let cli = Cli::try_parse_from([
            "mqbench",
            "timer-watch",
            "--broker",
            "127.0.0.1:10911",
            "--expect",
            "5",
            "--interval",
            "10ms",
        ])
        .unwrap();
        assert!(
            matches!(cli.command, BenchCommand::TimerWatch(ref w) if w.expect == 5 && w.interval == Duration::from_millis(10))
        );
    }
}
