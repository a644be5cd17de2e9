//! What the two drivers (`bench`, `reliability`) do the same way before they run anything:
//! find the workspace, build our binaries in the driver's own profile, copy them aside (others
//! may rebuild `target/` while a long run goes on), and describe the build and the time for
//! the page they render.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Our binaries a driver runs.
pub const BINARIES: [&str; 4] = ["mqnamesrv", "mqbroker", "mqadmin", "mqbench"];

/// The workspace root (the parent of `integration-tests/`).
#[must_use]
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_owned)
}

/// Runs `program args`, returns its trimmed stdout (empty when it cannot run).
#[must_use]
pub fn sh(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// The directory holding the running program (`target/<profile>`).
#[must_use]
pub fn own_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_owned))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// `date -u +FORMAT`.
#[must_use]
pub fn utc_now(format: &str) -> String {
    sh("date", &["-u", format])
}

/// Builds mqnamesrv, mqbroker, mqadmin, mqbench in the profile `bin_dir` belongs to;
/// `who` names the driver in its progress line.
///
/// # Errors
/// cargo cannot run or the build fails (its stderr).
pub fn build_binaries(bin_dir: &Path, who: &str) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace_root()).args([
        "build",
        "--bins",
        "-p",
        "nameserver",
        "-p",
        "broker",
        "-p",
        "tools",
    ]);
    match bin_dir.file_name().and_then(|n| n.to_str()) {
        Some("release") => {
            cmd.arg("--release");
        }
        Some("debug") | None => {}
        Some(other) => {
            cmd.args(["--profile", other]);
        }
    }
    if let Some(target) = bin_dir.parent() {
        cmd.arg("--target-dir").arg(target);
    }
    eprintln!("{who}: building the binaries ({cmd:?})");
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
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

/// The workspace's short commit (empty outside a git checkout).
#[must_use]
pub fn commit() -> String {
    sh(
        "git",
        &[
            "-C",
            &workspace_root().display().to_string(),
            "rev-parse",
            "--short",
            "HEAD",
        ],
    )
}

/// "`abc1234`, profile `release`", with the number of uncommitted files in the server and
/// tool crates when there are some: what the figures were measured on.
#[must_use]
pub fn build_description(profile: &str) -> String {
    let root = workspace_root().display().to_string();
    let dirty = sh(
        "git",
        &[
            "-C",
            &root,
            "status",
            "--porcelain",
            "--",
            "remoting",
            "store",
            "ha",
            "nameserver",
            "broker",
            "tools",
        ],
    )
    .lines()
    .count();
    format!(
        "`{}`{}, profile `{profile}`",
        commit(),
        if dirty > 0 {
            format!(" + {dirty} uncommitted file(s) in the server/tool crates")
        } else {
            String::new()
        },
    )
}
