//! Writes the seeds of the binary fuzz targets into `corpus/<target>/`: encodings made
//! by our own encoders, plus the records and HA headers captured from Apache RocketMQ
//! in the workspace's fixtures. `config_parse` seeds are real config files, copied by
//! hand (see README.md).
//!
//! `cargo run --example seeds` (from `fuzz/`, on stable).

use std::fs;
use std::net::SocketAddr;
use std::path::Path;

use bytes::BytesMut;
use store::consume_queue::{CqUnit, encode_blank};
use message::record::{self, Record, RecordFields, sys_flag};

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    fs::create_dir_all(&dir).expect("create the corpus directory");
    fs::write(dir.join(name), bytes).expect("write a seed");
    println!("corpus/{target}/{name}: {} bytes", bytes.len());
}

/// The hex lines of a workspace fixture (`#` comments and blank lines skipped; a
/// leading word like `master-header` is a label).
fn fixture_lines(path: &str) -> Vec<(String, Vec<u8>)> {
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path))
        .expect("read a fixture");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((label, hex)) if !label.bytes().all(|b| b.is_ascii_hexdigit()) => {
                (label.to_owned(), unhex(hex.trim()))
            }
            _ => (String::new(), unhex(l)),
        })
        .collect()
}

fn unhex(hex: &str) -> Vec<u8> {
    let hex: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    hex.chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).expect("ascii"), 16).expect("hex"))
        .collect()
}

fn message(
    physical_offset: u64,
    born: SocketAddr,
    store: SocketAddr,
    body: &[u8],
    topic: &str,
    props: &str,
) -> Vec<u8> {
    let f = RecordFields {
        body_crc: record::body_crc(body),
        queue_id: 1,
        flag: 0,
        queue_offset: 7,
        physical_offset,
        sys_flag: sys_flag::with_host_bits(0, &born, &store),
        born_timestamp: 1_700_000_000_000,
        born_host: born,
        store_timestamp: 1_700_000_000_003,
        store_host: store,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body,
        topic: topic.as_bytes(),
        properties: [props.as_bytes(), &[], &[]],
    };
    let mut buf = vec![0u8; f.encoded_len().expect("fits")];
    record::encode(&mut buf, &f);
    buf
}

fn commit_log_record() {
    let v4: SocketAddr = "10.0.0.9:53211".parse().expect("addr");
    let store: SocketAddr = "127.0.0.1:10911".parse().expect("addr");
    let v6: SocketAddr = "[fe80::1]:1234".parse().expect("addr");
    let props = message::properties::build([
        ("TAGS", "TagA"),
        ("KEYS", "k1 k2"),
        ("UNIQ_KEY", "0A000009D0C518B4AAC2"),
        ("WAIT", "true"),
    ]);
    let one = message(0, v4, store, b"hello", "TopicTest", &props);
    write("commit_log_record", "sluice-v1-ipv4", &one);
    let long_topic = "T".repeat(200);
    write(
        "commit_log_record",
        "sluice-v2-ipv6",
        &message(0, v6, store, b"x", &long_topic, ""),
    );
    // A whole small file: two records and the end-of-file marker filling the rest.
    let two = message(
        one.len() as u64,
        v6,
        v6,
        b"",
        "SCHEDULE_TOPIC_XXXX",
        "DELAY\u{1}3",
    );
    let mut file = [one.clone(), two].concat();
    let mut blank = [0u8; 16];
    record::encode_blank(&mut blank, 16);
    file.extend_from_slice(&blank);
    write("commit_log_record", "sluice-file-with-blank", &file);

    // Records stored by Apache RocketMQ 5.3.3 (a pull body is CommitLog bytes).
    let body: Vec<u8> = fixture_lines("tools/tests/fixtures/apache-5.3.3-pull.hex")
        .into_iter()
        .flat_map(|(_, b)| b)
        .collect();
    write("commit_log_record", "apache-5.3.3-pull", &body);
    let mut rest = &body[..];
    let mut i = 0;
    while let Ok(Some(Record::Message(m))) = record::decode(rest) {
        let len = m.total_size as usize;
        if i < 2 {
            write(
                "commit_log_record",
                &format!("apache-5.3.3-record-{i}"),
                &rest[..len],
            );
        }
        rest = &rest[len..];
        i += 1;
    }
}

fn consume_queue_unit() {
    let units: Vec<u8> = [
        CqUnit {
            commit_log_offset: 0,
            size: 91,
            tags_code: 2_598_919,
        }
        .encode(),
        CqUnit {
            commit_log_offset: 91,
            size: 210,
            tags_code: 1_700_000_010_003,
        }
        .encode(),
        encode_blank(),
        [0u8; 20],
    ]
    .concat();
    write("consume_queue_unit", "sluice-units-blank-empty", &units);
    write(
        "consume_queue_unit",
        "sluice-unit-high",
        &CqUnit {
            commit_log_offset: i64::MAX as u64 - 300,
            size: 300,
            tags_code: -1,
        }
        .encode(),
    );
}

fn ha_frame() {
    // First byte: the fuzz target's knob (body limit = knob * 64, read size).
    let record = message(
        0,
        "10.0.0.9:1".parse().expect("addr"),
        "127.0.0.1:10911".parse().expect("addr"),
        b"replicated",
        "TopicTest",
        "",
    );
    let mut master = BytesMut::from(&[0x20u8][..]);
    ha::frame::encode_transfer(0, &record, &mut master).expect("frame");
    ha::frame::TransferHeader::heartbeat(record.len() as u64)
        .expect("header")
        .encode(&mut master);
    ha::frame::encode_transfer(record.len() as u64, &record[..40], &mut master).expect("frame");
    write("ha_frame", "sluice-transfer-heartbeat", &master);
    let mut slave = BytesMut::from(&[0x03u8][..]);
    for offset in [0u64, 4096, 4096, 1 << 40] {
        ha::frame::encode_report(offset, &mut slave).expect("report");
    }
    write("ha_frame", "sluice-reports", &slave);

    // Headers and reports Apache RocketMQ 4.9.7 sent (bodies elided in the fixture).
    let mut apache = vec![0xFFu8];
    for (label, bytes) in fixture_lines("ha/tests/fixtures/rocketmq-4.9.7-ha.hex") {
        if label == "master-header" {
            apache.extend_from_slice(&bytes);
        }
    }
    write("ha_frame", "apache-4.9.7-master-headers", &apache);
    let mut reports = vec![0x07u8];
    for (label, bytes) in fixture_lines("ha/tests/fixtures/rocketmq-4.9.7-ha.hex") {
        if label == "slave-report" {
            reports.extend_from_slice(&bytes);
        }
    }
    write("ha_frame", "apache-4.9.7-slave-reports", &reports);
}

fn main() {
    commit_log_record();
    consume_queue_unit();
    ha_frame();
}
