//! What the timer message tests (tests/timer_messages.rs) read from a Java consumer: the
//! deliveries of 5.x timer messages, each with the due time its producer put on it
//! (`sluiceDue`, see `java/src/main/java/sluice/it/Timer.java`) and the consumer's clock when it
//! got it, and the figures a test asserts and reports: how many arrived early, how late the others were,
//! which ones were delivered twice or not at all.
//!
//! Producer and consumer run on this machine, so both clocks are the same clock.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::java::{Recv, Sent};
pub use crate::timers::Tally;

/// One delivery of a timer message (a `RECV` with its `TIMER` line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub msg_id: String,
    pub queue_id: i32,
    pub body: String,
    /// When the consumer got it, epoch ms.
    pub recv: i64,
    /// When it was due, epoch ms: its producer's `sluiceDue`, or for a relative timer
    /// (TIMER_DELAY_SEC / TIMER_DELAY_MS) its born timestamp plus the delay when that is later
    /// (the client stamps `born` just before the bytes go out, after `sluiceDue` was computed;
    /// a broker counts the delay from when it gets the message, later still).
    pub due: i64,
    /// When its producer sent it, epoch ms.
    pub sent: i64,
    /// The `TIMER` line's other fields (`out`, `enqueue`, `dequeue`, `names`, ...).
    pub fields: BTreeMap<String, String>,
}

impl Delivery {
    /// `recv - due`: negative when it came early.
    #[must_use]
    pub fn lateness_ms(&self) -> i64 {
        self.recv - self.due
    }

    /// A field of the `TIMER` line as a number (`out`, `enqueue`, `dequeue`, `roll`); `None`
    /// when the message did not carry it.
    #[must_use]
    pub fn field_i64(&self, key: &str) -> Option<i64> {
        self.fields.get(key).and_then(|v| v.parse().ok())
    }

    /// The names of every property the delivered message carried.
    #[must_use]
    pub fn property_names(&self) -> BTreeSet<&str> {
        self.fields
            .get("names")
            .map(|n| n.split(',').filter(|n| !n.is_empty()).collect())
            .unwrap_or_default()
    }
}

/// The timer deliveries among `recvs` (those whose `TIMER` line has a due time), in order.
#[must_use]
pub fn deliveries(recvs: &[Recv]) -> Vec<Delivery> {
    recvs
        .iter()
        .filter_map(|r| {
            Some(Delivery {
                msg_id: r.msg_id.clone(),
                queue_id: r.queue_id,
                body: r.body.clone(),
                recv: r.timer_i64("recv")?,
                due: due(r)?,
                sent: r.timer_i64("sent")?,
                fields: r.timer.clone(),
            })
        })
        .collect()
}

/// See [`Delivery::due`].
fn due(r: &Recv) -> Option<i64> {
    let stated = r.timer_i64("due")?;
    let delay = r
        .timer_i64("delaySec")
        .map(|s| s.saturating_mul(1000))
        .or_else(|| r.timer_i64("delayMs"));
    Some(match (delay, r.timer_i64("born")) {
        (Some(delay), Some(born)) => stated.max(born.saturating_add(delay)),
        _ => stated,
    })
}

/// Matches `got` against `sent` ([`crate::timers::Tally`]). A duplicate that came early
/// counts as early too.
#[must_use]
pub fn tally(sent: &[Sent], got: &[Delivery]) -> Tally {
    Tally::of(
        sent.iter().map(|s| s.msg_id.as_str()),
        got.iter().map(|d| (d.msg_id.as_str(), d.due, d.recv)),
    )
}

/// The lateness (`recv - due`, ms) of some deliveries: count, min, p50, p99, max.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lateness {
    pub count: usize,
    pub min: i64,
    pub p50: i64,
    pub p99: i64,
    pub max: i64,
}

impl Lateness {
    /// The figures of `got` (all zero when it is empty).
    #[must_use]
    pub fn of<'a>(got: impl IntoIterator<Item = &'a Delivery>) -> Lateness {
        let mut ms: Vec<i64> = got.into_iter().map(Delivery::lateness_ms).collect();
        if ms.is_empty() {
            return Lateness::default();
        }
        ms.sort_unstable();
        let at = |q: f64| {
            let last = ms.len() - 1;
            // Nearest rank: the smallest value with at least q of the sample at or below it.
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss,
                reason = "a rank within a small sample"
            )]
            let rank = ((q * ms.len() as f64).ceil() as usize).saturating_sub(1);
            ms[rank.min(last)]
        };
        Lateness {
            count: ms.len(),
            min: ms[0],
            p50: at(0.5),
            p99: at(0.99),
            max: ms[ms.len() - 1],
        }
    }
}

impl fmt::Display for Lateness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} deliveries, lateness ms min {} p50 {} p99 {} max {}",
            self.count, self.min, self.p50, self.p99, self.max
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recv(id: &str, timer: &str) -> Vec<String> {
        vec![
            format!("RECV {id} 1 0 body-{id}"),
            format!("TIMER {id} {timer}"),
        ]
    }

    #[test]
    fn tallies_early_late_missing_and_duplicate_deliveries() {
        let mut lines = Vec::new();
        lines.extend(recv(
            "A",
            "recv=1010 due=1000 sent=0 out=1000 names=TIMER_OUT_MS,UNIQ_KEY",
        ));
        lines.extend(recv("B", "recv=1990 due=2000 sent=0"));
        // Born 100 ms after the producer computed its due time, delay 1 s: due at 1100.
        lines.extend(recv("D", "recv=1105 due=1000 sent=0 born=100 delaySec=1"));
        lines.extend(recv("A", "recv=1500 due=1000 sent=0"));
        lines.extend(recv("X", "recv=5 due=5 sent=0"));
        lines.push("RECV P 0 0 plain".to_owned());
        let recvs = Recv::all(lines.iter().map(String::as_str));
        let got = deliveries(&recvs);
        assert_eq!(got.len(), 5, "the plain message is no timer delivery");
        assert_eq!((got[2].due, got[2].lateness_ms()), (1100, 5));
        assert_eq!(got[0].field_i64("out"), Some(1000));
        assert_eq!(
            got[0].property_names(),
            BTreeSet::from(["TIMER_OUT_MS", "UNIQ_KEY"])
        );
        let sent: Vec<Sent> = ["A", "B", "C", "D"]
            .iter()
            .enumerate()
            .map(|(i, id)| {
                Sent::parse(&format!(
                    "SENT {id} - 0 {i} SEND_OK i={i} tag=- keys=- okey=-"
                ))
                .unwrap()
            })
            .collect();
        let t = tally(&sent, &got);
        assert_eq!(t.missing, ["C"]);
        assert_eq!(t.duplicates, 1);
        assert_eq!(t.foreign, ["X"]);
        assert_eq!(t.early, [("B".to_owned(), 10)]);
        assert!(!t.complete_and_never_early());
        let l = Lateness::of([&got[0], &got[1], &got[3]]);
        assert_eq!(
            (l.count, l.min, l.p50, l.p99, l.max),
            (3, -10, 10, 500, 500)
        );
        assert_eq!(Lateness::of(&[]), Lateness::default());
    }
}
