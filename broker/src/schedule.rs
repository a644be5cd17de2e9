//! Delay messages: the levels of `messageDelayLevel` and the schedule service that
//! delivers messages parked in `SCHEDULE_TOPIC_XXXX` to their real topic once due.

use std::time::Duration;

/// Why a `messageDelayLevel` string is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a delay like 1s, 5m, 2h or 1d")]
pub struct DelayLevelError(pub String);

/// Parses `messageDelayLevel` (`"1s 5s 10s 30s 1m ... 2h"`, units s/m/h/d) into the
/// delay of each level; level L (1-based) is index L − 1.
///
/// # Errors
/// A token that is not a number followed by a unit, or an empty list.
pub fn parse_delay_levels(text: &str) -> Result<Vec<Duration>, DelayLevelError> {
    let levels = text
        .split_whitespace()
        .map(|token| {
            let split = token.len().saturating_sub(1);
            let (num, unit) = token
                .split_at_checked(split)
                .ok_or_else(|| DelayLevelError(token.to_owned()))?;
            let n: u64 = num.parse().map_err(|_| DelayLevelError(token.to_owned()))?;
            let secs = match unit {
                "s" => 1,
                "m" => 60,
                "h" => 3600,
                "d" => 86_400,
                _ => return Err(DelayLevelError(token.to_owned())),
            };
            Ok(Duration::from_secs(n * secs))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if levels.is_empty() {
        return Err(DelayLevelError(text.to_owned()));
    }
    Ok(levels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_levels() {
        let levels = parse_delay_levels(crate::config::DEFAULT_MESSAGE_DELAY_LEVEL).unwrap();
        assert_eq!(levels.len(), 18);
        assert_eq!(levels[0], Duration::from_secs(1));
        assert_eq!(levels[2], Duration::from_secs(10));
        assert_eq!(levels[17], Duration::from_secs(7200));
        assert_eq!(
            parse_delay_levels("1d").unwrap()[0],
            Duration::from_secs(86_400)
        );
        for bad in ["", "1", "1x", "s", "-1s", "1.5s"] {
            assert!(parse_delay_levels(bad).is_err(), "{bad}");
        }
    }
}
