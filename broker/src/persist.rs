//! The broker's JSON config files under `<storePathRootDir>/config/`, in RocketMQ's
//! formats (fastjson bare keys), written crash-safely through `remoting::config_file`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use remoting::config_file::{self, ConfigFileError};
use remoting::fastjson::{self, KeyStyle};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tracing::error;

/// `topics.json`.
pub const TOPICS_JSON: &str = "topics.json";
/// `subscriptionGroup.json`.
pub const SUBSCRIPTION_GROUP_JSON: &str = "subscriptionGroup.json";
/// `consumerOffset.json`.
pub const CONSUMER_OFFSET_JSON: &str = "consumerOffset.json";
/// `delayOffset.json`.
pub const DELAY_OFFSET_JSON: &str = "delayOffset.json";
/// POP/PULL modes of groups (RocketMQ 5).
pub const MESSAGE_REQUEST_MODE_JSON: &str = "messageRequestMode.json";
/// Orderly POP batches (RocketMQ 5).
pub const CONSUMER_ORDER_INFO_JSON: &str = "consumerOrderInfo.json";

/// `<root>/config/<name>`.
#[must_use]
pub fn config_path(store_root: &Path, name: &str) -> PathBuf {
    store_root.join("config").join(name)
}

/// Loads a table, falling back to its `.bak`; `None` when neither file exists.
///
/// # Errors
/// A file exists but neither it nor its `.bak` parses.
pub fn load<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, ConfigFileError> {
    config_file::read_with_backup(path, |bytes| {
        fastjson::from_slice::<T>(bytes).map_err(|e| e.to_string())
    })
}

/// Writes a table atomically in fastjson's form.
///
/// # Errors
/// Serialisation or any I/O step failed; the previous file is then unchanged.
pub fn save<T: Serialize>(path: &Path, value: &T) -> Result<(), ConfigFileError> {
    config_file::write_atomic(path, &encode(path, value)?)
}

/// The bytes [`save`] writes.
///
/// # Errors
/// Serialisation failed.
pub fn encode<T: Serialize>(path: &Path, value: &T) -> Result<Vec<u8>, ConfigFileError> {
    fastjson::to_vec(value, KeyStyle::Fastjson).map_err(|e| ConfigFileError::Corrupt {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

/// Group commit for one config file: the only thread that writes it. A change asks for a
/// write ([`GroupWriter::request`]) and waits for the first write that started after it,
/// so a burst of changes — topics created sixteen at a time — costs one write per burst
/// instead of one rewrite of the whole file per change (which made topic creation
/// quadratic in the topic count).
pub struct GroupWriter {
    shared: Arc<WriterShared>,
}

struct WriterShared {
    state: Mutex<WriterState>,
    wrote: Condvar,
    written: watch::Sender<u64>,
}

#[derive(Default)]
struct WriterState {
    requested: u64,
    written: u64,
    /// The outcome of the latest write (it covers every generation up to `written`).
    last_error: Option<Arc<ConfigFileError>>,
    stop: bool,
}

impl std::fmt::Debug for GroupWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.shared.state.lock();
        f.debug_struct("GroupWriter")
            .field("requested", &st.requested)
            .field("written", &st.written)
            .finish_non_exhaustive()
    }
}

impl GroupWriter {
    /// Starts the writer thread `name`; `write` writes the file's current content.
    ///
    /// # Errors
    /// The thread could not be spawned.
    pub fn start(
        name: &str,
        write: impl Fn() -> Result<(), ConfigFileError> + Send + 'static,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(WriterShared {
            state: Mutex::new(WriterState::default()),
            wrote: Condvar::new(),
            written: watch::channel(0).0,
        });
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || thread_shared.run(&write))?;
        Ok(GroupWriter { shared })
    }

    /// Records a change made before this call; returns the generation whose write covers it.
    #[must_use]
    pub fn request(&self) -> u64 {
        let mut st = self.shared.state.lock();
        st.requested += 1;
        let generation = st.requested;
        drop(st);
        self.shared.wrote.notify_all();
        generation
    }

    /// Blocks until `generation` is written.
    ///
    /// # Errors
    /// The latest write covering it failed (the reason).
    pub fn wait(&self, generation: u64) -> Result<(), WriteError> {
        let mut st = self.shared.state.lock();
        while st.written < generation && !st.stop {
            self.shared.wrote.wait(&mut st);
        }
        outcome(&st, generation)
    }

    /// [`GroupWriter::wait`] without blocking a thread.
    ///
    /// # Errors
    /// As [`GroupWriter::wait`].
    pub async fn written(&self, generation: u64) -> Result<(), WriteError> {
        let mut rx = self.shared.written.subscribe();
        // The sender lives as long as `self`; a closed channel only means we are stopping.
        let _ = rx.wait_for(|w| *w >= generation).await;
        outcome(&self.shared.state.lock(), generation)
    }
}

fn outcome(st: &WriterState, generation: u64) -> Result<(), WriteError> {
    if st.written < generation {
        return Err(WriteError::Stopped);
    }
    st.last_error
        .clone()
        .map_or(Ok(()), |e| Err(WriteError::Failed(e)))
}

/// Why a change a [`GroupWriter`] was asked to write is not on disk.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The writer stopped first.
    #[error("stopped before the change was written")]
    Stopped,
    /// The write that covered it failed.
    #[error(transparent)]
    Failed(Arc<ConfigFileError>),
}

impl WriterShared {
    fn run(&self, write: &dyn Fn() -> Result<(), ConfigFileError>) {
        loop {
            let target = {
                let mut st = self.state.lock();
                while st.requested == st.written && !st.stop {
                    self.wrote.wait(&mut st);
                }
                if st.stop && st.requested == st.written {
                    return;
                }
                st.requested
            };
            let result = write().map_err(Arc::new);
            if let Err(e) = &result {
                error!(error = %e, "cannot write a config file");
            }
            let mut st = self.state.lock();
            st.written = target;
            st.last_error = result.err();
            drop(st);
            self.wrote.notify_all();
            self.written.send_replace(target);
        }
    }
}

impl Drop for GroupWriter {
    /// Lets the thread finish the writes asked for, then end.
    fn drop(&mut self) {
        self.shared.state.lock().stop = true;
        self.shared.wrote.notify_all();
    }
}
