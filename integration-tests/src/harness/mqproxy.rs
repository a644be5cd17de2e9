//! A running `mqproxy` (sluice's gRPC proxy, cluster mode) in front of a name server, bound
//! to an OS-chosen port on 127.0.0.1 (`grpcServerPort=0`; it logs `listening on <addr>`),
//! its log in a temp dir: what the gRPC SDKs talk to in tests/grpc_native.rs. Killed when
//! dropped.

use std::net::SocketAddr;

use super::build::binary;
use super::child::{ChildProcess, ProcessSpec};
use super::dir::TestDir;
use crate::ports::assert_loopback;

/// A running `mqproxy`.
#[derive(Debug)]
pub struct MqProxy {
    process: ChildProcess,
}

impl MqProxy {
    /// Starts one in front of `namesrv`, with extra `-o key=value` settings.
    ///
    /// # Panics
    /// When it does not start (with its logs).
    #[must_use]
    pub fn start(namesrv: &str, settings: &[(&str, &str)]) -> Self {
        assert_loopback(namesrv);
        let dir = TestDir::new("mqproxy");
        let mut spec = ProcessSpec::new("mqproxy", binary("proxy", "mqproxy"))
            .arg("-n")
            .arg(namesrv)
            .setting("grpcServerPort", 0)
            .setting("grpcBindAddress", "127.0.0.1")
            .env_remove("NAMESRV_ADDR");
        for (key, value) in settings {
            spec = spec.setting(key, value);
        }
        MqProxy {
            process: ChildProcess::start(spec, dir, Vec::new()),
        }
    }

    /// The address it serves gRPC on.
    ///
    /// # Panics
    /// When it is not running.
    #[must_use]
    pub fn socket_addr(&self) -> SocketAddr {
        self.process.listening_addr().expect("mqproxy is running")
    }

    /// `127.0.0.1:port`: the SDKs' endpoint.
    #[must_use]
    pub fn grpc_endpoint(&self) -> String {
        self.socket_addr().to_string()
    }

    /// What it logged so far (stdout and stderr).
    #[must_use]
    pub fn log(&self) -> String {
        format!("{}{}", self.process.stdout(), self.process.stderr())
    }

    /// The process handle.
    #[must_use]
    pub fn process(&mut self) -> &mut ChildProcess {
        &mut self.process
    }
}
