#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test
//! Helpers shared by the store's integration tests.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;

use bytes::Bytes;
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

pub fn batch(topic: &str, queue_id: i32, bodies: &[&[u8]]) -> MessageBatch {
    let body = store::message::encode_batch_body(bodies.iter().map(|b| (0, *b, "UNIQ_KEY\u{1}u")));
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
