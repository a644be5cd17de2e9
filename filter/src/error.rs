//! Why a selector did not compile. RocketMQ answers a bad expression with the
//! `toString()` of the exception its parser threw (the remark of CHECK_CLIENT_CONFIG's
//! SUBSCRIPTION_PARSE_FAILED), so [`ParseError`] carries that text, byte for byte.

use std::fmt;

/// What kind of failure a [`ParseError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bad grammar (`ParseException` from JavaCC), including a non-boolean expression.
    Syntax,
    /// A character no token starts with, an unterminated string or comment
    /// (`TokenMgrError`).
    Lexical,
    /// A construct RocketMQ rejects while building the expression (`RuntimeException`,
    /// `NumberFormatException`, `ClassCastException`): `a > 'x'`, `a = NULL`,
    /// `a BETWEEN 2 AND 1`, a literal out of range, IN on a non-property.
    Invalid,
    /// Nested deeper than [`MAX_DEPTH`](crate::MAX_DEPTH) (RocketMQ would recurse until
    /// its stack overflows).
    TooDeep,
}

/// A selector that does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    kind: ErrorKind,
    message: String,
}

impl ParseError {
    pub(crate) fn new(kind: ErrorKind, message: String) -> Self {
        ParseError { kind, message }
    }

    /// What kind of failure.
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// RocketMQ's text for it (`MQFilterException.getMessage()`: the cause's class and
    /// message), e.g. `java.lang.RuntimeException: Value ''x'' cannot be compared.`.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}

/// Java class names the messages start with.
pub(crate) const PARSE_EXCEPTION: &str = "org.apache.rocketmq.filter.parser.ParseException";
pub(crate) const TOKEN_MGR_ERROR: &str = "org.apache.rocketmq.filter.parser.TokenMgrError";
pub(crate) const RUNTIME_EXCEPTION: &str = "java.lang.RuntimeException";
pub(crate) const NUMBER_FORMAT_EXCEPTION: &str = "java.lang.NumberFormatException";
/// Java 17's text for `(String) aBoolean`.
pub(crate) const BOOLEAN_TO_STRING_CAST: &str = "java.lang.ClassCastException: class java.lang.Boolean cannot be cast to class java.lang.String (java.lang.Boolean and java.lang.String are in module java.base of loader 'bootstrap')";
