//! `mqbroker`: one sluice broker node.
//!
//! `mqbroker -c broker.toml [-n 127.0.0.1:9876] [-o key=value ...]`; the file may be a
//! RocketMQ broker.conf as is. SIGTERM or SIGINT stop it cleanly (exit 0).
//!
//! `--enable-proxy` (as Apache's `mqbroker` script) or `enableGrpcProxy=true` also serves
//! RocketMQ 5's gRPC protocol on `grpcServerPort` (local mode); `-pc rmq-proxy.json` gives
//! that endpoint Apache's proxy settings (its `grpcServerPort` unless the broker sets one, its
//! `namesrvAddr` unless `-n` does, the message limits and client settings).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use broker::broker::Broker;
use broker::config::{ACCEPTED_UNUSED_KEYS, BrokerConfig};
use clap::Parser;
use proxy::ProxyConfig;
use remoting::settings::Settings;
use store::StoreConfig;
use tokio::signal::unix::{SignalKind, signal};
use tracing::info;
use tracing_subscriber::EnvFilter;

/// The sluice broker (RocketMQ-compatible `mqbroker`).
#[derive(Debug, Parser)]
#[command(name = "mqbroker", version, about)]
struct Cli {
    /// Config file: TOML, or a RocketMQ broker.conf as is.
    #[arg(short = 'c', long = "configFile", value_name = "FILE")]
    config_file: Option<PathBuf>,
    /// Name server addresses, `;`-separated (overrides namesrvAddr).
    #[arg(short = 'n', long = "namesrvAddr", value_name = "ADDRS")]
    namesrv_addr: Option<String>,
    /// Overrides one setting (`-o listenPort=0`); repeatable, later ones win.
    #[arg(short = 'o', long = "option", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Prints every setting (broker, store, HA) with its effective value and exits.
    #[arg(short = 'p', long = "printConfigItem")]
    print_config_item: bool,
    /// Serves the gRPC endpoint too (the same as `-o enableGrpcProxy=true`).
    #[arg(long = "enable-proxy")]
    enable_proxy: bool,
    /// The gRPC endpoint's settings: Apache's rmq-proxy.json (`-pc` as Apache's), or TOML /
    /// properties.
    #[arg(long = "proxyConfigPath", value_name = "FILE")]
    proxy_config_file: Option<PathBuf>,
}

/// Apache's two-letter `-pc` as the long option clap knows (clap would read `-p -c`).
fn apache_args() -> Vec<String> {
    std::env::args()
        .map(|a| match a.as_str() {
            "-pc" => "--proxyConfigPath".to_owned(),
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

/// Everything `mqbroker` is configured with.
struct Loaded {
    broker: BrokerConfig,
    store: StoreConfig,
    ha: ha::HaConfig,
    auth: auth::AuthConfig,
    proxy: ProxyConfig,
    metrics: metrics::MetricsConfig,
}

fn load(cli: &Cli) -> Result<Loaded, Box<dyn std::error::Error>> {
    let proxy = ProxyConfig::load(cli.proxy_config_file.as_deref(), &[])?;
    let mut overrides = cli.overrides.clone();
    if let Some(n) = &cli.namesrv_addr {
        overrides.push(format!("namesrvAddr={n}"));
    } else if let Ok(n) = std::env::var("NAMESRV_ADDR") {
        overrides.insert(0, format!("namesrvAddr={n}"));
    } else if !proxy.namesrv_addr.is_empty() {
        // Apache's local mode hands the proxy file's name servers to its broker as `-n`.
        overrides.push(format!("namesrvAddr={}", proxy.namesrv_addr));
    }
    if cli.enable_proxy {
        overrides.push("enableGrpcProxy=true".to_owned());
    }
    let settings = Settings::load(cli.config_file.as_deref(), &overrides)?;
    let broker: BrokerConfig = settings.deserialize()?;
    let store: StoreConfig = settings.deserialize()?;
    let ha: ha::HaConfig = settings.deserialize()?;
    let auth: auth::AuthConfig = settings.deserialize()?;
    let metrics: metrics::MetricsConfig = settings.deserialize()?;
    settings.accept_keys(ACCEPTED_UNUSED_KEYS);
    settings.accept_keys(auth::config::ACCEPTED_UNUSED_KEYS);
    settings.warn_unknown();
    Ok(Loaded {
        broker,
        store,
        ha,
        auth,
        proxy,
        metrics,
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse_from(apache_args());
    init_tracing();
    let Loaded {
        broker: config,
        store: store_config,
        ha: ha_config,
        auth: auth_config,
        proxy: proxy_config,
        metrics: metrics_config,
    } = match load(&cli) {
        Ok(c) => c,
        Err(e) => return fatal(&format!("cannot load config: {e}")),
    };
    if cli.print_config_item {
        let mut all = std::collections::BTreeMap::new();
        for value in [
            serde_json::to_value(&config),
            serde_json::to_value(&store_config),
            serde_json::to_value(&ha_config),
            serde_json::to_value(auth_config.redacted()),
            serde_json::to_value(&metrics_config),
        ]
        .into_iter()
        .flatten()
        {
            if let serde_json::Value::Object(map) = value {
                for (k, v) in map {
                    let text = match v {
                        serde_json::Value::String(s) => s,
                        serde_json::Value::Null => String::new(),
                        other => other.to_string(),
                    };
                    all.insert(k, text);
                }
            }
        }
        let mut out = std::io::stdout().lock();
        for (k, v) in all {
            // A closed pipe (`| head`) ends the listing, it is not an error.
            if writeln!(out, "{k}={v}").is_err() {
                break;
            }
        }
        return ExitCode::SUCCESS;
    }
    // Every connection is a descriptor (RocketMQ's scripts raise `ulimit -n` too).
    remoting::net::raise_fd_limit();
    // Experiment knob: worker threads of the runtime (default: one per core).
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = std::env::var("SLUICE_WORKER_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        builder.worker_threads(n);
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fatal(&format!("cannot start the runtime: {e}")),
    };
    match runtime.block_on(serve(
        config,
        store_config,
        ha_config,
        auth_config,
        proxy_config,
        metrics_config,
    )) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fatal(&e.to_string()),
    }
}

/// A broker that cannot run says why once, on one line, and exits non-zero.
fn fatal(cause: &str) -> ExitCode {
    remoting::startup::fatal("mqbroker", cause)
}

async fn serve(
    config: BrokerConfig,
    store_config: StoreConfig,
    ha_config: ha::HaConfig,
    auth_config: auth::AuthConfig,
    proxy_config: ProxyConfig,
    metrics_config: metrics::MetricsConfig,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let shutdown = async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        info!(signal = name, "shutting down");
    };
    // Every port first, so a taken one stops the broker before it touches the store.
    let listener = broker::listen::bind(
        &config.bind_address,
        config.listen_port,
        config.server_socket_backlog,
    )?;
    let port = listener.local_addr()?.port();
    let vip_channel = broker::listen::bind_vip_channel(&config, port)?;
    let grpc = broker::grpc::bind(&config, &auth_config, proxy_config)?;
    let metrics_port = broker::metrics::bind(&metrics_config, &config)?;
    // Opening the store (its lock, then recovery) may take a while.
    let broker = tokio::task::spawn_blocking(move || {
        Broker::open_with_auth(config, store_config, ha_config, &auth_config, port)
    })
    .await??;
    let broker = Arc::new(broker);
    let started =
        broker::server::start(Arc::clone(&broker), listener, vip_channel)?.with_grpc(grpc);
    // Kept until the broker stops.
    let _metrics =
        metrics_port.map(|bound| broker::metrics::serve(bound, started.role(), &metrics_config));
    // Only once every part the role needs is up and the name servers were told.
    let boot_line = format!(
        "The broker[{}, {}] boot success. serializeType=JSON",
        broker.config().broker_name,
        broker.store_host()
    );
    started
        .on_ready(move || println!("{boot_line}"))
        .serve(shutdown)
        .await;
    Ok(())
}
