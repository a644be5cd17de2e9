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
        if self
            .running
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        *self.task.lock() = Some(spawn());
        true
    }

    /// Aborts the task if the service was running; false if it was not.
    pub fn stop(&self) -> bool {
        if self
            .running
            .compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        if let Some(task) = self.task.lock().take() {
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
}
