//! What the two drivers (`bench`, `reliability`) say the same way about a run: the build it
//! measured (commit, profile, uncommitted changes) and the time, for the page they render.
//! Building and copying the binaries is [`crate::harness::build`]'s.

use crate::spawn::GatedCommand;
use std::process::Command;

use crate::harness::build::workspace_root;

/// Runs `program args`, returns its trimmed stdout (empty when it cannot run).
#[must_use]
pub fn sh(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .gated_output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// `date -u +FORMAT`.
#[must_use]
pub fn utc_now(format: &str) -> String {
    sh("date", &["-u", format])
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
