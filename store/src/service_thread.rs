//! The thread every background service of the store runs on: a named std thread with a
//! stop flag and a cheap wake-up ([`ServiceControl`]), stopped and joined on drop. The
//! store's services sleep on a condition or an interval, as RocketMQ's `ServiceThread`s
//! do; this is the one place that knows how they start, wake and stop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tracing::{debug, error, info_span};

use crate::error::{Result, StoreError};

/// Stop flag plus a condvar wake-up that costs one atomic swap when already pending.
#[derive(Debug, Default)]
pub(crate) struct ServiceControl {
    stopped: AtomicBool,
    notified: AtomicBool,
    lock: Mutex<()>,
    cvar: Condvar,
}

impl ServiceControl {
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Wakes the service if it is waiting (or makes its next wait return at once).
    pub(crate) fn wakeup(&self) {
        if !self.notified.swap(true, Ordering::AcqRel) {
            let _g = self.lock.lock();
            self.cvar.notify_one();
        }
    }

    /// Waits until woken, stopped, or `timeout`.
    pub(crate) fn wait(&self, timeout: Duration) {
        if self.notified.swap(false, Ordering::AcqRel) {
            return;
        }
        let mut g = self.lock.lock();
        if self.notified.swap(false, Ordering::AcqRel) || self.is_stopped() {
            return;
        }
        self.cvar.wait_for(&mut g, timeout);
        self.notified.store(false, Ordering::Release);
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        self.notified.store(false, Ordering::Release);
        self.wakeup();
    }
}

/// Wakes a service that sleeps on something other than its [`ServiceControl`].
pub(crate) type Nudge = Box<dyn Fn() + Send>;

/// A named thread with a [`ServiceControl`]; stopping sets the flag, wakes and joins.
pub(crate) struct ServiceThread {
    name: &'static str,
    ctl: Arc<ServiceControl>,
    nudge: Option<Nudge>,
    handle: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ServiceThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceThread")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ServiceThread {
    pub(crate) fn spawn(
        name: &'static str,
        ctl: Arc<ServiceControl>,
        body: impl FnOnce(&ServiceControl) + Send + 'static,
    ) -> Result<Self> {
        let c = Arc::clone(&ctl);
        let handle = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let span = info_span!("service", service = name);
                let _e = span.enter();
                debug!("service started");
                body(&c);
                debug!("service stopped");
            })
            .map_err(|e| StoreError::io("spawn", name, e))?;
        Ok(ServiceThread {
            name,
            ctl,
            nudge: None,
            handle: Some(handle),
        })
    }

    /// Also runs `nudge` when stopping, after the stop flag is set.
    pub(crate) fn with_nudge(mut self, nudge: Nudge) -> Self {
        self.nudge = Some(nudge);
        self
    }

    pub(crate) fn stop(&mut self) {
        self.ctl.stop();
        if let Some(n) = &self.nudge {
            n();
        }
        if let Some(h) = self.handle.take() {
            if h.join().is_err() {
                error!(service = self.name, "service thread panicked");
            }
        }
    }
}

impl Drop for ServiceThread {
    fn drop(&mut self) {
        self.stop();
    }
}
