//! The runtime every rocketmq-client-rust program owns: a `RuntimeOwner` (the tokio runtime), a
//! no-op telemetry guard and the shared `ClientRuntime`, created and shut down in the order the
//! crate's README asks for.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rocketmq_client_rust::{ClientRuntime, ClientRuntimeConfig};
use rocketmq_observability::TelemetryRuntimeGuard;
use rocketmq_runtime::RuntimeOwner;

/// How long the client runtime may take to shut down before the program exits anyway.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The tokio runtime and the client runtime of one program.
pub struct ClientEnv {
    owner: RuntimeOwner,
    // Kept alive for the client runtime's telemetry handle.
    _telemetry: TelemetryRuntimeGuard,
    runtime: Arc<ClientRuntime>,
}

impl std::fmt::Debug for ClientEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientEnv").finish_non_exhaustive()
    }
}

impl ClientEnv {
    /// Creates the runtimes; `scope` names the client component.
    ///
    /// # Errors
    /// When either runtime cannot be created.
    pub fn new(scope: &'static str) -> Result<ClientEnv, String> {
        let owner = RuntimeOwner::new().map_err(|e| format!("runtime: {e}"))?;
        let telemetry = TelemetryRuntimeGuard::noop();
        let runtime = ClientRuntime::try_new(
            owner.root_context().component(scope),
            ClientRuntimeConfig::default(),
            telemetry.handle(),
        )
        .map_err(|e| format!("client runtime: {e}"))?;
        Ok(ClientEnv {
            owner,
            _telemetry: telemetry,
            runtime,
        })
    }

    /// The shared client runtime, for producer and consumer builders.
    #[must_use]
    pub fn runtime(&self) -> Arc<ClientRuntime> {
        Arc::clone(&self.runtime)
    }

    /// Runs `future` to completion on the owned runtime.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.owner.block_on(future)
    }

    /// Shuts the client runtime down, then the tokio runtime, each bounded by
    /// [`SHUTDOWN_TIMEOUT`]. Clients must have been shut down first. An unclean shutdown is
    /// reported on stderr only: the programs' results are already printed.
    pub fn shutdown(self) {
        let runtime = self.runtime;
        let report = self.owner.block_on(async move {
            tokio::time::timeout(SHUTDOWN_TIMEOUT, runtime.shutdown()).await
        });
        match report {
            Ok(report) if !report.is_healthy() => {
                eprintln!("client runtime shutdown report: {}", report.to_json());
            }
            Ok(_) => {}
            Err(_) => eprintln!("client runtime did not shut down within {SHUTDOWN_TIMEOUT:?}"),
        }
        match self
            .owner
            .shutdown_runtime_blocking_with_timeout(SHUTDOWN_TIMEOUT)
        {
            Ok(report) if !report.is_healthy() => {
                eprintln!("runtime shutdown report: {}", report.to_json());
            }
            Ok(_) => {}
            Err(e) => eprintln!("runtime shutdown: {e}"),
        }
    }
}
