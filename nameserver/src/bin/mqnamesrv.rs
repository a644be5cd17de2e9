//! `mqnamesrv`: the sluice name server.
//!
//! `mqnamesrv -c namesrv.toml -o listenPort=0 -o kvConfigPath=/tmp/kv.json`; SIGTERM
//! or SIGINT stop it gracefully (exit 0).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use nameserver::NamesrvConfig;
use remoting::settings::Settings;
use tokio::signal::unix::{SignalKind, signal};
use tracing::info;
use tracing_subscriber::EnvFilter;

/// The sluice name server (RocketMQ-compatible `mqnamesrv`).
#[derive(Debug, Parser)]
#[command(name = "mqnamesrv", version, about)]
struct Cli {
    /// Config file: TOML, or a RocketMQ `.properties`/`.conf` file as is.
    #[arg(short = 'c', long = "configFile", value_name = "FILE")]
    config_file: Option<PathBuf>,
    /// Overrides one setting (`-o listenPort=0`); repeatable, later ones win.
    #[arg(short = 'o', long = "option", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Prints every setting with its effective value and exits.
    #[arg(short = 'p', long = "printConfigItem")]
    print_config_item: bool,
}

fn init_tracing() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stdout().is_terminal())
        .init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let (config, auth_config, metrics_config) =
        match Settings::load(cli.config_file.as_deref(), &cli.overrides)
            .map_err(nameserver::ConfigError::from)
            .and_then(|settings| {
                let config = NamesrvConfig::from_settings(&settings)?;
                let auth: auth::AuthConfig = settings.deserialize()?;
                let metrics: metrics::MetricsConfig = settings.deserialize()?;
                settings.accept_keys(auth::config::ACCEPTED_UNUSED_KEYS);
                settings.warn_unknown();
                Ok((config, auth, metrics))
            }) {
            Ok(loaded) => loaded,
            Err(e) => return fatal(&format!("cannot load config: {e}")),
        };
    if cli.print_config_item {
        let mut out = std::io::stdout().lock();
        for (key, value) in config.to_properties() {
            // A closed pipe (`| head`) ends the listing, it is not an error.
            if writeln!(out, "{key}={value}").is_err() {
                break;
            }
        }
        return ExitCode::SUCCESS;
    }
    // Every connection is a descriptor (RocketMQ's scripts raise `ulimit -n` too).
    remoting::net::raise_fd_limit();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fatal(&format!("cannot start the runtime: {e}")),
    };
    match runtime.block_on(serve(config, auth_config, metrics_config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fatal(&e.to_string()),
    }
}

/// A name server that cannot run says why once, on one line, and exits non-zero.
fn fatal(cause: &str) -> ExitCode {
    remoting::startup::fatal("mqnamesrv", cause)
}

async fn serve(
    config: NamesrvConfig,
    auth_config: auth::AuthConfig,
    metrics_config: metrics::MetricsConfig,
) -> Result<(), Box<dyn std::error::Error>> {
    // Installed before binding, so a signal sent as soon as the port is open is not lost.
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let shutdown = async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        info!(signal = name, "shutting down");
    };
    let listener = nameserver::bind(&config)?;
    let metrics_port = nameserver::metrics::bind(&metrics_config, &config)?;
    // Users and ACLs next to the KV table (authConfigPath overrides).
    let auth_dir = std::path::Path::new(&config.kv_config_path)
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let mut started = nameserver::start(listener, config, Arc::new(nameserver::SystemClock))?;
    if auth_config.authentication_enabled || auth_config.authorization_enabled {
        // The 4.9 plain ACL is the broker's only, as in Apache.
        let auth_config = auth::AuthConfig {
            acl_enable: false,
            ..auth_config
        };
        let guard = auth::Guard::open(&auth_config, "DefaultCluster", &auth_dir)?;
        started = started.with_guard(Arc::new(guard));
    }
    if let Some(bound) = metrics_port {
        started = started.with_metrics(bound, metrics_config);
    }
    // Only now: the port is bound and the KV table loaded.
    println!(
        "The Name Server boot success. serializeType=JSON, address {}",
        started.local_addr()
    );
    started.serve(shutdown).await;
    Ok(())
}
