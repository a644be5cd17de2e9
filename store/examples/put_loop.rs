//! Tight put loop for profiling: `cargo run --release -p store --example put_loop -- 1024 2000000`.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use bytes::Bytes;
use store::{FlushDiskType, MessageInner, MessageStore, StoreConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size: usize = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(1024);
    let n: u64 = args
        .get(2)
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let mut c = StoreConfig::with_root(dir.path());
    c.flush_disk_type = FlushDiskType::ASYNC_FLUSH;
    c.warm_maped_file_enable = std::env::var("WARM").is_ok();
    c.transient_store_pool_enable = std::env::var("POOL").is_ok();
    c.transient_store_pool_size = 3;
    let store = MessageStore::open(c).unwrap();
    let host = "10.0.0.1:10911".parse().unwrap();
    let m = MessageInner {
        topic: "BenchTopic".into(),
        queue_id: 0,
        flag: 0,
        body: Bytes::from(vec![b'x'; size]),
        properties: "TAGS\u{1}t".into(),
        sys_flag: 0,
        born_timestamp: 1,
        born_host: host,
        store_host: host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    };
    let log = store.commit_log();
    // The first put waits for the first file (created and pre-faulted in the background).
    let t0 = Instant::now();
    log.put(&m);
    println!("first put (file 0 ready) after {:?}", t0.elapsed());
    let start = Instant::now();
    for _ in 1..n {
        log.put(&m);
    }
    let put_el = start.elapsed();
    let end = log.max_offset();
    let _ = end;
    store.shutdown().unwrap();
    let el = start.elapsed();
    println!("put loop {put_el:?}, incl. final commit+flush {el:?}");
    println!(
        "{n} puts of {size} B in {el:?}: {:.0} puts/s, {:.0} MiB/s",
        n as f64 / el.as_secs_f64(),
        (log.max_offset().0 as f64) / el.as_secs_f64() / (1 << 20) as f64
    );
}
