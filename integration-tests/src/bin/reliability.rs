//! `reliability`: the reliability driver (see `integration_tests::reliability`).

use clap::Parser;

fn main() {
    let cli = integration_tests::reliability::Cli::parse();
    std::process::exit(integration_tests::reliability::main_with(&cli));
}
