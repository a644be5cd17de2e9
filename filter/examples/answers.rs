//! Answers selector requests as `integration-tests/java-broker/oracle/SqlOracle.java`
//! answers them with Apache RocketMQ's own filter, so the two can be diffed:
//!
//! ```sh
//! cargo run -q -p filter --example answers < requests > ours
//! java -cp "$(cat target/java-it/apache-broker/5.3.3/classpath.txt)" \
//!     integration-tests/java-broker/oracle/SqlOracle.java < requests > theirs
//! diff ours theirs
//! ```

#![allow(clippy::unwrap_used, reason = "a development tool")]

use std::io::{BufRead, Write};

#[path = "../tests/support/answers.rs"]
mod answers;

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout());
    for line in stdin.lock().lines() {
        writeln!(out, "{}", answers::answer(&line.unwrap())).unwrap();
    }
}
