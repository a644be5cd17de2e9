//! RocketMQ's SQL92 message selector (`MessageSelector.bySql`), sans-io and depending on
//! nothing of ours: parse a consumer's expression once into a [`Selector`], then ask
//! it whether each message's properties match.
//!
//! It follows Apache RocketMQ 5.3.3's `filter` module (the JavaCC grammar
//! `SelectorParser.jj` and the expression classes taken from ActiveMQ) in everything a
//! client can observe: which expressions parse, the text of the error for one that
//! does not (the remark the broker answers with), and which messages match, including
//! RocketMQ's null semantics and its conversions between a string property and a
//! numeric or boolean literal. Expressions are client input: parsing never panics and
//! nesting is bounded by [`MAX_DEPTH`].
//!
//! ```
//! use filter::Selector;
//! let s = Selector::parse("a > 5 AND color IN ('red', 'blue')").unwrap();
//! let props = [("a", "7"), ("color", "red")];
//! assert!(s.matches(|name| props.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)));
//! assert!(!s.matches(|_| None));
//! ```
//!
//! Layout:
//! - `lexer`: tokens, JavaCC positions and lexical errors.
//! - `parser`: the grammar, RocketMQ's build-time checks, JavaCC's syntax error text.
//! - `ast`: the compiled expression and its Java `toString`.
//! - `eval`: evaluation and its faults ([`Fault`]).
//! - `java`: the Java number parsing, ordering and formatting the semantics rest on.
//! - [`error`]: why an expression does not compile ([`ParseError`]).

mod ast;
pub mod error;
mod eval;
mod java;
mod lexer;
mod parser;

pub use error::{ErrorKind, ParseError};
pub use eval::Fault;

/// How deeply an expression may nest (parentheses, unary operators, and chains such as
/// `a = b = c`) before it is refused: far beyond any real filter, and shallow enough
/// that parsing and evaluation stay well inside a thread's stack.
pub const MAX_DEPTH: usize = 64;

/// Properties an expression names, by slot, when there are at most this many; beyond
/// it, [`Selector::matches_properties`] allocates.
const INLINE_SLOTS: usize = 16;

/// A compiled SQL92 selector.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    expr: ast::Expr,
    names: Vec<Box<str>>,
}

impl Selector {
    /// Compiles `sql` as RocketMQ's `SqlFilter.compile` does.
    ///
    /// # Errors
    /// The expression RocketMQ refuses, with RocketMQ's message.
    pub fn parse(sql: &str) -> Result<Selector, ParseError> {
        let (expr, names) = parser::Parser::new(sql).parse()?;
        Ok(Selector { expr, names })
    }

    /// The properties the expression reads, in slot order (each once).
    #[must_use]
    pub fn property_names(&self) -> &[Box<str>] {
        &self.names
    }

    /// The slot of property `name`, if the expression reads it.
    #[must_use]
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| **n == *name)
    }

    /// The result of the expression for a message whose property in slot `i` is
    /// `values[i]` (`None`: the message does not have it): true, false, or null
    /// (`Ok(None)`), or the fault RocketMQ would have thrown.
    ///
    /// # Errors
    /// A [`Fault`]: RocketMQ threw evaluating this message.
    pub fn evaluate(&self, values: &[Option<&str>]) -> Result<Option<bool>, Fault> {
        match eval::eval(&self.expr, values)? {
            eval::Value::Bool(b) => Ok(Some(b)),
            _ => Ok(None),
        }
    }

    /// Whether a message with these slot values is delivered: only a true result is.
    #[must_use]
    pub fn matches_values(&self, values: &[Option<&str>]) -> bool {
        matches!(self.evaluate(values), Ok(Some(true)))
    }

    /// Whether a message whose properties `lookup` answers is delivered.
    pub fn matches<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> bool {
        let n = self.names.len();
        if n <= INLINE_SLOTS {
            let mut values = [None; INLINE_SLOTS];
            for (slot, name) in self.names.iter().enumerate() {
                values[slot] = lookup(name);
            }
            self.matches_values(&values[..n])
        } else {
            let values: Vec<_> = self.names.iter().map(|name| lookup(name)).collect();
            self.matches_values(&values)
        }
    }

    /// Whether a message with these `(name, value)` properties is delivered, looking
    /// at each pair once (a repeated name: the last one counts, as in a Java map).
    pub fn matches_properties<'a>(
        &self,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> bool {
        let n = self.names.len();
        let mut inline = [None; INLINE_SLOTS];
        let mut heap = Vec::new();
        let values: &mut [Option<&'a str>] = if n <= INLINE_SLOTS {
            &mut inline[..n]
        } else {
            heap.resize(n, None);
            &mut heap
        };
        if n > 0 {
            for (k, v) in pairs {
                if let Some(slot) = self.slot(k) {
                    values[slot] = Some(v);
                }
            }
        }
        self.matches_values(values)
    }
}

impl std::fmt::Display for Selector {
    /// The expression as RocketMQ prints it (`toString` of the compiled expression).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.expr.show(&self.names))
    }
}

impl std::str::FromStr for Selector {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Selector::parse(s)
    }
}
