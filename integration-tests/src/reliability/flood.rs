//! A connection flood: open `n` TCP connections to one address as fast as the other side
//! takes them (at most [`IN_FLIGHT`] handshakes at once, each given [`CONNECT_TIMEOUT`]), hold
//! them, close them; how long it took and what failed. Self-contained on purpose (tokio and
//! std only), so it can serve any test that needs a storm of clients.
//!
//! ```no_run
//! use integration_tests::reliability::flood::flood;
//!
//! let held = flood("127.0.0.1:10911".parse().unwrap(), 10_000);
//! println!("{} connected in {:.0} ms", held.report.connected, held.report.elapsed_ms);
//! let closed_in = held.close();
//! ```

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Handshakes in flight at once.
pub const IN_FLIGHT: usize = 1_000;
/// How long one connect may take (a SYN dropped by a full accept queue is retried by the
/// kernel after 1, 3, 7, 15 s...).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// What opening the connections took.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FloodReport {
    /// Where to.
    pub addr: String,
    /// Connections asked for.
    pub requested: usize,
    /// Connections open.
    pub connected: usize,
    /// Connects that failed or timed out.
    pub failed: usize,
    /// Failures by kind (`timeout`, `ConnectionRefused`, `os error 24`...).
    pub errors: BTreeMap<String, usize>,
    /// From the first connect to the last one settled, ms.
    pub elapsed_ms: f64,
    /// One connect's time (SYN to established), median, ms.
    pub connect_p50_ms: f64,
    /// ... 99th percentile.
    pub connect_p99_ms: f64,
    /// ... slowest.
    pub connect_max_ms: f64,
}

/// The open connections of a flood and its report; closed when dropped or [`close`]d.
///
/// [`close`]: Flood::close
#[derive(Debug)]
pub struct Flood {
    /// What opening them took.
    pub report: FloodReport,
    conns: Vec<TcpStream>,
}

impl Flood {
    /// How many of the connections the other side still holds open: a peek finds nothing to
    /// read yet (not end of stream, not reset).
    #[must_use]
    pub fn still_open(&self) -> usize {
        let mut buf = [0u8; 1];
        self.conns
            .iter()
            .filter(|c| {
                c.set_nonblocking(true).is_ok()
                    && matches!(c.peek(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            })
            .count()
    }

    /// Closes every connection; returns how long that took.
    #[must_use]
    pub fn close(self) -> Duration {
        let started = Instant::now();
        drop(self.conns);
        started.elapsed()
    }
}

fn percentile(sorted_ms: &[f64], p: f64) -> f64 {
    if sorted_ms.is_empty() {
        return 0.0;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "an index into the sorted sample"
    )]
    let at = ((sorted_ms.len() as f64 - 1.0) * p).round() as usize;
    sorted_ms[at.min(sorted_ms.len() - 1)]
}

/// Opens `n` connections to `addr` and holds them.
#[must_use]
pub fn flood(addr: SocketAddr, n: usize) -> Flood {
    let mut report = FloodReport {
        addr: addr.to_string(),
        requested: n,
        ..FloodReport::default()
    };
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        report.failed = n;
        report.errors.insert("no runtime".to_owned(), n);
        return Flood {
            report,
            conns: Vec::new(),
        };
    };
    let started = Instant::now();
    let (conns, mut times, errors) = rt.block_on(async move {
        let gate = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..n {
            let gate = Arc::clone(&gate);
            set.spawn(async move {
                let _permit = gate.acquire_owned().await;
                let t = Instant::now();
                let r = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr))
                    .await;
                (t.elapsed(), r)
            });
        }
        let mut conns = Vec::with_capacity(n);
        let mut times = Vec::with_capacity(n);
        let mut errors: BTreeMap<String, usize> = BTreeMap::new();
        while let Some(joined) = set.join_next().await {
            let kind = match joined {
                Ok((took, Ok(Ok(stream)))) => match stream.into_std() {
                    Ok(s) => {
                        conns.push(s);
                        times.push(took.as_secs_f64() * 1000.0);
                        continue;
                    }
                    Err(e) => format!("{:?}", e.kind()),
                },
                Ok((_, Ok(Err(e)))) => e
                    .raw_os_error()
                    .map_or_else(|| format!("{:?}", e.kind()), |c| format!("os error {c}")),
                Ok((_, Err(_))) => "timeout".to_owned(),
                Err(_) => "task failed".to_owned(),
            };
            *errors.entry(kind).or_default() += 1;
        }
        (conns, times, errors)
    });
    report.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    times.sort_by(f64::total_cmp);
    report.connected = conns.len();
    report.failed = errors.values().sum();
    report.errors = errors;
    report.connect_p50_ms = percentile(&times, 0.5);
    report.connect_p99_ms = percentile(&times, 0.99);
    report.connect_max_ms = times.last().copied().unwrap_or(0.0);
    Flood { report, conns }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floods_a_listener() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // The accept queue holds them; nobody needs to accept for the handshakes to finish.
        let held = flood(addr, 50);
        assert_eq!(held.report.connected, 50, "{:?}", held.report);
        assert_eq!(held.report.failed, 0);
        assert!(held.report.connect_max_ms >= held.report.connect_p50_ms);
        assert_eq!(held.still_open(), 50);
        // Accept and close ten of them: the others stay open.
        for _ in 0..10 {
            drop(listener.accept().unwrap());
        }
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(held.still_open(), 40);
        let _ = held.close();
        drop(listener);
        let refused = flood(addr, 3);
        assert_eq!(refused.report.connected, 0);
        assert_eq!(refused.report.failed, 3, "{:?}", refused.report);
    }

    #[test]
    fn percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 51.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
