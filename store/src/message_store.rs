//! `MessageStore`: the store as the broker sees it. Owns the root directory, the
//! `checkpoint`, the `abort` marker (present while running, so its presence at start
//! means the last run crashed) and the CommitLog. Consume queues, index, dispatch and
//! cleanup join it in later issues.

use std::fs::{self, OpenOptions};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing::info;

use crate::checkpoint::Checkpoint;
use crate::commit_log::CommitLog;
use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::mapped_file::sync_dir;

/// The message store.
#[derive(Debug)]
pub struct MessageStore {
    config: StoreConfig,
    checkpoint: Arc<Checkpoint>,
    commit_log: CommitLog,
    shut_down: AtomicBool,
}

impl MessageStore {
    /// Opens (or creates) the store under `config.store_path_root_dir`: recovers
    /// abnormally if an `abort` file is left from a crash, then creates `abort`.
    ///
    /// # Errors
    /// Invalid config, unreadable or inconsistent files, or I/O errors.
    pub fn open(mut config: StoreConfig) -> Result<Self> {
        config.sanitize()?;
        let root = config.store_path_root_dir.clone();
        fs::create_dir_all(&root).map_err(|e| StoreError::io("mkdir", &root, e))?;
        let abort = config.abort_path();
        let abnormal = abort.exists();
        info!(root = %root.display(), abnormal, "opening message store");
        let checkpoint = Arc::new(Checkpoint::open(&config.checkpoint_path())?);
        let commit_log = CommitLog::open(config.clone(), Arc::clone(&checkpoint), abnormal)?;
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&abort)
            .map_err(|e| StoreError::io("create", &abort, e))?;
        sync_dir(&root)?;
        Ok(MessageStore {
            config,
            checkpoint,
            commit_log,
            shut_down: AtomicBool::new(false),
        })
    }

    /// The CommitLog.
    #[must_use]
    pub fn commit_log(&self) -> &CommitLog {
        &self.commit_log
    }

    /// The checkpoint.
    #[must_use]
    pub fn checkpoint(&self) -> &Arc<Checkpoint> {
        &self.checkpoint
    }

    /// The (sanitized) configuration.
    #[must_use]
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Clean stop: final commit and flush, checkpoint written, `abort` removed.
    /// Idempotent; also run on drop.
    ///
    /// # Errors
    /// The checkpoint or the `abort` removal failed (the next start then recovers
    /// abnormally, which is safe).
    pub fn shutdown(&self) -> Result<()> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.commit_log.shutdown();
        if let Some(reason) = self.commit_log.poisoned() {
            // Leave `abort` in place: the next start must validate everything.
            info!(
                reason,
                "store was poisoned; keeping abort file for abnormal recovery"
            );
            return Ok(());
        }
        self.checkpoint.flush()?;
        let abort = self.config.abort_path();
        fs::remove_file(&abort).map_err(|e| StoreError::io("unlink", &abort, e))?;
        sync_dir(&self.config.store_path_root_dir)?;
        info!(root = %self.config.store_path_root_dir.display(), "message store shut down");
        Ok(())
    }
}

impl Drop for MessageStore {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::warn!(error = %e, "unclean message store shutdown");
        }
    }
}
