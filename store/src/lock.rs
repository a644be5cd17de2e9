//! The store lock: one process per `storePathRootDir`.
//!
//! Two brokers writing one store each believe they own the CommitLog's tail; both
//! acknowledge their puts and overwrite each other's. RocketMQ takes a lock on
//! `<storePathRootDir>/lock`; so do we, before anything in the store is read or written,
//! and hold it until the store is dropped (for a broker: the process's life).
//!
//! The lock is taken twice on one open file: `flock` (excludes another sluice process)
//! and a POSIX record lock over the whole file (`fcntl(F_SETLK)`, the kind Java's
//! `FileChannel.tryLock` takes, so an Apache broker on the same directory is refused too,
//! and refuses us). A POSIX lock is dropped when the process closes *any* descriptor of
//! the file, so this process never opens the lock file of a store it already holds: a
//! table of held paths answers a second open in the same process before it touches the
//! file. The holder writes its pid into the file, so the refused one can name it.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rustix::fs::FlockOperation;

/// Name of the lock file in the store's root directory (RocketMQ's).
pub const LOCK_FILE: &str = "lock";

/// Store roots this process holds the lock of.
static HELD: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Why the store lock was not taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Another process (or another store of this process) holds it.
    #[error("{} is locked by another broker{}: one store, one broker (storePathRootDir)", path.display(), holder_text(*holder))]
    Held {
        /// The lock file.
        path: PathBuf,
        /// The holder's pid, when it wrote one.
        holder: Option<u32>,
    },
    /// The lock file cannot be created or locked.
    #[error("cannot lock {}: {source}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

fn holder_text(holder: Option<u32>) -> String {
    match holder {
        Some(pid) if pid == std::process::id() => " (this process)".to_owned(),
        Some(pid) => format!(" (pid {pid})"),
        None => String::new(),
    }
}

/// The held lock of one store; released when dropped.
#[derive(Debug)]
pub struct StoreLock {
    /// Kept open: closing it releases both locks.
    _file: File,
    root: PathBuf,
}

impl StoreLock {
    /// Takes the lock of the store rooted at `root` (which must exist), without waiting.
    ///
    /// # Errors
    /// [`LockError::Held`] when another process or another store of this process holds
    /// it, [`LockError::Io`] when the file cannot be created or locked.
    pub fn acquire(root: &Path) -> Result<Self, LockError> {
        let path = root.join(LOCK_FILE);
        let key = root.canonicalize().map_err(|source| LockError::Io {
            path: path.clone(),
            source,
        })?;
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        let held = held.get_or_insert_with(HashSet::new);
        if held.contains(&key) {
            return Err(LockError::Held {
                path,
                holder: Some(std::process::id()),
            });
        }
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let locked = rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive)
            .and_then(|()| rustix::fs::fcntl_lock(&file, FlockOperation::NonBlockingLockExclusive));
        match locked {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::WOULDBLOCK || e == rustix::io::Errno::ACCESS => {
                return Err(LockError::Held {
                    holder: read_pid(&mut file),
                    path,
                });
            }
            Err(e) => return Err(io(e.into())),
        }
        // The pid is informational: a failure to write it leaves the lock held.
        let _ = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()));
        held.insert(key.clone());
        Ok(StoreLock {
            _file: file,
            root: key,
        })
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // The descriptor closes after this (field drop), which releases the locks; the
        // path leaves the table first so a reopen right after cannot be refused by it.
        if let Some(held) = HELD.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            held.remove(&self.root);
        }
    }
}

/// The pid a holder wrote into the lock file, if any.
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_of_one_store_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = StoreLock::acquire(dir.path()).unwrap();
        let err = StoreLock::acquire(dir.path()).unwrap_err();
        assert!(
            matches!(err, LockError::Held { holder: Some(pid), .. } if pid == std::process::id()),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains("lock") && text.contains("this process"),
            "{text}"
        );
        // The refused attempt did not release the first one's lock.
        let pid = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());
        drop(first);
        let again = StoreLock::acquire(dir.path());
        assert!(again.is_ok(), "{again:?}");
    }

    #[test]
    fn a_missing_root_is_an_io_error_naming_the_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"x").unwrap();
        let err = StoreLock::acquire(&file.join("store")).unwrap_err();
        assert!(matches!(err, LockError::Io { .. }), "{err:?}");
        assert!(err.to_string().contains("a-file/store/lock"), "{err}");
    }
}
