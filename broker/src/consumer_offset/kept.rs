//! Pop batches handed out with their checkpoint only in memory (`enablePopBufferMerge`,
//! `pop::ck_buffer`), journaled so that a crash does not forget them.
//!
//! Why: a batch kept in memory has no record anywhere but the broker's memory; a
//! `kill -9` used to forget it, and every such batch was popped again from the queue
//! after the restart (every message in flight at the kill came back at once, acked or
//! not). A `k` line, written at the pop before its answer, holds the batch's checkpoint;
//! a `w` line says its checkpoint reached the CommitLog (the buffer wrote it). The
//! offset passing a batch (`a` lines) settles it. At start the journal names the batches
//! still open; the buffer writes the checkpoints of those not in the recovered log and
//! the pops start past them, so they stay invisible, come back by revive if they were
//! never acked, and a late ack of their receipts finds its checkpoint.
//!
//! Only a run of batches that starts at the committed offset (or at a handed-out move
//! that counts) and has no gap is recovered: a batch behind a gap (a batch written at
//! once whose checkpoint may not be in the log) is handed out again from the queue, as
//! before, so nothing the journal cannot account for is skipped.

use std::collections::BTreeMap;

/// A batch the journal recovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptBatch {
    /// The consumer group.
    pub group: String,
    /// The topic popped (a retry topic for retried messages).
    pub topic: String,
    /// The queue.
    pub queue_id: i32,
    /// The batch's first queue offset (its checkpoint's start).
    pub start: i64,
    /// Where the next pop of the queue started after it.
    pub end: i64,
    /// The pop time (its checkpoint's).
    pub pop_time: i64,
    /// The revive queue of its checkpoint.
    pub revive_qid: i32,
    /// Its checkpoint, as written to the revive log (JSON).
    pub checkpoint: String,
    /// Its checkpoint is in the recovered CommitLog already.
    pub logged: bool,
}

/// `topic@group` → queue id: the journal's key of a queue (as the offset table's).
type QueueKey = (String, i32);

/// One kept batch and its journal lines.
#[derive(Debug, Clone)]
struct Entry {
    batch: KeptBatch,
    line: String,
    written: Option<String>,
}

/// The kept batches not passed yet, by queue and (start, pop time): what the journal
/// must hold again after each emptying.
#[derive(Debug, Default)]
pub(super) struct KeptTable(BTreeMap<QueueKey, BTreeMap<(i64, i64), Entry>>);

/// A `k` line.
fn kept_line(b: &KeptBatch) -> String {
    format!(
        "k\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
        b.group, b.topic, b.queue_id, b.start, b.end, b.pop_time, b.revive_qid, b.checkpoint
    )
}

/// A `w` line.
fn written_line(b: &KeptBatch, log_end: u64) -> String {
    format!(
        "w\t{}\t{}\t{}\t{}\t{}\t{log_end}\n",
        b.group, b.topic, b.queue_id, b.start, b.pop_time
    )
}

impl KeptTable {
    /// Whether no batch is kept (the buffer off: nothing to look up per commit).
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds a batch; its `k` line.
    pub(super) fn keep(&mut self, topic_group: String, batch: KeptBatch) -> String {
        let line = kept_line(&batch);
        self.0
            .entry((topic_group, batch.queue_id))
            .or_default()
            .insert(
                (batch.start, batch.pop_time),
                Entry {
                    batch,
                    line: line.clone(),
                    written: None,
                },
            );
        line
    }

    /// The checkpoint of a kept batch reached the log at `log_end`: its `w` line (none
    /// for a batch not kept).
    pub(super) fn written(
        &mut self,
        topic_group: &str,
        queue_id: i32,
        start: i64,
        pop_time: i64,
        log_end: u64,
    ) -> Option<String> {
        let e = self
            .0
            .get_mut(&(topic_group.to_owned(), queue_id))?
            .get_mut(&(start, pop_time))?;
        let line = written_line(&e.batch, log_end);
        e.written = Some(line.clone());
        Some(line)
    }

    /// The offset passed `offset`: the batches ending there or before are settled.
    pub(super) fn passed(&mut self, topic_group: &str, queue_id: i32, offset: i64) {
        let k = (topic_group.to_owned(), queue_id);
        if let Some(q) = self.0.get_mut(&k) {
            q.retain(|_, e| e.batch.end > offset);
            if q.is_empty() {
                self.0.remove(&k);
            }
        }
    }

    /// The queue's offset was set (a reset, a first position): its batches are forgotten.
    pub(super) fn reset(&mut self, topic_group: &str, queue_id: i32) {
        self.0.remove(&(topic_group.to_owned(), queue_id));
    }

    /// Every line to write again into an emptied journal, dropping the batches
    /// `committed` (`topic@group`, queue → offset) has passed.
    pub(super) fn lines(&mut self, committed: impl Fn(&str, i32) -> Option<i64>) -> Vec<String> {
        for ((tg, q), batches) in &mut self.0 {
            if let Some(c) = committed(tg, *q) {
                batches.retain(|_, e| e.batch.end > c);
            }
        }
        self.0.retain(|_, b| !b.is_empty());
        self.0
            .values()
            .flat_map(BTreeMap::values)
            .flat_map(|e| std::iter::once(e.line.clone()).chain(e.written.clone()))
            .collect()
    }

    /// Reads a `k` or `w` line's fields (after the kind); false if it is not one.
    pub(super) fn replay_line(&mut self, kind: &str, rest: &str, log_end: Option<u64>) -> bool {
        match kind {
            "k" => {
                let f: Vec<&str> = rest.splitn(8, '\t').collect();
                let [group, topic, queue_id, start, end, pop_time, revive_qid, ck] = f[..] else {
                    return false;
                };
                let (Ok(queue_id), Ok(start), Ok(end), Ok(pop_time), Ok(revive_qid)) = (
                    queue_id.parse(),
                    start.parse(),
                    end.parse(),
                    pop_time.parse(),
                    revive_qid.parse(),
                ) else {
                    return false;
                };
                let batch = KeptBatch {
                    group: group.to_owned(),
                    topic: topic.to_owned(),
                    queue_id,
                    start,
                    end,
                    pop_time,
                    revive_qid,
                    checkpoint: ck.to_owned(),
                    logged: false,
                };
                self.keep(super::key(topic, group), batch);
                true
            }
            "w" => {
                let f: Vec<&str> = rest.split('\t').collect();
                let [group, topic, queue_id, start, pop_time, at] = f[..] else {
                    return false;
                };
                let (Ok(queue_id), Ok(start), Ok(pop_time), Ok(at)) = (
                    queue_id.parse(),
                    start.parse(),
                    pop_time.parse(),
                    at.parse::<u64>(),
                ) else {
                    return false;
                };
                let tg = super::key(topic, group);
                if self.written(&tg, queue_id, start, pop_time, at).is_some() {
                    if let Some(e) = self
                        .0
                        .get_mut(&(tg, queue_id))
                        .and_then(|q| q.get_mut(&(start, pop_time)))
                    {
                        e.batch.logged = log_end.is_some_and(|end| at <= end);
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// After the replay: keeps, per queue, the run of batches from where the pops
    /// restart — `committed` (the offset before any handed-out move) or `resumed` (after
    /// them) — without a gap, and returns the batches of those runs whose checkpoints
    /// the buffer must write or wait for (all but the logged ones the resumed offset
    /// passed).
    pub(super) fn recover(
        &mut self,
        committed: impl Fn(&str, i32) -> Option<i64>,
        resumed: impl Fn(&str, i32) -> Option<i64>,
    ) -> Vec<KeptBatch> {
        let mut out = Vec::new();
        for ((tg, q), batches) in &mut self.0 {
            let Some(c) = committed(tg, *q).filter(|c| *c >= 0) else {
                batches.clear();
                continue;
            };
            let resumed = resumed(tg, *q).unwrap_or(c).max(c);
            batches.retain(|_, e| e.batch.end > c);
            let mut cursor = resumed;
            let mut run = std::collections::BTreeSet::new();
            let mut entries: Vec<&Entry> = batches.values().collect();
            entries.sort_by_key(|e| e.batch.start);
            for e in entries {
                if e.batch.start > cursor {
                    break;
                }
                cursor = cursor.max(e.batch.end);
                run.insert((e.batch.start, e.batch.pop_time));
            }
            batches.retain(|k, _| run.contains(k));
            out.extend(
                batches
                    .values()
                    .filter(|e| !(e.batch.logged && e.batch.end <= resumed))
                    .map(|e| e.batch.clone()),
            );
        }
        self.0.retain(|_, b| !b.is_empty());
        out.sort_by(|a, b| {
            (&a.topic, &a.group, a.queue_id, a.start)
                .cmp(&(&b.topic, &b.group, b.queue_id, b.start))
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(start: i64, end: i64) -> KeptBatch {
        KeptBatch {
            group: "g".into(),
            topic: "T".into(),
            queue_id: 0,
            start,
            end,
            pop_time: 1000 + start,
            revive_qid: 1,
            checkpoint: r#"{"so":0}"#.into(),
            logged: false,
        }
    }

    fn replayed(lines: &[String], log_end: u64) -> KeptTable {
        let mut t = KeptTable::default();
        for l in lines {
            let (kind, rest) = l.trim_end().split_once('\t').unwrap();
            assert!(t.replay_line(kind, rest, Some(log_end)), "{l}");
        }
        t
    }

    #[test]
    fn the_run_from_the_committed_offset_is_recovered_and_nothing_behind_a_gap() {
        let mut t = KeptTable::default();
        let lines: Vec<String> = [batch(0, 32), batch(32, 64), batch(96, 128)]
            .into_iter()
            .map(|b| t.keep("T@g".into(), b))
            .collect();
        let mut r = replayed(&lines, 0);
        let got = r.recover(|_, _| Some(0), |_, _| None);
        assert_eq!(
            got.iter().map(|b| (b.start, b.end)).collect::<Vec<_>>(),
            [(0, 32), (32, 64)],
            "64..96 is not accounted for: 96.. is popped again"
        );
        assert_eq!(r.lines(|_, _| None).len(), 2);
    }

    #[test]
    fn passed_and_logged_batches_are_not_written_again() {
        let mut t = KeptTable::default();
        let mut lines = vec![t.keep("T@g".into(), batch(0, 32))];
        lines.push(t.keep("T@g".into(), batch(32, 64)));
        lines.push(t.written("T@g", 0, 32, 1032, 500).unwrap());
        lines.push(t.keep("T@g".into(), batch(64, 96)));
        lines.push(t.written("T@g", 0, 64, 1064, 900).unwrap());
        // The log recovered to 600: 32..64's checkpoint is there, 64..96's is not.
        let mut r = replayed(&lines, 600);
        r.passed("T@g", 0, 32);
        let got = r.recover(|_, _| Some(32), |_, _| Some(64));
        assert_eq!(
            got.iter().map(|b| (b.start, b.logged)).collect::<Vec<_>>(),
            [(64, false)]
        );
    }

    #[test]
    fn a_reset_forgets_the_queue_and_torn_lines_are_skipped() {
        let mut t = KeptTable::default();
        t.keep("T@g".into(), batch(0, 32));
        t.reset("T@g", 0);
        assert!(t.lines(|_, _| None).is_empty());
        let mut r = KeptTable::default();
        assert!(!r.replay_line("k", "g\tT\t0\t5", None));
        assert!(!r.replay_line("w", "g\tT\tx\t0\t1\t2", None));
        assert!(r.recover(|_, _| Some(0), |_, _| None).is_empty());
    }
}
