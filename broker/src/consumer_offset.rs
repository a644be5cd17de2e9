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
//!
//! A pop's offset counts once its checkpoint is durable; until then the move is only
//! *handed out* (`p` lines, [`ConsumerOffsetManager::journal_handed_out`]), with the
//! CommitLog end of the checkpoint record. A crash in that window (the checkpoint in the
//! log, its pop's answer and commit not yet made) must not hand the batch out a second
//! time under a new checkpoint — the old one would revive it after its invisible time
//! even if the second hand-out was acked. So the replay applies a `p` line when the
//! recovered CommitLog still holds its checkpoint (its end at or below the log's end):
//! the batch is then the old checkpoint's alone, and comes back by revive if it was
//! never acked. A `p` line whose checkpoint is gone (a torn tail, power loss) is
//! dropped: the batch is handed out again, nothing is skipped. Handed-out moves not yet
//! committed are written again after each emptying of the journal.
//!
//! Batches handed out with their checkpoint only in memory are journaled too ([`kept`]):
//! a restart writes their checkpoints rather than handing them out again.

mod kept;
pub use kept::KeptBatch;

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

/// A pop's move not committed yet: (group, topic, queue) → (offset, CommitLog end of its
/// checkpoint).
type HandedOut = BTreeMap<(String, String, i32), (i64, u64)>;

/// Consumer offsets of one broker.
#[derive(Debug)]
pub struct ConsumerOffsetManager {
    table: RwLock<BTreeMap<String, BTreeMap<i32, i64>>>,
    /// Resets not yet taken by a pull: `topic@group` → queue id → offset.
    pending_resets: RwLock<BTreeMap<String, BTreeMap<i32, i64>>>,
    dirty: AtomicBool,
    path: PathBuf,
    /// The journal of the broker's own moves since the last write of the file, and the
    /// handed-out moves it holds that no commit has covered yet (under its lock).
    journal: Mutex<Journal>,
    /// The kept batches the journal recovered, until the pop buffer takes them.
    recovered: Mutex<Vec<KeptBatch>>,
}

#[derive(Debug)]
struct Journal {
    file: Option<File>,
    handed_out: HandedOut,
    kept: kept::KeptTable,
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

/// A handed-out line: a pop's move to `offset`, its checkpoint ending at `log_end`.
fn handed_out_line(group: &str, topic: &str, queue_id: i32, offset: i64, log_end: u64) -> String {
    format!("p\t{group}\t{topic}\t{queue_id}\t{offset}\t{log_end}\n")
}

/// Applies the journal's lines (a torn or foreign line is skipped) to `table`; a
/// handed-out line only when `log_end` is known and holds its checkpoint.
///
/// The kept batches' lines go to `kept`; handed-out moves are applied last (a later `c`
/// line cancels one), so that `kept` sees the offset before them.
fn replay(
    text: &str,
    table: &mut BTreeMap<String, BTreeMap<i32, i64>>,
    log_end: Option<u64>,
    kept: &mut kept::KeptTable,
) -> (usize, Vec<KeptBatch>) {
    let mut n = 0;
    let mut handed: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for line in text.lines() {
        if let Some((kind @ ("k" | "w"), rest)) = line.split_once('\t') {
            if kept.replay_line(kind, rest, log_end) {
                n += 1;
            }
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if let ["p", group, topic, queue_id, offset, ck_end] = f.as_slice() {
            let (Ok(queue_id), Ok(offset), Ok(ck_end)) = (
                queue_id.parse::<i32>(),
                offset.parse::<i64>(),
                ck_end.parse::<u64>(),
            ) else {
                continue;
            };
            if log_end.is_some_and(|end| ck_end <= end) {
                let at = handed.entry((key(topic, group), queue_id)).or_insert(-1);
                *at = (*at).max(offset);
                n += 1;
            }
            continue;
        }
        let [kind, group, topic, queue_id, offset] = f.as_slice() else {
            continue;
        };
        let (Ok(queue_id), Ok(offset)) = (queue_id.parse::<i32>(), offset.parse::<i64>()) else {
            continue;
        };
        let tg = key(topic, group);
        let entry = table.entry(tg.clone()).or_default();
        match *kind {
            "c" => {
                entry.insert(queue_id, offset);
                kept.reset(&tg, queue_id);
                handed.remove(&(tg, queue_id));
            }
            "a" => {
                let current = entry.entry(queue_id).or_insert(-1);
                *current = (*current).max(offset);
                kept.passed(&tg, queue_id, offset);
            }
            _ => continue,
        }
        n += 1;
    }
    // Kept batches are judged against the offset before the handed-out moves.
    let recovered = kept.recover(
        |tg, q| table.get(tg).and_then(|m| m.get(&q)).copied(),
        |tg, q| handed.get(&(tg.to_owned(), q)).copied(),
    );
    for ((tg, q), offset) in handed {
        let current = table.entry(tg).or_default().entry(q).or_insert(-1);
        *current = (*current).max(offset);
    }
    (n, recovered)
}

impl ConsumerOffsetManager {
    /// Loads consumerOffset.json (or its `.bak`) and its journal, without the handed-out
    /// moves (no CommitLog to check them against).
    ///
    /// # Errors
    /// The file exists but neither it nor its `.bak` parses.
    pub fn load(path: PathBuf) -> Result<Self, ConfigFileError> {
        Self::load_over_log(path, None)
    }

    /// Loads consumerOffset.json (or its `.bak`) and its journal, applying the handed-out
    /// moves whose checkpoint lies within the recovered CommitLog's `log_end`.
    ///
    /// # Errors
    /// The file exists but neither it nor its `.bak` parses.
    pub fn load_over_log(path: PathBuf, log_end: Option<u64>) -> Result<Self, ConfigFileError> {
        let mut table = persist::load::<ConsumerOffsetSerializeWrapper>(&path)?
            .map(|w| w.offset_table)
            .unwrap_or_default();
        if !table.is_empty() {
            info!(file = %path.display(), entries = table.len(), "loaded consumer offsets");
        }
        let jpath = journal_path(&path);
        let mut kept = kept::KeptTable::default();
        let (replayed, recovered) = match std::fs::read(&jpath) {
            Ok(bytes) => replay(
                &String::from_utf8_lossy(&bytes),
                &mut table,
                log_end,
                &mut kept,
            ),
            Err(_) => (0, Vec::new()),
        };
        if !recovered.is_empty() {
            info!(
                batches = recovered.len(),
                "pop batches kept in memory before the restart recovered from the journal"
            );
        }
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
            journal: Mutex::new(Journal {
                file: Some(journal),
                handed_out: BTreeMap::new(),
                kept,
            }),
            recovered: Mutex::new(recovered),
        })
    }

    /// Appends a move of the broker's own to the journal (before it counts).
    fn log(&self, journal: &mut Journal, line: &str) {
        if let Some(file) = journal.file.as_mut() {
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
        if !journal.kept.is_empty() {
            journal.kept.reset(&key(topic, group), queue_id);
        }
        self.commit(group, topic, queue_id, offset);
    }

    /// [`advance`](Self::advance), journaled; a handed-out move it covers is done.
    pub fn advance_journaled(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let mut journal = self.journal.lock();
        self.log(
            &mut journal,
            &journal_line('a', group, topic, queue_id, offset),
        );
        self.advance(group, topic, queue_id, offset);
        if !journal.kept.is_empty() {
            journal.kept.passed(&key(topic, group), queue_id, offset);
        }
        if !journal.handed_out.is_empty() {
            let k = (group.to_owned(), topic.to_owned(), queue_id);
            if journal
                .handed_out
                .get(&k)
                .is_some_and(|(o, _)| *o <= offset)
            {
                journal.handed_out.remove(&k);
            }
        }
    }

    /// Journals that a pop handed `topic`/`queue_id` out up to `offset` with a
    /// checkpoint ending at `log_end` in the CommitLog, before the checkpoint is durable
    /// (the offset itself moves with [`advance_journaled`](Self::advance_journaled)
    /// then). A restart over a log that holds the checkpoint starts past it (see the
    /// module docs).
    pub fn journal_handed_out(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
        log_end: u64,
    ) {
        let mut journal = self.journal.lock();
        self.log(
            &mut journal,
            &handed_out_line(group, topic, queue_id, offset, log_end),
        );
        let entry = journal
            .handed_out
            .entry((group.to_owned(), topic.to_owned(), queue_id))
            .or_insert((offset, log_end));
        if offset >= entry.0 {
            *entry = (offset, log_end);
        }
    }

    /// Journals a batch handed out with its checkpoint only in memory (before the pop is
    /// answered): a restart writes its checkpoint unless the offset passed it.
    pub fn journal_kept(&self, batch: KeptBatch) {
        let mut journal = self.journal.lock();
        let line = journal.kept.keep(key(&batch.topic, &batch.group), batch);
        self.log(&mut journal, &line);
    }

    /// Journals that the checkpoint of a kept batch reached the CommitLog, ending at
    /// `log_end`: a restart over a log holding it does not write it again.
    pub fn journal_kept_written(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        start: i64,
        pop_time: i64,
        log_end: u64,
    ) {
        let mut journal = self.journal.lock();
        if let Some(line) =
            journal
                .kept
                .written(&key(topic, group), queue_id, start, pop_time, log_end)
        {
            self.log(&mut journal, &line);
        }
    }

    /// The kept batches the journal recovered at load (once).
    pub fn take_recovered_kept(&self) -> Vec<KeptBatch> {
        std::mem::take(&mut *self.recovered.lock())
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
        } else if let Some(file) = journal.file.as_mut() {
            if let Err(e) = file.set_len(0) {
                warn!(error = %e, "cannot empty the consumer offset journal");
            }
            // The moves handed out and not committed are not in the file: kept.
            let mut lines: Vec<String> = journal
                .handed_out
                .iter()
                .map(|((g, t, q), (o, end))| handed_out_line(g, t, *q, *o, *end))
                .collect();
            let table = self.table.read();
            lines.extend(
                journal
                    .kept
                    .lines(|tg, q| table.get(tg).and_then(|m| m.get(&q)).copied()),
            );
            drop(table);
            for line in lines {
                self.log(&mut journal, &line);
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
    fn a_handed_out_move_counts_after_a_crash_only_over_a_log_holding_its_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/consumerOffset.json");
        let m = ConsumerOffsetManager::load_over_log(path.clone(), Some(0)).unwrap();
        m.advance_journaled("g", "T", 0, 32);
        // Handed out, the checkpoints at CommitLog ends 1000 and 2000, not committed.
        m.journal_handed_out("g", "T", 0, 64, 1000);
        m.journal_handed_out("g", "T", 1, 32, 2000);
        assert_eq!(m.query("g", "T", 0), Some(32), "not before it is durable");
        // A write of the file empties the journal but keeps what is handed out.
        m.flush().unwrap();
        m.journal_handed_out("g", "T", 0, 96, 1500);
        drop(m);
        // The log recovered to 1600: the queue-0 checkpoints are there, queue 1's is not.
        let m = ConsumerOffsetManager::load_over_log(path.clone(), Some(1600)).unwrap();
        assert_eq!(m.query("g", "T", 0), Some(96));
        assert_eq!(
            m.query("g", "T", 1),
            None,
            "its checkpoint is gone: handed out again"
        );
        // A committed move settles it: not written again after the next flush.
        m.advance_journaled("g", "T", 0, 96);
        m.journal_handed_out("g", "T", 1, 32, 1700);
        m.advance_journaled("g", "T", 1, 32);
        m.flush().unwrap();
        assert_eq!(std::fs::metadata(journal_path(&path)).unwrap().len(), 0);
        drop(m);
        // Without a log to check against (tools, tests), handed-out lines are ignored.
        let m = ConsumerOffsetManager::load(path.clone()).unwrap();
        m.journal_handed_out("g", "T", 2, 8, 10);
        drop(m);
        let m = ConsumerOffsetManager::load(path).unwrap();
        assert_eq!(m.query("g", "T", 2), None);
        assert_eq!(m.query("g", "T", 0), Some(96));
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
