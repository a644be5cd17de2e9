//! One run of one reliability scenario: a fresh context, the scenario's steps (its own module),
//! every figure into a [`RunResult`] — never a panic out of it (a failed step becomes the run's
//! error).

use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::time::Instant;

use super::scenario::{Ctx, Kind, Outcome, Plan, RunResult, Scenario, command};
use super::{conn_flood, disk_full, failover, kill_loop, pop_kill, slave_kill};

/// Runs one scenario once; never panics (the result says why it failed).
#[must_use]
pub fn run(scenario: &Scenario, repeat: u32, plan: &Plan, out: &Path) -> RunResult {
    let started = Instant::now();
    let log_dir = out.join("logs").join(format!("{}-{repeat}", scenario.name));
    let _ = fs::create_dir_all(&log_dir);
    let seed = plan.seed + u64::from(repeat) - 1;
    let mut ctx = Ctx {
        plan,
        log_dir,
        rng: fastrand::Rng::with_seed(seed),
        result: RunResult {
            scenario: scenario.name.to_owned(),
            repeat,
            command: command(scenario, plan, repeat),
            ..RunResult::default()
        },
    };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| match scenario.kind {
        Kind::Kill9 => kill_loop::run(&mut ctx),
        Kind::SlaveKill => slave_kill::run(&mut ctx),
        Kind::Failover { sync } => failover::run(&mut ctx, sync),
        Kind::DiskFull => disk_full::run(&mut ctx),
        Kind::Flood => conn_flood::run(&mut ctx),
        Kind::PopKill9 => pop_kill::run(&mut ctx),
    }));
    let mut result = ctx.result;
    match outcome {
        Ok(Ok(Outcome::Done)) => result.ok = true,
        Ok(Ok(Outcome::Skipped(why))) => result.skipped = Some(why),
        Ok(Err(e)) => result.error = Some(e),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "panicked".to_owned());
            result.error = Some(format!("a step failed: {msg}"));
        }
    }
    result.wall_secs = started.elapsed().as_secs_f64();
    result
}
