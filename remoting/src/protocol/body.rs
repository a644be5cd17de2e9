//! Small bodies shared by several codes.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// A string table (`KVTable`): broker runtime info, KV namespaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct KvTable {
    /// Entries.
    pub table: BTreeMap<String, String>,
}

/// A set of topic names (`TopicList`); `brokerAddr` only for system topic lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct TopicList {
    /// Topics.
    pub topic_list: BTreeSet<String>,
    /// One master address (system topic lists only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_addr: Option<String>,
}

/// Properties text (`k=v` lines) as used by GET/UPDATE_BROKER_CONFIG and the
/// name server config codes.
#[must_use]
pub fn properties_to_text(props: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (k, v) in props {
        out.push_str(k);
        out.push('=');
        out.push_str(v);
        out.push('\n');
    }
    out
}

/// Parses properties text as Java's `Properties.load` does (UPDATE_BROKER_CONFIG
/// and UPDATE_NAMESRV_CONFIG bodies).
#[must_use]
pub fn text_to_properties(text: &str) -> BTreeMap<String, String> {
    crate::settings::parse_properties(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_round_trip() {
        let p: BTreeMap<String, String> = [
            ("a".to_owned(), "1".to_owned()),
            ("b".to_owned(), "x=y".to_owned()),
        ]
        .into();
        assert_eq!(text_to_properties(&properties_to_text(&p)), p);
    }
}
