//! `mqbench timer-watch`: how fast a broker takes parked timer messages into its wheel.
//! Every `--interval` it asks each master for GET_TIMER_CHECK_POINT (the wheel's enqueue
//! offset of `rmq_sys_wheel_timer` queue 0) and for that queue's max offset, until the
//! wheel has caught up with at least `--expect` parked messages.
//!
//! Apache RocketMQ refreshes the checkpoint it answers with once per
//! `timerFlushIntervalMs` (1 s); sluice answers with its live offset. A rate from Apache is
//! therefore good to about a second of its duration.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use remoting::{RemotingCommand, RequestCode};
use serde::Serialize;

use super::super::parse_duration;
use crate::admin::select_addr;
use crate::client::{Client, DEFAULT_TIMEOUT};
use crate::error::{Result, ToolsError};
use crate::time::now_millis;

/// RocketMQ's timer topic.
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";

/// The fields of a GET_TIMER_CHECK_POINT body this tool reads (big-endian longs; the
/// data version after them is ignored).
///
/// | offset | field |
/// |---|---|
/// | 0 | last read time (ms) |
/// | 8 | timer log flush position |
/// | 16 | `rmq_sys_wheel_timer` queue offset enqueued so far |
/// | 24 | the master's such offset |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Checkpoint {
    /// How far delivery has read (ms).
    pub last_read_time_ms: i64,
    /// Timer log position flushed.
    pub last_timer_log_flush_pos: i64,
    /// Enqueued offset.
    pub last_timer_queue_offset: i64,
    /// The master's enqueued offset.
    pub master_timer_queue_offset: i64,
}

impl Checkpoint {
    /// Decodes the first 32 bytes of a checkpoint body.
    #[must_use]
    pub fn decode(body: &[u8]) -> Option<Self> {
        let long = |i: usize| -> Option<i64> {
            Some(i64::from_be_bytes(
                body.get(i * 8..i * 8 + 8)?.try_into().ok()?,
            ))
        };
        Some(Checkpoint {
            last_read_time_ms: long(0)?,
            last_timer_log_flush_pos: long(1)?,
            last_timer_queue_offset: long(2)?,
            master_timer_queue_offset: long(3)?,
        })
    }
}

/// GET_TIMER_CHECK_POINT of the broker at `addr`.
///
/// # Errors
/// Transport failure, an error code, or a body too short.
pub async fn checkpoint(client: &Client, addr: &str) -> Result<Checkpoint> {
    let response = client
        .call(
            addr,
            RemotingCommand::request(RequestCode::GetTimerCheckPoint),
        )
        .await?;
    let body = response.body.to_bytes();
    Checkpoint::decode(&body).ok_or_else(|| {
        ToolsError::Usage(format!(
            "{addr} answered GET_TIMER_CHECK_POINT with {} bytes, not a checkpoint",
            body.len()
        ))
    })
}

/// `mqbench timer-watch` options.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Name server address list.
    #[arg(short = 'n', long = "namesrv", env = "NAMESRV_ADDR")]
    pub namesrv: Option<String>,
    /// Watch the masters of this topic's route.
    #[arg(short = 't', long = "topic", default_value = "TimerBench")]
    pub topic: String,
    /// Watch this broker instead (host:port).
    #[arg(long = "broker")]
    pub broker: Option<String>,
    /// Done once the wheels hold at least this many parked messages (all masters).
    #[arg(long = "expect", default_value_t = 0)]
    pub expect: u64,
    /// Give up after this long.
    #[arg(long = "timeout", value_parser = parse_duration, default_value = "600s")]
    pub timeout: Duration,
    /// How often to ask.
    #[arg(long = "interval", value_parser = parse_duration, default_value = "100ms")]
    pub interval: Duration,
    /// Print the summary as JSON.
    #[arg(long = "json")]
    pub json: bool,
}

/// One sample: when, and the summed offsets of every watched broker.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Sample {
    /// Seconds since the watch started.
    pub secs: f64,
    /// Enqueued into the wheels.
    pub enqueued: i64,
    /// Parked (max offsets of `rmq_sys_wheel_timer` queue 0).
    pub parked: i64,
}

/// The `timer-watch` summary.
#[derive(Debug, Clone, Serialize)]
pub struct WatchSummary {
    /// `timer-watch`.
    pub role: String,
    /// Brokers watched.
    pub brokers: Vec<String>,
    /// When the watch started (epoch ms).
    pub started_ms: i64,
    /// When a broker first answered (epoch ms): how soon a restarted one serves.
    pub first_answer_ms: Option<i64>,
    /// Whether the wheels caught up with `expect` before the timeout.
    pub caught_up: bool,
    /// When they did (epoch ms).
    pub caught_up_ms: Option<i64>,
    /// Seconds from the start of the watch to that.
    pub caught_up_secs: Option<f64>,
    /// Enqueued at the first sample.
    pub first_enqueued: i64,
    /// Enqueued at the last.
    pub last_enqueued: i64,
    /// Parked at the last.
    pub last_parked: i64,
    /// When the enqueued offset first moved (epoch ms; the sample before the move).
    pub moving_from_ms: Option<i64>,
    /// Messages enqueued per second from the first move to the catch-up (or the last
    /// sample).
    pub rate_per_s: f64,
    /// Failed requests.
    pub errors: u64,
    /// The first failure.
    pub first_error: Option<String>,
    /// A sample a second.
    pub timeline: Vec<Sample>,
}

impl WatchSummary {
    /// The human-readable summary.
    #[must_use]
    pub fn text(&self) -> String {
        format!(
            "=== timer-watch summary ===\nbrokers:   {}\ncaught up: {}{}\nenqueued:  {} -> {} of {} parked\nrate:      {:.0} msg/s\nerrors:    {}{}",
            self.brokers.join(","),
            self.caught_up,
            self.caught_up_secs
                .map_or(String::new(), |s| format!(" after {s:.3} s")),
            self.first_enqueued,
            self.last_enqueued,
            self.last_parked,
            self.rate_per_s,
            self.errors,
            self.first_error
                .as_deref()
                .map_or(String::new(), |e| format!(" (first: {e})")),
        )
    }
}

async fn brokers(client: &Client, args: &WatchArgs) -> Result<Vec<String>> {
    if let Some(b) = &args.broker {
        return Ok(vec![b.clone()]);
    }
    let route = client.fetch_route(args.topic.trim()).await?;
    let mut addrs: Vec<String> = route
        .broker_datas
        .iter()
        .filter_map(|b| b.master_addr().or_else(|| select_addr(b)))
        .map(str::to_owned)
        .collect();
    addrs.sort();
    addrs.dedup();
    if addrs.is_empty() {
        return Err(ToolsError::NoRoute {
            topic: args.topic.clone(),
            remark: "no broker to watch".to_owned(),
        });
    }
    Ok(addrs)
}

/// Sums the enqueued and parked offsets of `addrs`.
async fn sample(client: &Client, addrs: &[String]) -> Result<(i64, i64)> {
    let (mut enqueued, mut parked) = (0, 0);
    for addr in addrs {
        enqueued += checkpoint(client, addr).await?.last_timer_queue_offset;
        parked += client.max_offset(addr, TIMER_TOPIC, 0).await?;
    }
    Ok((enqueued, parked))
}

/// Runs the watch.
///
/// # Errors
/// No name server, or no broker to watch.
#[allow(clippy::cast_precision_loss, reason = "rates for display")]
pub async fn run(
    args: &WatchArgs,
    err: Arc<parking_lot::Mutex<Box<dyn Write + Send>>>,
) -> Result<WatchSummary> {
    let namesrv = args
        .namesrv
        .as_deref()
        .map(remoting::net::split_addr_list)
        .unwrap_or_default();
    if namesrv.is_empty() && args.broker.is_none() {
        return Err(ToolsError::NoNamesrv);
    }
    let client = Client::new(namesrv, DEFAULT_TIMEOUT);
    let addrs = brokers(&client, args).await?;
    let started = Instant::now();
    let started_ms = now_millis();
    let mut s = WatchSummary {
        role: "timer-watch".to_owned(),
        brokers: addrs.clone(),
        started_ms,
        first_answer_ms: None,
        caught_up: false,
        caught_up_ms: None,
        caught_up_secs: None,
        first_enqueued: -1,
        last_enqueued: 0,
        last_parked: 0,
        moving_from_ms: None,
        rate_per_s: 0.0,
        errors: 0,
        first_error: None,
        timeline: Vec::new(),
    };
    let mut still_ms = started_ms;
    let mut next_line = Duration::ZERO;
    let mut tick = tokio::time::interval(args.interval.max(Duration::from_millis(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while started.elapsed() < args.timeout {
        tick.tick().await;
        let sampled = sample(&client, &addrs).await;
        // Stamped at the answer: a broker still recovering holds the request until it
        // serves, and what it answers is as of then.
        let at_ms = now_millis();
        let (enqueued, parked) = match sampled {
            Ok(v) => v,
            Err(e) => {
                s.errors += 1;
                s.first_error.get_or_insert_with(|| e.to_string());
                continue;
            }
        };
        if s.first_enqueued < 0 {
            s.first_enqueued = enqueued;
            s.first_answer_ms = Some(at_ms);
        }
        if enqueued == s.first_enqueued {
            still_ms = at_ms;
        } else {
            s.moving_from_ms.get_or_insert(still_ms);
        }
        (s.last_enqueued, s.last_parked) = (enqueued, parked);
        let secs = started.elapsed().as_secs_f64();
        if started.elapsed() >= next_line {
            next_line = Duration::from_secs(started.elapsed().as_secs() + 1);
            s.timeline.push(Sample {
                secs,
                enqueued,
                parked,
            });
            let _ = writeln!(
                err.lock(),
                "[{secs:>6.1}s] timer wheel: enqueued {enqueued} of {parked} parked"
            );
        }
        if parked >= i64::try_from(args.expect).unwrap_or(i64::MAX) && enqueued >= parked {
            s.caught_up = true;
            s.caught_up_ms = Some(at_ms);
            s.caught_up_secs = Some(secs);
            s.timeline.push(Sample {
                secs,
                enqueued,
                parked,
            });
            break;
        }
    }
    let end_ms = s.caught_up_ms.unwrap_or_else(now_millis);
    if let Some(from) = s.moving_from_ms {
        let secs = (end_ms - from) as f64 / 1000.0;
        if secs > 0.0 {
            s.rate_per_s = (s.last_enqueued - s.first_enqueued) as f64 / secs;
        }
    }
    client.shutdown();
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_decode_from_their_first_four_longs() {
        let mut body = Vec::new();
        for v in [1_764_600_000_000i64, 52_000, 1_000_000, 999_999, 1, 2, 3] {
            body.extend(v.to_be_bytes());
        }
        let cp = Checkpoint::decode(&body).unwrap();
        assert_eq!(cp.last_read_time_ms, 1_764_600_000_000);
        assert_eq!(cp.last_timer_log_flush_pos, 52_000);
        assert_eq!(cp.last_timer_queue_offset, 1_000_000);
        assert_eq!(cp.master_timer_queue_offset, 999_999);
        assert_eq!(Checkpoint::decode(&body[..32]), Some(cp));
        assert_eq!(Checkpoint::decode(&body[..31]), None);
    }
}
