//! Committed consumer offsets (`ConsumerOffsetManager`): `topic@group` → queue id →
//! next offset to consume, persisted to consumerOffset.json every
//! `flushConsumerOffsetInterval` and on shutdown.
//!
//! A server-side reset (RocketMQ 5's `useServerSideResetOffset`) writes the new offset
//! and also keeps it as *pending* until the group's next pull of that queue takes it:
//! meanwhile the group's own commits of its old position are ignored (its in-flight
//! acknowledgements must not undo the reset) and queries answer the reset offset. The
//! pending marks live in memory only, as in RocketMQ: after a restart the written offset
//! is what counts.
//!
//! Offsets the broker moves itself — POP's — are also appended to
//! `consumerOffset.json.journal` before they count, and the journal is replayed over
//! the file at start and emptied after each write of the file. A pop's offset moves with
//! every batch; lost with the last 5 s of memory in a crash, it would hand out again
//! every message popped (and acked) in those seconds. RocketMQ has that window; here a
//! `kill -9` loses nothing the journal's `write` reached. (A pull consumer's offset is
//! its client's, committed again and again; it keeps RocketMQ's window.)

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, RwLock};
use remoting::config_file::ConfigFileError;
use remoting::protocol::subscription::ConsumerOffsetSerializeWrapper;
use tracing::{info, warn};

use crate::persist;

const TOPIC_GROUP_SEPARATOR: char = '@';

fn key(topic: &str, group: &str) -> String {
    format!("{topic}{TOPIC_GROUP_SEPARATOR}{group}")
}

/// Consumer offsets of one broker.
#[derive(Debug)]
pub struct ConsumerOffsetManager {
    table: RwLock<BTreeMap<String, BTreeMap<i32, i64>>>,
    /// Resets not yet taken by a pull: `topic@group` → queue id → offset.
    pending_resets: RwLock<BTreeMap<String, BTreeMap<i32, i64>>>,
    dirty: AtomicBool,
    path: PathBuf,
    /// The journal of the broker's own moves since the last write of the file.
    journal: Mutex<Option<File>>,
}

/// A journal line: `c` (set) or `a` (move forward only), group, topic, queue, offset.
fn journal_line(kind: char, group: &str, topic: &str, queue_id: i32, offset: i64) -> String {
    format!("{kind}\t{group}\t{topic}\t{queue_id}\t{offset}\n")
}

fn journal_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".journal");
    PathBuf::from(p)
}

/// Applies the journal's lines (a torn or foreign line is skipped) to `table`.
fn replay(text: &str, table: &mut BTreeMap<String, BTreeMap<i32, i64>>) -> usize {
    let mut n = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let [kind, group, topic, queue_id, offset] = f.as_slice() else {
            continue;
        };
        let (Ok(queue_id), Ok(offset)) = (queue_id.parse::<i32>(), offset.parse::<i64>()) else {
            continue;
        };
        let entry = table.entry(key(topic, group)).or_default();
        match *kind {
            "c" => {
                entry.insert(queue_id, offset);
            }
            "a" => {
                let current = entry.entry(queue_id).or_insert(-1);
                *current = (*current).max(offset);
            }
            _ => continue,
        }
        n += 1;
    }
    n
}

impl ConsumerOffsetManager {
    /// Loads consumerOffset.json (or its `.bak`).
    ///
    /// # Errors
    /// The file exists but neither it nor its `.bak` parses.
    pub fn load(path: PathBuf) -> Result<Self, ConfigFileError> {
        let mut table = persist::load::<ConsumerOffsetSerializeWrapper>(&path)?
            .map(|w| w.offset_table)
            .unwrap_or_default();
        if !table.is_empty() {
            info!(file = %path.display(), entries = table.len(), "loaded consumer offsets");
        }
        let jpath = journal_path(&path);
        let replayed = match std::fs::read(&jpath) {
            Ok(bytes) => replay(&String::from_utf8_lossy(&bytes), &mut table),
            Err(_) => 0,
        };
        if replayed > 0 {
            info!(file = %jpath.display(), replayed, "replayed consumer offset journal");
        }
        if let Some(dir) = jpath.parent() {
            std::fs::create_dir_all(dir).map_err(|e| ConfigFileError::Io {
                op: "create the config directory",
                path: dir.to_owned(),
                source: e,
            })?;
        }
        let journal = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&jpath)
            .map_err(|e| ConfigFileError::Io {
                op: "open the consumer offset journal",
                path: jpath.clone(),
                source: e,
            })?;
        Ok(ConsumerOffsetManager {
            table: RwLock::new(table),
            pending_resets: RwLock::new(BTreeMap::new()),
            dirty: AtomicBool::new(replayed > 0),
            path,
            journal: Mutex::new(Some(journal)),
        })
    }

    /// Appends a move of the broker's own to the journal (before it counts).
    fn log(&self, journal: &mut Option<File>, line: &str) {
        if let Some(file) = journal.as_mut() {
            if let Err(e) = file.write_all(line.as_bytes()) {
                log_limit::limited!(
                    warn!(error = %e, "cannot append to the consumer offset journal; offsets fall back to the periodic write")
                );
            }
        }
    }

    /// [`commit`](Self::commit), journaled: a move the broker makes itself (a pop).
    pub fn commit_journaled(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let mut journal = self.journal.lock();
        self.log(
            &mut journal,
            &journal_line('c', group, topic, queue_id, offset),
        );
        self.commit(group, topic, queue_id, offset);
    }

    /// [`advance`](Self::advance), journaled.
    pub fn advance_journaled(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let mut journal = self.journal.lock();
        self.log(
            &mut journal,
            &journal_line('a', group, topic, queue_id, offset),
        );
        self.advance(group, topic, queue_id, offset);
    }

    /// Records that `group` has consumed `topic`/`queue_id` up to `offset` (exclusive).
    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let mut table = self.table.write();
        let entry = table.entry(key(topic, group)).or_default();
        if entry.insert(queue_id, offset) != Some(offset) {
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// Moves the offset forward to `offset`, never back (a POP batch's end, committed
    /// once its checkpoint is durable: batches finish in log order, but a late one must
    /// not undo a later one).
    pub fn advance(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let mut table = self.table.write();
        let entry = table.entry(key(topic, group)).or_default();
        let current = entry.entry(queue_id).or_insert(-1);
        if offset > *current {
            *current = offset;
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// A commit from the group itself: ignored (false) while a reset of the queue is
    /// pending.
    pub fn commit_unless_reset(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> bool {
        if self.has_pending_reset(group, topic, queue_id) {
            return false;
        }
        self.commit(group, topic, queue_id, offset);
        true
    }

    /// Resets `group` on `topic`/`queue_id` to `offset`: written now, and pending until
    /// the group's next pull of the queue takes it ([`Self::take_pending_reset`]).
    pub fn reset(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        self.pending_resets
            .write()
            .entry(key(topic, group))
            .or_default()
            .insert(queue_id, offset);
        self.commit(group, topic, queue_id, offset);
    }

    /// Whether a reset of the queue waits for the group's next pull.
    #[must_use]
    pub fn has_pending_reset(&self, group: &str, topic: &str, queue_id: i32) -> bool {
        let pending = self.pending_resets.read();
        !pending.is_empty()
            && pending
                .get(&key(topic, group))
                .is_some_and(|q| q.contains_key(&queue_id))
    }

    /// Takes the queue's pending reset, if any.
    pub fn take_pending_reset(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        if self.pending_resets.read().is_empty() {
            return None;
        }
        let mut pending = self.pending_resets.write();
        let k = key(topic, group);
        let queues = pending.get_mut(&k)?;
        let offset = queues.remove(&queue_id);
        if queues.is_empty() {
            pending.remove(&k);
        }
        offset
    }

    /// The committed offset (a pending reset's, if any), if any.
    #[must_use]
    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        let k = key(topic, group);
        {
            let pending = self.pending_resets.read();
            if let Some(offset) = pending.get(&k).and_then(|q| q.get(&queue_id)) {
                return Some(*offset);
            }
        }
        self.table
            .read()
            .get(&k)
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
        self.pending_resets
            .write()
            .retain(|k, _| !k.starts_with(&prefix));
        let mut table = self.table.write();
        let before = table.len();
        table.retain(|k, _| !k.starts_with(&prefix));
        if table.len() != before {
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// Drops the offsets of `group` on every topic.
    pub fn remove_group(&self, group: &str) {
        let other_group = |k: &String| {
            k.split_once(TOPIC_GROUP_SEPARATOR)
                .is_none_or(|(_, g)| g != group)
        };
        self.pending_resets.write().retain(|k, _| other_group(k));
        let mut table = self.table.write();
        let before = table.len();
        table.retain(|k, _| other_group(k));
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
        // Journaled moves wait: the file written and the journal emptied are one step.
        let mut journal = self.journal.lock();
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let result = persist::save(&self.path, &self.wrapper());
        if result.is_err() {
            self.dirty.store(true, Ordering::Release);
        } else if let Some(file) = journal.as_mut() {
            if let Err(e) = file.set_len(0) {
                warn!(error = %e, "cannot empty the consumer offset journal");
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journaled_moves_survive_a_crash_and_the_journal_empties_on_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/consumerOffset.json");
        let m = ConsumerOffsetManager::load(path.clone()).unwrap();
        m.commit("g", "T", 0, 5);
        m.flush().unwrap();
        m.advance_journaled("g", "T", 0, 9);
        m.advance_journaled("g", "T", 0, 7);
        m.commit_journaled("g", "T", 1, 3);
        // Not journaled: lost with the process, as before.
        m.commit("g", "T", 2, 1);
        drop(m);
        // A torn last line (the process died in its write) is skipped.
        let jpath = journal_path(&path);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&jpath)
            .unwrap();
        f.write_all(b"c\tg\tT\t0\t").unwrap();
        let m = ConsumerOffsetManager::load(path.clone()).unwrap();
        assert_eq!(m.query("g", "T", 0), Some(9));
        assert_eq!(m.query("g", "T", 1), Some(3));
        assert_eq!(m.query("g", "T", 2), None);
        m.flush().unwrap();
        assert_eq!(std::fs::metadata(&jpath).unwrap().len(), 0);
        drop(m);
        let m = ConsumerOffsetManager::load(path).unwrap();
        assert_eq!(m.query("g", "T", 0), Some(9));
    }

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

    #[test]
    fn a_pending_reset_wins_over_the_groups_commits_until_a_pull_takes_it() {
        let dir = tempfile::tempdir().unwrap();
        let m = ConsumerOffsetManager::load(dir.path().join("consumerOffset.json")).unwrap();
        m.commit("g", "T", 0, 50);
        m.reset("g", "T", 0, 10);
        assert_eq!(m.query("g", "T", 0), Some(10));
        assert!(
            !m.commit_unless_reset("g", "T", 0, 51),
            "stale commit ignored"
        );
        assert_eq!(m.query("g", "T", 0), Some(10));
        assert!(m.commit_unless_reset("g", "T", 1, 7), "other queues commit");
        assert_eq!(m.take_pending_reset("g", "T", 0), Some(10));
        assert_eq!(m.take_pending_reset("g", "T", 0), None);
        assert!(m.commit_unless_reset("g", "T", 0, 12));
        assert_eq!(m.query("g", "T", 0), Some(12));
        m.reset("g", "T", 1, 0);
        m.remove_group("g");
        assert!(!m.has_pending_reset("g", "T", 1));
    }
}
