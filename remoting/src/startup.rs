//! What every sluice binary does when it cannot run: say why once, on one line of
//! stderr, and exit non-zero. An operator (or a supervisor's log) sees one line naming
//! the cause, never the same error twice through two channels, and never a multi-line
//! dump whose first line says nothing.

use std::fmt::Display;
use std::process::ExitCode;

/// Prints `program: cause` on one line of stderr and returns the failure exit code.
/// Line breaks inside `cause` (a parser's caret diagram) are folded into ` | `.
#[must_use]
pub fn fatal(program: &str, cause: impl Display) -> ExitCode {
    eprintln!("{program}: {}", one_line(&cause.to_string()));
    ExitCode::FAILURE
}

/// `text` with its lines trimmed, blank ones dropped, and the rest joined by ` | `.
#[must_use]
pub fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_line_causes_fold_into_one() {
        assert_eq!(one_line("a\n  |\n\n  b  \n"), "a | | | b");
        assert_eq!(one_line("single"), "single");
        assert_eq!(one_line(""), "");
    }
}
