//! The disk's sequential-write ceiling measured the same day and the criterion results
//! found in `target/criterion` (the machine itself: [`crate::machine`]).

use crate::spawn::GatedCommand;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Sequential-write ceilings of the store's disk, MiB/s.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DiskCeiling {
    /// `dd bs=1M oflag=direct` (no page cache): what the device takes.
    pub direct_mib_s: f64,
    /// `dd bs=1M conv=fdatasync` (through the page cache, one sync at the end).
    pub buffered_mib_s: f64,
    /// Bytes written by each.
    pub bytes: u64,
    /// Mean time of one 4 KiB write + sync (`dd bs=4k oflag=dsync`), ms: the floor of a
    /// sync-flush round trip.
    #[serde(default)]
    pub sync_write_ms: f64,
}

/// Measures the disk under `dir` with `dd` (a file of `bytes`, removed after each pass).
#[must_use]
pub fn disk_ceiling(dir: &Path, bytes: u64) -> DiskCeiling {
    let file = dir.join("sluice-bench-dd.tmp");
    let count = (bytes >> 20).max(1).to_string();
    let pass = |flag: &str| -> f64 {
        let started = Instant::now();
        let ok = Command::new("dd")
            .arg("if=/dev/zero")
            .arg(format!("of={}", file.display()))
            .arg("bs=1M")
            .arg(format!("count={count}"))
            .arg(flag)
            .gated_output()
            .is_ok_and(|o| o.status.success());
        let secs = started.elapsed().as_secs_f64();
        let _ = fs::remove_file(&file);
        if ok {
            #[allow(clippy::cast_precision_loss, reason = "a rate")]
            let mib = (bytes >> 20).max(1) as f64;
            mib / secs.max(1e-6)
        } else {
            0.0
        }
    };
    let direct_mib_s = pass("oflag=direct");
    let buffered_mib_s = pass("conv=fdatasync");
    let syncs = 500u32;
    let started = Instant::now();
    let ok = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", file.display()))
        .arg("bs=4k")
        .arg(format!("count={syncs}"))
        .arg("oflag=dsync")
        .gated_output()
        .is_ok_and(|o| o.status.success());
    let sync_write_ms = if ok {
        started.elapsed().as_secs_f64() * 1000.0 / f64::from(syncs)
    } else {
        0.0
    };
    let _ = fs::remove_file(&file);
    DiskCeiling {
        direct_mib_s,
        buffered_mib_s,
        bytes,
        sync_write_ms,
    }
}

/// One criterion benchmark's latest estimate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CriterionResult {
    /// `group/function/parameter`.
    pub id: String,
    /// Mean in nanoseconds.
    pub mean_ns: f64,
    /// Throughput per iteration, when the benchmark declared one (`bytes` / `elements`).
    pub throughput: Option<String>,
}

/// Every `new/estimates.json` under `dir` (criterion's output, `target/criterion`).
#[must_use]
pub fn criterion_results(dir: &Path) -> Vec<CriterionResult> {
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<CriterionResult>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|n| n == "new") {
            let estimates = fs::read_to_string(path.join("estimates.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
            let Some(mean) = estimates.and_then(|e| e["mean"]["point_estimate"].as_f64()) else {
                continue;
            };
            let bench = fs::read_to_string(path.join("benchmark.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
            let id = bench
                .as_ref()
                .and_then(|b| b["full_id"].as_str().map(str::to_owned))
                .unwrap_or_else(|| dir.strip_prefix(root).unwrap_or(dir).display().to_string());
            let throughput = bench.as_ref().and_then(|b| {
                let t = &b["throughput"];
                t["Bytes"]
                    .as_u64()
                    .map(|n| format!("{n} bytes"))
                    .or_else(|| t["Elements"].as_u64().map(|n| format!("{n} elements")))
            });
            out.push(CriterionResult {
                id,
                mean_ns: mean,
                throughput,
            });
        } else if path
            .file_name()
            .is_none_or(|n| n != "base" && n != "report")
        {
            walk(root, &path, out);
        }
    }
}

/// Criterion summary lines, one per benchmark.
#[must_use]
pub fn criterion_table(results: &[CriterionResult]) -> BTreeMap<String, String> {
    results
        .iter()
        .map(|r| {
            let time = if r.mean_ns >= 1e6 {
                format!("{:.2} ms", r.mean_ns / 1e6)
            } else if r.mean_ns >= 1e3 {
                format!("{:.2} µs", r.mean_ns / 1e3)
            } else {
                format!("{:.1} ns", r.mean_ns)
            };
            (r.id.clone(), time)
        })
        .collect()
}
