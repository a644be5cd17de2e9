//! Arbitrary text as a SQL92 selector (`filter::Selector::parse`), evaluated against
//! properties taken from the rest of the input: never a panic; a refused expression
//! always says why; the slot lookup and the one-pass property lookup agree.
#![no_main]

use filter::{ErrorKind, Selector};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Expression, then NUL, then property values separated by \x01 (one per slot).
    let (sql, rest) = text.split_once('\0').unwrap_or((&text, ""));
    match Selector::parse(sql) {
        Ok(s) => {
            let values: Vec<&str> = rest.split('\u{1}').collect();
            let value = |slot: usize| values.get(slot).copied().filter(|v| !v.is_empty());
            let by_slot: Vec<Option<&str>> =
                (0..s.property_names().len()).map(value).collect();
            let matched = s.matches_values(&by_slot);
            let _ = s.evaluate(&by_slot);
            let pairs = s
                .property_names()
                .iter()
                .enumerate()
                .filter_map(|(slot, name)| value(slot).map(|v| (&**name, v)));
            assert_eq!(matched, s.matches_properties(pairs));
            let _ = s.to_string();
        }
        Err(e) => {
            assert!(!e.message().is_empty());
            if e.kind() == ErrorKind::Syntax {
                assert!(e.message().starts_with("org.apache.rocketmq.filter.parser.ParseException: "));
            }
        }
    }
});
