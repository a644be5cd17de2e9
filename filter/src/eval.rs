//! Evaluation with RocketMQ's semantics: three-valued logic (a missing property is
//! null, and null is neither true nor false), Java's type promotions between `Integer`,
//! `Long`, `Double`, `Boolean` and `String` (`ComparisonExpression.__compare`), and
//! RocketMQ's exceptions as [`Fault`]s — a fault anywhere makes the whole message not
//! match, because the broker catches the exception and answers "no". The order in
//! which operands are evaluated follows Java's, since it decides between null, false
//! and a fault.

use std::cmp::Ordering;

use crate::ast::{CmpOp, Const, Expr, TextOp};
use crate::java::{compare_double, compare_utf16, parse_bool, parse_double, parse_int, parse_long};

/// Why evaluating a message threw in RocketMQ (the broker logs it and the message does
/// not match).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// A string property could not be read as the number (or boolean) it was compared
    /// with (`NumberFormatException`).
    NumberFormat,
    /// `>`, `>=`, `<` or `<=` between two strings that are not both numbers.
    StringComparison,
    /// A boolean literal compared with a string, written literal first
    /// (`ClassCastException` in `__compare`).
    ClassCast,
}

/// A value while evaluating: a Java object of one of the types a selector can produce.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'a> {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(&'a str),
}

impl<'a> Value<'a> {
    fn of(c: &'a Const) -> Self {
        match c {
            Const::Null => Value::Null,
            Const::Bool(b) => Value::Bool(*b),
            Const::Int(i) => Value::Int(*i),
            Const::Long(l) => Value::Long(*l),
            Const::Double(d) => Value::Double(*d),
            Const::Str(s) => Value::Str(s),
        }
    }
}

/// Why `__compare` failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CompareError {
    /// `Integer`/`Long`/`Double.valueOf` refused the string (its exception message).
    NumberFormat(String),
    /// `Boolean.valueOf((String) lv)` with a `Boolean` lv.
    ClassCast,
}

impl From<CompareError> for Fault {
    fn from(e: CompareError) -> Self {
        match e {
            CompareError::NumberFormat(_) => Fault::NumberFormat,
            CompareError::ClassCast => Fault::ClassCast,
        }
    }
}

fn nfe(s: &str) -> CompareError {
    CompareError::NumberFormat(format!("For input string: \"{s}\""))
}

fn int_of(s: &str) -> Result<i32, CompareError> {
    parse_int(s).ok_or_else(|| nfe(s))
}

fn long_of(s: &str) -> Result<i64, CompareError> {
    parse_long(s).ok_or_else(|| nfe(s))
}

fn double_of(s: &str) -> Result<f64, CompareError> {
    parse_double(s).map_err(|e| CompareError::NumberFormat(e.to_string()))
}

/// `ComparisonExpression.__compare(lv, rv, true)`: both non-null. Values of different
/// types are converted as Java converts them; a pair it cannot convert compares as
/// "less" (-1).
#[allow(clippy::cast_precision_loss, reason = "Java's long-to-double widening")]
pub(crate) fn compare(lv: Value<'_>, rv: Value<'_>) -> Result<Ordering, CompareError> {
    use Value as V;
    Ok(match (lv, rv) {
        (V::Bool(a), V::Bool(b)) => a.cmp(&b),
        (V::Int(a), V::Int(b)) => a.cmp(&b),
        (V::Long(a), V::Long(b)) => a.cmp(&b),
        (V::Double(a), V::Double(b)) => compare_double(a, b),
        (V::Str(a), V::Str(b)) => compare_utf16(a, b),
        (V::Bool(_), V::Str(_)) => return Err(CompareError::ClassCast),
        (V::Int(a), V::Long(b)) => i64::from(a).cmp(&b),
        (V::Int(a), V::Double(b)) => compare_double(f64::from(a), b),
        (V::Int(a), V::Str(b)) => a.cmp(&int_of(b)?),
        (V::Long(a), V::Int(b)) => a.cmp(&i64::from(b)),
        (V::Long(a), V::Double(b)) => compare_double(a as f64, b),
        (V::Long(a), V::Str(b)) => a.cmp(&long_of(b)?),
        (V::Double(a), V::Int(b)) => compare_double(a, f64::from(b)),
        (V::Double(a), V::Long(b)) => compare_double(a, b as f64),
        (V::Double(a), V::Str(b)) => compare_double(a, double_of(b)?),
        (V::Str(a), V::Bool(b)) => parse_bool(a).cmp(&b),
        (V::Str(a), V::Int(b)) => int_of(a)?.cmp(&b),
        (V::Str(a), V::Long(b)) => long_of(a)?.cmp(&b),
        (V::Str(a), V::Double(b)) => compare_double(double_of(a)?, b),
        _ => Ordering::Less,
    })
}

/// Java's `lv.equals(rv)` for two non-null values (same type and equal; doubles by
/// their bits, so NaN equals NaN and -0.0 does not equal 0.0).
fn java_equals(lv: Value<'_>, rv: Value<'_>) -> bool {
    match (lv, rv) {
        (Value::Double(a), Value::Double(b)) => compare_double(a, b) == Ordering::Equal,
        (a, b) => a == b,
    }
}

/// Evaluates `e` with `props[slot]` the value of each property (`None`: absent).
pub(crate) fn eval<'a>(e: &'a Expr, props: &[Option<&'a str>]) -> Result<Value<'a>, Fault> {
    let prop = |slot: usize| props.get(slot).copied().flatten();
    Ok(match e {
        Expr::Const(c) => Value::of(c),
        Expr::Prop(slot) => prop(*slot).map_or(Value::Null, Value::Str),
        Expr::Negate(inner) => match eval(inner, props)? {
            Value::Int(i) => Value::Int(i.wrapping_neg()),
            Value::Long(l) => Value::Long(l.wrapping_neg()),
            Value::Double(d) => Value::Double(-d),
            _ => Value::Null,
        },
        Expr::Not(inner) => match eval(inner, props)? {
            Value::Bool(b) => Value::Bool(!b),
            Value::Null => Value::Null,
            _ => return Err(Fault::ClassCast),
        },
        // A property's value is a String, never a Boolean: present means false.
        Expr::BoolCast(slot) => prop(*slot).map_or(Value::Null, |_| Value::Bool(false)),
        Expr::And(items) => logic(items, props, false)?,
        Expr::Or(items) => logic(items, props, true)?,
        Expr::Eq(l, r) => {
            let lv = eval(l, props)?;
            let rv = eval(r, props)?;
            match (lv, rv) {
                (Value::Null, Value::Null) => Value::Bool(true),
                (Value::Null, _) => Value::Null,
                (_, Value::Null) => Value::Bool(false),
                (a, b) if java_equals(a, b) => Value::Bool(true),
                (a, b) => Value::Bool(compare(a, b)? == Ordering::Equal),
            }
        }
        Expr::Cmp(op, l, r) => {
            let lv = eval(l, props)?;
            if lv == Value::Null {
                return Ok(Value::Null);
            }
            let rv = eval(r, props)?;
            if rv == Value::Null {
                return Ok(Value::Null);
            }
            let ordering = match (lv, rv) {
                (Value::Str(a), Value::Str(b)) => {
                    let a = parse_double(a).map_err(|_| Fault::StringComparison)?;
                    let b = parse_double(b).map_err(|_| Fault::StringComparison)?;
                    compare_double(a, b)
                }
                (a, b) => compare(a, b)?,
            };
            Value::Bool(match op {
                CmpOp::Gt => ordering == Ordering::Greater,
                CmpOp::Ge => ordering != Ordering::Less,
                CmpOp::Lt => ordering == Ordering::Less,
                CmpOp::Le => ordering != Ordering::Greater,
            })
        }
        Expr::In {
            prop: slot,
            list,
            not,
        } => match prop(*slot) {
            None => Value::Null,
            Some(v) => Value::Bool(list.contains(v) != *not),
        },
        Expr::Text {
            op,
            not,
            operand,
            search,
        } => {
            if search.is_empty() {
                return Ok(Value::Bool(false));
            }
            match eval(operand, props)? {
                Value::Str(s) => {
                    let found = match op {
                        TextOp::Contains => s.contains(&**search),
                        TextOp::StartsWith => s.starts_with(&**search),
                        TextOp::EndsWith => s.ends_with(&**search),
                    };
                    Value::Bool(found != *not)
                }
                _ => Value::Bool(false),
            }
        }
    })
}

/// AND (`short` = false) or OR (`short` = true) of a chain, left to right: the first
/// operand equal to `short` decides; otherwise any null makes the result null.
fn logic<'a>(
    items: &'a [Expr],
    props: &[Option<&'a str>],
    short: bool,
) -> Result<Value<'a>, Fault> {
    let mut null = false;
    for e in items {
        match eval(e, props)? {
            Value::Bool(b) if b == short => return Ok(Value::Bool(short)),
            Value::Bool(_) => {}
            Value::Null => null = true,
            _ => return Err(Fault::ClassCast),
        }
    }
    Ok(if null {
        Value::Null
    } else {
        Value::Bool(!short)
    })
}
