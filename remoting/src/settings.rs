//! Configuration loading shared by every sluice binary: `-c FILE` and `-o key=value`.
//!
//! A file is TOML (`.toml`) or a RocketMQ `.properties`/`.conf` file as is (any
//! other name is tried as TOML, then as properties). Either way it becomes one flat
//! map of RocketMQ key names to text — TOML tables are flattened, so keys may be
//! grouped in sections — and `-o` overrides replace entries. Config structs are then
//! deserialised from that map with every value parsed from text into the field's
//! type, so `listenPort = 10911`, `listenPort = "10911"` and `listenPort=10911` are
//! the same setting. Keys no struct knows are reported once, so an operator's whole
//! broker.conf loads with a warning instead of an error.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;
use tracing::warn;

/// Why settings could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The file is neither valid TOML nor a properties file.
    #[error("cannot parse {path}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// An `-o` argument without `=`.
    #[error("override '{0}' is not key=value")]
    Override(String),
    /// A value that does not fit its field.
    #[error("invalid setting: {0}")]
    Invalid(String),
}

/// How a settings text is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// TOML; tables are flattened, values become their text.
    Toml,
    /// Java `Properties.load` text (RocketMQ's broker.conf).
    Properties,
}

/// A flat map of settings, and the keys the config structs read from it.
#[derive(Debug, Default)]
pub struct Settings {
    values: BTreeMap<String, String>,
    known: RefCell<BTreeSet<&'static str>>,
}

impl Settings {
    /// Settings from an optional file plus `key=value` overrides (later ones win).
    ///
    /// # Errors
    /// The file cannot be read or parsed, or an override is not `key=value`.
    pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<Self, SettingsError> {
        let mut settings = match file {
            Some(path) => Settings::from_file(path)?,
            None => Settings::default(),
        };
        for o in overrides {
            let (k, v) = o
                .split_once('=')
                .ok_or_else(|| SettingsError::Override(o.clone()))?;
            settings.set(k.trim(), v.trim());
        }
        Ok(settings)
    }

    /// Reads a TOML or properties file.
    ///
    /// # Errors
    /// The file cannot be read or parsed.
    pub fn from_file(path: &Path) -> Result<Self, SettingsError> {
        let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read {
            path: path.to_owned(),
            source,
        })?;
        let is_toml = path.extension().is_some_and(|e| e == "toml");
        let is_props = path
            .extension()
            .is_some_and(|e| e == "properties" || e == "conf" || e == "cfg");
        let parsed = if is_props {
            Settings::from_text(&text, Syntax::Properties)
        } else {
            // TOML by name, or any other name that holds TOML; else a properties file.
            Settings::from_text(&text, Syntax::Toml).or_else(|reason| {
                if is_toml {
                    Err(reason)
                } else {
                    Settings::from_text(&text, Syntax::Properties)
                }
            })
        };
        parsed.map_err(|reason| SettingsError::Parse {
            path: path.to_owned(),
            reason,
        })
    }

    /// Settings from the text of a file written in `syntax`.
    ///
    /// # Errors
    /// TOML that does not parse (the reason); properties text always parses.
    pub fn from_text(text: &str, syntax: Syntax) -> Result<Self, String> {
        let values = match syntax {
            Syntax::Toml => parse_toml(text)?,
            Syntax::Properties => parse_properties(text),
        };
        Ok(Settings {
            values,
            known: RefCell::default(),
        })
    }

    /// Settings from `key=value` pairs (tests).
    #[must_use]
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Settings {
            values: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            known: RefCell::default(),
        }
    }

    /// Sets one key.
    pub fn set(&mut self, key: &str, value: &str) {
        self.values.insert(key.to_owned(), value.to_owned());
    }

    /// The raw text of one key.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Deserialises a config struct (`#[serde(default, rename_all = "camelCase")]`)
    /// from the keys it knows, recording them as known.
    ///
    /// # Errors
    /// A value does not parse as its field's type.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, SettingsError> {
        T::deserialize(SettingsDeserializer { settings: self })
            .map_err(|e| SettingsError::Invalid(e.to_string()))
    }

    /// Marks keys as known without reading them: RocketMQ settings a process accepts
    /// but that have no effect in sluice (thread pool sizes and the like).
    pub fn accept_keys(&self, keys: &[&'static str]) {
        self.known.borrow_mut().extend(keys.iter().copied());
    }

    /// Keys that no struct deserialised so far reads.
    #[must_use]
    pub fn unknown_keys(&self) -> Vec<&str> {
        let known = self.known.borrow();
        self.values
            .keys()
            .map(String::as_str)
            .filter(|k| !known.contains(k))
            .collect()
    }

    /// Logs one warning per unknown key.
    pub fn warn_unknown(&self) {
        for key in self.unknown_keys() {
            warn!(key, "ignoring unknown setting");
        }
    }
}

fn parse_toml(text: &str) -> Result<BTreeMap<String, String>, String> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| toml_error(text, &e))?;
    let mut out = BTreeMap::new();
    flatten_toml(&table, &mut out);
    Ok(out)
}

/// A TOML error on one line, `line L, column C: message` (the parser's own text draws the
/// line with a caret over several lines).
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim().replace('\n', " ");
    let Some(at) = e.span().map(|s| s.start.min(text.len())) else {
        return message;
    };
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}: {message}")
}

fn flatten_toml(table: &toml::Table, out: &mut BTreeMap<String, String>) {
    for (key, value) in table {
        match value {
            toml::Value::Table(inner) => flatten_toml(inner, out),
            other => {
                out.insert(key.clone(), toml_text(other));
            }
        }
    }
}

fn toml_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Array(items) => items.iter().map(toml_text).collect::<Vec<_>>().join(" "),
        other => other.to_string(),
    }
}

/// Parses Java `Properties.load` text: `#`/`!` comments, `=`, `:` or blank
/// separators, backslash line continuations and escapes (`\uXXXX` in UTF-16, as Java
/// writes astral chars). Blanks are Java's: space, tab and form feed. Unlike Java,
/// unescaped blanks at the end of a value are dropped.
#[must_use]
pub fn parse_properties(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut logical = String::new();
    for raw in text.lines() {
        let line = raw.trim_start_matches(is_blank);
        if logical.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        let trailing = line.len() - line.trim_end_matches('\\').len();
        if trailing % 2 == 1 {
            logical.push_str(&line[..line.len() - 1]);
            continue;
        }
        logical.push_str(line);
        let (k, v) = split_property(&logical);
        out.insert(k, v);
        logical.clear();
    }
    if !logical.is_empty() {
        let (k, v) = split_property(&logical);
        out.insert(k, v);
    }
    out
}

/// A blank of `Properties.load`.
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{c}')
}

fn split_property(line: &str) -> (String, String) {
    let mut key = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    key.push(unescape(n, &mut chars));
                }
            }
            '=' | ':' => break,
            c if is_blank(c) => {
                // Blank separator, possibly followed by '=' or ':'.
                while chars.peek().copied().is_some_and(is_blank) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('=' | ':')) {
                    chars.next();
                }
                break;
            }
            c => key.push(c),
        }
    }
    while chars.peek().copied().is_some_and(is_blank) {
        chars.next();
    }
    let mut value = String::new();
    // Bytes of `value` that end with an escape: trailing blanks before it stay.
    let mut kept = 0;
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                value.push(unescape(n, &mut chars));
                kept = value.len();
            }
        } else {
            value.push(c);
        }
    }
    let end = kept.max(value.trim_end_matches(is_blank).len());
    value.truncate(end);
    (key, value)
}

fn unescape(c: char, rest: &mut std::iter::Peekable<std::str::Chars<'_>>) -> char {
    match c {
        't' => '\t',
        'n' => '\n',
        'r' => '\r',
        'f' => '\u{c}',
        'u' => {
            let Some(unit) = hex4(rest) else {
                return '\u{fffd}';
            };
            if !(0xD800..0xDC00).contains(&unit) {
                return char::from_u32(u32::from(unit)).unwrap_or('\u{fffd}');
            }
            // A high surrogate: Java writes an astral char as two `\u` escapes.
            let mut ahead = rest.clone();
            let low = (ahead.next() == Some('\\') && ahead.next() == Some('u'))
                .then(|| hex4(&mut ahead))
                .flatten()
                .filter(|low| (0xDC00..0xE000).contains(low));
            match low.and_then(|low| char::decode_utf16([unit, low]).next()?.ok()) {
                Some(c) => {
                    *rest = ahead;
                    c
                }
                None => '\u{fffd}',
            }
        }
        other => other,
    }
}

/// The 4 hex digits of a `\u` escape (fewer or non-hex: `None`, consuming what it read).
fn hex4(rest: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<u16> {
    let hex: String = (0..4).filter_map(|_| rest.next()).collect();
    if hex.len() == 4 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        u16::from_str_radix(&hex, 16).ok()
    } else {
        None
    }
}

// ---------------------------------------------------------------- lenient deserializer

/// A deserialisation error; every one that reaches the caller names its key.
#[derive(Debug)]
enum DeError {
    /// Already says `key = 'text' ...` (made by [`TextValue`]).
    Keyed(String),
    /// Made by serde or a field type's `Deserialize`; the key is added on the way out.
    Plain(String),
}

impl DeError {
    /// This error, naming `key` and its `text` if it does not yet.
    fn keyed(self, key: &str, text: &str) -> Self {
        match self {
            DeError::Plain(msg) => DeError::Keyed(format!("{key} = '{text}': {msg}")),
            keyed @ DeError::Keyed(_) => keyed,
        }
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeError::Keyed(msg) | DeError::Plain(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError::Plain(msg.to_string())
    }
}

/// The settings as a serde map whose value errors name their key.
struct Values<'a, I> {
    entries: I,
    value: Option<TextValue<'a>>,
}

impl<I> Values<'_, I> {
    fn new(entries: I) -> Self {
        Values {
            entries,
            value: None,
        }
    }
}

impl<'de, I: Iterator<Item = (&'de String, &'de String)>> de::MapAccess<'de> for Values<'de, I> {
    type Error = DeError;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some((key, text)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(TextValue { key, text });
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DeError> {
        let value = self
            .value
            .take()
            .ok_or_else(|| DeError::Plain("a value was asked for before its key".into()))?;
        let (key, text) = (value.key, value.text);
        seed.deserialize(value).map_err(|e| e.keyed(key, text))
    }
}

struct SettingsDeserializer<'a> {
    settings: &'a Settings,
}

impl<'de> de::Deserializer<'de> for SettingsDeserializer<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_map(Values::new(self.settings.values.iter()))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.settings
            .known
            .borrow_mut()
            .extend(fields.iter().copied());
        // Only the struct's own keys, so unknown ones never reach its visitor.
        visitor.visit_map(Values::new(
            self.settings
                .values
                .iter()
                .filter(|(k, _)| fields.contains(&k.as_str())),
        ))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// One setting's text, parsed into whatever type its field asks for.
struct TextValue<'a> {
    key: &'a str,
    text: &'a str,
}

impl<'de> IntoDeserializer<'de, DeError> for TextValue<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl TextValue<'_> {
    /// An error naming this setting: `key = 'text' <what is wrong>`.
    fn invalid(&self, what: impl fmt::Display) -> DeError {
        DeError::Keyed(format!("{} = '{}' {what}", self.key, self.text))
    }

    fn parse<T: std::str::FromStr>(&self, what: &str) -> Result<T, DeError> {
        self.text
            .trim()
            .parse()
            .map_err(|_| self.invalid(format_args!("is not a valid {what}")))
    }
}

macro_rules! parse_number {
    ($($method:ident => $visit:ident: $t:ty),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
            visitor.$visit(self.parse::<$t>(stringify!($t))?)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for TextValue<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_borrowed_str(self.text)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.text.trim().to_ascii_lowercase().as_str() {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            _ => Err(self.invalid("is not true or false")),
        }
    }

    parse_number! {
        deserialize_i8 => visit_i8: i8, deserialize_i16 => visit_i16: i16,
        deserialize_i32 => visit_i32: i32, deserialize_i64 => visit_i64: i64,
        deserialize_u8 => visit_u8: u8, deserialize_u16 => visit_u16: u16,
        deserialize_u32 => visit_u32: u32, deserialize_u64 => visit_u64: u64,
        deserialize_f32 => visit_f32: f32, deserialize_f64 => visit_f64: f64
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        if self.text.trim().is_empty() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let name = self.text.trim();
        if !variants.contains(&name) {
            return Err(self.invalid(format_args!("is not one of {}", variants.join(", "))));
        }
        visitor.visit_enum(name.into_deserializer())
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let key = self.key;
        visitor.visit_seq(de::value::SeqDeserializer::new(
            self.text
                .split([',', ';'])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(move |text| TextValue { key, text }),
        ))
    }

    forward_to_deserialize_any! {
        i128 u128 char str string bytes byte_buf unit unit_struct tuple
        tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(default, rename_all = "camelCase")]
    struct Sample {
        listen_port: u16,
        broker_name: String,
        auto_create_topic_enable: bool,
        disk_max_used_space_ratio: i32,
        ha_master_address: Option<String>,
        flush_disk_type: Flush,
    }

    #[derive(Debug, Deserialize, PartialEq, Default)]
    #[allow(non_camel_case_types)]
    enum Flush {
        #[default]
        ASYNC_FLUSH,
        SYNC_FLUSH,
    }

    impl Default for Sample {
        fn default() -> Self {
            Sample {
                listen_port: 10911,
                broker_name: "broker-a".into(),
                auto_create_topic_enable: true,
                disk_max_used_space_ratio: 75,
                ha_master_address: None,
                flush_disk_type: Flush::ASYNC_FLUSH,
            }
        }
    }

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn properties_toml_and_overrides_agree() {
        let dir = tempfile::tempdir().unwrap();
        let props = write(
            &dir,
            "broker.conf",
            "# comment\nbrokerName = broker-b\nlistenPort=20911\n! other\nflushDiskType : SYNC_FLUSH\nbrokerIP1 10.0.0.1\nautoCreateTopicEnable=false\n",
        );
        let toml = write(
            &dir,
            "broker.toml",
            "brokerName = \"broker-b\"\nlistenPort = 20911\n[store]\nflushDiskType = \"SYNC_FLUSH\"\nbrokerIP1 = \"10.0.0.1\"\nautoCreateTopicEnable = false\n",
        );
        for path in [props, toml] {
            let s = Settings::load(Some(&path), &["diskMaxUsedSpaceRatio=90".into()]).unwrap();
            let cfg: Sample = s.deserialize().unwrap();
            assert_eq!(
                cfg,
                Sample {
                    listen_port: 20911,
                    broker_name: "broker-b".into(),
                    auto_create_topic_enable: false,
                    disk_max_used_space_ratio: 90,
                    ha_master_address: None,
                    flush_disk_type: Flush::SYNC_FLUSH,
                }
            );
            assert_eq!(s.unknown_keys(), vec!["brokerIP1"]);
        }
    }

    #[test]
    fn a_toml_error_is_one_line_with_its_position() {
        let e = parse_toml("a = 1\nlistenPort = = 10911\n").unwrap_err();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with("line 2, column 14: "), "{e}");
        // A span at the very end, and one inside a multi-byte character's line.
        assert!(parse_toml("é = \"").unwrap_err().starts_with("line 1, "));
    }

    #[test]
    fn errors_name_the_key() {
        let s = Settings::from_pairs([("listenPort", "abc")]);
        let e = s.deserialize::<Sample>().unwrap_err().to_string();
        assert!(e.contains("listenPort = 'abc'"), "{e}");
        assert!(Settings::load(None, &["novalue".into()]).is_err());
        let s = Settings::from_pairs([("haMasterAddress", "1.2.3.4:10912")]);
        assert_eq!(
            s.deserialize::<Sample>()
                .unwrap()
                .ha_master_address
                .as_deref(),
            Some("1.2.3.4:10912")
        );
    }

    #[test]
    fn enum_errors_name_the_key_and_the_variants() {
        let s = Settings::from_pairs([("flushDiskType", "MASTERX")]);
        let e = s.deserialize::<Sample>().unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid setting: flushDiskType = 'MASTERX' is not one of ASYNC_FLUSH, SYNC_FLUSH"
        );
        // Blanks around a variant are fine, as around numbers.
        let s = Settings::from_pairs([("flushDiskType", " SYNC_FLUSH ")]);
        assert_eq!(
            s.deserialize::<Sample>().unwrap().flush_disk_type,
            Flush::SYNC_FLUSH
        );
    }

    #[test]
    fn every_value_error_names_the_key() {
        // Errors serde makes itself (a type the text cannot be, a Deserialize impl that
        // refuses the text) carry the key too.
        #[derive(Debug, Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code, reason = "only the errors are looked at")]
        struct Odd {
            initial: Option<char>,
            addr: Option<std::net::IpAddr>,
        }
        for (key, text) in [("initial", "abc"), ("addr", "10.0.0")] {
            let e = Settings::from_pairs([(key, text)])
                .deserialize::<Odd>()
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("{key} = '{text}'")), "{e}");
        }
    }

    #[test]
    fn properties_surrogate_pair_escapes_are_one_char() {
        // Java's Properties.store writes an astral char as two \u escapes (UTF-16).
        let p = parse_properties("k=\\uD802\\uDC57 \\uD83D\\uDE00\nlone=\\uD802x\n");
        assert_eq!(p["k"], "\u{10857} \u{1F600}");
        assert_eq!(p["lone"], "\u{fffd}x");
    }

    #[test]
    fn properties_escaped_trailing_blank_is_kept() {
        // Bare trailing blanks are dropped (a lenient reading of hand-written files),
        // escaped ones are part of the value, as Java keeps them.
        let p = parse_properties("a=x\\  \nb=\\ \nc=y\\t \t\nd=z  \n");
        assert_eq!(p["a"], "x ");
        assert_eq!(p["b"], " ");
        assert_eq!(p["c"], "y\t");
        assert_eq!(p["d"], "z");
    }

    #[test]
    fn properties_blanks_are_javas_only() {
        // Java separates and indents with ' ', '\t' and '\f' only; other Unicode
        // spaces belong to the key or value.
        let p = parse_properties("\u{3000}k\u{a0}x = v\u{3000}\n\u{c}f\tv\n");
        assert_eq!(p["\u{3000}k\u{a0}x"], "v\u{3000}");
        assert_eq!(p["f"], "v");
    }

    #[test]
    fn properties_escapes_and_continuations() {
        let p = parse_properties("a=1\\\n   2\nb\\=c = d\\u0041\nempty=\n  # indented comment\n");
        assert_eq!(p["a"], "12");
        assert_eq!(p["b=c"], "dA");
        assert_eq!(p["empty"], "");
        assert_eq!(p.len(), 3);
    }
}
