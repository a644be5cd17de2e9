//! What a driver's run ran on: CPU, memory, disk, kernel, toolchains, load — recorded in the
//! results of `bench` and `reliability` alike.

use crate::spawn::GatedCommand;
use std::fs;
use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

/// The machine, as recorded in the results.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Machine {
    /// `lscpu` model name.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus: usize,
    /// MemTotal in MiB.
    pub memory_mib: u64,
    /// MemAvailable in MiB when the run started.
    pub memory_available_mib: u64,
    /// `uname -srm`.
    pub kernel: String,
    /// The store file system: device, type, size (`df -hT`).
    pub disk: String,
    /// Block device model / rotational flag, when known.
    pub disk_device: String,
    /// `java -version`, first line.
    pub java: String,
    /// `rustc --version`.
    pub rustc: String,
    /// Load average when the run started.
    pub loadavg: String,
}

fn run(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .gated_output()
        .ok()
        .map(|o| {
            let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.push_str(&String::from_utf8_lossy(&o.stderr));
            s.trim().to_owned()
        })
        .unwrap_or_default()
}

fn meminfo_mib(key: &str) -> u64 {
    fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0)
        / 1024
}

/// Available memory in bytes now.
#[must_use]
pub fn available_bytes() -> u64 {
    meminfo_mib("MemAvailable:") << 20
}

/// Describes this machine; `store_root` is where the stores go.
#[must_use]
pub fn describe(store_root: &Path) -> Machine {
    let lscpu = run("lscpu", &[]);
    let cpu_model = lscpu
        .lines()
        .find_map(|l| l.strip_prefix("Model name:"))
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let df = run("df", &["-hT", &store_root.display().to_string()]);
    let disk = df.lines().nth(1).unwrap_or_default().to_owned();
    let device = disk
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    let dev_name = device.trim_start_matches("/dev/").to_owned();
    let rotational = fs::read_to_string(format!("/sys/block/{dev_name}/queue/rotational"))
        .map(|s| {
            if s.trim() == "0" {
                "non-rotational"
            } else {
                "rotational"
            }
        })
        .unwrap_or("unknown");
    let model = fs::read_to_string(format!("/sys/block/{dev_name}/device/model"))
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    Machine {
        cpu_model,
        cpus: std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
        memory_mib: meminfo_mib("MemTotal:"),
        memory_available_mib: meminfo_mib("MemAvailable:"),
        kernel: run("uname", &["-srm"]),
        disk,
        disk_device: format!("{device} {model} ({rotational})").trim().to_owned(),
        java: run("java", &["-version"])
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
        rustc: run("rustc", &["--version"]),
        loadavg: fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
            .to_owned(),
    }
}
