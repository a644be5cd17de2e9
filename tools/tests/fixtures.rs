//! Stored messages captured from Apache RocketMQ's broker (hex under `tests/fixtures/`),
//! decoded by `tools::stored`. This is the contract that our decoder reads what the
//! reference broker writes; the sluice broker will be checked against the same bytes.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::net::SocketAddr;

use message::id::{self, OffsetMsgId};
use message::record::{self, sys_flag};
use tools::stored;

/// Hex lines of a fixture, comments (`#`) and blank lines skipped.
fn load(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let hex: String = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    id::parse_hex(&hex).unwrap()
}

#[test]
fn apache_533_pull_body() {
    let body = load("apache-5.3.3-pull.hex");
    let msgs = stored::decode_all(&body).unwrap();
    assert_eq!(msgs.len(), 4);
    let store: SocketAddr = "127.0.0.1:20911".parse().unwrap();
    for (i, m) in msgs.iter().enumerate() {
        assert_eq!(m.topic, "FixtureTopic");
        assert_eq!(m.queue_id, 0);
        assert_eq!(m.queue_offset, i64::try_from(i).unwrap());
        assert_eq!(m.store_host, store);
        assert_eq!(m.magic, record::MESSAGE_MAGIC_CODE);
        assert_eq!(m.properties.get("CLUSTER"), Some("BenchCluster"));
        // The broker adds these to every message it stores (5.3.3).
        assert_eq!(m.properties.get("MSG_REGION"), Some("DefaultRegion"));
        assert_eq!(m.properties.get("TRACE_ON"), Some("true"));
        // The offset id is the store host and the CommitLog offset.
        let id = OffsetMsgId::decode(&m.offset_msg_id()).unwrap();
        assert_eq!((id.addr, id.offset as i64), (store, m.commit_log_offset));
        // Body CRC as stored: CRC32 of the stored (compressed) bytes, 31 bits.
        assert!(m.body_crc >= 0);
        assert!(m.born_timestamp <= m.store_timestamp);
    }
    // Records are back to back in the CommitLog.
    for w in msgs.windows(2) {
        assert_eq!(
            w[0].commit_log_offset + i64::from(w[0].store_size),
            w[1].commit_log_offset
        );
    }

    let plain = &msgs[0];
    assert_eq!(&plain.body[..], b"fixture-1");
    assert_eq!(
        (plain.tags(), plain.keys()),
        (Some("TagA"), Some("fk1 fk2"))
    );
    assert_eq!(plain.msg_id(), "C0A807091092123456789354DC830000");
    assert_eq!(plain.body_crc, i32::try_from(crc32(b"fixture-1")).unwrap());

    let zipped = &msgs[1];
    assert_eq!(zipped.sys_flag, sys_flag::COMPRESSED | 0x300);
    assert_eq!(zipped.body_compressed, None);
    assert_eq!(zipped.body.len(), 5000);
    assert!(zipped.body.iter().all(|b| *b == b'a'));

    // SEND_BATCH_MESSAGE: the broker appends the batch header's properties (MSG_REGION,
    // the batch's own UNIQ_KEY, CLUSTER, WAIT, TRACE_ON) after each entry's, so a repeated
    // UNIQ_KEY decodes to the batch's, as Java's HashMap-based decoder does too.
    for (i, m) in msgs[2..].iter().enumerate() {
        assert_eq!(m.flag, 7);
        assert_eq!(&m.body[..], format!("batch-{i}").as_bytes());
        assert_eq!(m.keys(), Some(format!("bk{i}").as_str()));
        assert_eq!(m.msg_id(), "C0A807091092123456789354DC890004");
    }

    // The lightweight scan agrees with the full decode.
    let mut records = Vec::new();
    stored::scan_records(&body, &mut records).unwrap();
    let scanned: Vec<(i64, usize)> = records
        .iter()
        .map(|(born, body)| (*born, body.len()))
        .collect();
    let expected: Vec<(i64, usize)> = msgs
        .iter()
        .map(|m| {
            (
                m.born_timestamp,
                if m.sys_flag & sys_flag::COMPRESSED != 0 {
                    scanned[1].1
                } else {
                    m.body.len()
                },
            )
        })
        .collect();
    assert_eq!(scanned, expected);
}

fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes) & 0x7FFF_FFFF
}

#[test]
fn truncated_fixture_is_an_error_not_a_panic() {
    let body = load("apache-5.3.3-pull.hex");
    for cut in [1, 50, 246, 248, body.len() - 1] {
        assert!(stored::decode_all(&body[..cut]).is_err(), "cut at {cut}");
    }
}
