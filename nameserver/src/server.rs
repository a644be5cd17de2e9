//! Wiring: binds the listener, loads the KV table, registers the processor for every
//! name server code, runs the expiry scan, serves until the shutdown future resolves.
//!
//! `run` takes an already bound listener (so tests and the binary can bind port 0 and
//! learn the port first) and a shutdown future (so tests stop it without signals).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use remoting::heap::StormTrim;
use remoting::server::{Dispatcher, Processor, ServerConfig};
use tokio::net::TcpListener;
use tracing::{Instrument, info, info_span};

use crate::clock::{Clock, SystemClock};
use crate::config::NamesrvConfig;
use crate::error::{NamesrvError, Result};
use crate::kv_config::KvConfigManager;
use crate::processor::{HANDLED_CODES, NamesrvProcessor};

/// The AUTH_* admin codes, served when the name server has a guard.
const AUTH_CODES: &[remoting::RequestCode] = &[
    remoting::RequestCode::AuthCreateUser,
    remoting::RequestCode::AuthUpdateUser,
    remoting::RequestCode::AuthDeleteUser,
    remoting::RequestCode::AuthGetUser,
    remoting::RequestCode::AuthListUser,
    remoting::RequestCode::AuthCreateAcl,
    remoting::RequestCode::AuthUpdateAcl,
    remoting::RequestCode::AuthDeleteAcl,
    remoting::RequestCode::AuthGetAcl,
    remoting::RequestCode::AuthListAcl,
];

/// How often the closed-connection count is looked at for a storm.
const HEAP_CHECK: Duration = Duration::from_secs(1);

/// Binds `bindAddress:listenPort` with a backlog of `serverSocketBacklog`. Must be
/// called inside a tokio runtime.
///
/// # Errors
/// The address is invalid or cannot be bound.
pub fn bind(config: &NamesrvConfig) -> Result<TcpListener> {
    let addr = format!("{}:{}", config.bind_address, config.listen_port);
    let parsed: SocketAddr = addr.parse().map_err(|_| NamesrvError::Bind {
        addr: addr.clone(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not an ip:port"),
    })?;
    remoting::net::listen(parsed, config.server_socket_backlog)
        .map_err(|source| NamesrvError::Bind { addr, source })
}

/// Serves the name server on `listener` until `shutdown` resolves.
///
/// Logs `listening on <addr>` once serving (tests wait for that line).
///
/// # Errors
/// The KV table cannot be loaded.
pub async fn run(
    listener: TcpListener,
    config: NamesrvConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    run_with_clock(listener, config, Arc::new(SystemClock), shutdown).await
}

/// [`run`] with an explicit clock.
///
/// # Errors
/// The KV table cannot be loaded.
pub async fn run_with_clock(
    listener: TcpListener,
    config: NamesrvConfig,
    clock: Arc<dyn Clock>,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    start(listener, config, clock)?.serve(shutdown).await;
    Ok(())
}

/// A name server with its KV table loaded, ready to [`serve`](Self::serve).
#[derive(Debug)]
pub struct Started {
    listener: TcpListener,
    local: SocketAddr,
    config: NamesrvConfig,
    kv: KvConfigManager,
    clock: Arc<dyn Clock>,
    guard: Option<Arc<auth::Guard>>,
    metrics: Option<(metrics::BoundEndpoint, metrics::MetricsConfig)>,
}

/// Loads what the name server needs before it may answer (the KV table).
///
/// # Errors
/// The listener's address cannot be read, or the KV table cannot be loaded.
pub fn start(
    listener: TcpListener,
    mut config: NamesrvConfig,
    clock: Arc<dyn Clock>,
) -> Result<Started> {
    let local = listener.local_addr().map_err(|source| NamesrvError::Bind {
        addr: format!("{}:{}", config.bind_address, config.listen_port),
        source,
    })?;
    // As RocketMQ: an OS-chosen port is written back, so GET_NAMESRV_CONFIG shows it.
    config.listen_port = local.port();
    let kv = KvConfigManager::new(&config.kv_config_path);
    kv.load()?;
    Ok(Started {
        listener,
        local,
        config,
        kv,
        clock,
        guard: None,
        metrics: None,
    })
}

impl Started {
    /// The address it listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Checks every request with `guard` (Apache's name server checks none; sluice's does when
    /// authentication or authorization is on), and answers the AUTH_* admin requests.
    #[must_use]
    pub fn with_guard(mut self, guard: Arc<auth::Guard>) -> Self {
        self.guard = Some(guard);
        self
    }

    /// Also serves its metrics on `bound` ([`crate::metrics::bind`]).
    #[must_use]
    pub fn with_metrics(
        mut self,
        bound: metrics::BoundEndpoint,
        config: metrics::MetricsConfig,
    ) -> Self {
        self.metrics = Some((bound, config));
        self
    }

    /// Serves until `shutdown` resolves.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) {
        let Started {
            listener,
            local,
            config,
            kv,
            clock,
            guard,
            metrics,
        } = self;
        let server_config = ServerConfig {
            max_frame_len: config.frame_max_length,
            idle_timeout: config.idle_timeout(),
            ..ServerConfig::default()
        };
        let scan_interval = config.scan_interval();
        let mut processor = NamesrvProcessor::new(config, kv, clock);
        if let Some(g) = guard {
            processor = processor.with_guard(g);
        }
        let processor = Arc::new(processor);

        let mut dispatcher = Dispatcher::new();
        let as_processor: Arc<dyn Processor> = processor.clone();
        dispatcher.register(HANDLED_CODES.iter().copied(), &as_processor);
        if processor.guard().is_some() {
            dispatcher.register(AUTH_CODES.iter().copied(), &as_processor);
        }
        dispatcher.add_listener(processor.clone());
        // Kept while serving.
        let _metrics = metrics.map(|(bound, metrics_config)| {
            let rpc = Arc::new(remoting::rpc_metrics::RpcLatency::default());
            dispatcher.set_observer(rpc.clone());
            let collector = crate::metrics::NamesrvCollector {
                processor: Arc::clone(&processor),
                rpc,
            };
            crate::metrics::serve(bound, collector, &local.to_string(), &metrics_config)
        });

        let scanner = {
            let processor = Arc::clone(&processor);
            tokio::spawn(
                async move {
                    let mut tick = tokio::time::interval_at(
                        tokio::time::Instant::now() + scan_interval,
                        scan_interval,
                    );
                    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    loop {
                        tick.tick().await;
                        processor.scan_not_active_brokers();
                        // Users and ACLs changed by another process sharing the directory.
                        if let Some(g) = processor.guard() {
                            if let Err(e) = g.store().reload_if_changed() {
                                tracing::warn!(error = %e, "auth metadata not reloaded");
                            }
                        }
                    }
                }
                .instrument(info_span!("scan", service = "scan_not_active_broker")),
            )
        };

        // After a storm of closed connections, the freed heap goes back to the OS.
        let heap = tokio::spawn(
            async {
                let mut tick = tokio::time::interval(HEAP_CHECK);
                let mut storm = StormTrim::default();
                loop {
                    tick.tick().await;
                    if storm.tick(remoting::connection::closed_total()) {
                        remoting::heap::release_heap().await;
                    }
                }
            }
            .instrument(info_span!("heap", service = "heap_trim")),
        );

        info!(addr = %local, "listening on {local}");
        remoting::server::run(listener, dispatcher, server_config, shutdown).await;
        scanner.abort();
        heap.abort();
        info!(addr = %local, "name server stopped");
    }
}
