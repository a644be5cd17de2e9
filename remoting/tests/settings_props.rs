//! Property tests of settings loading (operator input): properties text, TOML, `-o`
//! overrides and the text-to-field parsing never panic; properties and TOML written
//! from a map read back as that map; values written from typed fields read back as
//! those fields; every value error names its key.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use proptest::prelude::*;
use remoting::settings::{Settings, Syntax, parse_properties};
use serde::Deserialize;

/// One field of every shape a config struct uses.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Every {
    flag: bool,
    small: u8,
    port: u16,
    count: u32,
    size: u64,
    signed: i32,
    big: i64,
    width: usize,
    ratio: f64,
    name: String,
    path: PathBuf,
    maybe_port: Option<u16>,
    maybe_name: Option<String>,
    role: Role,
    ports: Vec<u16>,
    names: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[allow(
    non_camel_case_types,
    clippy::upper_case_acronyms,
    reason = "spelled as in config files"
)]
enum Role {
    #[default]
    ASYNC_MASTER,
    SYNC_MASTER,
    SLAVE,
}

const KEYS: [&str; 16] = [
    "flag",
    "small",
    "port",
    "count",
    "size",
    "signed",
    "big",
    "width",
    "ratio",
    "name",
    "path",
    "maybePort",
    "maybeName",
    "role",
    "ports",
    "names",
];

/// Java `Properties.store`'s escaping (`saveConvert`), with every non-ASCII char as
/// `\uXXXX` (UTF-16, so astral chars become surrogate pairs, as Java writes them).
/// Spaces are escaped in keys and at either end of a value, and left bare inside one.
fn escape(text: &str, is_key: bool) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let first_inner = chars.iter().position(|c| *c != ' ').unwrap_or(chars.len());
    let last_inner = chars.iter().rposition(|c| *c != ' ').map_or(0, |i| i + 1);
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| match c {
            ' ' if is_key || i < first_inner || i >= last_inner => "\\ ".to_owned(),
            '\\' => "\\\\".to_owned(),
            '\t' => "\\t".to_owned(),
            '\n' => "\\n".to_owned(),
            '\r' => "\\r".to_owned(),
            '\u{c}' => "\\f".to_owned(),
            '=' | ':' | '#' | '!' => format!("\\{c}"),
            c if (' '..='~').contains(&c) => c.to_string(),
            c => {
                let mut units = [0u16; 2];
                c.encode_utf16(&mut units)
                    .iter()
                    .map(|u| format!("\\u{u:04X}"))
                    .collect()
            }
        })
        .collect()
}

/// Escaped units joined, with a line continuation (and the next line's indentation)
/// after the units `breaks` picks.
fn with_continuations(units: &[String], breaks: &[bool], indent: &str) -> String {
    let mut out = String::new();
    let mut line_start = false;
    for (i, unit) in units.iter().enumerate() {
        // A continuation line's indentation is dropped, so a bare blank there is
        // escaped, as a Java writer would have to.
        out.push_str(if line_start && unit == " " {
            "\\ "
        } else {
            unit
        });
        line_start = breaks.get(i).copied().unwrap_or(false) && i + 1 < units.len();
        if line_start {
            out.push_str("\\\n");
            out.push_str(indent);
        }
    }
    out
}

fn separator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["=", ":", " ", "\t", " = ", "\t:\u{c}", "  =", " "])
}

proptest! {
    #[test]
    fn properties_text_never_panics(text in "\\PC{0,200}|[\\\\\\n\\r =:#!u0-9a-fA-F\\t]{0,80}") {
        let _ = parse_properties(&text);
        let _ = Settings::from_text(&text, Syntax::Properties).unwrap();
    }

    #[test]
    fn toml_text_never_panics(text in "\\PC{0,200}|[\\[\\]\\n =\"'a-c0-9.,{}#]{0,80}") {
        let _ = Settings::from_text(&text, Syntax::Toml);
    }

    #[test]
    fn overrides_never_panic(overrides in prop::collection::vec("\\PC{0,30}", 0..6)) {
        let loaded = Settings::load(None, &overrides);
        prop_assert_eq!(loaded.is_ok(), overrides.iter().all(|o| o.contains('=')));
        if let Ok(settings) = loaded {
            let _ = settings.deserialize::<Every>();
        }
    }

    #[test]
    fn any_value_of_any_key_is_a_field_or_an_error_naming_the_key(
        values in prop::collection::btree_map(
            prop::sample::select(KEYS.to_vec()),
            "\\PC{0,24}|-?[0-9]{1,25}(\\.[0-9]{0,3})?|[ ,;]?(true|FALSE|SLAVE|SYNC_MASTER|1|65536)[ ,;]?",
            0..8,
        ),
    ) {
        let settings = Settings::from_pairs(values.clone());
        if let Err(e) = settings.deserialize::<Every>() {
            let e = e.to_string();
            prop_assert!(
                // A list names the entry that failed: `ports = '65536' is not ...`.
                values.keys().any(|k| e.contains(&format!("{k} = '"))),
                "{} names no key of {:?}", e, values
            );
        }
    }

    #[test]
    fn typed_values_read_back(
        flag in any::<bool>(),
        (small, port, count, size) in (any::<u8>(), any::<u16>(), any::<u32>(), any::<u64>()),
        (signed, big, width) in (any::<i32>(), any::<i64>(), any::<usize>()),
        ratio in -1e12f64..1e12,
        name in "[^\\s,;]([^,;]{0,16}[^\\s,;])?",
        maybe_port in proptest::option::of(any::<u16>()),
        role in prop::sample::select(vec![Role::ASYNC_MASTER, Role::SYNC_MASTER, Role::SLAVE]),
        ports in prop::collection::vec(any::<u16>(), 0..5),
        names in prop::collection::vec("[^\\s,;]{1,8}", 0..5),
    ) {
        let want = Every {
            flag, small, port, count, size, signed, big, width, ratio,
            name: name.clone(),
            path: PathBuf::from(&name),
            maybe_port,
            maybe_name: Some(name.clone()),
            role,
            ports: ports.clone(),
            names: names.clone(),
        };
        let join = |v: &[String], sep: &str| v.join(sep);
        let pairs: Vec<(&str, String)> = vec![
            // Blanks around numbers and names of variants are allowed.
            ("flag", if flag { " TRUE".into() } else { "false ".into() }),
            ("small", small.to_string()),
            ("port", format!(" {port} ")),
            ("count", count.to_string()),
            ("size", size.to_string()),
            ("signed", signed.to_string()),
            ("big", big.to_string()),
            ("width", width.to_string()),
            ("ratio", ratio.to_string()),
            ("name", name.clone()),
            ("path", name.clone()),
            ("maybePort", maybe_port.map(|p| p.to_string()).unwrap_or_default()),
            ("maybeName", name.clone()),
            ("role", format!("{role:?} ")),
            ("ports", join(&ports.iter().map(u16::to_string).collect::<Vec<_>>(), ", ")),
            ("names", join(&names, ";")),
        ];
        let got: Every = Settings::from_pairs(pairs).deserialize().unwrap();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn properties_read_back_what_java_writes(
        entries in prop::collection::btree_map("\\PC{1,12}", "\\PC{0,24}", 0..6),
        seps in prop::collection::vec(separator(), 6),
        breaks in prop::collection::vec(any::<bool>(), 48),
        indent in "[ \\t\\u{c}]{0,3}",
        comment in "[#!]\\PC{0,20}",
    ) {
        let mut text = format!("{comment}\n\n");
        for ((key, value), sep) in entries.iter().zip(&seps) {
            text.push_str(&with_continuations(&escape(key, true), &breaks, &indent));
            text.push_str(sep);
            text.push_str(&with_continuations(&escape(value, false), &breaks[24..], &indent));
            text.push('\n');
        }
        let got = parse_properties(&text);
        prop_assert_eq!(&got, &entries, "text {:?}", text);
    }

    #[test]
    fn toml_reads_back_as_flat_text(
        top in prop::collection::btree_map("[a-zA-Z][a-zA-Z0-9]{0,10}", "\\PC{0,20}", 0..5),
        section in prop::collection::btree_map("[A-Z][a-zA-Z0-9]{0,10}", any::<i64>(), 0..5),
        flag in any::<bool>(),
    ) {
        let mut table = toml::Table::new();
        for (k, v) in &top {
            table.insert(k.clone(), toml::Value::String(v.clone()));
        }
        table.insert("flagKey".into(), toml::Value::Boolean(flag));
        let mut inner = toml::Table::new();
        for (k, v) in &section {
            inner.insert(k.clone(), toml::Value::Integer(*v));
        }
        table.insert("section".into(), toml::Value::Table(inner));
        let text = toml::to_string(&table).unwrap();
        let settings = Settings::from_text(&text, Syntax::Toml).unwrap();
        let mut want: BTreeMap<String, String> = top.clone();
        want.insert("flagKey".into(), flag.to_string());
        for (k, v) in &section {
            want.insert(k.clone(), v.to_string());
        }
        for (k, v) in &want {
            prop_assert_eq!(settings.get(k), Some(v.as_str()), "key {}", k);
        }
        prop_assert_eq!(settings.unknown_keys().len(), want.len());
    }
}
