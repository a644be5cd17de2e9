#![allow(clippy::unwrap_used)] // test: a failed unwrap is a failed test
//! The page cache's share of pulls (`MessageStore::page_cache`): a sampled pull of messages
//! just written finds them in memory; once their pages are dropped from the page cache, a
//! sampled pull counts them read from disk.

mod common;

use std::time::{Duration, Instant};

use common::{config, msg};
use store::MatchAll;
use store::page_cache::{PageCacheReads, SAMPLE_EVERY};
use store::{FlushDiskType, MessageStore};

const MESSAGES: usize = 24;

/// Pulls the queue from its start until one pull is sampled; the counts it added.
fn one_sampled_pull(s: &MessageStore) -> PageCacheReads {
    let before = s.page_cache().reads();
    for _ in 0..SAMPLE_EVERY {
        let r = s.get_message("T", 0, 0, 32, None, &MatchAll);
        assert_eq!(r.messages.len(), MESSAGES);
        let now = s.page_cache().reads();
        if now != before {
            return PageCacheReads {
                hits: now.hits - before.hits,
                misses: now.misses - before.misses,
            };
        }
    }
    panic!("no pull in {SAMPLE_EVERY} was sampled");
}

#[test]
fn sampled_pulls_tell_page_cache_hits_from_disk_reads() {
    // Under the target directory: on disk, where the page cache can let pages go (tmpfs
    // could not).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let s = MessageStore::open(config(dir.path(), 1 << 20, FlushDiskType::ASYNC_FLUSH)).unwrap();
    for i in 0..MESSAGES {
        assert!(
            s.put_message(&msg("T", 0, vec![b'x'; 4096 + i]))
                .status
                .is_ok()
        );
    }
    assert!(s.wait_dispatched(Duration::from_secs(10)));
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.commit_log().unflushed_bytes() > 0 {
        assert!(Instant::now() < deadline, "the CommitLog was not flushed");
        std::thread::sleep(Duration::from_millis(10));
    }

    // Off until enabled: nothing counted.
    s.get_message("T", 0, 0, 32, None, &MatchAll);
    assert_eq!(s.page_cache().reads(), PageCacheReads::default());
    s.page_cache().enable();

    let hot = one_sampled_pull(&s);
    assert_eq!(
        hot,
        PageCacheReads {
            hits: MESSAGES as u64,
            misses: 0
        }
    );

    for f in s.commit_log().files() {
        assert!(f.drop_cached_pages());
    }
    let first = s.commit_log().min_offset();
    assert_eq!(
        s.commit_log().is_resident(first, 4096),
        Some(false),
        "the first message's pages are still cached"
    );
    let cold = one_sampled_pull(&s);
    assert_eq!(cold.hits + cold.misses, MESSAGES as u64, "{cold:?}");
    assert!(cold.misses >= 1, "{cold:?}");
}
