//! The live status line: on a terminal, one line of stderr redrawn about every 500 ms
//! with the elapsed time, messages so far, the rate over the last second, the p99 of the
//! last one-second interval (send modes) and errors so far.
//!
//! It reads what the workers already keep — the atomics of [`Counters`](super::stats::Counters)
//! and the p99 [`Latencies::interval`](super::stats::Latencies::interval) leaves behind
//! each second — so it adds nothing to the send/receive path. Every other line the run
//! writes to stderr goes through [`StatusLine::start`]'s writer, which wipes the status
//! line first and draws it again under the new line, so the two never mix. When stderr
//! is not a terminal (or with `--no-progress`) nothing is drawn and stderr carries
//! exactly what it carried before.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clap::Args;
use parking_lot::Mutex;
use tokio::task::JoinHandle;

use super::Run;

/// How often the line is redrawn.
const REDRAW_EVERY: Duration = Duration::from_millis(500);

/// The window the rate is measured over.
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// Back to the start of the line.
const CARRIAGE_RETURN: &[u8] = b"\r";

/// Clear from the cursor to the end of the line (ANSI EL).
const CLEAR_TO_EOL: &[u8] = b"\x1b[K";

/// The stderr writer the modes share.
pub type SharedWriter = Arc<Mutex<Box<dyn Write + Send>>>;

/// `--no-progress`, flattened into the options of every mode that draws the line.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct StatusArgs {
    /// Do not draw the live status line (it is only drawn when stderr is a terminal).
    #[arg(long = "no-progress")]
    pub no_progress: bool,
}

impl StatusArgs {
    /// Whether to draw: not turned off, and stderr is a terminal.
    #[must_use]
    pub fn enabled(&self) -> bool {
        !self.no_progress && std::io::stderr().is_terminal()
    }
}

/// What the line says about latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum P99 {
    /// Not shown (receive modes).
    Off,
    /// No sample in the last interval.
    Empty,
    /// The last interval's p99, in milliseconds.
    Ms(f64),
}

/// The figures of one redraw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// Since the run started.
    pub elapsed: Duration,
    /// Messages done so far.
    pub messages: u64,
    /// Messages per second over the last second.
    pub rate: f64,
    /// p99 of the last interval.
    pub p99: P99,
    /// Errors so far.
    pub errors: u64,
}

/// The text of the status line (without the cursor control around it); `what` is the
/// mode's verb (`sent`, `received`). Kept well under 80 columns: a wrapped line cannot be
/// redrawn in place.
#[must_use]
pub fn status_text(what: &str, f: &Figures) -> String {
    let mut s = format!(
        "{:>7.1}s  {what} {:>10}  {:>9.0} msg/s",
        f.elapsed.as_secs_f64(),
        f.messages,
        f.rate
    );
    match f.p99 {
        P99::Off => {}
        P99::Empty => s.push_str("  p99        - ms"),
        P99::Ms(ms) => s.push_str(&format!("  p99 {ms:>8.3} ms")),
    }
    s.push_str(&format!("  errors {}", f.errors));
    s
}

/// Message counts of the last second, for the rate.
#[derive(Debug, Default)]
struct RateWindow {
    /// (time since start, messages) of recent redraws, oldest first; the front is the
    /// newest sample at least [`RATE_WINDOW`] old, if there is one.
    samples: VecDeque<(Duration, u64)>,
}

impl RateWindow {
    /// Adds a sample and returns the rate since the front sample (0 with one sample).
    #[allow(clippy::cast_precision_loss, reason = "a rate for display")]
    fn push(&mut self, at: Duration, messages: u64) -> f64 {
        self.samples.push_back((at, messages));
        while self
            .samples
            .get(1)
            .is_some_and(|(t, _)| at.saturating_sub(*t) >= RATE_WINDOW)
        {
            self.samples.pop_front();
        }
        let (t0, m0) = self.samples[0];
        let secs = at.saturating_sub(t0).as_secs_f64();
        if secs > 0.0 {
            messages.saturating_sub(m0) as f64 / secs
        } else {
            0.0
        }
    }
}

/// The terminal's last line as far as the status line is concerned.
struct Screen {
    out: SharedWriter,
    /// The last status drawn.
    text: String,
    /// The status is on the current line (the cursor is after it).
    shown: bool,
    /// Finished: nothing is drawn any more.
    closed: bool,
}

impl Screen {
    fn new(out: SharedWriter) -> Self {
        Screen {
            out,
            text: String::new(),
            shown: false,
            closed: false,
        }
    }

    /// Redraws the line with `text`; `false` once closed.
    fn draw(&mut self, text: String) -> bool {
        if self.closed {
            return false;
        }
        let mut out = self.out.lock();
        let _ = out.write_all(CARRIAGE_RETURN);
        let _ = out.write_all(text.as_bytes());
        let _ = out.write_all(CLEAR_TO_EOL);
        let _ = out.flush();
        self.text = text;
        self.shown = true;
        true
    }

    /// Writes `buf` of another line: the status is wiped first, and drawn again below
    /// once `buf` ends a line.
    fn write_through(&mut self, buf: &[u8]) -> std::io::Result<()> {
        let mut out = self.out.lock();
        if self.shown {
            out.write_all(CARRIAGE_RETURN)?;
            out.write_all(CLEAR_TO_EOL)?;
            self.shown = false;
        }
        out.write_all(buf)?;
        if !self.closed && !self.text.is_empty() && buf.ends_with(b"\n") {
            out.write_all(self.text.as_bytes())?;
            out.write_all(CLEAR_TO_EOL)?;
            self.shown = true;
        }
        Ok(())
    }

    /// Ends the status line with a newline (it stays on screen); no more redraws.
    fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        if self.shown {
            let mut out = self.out.lock();
            let _ = out.write_all(b"\n");
            let _ = out.flush();
            self.shown = false;
        }
    }
}

/// The writer [`StatusLine::start`] hands back: every line goes around the status.
struct Through(Arc<Mutex<Screen>>);

impl Write for Through {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().write_through(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let screen = self.0.lock();
        let mut out = screen.out.lock();
        out.flush()
    }
}

/// The running status line of one benchmark (nothing when disabled). Dropping it (or
/// [`finish`](Self::finish)) stops the redraws and ends the line with a newline, so
/// whatever is printed next starts on a line of its own.
#[derive(Default)]
pub struct StatusLine {
    drawing: Option<(Arc<Mutex<Screen>>, JoinHandle<()>)>,
}

impl std::fmt::Debug for StatusLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusLine")
            .field("drawing", &self.drawing.is_some())
            .finish()
    }
}

impl StatusLine {
    /// Starts redrawing the status of `run` on `err` if `args` allow and stderr is a
    /// terminal; `what` is the mode's verb, `latency` whether to show the p99 (send
    /// modes). Returns the line and the writer the run's other stderr lines must use from
    /// now on (`err` itself when not drawing). Needs a tokio runtime.
    pub fn start(
        args: &StatusArgs,
        run: &Arc<Run>,
        what: &'static str,
        latency: bool,
        err: SharedWriter,
    ) -> (StatusLine, SharedWriter) {
        if !args.enabled() {
            return (StatusLine::default(), err);
        }
        let screen = Arc::new(Mutex::new(Screen::new(err)));
        let task = tokio::spawn(redraw(Arc::clone(&screen), Arc::clone(run), what, latency));
        let through: Box<dyn Write + Send> = Box::new(Through(Arc::clone(&screen)));
        (
            StatusLine {
                drawing: Some((screen, task)),
            },
            Arc::new(Mutex::new(through)),
        )
    }

    /// Stops the redraws and ends the line (the same as dropping it).
    pub fn finish(self) {}
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        if let Some((screen, task)) = self.drawing.take() {
            task.abort();
            // Closed under the lock: a redraw still under way cannot come after the newline.
            screen.lock().close();
        }
    }
}

/// Redraws every [`REDRAW_EVERY`] until the screen is closed.
async fn redraw(screen: Arc<Mutex<Screen>>, run: Arc<Run>, what: &'static str, latency: bool) {
    let start = Instant::now();
    let mut tick = tokio::time::interval(REDRAW_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut window = RateWindow::default();
    loop {
        tick.tick().await;
        let elapsed = start.elapsed();
        let messages = run.counters.messages.load(Ordering::Relaxed);
        let figures = Figures {
            elapsed,
            messages,
            rate: window.push(elapsed, messages),
            p99: if !latency {
                P99::Off
            } else {
                run.latencies
                    .last_interval_p99_ms()
                    .map_or(P99::Empty, P99::Ms)
            },
            errors: run.counters.errors.load(Ordering::Relaxed),
        };
        if !screen.lock().draw(status_text(what, &figures)) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose bytes the test reads back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn take(&self) -> String {
            String::from_utf8(std::mem::take(&mut *self.0.lock())).unwrap()
        }
    }

    #[test]
    fn text_of_a_send_mode() {
        let f = Figures {
            elapsed: Duration::from_millis(12_540),
            messages: 1_234_567,
            rate: 98_765.4,
            p99: P99::Ms(1.2344),
            errors: 3,
        };
        assert_eq!(
            status_text("sent", &f),
            "   12.5s  sent    1234567      98765 msg/s  p99    1.234 ms  errors 3"
        );
        let f = Figures {
            p99: P99::Empty,
            ..f
        };
        assert_eq!(
            status_text("sent", &f),
            "   12.5s  sent    1234567      98765 msg/s  p99        - ms  errors 3"
        );
    }

    #[test]
    fn text_of_a_receive_mode() {
        let f = Figures {
            elapsed: Duration::ZERO,
            messages: 0,
            rate: 0.0,
            p99: P99::Off,
            errors: 0,
        };
        assert_eq!(
            status_text("received", &f),
            "    0.0s  received          0          0 msg/s  errors 0"
        );
    }

    #[test]
    fn text_fits_a_terminal() {
        let f = Figures {
            elapsed: Duration::from_secs(86_400),
            messages: 9_999_999_999,
            rate: 99_999_999.0,
            p99: P99::Ms(99_999.999),
            errors: 9_999_999,
        };
        let text = status_text("received", &f);
        assert!(text.len() < 100, "{} columns: {text}", text.len());
        assert!(status_text("sent", &Figures { errors: 0, ..f }).len() <= 80);
    }

    #[test]
    fn rate_over_the_last_second() {
        let mut w = RateWindow::default();
        let ms = Duration::from_millis;
        assert_eq!(w.push(ms(0), 0), 0.0);
        assert_eq!(w.push(ms(500), 500), 1000.0);
        assert_eq!(w.push(ms(1000), 2000), 2000.0);
        // The sample at 0 is dropped: 500 .. 1500.
        assert_eq!(w.push(ms(1500), 2500), 2000.0);
        // A late tick: the newest sample at least a second old is 1000.
        assert_eq!(w.push(ms(2200), 2000 + 600), 500.0);
        assert_eq!(w.samples.len(), 3);
    }

    #[test]
    fn other_lines_go_around_the_status() {
        let captured = Captured::default();
        let out: SharedWriter = Arc::new(Mutex::new(Box::new(captured.clone())));
        let screen = Arc::new(Mutex::new(Screen::new(out)));
        let mut through = Through(Arc::clone(&screen));
        // Nothing drawn yet: lines pass untouched.
        writeln!(through, "header").unwrap();
        assert_eq!(captured.take(), "header\n");
        assert!(screen.lock().draw("A".to_owned()));
        assert_eq!(captured.take(), "\rA\x1b[K");
        writeln!(through, "[   1s] sent").unwrap();
        assert_eq!(captured.take(), "\r\x1b[K[   1s] sent\nA\x1b[K");
        assert!(screen.lock().draw("B".to_owned()));
        screen.lock().close();
        assert_eq!(captured.take(), "\rB\x1b[K\n");
        // Closed: no redraw, and later lines stay as they are.
        assert!(!screen.lock().draw("C".to_owned()));
        writeln!(through, "last").unwrap();
        screen.lock().close();
        assert_eq!(captured.take(), "last\n");
    }

    #[test]
    fn every_drawing_mode_takes_the_flag() {
        use super::super::{BenchCommand, Cli};
        use clap::Parser;
        for mode in ["producer", "consumer", "grpc-producer", "grpc-consumer"] {
            for (flag, off) in [(None, false), (Some("--no-progress"), true)] {
                let args = ["mqbench", mode].into_iter().chain(flag);
                let status = match Cli::try_parse_from(args).unwrap().command {
                    BenchCommand::Producer(a) => a.status,
                    BenchCommand::Consumer(a) => a.status,
                    BenchCommand::GrpcProducer(a) => a.status,
                    BenchCommand::GrpcConsumer(a) => a.status,
                    other => panic!("{other:?}"),
                };
                assert_eq!(status.no_progress, off, "{mode} {flag:?}");
            }
        }
    }

    #[test]
    fn off_when_asked_or_not_a_terminal() {
        let args = StatusArgs { no_progress: true };
        assert!(!args.enabled());
        // Under the test harness stderr may or may not be a terminal; the line must not
        // start without a runtime either way when turned off.
        let run = Arc::new(Run::default());
        let out: SharedWriter = Arc::new(Mutex::new(Box::new(std::io::sink())));
        let (line, err) = StatusLine::start(&args, &run, "sent", true, Arc::clone(&out));
        assert!(Arc::ptr_eq(&err, &out));
        assert!(line.drawing.is_none());
        line.finish();
    }
}
