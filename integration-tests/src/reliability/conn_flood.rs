//! Connection floods: while the official Java producer sends at a steady pace on its own
//! (already open) connection, [`Flood`](crate::flood::Flood) opens `--quick` 2 000 / long
//! 10 000 TCP connections to the broker's main port, holds them, closes them; then the same on
//! the name server's port. Figures: the time until the process has accepted every connection
//! (its open files grew by that many: a client's connect completes before that), the connect
//! times, the process's memory and open files before / with / after, whether the producer's
//! sends kept being acknowledged (their p99 before and during), and that a fresh request is
//! answered after the flood (the process recovered).

use std::fs;
use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use super::scenario::{Ctx, Outcome};
use crate::client::try_request;
use crate::drill::{self, Ack, Books, DrillProducer, ProducerOptions, now_ms};
use crate::flood::{Flood, fd_count};
use crate::harness::{BrokerProcess, NamesrvProcess, TestDir, ha_status, unique_name};
use crate::java::{JavaTools, V4};
use crate::procs::{RssSampler, rss_anon, vm_rss};

/// Body size of the producer's messages.
pub const BODY_SIZE: usize = 128;
/// The producer's pause between sends: a steady, light stream.
pub const INTERVAL_MS: u64 = 2;
/// Quiet time before and after each flood.
const WINDOW: Duration = Duration::from_secs(3);
/// How long a process may take to accept every flood connection.
pub const ACCEPT_TIMEOUT: Duration = Duration::from_secs(60);
/// ... and how long its count of accepted connections may stand still.
pub const ACCEPT_PLATEAU: Duration = Duration::from_secs(10);

/// The producer's settings here.
#[must_use]
pub fn producer_options() -> ProducerOptions {
    ProducerOptions {
        body_size: BODY_SIZE,
        interval_ms: INTERVAL_MS,
        send_timeout_ms: 3_000,
        ..ProducerOptions::default()
    }
}

const MIB: f64 = 1024.0 * 1024.0;

#[allow(clippy::cast_precision_loss, reason = "bytes to MiB")]
fn mib(bytes: Option<u64>) -> f64 {
    bytes.unwrap_or(0) as f64 / MIB
}

fn open_files(pid: u32) -> usize {
    fd_count(pid).unwrap_or(0)
}

/// Handshakes in flight at once.
pub const IN_FLIGHT: usize = 1_000;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `Max open files` soft limit of `pid` (`/proc/PID/limits`).
fn max_open_files(pid: u32) -> Option<u64> {
    fs::read_to_string(format!("/proc/{pid}/limits"))
        .ok()?
        .lines()
        .find(|l| l.starts_with("Max open files"))?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()
}

/// Send latency p99 (ms) and the count of answers and failures of sends started in
/// `[from, to)`.
fn window(acks: &[Ack], fails: &[drill::Fail], from: u64, to: u64) -> (f64, usize, usize) {
    let mut lat: Vec<u64> = acks
        .iter()
        .filter(|a| a.sent_at >= from && a.sent_at < to)
        .map(Ack::latency_ms)
        .collect();
    lat.sort_unstable();
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "an index into the sorted sample"
    )]
    let p99 = if lat.is_empty() {
        0.0
    } else {
        let at = ((lat.len() as f64 - 1.0) * 0.99).round() as usize;
        lat[at.min(lat.len() - 1)] as f64
    };
    let failed = fails
        .iter()
        .filter(|f| f.sent_at >= from && f.sent_at < to)
        .count();
    (p99, lat.len(), failed)
}

/// Waits until `pid` has `target` open files; gives up after [`ACCEPT_TIMEOUT`], or once the
/// count has not grown for [`ACCEPT_PLATEAU`] (a connection the server dropped half-open never
/// comes). Returns whether it got there.
fn wait_accepted(pid: u32, target: usize) -> bool {
    let started = Instant::now();
    let (mut best, mut grew_at) = (0, Instant::now());
    while started.elapsed() < ACCEPT_TIMEOUT {
        let now = open_files(pid);
        if now >= target {
            return true;
        }
        if now > best {
            (best, grew_at) = (now, Instant::now());
        } else if grew_at.elapsed() > ACCEPT_PLATEAU {
            return false;
        }
        thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A fresh connection's request, answered: how long it took, ms.
fn fresh_request(label: &str, addr: &str) -> Option<f64> {
    let t = Instant::now();
    let ok = if label == "broker" {
        ha_status(addr).is_ok()
    } else {
        try_request(
            addr,
            remoting::RemotingCommand::request(remoting::RequestCode::GetBrokerClusterInfo),
        )
        .is_ok_and(|r| r.code() == 0)
    };
    ok.then(|| t.elapsed().as_secs_f64() * 1000.0)
}

/// Runs the scenario (see the module docs).
///
/// # Errors
/// A step fails.
#[allow(clippy::too_many_lines, reason = "the scenario, step by step")]
pub fn run(ctx: &mut Ctx<'_>) -> Result<Outcome, String> {
    let n = ctx.plan.flood_connections;
    let hold = Duration::from_secs(ctx.plan.flood_hold_secs);
    let java = JavaTools::try_get(V4)?;
    let work = TestDir::new("rel-flood");
    let mut ns = NamesrvProcess::start();
    let broker = BrokerProcess::start_master("a", &ns.addr(), "ASYNC_MASTER", &[]);
    let topic = unique_name("Flood");
    broker.create_topic(&topic, 4);
    let options = producer_options();
    ctx.result.note_producer(V4, &options);
    ctx.result.count("connections", n);
    let producer = DrillProducer::start(java, &ns.addr(), &topic, work.path(), options);
    if !producer.wait_acks(200, Duration::from_secs(60)) {
        return Err(format!(
            "no 200 answers before the flood: {:?}",
            producer.last_lines(5)
        ));
    }
    let broker_pid = broker
        .process_ref()
        .pid()
        .ok_or("the broker is not running")?;
    let ns_pid = ns.process().pid().ok_or("the name server is not running")?;
    if let Some(limit) = max_open_files(broker_pid) {
        ctx.result.metric("broker_max_open_files", limit as f64);
    }
    let baseline_from = now_ms();
    thread::sleep(WINDOW);
    let mut windows = vec![("baseline", baseline_from, now_ms())];
    let targets = [
        ("broker", broker.addr(), broker_pid),
        ("namesrv", ns.addr(), ns_pid),
    ];
    for (label, addr, pid) in &targets {
        let sock: SocketAddr = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
        ctx.result
            .metric(&format!("{label}_rss_before_mib"), mib(rss_anon(*pid)));
        ctx.result
            .metric(&format!("{label}_vmrss_before_mib"), mib(vm_rss(*pid)));
        ctx.result
            .count(&format!("{label}_open_files_before"), open_files(*pid));
        let files_before = open_files(*pid);
        let from = now_ms();
        let clock = Instant::now();
        let sampler = RssSampler::start(vec![*pid]);
        let held = Flood::open(sock, n, IN_FLIGHT);
        let connected = held.len();
        ctx.result.count(&format!("{label}_connected"), connected);
        ctx.result
            .count(&format!("{label}_connect_failed"), held.failures().0);
        ctx.result.metric(
            &format!("{label}_handshakes_done_ms"),
            ms(held.connected_in()),
        );
        // A client's connect completes once the kernel has the handshake, and with a full
        // accept queue the client believes it is connected while the server still holds the
        // connection half-open: the process has accepted them all once its open files grew by
        // that many.
        let target = files_before + connected;
        if wait_accepted(*pid, target) {
            ctx.result.metric(
                &format!("{label}_time_to_accept_all_ms"),
                clock.elapsed().as_secs_f64() * 1000.0,
            );
        }
        ctx.result.count(
            &format!("{label}_accepted"),
            open_files(*pid).saturating_sub(files_before).min(n),
        );
        ctx.result.metric(
            &format!("{label}_connect_p50_ms"),
            ms(held.connect_time(0.5)),
        );
        ctx.result.metric(
            &format!("{label}_connect_p99_ms"),
            ms(held.connect_time(0.99)),
        );
        ctx.result.metric(
            &format!("{label}_connect_max_ms"),
            ms(held.connect_time(1.0)),
        );
        if !held.errors().is_empty() {
            ctx.result.note(
                &format!("{label}_connect_errors"),
                held.errors()
                    .iter()
                    .map(|(k, n)| format!("{k} × {n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
        thread::sleep(hold);
        ctx.result
            .count(&format!("{label}_open_files_with"), open_files(*pid));
        ctx.result
            .count(&format!("{label}_still_open_after_hold"), held.still_open());
        ctx.result
            .metric(&format!("{label}_rss_with_mib"), mib(rss_anon(*pid)));
        let closed_in = held.close();
        ctx.result.metric(
            &format!("{label}_close_ms"),
            closed_in.as_secs_f64() * 1000.0,
        );
        let to = now_ms();
        let peak = sampler.finish().first().copied();
        ctx.result
            .metric(&format!("{label}_rss_peak_mib"), mib(peak));
        windows.push((*label, from, to));
        thread::sleep(WINDOW);
        ctx.result
            .metric(&format!("{label}_rss_after_mib"), mib(rss_anon(*pid)));
        ctx.result
            .count(&format!("{label}_open_files_after"), open_files(*pid));
        match fresh_request(label, addr) {
            Some(ms) => {
                ctx.result.metric(&format!("{label}_recovered"), 1.0);
                ctx.result.metric(&format!("{label}_fresh_request_ms"), ms);
            }
            None => ctx.result.metric(&format!("{label}_recovered"), 0.0),
        }
    }
    let produced = producer.stop(Duration::from_secs(120));
    let _ = fs::write(ctx.log_dir.join("producer.out"), &produced.output.stdout);
    for (label, from, to) in &windows {
        let (p99, acked, failed) = window(&produced.acks, &produced.fails, *from, *to);
        ctx.result.metric(&format!("producer_p99_ms_{label}"), p99);
        ctx.result
            .count(&format!("producer_answers_{label}"), acked);
        ctx.result
            .count(&format!("producer_failures_{label}"), failed);
    }
    let drained = drill::drain(java, &ns.addr(), &topic, Duration::from_secs(300));
    let books = Books::new(&produced.acks, &produced.fails, &drained, BODY_SIZE);
    ctx.result.books(&books, &produced);
    let mut broker = broker;
    let broker_alive = broker.process().is_running();
    let ns_alive = ns.process().is_running();
    ctx.result
        .metric("broker_running_at_end", f64::from(u8::from(broker_alive)));
    ctx.result
        .metric("namesrv_running_at_end", f64::from(u8::from(ns_alive)));
    ctx.keep_logs("broker", broker.process_ref());
    ctx.keep_logs("namesrv", ns.process());
    Ok(Outcome::Done)
}
