//! The properties string every message carries (`MessageDecoder.messageProperties2String`
//! / `string2messageProperties`): `name\x01value\x02name\x01value`, no trailing
//! separator. The broker reads and rewrites it on the hot send path, so the codec works
//! on `&str` without building a map; [`Properties`] is the ordered map for callers that
//! want one (tools). The names themselves are in [`keys`].

use std::fmt;

pub mod keys;

/// Separates a name from its value (`NAME_VALUE_SEPARATOR`, char 1).
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Separates entries (`PROPERTY_SEPARATOR`, char 2).
pub const PROPERTY_SEPARATOR: char = '\u{2}';

/// The entries, as RocketMQ's parser sees them: entries without a separator, or with an
/// empty name or value, are skipped.
pub fn iter(props: &str) -> impl Iterator<Item = (&str, &str)> {
    props.split(PROPERTY_SEPARATOR).filter_map(|kv| {
        let idx = kv.find(NAME_VALUE_SEPARATOR)?;
        (idx > 0 && idx + 1 < kv.len()).then(|| (&kv[..idx], &kv[idx + 1..]))
    })
}

/// The value of `key` (the last one wins, as in a Java map).
#[must_use]
pub fn get<'a>(props: &'a str, key: &str) -> Option<&'a str> {
    iter(props)
        .filter(|(k, _)| *k == key)
        .map(|(_, v)| v)
        .last()
}

/// The values of several keys in one pass (the last one wins for each, as [`get`]).
#[must_use]
pub fn get_many<'a, const N: usize>(props: &'a str, keys: [&str; N]) -> [Option<&'a str>; N] {
    let mut found = [None; N];
    for (k, v) in iter(props) {
        if let Some(i) = keys.iter().position(|key| *key == k) {
            found[i] = Some(v);
        }
    }
    found
}

/// Builds a properties string from pairs (no trailing separator).
#[must_use]
pub fn build<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut s = String::new();
    for (k, v) in pairs {
        push(&mut s, k, v);
    }
    s
}

/// Appends one entry to a properties string.
fn push(out: &mut String, key: &str, value: &str) {
    if !out.is_empty() {
        out.push(PROPERTY_SEPARATOR);
    }
    out.push_str(key);
    out.push(NAME_VALUE_SEPARATOR);
    out.push_str(value);
}

/// A properties string with each `(key, value)` of `updates` set (replacing earlier
/// values; other entries kept in order), built in one pass and one allocation.
#[must_use]
pub fn set(props: &str, updates: &[(&str, &str)]) -> String {
    let extra: usize = updates.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    let mut out = String::with_capacity(props.len() + extra);
    let kept = iter(props).filter(|(k, _)| !updates.iter().any(|(u, _)| u == k));
    for (k, v) in kept.chain(updates.iter().copied()) {
        push(&mut out, k, v);
    }
    out
}

/// A properties string without `keys`.
#[must_use]
pub fn without(props: &str, keys: &[&str]) -> String {
    build(iter(props).filter(|(k, _)| !keys.contains(k)))
}

/// What a message's properties make it, by RocketMQ's rule
/// (`TopicMessageType.parseFromMessageProperty`, in its order of precedence): `TRANSACTION`
/// (`TRAN_MSG=true`), `DELAY` (a delay level or any timer property), `FIFO` (a message
/// group), `PRIORITY` (RocketMQ 5.4), else `NORMAL`. A topic's `message.type` attribute is
/// checked against it (by the proxy) and the broker routes priority messages by it.
#[must_use]
pub fn message_type(props: &str) -> &'static str {
    use keys::{
        DELAY, PRIORITY, SHARDING_KEY, TIMER_DELAY_MS, TIMER_DELAY_SEC, TIMER_DELIVER_MS, TRAN_MSG,
    };
    let [
        tran,
        delay,
        deliver,
        delay_sec,
        delay_ms,
        sharding,
        priority,
    ] = get_many(
        props,
        [
            TRAN_MSG,
            DELAY,
            TIMER_DELIVER_MS,
            TIMER_DELAY_SEC,
            TIMER_DELAY_MS,
            SHARDING_KEY,
            PRIORITY,
        ],
    );
    if tran.is_some_and(|t| t.eq_ignore_ascii_case("true")) {
        "TRANSACTION"
    } else if delay.is_some() || deliver.is_some() || delay_sec.is_some() || delay_ms.is_some() {
        "DELAY"
    } else if sharding.is_some() {
        "FIFO"
    } else if priority.is_some() {
        "PRIORITY"
    } else {
        "NORMAL"
    }
}

/// An ordered property map.
///
/// It keeps insertion order, so what we encode is deterministic and what we decode
/// prints in the order the producer wrote it; a repeated key keeps its first position
/// and takes the last value, as Java's `HashMap.put` would.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    entries: Vec<(String, String)>,
}

impl Properties {
    /// No properties.
    #[must_use]
    pub fn new() -> Self {
        Properties::default()
    }

    /// The value of `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Sets `key` (replacing its value in place if it is there).
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let key = key.into();
        let value = value.into();
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let at = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(at).1)
    }

    /// Entries in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The wire string. Keys and values must not contain the separators (Java does not
    /// check either; such an entry would not decode back).
    #[must_use]
    pub fn encode(&self) -> String {
        build(self.iter())
    }

    /// Parses a properties string the way Java does ([`iter`]).
    #[must_use]
    pub fn decode(text: &str) -> Self {
        iter(text).collect()
    }

    /// `TAGS`.
    #[must_use]
    pub fn tags(&self) -> Option<&str> {
        self.get(keys::TAGS)
    }

    /// `KEYS`.
    #[must_use]
    pub fn keys(&self) -> Option<&str> {
        self.get(keys::KEYS)
    }

    /// `UNIQ_KEY`.
    #[must_use]
    pub fn uniq_key(&self) -> Option<&str> {
        self.get(keys::UNIQ_KEY)
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Properties {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut p = Properties::new();
        for (k, v) in iter {
            p.insert(k, v);
        }
        p
    }
}

/// Java's `HashMap.toString` shape: `{K1=v1, K2=v2}` (in our order).
impl fmt::Display for Properties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (k, v)) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}={v}")?;
        }
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use super::keys::{CLUSTER, KEYS, TAGS, WAIT};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn properties_parse_like_rocketmq() {
        let s = build([("TAGS", "a"), ("KEYS", "k1 k2")]);
        assert_eq!(s, "TAGS\u{1}a\u{2}KEYS\u{1}k1 k2");
        assert_eq!(get(&s, "KEYS"), Some("k1 k2"));
        assert_eq!(get("\u{1}v\u{2}A\u{1}\u{2}B\u{1}b", "B"), Some("b"));
        assert_eq!(iter("\u{1}v\u{2}A\u{1}").count(), 0);
    }

    #[test]
    fn get_many_agrees_with_get() {
        let s = "TAGS\u{1}a\u{2}KEYS\u{1}k\u{2}\u{1}x\u{2}TAGS\u{1}b\u{2}E\u{1}\u{2}U\u{1}u";
        let keys = ["TAGS", "KEYS", "U", "E", "missing"];
        let many = get_many(s, keys);
        for (key, value) in keys.iter().zip(many) {
            assert_eq!(value, get(s, key), "{key}");
        }
        assert_eq!(many[0], Some("b"));
    }

    #[test]
    fn edit_properties() {
        let p = "TAGS\u{1}A\u{2}KEYS\u{1}k1 k2\u{2}WAIT\u{1}true\u{2}";
        assert_eq!(get(p, KEYS), Some("k1 k2"));
        assert_eq!(
            set(p, &[(TAGS, "B")]),
            "KEYS\u{1}k1 k2\u{2}WAIT\u{1}true\u{2}TAGS\u{1}B"
        );
        assert_eq!(set("", &[(CLUSTER, "c")]), "CLUSTER\u{1}c");
        assert_eq!(
            set("A\u{1}1", &[(CLUSTER, "c"), ("A", "2")]),
            "CLUSTER\u{1}c\u{2}A\u{1}2"
        );
        assert_eq!(without(p, &[WAIT, TAGS]), "KEYS\u{1}k1 k2");
    }

    #[test]
    fn encode_has_no_trailing_separator() {
        let p: Properties = [("TAGS", "A"), ("WAIT", "true")].into_iter().collect();
        assert_eq!(p.encode(), "TAGS\u{1}A\u{2}WAIT\u{1}true");
        assert_eq!(Properties::new().encode(), "");
        assert_eq!(p.to_string(), "{TAGS=A, WAIT=true}");
    }

    #[test]
    fn decode_follows_java_rules() {
        // Trailing separator (4.x brokers' own strings), empty entries, short entries,
        // a missing value, a missing key and a duplicate key.
        let text =
            "TAGS\u{1}A\u{2}\u{2}x\u{2}K\u{1}\u{2}\u{1}v\u{2}WAIT\u{1}true\u{2}TAGS\u{1}B\u{2}";
        let p = Properties::decode(text);
        assert_eq!(
            p.iter().collect::<Vec<_>>(),
            [("TAGS", "B"), ("WAIT", "true")]
        );
        assert_eq!(Properties::decode("").len(), 0);
        // A value may contain the name/value separator after the first one.
        assert_eq!(
            Properties::decode("a\u{1}b\u{1}c").get("a"),
            Some("b\u{1}c")
        );
    }

    #[test]
    fn insert_replaces_in_place_and_remove() {
        let mut p = Properties::new();
        p.insert("A", "1");
        p.insert("B", "2");
        p.insert("A", "3");
        assert_eq!(p.encode(), "A\u{1}3\u{2}B\u{1}2");
        assert_eq!(p.remove("A").as_deref(), Some("3"));
        assert_eq!(p.remove("A"), None);
        assert_eq!(p.len(), 1);
    }

    fn token() -> impl Strategy<Value = String> {
        // Any text without the two separators.
        "[^\u{1}\u{2}]{1,12}"
    }

    proptest! {
        #[test]
        fn round_trip(entries in proptest::collection::vec((token(), token()), 0..8)) {
            let p: Properties = entries.into_iter().collect();
            prop_assert_eq!(Properties::decode(&p.encode()), p);
        }

        #[test]
        fn decode_never_panics(text in "\\PC{0,64}") {
            let _ = Properties::decode(&text);
        }

        #[test]
        fn set_then_get(entries in proptest::collection::vec((token(), token()), 0..6), key in token(), value in token()) {
            let p: Properties = entries.into_iter().collect();
            let s = set(&p.encode(), &[(&key, &value)]);
            prop_assert_eq!(get(&s, &key), Some(value.as_str()));
            let removed = without(&s, &[&key]);
            prop_assert_eq!(get(&removed, &key), None);
        }
    }
}
