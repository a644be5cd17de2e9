#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test
//! Helpers shared by the store's integration tests.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;

use bytes::{Bytes, BytesMut};
use message::batch::BatchEntry;
use store::{FlushDiskType, MessageBatch, MessageInner, StoreConfig};

/// A small-file config rooted at `root`.
pub fn config(root: &Path, file_size: u64, flush: FlushDiskType) -> StoreConfig {
    let mut c = StoreConfig::with_root(root);
    c.mapped_file_size_commit_log = file_size;
    c.flush_disk_type = flush;
    c.flush_interval_commit_log = 10;
    c.commit_interval_commit_log = 5;
    c.max_message_size = 64 * 1024;
    c
}

pub fn born() -> SocketAddr {
    "10.1.2.3:40000".parse().unwrap()
}

pub fn store_host() -> SocketAddr {
    "10.9.8.7:10911".parse().unwrap()
}

pub fn msg(topic: &str, queue_id: i32, body: impl Into<Bytes>) -> MessageInner {
    MessageInner {
        topic: topic.to_owned(),
        queue_id,
        flag: 0,
        body: body.into(),
        properties: "TAGS\u{1}tag-a\u{2}KEYS\u{1}k1".to_owned(),
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: born(),
        store_host: store_host(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// A client batch body of `(flag, body, properties)` entries.
pub fn batch_body<'a>(entries: impl IntoIterator<Item = (i32, &'a [u8], &'a str)>) -> Vec<u8> {
    let entries: Vec<BatchEntry<'_>> = entries
        .into_iter()
        .map(|(flag, body, properties)| BatchEntry {
            flag,
            body,
            properties,
        })
        .collect();
    let mut buf = BytesMut::new();
    message::batch::encode(&entries, &mut buf).expect("a test batch encodes");
    buf.to_vec()
}

pub fn batch(topic: &str, queue_id: i32, bodies: &[&[u8]]) -> MessageBatch {
    let body = batch_body(bodies.iter().map(|b| (0, *b, "UNIQ_KEY\u{1}u")));
    MessageBatch {
        topic: topic.to_owned(),
        queue_id,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: born(),
        store_host: store_host(),
        reconsume_times: 0,
        body: body.into(),
        properties: "CLUSTER\u{1}c1".to_owned(),
    }
}

/// Deterministic xorshift for tests that want randomness without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn seed() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            | 1
    }
}

/// A small-file config with small consume-queue files (64 units) and small index
/// files (64 slots, 255 entries), so rolls happen in every direction.
pub fn small_config(root: &Path, file_size: u64, flush: FlushDiskType) -> StoreConfig {
    let mut c = config(root, file_size, flush);
    c.mapped_file_size_consume_queue = 20 * 64;
    c.max_hash_slot_num = 64;
    c.max_index_num = 256;
    c
}

/// A message with tags and keys (and a unique key).
pub fn keyed(
    topic: &str,
    queue_id: i32,
    body: impl Into<Bytes>,
    tags: &str,
    keys: &str,
    uniq: &str,
) -> MessageInner {
    let mut m = msg(topic, queue_id, body);
    let mut pairs = vec![];
    if !tags.is_empty() {
        pairs.push(("TAGS", tags));
    }
    if !keys.is_empty() {
        pairs.push(("KEYS", keys));
    }
    if !uniq.is_empty() {
        pairs.push(("UNIQ_KEY", uniq));
    }
    m.properties = message::properties::build(pairs);
    m
}

/// Java's `String.hashCode()`, written again here so tests do not trust the store's.
pub fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

/// One CommitLog record, decoded from raw bytes by this independent decoder (IPv4
/// hosts, v1 magic only: what the tests write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRecord {
    pub offset: u64,
    pub size: u32,
    pub queue_id: i32,
    pub queue_offset: u64,
    pub sys_flag: i32,
    pub store_timestamp: i64,
    pub topic: String,
    pub properties: String,
}

impl RawRecord {
    pub fn prop(&self, key: &str) -> Option<&str> {
        self.properties.split('\u{2}').find_map(|kv| {
            let (k, v) = kv.split_once('\u{1}')?;
            (k == key && !v.is_empty()).then_some(v)
        })
    }

    /// Keys the index holds for this record: UNIQ_KEY, then each KEYS entry.
    pub fn index_keys(&self) -> Vec<String> {
        if self.sys_flag & 0xC == 0xC {
            return vec![];
        }
        let mut keys: Vec<String> = self
            .prop("UNIQ_KEY")
            .into_iter()
            .map(str::to_owned)
            .collect();
        if let Some(k) = self.prop("KEYS") {
            keys.extend(k.split(' ').filter(|k| !k.is_empty()).map(str::to_owned));
        }
        keys
    }

    pub fn takes_unit(&self) -> bool {
        matches!(self.sys_flag & 0xC, 0 | 0x8)
    }
}

/// Every record of the CommitLog files under `root/commitlog`, read from disk.
pub fn raw_records(root: &Path, file_size: u64) -> Vec<RawRecord> {
    let mut files: Vec<_> = std::fs::read_dir(root.join("commitlog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().len() == 20)
        .collect();
    files.sort();
    let mut out = vec![];
    for f in files {
        let from: u64 = f.file_name().unwrap().to_str().unwrap().parse().unwrap();
        let b = std::fs::read(&f).unwrap();
        assert_eq!(b.len() as u64, file_size);
        let mut pos = 0usize;
        while pos + 8 <= b.len() {
            let total = be_u32(&b, pos) as usize;
            let magic = be_u32(&b, pos + 4);
            if total == 0 || magic == 0xCBD4_3194 {
                break;
            }
            assert_eq!(magic, 0xDAA3_20A7, "record at {}", from + pos as u64);
            let r = &b[pos..pos + total];
            assert_eq!(be_u64(r, 28), from + pos as u64, "PHYSICALOFFSET");
            let body_len = be_u32(r, 84) as usize;
            let t = 88 + body_len;
            let topic_len = r[t] as usize;
            let topic = String::from_utf8(r[t + 1..t + 1 + topic_len].to_vec()).unwrap();
            let p = t + 1 + topic_len;
            let props_len = u16::from_be_bytes([r[p], r[p + 1]]) as usize;
            out.push(RawRecord {
                offset: from + pos as u64,
                size: total as u32,
                queue_id: be_u32(r, 12) as i32,
                queue_offset: be_u64(r, 20),
                sys_flag: be_u32(r, 36) as i32,
                store_timestamp: be_u64(r, 56) as i64,
                topic,
                properties: String::from_utf8(r[p + 2..p + 2 + props_len].to_vec()).unwrap(),
            });
            pos += total;
        }
    }
    out
}

/// The units of one consume queue read from its files: (queue offset, phy, size, tags).
pub fn raw_units(root: &Path, topic: &str, queue_id: i32) -> Vec<(u64, u64, u32, i64)> {
    let dir = root
        .join("consumequeue")
        .join(topic)
        .join(queue_id.to_string());
    let mut files: Vec<_> = match std::fs::read_dir(&dir) {
        Ok(d) => d.map(|e| e.unwrap().path()).collect(),
        Err(_) => return vec![],
    };
    files.sort();
    let mut out = vec![];
    for f in files {
        let from: u64 = f.file_name().unwrap().to_str().unwrap().parse().unwrap();
        let b = std::fs::read(&f).unwrap();
        for (i, u) in b.chunks_exact(20).enumerate() {
            let (phy, size, tags) = (
                be_u64(u, 0) as i64,
                be_u32(u, 8) as i32,
                be_u64(u, 12) as i64,
            );
            if phy < 0 || size <= 0 {
                break;
            }
            if size == i32::MAX {
                continue; // blank
            }
            out.push((from / 20 + i as u64, phy as u64, size as u32, tags));
        }
    }
    out
}

/// One index file read from disk: header fields, slots, entries 1..count.
#[derive(Debug)]
pub struct RawIndexFile {
    pub begin_timestamp: i64,
    pub end_timestamp: i64,
    pub begin_phy: i64,
    pub end_phy: i64,
    pub slot_count: i32,
    pub count: u32,
    pub slots: Vec<u32>,
    /// (keyHash, phy, timeDiff, prev) for entries 1..count (index 0 = entry 1).
    pub entries: Vec<(i32, i64, i32, i32)>,
}

pub fn raw_index(root: &Path, slots: u32, entries: u32) -> Vec<RawIndexFile> {
    let mut files: Vec<_> = std::fs::read_dir(root.join("index"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .map(|f| {
            let b = std::fs::read(f).unwrap();
            assert_eq!(b.len(), 40 + 4 * slots as usize + 20 * entries as usize);
            let count = (be_u32(&b, 36) as i32).max(1) as u32;
            let slot_vals = (0..slots as usize)
                .map(|i| be_u32(&b, 40 + 4 * i))
                .collect();
            let base = 40 + 4 * slots as usize;
            let ents = (1..count as usize)
                .map(|n| {
                    let e = base + 20 * n;
                    (
                        be_u32(&b, e) as i32,
                        be_u64(&b, e + 4) as i64,
                        be_u32(&b, e + 12) as i32,
                        be_u32(&b, e + 16) as i32,
                    )
                })
                .collect();
            RawIndexFile {
                begin_timestamp: be_u64(&b, 0) as i64,
                end_timestamp: be_u64(&b, 8) as i64,
                begin_phy: be_u64(&b, 16) as i64,
                end_phy: be_u64(&b, 24) as i64,
                slot_count: be_u32(&b, 32) as i32,
                count,
                slots: slot_vals,
                entries: ents,
            }
        })
        .collect()
}

/// The tags code RocketMQ writes for a record (no delay topic in these tests).
pub fn expected_tags_code(r: &RawRecord) -> i64 {
    r.prop("TAGS").map_or(0, |t| i64::from(java_hash(t)))
}

/// `abs(hashCode(topic#key))`, 0 on overflow.
pub fn index_hash(topic: &str, key: &str) -> i32 {
    let h = java_hash(&format!("{topic}#{key}"));
    if h == i32::MIN { 0 } else { h.abs() }
}

/// The golden check, from disk and against the CommitLog only: every record that
/// takes a queue offset has exactly its unit (offset, size, tags code) at its queue
/// offset and queues hold nothing else; every (record, key) has exactly one index
/// entry with the right hash and time, and every entry is such a pair; chains link
/// each slot's entries newest to oldest.
pub fn golden_check(root: &Path, c: &StoreConfig) {
    let records = raw_records(root, c.mapped_file_size_commit_log);
    // Consume queues.
    let mut by_queue: std::collections::BTreeMap<(String, i32), Vec<&RawRecord>> =
        Default::default();
    for r in records.iter().filter(|r| r.takes_unit()) {
        by_queue
            .entry((r.topic.clone(), r.queue_id))
            .or_default()
            .push(r);
    }
    let mut seen_queues = 0;
    for ((topic, q), recs) in &by_queue {
        let units = raw_units(root, topic, *q);
        let first = recs[0].queue_offset;
        let units: Vec<_> = units.into_iter().filter(|u| u.0 >= first).collect();
        assert_eq!(units.len(), recs.len(), "units of {topic}/{q}");
        for (u, r) in units.iter().zip(recs) {
            assert_eq!(u.0, r.queue_offset, "{topic}/{q}: queue offset");
            assert_eq!(u.1, r.offset, "{topic}/{q}@{}: commit log offset", u.0);
            assert_eq!(u.2, r.size, "{topic}/{q}@{}: size", u.0);
            assert_eq!(u.3, expected_tags_code(r), "{topic}/{q}@{}: tags code", u.0);
        }
        seen_queues += 1;
    }
    assert_eq!(seen_queues, by_queue.len());
    // Index.
    if !c.message_index_enable {
        return;
    }
    let files = raw_index(root, c.max_hash_slot_num, c.max_index_num);
    let mut expect: std::collections::BTreeMap<(i32, u64), usize> = Default::default();
    let by_offset: std::collections::HashMap<u64, &RawRecord> =
        records.iter().map(|r| (r.offset, r)).collect();
    for r in &records {
        for k in r.index_keys() {
            *expect
                .entry((index_hash(&r.topic, &k), r.offset))
                .or_default() += 1;
        }
    }
    let mut got: std::collections::BTreeMap<(i32, u64), usize> = Default::default();
    for f in &files {
        for (n0, (hash, phy, diff, prev)) in f.entries.iter().enumerate() {
            let n = n0 as u32 + 1;
            *got.entry((*hash, *phy as u64)).or_default() += 1;
            let r = by_offset
                .get(&(*phy as u64))
                .unwrap_or_else(|| panic!("entry {n} points at no record: {phy}"));
            assert!(*prev >= 0 && (*prev as u32) < n, "entry {n}: prev {prev}");
            if *prev > 0 {
                let p = &f.entries[*prev as usize - 1];
                assert_eq!(
                    p.0 as u32 % c.max_hash_slot_num,
                    *hash as u32 % c.max_hash_slot_num,
                    "chain stays in its slot"
                );
            }
            if n > 1 {
                assert_eq!(
                    i64::from(*diff),
                    (r.store_timestamp - f.begin_timestamp) / 1000,
                    "entry {n}: time diff"
                );
            }
        }
        // Each used slot points at the newest entry of its slot.
        for (n0, (hash, ..)) in f.entries.iter().enumerate().rev() {
            let slot = *hash as u32 % c.max_hash_slot_num;
            let newest = f
                .entries
                .iter()
                .rposition(|e| e.0 as u32 % c.max_hash_slot_num == slot)
                .unwrap();
            if newest == n0 {
                assert_eq!(f.slots[slot as usize], n0 as u32 + 1, "slot {slot}");
            }
        }
        let used = f.slots.iter().filter(|&&s| s != 0).count();
        assert_eq!(used as i32, f.slot_count, "hashSlotCount");
    }
    assert_eq!(
        got, expect,
        "index entries: each (record, key) exactly once"
    );
}
