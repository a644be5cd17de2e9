//! Helpers the tests of several crates need, once: polling waits ([`wait_until`],
//! [`wait_until_every`]) and a tiny executor ([`block_on`]).
//!
//! Why a crate of its own: `ha`'s unit and integration tests and `integration-tests` all poll
//! for a condition, and `ha`'s tests drive futures without a runtime. Neither crate is a
//! sensible dependency of the other, and a dev-dependency on this one costs nothing (it depends
//! on nothing). What implements one of our traits stays with the trait: the in-memory
//! `ha::HaLog` of `ha`'s tests lives in `ha/tests/support/mem_log.rs` (a type built against a
//! second copy of `ha` would not be an `HaLog` to `ha`'s own unit tests).

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

/// How often [`wait_until`] checks: cheap conditions on in-process state.
pub const POLL_INTERVAL: Duration = Duration::from_millis(2);

/// Checks `cond` every [`POLL_INTERVAL`] until it holds (true) or `timeout` passes (false).
pub fn wait_until(timeout: Duration, cond: impl FnMut() -> bool) -> bool {
    wait_until_every(POLL_INTERVAL, timeout, cond)
}

/// Checks `cond` at once and then every `interval` until it holds (true) or `timeout` passes
/// (false): a condition that asks another process wants a longer interval than
/// [`POLL_INTERVAL`].
pub fn wait_until_every(
    interval: Duration,
    timeout: Duration,
    mut cond: impl FnMut() -> bool,
) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(interval);
    }
}

/// Polls `fut` on the current thread until it resolves, parking between polls (a wake-up
/// unparks it; a lost one costs at most 100 ms).
pub fn block_on<F: Future>(fut: F) -> F::Output {
    struct ThreadWaker(thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park_timeout(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_for_a_condition_or_gives_up() {
        let mut n = 0;
        assert!(wait_until(Duration::from_secs(5), || {
            n += 1;
            n == 3
        }));
        let started = Instant::now();
        assert!(!wait_until_every(
            Duration::from_millis(5),
            Duration::from_millis(20),
            || false
        ));
        assert!(started.elapsed() >= Duration::from_millis(20));
    }

    #[test]
    fn runs_a_future_woken_from_another_thread() {
        let (tx, rx) = std::sync::mpsc::channel::<u32>();
        let fut = std::future::poll_fn(move |cx| match rx.try_recv() {
            Ok(v) => Poll::Ready(v),
            Err(_) => {
                let waker = cx.waker().clone();
                let tx = tx.clone();
                thread::spawn(move || {
                    let _ = tx.send(7);
                    waker.wake();
                });
                Poll::Pending
            }
        });
        assert_eq!(block_on(fut), 7);
    }
}
