//! Our `mqadmin` (the `tools` package), run as a command: what it printed and how it
//! exited ([`MqadminOutput`]), and the topic commands tests set clusters up with.

use crate::spawn::GatedCommand;
use std::fmt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::build::binary;

/// What our `mqadmin` printed.
#[derive(Debug)]
pub struct MqadminOutput {
    /// The arguments, for messages.
    pub args: Vec<String>,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// From spawn to exit.
    pub elapsed: Duration,
}

impl MqadminOutput {
    /// Panics with everything it printed unless it exited 0.
    #[track_caller]
    pub fn assert_ok(&self) -> &Self {
        assert!(self.status.success(), "{self}");
        self
    }

    /// The value of a `key: value` line (`switchRole` / `haStatus` print their JSON so).
    #[must_use]
    pub fn value(&self, key: &str) -> Option<&str> {
        self.stdout.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim())
        })
    }
}

impl fmt::Display for MqadminOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "mqadmin {} -> {} after {:?}",
            self.args.join(" "),
            self.status,
            self.elapsed
        )?;
        writeln!(f, "--- stdout\n{}", self.stdout.trim_end())?;
        writeln!(f, "--- stderr\n{}", self.stderr.trim_end())
    }
}

/// Creates (or updates) `topic` with `queues` read and write queues on every master of
/// DefaultCluster, with our `mqadmin updateTopic`.
///
/// # Panics
/// When the command fails.
pub fn create_topic(namesrv: &str, topic: &str, queues: u32) {
    update_topic(namesrv, ["-c", "DefaultCluster"], topic, queues).assert_ok();
}

/// `mqadmin updateTopic` on `target` (`["-c", cluster]` or `["-b", broker address]`) with
/// `queues` read and write queues.
///
/// # Panics
/// When mqadmin cannot be started.
#[must_use]
pub fn update_topic(namesrv: &str, target: [&str; 2], topic: &str, queues: u32) -> MqadminOutput {
    let queues = queues.to_string();
    mqadmin(
        namesrv,
        &[
            "updateTopic",
            target[0],
            target[1],
            "-t",
            topic,
            "-r",
            &queues,
            "-w",
            &queues,
        ],
    )
}

/// Runs our `mqadmin` (`tools` package) with `args`, then `-n namesrv`.
///
/// # Panics
/// When it cannot be started.
#[must_use]
pub fn mqadmin(namesrv: &str, args: &[&str]) -> MqadminOutput {
    let started = Instant::now();
    let out = Command::new(binary("tools", "mqadmin"))
        .args(args)
        .args(["-n", namesrv])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .gated_output()
        .unwrap_or_else(|e| panic!("cannot run mqadmin: {e}"));
    MqadminOutput {
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}
