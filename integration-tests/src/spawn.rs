//! Starting child processes without stealing another thread's port.
//!
//! A child holds a copy of every descriptor of the test process from the moment it is forked
//! until its `exec` closes the close-on-exec ones. A listener that one test thread closes to
//! hand its port over (a reservation's placeholder, a test's "port taken" holder) stays bound
//! while a child forked by another thread is in that window, and the process the port was
//! handed to fails with `Address already in use`. Measured here: with four threads starting
//! `/bin/true` in a loop, 1% of binds right after a close failed; a full CI run saw it once
//! (a broker told to bind a port its test had just freed).
//!
//! So every child is started under the gate, shared: starts do not wait for each other, and
//! `Command::spawn` returns only after the child's `exec`. A listener whose port someone else is
//! about to bind is closed with [`close_listener`], which holds the gate exclusively: no child is
//! between fork and exec while it closes. `clippy.toml` of this crate forbids the ungated calls.

use std::io;
use std::net::TcpListener;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{PoisonError, RwLock};

static GATE: RwLock<()> = RwLock::new(());

/// `Command`'s starts, under the gate.
pub trait GatedCommand {
    /// [`Command::spawn`], under the gate.
    ///
    /// # Errors
    /// As [`Command::spawn`].
    fn gated_spawn(&mut self) -> io::Result<Child>;

    /// [`Command::output`] with its default stdio (stdin empty, stdout and stderr captured),
    /// started under the gate; the wait for its exit is not.
    ///
    /// # Errors
    /// As [`Command::output`].
    fn gated_output(&mut self) -> io::Result<Output>;

    /// [`Command::status`], started under the gate; the wait for its exit is not.
    ///
    /// # Errors
    /// As [`Command::status`].
    fn gated_status(&mut self) -> io::Result<ExitStatus>;
}

impl GatedCommand for Command {
    #[allow(
        clippy::disallowed_methods,
        reason = "the one place a child is started"
    )]
    fn gated_spawn(&mut self) -> io::Result<Child> {
        let _shared = GATE.read().unwrap_or_else(PoisonError::into_inner);
        self.spawn()
    }

    fn gated_output(&mut self) -> io::Result<Output> {
        self.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .gated_spawn()?
            .wait_with_output()
    }

    fn gated_status(&mut self) -> io::Result<ExitStatus> {
        self.gated_spawn()?.wait()
    }
}

/// Closes `listener` once no child is between fork and exec, so its port is free for whoever
/// binds it next.
pub fn close_listener(listener: TcpListener) {
    let _exclusive = GATE.write().unwrap_or_else(PoisonError::into_inner);
    drop(listener);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// The race this module closes: a port freed with [`close_listener`] while other threads
    /// start children is free at once, every time.
    #[test]
    fn a_closed_listener_is_free_while_other_threads_start_children() {
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        let _ = Command::new("true").gated_status();
                    }
                });
            }
            let mut taken = 0;
            for _ in 0..2_000 {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                close_listener(listener);
                if TcpListener::bind(addr).is_err() {
                    taken += 1;
                }
            }
            stop.store(true, Ordering::Relaxed);
            assert_eq!(taken, 0, "ports still bound after close_listener");
        });
    }
}
