//! The clock, calendar arithmetic and the timestamp formats mqadmin prints and parses, in UTC
//! (RocketMQ's tools use the JVM's default zone; our hosts run in UTC, and a fixed zone
//! keeps the output testable without a time-zone database).
//!
//! - `yyyy-MM-dd HH:mm:ss,SSS` (`UtilAll.timeMillisToHumanString2`): topicStatus, message views;
//! - `yyyy-MM-dd HH:mm:ss` (`UtilAll.YYYY_MM_DD_HH_MM_SS`): consumerProgress;
//! - `yyyy-MM-dd#HH:mm:ss:SSS` (`UtilAll.YYYY_MM_DD_HH_MM_SS_SSS`): accepted by
//!   resetOffsetByTime / consumeMessage next to plain milliseconds and `now`.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
#[must_use]
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
#[must_use]
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (inverse of [`days_from_civil`]).
#[must_use]
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    // Both are small and positive by construction.
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

struct Parts {
    y: i64,
    mo: u32,
    d: u32,
    h: i64,
    mi: i64,
    s: i64,
    ms: i64,
}

fn parts(ms: i64) -> Parts {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    Parts {
        y,
        mo,
        d,
        h: rem / 3_600_000,
        mi: rem / 60_000 % 60,
        s: rem / 1000 % 60,
        ms: rem % 1000,
    }
}

/// `2026-11-29 14:03:07,123`.
#[must_use]
pub fn human_millis(ms: i64) -> String {
    let p = parts(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02},{:03}",
        p.y, p.mo, p.d, p.h, p.mi, p.s, p.ms
    )
}

/// `2026-11-29 14:03:07`.
#[must_use]
pub fn human_seconds(ms: i64) -> String {
    let p = parts(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        p.y, p.mo, p.d, p.h, p.mi, p.s
    )
}

/// Parses `yyyy-MM-dd#HH:mm:ss:SSS` into epoch milliseconds.
#[must_use]
pub fn parse_rocketmq_date(text: &str) -> Option<i64> {
    let (date, time) = text.split_once('#')?;
    let mut d = date.split('-');
    let y: i64 = d.next()?.parse().ok()?;
    let mo: u32 = d.next()?.parse().ok()?;
    let day: u32 = d.next()?.parse().ok()?;
    if d.next().is_some()
        || !(-MAX_YEAR..=MAX_YEAR).contains(&y)
        || !(1..=12).contains(&mo)
        || !(1..=31).contains(&day)
    {
        return None;
    }
    let t: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, mi, s, ms] = t[..] else {
        return None;
    };
    if !(0..24).contains(&h)
        || !(0..60).contains(&mi)
        || !(0..60).contains(&s)
        || !(0..1000).contains(&ms)
    {
        return None;
    }
    days_from_civil(y, mo, day)
        .checked_mul(86_400_000)?
        .checked_add(h * 3_600_000 + mi * 60_000 + s * 1000 + ms)
}

/// Years whose days [`days_from_civil`] computes without overflow; epoch milliseconds
/// (checked) reach about 292 million years either way.
const MAX_YEAR: i64 = 1_000_000_000;

/// A timestamp option: `now`, epoch milliseconds, or `yyyy-MM-dd#HH:mm:ss:SSS`.
#[must_use]
pub fn parse_timestamp_arg(text: &str, now_ms: i64) -> Option<i64> {
    let text = text.trim();
    if text == "now" {
        return Some(now_ms);
    }
    text.parse().ok().or_else(|| parse_rocketmq_date(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Last millisecond of 9999-12-31, the largest `yyyy` date.
    const MAX_4_DIGIT_YEAR_MS: i64 = 253_402_300_799_999;

    proptest! {
        #[test]
        fn timestamp_args_never_panic(text in "\\PC{0,40}|[0-9#:\\- ]{0,40}", now in any::<i64>()) {
            let _ = parse_timestamp_arg(&text, now);
        }

        #[test]
        fn dates_read_back(ms in 0..=MAX_4_DIGIT_YEAR_MS) {
            // `yyyy-MM-dd HH:mm:ss,SSS` -> `yyyy-MM-dd#HH:mm:ss:SSS`.
            let text = human_millis(ms).replacen(' ', "#", 1).replacen(',', ":", 1);
            prop_assert_eq!(parse_rocketmq_date(&text), Some(ms));
            prop_assert_eq!(parse_timestamp_arg(&ms.to_string(), 0), Some(ms));
        }

        #[test]
        fn formatting_never_panics(ms in any::<i64>()) {
            let _ = (human_millis(ms), human_seconds(ms));
        }

        #[test]
        fn civil_days_read_back(days in -1_000_000_000i64..1_000_000_000) {
            let (y, m, d) = civil_from_days(days);
            prop_assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn civil_round_trip() {
        for days in [-800_000, -1, 0, 1, 19_000, 20_000, 2_000_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn date_with_a_huge_year_is_refused() {
        // Day and millisecond arithmetic overflowed i64 for these years.
        for text in [
            "99999999999999-01-01#00:00:00:000",
            "-9223372036854775808-01-01#00:00:00:000",
            "9223372036854775807-12-31#23:59:59:999",
        ] {
            assert_eq!(parse_rocketmq_date(text), None, "{text}");
            assert_eq!(parse_timestamp_arg(text, 5), None, "{text}");
        }
        // The extremes of what fits still parse.
        let far = parse_rocketmq_date("99999-12-31#23:59:59:999").unwrap();
        assert_eq!(human_millis(far), "99999-12-31 23:59:59,999");
        let early = parse_rocketmq_date("0001-01-01#00:00:00:000").unwrap();
        assert_eq!(human_millis(early), "0001-01-01 00:00:00,000");
    }

    #[test]
    fn formats() {
        let t = parse_rocketmq_date("2026-11-29#14:03:07:123").unwrap();
        assert_eq!(human_millis(t), "2026-11-29 14:03:07,123");
        assert_eq!(human_seconds(t), "2026-11-29 14:03:07");
        assert_eq!(human_millis(0), "1970-01-01 00:00:00,000");
        assert_eq!(parse_timestamp_arg("now", 5), Some(5));
        assert_eq!(
            parse_timestamp_arg(" 1700000000000 ", 5),
            Some(1_700_000_000_000)
        );
        assert_eq!(parse_timestamp_arg("-1", 5), Some(-1));
        for bad in [
            "",
            "2026-11-29",
            "2026-13-01#00:00:00:000",
            "2026-11-29#24:00:00:000",
            "x#1:2:3:4",
        ] {
            assert_eq!(parse_timestamp_arg(bad, 5), None, "{bad}");
        }
    }
}
