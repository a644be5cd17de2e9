//! Process-level plumbing shared by the programs, the same conventions as the Java programs:
//! result lines on stdout (one per line, flushed at once, never interleaved), the client's own
//! `tracing` output on stderr, a watchdog that exits with [`EXIT_TIMEOUT`] after the hard timeout,
//! and name server addresses on loopback only.
//!
//! Exit codes: 0 success, 1 failure (an `ERR` line says why), 2 usage error, 124 hard timeout.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::io::Write;
use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;

/// Success.
pub const EXIT_OK: i32 = 0;
/// Failure; an `ERR` line says why.
pub const EXIT_FAIL: i32 = 1;
/// Bad arguments.
pub const EXIT_USAGE: i32 = 2;
/// The hard timeout fired (the code of coreutils' `timeout`).
pub const EXIT_TIMEOUT: i32 = 124;

/// Prints one result line on stdout and flushes it.
pub fn out(line: impl Display) {
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let _ = writeln!(lock, "{line}");
    let _ = lock.flush();
}

/// Exits with `code` after flushing stdout.
pub fn exit(code: i32) -> ! {
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

/// Installs the stderr log at `level` (`error`, `warn`, `info`, `debug`, `trace`, `off`) and
/// starts the watchdog: after `hard_timeout` it prints `ERR timeout ...` and exits with
/// [`EXIT_TIMEOUT`], whatever the client is doing.
pub fn init(program: &'static str, hard_timeout: Duration, level: &str) {
    let filter = match level {
        "off" => None,
        "error" => Some(tracing_subscriber::filter::LevelFilter::ERROR),
        "info" => Some(tracing_subscriber::filter::LevelFilter::INFO),
        "debug" => Some(tracing_subscriber::filter::LevelFilter::DEBUG),
        "trace" => Some(tracing_subscriber::filter::LevelFilter::TRACE),
        _ => Some(tracing_subscriber::filter::LevelFilter::WARN),
    };
    if let Some(filter) = filter {
        let _ = tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .with_max_level(filter)
            .try_init();
    }
    let spawned = std::thread::Builder::new()
        .name("sluice-it-watchdog".into())
        .spawn(move || {
            std::thread::sleep(hard_timeout);
            out(format_args!(
                "ERR timeout {program} did not finish within {}ms",
                hard_timeout.as_millis()
            ));
            exit(EXIT_TIMEOUT);
        });
    if let Err(e) = spawned {
        out(format_args!("ERR cannot start the watchdog: {e}"));
        exit(EXIT_FAIL);
    }
}

/// Collapses every run of whitespace (newlines included) to one space.
#[must_use]
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An error on one line.
#[must_use]
pub fn describe(e: &dyn Display) -> String {
    one_line(&e.to_string())
}

/// A message body for a result line, exactly as the Java programs escape it: printable text
/// stays, `\`, newline, CR and tab are escaped, other control characters become `\xNN`.
#[must_use]
pub fn escape_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                s.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => s.push(c),
        }
    }
    s
}

/// `s`, or `-` when it is empty, so result lines keep their field count.
#[must_use]
pub fn or_dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}

/// Checks that every address of a name server list (`a:p;b:p`) is on loopback: these programs
/// never talk to anything else.
///
/// # Errors
/// The first address that is not on loopback, or not `host:port`.
pub fn check_loopback(namesrv: &str) -> Result<(), String> {
    for addr in namesrv.split(';').map(str::trim).filter(|a| !a.is_empty()) {
        let Some((host, port)) = addr.rsplit_once(':') else {
            return Err(format!("bad name server address {addr:?}: no port"));
        };
        if port.parse::<u16>().is_err() {
            return Err(format!("bad name server address {addr:?}: bad port"));
        }
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let loopback =
            host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
        if !loopback {
            return Err(format!(
                "name server {addr:?} is not on loopback; tests only talk to 127.0.0.0/8"
            ));
        }
    }
    Ok(())
}

/// `--key value` options and `--flag` switches, as the Java programs' `Args`: unknown options,
/// a missing value and stray arguments are usage errors.
#[derive(Debug)]
pub struct Args {
    program: &'static str,
    usage: &'static str,
    values: BTreeMap<String, String>,
    flags: Vec<String>,
}

impl Args {
    /// Parses the process's arguments, or exits with [`EXIT_USAGE`].
    #[must_use]
    pub fn parse(
        program: &'static str,
        usage: &'static str,
        options: &[&str],
        switches: &[&str],
    ) -> Args {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        let mut args = Args {
            program,
            usage,
            values: BTreeMap::new(),
            flags: Vec::new(),
        };
        let mut i = 0;
        while i < argv.len() {
            let Some(name) = argv[i].strip_prefix("--") else {
                args.fail(&format!("unexpected argument {:?}", argv[i]));
            };
            if options.contains(&name) {
                let Some(value) = argv.get(i + 1) else {
                    args.fail(&format!("--{name} needs a value"));
                };
                args.values.insert(name.to_owned(), value.clone());
                i += 2;
            } else if switches.contains(&name) {
                args.flags.push(name.to_owned());
                i += 1;
            } else {
                args.fail(&format!("unknown option --{name}"));
            }
        }
        args
    }

    /// Prints a usage error and exits with [`EXIT_USAGE`].
    pub fn fail(&self, message: &str) -> ! {
        out(format_args!("ERR usage {}", one_line(message)));
        eprintln!("usage: {} {}", self.program, self.usage);
        exit(EXIT_USAGE)
    }

    /// The value of `--name`, if given.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The value of `--name`, or `default`.
    #[must_use]
    pub fn get_or<'a>(&'a self, name: &str, default: &'a str) -> &'a str {
        self.get(name).unwrap_or(default)
    }

    /// The value of `--name`, or a usage error when it is missing.
    #[must_use]
    pub fn required(&self, name: &str) -> &str {
        match self.get(name) {
            Some(v) => v,
            None => self.fail(&format!("missing required option --{name}")),
        }
    }

    /// The value of `--name` parsed as a number, or `default`; a usage error when it does not
    /// parse.
    #[must_use]
    pub fn number<T: FromStr>(&self, name: &str, default: T) -> T {
        match self.get(name) {
            None => default,
            Some(v) => match v.parse() {
                Ok(n) => n,
                Err(_) => self.fail(&format!("--{name} wants a number, got {v:?}")),
            },
        }
    }

    /// Whether `--name` was given.
    #[must_use]
    pub fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_the_java_programs() {
        assert_eq!(escape_body(b"msg-1"), "msg-1");
        assert_eq!(escape_body(b"a\\b\nc\td\x01"), "a\\\\b\\nc\\td\\x01");
    }

    #[test]
    fn loopback_only() {
        assert!(check_loopback("127.0.0.1:9876").is_ok());
        assert!(check_loopback("127.0.0.2:1;localhost:9877;[::1]:5").is_ok());
        assert!(check_loopback("10.0.0.1:9876").is_err());
        assert!(check_loopback("127.0.0.1:9876;192.168.1.1:9876").is_err());
        assert!(check_loopback("127.0.0.1").is_err());
    }
}
