//! A size-limited scratch file system for the disk-full scenario: a tmpfs mounted on a fresh
//! temp dir (`mount -t tmpfs -o size=..`, root only), resizable (`-o remount,size=..`), and
//! unmounted on drop, on panic, and on Ctrl-C of the driver (every live mount is registered
//! with [`crate::procs::on_interrupt`]).

use crate::spawn::GatedCommand;
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::Duration;

/// Mount points alive right now.
static MOUNTS: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Why a mount failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountError {
    /// Not allowed here (not root, no CAP_SYS_ADMIN): the scenario is skipped.
    Permission(String),
    /// Anything else.
    Other(String),
}

impl fmt::Display for MountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MountError::Permission(m) => write!(f, "permission: {m}"),
            MountError::Other(m) => f.write_str(m),
        }
    }
}

/// A mounted tmpfs; unmounted (and its directory removed) when dropped.
#[derive(Debug)]
pub struct Tmpfs {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
}

fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .gated_output()
        .map_err(|e| format!("cannot run {}: {e}", args[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Tmpfs {
    /// Mounts a tmpfs of `size_mib` MiB on a new temp dir.
    ///
    /// # Errors
    /// [`MountError::Permission`] when the system refuses for lack of privilege, else
    /// [`MountError::Other`].
    pub fn mount(size_mib: u64) -> Result<Self, MountError> {
        crate::procs::on_interrupt(unmount_all);
        let dir = tempfile::Builder::new()
            .prefix("sluice-tmpfs-")
            .tempdir()
            .map_err(|e| MountError::Other(format!("temp dir: {e}")))?;
        let path = dir.path().to_owned();
        let size = format!("size={size_mib}m");
        let target = path.display().to_string();
        if let Err(e) = run(&["mount", "-t", "tmpfs", "-o", &size, "tmpfs", &target]) {
            let lower = e.to_lowercase();
            let permission = ["permission", "not permitted", "superuser", "only root"]
                .iter()
                .any(|w| lower.contains(w));
            return Err(if permission {
                MountError::Permission(e)
            } else {
                MountError::Other(e)
            });
        }
        MOUNTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path.clone());
        Ok(Tmpfs {
            dir: Some(dir),
            path,
        })
    }

    /// The mount point.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Changes its size (`mount -o remount,size=..`): more room for a full store.
    ///
    /// # Errors
    /// The remount fails.
    pub fn resize(&self, size_mib: u64) -> Result<(), String> {
        run(&[
            "mount",
            "-o",
            &format!("remount,size={size_mib}m"),
            &self.path.display().to_string(),
        ])
    }

    /// (used, total) bytes, from `statvfs`.
    #[must_use]
    pub fn usage(&self) -> Option<(u64, u64)> {
        let s = rustix::fs::statvfs(&self.path).ok()?;
        let total = s.f_blocks * s.f_frsize;
        let free = s.f_bfree * s.f_frsize;
        Some((total.saturating_sub(free), total))
    }
}

/// Unmounts `path`: a few tries (a process killed a moment ago may still hold files), then a
/// lazy unmount.
fn unmount(path: &Path) {
    let target = path.display().to_string();
    for _ in 0..20 {
        if run(&["umount", &target]).is_ok() {
            return;
        }
        thread::sleep(Duration::from_millis(100));
    }
    if let Err(e) = run(&["umount", "-l", &target]) {
        eprintln!("cannot unmount {target}: {e}");
    }
}

/// Unmounts every live [`Tmpfs`] and removes its mount point (the driver's interrupt hook).
pub fn unmount_all() {
    let all: Vec<PathBuf> = MOUNTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .cloned()
        .collect();
    for path in all {
        unmount(&path);
        let _ = std::fs::remove_dir(&path);
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        unmount(&self.path);
        MOUNTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.path);
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}
