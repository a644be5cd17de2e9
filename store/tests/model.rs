//! Model-based test: random put / batch / flush / reopen / crash-reopen (garbage tail
//! plus abort marker) / truncate-tail sequences against a plain in-memory model of the
//! log (records with their offsets, queue offsets and bodies), with 4 KiB files so
//! rolls and BLANK markers happen constantly. After every step the consume queues,
//! read through `get_message`, must hold exactly the model's records of each queue.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns

mod common;

use std::collections::HashMap;

use common::{config, msg};
use message::record::{self, Record};
use proptest::prelude::*;
use store::offset_watch::block_on;
use store::{
    FlushDiskType, GetMessageStatus, MatchAll, MessageBatch, MessageStore, PhyOffset,
    PutMessageStatus, RecordAt,
};

const FILE: u64 = 4096;
const TOPICS: [&str; 3] = ["a", "bb", "topic-ccc"];
const PROPS: &str = "TAGS\u{1}tag-a\u{2}KEYS\u{1}k1";

#[derive(Debug, Clone)]
enum Op {
    Put {
        topic: usize,
        queue: i32,
        len: usize,
    },
    Batch {
        topic: usize,
        queue: i32,
        lens: Vec<usize>,
    },
    Flush,
    Reopen,
    CrashReopen {
        garbage: Vec<u8>,
    },
    TruncateTail {
        records: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..3usize, 0..2i32, 0..1500usize).prop_map(|(topic, queue, len)| Op::Put { topic, queue, len }),
        2 => (0..3usize, 0..2i32, proptest::collection::vec(0..400usize, 1..4))
            .prop_map(|(topic, queue, lens)| Op::Batch { topic, queue, lens }),
        1 => Just(Op::Flush),
        1 => Just(Op::Reopen),
        1 => proptest::collection::vec(any::<u8>(), 1..64).prop_map(|garbage| Op::CrashReopen { garbage }),
        1 => (0..5usize).prop_map(|records| Op::TruncateTail { records }),
    ]
}

#[derive(Debug, Clone, PartialEq)]
struct Rec {
    offset: u64,
    len: u64,
    topic: String,
    queue: i32,
    queue_offset: u64,
    body: Vec<u8>,
}

#[derive(Default)]
struct Model {
    recs: Vec<Rec>,
    end: u64,
}

impl Model {
    /// Where `total` bytes go: here, or at the next file if they plus a BLANK don't fit.
    fn place(&mut self, total: u64) -> u64 {
        if self.end % FILE + total + 8 > FILE {
            self.end = self.end - self.end % FILE + FILE;
        }
        self.end
    }
    fn next_queue_offset(&self, topic: &str, queue: i32) -> u64 {
        self.recs
            .iter()
            .rev()
            .find(|r| r.topic == topic && r.queue == queue)
            .map_or(0, |r| r.queue_offset + 1)
    }
}

fn rec_len(topic: &str, body: usize, props: usize) -> u64 {
    (91 + topic.len() + body + props) as u64
}

fn body(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + seed) as u8).collect()
}

fn check(store: &MessageStore, model: &Model) -> Result<(), TestCaseError> {
    let log = store.commit_log();
    prop_assert_eq!(log.max_offset().0, model.end);
    let mut got = Vec::new();
    let mut at = log.min_offset();
    while at < log.max_offset() {
        match log
            .record_at(at)
            .map_err(|e| TestCaseError::fail(e.to_string()))?
        {
            Some(RecordAt::Message(b)) => {
                let Ok(Some(Record::Message(m))) = record::decode(&b) else {
                    return Err(TestCaseError::fail(format!("bad record at {at}")));
                };
                prop_assert!(m.verify_crc().is_ok());
                got.push(Rec {
                    offset: at.0,
                    len: b.len() as u64,
                    topic: m.topic.to_owned(),
                    queue: m.queue_id,
                    queue_offset: m.queue_offset,
                    body: m.body.to_vec(),
                });
                at = PhyOffset(at.0 + b.len() as u64);
            }
            Some(RecordAt::EndOfFile { next }) => at = next,
            None => return Err(TestCaseError::fail(format!("hole at {at}"))),
        }
    }
    prop_assert_eq!(&got, &model.recs);
    check_queues(store, model)
}

/// Every queue read through `get_message` holds exactly the model's records.
fn check_queues(store: &MessageStore, model: &Model) -> Result<(), TestCaseError> {
    prop_assert!(store.wait_dispatched(std::time::Duration::from_secs(10)));
    for topic in TOPICS {
        for queue in 0..2 {
            let expect: Vec<(u64, Vec<u8>)> = model
                .recs
                .iter()
                .filter(|r| r.topic == topic && r.queue == queue)
                .map(|r| (r.queue_offset, r.body.clone()))
                .collect();
            let mut got = vec![];
            let mut offset = 0;
            loop {
                let r = store.get_message(topic, queue, offset, 32, None, &MatchAll);
                match r.status {
                    GetMessageStatus::Found => {
                        for (q, b) in r.queue_offsets.iter().zip(&r.messages) {
                            let Ok(Some(Record::Message(m))) = record::decode(b) else {
                                return Err(TestCaseError::fail("pulled bytes are not a record"));
                            };
                            prop_assert_eq!(m.queue_offset, *q);
                            got.push((*q, m.body.to_vec()));
                        }
                        offset = r.next_begin_offset;
                    }
                    GetMessageStatus::OffsetOverflowOne
                    | GetMessageStatus::NoMatchedLogicQueue
                    | GetMessageStatus::NoMessageInQueue => break,
                    other => return Err(TestCaseError::fail(format!("{topic}/{queue}: {other}"))),
                }
            }
            prop_assert_eq!(&got, &expect, "queue {}/{}", topic, queue);
            prop_assert_eq!(
                store.commit_log().queue_offset(topic, queue).0,
                expect.last().map_or(0, |e| e.0 + 1)
            );
        }
    }
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), FILE, FlushDiskType::SYNC_FLUSH);
    let mut store = Some(MessageStore::open(cfg.clone()).unwrap());
    let mut model = Model::default();
    for (i, op) in ops.into_iter().enumerate() {
        let s = store.as_ref().unwrap();
        match op {
            Op::Put { topic, queue, len } => {
                let t = TOPICS[topic];
                let b = body(len, i);
                let r = s.commit_log().put(&msg(t, queue, b.clone()));
                prop_assert_eq!(r.status, PutMessageStatus::PutOk);
                let a = r.append.unwrap();
                let len = rec_len(t, b.len(), PROPS.len());
                let offset = model.place(len);
                prop_assert_eq!(a.wrote_offset.0, offset);
                prop_assert_eq!(a.wrote_bytes as u64, len);
                let qo = model.next_queue_offset(t, queue);
                prop_assert_eq!(a.queue_offset.0, qo);
                model.recs.push(Rec {
                    offset,
                    len,
                    topic: t.into(),
                    queue,
                    queue_offset: qo,
                    body: b,
                });
                model.end = offset + len;
            }
            Op::Batch { topic, queue, lens } => {
                let t = TOPICS[topic];
                let bodies: Vec<Vec<u8>> = lens
                    .iter()
                    .enumerate()
                    .map(|(j, l)| body(*l, i + j))
                    .collect();
                let raw = common::batch_body(bodies.iter().map(|b| (0, &b[..], "K\u{1}v")));
                let batch = MessageBatch {
                    topic: t.into(),
                    queue_id: queue,
                    sys_flag: 0,
                    born_timestamp: 1,
                    born_host: common::born(),
                    store_host: common::store_host(),
                    reconsume_times: 0,
                    body: raw.into(),
                    properties: "C\u{1}x".into(),
                };
                let r = s.commit_log().put_batch(&batch);
                prop_assert_eq!(r.status, PutMessageStatus::PutOk);
                let a = r.append.unwrap();
                let lens: Vec<u64> = bodies
                    .iter()
                    .map(|b| rec_len(t, b.len(), "K\u{1}v\u{2}C\u{1}x".len()))
                    .collect();
                let mut offset = model.place(lens.iter().sum());
                prop_assert_eq!(a.wrote_offset.0, offset);
                let first = model.next_queue_offset(t, queue);
                prop_assert_eq!(a.queue_offset.0, first);
                for (qo, (b, len)) in (first..).zip(bodies.into_iter().zip(lens)) {
                    model.recs.push(Rec {
                        offset,
                        len,
                        topic: t.into(),
                        queue,
                        queue_offset: qo,
                        body: b,
                    });
                    offset += len;
                }
                model.end = offset;
            }
            Op::Flush => {
                let end = s.commit_log().max_offset();
                prop_assert_eq!(
                    block_on(s.commit_log().wait_flushed(end)),
                    PutMessageStatus::PutOk
                );
                prop_assert!(s.commit_log().flushed_offset() >= end);
            }
            Op::Reopen => {
                store.take().unwrap().shutdown().unwrap();
                store = Some(MessageStore::open(cfg.clone()).unwrap());
            }
            Op::CrashReopen { garbage } => {
                store.take().unwrap().shutdown().unwrap();
                // A torn append after the end, and the abort marker of a crashed run.
                let rel = model.end % FILE;
                let from = model.end - rel;
                let path = dir
                    .path()
                    .join("commitlog")
                    .join(store::mapped_file::file_name(from));
                if rel > 0 && path.exists() {
                    let mut raw = std::fs::read(&path).unwrap();
                    let n = garbage.len().min((FILE - rel) as usize);
                    raw[rel as usize..rel as usize + n].copy_from_slice(&garbage[..n]);
                    std::fs::write(&path, raw).unwrap();
                }
                std::fs::write(dir.path().join("abort"), b"").unwrap();
                store = Some(MessageStore::open(cfg.clone()).unwrap());
                let rep = store.as_ref().unwrap().commit_log().recovery_report();
                prop_assert_eq!(rep.end_offset, model.end);
            }
            Op::TruncateTail { records } => {
                let keep = model.recs.len().saturating_sub(records);
                if keep < model.recs.len() {
                    let cut = model.recs[keep].offset;
                    s.truncate_dirty(PhyOffset(cut)).unwrap();
                    model.recs.truncate(keep);
                    model.end = cut;
                }
            }
        }
        check(store.as_ref().unwrap(), &model)?;
    }
    // Queue offsets continue where the model says.
    let s = store.as_ref().unwrap();
    let mut expect: HashMap<(String, i32), u64> = HashMap::new();
    for r in &model.recs {
        expect.insert((r.topic.clone(), r.queue), r.queue_offset + 1);
    }
    for ((t, q), next) in expect {
        prop_assert_eq!(s.commit_log().queue_offset(&t, q).0, next);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn commit_log_matches_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops)?;
    }
}
