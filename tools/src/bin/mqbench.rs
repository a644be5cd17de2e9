//! `mqbench`: see [`tools::mqbench`].

use std::process::ExitCode;

/// The load generator allocates per message (headers, futures); glibc malloc took a
/// fifth of its CPU, which on a shared machine is taken from the broker under test.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    tools::mqbench::main_with(std::env::args_os())
}
