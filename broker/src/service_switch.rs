//! Start/stop of a master-only background service (the schedule service, the transaction
//! check-back service) through one atomic flag: role switches call both repeatedly and
//! concurrently, and exactly one start wins until a stop, so one task at most runs.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::task::JoinHandle;

/// The flag and the running task of one service.
#[derive(Debug, Default)]
pub struct ServiceSwitch {
    running: AtomicBool,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl ServiceSwitch {
    /// Whether the service runs.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// Runs `spawn` (which starts the task) if the service was stopped; false if it was
    /// already running (and `spawn` is not called).
    pub fn start(&self, spawn: impl FnOnce() -> JoinHandle<()>) -> bool {
        // The task slot is held across flip and spawn, so a racing stop finds the task.
        let mut task = self.task.lock();
        if self
            .running
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        *task = Some(spawn());
        true
    }

    /// Aborts the task if the service was running; false if it was not.
    pub fn stop(&self) -> bool {
        let mut task = self.task.lock();
        if self
            .running
            .compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        if let Some(task) = task.take() {
            task.abort();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_start_wins_until_a_stop() {
        let switch = ServiceSwitch::default();
        assert!(!switch.stop());
        assert!(switch.start(|| tokio::spawn(std::future::pending())));
        assert!(!switch.start(|| unreachable!("already running")));
        assert!(switch.is_running());
        assert!(switch.stop());
        assert!(!switch.stop());
        assert!(switch.start(|| tokio::spawn(async {})));
    }

    /// Starts and stops racing from several threads never leave a task running while
    /// the switch says stopped.
    #[test]
    fn racing_starts_and_stops_leave_no_orphan_task() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let switch = std::sync::Arc::new(ServiceSwitch::default());
        let alive = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..4 {
                let (switch, alive, handle) = (&switch, &alive, rt.handle().clone());
                s.spawn(move || {
                    for i in 0..2_000 {
                        if i % 2 == 0 {
                            switch.start(|| {
                                let alive = std::sync::Arc::clone(alive);
                                handle.spawn(async move {
                                    struct Live(std::sync::Arc<std::sync::atomic::AtomicUsize>);
                                    impl Drop for Live {
                                        fn drop(&mut self) {
                                            self.0.fetch_sub(1, Ordering::SeqCst);
                                        }
                                    }
                                    alive.fetch_add(1, Ordering::SeqCst);
                                    let _live = Live(alive);
                                    std::future::pending::<()>().await;
                                })
                            });
                        } else {
                            switch.stop();
                        }
                    }
                });
            }
        });
        switch.stop();
        // Aborted tasks drop their futures on the runtime; give it a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while alive.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(
            alive.load(Ordering::SeqCst),
            0,
            "a task outlived every stop"
        );
    }
}
