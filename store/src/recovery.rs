//! Crash recovery: a pure scan over a file's bytes ("where does the valid log end, and
//! what does each record say?") plus a thin shell that picks the files, runs the scan,
//! truncates, and reports.
//!
//! * Normal recovery (no `abort` file): scan the last 3 files, verifying CRCs if
//!   `checkCRCOnRecover`.
//! * Abnormal recovery (`abort` present): start from the newest file whose first
//!   record was stored at or before the checkpoint's `min(physic, logics) - 3 s` and
//!   verify every record including its CRC.
//!
//! Either way the log ends at the first byte that is not a valid record (torn write,
//! garbage, CRC mismatch, a record claiming another offset); everything after it is
//! zero-filled (in its file) or deleted (later files) and synced, so it can never be
//! served or come back after the next crash.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use message::record::{
    self, END_FILE_MIN_BLANK_LENGTH, Record, RecordError, StoredMessage, sys_flag,
};
use tracing::{info, warn};

use crate::checkpoint::Checkpoint;
use crate::error::Result;
use crate::mapped_file::{FileWriter, MappedFile};
use crate::mapped_file_queue::MappedFileQueue;

/// Why a file scan stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A BLANK end-of-file marker (or the exact end of the file): the log continues in
    /// the next file.
    EndOfFile,
    /// Zeroes where the next record would start: the clean end of the log.
    EndOfData,
    /// A record whose declared size runs past the end of the file.
    Torn {
        /// Its TOTALSIZE.
        declared: u32,
    },
    /// Bytes that are not a valid record.
    Invalid(RecordError),
}

/// Outcome of [`scan`] over one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileScan {
    /// Relative end of the valid records (where the next record goes).
    pub valid_end: usize,
    /// Valid message records seen.
    pub records: u64,
    /// Why the scan stopped.
    pub stop: StopReason,
    /// Store timestamp of the last valid record (0 if none).
    pub last_store_timestamp: i64,
}

/// Scans the records of one CommitLog file of `file_size` bytes starting at offset
/// `file_from`; `bytes` is the file or a prefix of it (e.g. its readable part). Calls
/// `visit(offset, record)` for each valid message. Pure: no I/O, no clock, no panics
/// on any input.
pub fn scan(
    bytes: &[u8],
    file_from: u64,
    file_size: usize,
    check_crc: bool,
    mut visit: impl FnMut(u64, &StoredMessage<'_>),
) -> FileScan {
    let mut pos = 0usize;
    let mut records = 0u64;
    let mut last_store_timestamp = 0i64;
    let bytes = &bytes[..bytes.len().min(file_size)];
    let stop = loop {
        let rest = &bytes[pos..];
        let room = file_size - pos;
        if rest.is_empty() {
            break if room == 0 {
                StopReason::EndOfFile
            } else {
                StopReason::EndOfData
            };
        }
        if rest.len() >= 8 && rest[..8] == [0u8; 8] {
            break StopReason::EndOfData;
        }
        match record::decode(rest) {
            Ok(None) => {
                let declared = rest
                    .get(..4)
                    .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                break StopReason::Torn { declared };
            }
            Err(e) => break StopReason::Invalid(e),
            Ok(Some(Record::Blank { size })) => {
                if size as usize != room {
                    break StopReason::Invalid(RecordError::BadBlank {
                        size,
                        remaining: room,
                    });
                }
                break StopReason::EndOfFile;
            }
            Ok(Some(Record::Message(m))) => {
                let at = file_from + pos as u64;
                if m.physical_offset != at {
                    break StopReason::Invalid(RecordError::Misplaced {
                        at,
                        claimed: m.physical_offset,
                    });
                }
                if check_crc {
                    if let Err(e) = m.verify_crc() {
                        break StopReason::Invalid(e);
                    }
                }
                // The writer always leaves room for a BLANK marker behind a record.
                if (m.total_size as usize) + END_FILE_MIN_BLANK_LENGTH > room {
                    break StopReason::Torn {
                        declared: m.total_size,
                    };
                }
                visit(at, &m);
                records += 1;
                last_store_timestamp = m.store_timestamp;
                pos += m.total_size as usize;
            }
        }
    };
    FileScan {
        valid_end: pos,
        records,
        stop,
        last_store_timestamp,
    }
}

/// Whether a message takes a consume-queue offset (prepared and rollback records do not).
#[must_use]
pub fn takes_queue_offset(sys: i32) -> bool {
    matches!(
        sys_flag::transaction_type(sys),
        sys_flag::TRANSACTION_NOT_TYPE | sys_flag::TRANSACTION_COMMIT_TYPE
    )
}

/// Next queue offset per (topic, queue id), rebuilt from records.
pub type QueueOffsetTable = HashMap<String, HashMap<i32, u64>>;

/// Records `m` in a queue offset table.
pub fn note_queue_offset(table: &mut QueueOffsetTable, m: &StoredMessage<'_>) {
    if !takes_queue_offset(m.sys_flag) {
        return;
    }
    let next = m.queue_offset + 1;
    if !table.contains_key(m.topic) {
        table.insert(m.topic.to_owned(), HashMap::new());
    }
    let slot = table
        .get_mut(m.topic)
        .expect("topic inserted above")
        .entry(m.queue_id)
        .or_insert(0);
    *slot = (*slot).max(next);
}

/// Which recovery ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryMode {
    /// Clean shutdown before: the last 3 files.
    Normal,
    /// Crash before: from the checkpoint's file, CRCs always checked.
    Abnormal,
}

/// What recovery found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Mode.
    pub mode: RecoveryMode,
    /// First offset validated.
    pub scanned_from: u64,
    /// End of the recovered log.
    pub end_offset: u64,
    /// Valid records validated.
    pub records: u64,
    /// Why the scan stopped (`None` if there are no files).
    pub stop: Option<StopReason>,
    /// Non-zero bytes discarded after the end in its file (a torn or garbage tail).
    pub truncated_bytes: u64,
    /// Whole files deleted after the end.
    pub removed_files: usize,
    /// Of those, files that held non-zero bytes.
    pub removed_nonempty_files: usize,
    /// Time taken.
    pub elapsed: Duration,
}

/// The state recovery hands to the CommitLog. Queue offsets are not rebuilt here: the
/// store takes them from the consume queues once those are recovered.
#[derive(Debug)]
pub(crate) struct Recovered {
    pub report: RecoveryReport,
    /// Writer of the file holding the end, unless that file is full.
    pub writer: Option<FileWriter>,
}

fn first_record_time(file: &MappedFile) -> Option<i64> {
    file.with_raw(|b| match record::decode(b) {
        Ok(Some(Record::Message(m)))
            if m.physical_offset == file.from() && m.verify_crc().is_ok() =>
        {
            Some(m.store_timestamp)
        }
        _ => None,
    })
}

fn last_nonzero(bytes: &[u8]) -> Option<usize> {
    // Word-wise from the end: a mostly-zero 1 GiB tail is scanned at memory speed.
    let mut end = bytes.len();
    while end >= 8 {
        let w = u64::from_ne_bytes(bytes[end - 8..end].try_into().unwrap_or([0; 8]));
        if w != 0 {
            break;
        }
        end -= 8;
    }
    bytes[..end].iter().rposition(|&b| b != 0)
}

/// The last nonzero byte of `file` at or after `from`, reading only its data extents.
fn last_nonzero_from(file: &MappedFile, from: usize) -> Option<usize> {
    let extents = file.data_extents(from);
    file.with_raw(|b| {
        extents
            .iter()
            .rev()
            .find_map(|r| last_nonzero(&b[r.clone()]).map(|p| r.start + p))
    })
}

/// Recovers the files of `queue`: scans and truncates.
pub(crate) fn recover(
    queue: &MappedFileQueue,
    checkpoint: &Checkpoint,
    abnormal: bool,
    check_crc_on_recover: bool,
    index_safe: bool,
) -> Result<Recovered> {
    let started = Instant::now();
    let mode = if abnormal {
        RecoveryMode::Abnormal
    } else {
        RecoveryMode::Normal
    };
    let files = queue.files();
    if files.is_empty() {
        queue.set_where(0);
        let report = RecoveryReport {
            mode,
            scanned_from: 0,
            end_offset: 0,
            records: 0,
            stop: None,
            truncated_bytes: 0,
            removed_files: 0,
            removed_nonempty_files: 0,
            elapsed: started.elapsed(),
        };
        info!(?mode, "commit log is empty");
        return Ok(Recovered {
            report,
            writer: None,
        });
    }
    let start = if abnormal {
        let min_ts = if index_safe {
            checkpoint.min_timestamp_index()
        } else {
            checkpoint.min_timestamp()
        };
        files
            .iter()
            .rposition(|f| first_record_time(f).is_some_and(|t| t != 0 && t <= min_ts))
            .unwrap_or(0)
    } else {
        files.len().saturating_sub(3)
    };
    let check_crc = abnormal || check_crc_on_recover;

    let mut records = 0u64;
    let mut end_idx = files.len() - 1;
    let mut end_rel = 0usize;
    let mut stop = StopReason::EndOfData;
    for (i, f) in files.iter().enumerate().skip(start) {
        let s = f.with_raw(|b| scan(b, f.from(), f.size(), check_crc, |_, _| {}));
        records += s.records;
        stop = s.stop;
        end_idx = i;
        end_rel = s.valid_end;
        if s.stop == StopReason::EndOfFile {
            end_rel = f.size();
            continue;
        }
        break;
    }

    let end_file = &files[end_idx];
    let end_offset = end_file.from() + end_rel as u64;
    // Garbage after the end in its own file.
    let garbage_end = last_nonzero_from(end_file, end_rel).map(|p| p + 1);
    let truncated_bytes = garbage_end.map_or(0, |g| (g - end_rel) as u64);
    for f in &files[..end_idx] {
        f.set_positions(f.size());
    }
    end_file.set_positions(end_rel);
    let writer = if end_rel < end_file.size() {
        let mut w = end_file.writer().ok_or(crate::error::StoreError::Corrupt {
            file: end_file.path().to_owned(),
            offset: end_offset,
            reason: "file already has a writer during recovery",
        })?;
        if let Some(g) = garbage_end {
            w.truncate_to(end_rel, g, Duration::ZERO)?;
        }
        Some(w)
    } else {
        None
    };
    let after: Vec<MappedFile> = files[end_idx + 1..].to_vec();
    let removed_nonempty_files = after
        .iter()
        .filter(|f| last_nonzero_from(f, 0).is_some())
        .count();
    let removed = queue.remove_from(end_file.from() + end_file.size() as u64)?;
    drop(after);
    queue.set_where(end_offset);

    let report = RecoveryReport {
        mode,
        scanned_from: files[start].from(),
        end_offset,
        records,
        stop: Some(stop),
        truncated_bytes,
        removed_files: removed.len(),
        removed_nonempty_files,
        elapsed: started.elapsed(),
    };
    if truncated_bytes > 0 || removed_nonempty_files > 0 {
        warn!(
            ?mode,
            end_offset,
            stop = ?stop,
            truncated_bytes,
            removed_files = removed.len(),
            removed_nonempty_files,
            "recovery truncated an invalid commit log tail"
        );
    }
    info!(
        ?mode,
        scanned_from = report.scanned_from,
        end_offset,
        records,
        stop = ?stop,
        truncated_bytes,
        removed_files = removed.len(),
        elapsed_ms = report.elapsed.as_millis() as u64,
        "commit log recovered"
    );
    Ok(Recovered { report, writer })
}

#[cfg(test)]
mod tests {
    use super::*;
    use message::record::{RecordFields, body_crc, encode, encode_blank};

    fn put(buf: &mut [u8], pos: usize, from: u64, body: &[u8], qoff: u64) -> usize {
        let f = RecordFields {
            body_crc: body_crc(body),
            queue_id: 1,
            flag: 0,
            queue_offset: qoff,
            physical_offset: from + pos as u64,
            sys_flag: 0,
            born_timestamp: 1,
            born_host: "1.2.3.4:5".parse().unwrap(),
            store_timestamp: 100 + qoff as i64,
            store_host: "1.2.3.4:6".parse().unwrap(),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body,
            topic: b"T",
            properties: [&[], &[], &[]],
        };
        let len = f.encoded_len().unwrap();
        encode(&mut buf[pos..pos + len], &f);
        len
    }

    #[test]
    fn scan_stops_at_zeroes_blank_garbage_and_crc() {
        let mut buf = vec![0u8; 1024];
        let a = put(&mut buf, 0, 4096, b"aaaa", 0);
        let b = put(&mut buf, a, 4096, b"bbbb", 1);
        let mut seen = vec![];
        let s = scan(&buf, 4096, 1024, true, |off, m| {
            seen.push((off, m.queue_offset))
        });
        assert_eq!(s.stop, StopReason::EndOfData);
        assert_eq!(s.valid_end, a + b);
        assert_eq!(seen, vec![(4096, 0), (4096 + a as u64, 1)]);
        assert_eq!(s.last_store_timestamp, 101);

        let mut blank = buf.clone();
        encode_blank(&mut blank[a + b..], (1024 - a - b) as u32);
        assert_eq!(
            scan(&blank, 4096, 1024, true, |_, _| {}).stop,
            StopReason::EndOfFile
        );
        encode_blank(&mut blank[a + b..], 9);
        assert!(matches!(
            scan(&blank, 4096, 1024, true, |_, _| {}).stop,
            StopReason::Invalid(RecordError::BadBlank { .. })
        ));

        let mut crc = buf.clone();
        crc[a + 90] ^= 1;
        let s = scan(&crc, 4096, 1024, true, |_, _| {});
        assert!(matches!(
            s.stop,
            StopReason::Invalid(RecordError::Crc { .. })
        ));
        assert_eq!(s.valid_end, a);
        assert_eq!(scan(&crc, 4096, 1024, false, |_, _| {}).valid_end, a + b);

        assert!(matches!(
            scan(&buf, 0, 1024, true, |_, _| {}).stop,
            StopReason::Invalid(RecordError::Misplaced { .. })
        ));

        let torn = &buf[..a + b - 1];
        assert!(matches!(
            scan(torn, 4096, 1024, true, |_, _| {}).stop,
            StopReason::Torn { .. }
        ));
        // A readable prefix: ends cleanly where the bytes end.
        let s = scan(&buf[..a + b], 4096, 1024, true, |_, _| {});
        assert_eq!((s.stop, s.records), (StopReason::EndOfData, 2));
        // The last record must leave room for a BLANK marker.
        assert!(matches!(
            scan(&buf[..a + b], 4096, a + b + 7, true, |_, _| {}).stop,
            StopReason::Torn { .. }
        ));
    }

    #[test]
    fn last_nonzero_finds_tail() {
        assert_eq!(last_nonzero(&[0; 100]), None);
        let mut v = vec![0u8; 100];
        v[3] = 1;
        assert_eq!(last_nonzero(&v), Some(3));
        v[99] = 1;
        assert_eq!(last_nonzero(&v), Some(99));
    }

    /// A CommitLog file is reserved with `posix_fallocate`: unwritten blocks read as zeroes
    /// but are not data. Recovery must not read them through the mapping (each page read
    /// is a zero-filled page cache page: a 1 GiB file and its pre-allocated successor cost
    /// seconds and GiBs of resident memory at every start).
    #[test]
    fn recovery_reads_only_written_extents() {
        const SIZE: usize = 64 << 20;
        let dir = tempfile::tempdir().unwrap();
        let first = MappedFile::create(dir.path(), 0, SIZE, None).unwrap();
        // Without fault readahead, so the page cache holds exactly the pages written (with
        // it, the zero-filled pages read ahead around a write count as data too).
        first.advise_random(true);
        let mut w = first.writer().unwrap();
        let mut buf = vec![0u8; 4096];
        let mut len = 0;
        for (i, body) in [b"aaaa", b"bbbb", b"cccc"].iter().enumerate() {
            len += put(&mut buf, len, 0, *body, i as u64);
        }
        w.append(&buf[..len], 102);
        // Garbage 40 MiB past the end: recovery must still find and zero it.
        w.reserve(w.remaining())[40 << 20] = 7;
        drop(w);
        first.flush(0).unwrap();
        // The successor the allocator created ahead: reserved, never written.
        let next = MappedFile::create(dir.path(), SIZE as u64, SIZE, None).unwrap();
        drop((first, next));

        let queue = MappedFileQueue::load(dir.path(), SIZE, None).unwrap();
        let files = queue.files();
        let cp = Checkpoint::open(&dir.path().join("checkpoint")).unwrap();
        let r = recover(&queue, &cp, false, true, false).unwrap();
        assert_eq!(r.report.end_offset, len as u64);
        assert_eq!(r.report.records, 3);
        assert_eq!(r.report.truncated_bytes, (40 << 20) + 1);
        assert_eq!(
            (r.report.removed_files, r.report.removed_nonempty_files),
            (1, 0)
        );
        assert_eq!(
            files[0].with_raw(|b| b[len + (40 << 20)]),
            0,
            "garbage zeroed"
        );
        let resident: Vec<u64> = files.iter().map(|f| f.resident_bytes().unwrap()).collect();
        assert!(
            resident.iter().all(|&b| b <= 1 << 20),
            "recovery faulted in never-written pages: {resident:?} bytes resident"
        );
    }

    #[test]
    fn queue_table_skips_prepared() {
        let mut t = QueueOffsetTable::new();
        let mut buf = vec![0u8; 512];
        put(&mut buf, 0, 0, b"x", 7);
        let Ok(Some(Record::Message(mut m))) = record::decode(&buf) else {
            panic!()
        };
        note_queue_offset(&mut t, &m);
        assert_eq!(t["T"][&1], 8);
        m.sys_flag = sys_flag::TRANSACTION_PREPARED_TYPE;
        m.queue_offset = 100;
        note_queue_offset(&mut t, &m);
        assert_eq!(t["T"][&1], 8);
    }
}
