//! Medians with ranges over repeats, and numbers formatted for a report: shared by the
//! `bench` and `reliability` drivers' pages.

/// Median and range of one figure over repeats (or over the events of a run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    /// Median (mean of the middle two for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Repeats.
    pub n: usize,
}

impl Stat {
    /// Of some values (none: `None`).
    #[must_use]
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            f64::midpoint(v[n / 2 - 1], v[n / 2])
        };
        Some(Stat {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }
}

/// `12 345`, `12.3`, `0.123`: enough digits for the size of the value.
#[must_use]
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        #[allow(clippy::cast_possible_truncation, reason = "display")]
        let n = v.round() as i64;
        group_thousands(n)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a == 0.0 {
        "0".to_owned()
    } else {
        format!("{v:.3}")
    }
}

/// A count: whole numbers without decimals (`12 345`, `2`), anything else as [`fmt_num`].
#[must_use]
pub fn fmt_count(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        #[allow(clippy::cast_possible_truncation, reason = "a whole number in range")]
        let n = v as i64;
        group_thousands(n)
    } else {
        fmt_num(v)
    }
}

fn group_thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push('\u{202f}');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// `median (min–max)`, or the value alone when there is one, `—` for none.
#[must_use]
pub fn fmt_stat(s: Option<Stat>) -> String {
    match s {
        None => "—".to_owned(),
        Some(s) if s.n > 1 && (s.max - s.min).abs() > f64::EPSILON => format!(
            "{} ({}–{})",
            fmt_num(s.median),
            fmt_num(s.min),
            fmt_num(s.max)
        ),
        Some(s) => fmt_num(s.median),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_and_formatting() {
        let s = Stat::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        assert_eq!(Stat::of(&[1.0, 4.0]).unwrap().median, 2.5);
        assert!(Stat::of(&[]).is_none());
        assert_eq!(fmt_num(123_456.4), "123\u{202f}456");
        assert_eq!(fmt_num(12.345), "12.3");
        assert_eq!(fmt_num(0.01234), "0.012");
        assert_eq!(fmt_stat(Some(s)), "2.00 (1.00–3.00)");
        assert_eq!(fmt_stat(None), "—");
        assert_eq!(fmt_count(2.0), "2");
        assert_eq!(fmt_count(12_345.0), "12\u{202f}345");
        assert_eq!(fmt_count(2.5), "2.50");
    }
}
