//! The table of consume queues by topic and queue id, and its loading from
//! `consumequeue/<topic>/<queueId>/`.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;
use tracing::{info, warn};

use super::ConsumeQueue;
use crate::error::{Result, StoreError};

type Queues = HashMap<String, HashMap<i32, Arc<ConsumeQueue>>>;

/// Every consume queue of the store.
#[derive(Debug)]
pub struct ConsumeQueueTable {
    root: PathBuf,
    file_size: usize,
    queues: RwLock<Queues>,
}

/// Whether a topic can be a directory name: RocketMQ's topic rules are checked by the
/// broker, but the store must not create paths outside its root from a record.
#[must_use]
pub fn is_safe_dir_name(topic: &str) -> bool {
    !topic.is_empty()
        && topic != "."
        && topic != ".."
        && !topic.bytes().any(|b| b == b'/' || b == b'\\' || b == 0)
}

impl ConsumeQueueTable {
    /// An empty table rooted at `root`.
    #[must_use]
    pub fn new(root: &Path, file_size: usize) -> Self {
        ConsumeQueueTable {
            root: root.to_owned(),
            file_size,
            queues: RwLock::new(HashMap::new()),
        }
    }

    /// Loads every `<root>/<topic>/<queueId>/` (RocketMQ `loadConsumeQueue`); names that
    /// are not queue ids are skipped with a warning.
    ///
    /// # Errors
    /// A queue's files violate the layout, or I/O fails.
    pub fn load(root: &Path, file_size: usize) -> Result<Self> {
        fs::create_dir_all(root).map_err(|e| StoreError::io("mkdir", root, e))?;
        let table = Self::new(root, file_size);
        let mut count = 0usize;
        {
            let mut queues = table.queues.write();
            for topic_dir in fs::read_dir(root).map_err(|e| StoreError::io("readdir", root, e))? {
                let topic_dir = topic_dir.map_err(|e| StoreError::io("readdir", root, e))?;
                let path = topic_dir.path();
                let Some(topic) = topic_dir.file_name().to_str().map(str::to_owned) else {
                    warn!(dir = %path.display(), "skipping consume queue directory with a non-UTF-8 name");
                    continue;
                };
                if !path.is_dir() || !is_safe_dir_name(&topic) {
                    warn!(dir = %path.display(), "skipping foreign entry in the consume queue root");
                    continue;
                }
                for q in fs::read_dir(&path).map_err(|e| StoreError::io("readdir", &path, e))? {
                    let q = q.map_err(|e| StoreError::io("readdir", &path, e))?;
                    let Some(queue_id) = q.file_name().to_str().and_then(|n| n.parse::<i32>().ok())
                    else {
                        warn!(dir = %q.path().display(), "skipping consume queue directory that is not a queue id");
                        continue;
                    };
                    let cq = ConsumeQueue::load(root, &topic, queue_id, file_size)?;
                    queues
                        .entry(topic.clone())
                        .or_default()
                        .insert(queue_id, Arc::new(cq));
                    count += 1;
                }
            }
        }
        info!(root = %root.display(), queues = count, "loaded consume queues");
        Ok(table)
    }

    /// The queue, if it exists.
    #[must_use]
    pub fn get(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        self.queues.read().get(topic)?.get(&queue_id).cloned()
    }

    /// The queue, created (without files) if absent.
    #[must_use]
    pub fn get_or_create(&self, topic: &str, queue_id: i32) -> Arc<ConsumeQueue> {
        if let Some(q) = self.get(topic, queue_id) {
            return q;
        }
        let mut queues = self.queues.write();
        let by_id = match queues.get_mut(topic) {
            Some(m) => m,
            None => queues.entry(topic.to_owned()).or_default(),
        };
        Arc::clone(by_id.entry(queue_id).or_insert_with(|| {
            Arc::new(ConsumeQueue::new(
                &self.root,
                topic,
                queue_id,
                self.file_size,
            ))
        }))
    }

    /// Every queue.
    #[must_use]
    pub fn all(&self) -> Vec<Arc<ConsumeQueue>> {
        self.queues
            .read()
            .values()
            .flat_map(|m| m.values().cloned())
            .collect()
    }

    /// Queue ids of `topic`, ascending.
    #[must_use]
    pub fn queue_ids(&self, topic: &str) -> Vec<i32> {
        let mut ids: Vec<i32> = self
            .queues
            .read()
            .get(topic)
            .map(|m| m.keys().copied().collect())
            .unwrap_or_default();
        ids.sort_unstable();
        ids
    }

    /// Topics with queues.
    #[must_use]
    pub fn topics(&self) -> Vec<String> {
        self.queues.read().keys().cloned().collect()
    }

    /// Removes `topic` from the table and returns its queues (the caller destroys them).
    pub fn remove_topic(&self, topic: &str) -> Vec<Arc<ConsumeQueue>> {
        self.queues
            .write()
            .remove(topic)
            .map(|m| m.into_values().collect())
            .unwrap_or_default()
    }

    /// Removes one queue if it is still `cq`.
    pub fn remove_queue(&self, cq: &Arc<ConsumeQueue>) {
        let mut queues = self.queues.write();
        if let Some(m) = queues.get_mut(cq.topic()) {
            if m.get(&cq.queue_id()).is_some_and(|q| Arc::ptr_eq(q, cq)) {
                m.remove(&cq.queue_id());
            }
            if m.is_empty() {
                queues.remove(cq.topic());
            }
        }
    }

    /// Next queue offset of every queue, for the CommitLog's put path.
    #[must_use]
    pub fn max_offsets(&self) -> HashMap<String, HashMap<i32, u64>> {
        self.queues
            .read()
            .iter()
            .map(|(t, m)| {
                (
                    t.clone(),
                    m.iter().map(|(q, cq)| (*q, cq.max_offset())).collect(),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consume_queue::CqUnit;

    #[test]
    fn load_finds_queues_and_skips_foreign_names() {
        let dir = tempfile::tempdir().unwrap();
        let t = ConsumeQueueTable::new(dir.path(), 200);
        let u = CqUnit {
            commit_log_offset: 0,
            size: 10,
            tags_code: 0,
        };
        t.get_or_create("A", 0).put(u, 0, 1).unwrap();
        t.get_or_create("A", 2).put(u, 5, 1).unwrap();
        t.get_or_create("%RETRY%g", 0).put(u, 0, 1).unwrap();
        assert!(t.get("B", 0).is_none());
        let _ = t.get_or_create("B", 0);
        std::fs::create_dir_all(dir.path().join("A/notanumber")).unwrap();
        std::fs::write(dir.path().join("stray"), b"x").unwrap();
        drop(t);
        let t = ConsumeQueueTable::load(dir.path(), 200).unwrap();
        assert_eq!(t.queue_ids("A"), vec![0, 2]);
        assert_eq!(t.get("A", 2).unwrap().max_offset(), 6);
        assert_eq!(t.max_offsets()["%RETRY%g"][&0], 1);
        assert!(
            t.get("B", 0).is_none(),
            "a queue without units leaves no directory"
        );
        let removed = t.remove_topic("A");
        assert_eq!(removed.len(), 2);
        assert!(t.queue_ids("A").is_empty());
    }

    #[test]
    fn unsafe_topics_are_refused_as_paths() {
        assert!(is_safe_dir_name("%DLQ%g-1|x"));
        for t in ["", ".", "..", "a/b", "a\\b"] {
            assert!(!is_safe_dir_name(t), "{t}");
        }
    }
}
