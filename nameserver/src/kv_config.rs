//! The KV config table (RocketMQ's `KVConfigManager`): namespace → key → value,
//! persisted to `kvConfigPath` after every change.
//!
//! The file has RocketMQ's format, `{"configTable":{"NS":{"k":"v"}}}`, so a table
//! written by Apache RocketMQ's name server loads here and the other way round. Writes
//! are atomic with a `.bak` (see `remoting::config_file`); they are small and rare (mqadmin
//! `updateKvConfig`, ordered-topic setup), so they happen inline while the table lock
//! is held, which keeps the file in the order of the changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use remoting::protocol::body::KvTable;
use serde::{Deserialize, Serialize};
use tracing::info;

use remoting::config_file::{self as persist, ConfigFileError as PersistError};

type Table = BTreeMap<String, BTreeMap<String, String>>;

/// The file format (`KVConfigSerializeWrapper`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct KvConfigSerializeWrapper {
    /// namespace → key → value.
    pub config_table: Table,
}

/// The KV table and its file.
#[derive(Debug)]
pub struct KvConfigManager {
    path: PathBuf,
    table: Mutex<Table>,
}

impl KvConfigManager {
    /// An empty table persisted to `path` (nothing is read yet; see [`load`](Self::load)).
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        KvConfigManager {
            path: path.into(),
            table: Mutex::new(Table::new()),
        }
    }

    /// Reads the table from the file (or its `.bak`); a missing file is an empty table.
    ///
    /// # Errors
    /// The file exists but cannot be read, or neither it nor its `.bak` parses.
    pub fn load(&self) -> Result<(), PersistError> {
        let loaded = persist::read_with_backup(&self.path, |bytes| {
            remoting::fastjson::from_slice::<KvConfigSerializeWrapper>(bytes)
                .map_err(|e| e.to_string())
        })?;
        if let Some(wrapper) = loaded {
            let entries: usize = wrapper.config_table.values().map(BTreeMap::len).sum();
            info!(file = %self.path.display(), namespaces = wrapper.config_table.len(), entries, "kv config loaded");
            *self.table.lock() = wrapper.config_table;
        }
        Ok(())
    }

    /// The file the table is persisted to.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn persist(&self, table: &Table) -> Result<(), PersistError> {
        let wrapper = KvConfigSerializeWrapperRef {
            config_table: table,
        };
        let json = serde_json::to_vec(&wrapper).map_err(|e| PersistError::Corrupt {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        persist::write_atomic(&self.path, &json)
    }

    /// Sets a value and persists the table.
    ///
    /// # Errors
    /// The file could not be written; the value is set in memory regardless, as in RocketMQ.
    pub fn put(&self, namespace: &str, key: &str, value: &str) -> Result<(), PersistError> {
        let mut table = self.table.lock();
        let prev = table
            .entry(namespace.to_owned())
            .or_default()
            .insert(key.to_owned(), value.to_owned());
        info!(
            namespace,
            key,
            value,
            updated = prev.is_some(),
            "put kv config"
        );
        self.persist(&table)
    }

    /// One value.
    #[must_use]
    pub fn get(&self, namespace: &str, key: &str) -> Option<String> {
        self.table
            .lock()
            .get(namespace)
            .and_then(|kv| kv.get(key))
            .cloned()
    }

    /// Removes a value and persists the table (even when there was nothing to remove,
    /// as RocketMQ does). A namespace left empty stays, as in RocketMQ.
    ///
    /// # Errors
    /// The file could not be written.
    pub fn delete(&self, namespace: &str, key: &str) -> Result<(), PersistError> {
        let mut table = self.table.lock();
        let removed = table.get_mut(namespace).and_then(|kv| kv.remove(key));
        info!(namespace, key, removed = ?removed, "delete kv config");
        self.persist(&table)
    }

    /// A whole namespace, or `None` when it does not exist.
    #[must_use]
    pub fn list(&self, namespace: &str) -> Option<KvTable> {
        self.table
            .lock()
            .get(namespace)
            .map(|kv| KvTable { table: kv.clone() })
    }
}

/// Borrowing twin of [`KvConfigSerializeWrapper`] for writing without a copy.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KvConfigSerializeWrapperRef<'a> {
    config_table: &'a Table,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn garbled_kv_config_loads_or_fails_naming_the_file(
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), any::<bool>()), 0..5),
            raw in prop::option::weighted(0.2, prop::collection::vec(any::<u8>(), 0..48)),
        ) {
            let mut bytes = br#"{"configTable":{"NS":{"k2":"v2"},"ORDER_TOPIC_CONFIG":{"T":"broker-a:4"}}}"#.to_vec();
            for (at, byte, replace) in edits {
                let i = at.index(bytes.len());
                if replace { bytes[i] = byte } else { bytes.insert(i, byte) }
            }
            let bytes = raw.unwrap_or(bytes);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("kvConfig.json");
            std::fs::write(&path, &bytes).unwrap();
            if let Err(e) = KvConfigManager::new(&path).load() {
                prop_assert!(e.to_string().contains("kvConfig.json"), "{}", e);
            }
        }
    }

    #[test]
    fn put_get_delete_list_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv/kvConfig.json");
        let kv = KvConfigManager::new(&path);
        kv.load().unwrap();
        assert!(kv.get("NS", "k").is_none());
        assert!(kv.list("NS").is_none());
        kv.put("NS", "k", "v").unwrap();
        kv.put("NS", "k2", "v2").unwrap();
        kv.put("ORDER_TOPIC_CONFIG", "T", "broker-a:4").unwrap();
        assert_eq!(kv.get("NS", "k").as_deref(), Some("v"));
        assert_eq!(kv.list("NS").unwrap().table.len(), 2);
        kv.delete("NS", "k").unwrap();
        kv.delete("NS", "absent").unwrap();
        kv.delete("NoNs", "absent").unwrap();
        assert!(kv.get("NS", "k").is_none());

        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            r#"{"configTable":{"NS":{"k2":"v2"},"ORDER_TOPIC_CONFIG":{"T":"broker-a:4"}}}"#
        );

        let again = KvConfigManager::new(&path);
        again.load().unwrap();
        assert_eq!(again.get("NS", "k2").as_deref(), Some("v2"));
        assert_eq!(
            again.get("ORDER_TOPIC_CONFIG", "T").as_deref(),
            Some("broker-a:4")
        );
    }

    #[test]
    fn loads_a_file_written_by_rocketmq() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kvConfig.json");
        std::fs::write(&path, "{\n\t\"configTable\":{\n\t\t\"ORDER_TOPIC_CONFIG\":{\n\t\t\t\"TopicTest\":\"broker-a:8;broker-b:8\"\n\t\t}\n\t}\n}").unwrap();
        let kv = KvConfigManager::new(&path);
        kv.load().unwrap();
        assert_eq!(
            kv.get("ORDER_TOPIC_CONFIG", "TopicTest").as_deref(),
            Some("broker-a:8;broker-b:8")
        );
    }

    #[test]
    fn corrupt_file_falls_back_to_bak_or_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kvConfig.json");
        let kv = KvConfigManager::new(&path);
        kv.put("NS", "a", "1").unwrap();
        kv.put("NS", "b", "2").unwrap();
        std::fs::write(&path, b"{\"configTable\":").unwrap();
        let again = KvConfigManager::new(&path);
        again.load().unwrap();
        assert_eq!(again.get("NS", "a").as_deref(), Some("1"));
        assert!(
            again.get("NS", "b").is_none(),
            ".bak holds the previous version"
        );

        std::fs::write(persist::backup_path(&path), b"{\"configTable\":5}").unwrap();
        assert!(KvConfigManager::new(&path).load().is_err());
    }

    #[test]
    fn persist_failure_is_reported_but_value_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, b"").unwrap();
        let kv = KvConfigManager::new(blocker.join("kv.json"));
        assert!(kv.put("NS", "k", "v").is_err());
        assert_eq!(kv.get("NS", "k").as_deref(), Some("v"));
    }
}
