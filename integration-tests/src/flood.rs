//! Connection storms: open many loopback connections to one server at once, time how
//! long the server takes to accept them all, hold them, close them, and read the
//! server's memory before, while and after.
//!
//! "Accepted" is counted on the server's side (its descriptors for connections on the
//! port, from `/proc/PID/fd` and `/proc/net/tcp`): a
//! client's `connect` returns once the handshake is done, which the kernel also
//! completes for connections still waiting in (or dropped from) a full accept queue.
//! A server with too short a listen backlog shows as SYNs dropped and retried a
//! second (then 3, 7 s) later, so the accept time jumps from a fraction of a second
//! to many seconds.
//!
//! Under a machine too busy to run the server's accept loop, the kernel's SYN queue fills and
//! it answers with SYN cookies; a cookie connection whose last ACK meets a full accept queue is
//! dropped on the server's side while the client counts it open, so the server never holds
//! them all. The report carries the kernel's counters of that ([`KernelTcp`]) so such a run
//! says so.
//!
//! [`storm`] is the whole routine (the `connection_storm` test and any other driver
//! use it); [`Flood`] and the `/proc` readers are its parts.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use remoting::{FrameDecoder, RemotingCommand};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::procs::{rss_anon, vm_rss};

/// Connects pending at once while flooding (a storm: all of them).
pub const DEFAULT_IN_FLIGHT: usize = 10_000;
/// Longest wait for one connect (dropped SYNs are retried by the kernel meanwhile).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// Descriptors the server may have closed meanwhile, besides the flood's.
const FD_SLACK: usize = 64;
/// How often the server's connections are counted while waiting.
const POLL: Duration = Duration::from_millis(2);

/// A non-blocking connect to `addr`, under way.
fn start_connect(addr: SocketAddr) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    match socket.connect(&SockAddr::from(addr)) {
        Ok(()) => Ok(socket),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(socket),
        Err(e) => Err(e),
    }
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit (children inherit
/// it) and returns the soft limit now in force.
#[must_use]
pub fn raise_nofile_limit() -> u64 {
    remoting::net::raise_fd_limit().unwrap_or(u64::MAX)
}

/// Connections to local `port` that `pid` holds open: its socket descriptors matched
/// with the TCP sockets of `/proc/net/tcp{,6}` bound to `port` (the listener included
/// only if `listening`).
///
/// # Errors
/// `/proc/PID/fd` or `/proc/net/tcp` cannot be read (the process is gone).
pub fn connections_on(pid: u32, port: u16, listening: bool) -> io::Result<usize> {
    let mut inodes = std::collections::HashSet::new();
    for entry in fs::read_dir(format!("/proc/{pid}/fd"))? {
        let Ok(entry) = entry else { continue };
        let Ok(target) = fs::read_link(entry.path()) else {
            continue;
        };
        let target = target.to_string_lossy();
        if let Some(inode) = target
            .strip_prefix("socket:[")
            .and_then(|t| t.strip_suffix(']'))
            .and_then(|t| t.parse::<u64>().ok())
        {
            inodes.insert(inode);
        }
    }
    let mut n = 0;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            // 0A is LISTEN.
            if (*state == "0A") != listening {
                continue;
            }
            let local_port = local
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) && inode.parse::<u64>().is_ok_and(|i| inodes.contains(&i)) {
                n += 1;
            }
        }
    }
    Ok(n)
}

/// Descriptors `pid` has open (a directory listing, cheap enough to poll).
///
/// # Errors
/// `/proc/PID/fd` cannot be read (the process is gone).
pub fn fd_count(pid: u32) -> io::Result<usize> {
    Ok(fs::read_dir(format!("/proc/{pid}/fd"))?.count())
}

/// Waits until `pid` holds at least `at_least` connections on `port`, polling its
/// descriptor count (`base_fds` before the flood) and confirming with
/// [`connections_on`]; how long it took, or the count reached after `timeout`.
///
/// # Errors
/// The count reached, when the timeout passes first.
pub fn wait_accepted(
    pid: u32,
    port: u16,
    base_fds: usize,
    at_least: usize,
    timeout: Duration,
) -> Result<Duration, usize> {
    let started = Instant::now();
    loop {
        // Other descriptors come and go (a registration's connection): a little slack.
        if fd_count(pid).is_ok_and(|n| n + FD_SLACK >= base_fds + at_least) {
            let elapsed = started.elapsed();
            if connections_on(pid, port, false).is_ok_and(|n| n >= at_least) {
                return Ok(elapsed);
            }
        }
        if started.elapsed() > timeout {
            return Err(connections_on(pid, port, false).unwrap_or(0));
        }
        thread::sleep(POLL);
    }
}

/// Waits until `pid` holds at most `at_most` connections on `port`; false after
/// `timeout`.
#[must_use]
pub fn wait_released(pid: u32, port: u16, at_most: usize, timeout: Duration) -> bool {
    let started = Instant::now();
    loop {
        if connections_on(pid, port, false).is_ok_and(|n| n <= at_most) {
            return true;
        }
        if started.elapsed() > timeout {
            return false;
        }
        thread::sleep(POLL);
    }
}

/// Many open connections to one address.
#[derive(Debug)]
pub struct Flood {
    streams: Vec<TcpStream>,
    started: Instant,
    connected_in: Duration,
    failed: usize,
    first_error: Option<String>,
    /// Failures by kind (`os error 111`, `connect timed out`...).
    errors: BTreeMap<String, usize>,
    /// Each connection's connect time, SYN to established, sorted once open.
    connect_times: Vec<Duration>,
}

impl Flood {
    /// Opens `count` connections to `addr` as a storm does: non-blocking connects, up
    /// to `in_flight` pending at once (a dropped SYN delays only its own connection, by
    /// the kernel's retry), and returns once every connect has finished (failed ones are
    /// counted, not retried).
    #[must_use]
    pub fn open(addr: SocketAddr, count: usize, in_flight: usize) -> Flood {
        let started = Instant::now();
        let mut flood = Flood {
            streams: Vec::with_capacity(count),
            started,
            connected_in: Duration::ZERO,
            failed: 0,
            first_error: None,
            errors: BTreeMap::new(),
            connect_times: Vec::with_capacity(count),
        };
        let mut pending: Vec<(Socket, Instant)> = Vec::new();
        let mut issued = 0;
        while issued < count || !pending.is_empty() {
            while issued < count && pending.len() < in_flight.max(1) {
                issued += 1;
                match start_connect(addr) {
                    Ok(socket) => pending.push((socket, Instant::now())),
                    Err(e) => flood.fail(&e),
                }
            }
            // A connect is done when the socket has a peer (or an error).
            let mut still = Vec::with_capacity(pending.len());
            for (socket, since) in pending {
                match socket.take_error() {
                    Ok(Some(e)) | Err(e) => flood.fail(&e),
                    Ok(None) if socket.peer_addr().is_ok() => match socket.set_nonblocking(false) {
                        Ok(()) => {
                            flood.connect_times.push(since.elapsed());
                            flood.streams.push(socket.into());
                        }
                        Err(e) => flood.fail(&e),
                    },
                    Ok(None) if started.elapsed() > CONNECT_TIMEOUT => {
                        flood.fail(&io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("connect timed out after {CONNECT_TIMEOUT:?}"),
                        ));
                    }
                    Ok(None) => still.push((socket, since)),
                }
            }
            pending = still;
            if !pending.is_empty() {
                thread::sleep(Duration::from_millis(1));
            }
        }
        flood.connected_in = started.elapsed();
        flood.connect_times.sort_unstable();
        flood
    }

    fn fail(&mut self, error: &io::Error) {
        self.failed += 1;
        self.first_error.get_or_insert_with(|| error.to_string());
        let kind = error.raw_os_error().map_or_else(
            || format!("{:?}", error.kind()),
            |code| format!("os error {code}"),
        );
        *self.errors.entry(kind).or_default() += 1;
    }

    /// Failures by kind.
    #[must_use]
    pub fn errors(&self) -> &BTreeMap<String, usize> {
        &self.errors
    }

    /// The connect time (SYN to established, client side) at quantile `q` (0.5, 0.99,
    /// 1.0 = slowest); zero when none connected.
    #[must_use]
    pub fn connect_time(&self, q: f64) -> Duration {
        let Some(last) = self.connect_times.len().checked_sub(1) else {
            return Duration::ZERO;
        };
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "an index into the sorted sample"
        )]
        let at = ((last as f64) * q.clamp(0.0, 1.0)).round() as usize;
        self.connect_times[at.min(last)]
    }

    /// How many connections the server still holds open: a peek finds nothing to read
    /// (not end of stream, not reset).
    #[must_use]
    pub fn still_open(&self) -> usize {
        let mut buf = [0u8; 1];
        self.streams
            .iter()
            .filter(|c| {
                c.set_nonblocking(true).is_ok()
                    && matches!(c.peek(&mut buf), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
            })
            .count()
    }

    /// Connections open.
    #[must_use]
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// Whether none is open.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Connects that failed, and the first error.
    #[must_use]
    pub fn failures(&self) -> (usize, Option<&str>) {
        (self.failed, self.first_error.as_deref())
    }

    /// When the first connect started.
    #[must_use]
    pub fn started(&self) -> Instant {
        self.started
    }

    /// From the first connect to the last one finishing (client side).
    #[must_use]
    pub fn connected_in(&self) -> Duration {
        self.connected_in
    }

    /// Sends `request` on every `every`-th connection and waits for each answer;
    /// returns how many answered within `timeout` each.
    #[must_use]
    pub fn probe(&mut self, request: &RemotingCommand, every: usize, timeout: Duration) -> usize {
        let mut frame = BytesMut::new();
        if request.encode(&mut frame).is_err() {
            return 0;
        }
        let decoder = FrameDecoder::new(remoting::frame::DEFAULT_MAX_FRAME_LEN);
        let mut answered = 0;
        for stream in self.streams.iter_mut().step_by(every.max(1)) {
            if exchange(stream, &frame, &decoder, timeout).is_ok() {
                answered += 1;
            }
        }
        answered
    }

    /// Closes every connection with a reset (SO_LINGER 0, as crashed clients' kernels do).
    /// A FIN would leave each client port in TIME_WAIT for a minute: three storms of
    /// 10,000 in a row then exhaust the 28,000 ephemeral ports, and the next storm's
    /// connects wait on the client's port search and SYN retries, not on the server.
    /// Returns how long closing took.
    pub fn close(self) -> Duration {
        let started = Instant::now();
        for stream in &self.streams {
            let _ = socket2::SockRef::from(stream).set_linger(Some(Duration::ZERO));
        }
        drop(self.streams);
        started.elapsed()
    }
}

fn exchange(
    stream: &mut TcpStream,
    frame: &[u8],
    decoder: &FrameDecoder,
    timeout: Duration,
) -> io::Result<RemotingCommand> {
    stream.set_read_timeout(Some(timeout))?;
    stream.write_all(frame)?;
    let mut buf = BytesMut::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(raw) = decoder
            .decode(&mut buf)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
        {
            return RemotingCommand::from_frame(raw)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e));
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Memory of a process at one moment (`/proc/PID/status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// `VmRSS`, bytes (mapped files included).
    pub vm_rss: u64,
    /// `RssAnon`, bytes (heap and stacks only).
    pub rss_anon: u64,
}

impl Memory {
    /// Reads `pid`'s (zeros when it is gone).
    #[must_use]
    pub fn of(pid: u32) -> Memory {
        Memory {
            vm_rss: vm_rss(pid).unwrap_or(0),
            rss_anon: rss_anon(pid).unwrap_or(0),
        }
    }
}

/// The kernel's counters of connections it refused or lost on a listen queue (`TcpExt` of
/// `/proc/net/netstat`: the whole network namespace, not one port).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelTcp {
    /// SYNs answered with a cookie because a SYN queue was full (`SyncookiesSent`).
    pub syncookies_sent: u64,
    /// ACKs with a cookie that did not check out (`SyncookiesFailed`).
    pub syncookies_failed: u64,
    /// Handshakes dropped on a full accept queue (`ListenOverflows`).
    pub listen_overflows: u64,
    /// SYNs and handshakes dropped on a listener for any reason (`ListenDrops`).
    pub listen_drops: u64,
}

impl KernelTcp {
    /// The counters now (`None` when `/proc/net/netstat` cannot be read).
    #[must_use]
    pub fn read() -> Option<KernelTcp> {
        Self::parse(&fs::read_to_string("/proc/net/netstat").ok()?)
    }

    /// From the text of `/proc/net/netstat`: a `TcpExt:` line of names, then one of values.
    #[must_use]
    pub fn parse(netstat: &str) -> Option<KernelTcp> {
        let mut lines = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
        let (names, values) = (lines.next()?, lines.next()?);
        let table: BTreeMap<&str, u64> = names
            .split_whitespace()
            .zip(values.split_whitespace())
            .skip(1)
            .filter_map(|(n, v)| Some((n, v.parse().ok()?)))
            .collect();
        let get = |name: &str| table.get(name).copied().unwrap_or(0);
        Some(KernelTcp {
            syncookies_sent: get("SyncookiesSent"),
            syncookies_failed: get("SyncookiesFailed"),
            listen_overflows: get("ListenOverflows"),
            listen_drops: get("ListenDrops"),
        })
    }

    /// What grew from `earlier` to `self`.
    #[must_use]
    pub fn since(&self, earlier: &KernelTcp) -> KernelTcp {
        KernelTcp {
            syncookies_sent: self.syncookies_sent.saturating_sub(earlier.syncookies_sent),
            syncookies_failed: self
                .syncookies_failed
                .saturating_sub(earlier.syncookies_failed),
            listen_overflows: self
                .listen_overflows
                .saturating_sub(earlier.listen_overflows),
            listen_drops: self.listen_drops.saturating_sub(earlier.listen_drops),
        }
    }
}

impl fmt::Display for KernelTcp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} SYN cookies sent, {} failed, {} accept-queue overflows, {} listen drops",
            self.syncookies_sent, self.syncookies_failed, self.listen_overflows, self.listen_drops
        )
    }
}

/// What one storm measured.
#[derive(Debug, Clone)]
pub struct StormReport {
    /// What was flooded (`broker`, `name server`, `ha`).
    pub label: String,
    /// Connections asked for.
    pub connections: usize,
    /// Connections the client opened.
    pub opened: usize,
    /// Connects that failed, and the first error.
    pub failed: usize,
    pub first_error: Option<String>,
    /// From the first connect until the server held all of them (`None`: it never did
    /// within the timeout).
    pub accepted_in: Option<Duration>,
    /// Connections the server held at most (all, or what it reached by the timeout).
    pub accepted: usize,
    /// From the first connect until the last connect returned (client side).
    pub connected_in: Duration,
    /// Probe requests answered, of those sent.
    pub probes_answered: usize,
    pub probes_sent: usize,
    /// Before the storm, while the connections were held (idle), and after they were
    /// closed and the server had let go of them (plus the settle time).
    pub before: Memory,
    pub with: Memory,
    pub after: Memory,
    /// Whether the server closed its side of every connection.
    pub released: bool,
    /// What the kernel refused or lost on listen queues from the flood's first connect until
    /// the server held them all or the wait gave up (`None`: unreadable).
    pub kernel: Option<KernelTcp>,
}

impl StormReport {
    /// Idle resident bytes per held connection (`RssAnon` with − before, / opened).
    #[must_use]
    pub fn idle_bytes_per_connection(&self) -> u64 {
        let opened = u64::try_from(self.opened.max(1)).unwrap_or(u64::MAX);
        self.with.rss_anon.saturating_sub(self.before.rss_anon) / opened
    }

    /// `VmRSS` after − before, bytes (negative: below the start).
    #[must_use]
    pub fn residue(&self) -> i64 {
        i64::try_from(self.after.vm_rss).unwrap_or(i64::MAX)
            - i64::try_from(self.before.vm_rss).unwrap_or(i64::MAX)
    }
}

impl fmt::Display for StormReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        writeln!(
            f,
            "{}: {} of {} connections opened ({} failed{}), client connects done in {:.3} s, {} accepted in {}",
            self.label,
            self.opened,
            self.connections,
            self.failed,
            self.first_error
                .as_deref()
                .map_or_else(String::new, |e| format!(", first: {e}")),
            self.connected_in.as_secs_f64(),
            self.accepted,
            self.accepted_in.map_or_else(
                || "NEVER".to_owned(),
                |d| format!("{:.3} s", d.as_secs_f64())
            ),
        )?;
        writeln!(
            f,
            "  probes answered {}/{}; idle {} B per connection (RssAnon)",
            self.probes_answered,
            self.probes_sent,
            self.idle_bytes_per_connection()
        )?;
        if let Some(kernel) = &self.kernel {
            writeln!(f, "  kernel, whole machine, during the flood: {kernel}")?;
        }
        write!(
            f,
            "  VmRSS before {:.1} MiB, with {:.1} MiB, after {:.1} MiB (residue {:+.1} MiB); RssAnon before {:.1}, with {:.1}, after {:.1} MiB; released: {}",
            mib(self.before.vm_rss),
            mib(self.with.vm_rss),
            mib(self.after.vm_rss),
            self.residue() as f64 / (1024.0 * 1024.0),
            mib(self.before.rss_anon),
            mib(self.with.rss_anon),
            mib(self.after.rss_anon),
            self.released,
        )
    }
}

/// How a storm is run.
#[derive(Debug, Clone)]
pub struct StormPlan {
    /// Label in the report.
    pub label: String,
    /// The server's address and pid.
    pub addr: SocketAddr,
    pub pid: u32,
    /// Connections to open.
    pub connections: usize,
    /// Connects pending at once.
    pub in_flight: usize,
    /// Sent on a sample of the connections once accepted (`None`: the protocol has the
    /// client speak first with nothing harmless to say, as HA).
    pub probe: Option<RemotingCommand>,
    /// Probe every this many connections.
    pub probe_every: usize,
    /// Connections opened, probed and closed before `before` is read.
    pub warm_up: usize,
    /// Longest wait for the server to accept them all, and to release them all.
    pub timeout: Duration,
    /// Pause after the server let go of the last connection before `after` is read
    /// (a housekeeping tick may return memory).
    pub settle: Duration,
}

impl StormPlan {
    /// A storm of `connections` on `addr` served by `pid`, with the defaults.
    #[must_use]
    pub fn new(label: &str, addr: SocketAddr, pid: u32, connections: usize) -> Self {
        StormPlan {
            label: label.to_owned(),
            addr,
            pid,
            connections,
            in_flight: std::env::var("SLUICE_FLOOD_IN_FLIGHT")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(DEFAULT_IN_FLIGHT),
            probe: None,
            probe_every: 100,
            warm_up: 200,
            timeout: Duration::from_secs(120),
            settle: Duration::from_secs(4),
        }
    }

    /// Probes with `request`.
    #[must_use]
    pub fn probe(mut self, request: RemotingCommand) -> Self {
        self.probe = Some(request);
        self
    }
}

/// Runs a storm: a small warm-up storm, memory before, flood, wait for the server to accept all, memory with,
/// probe, close all, wait for the server to let go, settle, memory after.
#[must_use]
pub fn storm(plan: &StormPlan) -> StormReport {
    let port = plan.addr.port();
    if plan.warm_up > 0 {
        // Faults in the code and first allocations of the accept path, which are not
        // what a storm leaves behind.
        let base_fds = fd_count(plan.pid).unwrap_or(0);
        let mut warm = Flood::open(plan.addr, plan.warm_up, plan.in_flight);
        let _ = wait_accepted(plan.pid, port, base_fds, warm.len(), plan.timeout);
        if let Some(request) = &plan.probe {
            let _ = warm.probe(request, 1, Duration::from_secs(10));
        }
        warm.close();
        let _ = wait_released(plan.pid, port, 0, plan.timeout);
        thread::sleep(plan.settle);
    }
    let before = Memory::of(plan.pid);
    let base_fds = fd_count(plan.pid).unwrap_or(0);
    let kernel_before = KernelTcp::read();
    let mut flood = Flood::open(plan.addr, plan.connections, plan.in_flight);
    let (accepted_in, accepted) =
        match wait_accepted(plan.pid, port, base_fds, flood.len(), plan.timeout) {
            Ok(_) => (Some(flood.started().elapsed()), flood.len()),
            Err(reached) => (None, reached),
        };
    let kernel = KernelTcp::read()
        .zip(kernel_before)
        .map(|(now, before)| now.since(&before));
    // Idle: let the accept burst's transient allocations go before reading.
    thread::sleep(Duration::from_millis(500));
    let with = Memory::of(plan.pid);
    let (probes_answered, probes_sent) = match &plan.probe {
        Some(request) => {
            let sent = flood.len().div_ceil(plan.probe_every.max(1));
            let answered = flood.probe(request, plan.probe_every, Duration::from_secs(10));
            (answered, sent)
        }
        None => (0, 0),
    };
    let (failed, first_error) = {
        let (n, e) = flood.failures();
        (n, e.map(str::to_owned))
    };
    let opened = flood.len();
    let connected_in = flood.connected_in();
    flood.close();
    let released = wait_released(plan.pid, port, 0, plan.timeout);
    thread::sleep(plan.settle);
    let after = Memory::of(plan.pid);
    StormReport {
        label: plan.label.clone(),
        connections: plan.connections,
        opened,
        failed,
        first_error,
        accepted_in,
        accepted,
        connected_in,
        probes_answered,
        probes_sent,
        before,
        with,
        after,
        released,
        kernel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_counters_are_read_by_name_and_differenced() {
        let netstat = "TcpExt: SyncookiesSent SyncookiesRecv SyncookiesFailed EmbryonicRsts ListenOverflows ListenDrops\n\
                       TcpExt: 7 1 2 0 30 31\n\
                       IpExt: InNoRoutes InTruncatedPkts\n\
                       IpExt: 0 0\n";
        let now = KernelTcp::parse(netstat).unwrap();
        assert_eq!(
            now,
            KernelTcp {
                syncookies_sent: 7,
                syncookies_failed: 2,
                listen_overflows: 30,
                listen_drops: 31,
            }
        );
        let before = KernelTcp {
            syncookies_sent: 5,
            listen_overflows: 30,
            ..KernelTcp::default()
        };
        assert_eq!(
            now.since(&before).to_string(),
            "2 SYN cookies sent, 2 failed, 0 accept-queue overflows, 31 listen drops"
        );
        assert_eq!(KernelTcp::parse("Ip: Forwarding\nIp: 1\n"), None);
    }

    #[test]
    fn this_machine_has_the_counters() {
        assert!(KernelTcp::read().is_some(), "/proc/net/netstat unreadable");
    }
}
