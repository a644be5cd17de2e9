//! kill -9 loop under SYNC_FLUSH: one master (`flushDiskType=SYNC_FLUSH`, no slave) takes a
//! continuous stream from the official Java producer; at random moments the broker is killed
//! with SIGKILL and started again at once on the same store, `--events` times; then every queue
//! is read back. A SEND_OK here promises the message was flushed to disk before the answer, so
//! none may be missing after any number of crashes, and none may come back different.

use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use super::scenario::{Ctx, Kind, Outcome};
use crate::drill::{self, Books, DrillProducer, ProducerOptions, first_send_ok_sent_after, now_ms};
use crate::harness::{BrokerProcess, NamesrvProcess, TestDir, ha_status, unique_name, wait_until};
use crate::java::{JavaTools, V4};

/// Body size: long enough that a torn record shows as a wrong body, short enough that a long
/// run's drain stays small.
pub const BODY_SIZE: usize = 256;
/// Sends in flight: several, so a kill lands between appends, flushes and answers.
pub const IN_FLIGHT: u32 = 8;
/// Running time between a broker serving again and the next kill, ms (uniformly random).
pub const GAP_MS: std::ops::Range<u64> = 300..2_000;
/// How long a restarted broker may take to answer requests again.
const SERVE_TIMEOUT: Duration = Duration::from_secs(60);

/// The producer's settings here.
#[must_use]
pub fn producer_options() -> ProducerOptions {
    ProducerOptions {
        mode: "async",
        max_in_flight: IN_FLIGHT,
        body_size: BODY_SIZE,
        send_timeout_ms: 3_000,
        ..ProducerOptions::default()
    }
}

/// Runs the scenario (see the module docs).
///
/// # Errors
/// A step fails (the broker does not come back, no SEND_OK after a restart).
pub fn run(ctx: &mut Ctx<'_>) -> Result<Outcome, String> {
    let java = JavaTools::try_get(V4)?;
    let work = TestDir::new("rel-kill9");
    let ns = NamesrvProcess::start();
    let mut broker = BrokerProcess::start_master(
        "a",
        &ns.addr(),
        "ASYNC_MASTER",
        &[("flushDiskType", "SYNC_FLUSH")],
    );
    let topic = unique_name("Kill9");
    broker.create_topic(&topic, 4);
    let options = producer_options();
    ctx.result.note_producer(V4, &options);
    let started = Instant::now();
    let producer = DrillProducer::start(java, &ns.addr(), &topic, work.path(), options);
    if !producer.wait_acks(200, Duration::from_secs(60)) {
        return Err(format!(
            "no 200 answers before the first kill: {:?}",
            producer.last_lines(5)
        ));
    }
    let kills = ctx.plan.events(Kind::Kill9);
    let mut killed_at = Vec::new();
    for k in 1..=kills {
        thread::sleep(Duration::from_millis(ctx.rng.u64(GAP_MS)));
        let at = now_ms();
        let clock = Instant::now();
        broker.kill();
        broker.process().restart();
        let listening = clock.elapsed();
        if !wait_until(SERVE_TIMEOUT, || ha_status(&broker.addr()).is_ok()) {
            return Err(format!(
                "kill {k}: the broker does not answer after its restart"
            ));
        }
        let serving = clock.elapsed();
        ctx.result
            .event("kill_to_listening_ms", listening.as_secs_f64() * 1000.0);
        ctx.result
            .event("kill_to_serving_ms", serving.as_secs_f64() * 1000.0);
        killed_at.push(at);
        if !producer.wait_send_ok_sent_since(at, SERVE_TIMEOUT) {
            return Err(format!(
                "kill {k}: no SEND_OK after the restart: {:?}",
                producer.last_lines(5)
            ));
        }
    }
    thread::sleep(Duration::from_secs(1));
    let produced = producer.stop(Duration::from_secs(120));
    let sending = started.elapsed();
    let _ = fs::write(ctx.log_dir.join("producer.out"), &produced.output.stdout);
    for &at in &killed_at {
        ctx.result.event_opt(
            "kill_to_first_send_ok_ms",
            first_send_ok_sent_after(&produced.acks, at),
        );
    }
    let drained = drill::drain(java, &ns.addr(), &topic, Duration::from_secs(600));
    let books = Books::new(&produced.acks, &produced.fails, &drained, BODY_SIZE);
    ctx.result.books(&books, &produced);
    ctx.result.count("kills", killed_at.len());
    ctx.result.metric(
        "acked_per_s",
        books.acked as f64 / sending.as_secs_f64().max(1e-3),
    );
    ctx.result
        .metric("drain_secs", drained.elapsed.as_secs_f64());
    ctx.broker_after_kills(&mut broker);
    Ok(Outcome::Done)
}
