//! A running `mqnamesrv`, started from `deploy/namesrv.toml` with its files in a temp dir,
//! bound to an OS-chosen port on 127.0.0.1 (it logs the address; no reservation needed).
//!
//! ```no_run
//! use integration_tests::client::FakeBroker;
//! use integration_tests::harness::NamesrvProcess;
//!
//! let ns = NamesrvProcess::start();
//! let mut broker = FakeBroker::master(&ns.addr(), "broker-a", "127.0.0.1:10911").with_topic("TopicTest", 8, 6);
//! assert_eq!(broker.register().code(), 0);
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;

use super::build::{binary, workspace_root};
use super::child::{ChildProcess, ProcessSpec};
use super::dir::TestDir;

/// A running `mqnamesrv`.
#[derive(Debug)]
pub struct NamesrvProcess {
    process: ChildProcess,
}

impl NamesrvProcess {
    /// Starts a name server with the sample config.
    ///
    /// # Panics
    /// When it does not start (with its logs).
    #[must_use]
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts a name server with extra `-o key=value` settings (they win over the
    /// defaults set here, e.g. `("scanNotActiveBrokerInterval", "100")`).
    ///
    /// # Panics
    /// When it does not start (with its logs).
    #[must_use]
    pub fn start_with(settings: &[(&str, &str)]) -> Self {
        let dir = TestDir::new("namesrv");
        let config = workspace_root().join("deploy").join("namesrv.toml");
        let mut spec = ProcessSpec::new("mqnamesrv", binary("nameserver", "mqnamesrv"))
            .arg("-c")
            .arg(&config)
            .setting("listenPort", 0)
            .setting("bindAddress", "127.0.0.1")
            .setting(
                "kvConfigPath",
                dir.path().join("namesrv").join("kvConfig.json").display(),
            )
            .setting(
                "configStorePath",
                dir.path()
                    .join("namesrv")
                    .join("namesrv.properties")
                    .display(),
            );
        for (key, value) in settings {
            spec = spec.setting(key, value);
        }
        NamesrvProcess {
            process: ChildProcess::start(spec, dir, Vec::new()),
        }
    }

    /// `127.0.0.1:port`, as clients and `mqadmin -n` take it.
    #[must_use]
    pub fn addr(&self) -> String {
        self.socket_addr().to_string()
    }

    /// The address it listens on.
    ///
    /// # Panics
    /// When it is not running.
    #[must_use]
    pub fn socket_addr(&self) -> SocketAddr {
        self.process.listening_addr().expect("mqnamesrv is running")
    }

    /// Where its KV table is persisted.
    #[must_use]
    pub fn kv_config_path(&self) -> PathBuf {
        self.process.dir().join("namesrv").join("kvConfig.json")
    }

    /// The process handle (logs, stop, kill, restart).
    #[must_use]
    pub fn process(&mut self) -> &mut ChildProcess {
        &mut self.process
    }

    /// Stops it and starts it again on the same files; it may get another port.
    ///
    /// # Panics
    /// When it does not come back.
    pub fn restart(&mut self) {
        self.process.restart();
    }
}
