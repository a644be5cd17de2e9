//! Delay-message precision: how late the schedule service delivers a parked message.
//!
//! `cargo bench -p broker --bench schedule_lateness` starts a broker in process (real
//! sockets, our remoting client), sends messages with delay levels 1 and 2 (1 s and
//! 5 s) spread over a few seconds from several senders, and watches dispatch: a
//! message's due time is the tagsCode of its SCHEDULE_TOPIC_XXXX unit (store time +
//! delay, as RocketMQ computes it); its lateness is the store time of the copy
//! delivered to its real topic minus that due time. Prints the percentiles (ms; the
//! store clock has millisecond resolution). Goal: p99 ≤ 10 ms (RocketMQ's service ticks
//! every 100 ms). `SLUICE_LATENESS_MESSAGES` sets how many (default 5 000).
//!
//! Without `--bench` (as `cargo test --all-targets` runs it) it sends 40 messages and
//! checks they are all delivered, none early.
#![allow(clippy::unwrap_used, reason = "bench harness code")]

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use remoting::RemotingClient;
use store::{DispatchListener, DispatchRequest};
use support::Running;

const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
const TOPIC: &str = "LatenessTopic";

/// Due times of parked messages and the lateness of delivered ones, by UNIQ_KEY.
#[derive(Default)]
struct Watch {
    due: Mutex<HashMap<String, i64>>,
    lateness_ms: Mutex<Vec<i64>>,
}

impl DispatchListener for Watch {
    fn on_dispatch(&self, d: &DispatchRequest<'_>) {
        let Some(key) = message::properties::get(d.properties, "UNIQ_KEY") else {
            return;
        };
        if d.topic == SCHEDULE_TOPIC {
            self.due.lock().insert(key.to_owned(), d.tags_code);
        } else if d.topic == TOPIC
            && let Some(due) = self.due.lock().remove(key)
        {
            self.lateness_ms.lock().push(d.store_timestamp - due);
        }
    }
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn run(messages: usize, spread: Duration) -> Vec<i64> {
    let running = Running::start(|_, store| store.mapped_file_size_commit_log = 64 << 20).await;
    let watch = Arc::new(Watch::default());
    running.broker.store.add_dispatch_listener(watch.clone());
    let addr = running.addr.clone();
    let senders = 4;
    let per_sender = messages.div_ceil(senders);
    let gap = spread / u32::try_from(per_sender.max(1)).unwrap();
    let mut tasks = Vec::new();
    for s in 0..senders {
        let addr = addr.clone();
        tasks.push(tokio::spawn(async move {
            let client = RemotingClient::default();
            for i in 0..per_sender {
                let n = s * per_sender + i;
                if n >= messages {
                    break;
                }
                let level = 1 + u32::try_from(n % 2).unwrap();
                let props = format!("DELAY\u{1}{level}\u{2}UNIQ_KEY\u{1}K{n:08}");
                let request = support::send_request(TOPIC, 0, b"delayed", &props);
                let r = client.invoke(&addr, request, support::T).await.unwrap();
                assert_eq!(r.code(), 0, "send refused: {:?}", r.header.remark);
                tokio::time::sleep(gap).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // Level 2 is 5 s: everything is due within spread + 5 s.
    let deadline = Instant::now() + spread + Duration::from_secs(15);
    while watch.lateness_ms.lock().len() < messages && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    running.stop().await;
    let mut lateness = watch.lateness_ms.lock().clone();
    lateness.sort_unstable();
    assert_eq!(
        lateness.len(),
        messages,
        "not every delayed message was delivered"
    );
    lateness
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (messages, spread) = if bench {
        let n = std::env::var("SLUICE_LATENESS_MESSAGES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5_000);
        (n, Duration::from_secs(4))
    } else {
        (40, Duration::from_millis(200))
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let lateness = rt.block_on(run(messages, spread));
    assert!(
        lateness[0] >= 0,
        "a message was delivered {} ms early",
        -lateness[0]
    );
    println!(
        "schedule lateness (ms) over {} messages (levels 1s/5s): min {} p50 {} p90 {} p99 {} p99.9 {} max {}",
        lateness.len(),
        lateness[0],
        percentile(&lateness, 0.5),
        percentile(&lateness, 0.9),
        percentile(&lateness, 0.99),
        percentile(&lateness, 0.999),
        lateness[lateness.len() - 1],
    );
}
