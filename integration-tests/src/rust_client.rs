//! The Rust client side of the integration tests: programs built on `rocketmq-client-rust`
//! 1.0.0 from crates.io (the mxsm/rocketmq-rust project's client), run as separate processes
//! against our `mqnamesrv` / `mqbroker`.
//!
//! The programs live in `integration-tests/rust-client`, a cargo project of its own (not a
//! workspace member; its `Cargo.lock` pins ~360 crates). [`RustClient::get`] builds it once per
//! process with `cargo build --locked` into `$SLUICE_RUST_CLIENT_CACHE` (used as
//! `CARGO_TARGET_DIR`), else `$CARGO_TARGET_DIR/rust-client-it`, else
//! `<workspace>/target/rust-client-it`; cargo's own lock on that directory makes parallel test
//! binaries take turns, and the second finds everything fresh. A cold build takes minutes (see the
//! project's README); an up-to-date check well under a second.
//!
//! ```no_run
//! use std::time::Duration;
//! use integration_tests::rust_client::{RustClient, PRODUCER};
//!
//! let client = RustClient::get();
//! let out = client.run(
//!     PRODUCER,
//!     &["--namesrv", "127.0.0.1:9876", "--topic", "TopicTest", "--count", "3", "--batch"],
//!     Duration::from_secs(60),
//! );
//! out.assert_ok();
//! assert_eq!(out.sent().len(), 3);
//! ```
//!
//! Programs run like the Go ones (the same [`ClientPrograms`], a child process each, the same
//! result lines, fresh temp `HOME`, loopback-only `--namesrv`).

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::go::built_once;
pub use crate::go::{ClientPrograms, Received, Sent};
use crate::harness::ProcessSpec;
use crate::harness::build::target_dir;
use crate::harness::child::run_build;

/// The Rust producer: sync / async / oneway sends, optionally batched.
pub const PRODUCER: &str = "producer";
/// The Rust push consumer (`DefaultMQPushConsumer`, concurrent listener).
pub const CONSUMER: &str = "consumer";
/// The client crate and version the programs are built with (pinned in `rust-client/Cargo.toml`).
pub const CLIENT_CRATE: &str = "rocketmq-client-rust 1.0.0";

/// A cold build compiles ~360 crates: about 5 minutes on 2 cores.
const BUILD_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The rocketmq-client-rust test programs.
#[derive(Debug)]
pub struct RustClient;

static RUST_PROGRAMS: OnceLock<Result<ClientPrograms, String>> = OnceLock::new();

impl RustClient {
    /// The programs, built on first use in this process.
    ///
    /// # Panics
    /// When the build fails, with cargo's output.
    #[must_use]
    pub fn get() -> &'static ClientPrograms {
        match Self::try_get() {
            Ok(programs) => programs,
            Err(e) => panic!("cannot build the rocketmq-client-rust test programs:\n{e}"),
        }
    }

    /// Like [`RustClient::get`], returning the build failure instead of panicking.
    ///
    /// # Errors
    /// Cargo's output when the build failed (remembered: later calls fail the same way).
    pub fn try_get() -> Result<&'static ClientPrograms, String> {
        built_once(&RUST_PROGRAMS, Self::build)
    }

    fn build() -> Result<ClientPrograms, String> {
        let target = cache_dir();
        let manifest = project_dir().join("Cargo.toml");
        let cargo = env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
        let spec = ProcessSpec::program("build", &cargo)
            .args(["build", "--locked", "--bins", "--manifest-path"])
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", &target)
            .env("CARGO_TERM_COLOR", "never");
        let started = Instant::now();
        let out = run_build("rust-client-build", spec, BUILD_TIMEOUT)?;
        if out.stderr.contains("Compiling") {
            // Visible with --nocapture: what a cold build costs.
            eprintln!(
                "rust-client: built into {} in {:?}",
                target.display(),
                started.elapsed()
            );
        }
        tracing::debug!(elapsed = ?started.elapsed(), "rust client programs ready");
        Ok(ClientPrograms::new(target.join("debug")))
    }
}

/// `integration-tests/rust-client`.
pub fn project_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("rust-client")
}

/// The cargo target dir of the programs: `$SLUICE_RUST_CLIENT_CACHE`, else
/// `$CARGO_TARGET_DIR/rust-client-it`, else `<workspace>/target/rust-client-it`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = env::var_os("SLUICE_RUST_CLIENT_CACHE") {
        return PathBuf::from(dir);
    }
    target_dir().join("rust-client-it")
}
