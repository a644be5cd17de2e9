//! Consumes with rocketmq-client-rust's `DefaultMQPushConsumer` (concurrent listener) and prints
//! what it receives.
//!
//! ```text
//! consumer --namesrv 127.0.0.1:9876 --topic T --group G --count 10 [--expr '*']
//!          [--from first|last] [--broadcast] [--props] [--wait-ms 30000] [--timeout-ms MS]
//!          [--log-level warn]
//! ```
//!
//! Prints, on stdout (the lines of the Java `PushConsumer`):
//!
//! ```text
//! STARTED <group>                                          once the consumer has started
//! RECV <msgId> <queueId> <queueOffset> <body>              one per delivery (body escaped)
//! PROPS <msgId> topic=<t> tags=<t> keys=<k> reconsume=<n> uniqKey=<id>   with --props
//! OK received=<n>                                          exit 0
//! ```
//!
//! `<msgId>` is what the client's `MessageExt::msg_id()` reports. It exits as soon as `--count`
//! deliveries arrived (duplicates count), or after `--wait-ms`: with fewer than `--count`
//! deliveries then, it prints `ERR received=<n> expected=<count>` and exits 1. `--count 0`
//! consumes for the whole wait and exits 0.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rocketmq_client_rust::{
    ClientResult, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, DefaultMQPushConsumer,
    MQPushConsumer, MessageListenerConcurrently,
};
use rocketmq_model::common::consumer::consume_from_where::ConsumeFromWhere;
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_protocol::protocol::heartbeat::message_model::MessageModel;
use sluice_it_rust_client::client::ClientEnv;
use sluice_it_rust_client::harness::{self, Args, EXIT_FAIL, EXIT_OK};
use tokio::sync::Notify;

const USAGE: &str = "--namesrv HOST:PORT --topic TOPIC --group G --count N [--expr EXPR] \
[--from first|last] [--broadcast] [--props] [--wait-ms MS] [--timeout-ms MS] [--log-level LEVEL]";

#[derive(Debug)]
struct Options {
    namesrv: String,
    topic: String,
    group: String,
    expr: String,
    from_first: bool,
    broadcast: bool,
    props: bool,
    count: usize,
    wait: Duration,
}

fn main() {
    let args = Args::parse(
        "consumer",
        USAGE,
        &[
            "namesrv",
            "topic",
            "group",
            "count",
            "expr",
            "from",
            "wait-ms",
            "timeout-ms",
            "log-level",
        ],
        &["broadcast", "props"],
    );
    let namesrv = args.required("namesrv").to_owned();
    if let Err(e) = harness::check_loopback(&namesrv) {
        args.fail(&e);
    }
    let _ = args.required("count");
    let from_first = match args.get_or("from", "first") {
        "first" => true,
        "last" => false,
        other => args.fail(&format!("--from wants first or last, got {other}")),
    };
    let wait_ms: u64 = args.number("wait-ms", 30_000);
    let options = Options {
        namesrv,
        topic: args.required("topic").to_owned(),
        group: args.required("group").to_owned(),
        expr: args.get_or("expr", "*").to_owned(),
        from_first,
        broadcast: args.flag("broadcast"),
        props: args.flag("props"),
        count: args.number("count", 0),
        wait: Duration::from_millis(wait_ms),
    };
    let hard = Duration::from_millis(args.number("timeout-ms", wait_ms + 20_000));
    harness::init("consumer", hard, args.get_or("log-level", "warn"));
    harness::exit(run(&options));
}

struct Listener {
    received: Arc<AtomicUsize>,
    done: Arc<Notify>,
    count: usize,
    props: bool,
}

impl MessageListenerConcurrently for Listener {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _context: &ConsumeConcurrentlyContext,
    ) -> ClientResult<ConsumeConcurrentlyStatus> {
        for m in msgs {
            let body = m.body().unwrap_or_default();
            let mut line = format!(
                "RECV {} {} {} {}",
                m.msg_id(),
                m.queue_id(),
                m.queue_offset(),
                harness::escape_body(&body)
            );
            if self.props {
                let prop = |key: &str| {
                    m.properties()
                        .get(key)
                        .map_or_else(|| "-".to_owned(), ToString::to_string)
                };
                line.push_str(&format!(
                    "\nPROPS {} topic={} tags={} keys={} reconsume={} uniqKey={}",
                    m.msg_id(),
                    m.topic(),
                    prop("TAGS"),
                    prop("KEYS"),
                    m.reconsume_times(),
                    prop("UNIQ_KEY")
                ));
            }
            harness::out(line);
            let n = self.received.fetch_add(1, Ordering::SeqCst) + 1;
            if self.count > 0 && n >= self.count {
                self.done.notify_one();
            }
        }
        Ok(ConsumeConcurrentlyStatus::ConsumeSuccess)
    }
}

fn run(o: &Options) -> i32 {
    let env = match ClientEnv::new("sluice-it-consumer") {
        Ok(env) => env,
        Err(e) => {
            harness::out(format_args!("ERR start {}", harness::one_line(&e)));
            return EXIT_FAIL;
        }
    };
    let received = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(Notify::new());
    let code = env.block_on(async {
        let mut consumer = DefaultMQPushConsumer::builder(env.runtime())
            .consumer_group(o.group.as_str())
            .name_server_addr(o.namesrv.as_str())
            .message_model(if o.broadcast {
                MessageModel::Broadcasting
            } else {
                MessageModel::Clustering
            })
            .consume_from_where(if o.from_first {
                ConsumeFromWhere::ConsumeFromFirstOffset
            } else {
                ConsumeFromWhere::ConsumeFromLastOffset
            })
            .build();
        let started = async {
            consumer
                .subscribe(o.topic.as_str(), o.expr.as_str())
                .await?;
            consumer.register_message_listener_concurrently(Listener {
                received: Arc::clone(&received),
                done: Arc::clone(&done),
                count: o.count,
                props: o.props,
            });
            consumer.start().await
        }
        .await;
        if let Err(e) = started {
            harness::out(format_args!("ERR start {}", harness::describe(&e)));
            consumer.shutdown().await;
            return EXIT_FAIL;
        }
        harness::out(format_args!("STARTED {}", o.group));
        let _ = tokio::time::timeout(o.wait, done.notified()).await;
        consumer.shutdown().await;
        let n = received.load(Ordering::SeqCst);
        if o.count > 0 && n < o.count {
            harness::out(format_args!("ERR received={n} expected={}", o.count));
            EXIT_FAIL
        } else {
            harness::out(format_args!("OK received={n}"));
            EXIT_OK
        }
    });
    env.shutdown();
    code
}
