//! The compiled expression: RocketMQ's expression classes (`ConstantExpression`,
//! `PropertyExpression`, `ComparisonExpression`, `LogicExpression`, `UnaryExpression`,
//! `UnaryInExpression`, the CONTAINS family) as one enum, properties referred to by slot
//! so a message's values can be looked up once. `Display` prints a node as Java's
//! `toString` does, because RocketMQ's parse errors quote expressions that way.

use std::collections::HashSet;
use std::fmt;

use crate::java::{double_to_string, hash_code};

/// A literal (`ConstantExpression`; its `NULL`, `TRUE` and `FALSE` are
/// `BooleanConstantExpression`s).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Const {
    Null,
    Bool(bool),
    /// A decimal literal that fits an `int` (Java keeps it an `Integer`).
    Int(i32),
    /// A decimal literal beyond `int` (a `Long`).
    Long(i64),
    Double(f64),
    Str(Box<str>),
}

impl Const {
    pub(crate) fn is_number(&self) -> bool {
        matches!(self, Const::Int(_) | Const::Long(_) | Const::Double(_))
    }

    /// `String.valueOf(value)`, as `String.format("%s")` prints it.
    pub(crate) fn java_value(&self) -> String {
        match self {
            Const::Null => "null".into(),
            Const::Bool(b) => b.to_string(),
            Const::Int(i) => i.to_string(),
            Const::Long(l) => l.to_string(),
            Const::Double(d) => double_to_string(*d),
            Const::Str(s) => s.to_string(),
        }
    }
}

/// `>`, `>=`, `<`, `<=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Gt,
    Ge,
    Lt,
    Le,
}

impl CmpOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
        }
    }
}

/// CONTAINS, STARTSWITH, ENDSWITH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextOp {
    Contains,
    StartsWith,
    EndsWith,
}

impl TextOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            TextOp::Contains => "CONTAINS",
            TextOp::StartsWith => "STARTSWITH",
            TextOp::EndsWith => "ENDSWITH",
        }
    }
}

/// The strings of an IN list. RocketMQ keeps fewer than five in a list and more in a
/// `HashSet`, which shows in error messages (a set prints in hash order); we keep the
/// list as written and a set for lookups when it is long.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InList {
    items: Vec<Box<str>>,
    set: Option<HashSet<Box<str>>>,
}

impl InList {
    pub(crate) fn new(items: Vec<Box<str>>) -> Self {
        let set = (items.len() >= 5).then(|| items.iter().cloned().collect());
        InList { items, set }
    }

    pub(crate) fn contains(&self, s: &str) -> bool {
        match &self.set {
            Some(set) => set.contains(s),
            None => self.items.iter().any(|i| &**i == s),
        }
    }

    /// The order Java's `toString` walks it in: as written for a list; for a
    /// `HashSet`, by bucket of `hash ^ hash >>> 16` in a table sized for the elements,
    /// then insertion order (tree bins of eight colliding strings are not modelled).
    fn java_order(&self) -> Vec<&str> {
        if self.set.is_none() {
            return self.items.iter().map(|s| &**s).collect();
        }
        // new HashSet<>(c): HashMap(max((int)(n / .75f) + 1, 16)) → a power of two.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "Java's (int)(size / .75f)"
        )]
        let wanted = ((self.items.len() as f32 / 0.75) as usize + 1).max(16);
        let table = wanted.next_power_of_two();
        let mut unique: Vec<&str> = Vec::new();
        for s in &self.items {
            if !unique.contains(&&**s) {
                unique.push(s);
            }
        }
        let bucket = |s: &str| {
            let h = hash_code(s);
            let spread = h ^ ((h as u32) >> 16) as i32;
            (spread as u32 as usize) & (table - 1)
        };
        let mut ordered: Vec<(usize, usize, &str)> = unique
            .iter()
            .enumerate()
            .map(|(i, s)| (bucket(s), i, *s))
            .collect();
        ordered.sort_unstable();
        ordered.into_iter().map(|(_, _, s)| s).collect()
    }
}

/// A node of a compiled selector.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Const(Const),
    /// A message property, by slot.
    Prop(usize),
    /// Unary minus (not boolean).
    Negate(Box<Expr>),
    /// NOT, also of `<>` and IS NOT NULL.
    Not(Box<Expr>),
    /// A bare property where a boolean is expected (`createBooleanCast`).
    BoolCast(usize),
    /// AND of a left-leaning chain, left to right.
    And(Vec<Expr>),
    /// OR of a left-leaning chain, left to right.
    Or(Vec<Expr>),
    /// `=` and IS NULL (`doCreateEqual`).
    Eq(Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    In {
        prop: usize,
        list: Box<InList>,
        not: bool,
    },
    Text {
        op: TextOp,
        not: bool,
        operand: Box<Expr>,
        search: Box<str>,
    },
}

impl Expr {
    /// Java's `instanceof BooleanExpression`.
    pub(crate) fn is_boolean(&self) -> bool {
        match self {
            Expr::Const(c) => matches!(c, Const::Null | Const::Bool(_)),
            Expr::Prop(_) | Expr::Negate(_) => false,
            _ => true,
        }
    }

    /// The node printed as Java prints it, with property names from `names`.
    pub(crate) fn show<'a>(&'a self, names: &'a [Box<str>]) -> Shown<'a> {
        Shown { expr: self, names }
    }
}

/// An expression with the names of its properties, for `Display`.
pub(crate) struct Shown<'a> {
    expr: &'a Expr,
    names: &'a [Box<str>],
}

fn quoted(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    write!(f, "'{}'", s.replace('\'', "''"))
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = self.names;
        let name = |slot: usize| names.get(slot).map_or("?", |n| &**n);
        match self.expr {
            Expr::Const(c) => match c {
                Const::Null => f.write_str("NULL"),
                Const::Bool(true) => f.write_str("TRUE"),
                Const::Bool(false) => f.write_str("FALSE"),
                Const::Str(s) => quoted(f, s),
                other => f.write_str(&other.java_value()),
            },
            Expr::Prop(slot) | Expr::BoolCast(slot) => f.write_str(name(*slot)),
            Expr::Negate(e) => write!(f, "(- {})", e.show(names)),
            Expr::Not(e) => write!(f, "(NOT {})", e.show(names)),
            Expr::And(items) | Expr::Or(items) => {
                let symbol = if matches!(self.expr, Expr::And(_)) {
                    "&&"
                } else {
                    "||"
                };
                for _ in 1..items.len() {
                    f.write_str("(")?;
                }
                for (i, e) in items.iter().enumerate() {
                    if i == 0 {
                        write!(f, "{}", e.show(names))?;
                    } else {
                        write!(f, " {symbol} {})", e.show(names))?;
                    }
                }
                Ok(())
            }
            Expr::Eq(l, r) => write!(f, "({} == {})", l.show(names), r.show(names)),
            Expr::Cmp(op, l, r) => {
                write!(f, "({} {} {})", l.show(names), op.symbol(), r.show(names))
            }
            Expr::In { prop, list, not } => {
                let symbol = if *not { "NOT IN" } else { "IN" };
                write!(
                    f,
                    "{} {symbol} ( {} )",
                    name(*prop),
                    list.java_order().join(", ")
                )
            }
            Expr::Text {
                op, not, operand, ..
            } => {
                let not = if *not { "NOT " } else { "" };
                write!(f, "({not}{} {})", op.symbol(), operand.show(names))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_lists_print_in_java_order() {
        let list = |v: &[&str]| InList::new(v.iter().map(|s| (*s).into()).collect());
        // Fewer than five: as written, duplicates kept.
        assert_eq!(list(&["b", "a", "b"]).java_order(), ["b", "a", "b"]);
        // Five or more: a HashSet of 16 buckets, "a".."e" hash to 97..101.
        assert_eq!(
            list(&["e", "d", "c", "b", "a", "a"]).java_order(),
            ["a", "b", "c", "d", "e"]
        );
        // "q" (113) lands in bucket 1, before "b" (98, bucket 2).
        assert_eq!(
            list(&["b", "q", "c", "d", "e"]).java_order(),
            ["q", "b", "c", "d", "e"]
        );
    }
}
