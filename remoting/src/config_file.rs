//! Crash-safe small files: the whole content is written to `<file>.tmp`, synced, the
//! previous version kept as `<file>.bak`, then renamed over `<file>` and the directory
//! synced. A crash at any point leaves either the old or the new file, and a reader
//! that finds `<file>` missing or corrupt falls back to `<file>.bak`
//! (RocketMQ's `MixAll.string2File` keeps the same `.bak`).
//!
//! Shared by the name server (kvConfig.json) and the broker (topics.json,
//! consumerOffset.json, delayOffset.json, subscriptionGroup.json).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tracing::warn;

/// A config file could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// Reading, writing, syncing or renaming failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// Cause.
        source: io::Error,
    },
    /// A write (made by another thread on our behalf) failed; the reason is its error.
    #[error("cannot write {path}: {reason}")]
    WriteFailed {
        /// The file.
        path: PathBuf,
        /// The writer's error.
        reason: String,
    },
    /// Neither the file nor its `.bak` holds a valid table.
    #[error("{path} is corrupt and has no usable .bak: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Why it was refused.
        reason: String,
    },
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path
        .file_name()
        .map(std::ffi::OsStr::to_os_string)
        .unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

/// `<file>.bak`.
#[must_use]
pub fn backup_path(path: &Path) -> PathBuf {
    sibling(path, ".bak")
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> ConfigFileError + 'a {
    move |source| ConfigFileError::Io {
        op,
        path: path.to_owned(),
        source,
    }
}

fn sync_dir(dir: &Path) -> Result<(), ConfigFileError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("sync directory", dir))
}

/// Replaces `path` with `content` atomically, keeping the previous content as `.bak`.
///
/// # Errors
/// Any failed create, write, sync or rename; the previous file is then unchanged.
pub fn write_atomic(path: &Path, content: &[u8]) -> Result<(), ConfigFileError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).map_err(io_err("create directory", &dir))?;
    let tmp = sibling(path, ".tmp");
    {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(io_err("create", &tmp))?;
        file.write_all(content).map_err(io_err("write", &tmp))?;
        file.sync_all().map_err(io_err("sync", &tmp))?;
    }
    if path.exists() {
        let bak = backup_path(path);
        // Copy, not rename: `path` must exist at every instant.
        fs::copy(path, &bak).map_err(io_err("back up", path))?;
        File::open(&bak)
            .and_then(|f| f.sync_all())
            .map_err(io_err("sync", &bak))?;
    }
    fs::rename(&tmp, path).map_err(io_err("rename", &tmp))?;
    sync_dir(&dir)
}

/// Reads `path`, falling back to `path.bak` when it is missing or `parse` refuses it.
/// Returns `None` when neither file exists.
///
/// # Errors
/// A file exists but cannot be read, or neither file parses.
pub fn read_with_backup<T>(
    path: &Path,
    parse: impl Fn(&[u8]) -> Result<T, String>,
) -> Result<Option<T>, ConfigFileError> {
    let bak = backup_path(path);
    let mut reason = None;
    for candidate in [path, bak.as_path()] {
        match fs::read(candidate) {
            Ok(bytes) => match parse(&bytes) {
                Ok(value) => {
                    if candidate != path {
                        // When neither parses, the error says so: no warning then.
                        if let Some(why) = &reason {
                            warn!(file = %path.display(), error = %why, "file does not parse; loaded the .bak copy");
                        } else {
                            warn!(file = %path.display(), "file missing; loaded the .bak copy");
                        }
                    }
                    return Ok(Some(value));
                }
                Err(e) => {
                    reason.get_or_insert(e);
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("read", candidate)(e)),
        }
    }
    match reason {
        None => Ok(None),
        Some(reason) => Err(ConfigFileError::Corrupt {
            path: path.to_owned(),
            reason,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(b: &[u8]) -> Result<String, String> {
        let s = std::str::from_utf8(b).map_err(|e| e.to_string())?;
        if s.starts_with("ok") {
            Ok(s.to_owned())
        } else {
            Err(format!("bad: {s}"))
        }
    }

    #[test]
    fn write_keeps_bak_and_read_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/kv.json");
        assert!(read_with_backup(&path, parse).unwrap().is_none());
        write_atomic(&path, b"ok1").unwrap();
        assert!(!backup_path(&path).exists());
        write_atomic(&path, b"ok2").unwrap();
        assert_eq!(fs::read(backup_path(&path)).unwrap(), b"ok1");
        assert_eq!(
            read_with_backup(&path, parse).unwrap().as_deref(),
            Some("ok2")
        );
        assert!(!sibling(&path, ".tmp").exists());

        // Corrupt main file: the .bak is used.
        fs::write(&path, b"garbage").unwrap();
        assert_eq!(
            read_with_backup(&path, parse).unwrap().as_deref(),
            Some("ok1")
        );
        // Missing main file: the .bak is used.
        fs::remove_file(&path).unwrap();
        assert_eq!(
            read_with_backup(&path, parse).unwrap().as_deref(),
            Some("ok1")
        );
        // Both corrupt: an error naming the file.
        fs::write(&path, b"x").unwrap();
        fs::write(backup_path(&path), b"y").unwrap();
        let e = read_with_backup(&path, parse).unwrap_err();
        assert!(matches!(e, ConfigFileError::Corrupt { .. }), "{e}");
    }

    #[test]
    fn write_into_unwritable_place_fails_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        fs::write(&blocker, b"").unwrap();
        // A path under a regular file cannot be created.
        assert!(write_atomic(&blocker.join("kv.json"), b"ok").is_err());
    }
}
