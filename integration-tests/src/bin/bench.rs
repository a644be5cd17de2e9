//! `bench`: the side-by-side bench driver (see `integration_tests::bench`).

use clap::Parser;

fn main() {
    let cli = integration_tests::bench::Cli::parse();
    std::process::exit(integration_tests::bench::main_with(&cli));
}
