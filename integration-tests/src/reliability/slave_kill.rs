//! Slave kill / restart under SYNC_MASTER (+ SYNC_FLUSH): the official Java producer sends
//! continuously to the master while its slave is killed with SIGKILL, left down a moment and
//! restarted on its store, `--events` times. A SYNC_MASTER may answer SEND_OK only once the
//! slave holds the message; while the slave is gone it must answer SLAVE_NOT_AVAILABLE (or
//! FLUSH_SLAVE_TIMEOUT), stored on the master only. Figures: the answers by kind, SEND_OKs given
//! while no slave was there, the slave's catch-up after each restart (restart to holding the
//! master's end as of the restart), and at the end the slave's CommitLog byte for byte against
//! the master's.

use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use super::scenario::{Ctx, Kind, Outcome};
use crate::drill::{self, Books, DrillProducer, ProducerOptions, first_ack_after, now_ms};
use crate::harness::{HaPair, TestDir, compare_store_files, ha_status, unique_name};
use crate::java::{JavaTools, V4};

/// Body size of the producer's messages.
pub const BODY_SIZE: usize = 256;
/// Time between the slave serving again and the next kill, ms (uniformly random).
pub const GAP_MS: std::ops::Range<u64> = 500..2_000;
/// Time the slave stays down, ms (uniformly random).
pub const DOWN_MS: std::ops::Range<u64> = 300..1_500;
/// Answers in flight when the slave dies may still be SEND_OK: only sends started this long
/// after the kill count as "SEND_OK while the slave was down".
const IN_FLIGHT_GRACE_MS: u64 = 200;
/// How long the slave may take to catch up.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(60);

/// The producer's settings here.
#[must_use]
pub fn producer_options() -> ProducerOptions {
    ProducerOptions {
        mode: "async",
        max_in_flight: 8,
        body_size: BODY_SIZE,
        send_timeout_ms: 3_000,
        ..ProducerOptions::default()
    }
}

/// Runs the scenario (see the module docs).
///
/// # Errors
/// A step fails (the slave does not catch up, the master gives no SEND_OK after a restart).
#[allow(clippy::too_many_lines, reason = "the scenario, step by step")]
pub fn run(ctx: &mut Ctx<'_>) -> Result<Outcome, String> {
    let java = JavaTools::try_get(V4)?;
    let work = TestDir::new("rel-slave-kill");
    let topic = unique_name("Drill");
    let mut pair = HaPair::start(
        "SYNC_MASTER",
        &[("flushDiskType", "SYNC_FLUSH")],
        &[(&topic, 4)],
    );
    let options = producer_options();
    ctx.result.note_producer(V4, &options);
    let producer = DrillProducer::start(java, &pair.namesrv(), &topic, work.path(), options);
    if !producer.wait_acks(200, Duration::from_secs(60)) {
        return Err(format!(
            "no 200 answers before the first kill: {:?}",
            producer.last_lines(5)
        ));
    }
    let (master_addr, master_ha) = (pair.master().addr(), pair.master().ha_addr());
    let kills = ctx.plan.events(Kind::SlaveKill);
    // (killed at, restarted at) of each outage.
    let mut outages = Vec::new();
    for k in 1..=kills {
        thread::sleep(Duration::from_millis(ctx.rng.u64(GAP_MS)));
        let killed_at = now_ms();
        pair.slave_mut().kill();
        thread::sleep(Duration::from_millis(ctx.rng.u64(DOWN_MS)));
        let target = ha_status(&master_addr)
            .map_err(|e| format!("kill {k}: the master does not answer: {e}"))?
            .max_offset;
        let restarted_at = now_ms();
        let clock = Instant::now();
        pair.slave_mut().process().restart();
        let slave_addr = pair.slave().addr();
        drill::wait_holding(&slave_addr, &master_ha, target, CATCH_UP_TIMEOUT)
            .map_err(|e| format!("kill {k}: {e}"))?;
        ctx.result.event(
            "restart_to_caught_up_ms",
            clock.elapsed().as_secs_f64() * 1000.0,
        );
        outages.push((killed_at, restarted_at));
        if !producer.wait_acked_since(restarted_at, true, CATCH_UP_TIMEOUT) {
            return Err(format!(
                "kill {k}: no SEND_OK after the slave came back: {:?}",
                producer.last_lines(5)
            ));
        }
    }
    thread::sleep(Duration::from_secs(1));
    let produced = producer.stop(Duration::from_secs(120));
    let _ = fs::write(ctx.log_dir.join("producer.out"), &produced.output.stdout);
    let acks = &produced.acks;
    // How the master answered what was sent while its slave was away: the sends in flight at
    // the kill and those made before the restart.
    let (mut ok_while_down, mut held_then_ok, mut not_ok, mut failed) = (0, 0, 0, 0);
    for &(killed_at, restarted_at) in &outages {
        let affected = |a: &&drill::Ack| a.ack_at >= killed_at && a.sent_at < restarted_at;
        ctx.result.event_opt(
            "kill_to_first_not_ok_ms",
            acks.iter()
                .filter(affected)
                .filter(|a| !a.is_send_ok())
                .map(|a| a.ack_at - killed_at)
                .min(),
        );
        ctx.result.event_opt(
            "restart_to_first_send_ok_ms",
            first_ack_after(acks, restarted_at, true, None),
        );
        ctx.result.event_opt(
            "longest_send_across_outage_ms",
            acks.iter()
                .filter(affected)
                .map(drill::Ack::latency_ms)
                .max(),
        );
        for a in acks.iter().filter(affected) {
            match (a.is_send_ok(), a.ack_at < restarted_at) {
                // Acknowledged by the slave before it died, answered a moment later.
                (true, true) if a.sent_at < killed_at + IN_FLIGHT_GRACE_MS => {}
                (true, true) => ok_while_down += 1,
                (true, false) => held_then_ok += 1,
                (false, _) => not_ok += 1,
            }
        }
        failed += produced
            .fails
            .iter()
            .filter(|f| f.fail_at >= killed_at && f.sent_at < restarted_at)
            .count();
    }
    ctx.result
        .count("outage_sends_send_ok_after_slave_back", held_then_ok);
    ctx.result.count("outage_sends_not_ok", not_ok);
    ctx.result.count("outage_sends_failed", failed);
    ctx.result.count("send_ok_while_slave_down", ok_while_down);

    // Quiet now: the slave must end with the master's log, byte for byte.
    let (master, slave) = (pair.master(), pair.slave());
    let caught_up = slave.wait_following(master, CATCH_UP_TIMEOUT);
    ctx.result
        .metric("caught_up_at_end", f64::from(u8::from(caught_up.is_ok())));
    if let Err(e) = &caught_up {
        ctx.result.note("caught_up_at_end", e.clone());
    }
    let same = compare_store_files(&master.commit_log_dir(), &slave.commit_log_dir());
    ctx.result
        .metric("slave_identical", f64::from(u8::from(same.is_ok())));
    match same {
        Ok(files) => ctx.result.count("commit_log_files_compared", files),
        Err(e) => ctx.result.note("slave_identical", e),
    }
    let drained = drill::drain(java, &pair.namesrv(), &topic, Duration::from_secs(600));
    let books = Books::new(acks, &produced.fails, &drained, BODY_SIZE);
    ctx.result.books(&books, &produced);
    ctx.result.count("kills", outages.len());
    let [a, b] = pair.brokers_mut();
    ctx.keep_logs("master", a.process_ref());
    ctx.keep_logs("slave", b.process_ref());
    Ok(Outcome::Done)
}
