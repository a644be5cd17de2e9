//! The message properties string (`MessageDecoder.messageProperties2String` /
//! `string2messageProperties`): `key\u{1}value\u{2}key\u{1}value`, no trailing separator,
//! read and written by the store's codec ([`store::record::properties`]).
//!
//! [`Properties`] keeps insertion order, so what we encode is deterministic and what we
//! decode prints in the order the producer wrote it; a repeated key keeps its first
//! position and takes the last value, as Java's `HashMap.put` would.

use std::fmt;

use store::record::properties as codec;

/// Well-known property keys (`MessageConst`): the store's, and those only clients use.
pub mod keys {
    pub use store::record::properties::{DELAY, KEYS, TAGS, UNIQ_KEY, WAIT};

    /// Original topic of a retried message.
    pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
    /// Original topic of a delayed or half message.
    pub const REAL_TOPIC: &str = "REAL_TOPIC";
    /// Original queue of a delayed or half message.
    pub const REAL_QID: &str = "REAL_QID";
    /// Transactional half message.
    pub const TRAN_MSG: &str = "TRAN_MSG";
    /// Producer group (transactions).
    pub const PGROUP: &str = "PGROUP";
    /// Cluster the broker belongs to, added by the broker on every send.
    pub const CLUSTER: &str = "CLUSTER";
    /// Added client-side after a pull.
    pub const MIN_OFFSET: &str = "MIN_OFFSET";
    /// Added client-side after a pull.
    pub const MAX_OFFSET: &str = "MAX_OFFSET";
}

/// An ordered property map.
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
        codec::build(self.iter())
    }

    /// Parses a properties string the way Java does (the store's parser): entries
    /// without a separator between a non-empty key and a non-empty value are skipped.
    #[must_use]
    pub fn decode(text: &str) -> Self {
        codec::iter(text).collect()
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
    use super::*;
    use proptest::prelude::*;

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
    }
}
