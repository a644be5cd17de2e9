//! One slave on the master (RocketMQ's `HAConnection`): decodes its offset reports,
//! decides where the transfer starts, queues transfer frames — a 12-byte header next
//! to a zero-copy CommitLog slice — and heartbeats, and writes them with vectored
//! writes. A plain struct: bytes in, bytes out, the clock passed in; the mio loop in
//! [`accept`](crate::accept) owns the socket.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, IoSlice, Write};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::config::HaConfig;
use crate::error::FrameError;
use crate::frame::{ReportDecoder, TRANSFER_HEADER_SIZE, TransferHeader};
use crate::log::HaLog;

/// Frames queued per connection at most: 8 frames of 32 KiB go out in one vectored
/// write of 16 slices, and the slices pinned in memory stay bounded.
pub(crate) const MAX_QUEUED_FRAMES: usize = 8;
/// Bytes queued per connection at most.
const HIGH_WATER: usize = 256 * 1024;
/// When the log says bytes are readable but `read` found none (a file roll racing
/// us), look again after this long instead of spinning.
const RETRY_GAP: Duration = Duration::from_millis(10);

/// Why the master closes a slave connection.
#[derive(Debug)]
pub(crate) enum CloseReason {
    /// The slave closed it.
    Eof,
    /// A socket error.
    Io(io::Error),
    /// The slave sent an impossible report.
    Frame(FrameError),
    /// The slave reported more than the master holds.
    AheadOfMaster { report: u64, max: u64 },
    /// The slave needs bytes the master no longer holds.
    BelowMinOffset { offset: u64, min: u64 },
    /// Nothing read for `haHousekeepingInterval`.
    Housekeeping { silent: Duration },
    /// The service is stopping.
    Stopped,
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::Eof => f.write_str("closed by the slave"),
            CloseReason::Io(e) => write!(f, "socket error: {e}"),
            CloseReason::Frame(e) => write!(f, "invalid report: {e}"),
            CloseReason::AheadOfMaster { report, max } => write!(
                f,
                "slave reports offset {report} beyond the master's max offset {max}"
            ),
            CloseReason::BelowMinOffset { offset, min } => write!(
                f,
                "slave needs offset {offset} below the master's min offset {min}"
            ),
            CloseReason::Housekeeping { silent } => {
                write!(f, "nothing from the slave for {} ms", silent.as_millis())
            }
            CloseReason::Stopped => f.write_str("HA service stopping"),
        }
    }
}

/// What [`Connection::fill`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fill {
    /// No report yet: nothing to send.
    NotStarted,
    /// The queue is full; more data may follow once it drains.
    Full,
    /// Caught up at this offset: wait for the log to grow beyond it.
    Starved(u64),
    /// Look again at this instant.
    Retry(Instant),
}

/// Where the transfer to a slave starts: its report, or for an empty slave
/// (report 0) the start of the master's last CommitLog file, as RocketMQ computes it.
pub(crate) fn start_offset(request: u64, master_max: u64, file_size: u64) -> u64 {
    if request != 0 {
        request
    } else if file_size == 0 {
        0
    } else {
        master_max - master_max % file_size
    }
}

#[derive(Debug)]
struct OutFrame {
    header: [u8; TRANSFER_HEADER_SIZE],
    body: Bytes,
    written: usize,
}

impl OutFrame {
    fn len(&self) -> usize {
        TRANSFER_HEADER_SIZE + self.body.len()
    }

    fn unwritten(&self) -> (&[u8], &[u8]) {
        if self.written < TRANSFER_HEADER_SIZE {
            (&self.header[self.written..], &self.body[..])
        } else {
            (&[], &self.body[self.written - TRANSFER_HEADER_SIZE..])
        }
    }
}

/// Per-slave protocol state on the master.
#[derive(Debug)]
pub(crate) struct Connection {
    reports: ReportDecoder,
    /// The first report: where the slave asked the transfer to start.
    request: Option<u64>,
    /// Next offset to send (RocketMQ's `nextTransferFromWhere`).
    next: Option<u64>,
    queue: VecDeque<OutFrame>,
    queued: usize,
    last_read: Instant,
    last_write: Instant,
    retry_at: Option<Instant>,
    starved_at: Option<u64>,
    batch: usize,
    heartbeat: Duration,
    housekeeping: Duration,
}

impl Connection {
    pub(crate) fn new(now: Instant, config: &HaConfig) -> Self {
        Connection {
            reports: ReportDecoder::new(),
            request: None,
            next: None,
            queue: VecDeque::with_capacity(MAX_QUEUED_FRAMES),
            queued: 0,
            last_read: now,
            last_write: now,
            retry_at: None,
            starved_at: None,
            batch: config.ha_transfer_batch_size.max(1),
            heartbeat: config.heartbeat_interval(),
            housekeeping: config.housekeeping_interval(),
        }
    }

    /// Takes bytes read from the slave. Returns the slave's new ack when a report
    /// completed; the first report also fixes the transfer start.
    ///
    /// `master_max` is asked only when a report completed.
    pub(crate) fn on_read(
        &mut self,
        src: &[u8],
        now: Instant,
        master_max: impl FnOnce() -> u64,
    ) -> Result<Option<u64>, CloseReason> {
        self.last_read = now;
        let Some(report) = self.reports.feed(src).map_err(CloseReason::Frame)? else {
            return Ok(None);
        };
        // Checked on every report, the first included: 4.9.8 let a first report
        // beyond the master's end through and counted it as an ack (#3015).
        let max = master_max();
        if report > max {
            return Err(CloseReason::AheadOfMaster { report, max });
        }
        if self.request.is_none() {
            self.request = Some(report);
            log_limit::limited!(info!(offset = report, "slave request offset"));
        }
        Ok(Some(report))
    }

    /// Queues what can be sent now: data frames from the next offset (at most
    /// `haTransferBatchSize` each, never crossing a file end because `read` does not),
    /// or a heartbeat when idle for `haSendHeartbeatInterval`.
    pub(crate) fn fill(&mut self, log: &dyn HaLog, now: Instant) -> Result<Fill, CloseReason> {
        self.starved_at = None;
        let Some(request) = self.request else {
            return Ok(Fill::NotStarted);
        };
        let mut next = match self.next {
            Some(n) => n,
            None => {
                let max = log.max_offset();
                let from = start_offset(request, max, log.file_size());
                log_limit::limited!(info!(request, from, master_max = max, "transfer starts"));
                from
            }
        };
        self.next = Some(next);
        if let Some(at) = self.retry_at {
            if now < at {
                return Ok(Fill::Retry(at));
            }
            self.retry_at = None;
        }
        let mut starved = false;
        while self.queue.len() < MAX_QUEUED_FRAMES && self.queued < HIGH_WATER {
            match log.read(next, self.batch) {
                Some(b) if !b.is_empty() => {
                    let b = if b.len() > self.batch {
                        b.slice(..self.batch)
                    } else {
                        b
                    };
                    let header = TransferHeader::new(next, b.len()).map_err(CloseReason::Frame)?;
                    next += b.len() as u64;
                    self.push(header, b);
                }
                _ => {
                    starved = true;
                    break;
                }
            }
        }
        self.next = Some(next);
        if !starved {
            return Ok(Fill::Full);
        }
        let max = log.max_offset();
        let fill = if next < max {
            let min = log.min_offset();
            if next < min {
                return Err(CloseReason::BelowMinOffset { offset: next, min });
            }
            let at = now + RETRY_GAP;
            self.retry_at = Some(at);
            Fill::Retry(at)
        } else {
            self.starved_at = Some(next);
            Fill::Starved(next)
        };
        if self.queue.is_empty() && now.saturating_duration_since(self.last_write) >= self.heartbeat
        {
            let header = TransferHeader::heartbeat(next).map_err(CloseReason::Frame)?;
            self.push(header, Bytes::new());
        }
        Ok(fill)
    }

    fn push(&mut self, header: TransferHeader, body: Bytes) {
        let frame = OutFrame {
            header: header.to_bytes(),
            body,
            written: 0,
        };
        self.queued += frame.len();
        self.queue.push_back(frame);
    }

    /// Writes queued frames until done or `WouldBlock`; returns the bytes written
    /// and whether the socket would block.
    ///
    /// # Errors
    /// The writer failed (other than `WouldBlock`/`Interrupted`) or accepted nothing.
    pub(crate) fn write_to<W: Write>(
        &mut self,
        w: &mut W,
        now: Instant,
    ) -> io::Result<(usize, bool)> {
        let mut total = 0;
        while !self.queue.is_empty() {
            let res = {
                let mut slices = [IoSlice::new(&[]); 2 * MAX_QUEUED_FRAMES];
                let mut n = 0;
                for f in &self.queue {
                    let (h, b) = f.unwritten();
                    for part in [h, b] {
                        if !part.is_empty() && n < slices.len() {
                            slices[n] = IoSlice::new(part);
                            n += 1;
                        }
                    }
                }
                w.write_vectored(&slices[..n])
            };
            match res {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(k) => {
                    self.advance(k);
                    total += k;
                    self.last_write = now;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok((total, true)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok((total, false))
    }

    fn advance(&mut self, mut k: usize) {
        while k > 0 {
            let Some(front) = self.queue.front_mut() else {
                return;
            };
            let rest = front.len() - front.written;
            if k >= rest {
                k -= rest;
                self.queued -= front.len();
                self.queue.pop_front();
            } else {
                front.written += k;
                k = 0;
            }
        }
    }

    /// Whether frames wait to be written.
    pub(crate) fn has_output(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Whether the stream sits between frames (nothing partly written), so a frame
    /// can be written directly.
    pub(crate) fn at_frame_boundary(&self) -> bool {
        self.queue.front().is_none_or(|f| f.written == 0)
    }

    /// Next offset to send, once the transfer started.
    pub(crate) fn transfer_offset(&self) -> Option<u64> {
        self.next
    }

    /// Where the last [`fill`](Self::fill) found the slave caught up.
    pub(crate) fn starved_at(&self) -> Option<u64> {
        self.starved_at
    }

    /// How long since the slave last sent anything.
    pub(crate) fn silent_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.last_read)
    }

    /// How long the slave has been silent, if that reaches `haHousekeepingInterval`.
    pub(crate) fn silent_too_long(&self, now: Instant) -> Option<Duration> {
        let silent = self.silent_for(now);
        (silent >= self.housekeeping).then_some(silent)
    }

    /// When this connection next needs attention without any socket event:
    /// housekeeping, the next heartbeat, or a retry.
    pub(crate) fn next_deadline(&self) -> Instant {
        let mut d = self.last_read + self.housekeeping;
        if self.request.is_some() && self.queue.is_empty() {
            d = d.min(self.last_write + self.heartbeat);
        }
        if let Some(r) = self.retry_at {
            d = d.min(r);
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{decode_transfer, report_bytes};
    use crate::test_util::log_of;
    use bytes::BytesMut;

    fn config(batch: usize) -> HaConfig {
        HaConfig {
            ha_transfer_batch_size: batch,
            ha_send_heartbeat_interval: 100,
            ha_housekeeping_interval: 1000,
            ..HaConfig::default()
        }
    }

    /// A writer taking at most `limit` bytes per call, then `WouldBlock` once.
    struct Trickle {
        out: Vec<u8>,
        limit: usize,
        block_next: bool,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            if self.block_next {
                self.block_next = false;
                return Err(io::ErrorKind::WouldBlock.into());
            }
            self.block_next = true;
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.limit - n);
                self.out.extend_from_slice(&b[..take]);
                n += take;
                if n == self.limit {
                    break;
                }
            }
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn frames(wire: &[u8]) -> Vec<(u64, Vec<u8>)> {
        let mut buf = BytesMut::from(wire);
        let mut out = Vec::new();
        while let Some(f) = decode_transfer(&mut buf, 1 << 20).unwrap() {
            out.push((f.header.offset(), f.body.to_vec()));
        }
        assert!(buf.is_empty(), "whole frames only");
        out
    }

    #[test]
    fn start_offset_rules() {
        assert_eq!(start_offset(0, 0, 1024), 0);
        assert_eq!(start_offset(0, 2500, 1024), 2048, "last file start");
        assert_eq!(start_offset(0, 2048, 1024), 2048, "RocketMQ's formula");
        assert_eq!(start_offset(700, 2500, 1024), 700);
    }

    #[test]
    fn streams_the_log_in_batches_that_never_cross_files() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let log = log_of(0, 1024, &data);
        let t0 = Instant::now();
        let mut c = Connection::new(t0, &config(300));
        assert_eq!(c.fill(&log, t0).unwrap(), Fill::NotStarted);
        assert_eq!(
            c.on_read(&report_bytes(100).unwrap(), t0, || log.max_offset())
                .unwrap(),
            Some(100)
        );
        let mut w = Trickle {
            out: Vec::new(),
            limit: 777,
            block_next: false,
        };
        loop {
            let fill = c.fill(&log, t0).unwrap();
            let (_, _blocked) = c.write_to(&mut w, t0).unwrap();
            if matches!(fill, Fill::Starved(_)) && !c.has_output() {
                break;
            }
        }
        let got = frames(&w.out);
        let mut at = 100u64;
        for (off, body) in &got {
            assert_eq!(*off, at);
            assert!(body.len() <= 300);
            assert_eq!(off / 1024, (off + body.len() as u64 - 1) / 1024, "one file");
            assert_eq!(&data[*off as usize..*off as usize + body.len()], &body[..]);
            at += body.len() as u64;
        }
        assert_eq!(at, 5000);
        assert_eq!(c.starved_at(), Some(5000));
    }

    #[test]
    fn heartbeat_when_idle_and_empty_slave_starts_at_last_file() {
        let log = log_of(0, 1024, &[7; 2100]);
        let t0 = Instant::now();
        let mut c = Connection::new(t0, &config(4096));
        c.on_read(&report_bytes(0).unwrap(), t0, || log.max_offset())
            .unwrap();
        let mut out = Vec::new();
        c.fill(&log, t0).unwrap();
        c.write_to(&mut out, t0).unwrap();
        assert_eq!(frames(&out), vec![(2048, vec![7; 52])]);
        out.clear();
        assert_eq!(c.fill(&log, t0).unwrap(), Fill::Starved(2100));
        assert!(!c.has_output(), "no heartbeat before the interval");
        let later = t0 + Duration::from_millis(100);
        c.fill(&log, later).unwrap();
        c.write_to(&mut out, later).unwrap();
        assert_eq!(out, TransferHeader::heartbeat(2100).unwrap().to_bytes());
        assert_eq!(c.next_deadline(), later + Duration::from_millis(100));
    }

    #[test]
    fn refuses_reports_beyond_the_master() {
        let log = log_of(0, 1024, &[0; 10]);
        let t0 = Instant::now();
        let mut c = Connection::new(t0, &config(64));
        let err = c
            .on_read(&report_bytes(11).unwrap(), t0, || log.max_offset())
            .unwrap_err();
        assert!(matches!(
            err,
            CloseReason::AheadOfMaster {
                report: 11,
                max: 10
            }
        ));
        // A later report too.
        let mut c = Connection::new(t0, &config(64));
        c.on_read(&report_bytes(10).unwrap(), t0, || log.max_offset())
            .unwrap();
        assert!(
            c.on_read(&report_bytes(12).unwrap(), t0, || log.max_offset())
                .is_err()
        );
    }

    #[test]
    fn slave_below_min_offset_is_closed() {
        let log = log_of(4096, 1024, &[0; 100]);
        let t0 = Instant::now();
        let mut c = Connection::new(t0, &config(64));
        c.on_read(&report_bytes(10).unwrap(), t0, || log.max_offset())
            .unwrap();
        assert!(matches!(
            c.fill(&log, t0),
            Err(CloseReason::BelowMinOffset {
                offset: 10,
                min: 4096
            })
        ));
    }

    #[test]
    fn housekeeping_deadline() {
        let t0 = Instant::now();
        let c = Connection::new(t0, &config(64));
        assert_eq!(c.silent_too_long(t0 + Duration::from_millis(999)), None);
        assert!(
            c.silent_too_long(t0 + Duration::from_millis(1000))
                .is_some()
        );
        assert_eq!(c.next_deadline(), t0 + Duration::from_millis(1000));
    }
}
