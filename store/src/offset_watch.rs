//! "Wait until offset >= N, with a timeout": the reusable piece behind SYNC_FLUSH
//! completion (durable offset), dispatch following the log (readable offset) and,
//! later, sync replication (slave-acked offset).
//!
//! A publisher calls [`OffsetWatch::advance`]; waiters either `.await` a [`WaitOffset`]
//! (runtime-agnostic: no timer inside, the owning service thread calls
//! [`OffsetWatch::expire`] so that timed-out futures wake up) or block in
//! [`OffsetWatch::wait_blocking`]. With no waiters, `advance` is one atomic
//! `fetch_max` and one load, cheap enough for the put path.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Why a wait ended without reaching its offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitError {
    /// The deadline passed first.
    Timeout,
    /// The publisher failed for good (e.g. the writer is poisoned).
    Failed,
}

#[derive(Debug)]
struct Entry {
    id: u64,
    target: u64,
    deadline: Instant,
    waker: Waker,
}

#[derive(Debug, Default)]
struct Waiters {
    next_id: u64,
    list: Vec<Entry>,
}

/// A monotonically advancing offset that tasks and threads can wait on.
#[derive(Debug, Default)]
pub struct OffsetWatch {
    value: AtomicU64,
    /// Bumped by [`OffsetWatch::interrupt`].
    epoch: AtomicU64,
    failed: AtomicBool,
    interest: AtomicUsize,
    waiters: Mutex<Waiters>,
    cvar: Condvar,
}

impl OffsetWatch {
    /// A watch starting at `value`.
    #[must_use]
    pub fn new(value: u64) -> Self {
        OffsetWatch {
            value: AtomicU64::new(value),
            ..OffsetWatch::default()
        }
    }

    /// The current offset.
    #[must_use]
    pub fn get(&self) -> u64 {
        self.value.load(Ordering::Acquire)
    }

    /// Whether [`fail`](Self::fail) was called.
    #[must_use]
    pub fn is_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Raises the offset to `v` (never lowers it) and wakes waiters it satisfies;
    /// returns how many async waiters it woke.
    pub fn advance(&self, v: u64) -> usize {
        self.value.fetch_max(v, Ordering::SeqCst);
        if self.interest.load(Ordering::SeqCst) > 0 {
            return self.wake(|e| e.target <= v);
        }
        0
    }

    /// Async waiters registered and not yet satisfied.
    #[must_use]
    pub fn pending(&self) -> usize {
        if self.interest.load(Ordering::SeqCst) == 0 {
            return 0;
        }
        self.waiters.lock().list.len()
    }

    /// Sets the offset, also downwards (truncation); waiters are re-evaluated.
    pub fn reset(&self, v: u64) {
        self.value.store(v, Ordering::SeqCst);
        if self.interest.load(Ordering::SeqCst) > 0 {
            self.wake(|e| e.target <= v);
        }
    }

    /// Marks the publisher failed: every present and future wait ends in
    /// [`WaitError::Failed`] unless its offset was already reached.
    pub fn fail(&self) {
        self.failed.store(true, Ordering::SeqCst);
        self.wake(|_| true);
    }

    /// Wakes waiters whose deadline is at or before `now`; returns the earliest
    /// deadline still pending.
    pub fn expire(&self, now: Instant) -> Option<Instant> {
        if self.interest.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let mut w = self.waiters.lock();
        let mut next: Option<Instant> = None;
        w.list.retain(|e| {
            if e.deadline <= now {
                e.waker.wake_by_ref();
                false
            } else {
                next = Some(next.map_or(e.deadline, |n| n.min(e.deadline)));
                true
            }
        });
        next
    }

    /// Number of registered async waiters plus blocked threads.
    #[must_use]
    pub fn waiter_count(&self) -> usize {
        self.interest.load(Ordering::SeqCst)
    }

    fn wake(&self, pred: impl Fn(&Entry) -> bool) -> usize {
        let mut w = self.waiters.lock();
        let before = w.list.len();
        w.list.retain(|e| {
            if pred(e) {
                e.waker.wake_by_ref();
                false
            } else {
                true
            }
        });
        let woken = before - w.list.len();
        drop(w);
        self.cvar.notify_all();
        woken
    }

    /// A future resolving once the offset reaches `target`, or with an error after
    /// `timeout` (which needs someone calling [`expire`](Self::expire)) or on failure.
    #[must_use]
    pub fn wait(self: &Arc<Self>, target: u64, timeout: Duration) -> WaitOffset {
        WaitOffset {
            watch: Some(Arc::clone(self)),
            target,
            deadline: Instant::now() + timeout,
            id: None,
        }
    }

    /// A future that is already resolved with `result`.
    #[must_use]
    pub fn ready(result: Result<(), WaitError>) -> WaitOffset {
        WaitOffset {
            watch: None,
            target: u64::from(result.is_err()),
            deadline: Instant::now(),
            id: None,
        }
    }

    /// Blocks the calling thread until the offset reaches `target` or `timeout`
    /// passes; returns the offset then.
    pub fn wait_blocking(&self, target: u64, timeout: Duration) -> u64 {
        self.wait_blocking_since(target, timeout, self.epoch())
    }

    /// The interrupt epoch, to pass to [`wait_blocking_since`](Self::wait_blocking_since).
    #[must_use]
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Ends every blocking wait now (a service thread being stopped), and those that
    /// start with an older epoch.
    pub fn interrupt(&self) {
        let _g = self.waiters.lock();
        self.epoch.fetch_add(1, Ordering::SeqCst);
        self.cvar.notify_all();
    }

    /// As [`wait_blocking`](Self::wait_blocking), also returning once
    /// [`interrupt`](Self::interrupt) was called after `epoch` was read.
    pub fn wait_blocking_since(&self, target: u64, timeout: Duration, epoch: u64) -> u64 {
        let deadline = Instant::now() + timeout;
        if self.get() >= target {
            return self.get();
        }
        self.interest.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.waiters.lock();
        while self.value.load(Ordering::SeqCst) < target
            && !self.is_failed()
            && self.epoch.load(Ordering::SeqCst) == epoch
        {
            if self.cvar.wait_until(&mut guard, deadline).timed_out() {
                break;
            }
        }
        drop(guard);
        self.interest.fetch_sub(1, Ordering::SeqCst);
        self.get()
    }
}

/// Future of [`OffsetWatch::wait`].
#[derive(Debug)]
pub struct WaitOffset {
    watch: Option<Arc<OffsetWatch>>,
    target: u64,
    deadline: Instant,
    id: Option<u64>,
}

impl WaitOffset {
    fn unregister(&mut self) {
        if let (Some(watch), Some(id)) = (&self.watch, self.id.take()) {
            watch.waiters.lock().list.retain(|e| e.id != id);
            watch.interest.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Future for WaitOffset {
    type Output = Result<(), WaitError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(watch) = this.watch.clone() else {
            // `ready`: target 0 = Ok, 1 = Failed.
            return Poll::Ready(if this.target == 0 {
                Ok(())
            } else {
                Err(WaitError::Failed)
            });
        };
        let check =
            |w: &OffsetWatch, deadline: Instant, target: u64| -> Option<Result<(), WaitError>> {
                if w.value.load(Ordering::SeqCst) >= target {
                    Some(Ok(()))
                } else if w.is_failed() {
                    Some(Err(WaitError::Failed))
                } else if Instant::now() >= deadline {
                    Some(Err(WaitError::Timeout))
                } else {
                    None
                }
            };
        if let Some(r) = check(&watch, this.deadline, this.target) {
            this.unregister();
            return Poll::Ready(r);
        }
        {
            let mut w = watch.waiters.lock();
            match this.id {
                Some(id) => match w.list.iter_mut().find(|e| e.id == id) {
                    Some(e) => e.waker.clone_from(cx.waker()),
                    None => w.list.push(Entry {
                        id,
                        target: this.target,
                        deadline: this.deadline,
                        waker: cx.waker().clone(),
                    }),
                },
                None => {
                    let id = w.next_id;
                    w.next_id += 1;
                    this.id = Some(id);
                    watch.interest.fetch_add(1, Ordering::SeqCst);
                    w.list.push(Entry {
                        id,
                        target: this.target,
                        deadline: this.deadline,
                        waker: cx.waker().clone(),
                    });
                }
            }
        }
        // Re-check after registering, so an `advance` racing with us is not lost.
        if let Some(r) = check(&watch, this.deadline, this.target) {
            this.unregister();
            return Poll::Ready(r);
        }
        Poll::Pending
    }
}

impl Drop for WaitOffset {
    fn drop(&mut self) {
        self.unregister();
    }
}

/// Minimal executor for tests and benches: polls `fut` on the current thread.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    struct ThreadWaker(std::thread::Thread);
    impl std::task::Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_on_advance_times_out_and_fails() {
        let w = Arc::new(OffsetWatch::new(0));
        let w2 = Arc::clone(&w);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            w2.advance(100);
        });
        assert_eq!(block_on(w.wait(100, Duration::from_secs(5))), Ok(()));
        t.join().unwrap();
        assert_eq!(w.waiter_count(), 0);

        let fut = w.wait(200, Duration::from_millis(10));
        let w3 = Arc::clone(&w);
        let t = std::thread::spawn(move || {
            for _ in 0..100 {
                std::thread::sleep(Duration::from_millis(5));
                w3.expire(Instant::now());
            }
        });
        assert_eq!(block_on(fut), Err(WaitError::Timeout));
        t.join().unwrap();

        w.fail();
        assert_eq!(
            block_on(w.wait(300, Duration::from_secs(5))),
            Err(WaitError::Failed)
        );
        assert_eq!(
            block_on(w.wait(50, Duration::from_secs(5))),
            Ok(()),
            "already reached wins"
        );
        assert_eq!(w.waiter_count(), 0);
    }

    #[test]
    fn blocking_wait() {
        let w = Arc::new(OffsetWatch::new(5));
        assert_eq!(w.wait_blocking(3, Duration::from_secs(1)), 5);
        let w2 = Arc::clone(&w);
        let t = std::thread::spawn(move || w2.wait_blocking(10, Duration::from_secs(5)));
        std::thread::sleep(Duration::from_millis(20));
        w.advance(12);
        assert_eq!(t.join().unwrap(), 12);
        assert_eq!(w.wait_blocking(100, Duration::from_millis(10)), 12);
    }
}
