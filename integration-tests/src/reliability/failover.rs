//! Failover drills, one after the other on the same pair, with the old master rejoining each
//! time: the official Java producer sends continuously; the master is killed with SIGKILL (odd
//! rounds) or switched over as planned (even rounds); `mqadmin switchRole` promotes the slave;
//! the old master comes back as the new master's slave (restarted on its store, or demoted
//! live) and catches up; `--events` rounds, so both brokers are master in turn. Then every queue
//! is read back from the last master. The steps are [`crate::drill::failover`]'s, the
//! same as `tests/ha_drill.rs`.
//!
//! SYNC_MASTER: no SEND_OK may be lost. ASYNC_MASTER: what the slave had not received when the
//! master died is lost by design (bounded by the replication lag); the count is reported.

use std::fs;
use std::thread;
use std::time::Duration;

use super::scenario::{Ctx, Kind, Outcome};
use crate::drill::{self, Books, DrillProducer, Failover, ProducerOptions, Round};
use crate::harness::{HaPair, TestDir, compare_store_files, unique_name};
use crate::java::{JavaTools, V4, V5};

/// Body size of the producer's messages.
pub const BODY_SIZE: usize = 256;
/// Answers before the first failover.
const ACKS_BEFORE: usize = 300;
/// Time the producer runs on the whole pair between two failovers.
const BETWEEN: Duration = Duration::from_millis(1000);

/// The producer's settings here (the drills' own: sync sends, 1 s timeout, 2 retries).
#[must_use]
pub fn producer_options() -> ProducerOptions {
    ProducerOptions {
        body_size: BODY_SIZE,
        ..ProducerOptions::default()
    }
}

/// The Java client of each role's drill (as in tests/ha_drill.rs).
#[must_use]
pub fn client(sync: bool) -> &'static str {
    if sync { V4 } else { V5 }
}

/// Runs the scenario (see the module docs).
///
/// # Errors
/// A step fails.
#[allow(clippy::too_many_lines, reason = "the scenario, step by step")]
pub fn run(ctx: &mut Ctx<'_>, sync: bool) -> Result<Outcome, String> {
    let (role, flush) = if sync {
        ("SYNC_MASTER", "SYNC_FLUSH")
    } else {
        ("ASYNC_MASTER", "ASYNC_FLUSH")
    };
    let java = JavaTools::try_get(client(sync))?;
    let work = TestDir::new("rel-failover");
    let topic = unique_name("Drill");
    let mut pair = HaPair::start(role, &[("flushDiskType", flush)], &[(&topic, 4)]);
    let options = producer_options();
    ctx.result.note_producer(client(sync), &options);
    ctx.result
        .note("pair", format!("brokerRole={role}, flushDiskType={flush}"));
    let producer = DrillProducer::start(java, &pair.namesrv(), &topic, work.path(), options);
    if !producer.wait_acks(ACKS_BEFORE, Duration::from_secs(60)) {
        return Err(format!(
            "no {ACKS_BEFORE} answers before the first failover: {:?}",
            producer.last_lines(5)
        ));
    }
    let mut rounds: Vec<Round> = Vec::new();
    for k in 0..ctx.plan.events(Kind::Failover { sync }) {
        let kind = if k % 2 == 0 {
            Failover::Kill
        } else {
            Failover::Switchover
        };
        rounds.push(drill::failover(&mut pair, kind, &producer));
        thread::sleep(BETWEEN);
    }
    let produced = producer.stop(Duration::from_secs(120));
    let _ = fs::write(ctx.log_dir.join("producer.out"), &produced.output.stdout);
    let acks = &produced.acks;

    // Quiet now: the last old master must hold the last master's log, byte for byte.
    let (master, slave) = (pair.master(), pair.slave());
    let caught_up = slave.wait_following(master, Duration::from_secs(60));
    ctx.result
        .metric("caught_up_at_end", f64::from(u8::from(caught_up.is_ok())));
    if let Err(e) = &caught_up {
        ctx.result.note("caught_up_at_end", e.clone());
    }
    let same = compare_store_files(&master.commit_log_dir(), &slave.commit_log_dir());
    ctx.result
        .metric("slave_identical", f64::from(u8::from(same.is_ok())));
    if let Err(e) = same {
        ctx.result.note("slave_identical", e);
    }
    let drained = drill::drain(java, &pair.namesrv(), &topic, Duration::from_secs(600));
    let books = Books::new(acks, &produced.fails, &drained, BODY_SIZE);
    ctx.result.books(&books, &produced);

    // Per round: the figures, and the lost messages acknowledged since the previous rejoin (a
    // rejoin is where a tail is cut: after a kill, or between promotion and demotion).
    let lost: std::collections::BTreeSet<&str> = books.lost.iter().map(String::as_str).collect();
    let mut wrong_cut = 0;
    let mut previous = 0;
    for round in &rounds {
        let f = round.figures(acks);
        let event = match round.kind {
            Some(Failover::Kill) => "kill",
            _ => "switchover",
        };
        ctx.result.event_opt(
            &format!("{event}_switch_to_first_write_ms"),
            f.switch_to_first_write_ms,
        );
        ctx.result.event_opt(
            &format!("{event}_switch_to_first_send_ok_ms"),
            f.switch_to_first_send_ok_ms,
        );
        ctx.result
            .event_opt("switch_to_first_write_ms", f.switch_to_first_write_ms);
        ctx.result
            .event_opt("switch_to_first_send_ok_ms", f.switch_to_first_send_ok_ms);
        ctx.result
            .event_opt("kill_to_first_write_ms", f.kill_to_first_write_ms);
        ctx.result
            .event_opt("rejoin_to_first_send_ok_ms", f.rejoin_to_first_send_ok_ms);
        ctx.result.event_opt("catch_up_ms", f.catch_up_ms);
        ctx.result
            .event_opt("switch_command_ms", Some(round.switch_command_ms));
        if let (Some(end), Some(promoted)) = (round.old_end, round.promoted_at) {
            ctx.result
                .event_opt("old_master_tail_bytes", Some(end.saturating_sub(promoted)));
        }
        if round.truncated_to.is_some() && round.truncated_to != round.promoted_at {
            wrong_cut += 1;
        }
        #[allow(clippy::cast_precision_loss, reason = "a count")]
        let lost_here = acks
            .iter()
            .filter(|a| a.ack_at > previous && a.ack_at <= round.rejoin_at)
            .filter(|a| a.is_send_ok() && lost.contains(a.id.as_str()))
            .count() as f64;
        ctx.result.event("lost_per_round", lost_here);
        ctx.result
            .event(&format!("{event}_lost_per_round"), lost_here);
        previous = round.rejoin_at;
    }
    ctx.result.count(
        "lost_after_last_rejoin",
        acks.iter()
            .filter(|a| a.ack_at > previous && a.is_send_ok() && lost.contains(a.id.as_str()))
            .count(),
    );
    ctx.result.count("rounds", rounds.len());
    ctx.result.count(
        "kill_rounds",
        rounds
            .iter()
            .filter(|r| r.kind == Some(Failover::Kill))
            .count(),
    );
    ctx.result
        .count("cut_elsewhere_than_promotion_point", wrong_cut);
    let [a, b] = pair.brokers_mut();
    ctx.keep_logs("a", a.process_ref());
    ctx.keep_logs("b", b.process_ref());
    Ok(Outcome::Done)
}
