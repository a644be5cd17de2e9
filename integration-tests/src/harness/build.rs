//! Our binaries, found or built: tests and drivers run `mqnamesrv`, `mqbroker`, `mqadmin` and
//! `mqbench` from the profile the running program was built in, built once per process.
//!
//! - [`binary`] builds a package's binaries once per test process (`cargo build --bins -p
//!   <package>`, same profile and target dir as the running test) and returns the path of one.
//!   Parallel test binaries may build at the same time: cargo's own lock on the build directory
//!   makes them take turns, and the second finds everything fresh. `SLUICE_SKIP_BUILD=1` skips
//!   the build (CI builds first); `SLUICE_BIN_DIR` points at prebuilt binaries, and so does
//!   [`use_bin_dir`] (a driver's copy of them).
//! - [`build_binaries`] and [`snapshot_binaries`] are the drivers' (`bench`, `reliability`):
//!   build all four in the driver's profile, then copy them aside, since others may rebuild
//!   `target/` while a long run goes on.

use crate::spawn::GatedCommand;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

/// Our binaries a driver runs.
pub const BINARIES: [&str; 4] = ["mqnamesrv", "mqbroker", "mqadmin", "mqbench"];

/// The workspace root (where `deploy/` is).
#[must_use]
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_owned)
}

/// `$CARGO_TARGET_DIR` (relative to the workspace when relative), else `<workspace>/target`:
/// where the test programs of the other languages are built too (`java-it/`, `go-it/`, ...).
#[must_use]
pub fn target_dir() -> PathBuf {
    let workspace = workspace_root();
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) if Path::new(&t).is_absolute() => PathBuf::from(t),
        Some(t) => workspace.join(t),
        None => workspace.join("target"),
    }
}

/// Prebuilt binaries set by [`use_bin_dir`].
static BIN_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Makes every child of this process run our binaries from `dir` (prebuilt: nothing is
/// built), as `SLUICE_BIN_DIR` does. The first call wins; returns whether it was this one.
pub fn use_bin_dir(dir: &Path) -> bool {
    BIN_DIR.set(dir.to_owned()).is_ok()
}

/// Where the binaries the tests run are: [`use_bin_dir`]'s, else `SLUICE_BIN_DIR`, else the
/// directory cargo put the running test's profile into (`target/debug`).
fn bin_dir() -> PathBuf {
    if let Some(dir) = BIN_DIR.get() {
        return dir.clone();
    }
    if let Some(dir) = std::env::var_os("SLUICE_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("path of the running test");
    // target/<profile>/deps/<test>-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("test binaries live in <target>/<profile>/deps")
        .to_owned()
}

/// Whether the binaries the tests run are an optimized build (`target/release`, or a
/// `SLUICE_BIN_DIR` of one): bounds that hold for what operators run are asserted as
/// they are only then.
#[must_use]
pub fn optimized_binaries() -> bool {
    bin_dir().file_name().is_some_and(|name| name != "debug")
}

/// The cargo flags that build into the profile directory `dir` (`target/<profile>`).
fn profile_args(dir: &Path) -> Vec<OsString> {
    match dir.file_name().and_then(OsStr::to_str) {
        Some("debug") | None => Vec::new(),
        Some("release") => vec!["--release".into()],
        Some(other) => vec!["--profile".into(), other.into()],
    }
}

fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"))
}

/// Packages whose binaries this process has built (or failed to build).
static BUILT: Mutex<Option<HashMap<String, Result<(), String>>>> = Mutex::new(None);

/// Builds `package`'s binaries once per test process.
///
/// # Panics
/// When cargo fails, with its output.
pub fn ensure_built(package: &str) {
    if std::env::var_os("SLUICE_SKIP_BUILD").is_some_and(|v| v == "1")
        || std::env::var_os("SLUICE_BIN_DIR").is_some()
        || BIN_DIR.get().is_some()
    {
        return;
    }
    // Held while building: other threads of this process wait for the same build.
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    let result = built
        .get_or_insert_with(HashMap::new)
        .entry(package.to_owned())
        .or_insert_with(|| cargo_build(package))
        .clone();
    if let Err(e) = result {
        panic!("cannot build the binaries of {package}:\n{e}");
    }
}

fn cargo_build(package: &str) -> Result<(), String> {
    let cargo = cargo();
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace_root())
        .args(["build", "--bins", "-p", package])
        .args(profile_args(&bin_dir()));
    let started = Instant::now();
    let out = cmd
        .gated_output()
        .map_err(|e| format!("cannot run {}: {e}", cargo.to_string_lossy()))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    tracing::debug!(package, elapsed = ?started.elapsed(), "binaries built");
    Ok(())
}

/// The path of binary `name` of `package`, built first if needed.
///
/// # Panics
/// When the build fails or the binary is not there afterwards.
#[must_use]
pub fn binary(package: &str, name: &str) -> PathBuf {
    ensure_built(package);
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "{} does not exist after building {package}",
        path.display()
    );
    path
}

/// The directory holding the running program (`target/<profile>`): where a driver finds the
/// binaries built with it.
#[must_use]
pub fn own_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_owned))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Builds mqnamesrv, mqbroker, mqadmin, mqbench in the profile `bin_dir` belongs to;
/// `who` names the driver in its progress line.
///
/// # Errors
/// cargo cannot run or the build fails (its stderr).
pub fn build_binaries(bin_dir: &Path, who: &str) -> Result<(), String> {
    let cargo = cargo();
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace_root())
        .args([
            "build",
            "--bins",
            "-p",
            "nameserver",
            "-p",
            "broker",
            "-p",
            "tools",
        ])
        .args(profile_args(bin_dir));
    if let Some(target) = bin_dir.parent() {
        cmd.arg("--target-dir").arg(target);
    }
    eprintln!("{who}: building the binaries ({cmd:?})");
    let out = cmd
        .gated_output()
        .map_err(|e| format!("cannot run {}: {e}", cargo.to_string_lossy()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cargo build failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Copies [`BINARIES`] (those present) from `bin_dir` to `<out>/bin` and returns that
/// directory.
///
/// # Errors
/// A directory cannot be created or a binary cannot be copied.
pub fn snapshot_binaries(bin_dir: &Path, out: &Path) -> Result<PathBuf, String> {
    let snapshot = out.join("bin");
    fs::create_dir_all(&snapshot).map_err(|e| format!("{}: {e}", snapshot.display()))?;
    for name in BINARIES {
        let from = bin_dir.join(name);
        if from.is_file() {
            fs::copy(&from, snapshot.join(name))
                .map_err(|e| format!("copy {}: {e}", from.display()))?;
        }
    }
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_directories_map_to_cargo_flags() {
        assert!(profile_args(Path::new("target/debug")).is_empty());
        assert_eq!(profile_args(Path::new("target/release")), ["--release"]);
        assert_eq!(profile_args(Path::new("/t/bench")), ["--profile", "bench"]);
        assert!(workspace_root().join("deploy").is_dir());
    }
}
