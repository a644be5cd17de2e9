//! SYNC_FLUSH with N writer threads: `cargo run --release -p store --example sync_loop -- 64 500`.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use store::offset_watch::block_on;
use store::{FlushDiskType, MessageInner, MessageStore, PutMessageStatus, StoreConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let writers: usize = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(64);
    let per: usize = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(500);
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let mut c = StoreConfig::with_root(dir.path());
    c.flush_disk_type = FlushDiskType::SYNC_FLUSH;
    c.mapped_file_size_commit_log =
        std::env::var("FILE_MB").map_or(256, |v| v.parse().unwrap()) << 20;
    c.prefault_mapped_file_enable = std::env::var("NOPREFAULT").is_err();
    c.transient_store_pool_enable = std::env::var("POOL").is_ok();
    c.transient_store_pool_size = 2;
    let store = Arc::new(MessageStore::open(c).unwrap());
    let host = "10.0.0.1:10911".parse().unwrap();
    let start = Instant::now();
    std::thread::scope(|s| {
        for w in 0..writers {
            let store = Arc::clone(&store);
            s.spawn(move || {
                let m = MessageInner {
                    topic: "BenchTopic".into(),
                    queue_id: w as i32,
                    flag: 0,
                    body: Bytes::from(vec![b'x'; 1024]),
                    properties: String::new(),
                    sys_flag: 0,
                    born_timestamp: 1,
                    born_host: host,
                    store_host: host,
                    reconsume_times: 0,
                    prepared_transaction_offset: 0,
                };
                let log = store.commit_log();
                for _ in 0..per {
                    let end = log.put(&m).append.unwrap().end_offset();
                    assert_eq!(block_on(log.wait_flushed(end)), PutMessageStatus::PutOk);
                }
            });
        }
    });
    let el = start.elapsed();
    let n = writers * per;
    println!(
        "{writers} writers x {per} sync puts: {el:?}, {:.0} puts/s",
        n as f64 / el.as_secs_f64()
    );
}
