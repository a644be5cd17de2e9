//! `mqproxy`: the gRPC endpoint of RocketMQ 5 in cluster mode, in front of a RocketMQ cluster
//! (sluice's or Apache's) that it reaches over remoting.
//!
//! `mqproxy -n 127.0.0.1:9876 [-pc rmq-proxy.json] [-o grpcServerPort=8081 ...]`, as Apache's
//! `mqproxy` takes them (`-pc`, `-pm cluster`, `-n`, `NAMESRV_ADDR`); `-c FILE` is the same
//! as `-pc`. Logs `listening on <addr>` once serving; SIGTERM or SIGINT stop it (exit 0). A
//! port that cannot be bound ends it at once with one line naming the cause, and so does a
//! TLS certificate or key that cannot be read.
//!
//! Authentication (`authenticationEnabled`, `authorizationEnabled`: [`proxy::auth`]) checks
//! every call against the users of the cluster's brokers, or of `authConfigPath` when set;
//! `innerClientAuthenticationCredentials` sign the proxy's own requests. TLS
//! (`tlsServerMode`, `tlsTestModeEnable`, `tlsCertPath`, `tlsKeyPath`: [`proxy::tls`]) is
//! served beside plaintext on the same port by default, as Apache's proxy does.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use proxy::auth::{BrokerUsers, Gate, LocalUsers, Users};
use proxy::tls::Tls;
use proxy::{ClusterBackend, MessagingProxy, ProxyConfig};
use remoting::client::{ClientConfig, RequestHook};
use tokio::signal::unix::{SignalKind, signal};
use tracing::info;
use tracing_subscriber::EnvFilter;

/// The sluice gRPC proxy (RocketMQ 5 `mqproxy`, cluster mode).
#[derive(Debug, Parser)]
#[command(name = "mqproxy", version, about)]
struct Cli {
    /// Config file: Apache's rmq-proxy.json (`-pc` as Apache's), or TOML / properties.
    #[arg(short = 'c', long = "proxyConfigPath", value_name = "FILE")]
    config_file: Option<PathBuf>,
    /// Proxy mode (`-pm` as Apache's): only `cluster` runs here; local mode is mqbroker's.
    #[arg(long = "proxyMode", value_name = "MODE", default_value = "cluster")]
    proxy_mode: String,
    /// Name server addresses, `;`-separated (overrides namesrvAddr).
    #[arg(short = 'n', long = "namesrvAddr", value_name = "ADDRS")]
    namesrv_addr: Option<String>,
    /// Overrides one setting (`-o grpcServerPort=0`); repeatable, later ones win.
    #[arg(short = 'o', long = "option", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

/// Apache's two-letter options (`-pc`, `-pm`) as the long ones clap knows.
fn apache_args() -> Vec<String> {
    std::env::args()
        .map(|a| match a.as_str() {
            "-pc" => "--proxyConfigPath".to_owned(),
            "-pm" => "--proxyMode".to_owned(),
            _ => a,
        })
        .collect()
}

fn init_tracing() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stdout().is_terminal())
        .init();
}

fn load(cli: &Cli) -> Result<ProxyConfig, String> {
    if !cli.proxy_mode.eq_ignore_ascii_case("cluster") {
        return Err(format!(
            "proxy mode {} is not served by mqproxy (cluster only; local mode runs inside mqbroker)",
            cli.proxy_mode
        ));
    }
    let mut overrides = cli.overrides.clone();
    if let Some(n) = &cli.namesrv_addr {
        overrides.push(format!("namesrvAddr={n}"));
    } else if let Ok(n) = std::env::var("NAMESRV_ADDR") {
        overrides.insert(0, format!("namesrvAddr={n}"));
    }
    let config = ProxyConfig::load(cli.config_file.as_deref(), &overrides)
        .map_err(|e| format!("cannot load config: {e}"))?;
    if config.namesrv_list().is_empty() {
        return Err("no name server: give -n, NAMESRV_ADDR or namesrvAddr".to_owned());
    }
    Ok(config)
}

fn main() -> ExitCode {
    let cli = Cli::parse_from(apache_args());
    init_tracing();
    let config = match load(&cli) {
        Ok(c) => c,
        Err(e) => return fatal(&e),
    };
    remoting::net::raise_fd_limit();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fatal(&format!("cannot start the runtime: {e}")),
    };
    match runtime.block_on(serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fatal(&e),
    }
}

/// A proxy that cannot run says why once, on one line, and exits non-zero.
fn fatal(cause: &str) -> ExitCode {
    remoting::startup::fatal("mqproxy", cause)
}

async fn serve(config: ProxyConfig) -> Result<(), String> {
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let shutdown = async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        info!(signal = name, "shutting down");
    };
    let ip = config
        .grpc_bind_address
        .parse::<std::net::IpAddr>()
        .map_err(|e| format!("grpcBindAddress {}: {e}", config.grpc_bind_address))?;
    let addr = SocketAddr::new(ip, config.grpc_server_port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot bind the gRPC port {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let namesrv = config.namesrv_list();
    info!(namesrv = ?namesrv, "cluster mode");
    let tls = Tls::from_config(&config.tls).map_err(|e| format!("cannot serve TLS: {e}"))?;
    // Apache's proxy signs its requests with these (`AclClientRPCHook`).
    let hook = config
        .auth
        .inner_credentials()
        .map_err(|e| e.to_string())?
        .map(|c| Arc::new(c) as Arc<dyn RequestHook>);
    let backend = ClusterBackend::new(ClientConfig::default(), namesrv).with_hook(hook);
    let gate = Gate::new(&config.auth, users(&config, &backend)?);
    let service = MessagingProxy::new(backend, config, local.port());
    info!(addr = %local, "listening on {local}");
    let served = proxy::server::serve_proxy(listener, tls, service, gate, shutdown).await;
    served.map_err(|e| format!("gRPC server failed: {e}"))?;
    info!("stopped");
    Ok(())
}

/// Where the users and ACLs are read: the files in `authConfigPath` when it is set (the same
/// files a broker keeps), else the cluster's brokers, as Apache's proxy reads them.
fn users(config: &ProxyConfig, backend: &ClusterBackend) -> Result<Arc<dyn Users>, String> {
    if let Some(dir) = &config.auth.auth_config_path {
        let local = LocalUsers::open(dir)
            .map_err(|e| format!("cannot read the users in {}: {e}", dir.display()))?;
        return Ok(Arc::new(local));
    }
    Ok(Arc::new(BrokerUsers::new(
        Arc::new(backend.clone()),
        &config.rocket_mq_cluster_name,
        config.user_cache.ttl(),
    )))
}
