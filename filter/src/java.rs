//! The few pieces of the Java platform whose exact behaviour a selector depends on:
//! `Integer`/`Long.valueOf(String)` (any Unicode decimal digit), `Double.valueOf(String)`
//! (trimming, `NaN`, `Infinity`, hex floats, a type suffix), `Double.compare`,
//! `Double.toString`, `String.compareTo` (UTF-16 order), `String.hashCode` and JavaCC's
//! `addEscapes`. RocketMQ converts a message's string property to the type of the literal
//! it is compared with by calling these, so a value matches exactly when Java's parser
//! accepts it.

use std::cmp::Ordering;

/// First code unit of each run of ten decimal digits (Unicode category Nd) in the Basic
/// Multilingual Plane, as Java 17's `Character.digit(char, 10)` knows them (Unicode 13).
/// Java parses `char` by `char`, so digits outside the BMP (surrogate pairs) never count.
const DIGIT_ZEROS: [u16; 37] = [
    0x0030, 0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6,
    0x0D66, 0x0DE6, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80,
    0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
    0xFF10,
];

/// `Character.digit(unit, 10)`.
fn decimal_digit(unit: u16) -> Option<u32> {
    if (0x30..=0x39).contains(&unit) {
        return Some(u32::from(unit - 0x30));
    }
    let at = DIGIT_ZEROS.partition_point(|&zero| zero <= unit);
    let zero = *DIGIT_ZEROS.get(at.checked_sub(1)?)?;
    let d = unit - zero;
    (d < 10).then_some(u32::from(d))
}

/// `Integer.parseInt` / `Long.parseLong` in radix 10, bounded by `[min, max]`.
fn parse_integer(s: &str, min: i128, max: i128) -> Option<i128> {
    let mut chars = s.chars();
    let first = chars.clone().next()?;
    let mut negative = false;
    if first < '0' {
        match first {
            '-' => negative = true,
            '+' => {}
            _ => return None,
        }
        chars.next();
        if chars.as_str().is_empty() {
            return None;
        }
    }
    let mut value: i128 = 0;
    for c in chars {
        // Java walks UTF-16 code units: a character outside the BMP is two units,
        // neither of them a digit.
        let unit = u16::try_from(u32::from(c)).ok()?;
        value = value * 10 + i128::from(decimal_digit(unit)?);
        if value > max + 1 {
            return None;
        }
    }
    let value = if negative { -value } else { value };
    (min..=max).contains(&value).then_some(value)
}

/// `Integer.valueOf(String)`.
#[must_use]
pub fn parse_int(s: &str) -> Option<i32> {
    parse_integer(s, i128::from(i32::MIN), i128::from(i32::MAX)).and_then(|v| i32::try_from(v).ok())
}

/// `Long.valueOf(String)`.
#[must_use]
pub fn parse_long(s: &str) -> Option<i64> {
    parse_integer(s, i128::from(i64::MIN), i128::from(i64::MAX)).and_then(|v| i64::try_from(v).ok())
}

/// `Boolean.valueOf(String)`: `true` for any case of "true", `false` for anything else.
#[must_use]
pub fn parse_bool(s: &str) -> bool {
    s.eq_ignore_ascii_case("true")
}

/// Why `Double.valueOf(String)` refused a string: the `NumberFormatException` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DoubleError {
    /// Nothing left after trimming: "empty String".
    Empty,
    /// Two decimal points: "multiple points".
    MultiplePoints,
    /// Anything else: `For input string: "<trimmed>"`.
    Invalid(String),
}

impl std::fmt::Display for DoubleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DoubleError::Empty => f.write_str("empty String"),
            DoubleError::MultiplePoints => f.write_str("multiple points"),
            DoubleError::Invalid(s) => write!(f, "For input string: \"{s}\""),
        }
    }
}

/// `String.trim()`: drops leading and trailing code units up to U+0020.
fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// `Double.valueOf(String)` (`FloatingDecimal.readJavaFormatString`), correctly rounded.
///
/// # Errors
/// The string is not a Java floating-point literal.
pub fn parse_double(s: &str) -> Result<f64, DoubleError> {
    let t = java_trim(s);
    if t.is_empty() {
        return Err(DoubleError::Empty);
    }
    let invalid = || DoubleError::Invalid(t.to_owned());
    let b = t.as_bytes();
    let mut i = 0;
    let negative = match b[0] {
        b'-' => {
            i = 1;
            true
        }
        b'+' => {
            i = 1;
            false
        }
        _ => false,
    };
    let rest = &t[i..];
    let signed = |v: f64| if negative { -v } else { v };
    match rest.as_bytes().first() {
        None => return Err(invalid()),
        Some(b'N') => {
            return if rest == "NaN" {
                Ok(f64::NAN)
            } else {
                Err(invalid())
            };
        }
        Some(b'I') => {
            return if rest == "Infinity" {
                Ok(signed(f64::INFINITY))
            } else {
                Err(invalid())
            };
        }
        Some(b'0') if matches!(rest.as_bytes().get(1), Some(b'x' | b'X')) => {
            return parse_hex(&rest[2..]).map(signed).ok_or_else(invalid);
        }
        _ => {}
    }
    // Mantissa: ASCII digits with at most one point, at least one digit.
    let r = rest.as_bytes();
    let mut j = 0;
    let mut digits = 0;
    let mut point = false;
    while j < r.len() {
        match r[j] {
            b'0'..=b'9' => digits += 1,
            b'.' if point => return Err(DoubleError::MultiplePoints),
            b'.' => point = true,
            _ => break,
        }
        j += 1;
    }
    if digits == 0 {
        return Err(invalid());
    }
    if j < r.len() && matches!(r[j], b'e' | b'E') {
        j += 1;
        if j < r.len() && matches!(r[j], b'+' | b'-') {
            j += 1;
        }
        let at = j;
        while j < r.len() && r[j].is_ascii_digit() {
            j += 1;
        }
        if j == at {
            return Err(invalid());
        }
    }
    let number = &rest[..j];
    if j < r.len() && !(j == r.len() - 1 && matches!(r[j], b'f' | b'F' | b'd' | b'D')) {
        return Err(invalid());
    }
    // What is left is a plain decimal literal, which Rust parses correctly rounded too.
    number.parse::<f64>().map(signed).map_err(|_| invalid())
}

/// The part of a Java hex float after `0x`: `(hex+ .? | hex* . hex+) [pP] [+-]? digits
/// [fFdD]?`, correctly rounded (round half to even, subnormals included).
fn parse_hex(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut j = 0;
    let mut mantissa: u64 = 0;
    let mut sticky = false;
    let mut exp: i64 = 0;
    let (mut before, mut after) = (0usize, 0usize);
    let mut point = false;
    while j < b.len() {
        let c = b[j];
        if c == b'.' && !point {
            point = true;
        } else if let Some(d) = char::from(c).to_digit(16) {
            if point {
                after += 1;
            } else {
                before += 1;
            }
            if mantissa >> 56 == 0 {
                mantissa = mantissa << 4 | u64::from(d);
                if point {
                    exp -= 4;
                }
            } else {
                sticky |= d != 0;
                if !point {
                    exp += 4;
                }
            }
        } else {
            break;
        }
        j += 1;
    }
    if before + after == 0 || !matches!(b.get(j), Some(b'p' | b'P')) {
        return None;
    }
    j += 1;
    let exp_negative = match b.get(j) {
        Some(b'-') => {
            j += 1;
            true
        }
        Some(b'+') => {
            j += 1;
            false
        }
        _ => false,
    };
    let at = j;
    let mut e: i64 = 0;
    while j < b.len() && b[j].is_ascii_digit() {
        e = (e * 10 + i64::from(b[j] - b'0')).min(1 << 40);
        j += 1;
    }
    if j == at {
        return None;
    }
    if j < b.len() && !(j == b.len() - 1 && matches!(b[j], b'f' | b'F' | b'd' | b'D')) {
        return None;
    }
    exp += if exp_negative { -e } else { e };
    Some(make_double(mantissa, exp, sticky))
}

/// `mantissa × 2^exp` (with `sticky` standing for nonzero bits below the mantissa) as
/// the nearest double, ties to even.
fn make_double(mantissa: u64, exp: i64, sticky: bool) -> f64 {
    if mantissa == 0 {
        return 0.0;
    }
    let bits = i64::from(64 - mantissa.leading_zeros());
    let lead = exp + bits - 1;
    if lead > 1023 {
        return f64::INFINITY;
    }
    // Bits kept: 53 for normal numbers, fewer below 2^-1022.
    let precision = if lead >= -1022 { 53 } else { lead + 1075 };
    if precision <= 0 {
        // Below half the smallest subnormal (or exactly half with nothing after: to even, 0).
        let half = precision == 0 && (mantissa != 1 << (bits - 1) || sticky);
        return if half { f64::from_bits(1) } else { 0.0 };
    }
    let shift = bits - precision;
    let (mut m, mut e) = (mantissa, exp);
    if shift > 0 {
        let s = u32::try_from(shift).unwrap_or(63);
        let rem = mantissa & ((1u64 << s) - 1);
        let half = 1u64 << (s - 1);
        m = mantissa >> s;
        e += shift;
        let above = rem > half || (rem == half && sticky);
        if above || (rem == half && !sticky && m & 1 == 1) {
            m += 1;
            if m >> precision != 0 {
                m >>= 1;
                e += 1;
            }
        }
    }
    // m < 2^53 now: m × 2^e exactly, scaled in two steps to stay within f64's range.
    #[allow(clippy::cast_precision_loss, reason = "m has at most 53 bits")]
    let v = m as f64;
    let e = i32::try_from(e).unwrap_or(i32::MAX);
    let half = e / 2;
    v * 2f64.powi(half) * 2f64.powi(e - half)
}

/// `Double.compare`: numeric order, then `-0.0 < 0.0`, and NaN above everything.
#[must_use]
pub fn compare_double(a: f64, b: f64) -> Ordering {
    if a < b {
        return Ordering::Less;
    }
    if a > b {
        return Ordering::Greater;
    }
    let bits = |d: f64| -> i64 {
        let raw = if d.is_nan() {
            0x7ff8_0000_0000_0000
        } else {
            d.to_bits()
        };
        i64::from_ne_bytes(raw.to_ne_bytes())
    };
    bits(a).cmp(&bits(b))
}

/// `Double.toString` of a finite or infinite double (shortest digits that read back).
#[must_use]
pub fn double_to_string(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sign = if d.is_sign_negative() { "-" } else { "" };
    if d == 0.0 {
        return format!("{sign}0.0");
    }
    let sci = format!("{:e}", d.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let abs = d.abs();
    if (1e-3..1e7).contains(&abs) {
        if exp >= 0 {
            let int_len = usize::try_from(exp + 1).unwrap_or(0);
            let (int, frac) = if digits.len() > int_len {
                (digits[..int_len].to_owned(), digits[int_len..].to_owned())
            } else {
                (format!("{digits:0<int_len$}"), String::new())
            };
            let frac = if frac.is_empty() {
                "0".to_owned()
            } else {
                frac
            };
            format!("{sign}{int}.{frac}")
        } else {
            let zeros = usize::try_from(-exp - 1).unwrap_or(0);
            format!("{sign}0.{}{digits}", "0".repeat(zeros))
        }
    } else {
        // Two significant digits at least ("d.dE"): for a one-digit shortest form Java
        // writes the nearest two-digit decimal (4.9E-324, not 5.0E-324).
        let (digits, exp) = if digits.len() == 1 {
            let two = format!("{abs:.1e}");
            let (m, e) = two.split_once('e').unwrap_or((&two, "0"));
            (m.replace('.', ""), e.parse().unwrap_or(exp))
        } else {
            (digits, exp)
        };
        let (first, rest) = digits.split_at(1);
        format!("{sign}{first}.{rest}E{exp}")
    }
}

/// `String.compareTo`: lexicographic over UTF-16 code units.
#[must_use]
pub fn compare_utf16(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// `String.hashCode()`.
#[must_use]
pub fn hash_code(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

/// JavaCC's `addEscapes` over UTF-16 code units: C escapes for the usual controls and
/// quotes, `\uXXXX` for anything else outside printable ASCII, NUL dropped.
#[must_use]
pub fn add_escapes(units: &[u16]) -> String {
    let mut out = String::with_capacity(units.len());
    for &u in units {
        match u {
            0 => {}
            0x08 => out.push_str("\\b"),
            0x09 => out.push_str("\\t"),
            0x0A => out.push_str("\\n"),
            0x0C => out.push_str("\\f"),
            0x0D => out.push_str("\\r"),
            0x22 => out.push_str("\\\""),
            0x27 => out.push_str("\\'"),
            0x5C => out.push_str("\\\\"),
            0x20..=0x7E => out.push(char::from(u8::try_from(u).unwrap_or(b'?'))),
            _ => out.push_str(&format!("\\u{u:04x}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_like_java() {
        assert_eq!(parse_int("42"), Some(42));
        assert_eq!(parse_int("+42"), Some(42));
        assert_eq!(parse_int("-0"), Some(0));
        assert_eq!(parse_int("007"), Some(7));
        assert_eq!(parse_int("2147483647"), Some(i32::MAX));
        assert_eq!(parse_int("-2147483648"), Some(i32::MIN));
        assert_eq!(parse_int("2147483648"), None);
        assert_eq!(parse_long("2147483648"), Some(2_147_483_648));
        assert_eq!(parse_long("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_long("9223372036854775808"), None);
        for bad in [
            "", "+", "-", " 1", "1 ", "1.0", "1e3", "0x10", "１x", "1_000",
        ] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
        // Character.digit knows every decimal digit of the BMP, not only ASCII.
        assert_eq!(parse_int("١٢"), Some(12));
        assert_eq!(parse_int("１２３"), Some(123));
        assert_eq!(parse_int("߁"), Some(1));
        // ...but not one written as a surrogate pair.
        assert_eq!(parse_int("\u{1D7CE}"), None);
    }

    #[test]
    fn doubles_parse_like_java() {
        let ok = |s: &str| parse_double(s).unwrap();
        assert_eq!(ok("1.5"), 1.5);
        assert_eq!(ok("  1.5\t"), 1.5);
        assert_eq!(ok("\u{0}1.5\u{1f}"), 1.5);
        assert_eq!(ok("1."), 1.0);
        assert_eq!(ok(".5"), 0.5);
        assert_eq!(ok("-.5e1"), -5.0);
        assert_eq!(ok("1E+2"), 100.0);
        assert_eq!(ok("1.5f"), 1.5);
        assert_eq!(ok("2D"), 2.0);
        assert_eq!(ok("007"), 7.0);
        assert!(ok("NaN").is_nan());
        assert!(ok("-NaN").is_nan());
        assert_eq!(ok("-Infinity"), f64::NEG_INFINITY);
        assert_eq!(ok("1e400"), f64::INFINITY);
        assert_eq!(ok("0x1p3"), 8.0);
        assert_eq!(ok("0X1.8P1"), 3.0);
        assert_eq!(ok("-0x.8p0d"), -0.5);
        assert_eq!(ok("0x1p-1074"), f64::from_bits(1));
        assert_eq!(ok("0x1.fffffffffffff8p0"), 2.0);
        // Exactly halfway between 1 and the next double: ties to even.
        assert_eq!(ok("0x1.00000000000008p0"), 1.0);
        assert_eq!(parse_double(""), Err(DoubleError::Empty));
        assert_eq!(parse_double("  "), Err(DoubleError::Empty));
        assert_eq!(parse_double("1..2"), Err(DoubleError::MultiplePoints));
        for bad in [
            ".",
            "e5",
            "1e",
            "1e+",
            "1.5ff",
            "inf",
            "nan",
            "Infinityx",
            "1,5",
            "0x1",
            "0xp1",
            "١",
        ] {
            assert!(
                matches!(parse_double(bad), Err(DoubleError::Invalid(_))),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_double(" x ").unwrap_err().to_string(),
            "For input string: \"x\""
        );
    }

    #[test]
    fn double_compare_is_javas_total_order() {
        assert_eq!(compare_double(1.0, 2.0), Ordering::Less);
        assert_eq!(compare_double(-0.0, 0.0), Ordering::Less);
        assert_eq!(compare_double(f64::NAN, f64::INFINITY), Ordering::Greater);
        assert_eq!(compare_double(f64::NAN, f64::NAN), Ordering::Equal);
        assert_eq!(compare_double(f64::NEG_INFINITY, f64::NAN), Ordering::Less);
    }

    #[test]
    fn double_to_string_like_java() {
        for (d, s) in [
            (1.5, "1.5"),
            (100.0, "100.0"),
            (0.001, "0.001"),
            (0.000_1, "1.0E-4"),
            (1e7, "1.0E7"),
            (9_999_999.0, "9999999.0"),
            (1.234e10, "1.234E10"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
            (123.456, "123.456"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::from_bits(1), "4.9E-324"),
        ] {
            assert_eq!(double_to_string(d), s);
        }
    }

    #[test]
    fn strings_compare_and_hash_like_java() {
        assert_eq!(compare_utf16("a", "b"), Ordering::Less);
        // U+FFFF sorts after a surrogate pair in UTF-16, before it in UTF-8.
        assert_eq!(compare_utf16("\u{FFFF}", "\u{1F600}"), Ordering::Greater);
        assert_eq!(hash_code("hello"), 99_162_322);
        assert_eq!(
            add_escapes(&"a'\"\\\t\u{e9}\0".encode_utf16().collect::<Vec<_>>()),
            "a\\'\\\"\\\\\\t\\u00e9"
        );
    }
}
