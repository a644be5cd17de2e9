//! Sends N messages with rocketmq-client-rust's `DefaultMQProducer`.
//!
//! ```text
//! producer --namesrv 127.0.0.1:9876 --topic T --count 10 [--group G] [--tag TAG]
//!          [--keys-prefix K] [--body-prefix B] [--mode sync|async|oneway] [--batch]
//!          [--batch-size N] [--send-timeout-ms 3000] [--retries 2] [--keep-going]
//!          [--timeout-ms MS] [--log-level warn]
//! ```
//!
//! Message i (from 0) has body `<body-prefix>-<i>`, key `<keys-prefix>-<i>` (when a prefix is
//! given) and the tag (when given). Prints, on stdout:
//!
//! ```text
//! SENT <msgId> <offsetMsgId> <queueId> <queueOffset> <sendStatus>   one per message
//! OK sent=<n>                                                       exit 0
//! ```
//!
//! `--mode sync` (default) sends one message at a time and prints in order; `async` starts every
//! send at once (`send_with_callback_timeout`) and prints each result as it completes; `oneway`
//! prints no SENT lines. `--batch` sends batches of `--batch-size` (default: all) with one
//! `send_batch_with_timeout` (sync) or `send_batch_with_callback_timeout` (async) call each; each
//! message of a batch gets its own SENT line: the batch's queue id, queueOffset = the batch's first
//! offset + its index, its share of the comma-separated ids the client reports, `-` for a missing
//! one. A failed send prints `ERR send <i> <error>` and stops (exit 1), or with `--keep-going` goes
//! on and ends with `ERR sent=<ok> failed=<n>` (exit 1).

use std::time::Duration;

use rocketmq_client_rust::{ClientError, DefaultMQProducer};
use rocketmq_model::common::message::message_single::Message;
use rocketmq_model::result::SendResult;
use sluice_it_rust_client::client::ClientEnv;
use sluice_it_rust_client::harness::{self, Args, EXIT_FAIL, EXIT_OK};
use tokio::sync::mpsc;

const USAGE: &str = "--namesrv HOST:PORT --topic TOPIC --count N [--group G] [--tag TAG] \
[--keys-prefix K] [--body-prefix B] [--mode sync|async|oneway] [--batch] [--batch-size N] \
[--send-timeout-ms MS] [--retries N] [--keep-going] [--timeout-ms MS] [--log-level LEVEL]";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Sync,
    Async,
    Oneway,
}

#[derive(Debug)]
struct Options {
    namesrv: String,
    topic: String,
    group: String,
    tag: Option<String>,
    keys_prefix: Option<String>,
    body_prefix: String,
    mode: Mode,
    batch: bool,
    batch_size: usize,
    count: usize,
    send_timeout_ms: u64,
    retries: u32,
    keep_going: bool,
}

fn main() {
    let args = Args::parse(
        "producer",
        USAGE,
        &[
            "namesrv",
            "topic",
            "count",
            "group",
            "tag",
            "keys-prefix",
            "body-prefix",
            "mode",
            "batch-size",
            "send-timeout-ms",
            "retries",
            "timeout-ms",
            "log-level",
        ],
        &["batch", "keep-going"],
    );
    let namesrv = args.required("namesrv").to_owned();
    if let Err(e) = harness::check_loopback(&namesrv) {
        args.fail(&e);
    }
    let mode = match args.get_or("mode", "sync") {
        "sync" => Mode::Sync,
        "async" => Mode::Async,
        "oneway" => Mode::Oneway,
        other => args.fail(&format!("--mode wants sync, async or oneway, got {other}")),
    };
    let _ = args.required("topic");
    let _ = args.required("count");
    let count: usize = args.number("count", 0);
    let batch = args.flag("batch");
    if batch && mode == Mode::Oneway {
        args.fail("--batch works with --mode sync or async (the client has no oneway batch)");
    }
    let batch_size = match (batch, args.number("batch-size", 0usize)) {
        (false, _) => 1,
        (true, 0) => count.max(1),
        (true, n) => n,
    };
    let options = Options {
        namesrv,
        topic: args.required("topic").to_owned(),
        group: args.get_or("group", "sluice_it_rust_producer").to_owned(),
        tag: args.get("tag").map(str::to_owned),
        keys_prefix: args.get("keys-prefix").map(str::to_owned),
        body_prefix: args.get_or("body-prefix", "msg").to_owned(),
        mode,
        batch,
        batch_size,
        count,
        send_timeout_ms: args.number("send-timeout-ms", 3_000),
        retries: args.number("retries", 2),
        keep_going: args.flag("keep-going"),
    };
    let default_timeout = 30_000 + options.count as u64 * options.send_timeout_ms;
    let hard = Duration::from_millis(args.number("timeout-ms", default_timeout));
    harness::init("producer", hard, args.get_or("log-level", "warn"));
    harness::exit(run(&options));
}

fn run(o: &Options) -> i32 {
    let env = match ClientEnv::new("sluice-it-producer") {
        Ok(env) => env,
        Err(e) => {
            harness::out(format_args!("ERR start {}", harness::one_line(&e)));
            return EXIT_FAIL;
        }
    };
    let code = env.block_on(async {
        let mut producer = DefaultMQProducer::builder(env.runtime())
            .producer_group(o.group.as_str())
            .name_server_addr(o.namesrv.as_str())
            .send_msg_timeout(u32::try_from(o.send_timeout_ms).unwrap_or(u32::MAX))
            .retry_times_when_send_failed(o.retries)
            .build();
        if let Err(e) = producer.start().await {
            harness::out(format_args!("ERR start {}", harness::describe(&e)));
            producer.shutdown().await;
            return EXIT_FAIL;
        }
        let failed = match o.mode {
            Mode::Sync => send_sync(&producer, o).await,
            Mode::Async => send_async(&producer, o).await,
            Mode::Oneway => send_oneway(&producer, o).await,
        };
        producer.shutdown().await;
        match failed {
            None => EXIT_FAIL,
            Some(0) => {
                harness::out(format_args!("OK sent={}", o.count));
                EXIT_OK
            }
            Some(n) => {
                harness::out(format_args!("ERR sent={} failed={n}", o.count - n));
                EXIT_FAIL
            }
        }
    });
    env.shutdown();
    code
}

fn message(o: &Options, i: usize) -> Result<Message, String> {
    let mut builder = Message::builder()
        .topic(o.topic.as_str())
        .body_slice(format!("{}-{i}", o.body_prefix).as_bytes());
    if let Some(tag) = &o.tag {
        builder = builder.tags(tag.as_str());
    }
    if let Some(prefix) = &o.keys_prefix {
        builder = builder.key(format!("{prefix}-{i}"));
    }
    builder.build().map_err(|e| harness::describe(&e))
}

/// The `[first, end)` index ranges of the sends to make.
fn batches(o: &Options) -> Vec<(usize, usize)> {
    (0..o.count)
        .step_by(o.batch_size.max(1))
        .map(|first| (first, (first + o.batch_size).min(o.count)))
        .collect()
}

fn messages(o: &Options, (first, end): (usize, usize)) -> Result<Vec<Message>, String> {
    (first..end).map(|i| message(o, i)).collect()
}

/// One SENT line per message of a send of `n` messages.
fn print_result(r: &SendResult, n: usize) {
    let msg_ids: Vec<&str> = r.msg_id.as_deref().unwrap_or("").split(',').collect();
    let offset_ids: Vec<&str> = r
        .offset_msg_id
        .as_deref()
        .unwrap_or("")
        .split(',')
        .collect();
    let queue_id = r.message_queue.as_ref().map_or(-1, |mq| mq.queue_id());
    for j in 0..n {
        harness::out(format_args!(
            "SENT {} {} {queue_id} {} {}",
            harness::or_dash(msg_ids.get(j).copied().unwrap_or("")),
            harness::or_dash(offset_ids.get(j).copied().unwrap_or("")),
            r.queue_offset + j as u64,
            r.send_status
        ));
    }
}

/// Counts a failed send of `n` messages; `false` when the program must stop.
fn failed_send(o: &Options, first: usize, error: &str, failed: &mut usize, n: usize) -> bool {
    harness::out(format_args!(
        "ERR send {first} {}",
        harness::one_line(error)
    ));
    *failed += n;
    o.keep_going
}

/// Returns the number of failed messages, `None` when it stopped at the first failure.
async fn send_sync(p: &DefaultMQProducer, o: &Options) -> Option<usize> {
    let mut failed = 0;
    for b in batches(o) {
        let n = b.1 - b.0;
        let result = match messages(o, b) {
            Err(e) => Err(e),
            Ok(mut msgs) if !o.batch => match msgs.pop() {
                Some(msg) => match p.send_with_timeout(msg, o.send_timeout_ms).await {
                    Ok(Some(r)) => Ok(r),
                    Ok(None) => Err("the client returned no send result".to_owned()),
                    Err(e) => Err(harness::describe(&e)),
                },
                None => continue,
            },
            Ok(msgs) => p
                .send_batch_with_timeout(msgs, o.send_timeout_ms)
                .await
                .map_err(|e| harness::describe(&e)),
        };
        match result {
            Ok(r) => print_result(&r, n),
            Err(e) => {
                if !failed_send(o, b.0, &e, &mut failed, n) {
                    return None;
                }
            }
        }
    }
    Some(failed)
}

async fn send_async(p: &DefaultMQProducer, o: &Options) -> Option<usize> {
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, usize, Result<SendResult, String>)>();
    let mut failed = 0;
    let mut pending = 0;
    let mut stop = false;
    for b in batches(o) {
        let n = b.1 - b.0;
        let msgs = match messages(o, b) {
            Ok(msgs) => msgs,
            Err(e) => {
                stop |= !failed_send(o, b.0, &e, &mut failed, n);
                continue;
            }
        };
        let tx = tx.clone();
        let callback = move |r: Option<&SendResult>, e: Option<&ClientError>| {
            let outcome = match (r, e) {
                (Some(r), _) => Ok(r.clone()),
                (None, Some(e)) => Err(harness::describe(e)),
                (None, None) => Err("callback without result or error".to_owned()),
            };
            let _ = tx.send((b.0, n, outcome));
        };
        let started = if o.batch {
            p.send_batch_with_callback_timeout(msgs, callback, o.send_timeout_ms)
                .await
        } else {
            let mut msgs = msgs;
            match msgs.pop() {
                Some(msg) => {
                    p.send_with_callback_timeout(msg, callback, o.send_timeout_ms)
                        .await
                }
                None => continue,
            }
        };
        match started {
            Ok(()) => pending += 1,
            Err(e) => stop |= !failed_send(o, b.0, &harness::describe(&e), &mut failed, n),
        }
    }
    drop(tx);
    // Every callback runs once its send timeout passed; the watchdog guards the rest.
    while pending > 0 {
        let Some((first, n, outcome)) = rx.recv().await else {
            harness::out(format_args!(
                "ERR {pending} callbacks never ran (their senders were dropped)"
            ));
            failed += pending;
            break;
        };
        pending -= 1;
        match outcome {
            Ok(r) => print_result(&r, n),
            Err(e) => stop |= !failed_send(o, first, &e, &mut failed, n),
        }
    }
    if stop {
        None
    } else {
        Some(failed)
    }
}

async fn send_oneway(p: &DefaultMQProducer, o: &Options) -> Option<usize> {
    let mut failed = 0;
    for i in 0..o.count {
        let result = match message(o, i) {
            Ok(msg) => p.send_oneway(msg).await.map_err(|e| harness::describe(&e)),
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            if !failed_send(o, i, &e, &mut failed, 1) {
                return None;
            }
        }
    }
    Some(failed)
}
