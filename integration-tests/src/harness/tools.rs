//! The tools integration tests run besides cargo — Java (the official clients and `mqadmin`,
//! Apache RocketMQ's broker), Maven (builds the Java programs, fetches Apache RocketMQ), Go
//! (the Go client programs), Python (the Python gRPC SDK's program), Node.js and Chromium (the
//! web console's check in a real browser) — and the one place that decides what a test does when one is
//! missing: under `make it` (`SLUICE_REQUIRE_TOOLS=1`) it fails, naming the tool; otherwise
//! (`make unit`, a plain `cargo test`) it is skipped, with a line on stderr saying which tool
//! it needed.
//!
//! ```no_run
//! #[test]
//! fn needs_java() {
//!     integration_tests::require_tools!(Java, Maven);
//!     // ... JavaTools::get(V4) ...
//! }
//! ```

use std::env;
use std::ffi::OsStr;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Set to `1` (as `make it` does) to make a missing tool fail the test instead of skipping it.
pub const REQUIRE_ENV: &str = "SLUICE_REQUIRE_TOOLS";

/// A tool some integration tests need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// `java` (`$JAVA_HOME/bin/java`, else on `PATH`): Java 17.
    Java,
    /// `mvn` on `PATH`.
    Maven,
    /// `go` on `PATH`.
    Go,
    /// `python3` on `PATH` (with its `venv` module): the Python gRPC SDK's programs.
    Python,
    /// `node` (with `npm`) on `PATH`: the console check driving Chromium.
    Node,
    /// `chromium` on `PATH` (Debian's package): the console check's browser.
    Chromium,
}

impl Tool {
    /// The command it is run as.
    #[must_use]
    pub fn command(self) -> &'static str {
        match self {
            Tool::Java => "java",
            Tool::Maven => "mvn",
            Tool::Go => "go",
            Tool::Python => "python3",
            Tool::Node => "node",
            Tool::Chromium => "chromium",
        }
    }

    /// Where it is, when it is installed (looked up once per process).
    #[must_use]
    pub fn path(self) -> Option<&'static Path> {
        static FOUND: [OnceLock<Option<PathBuf>>; 6] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
        let slot = match self {
            Tool::Java => &FOUND[0],
            Tool::Maven => &FOUND[1],
            Tool::Go => &FOUND[2],
            Tool::Python => &FOUND[3],
            Tool::Node => &FOUND[4],
            Tool::Chromium => &FOUND[5],
        };
        slot.get_or_init(|| {
            let java_home = match self {
                Tool::Java => env::var_os("JAVA_HOME")
                    .map(|h| Path::new(&h).join("bin").join("java"))
                    .filter(|p| p.is_file()),
                Tool::Maven | Tool::Go | Tool::Python | Tool::Node | Tool::Chromium => None,
            };
            java_home.or_else(|| on_path(self.command()))
        })
        .as_deref()
    }

    /// Whether it is installed.
    #[must_use]
    pub fn installed(self) -> bool {
        self.path().is_some()
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Tool::Java => "Java",
            Tool::Maven => "Maven",
            Tool::Go => "Go",
            Tool::Python => "Python",
            Tool::Node => "Node.js",
            Tool::Chromium => "Chromium",
        })
    }
}

/// The first executable `name` in `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = env::var_os("PATH")?;
    env::split_paths(&path).map(|dir| dir.join(name)).find(|p| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// The `java` to run: `$JAVA_HOME/bin/java`, else `java` on `PATH` (which may be missing).
#[must_use]
pub fn java_binary() -> PathBuf {
    Tool::Java
        .path()
        .map_or_else(|| PathBuf::from("java"), Path::to_owned)
}

/// What is missing of `tools`, said in one line (`None`: all installed).
#[must_use]
pub fn missing(tools: &[Tool]) -> Option<String> {
    let absent: Vec<String> = tools
        .iter()
        .filter(|t| !t.installed())
        .map(|t| format!("{t} (`{}` not found)", t.command()))
        .collect();
    (!absent.is_empty()).then(|| absent.join(", "))
}

/// Whether the tools are required (`SLUICE_REQUIRE_TOOLS=1`).
#[must_use]
pub fn required() -> bool {
    env::var_os(REQUIRE_ENV).is_some_and(|v| v == OsStr::new("1"))
}

/// Whether every tool of `tools` is installed. When one is not: panics under
/// [`REQUIRE_ENV`]`=1`; otherwise prints `SKIPPED <test>: needs ...` to the terminal (past the
/// test harness's capture, so it shows for a passing test) and returns false — the test then
/// returns ([`require_tools!`](crate::require_tools)).
///
/// # Panics
/// When a tool is missing and required.
#[track_caller]
#[must_use]
pub fn available(tools: &[Tool]) -> bool {
    let Some(absent) = missing(tools) else {
        return true;
    };
    let test = std::thread::current()
        .name()
        .unwrap_or("this test")
        .to_owned();
    assert!(
        !required(),
        "{test} needs {absent}: install it, or run it without {REQUIRE_ENV}=1 to skip"
    );
    // Straight to the file descriptor: libtest captures `eprintln!`, not this.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: needs {absent} (`make it` fails instead)"
    );
    false
}

/// Returns from the calling test, skipped with a message, unless every named [`Tool`] is
/// installed; fails it instead under `SLUICE_REQUIRE_TOOLS=1` (`make it`).
#[macro_export]
macro_rules! require_tools {
    ($($tool:ident),+ $(,)?) => {
        if !$crate::harness::tools::available(&[$($crate::harness::tools::Tool::$tool),+]) {
            return;
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_is_on_the_path() {
        assert!(on_path("sh").is_some());
        assert_eq!(on_path("no-such-tool-anywhere"), None);
        assert_eq!(missing(&[]), None);
    }
}
