//! Committed consumer offsets (`ConsumerOffsetManager`): `topic@group` → queue id →
//! next offset to consume, persisted to consumerOffset.json every
//! `flushConsumerOffsetInterval` and on shutdown.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::RwLock;
use remoting::config_file::ConfigFileError;
use remoting::protocol::subscription::ConsumerOffsetSerializeWrapper;
use tracing::info;

use crate::persist;

const TOPIC_GROUP_SEPARATOR: char = '@';

fn key(topic: &str, group: &str) -> String {
    format!("{topic}{TOPIC_GROUP_SEPARATOR}{group}")
}

/// Consumer offsets of one broker.
#[derive(Debug)]
pub struct ConsumerOffsetManager {
    table: RwLock<BTreeMap<String, BTreeMap<i32, i64>>>,
    dirty: AtomicBool,
    path: PathBuf,
}

impl ConsumerOffsetManager {
    /// Loads consumerOffset.json (or its `.bak`).
    ///
    /// # Errors
    /// The file exists but neither it nor its `.bak` parses.
    pub fn load(path: PathBuf) -> Result<Self, ConfigFileError> {
        let table = persist::load::<ConsumerOffsetSerializeWrapper>(&path)?
            .map(|w| w.offset_table)
            .unwrap_or_default();
        if !table.is_empty() {
            info!(file = %path.display(), entries = table.len(), "loaded consumer offsets");
        }
        Ok(ConsumerOffsetManager {
            table: RwLock::new(table),
            dirty: AtomicBool::new(false),
            path,
        })
    }

    /// Records that `group` has consumed `topic`/`queue_id` up to `offset` (exclusive).
    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let mut table = self.table.write();
        let entry = table.entry(key(topic, group)).or_default();
        if entry.insert(queue_id, offset) != Some(offset) {
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// The committed offset, if any.
    #[must_use]
    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.table
            .read()
            .get(&key(topic, group))
            .and_then(|q| q.get(&queue_id).copied())
    }

    /// All committed offsets of `group` on `topic`.
    #[must_use]
    pub fn query_topic(&self, group: &str, topic: &str) -> BTreeMap<i32, i64> {
        self.table
            .read()
            .get(&key(topic, group))
            .cloned()
            .unwrap_or_default()
    }

    /// Topics `group` has offsets for.
    #[must_use]
    pub fn topics_of_group(&self, group: &str) -> BTreeSet<String> {
        self.table
            .read()
            .keys()
            .filter_map(|k| k.split_once(TOPIC_GROUP_SEPARATOR))
            .filter(|(_, g)| *g == group)
            .map(|(t, _)| t.to_owned())
            .collect()
    }

    /// Groups with offsets on `topic`.
    #[must_use]
    pub fn groups_of_topic(&self, topic: &str) -> BTreeSet<String> {
        self.table
            .read()
            .keys()
            .filter_map(|k| k.split_once(TOPIC_GROUP_SEPARATOR))
            .filter(|(t, _)| *t == topic)
            .map(|(_, g)| g.to_owned())
            .collect()
    }

    /// Drops the offsets of every group on `topic` (topic deleted).
    pub fn remove_topic(&self, topic: &str) {
        let prefix = format!("{topic}{TOPIC_GROUP_SEPARATOR}");
        let mut table = self.table.write();
        let before = table.len();
        table.retain(|k, _| !k.starts_with(&prefix));
        if table.len() != before {
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// Drops the offsets of `group` on every topic.
    pub fn remove_group(&self, group: &str) {
        let mut table = self.table.write();
        let before = table.len();
        table.retain(|k, _| {
            k.split_once(TOPIC_GROUP_SEPARATOR)
                .is_none_or(|(_, g)| g != group)
        });
        if table.len() != before {
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// Copies the offsets of `src` to `dest` (CLONE_GROUP_OFFSET).
    pub fn clone_offsets(&self, src: &str, dest: &str, topic: &str) {
        let mut table = self.table.write();
        if let Some(offsets) = table.get(&key(topic, src)).cloned() {
            table.insert(key(topic, dest), offsets);
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// The whole table (slave sync, GET_ALL_CONSUMER_OFFSET).
    #[must_use]
    pub fn wrapper(&self) -> ConsumerOffsetSerializeWrapper {
        ConsumerOffsetSerializeWrapper {
            offset_table: self.table.read().clone(),
            data_version: None,
        }
    }

    /// Replaces the table with the master's (slaves).
    pub fn replace_from_master(&self, master: ConsumerOffsetSerializeWrapper) {
        *self.table.write() = master.offset_table;
        self.dirty.store(true, Ordering::Release);
    }

    /// Writes consumerOffset.json if anything changed since the last write.
    ///
    /// # Errors
    /// The file could not be written (it stays dirty, the next flush retries).
    pub fn flush(&self) -> Result<(), ConfigFileError> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let result = persist::save(&self.path, &self.wrapper());
        if result.is_err() {
            self.dirty.store(true, Ordering::Release);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_query_persist() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/consumerOffset.json");
        let m = ConsumerOffsetManager::load(path.clone()).unwrap();
        m.commit("g1", "T1", 0, 10);
        m.commit("g1", "T1", 1, 20);
        m.commit("g2", "T1", 0, 5);
        m.commit("g1", "T2", 0, 1);
        assert_eq!(m.query("g1", "T1", 1), Some(20));
        assert_eq!(m.query("g1", "T1", 2), None);
        assert_eq!(m.topics_of_group("g1").len(), 2);
        assert_eq!(m.groups_of_topic("T1").len(), 2);
        m.flush().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""T1@g1":{0:10,1:20}"#), "{text}");
        let reloaded = ConsumerOffsetManager::load(path).unwrap();
        assert_eq!(reloaded.query("g2", "T1", 0), Some(5));
        reloaded.remove_topic("T1");
        assert_eq!(reloaded.query("g1", "T1", 0), None);
        assert_eq!(reloaded.query("g1", "T2", 0), Some(1));
        reloaded.remove_group("g1");
        assert!(reloaded.topics_of_group("g1").is_empty());
    }
}
