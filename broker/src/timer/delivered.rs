//! `config/timerdelivered` (sluice only): the timers already delivered in the slots
//! the read time has not passed yet.
//!
//! RocketMQ's checkpoint marks whole slots (`lastReadTimeMs`); RocketMQ delivers a slot
//! at once when it is over, so a restart repeats nothing. sluice delivers each timer at
//! its own millisecond, inside its slot, so a restart in the middle of a slot would
//! deliver again what it already did. This file lists those timers — by timer log
//! position and CommitLog offset, both must match — for the read time it was written
//! with; another read time (Apache ran the store meanwhile, or the file is stale) or a
//! torn file (CRC) makes it void, and then the slot is delivered again (at least once,
//! never lost). It is written with the checkpoint and at shutdown.
//!
//! Layout, big-endian: magic `SLUICETD`, read time (i64), count (u32), count × (timer
//! log position u64, CommitLog offset i64), CRC32 of all before it.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::Path;

/// File magic.
const MAGIC: &[u8; 8] = b"SLUICETD";
/// Bytes of one entry.
const ENTRY: usize = 16;

/// A delivered timer: (timer log position, CommitLog offset).
pub type Delivered = (u64, i64);

/// The entries of the file at `path` if it was written for `read_time` and is whole.
#[must_use]
pub fn load(path: &Path, read_time: i64) -> HashSet<Delivered> {
    let Ok(bytes) = std::fs::read(path) else {
        return HashSet::new();
    };
    decode(&bytes, read_time).unwrap_or_default()
}

fn decode(bytes: &[u8], read_time: i64) -> Option<HashSet<Delivered>> {
    let body_len = bytes.len().checked_sub(4)?;
    let (body, crc) = bytes.split_at(body_len);
    if crc32fast::hash(body).to_be_bytes() != crc {
        return None;
    }
    if body.get(..8)? != MAGIC {
        return None;
    }
    let long = |at: usize| Some(i64::from_be_bytes(body.get(at..at + 8)?.try_into().ok()?));
    if long(8)? != read_time {
        return None;
    }
    let count = u32::from_be_bytes(body.get(16..20)?.try_into().ok()?) as usize;
    let entries = body.get(20..)?;
    if entries.len() != count.checked_mul(ENTRY)? {
        return None;
    }
    entries
        .chunks_exact(ENTRY)
        .map(|e| {
            Some((
                u64::from_be_bytes(e.get(..8)?.try_into().ok()?),
                i64::from_be_bytes(e.get(8..16)?.try_into().ok()?),
            ))
        })
        .collect()
}

fn encode(read_time: i64, entries: &[Delivered]) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + entries.len() * ENTRY);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&read_time.to_be_bytes());
    out.extend_from_slice(&u32::try_from(entries.len()).unwrap_or(0).to_be_bytes());
    if u32::try_from(entries.len()).is_ok() {
        for (pos, offset) in entries {
            out.extend_from_slice(&pos.to_be_bytes());
            out.extend_from_slice(&offset.to_be_bytes());
        }
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// Writes the file for `read_time` (synced when `sync`).
///
/// # Errors
/// I/O errors.
pub fn store(
    path: &Path,
    read_time: i64,
    entries: &[Delivered],
    sync: bool,
) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let bytes = encode(read_time, entries);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    file.write_all(&bytes)?;
    if sync {
        file.sync_data()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_count_only_for_their_read_time_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config").join("timerdelivered");
        assert!(load(&path, 1000).is_empty());
        store(&path, 1000, &[(52, 7), (104, 9)], true).unwrap();
        assert_eq!(load(&path, 1000), HashSet::from([(52, 7), (104, 9)]));
        assert!(load(&path, 2000).is_empty(), "another read time voids it");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[30] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(load(&path, 1000).is_empty(), "a torn file voids it");
        store(&path, 1000, &[], false).unwrap();
        assert!(load(&path, 1000).is_empty());
    }

    proptest::proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = decode(&bytes, 0);
        }
    }
}
