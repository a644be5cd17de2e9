//! Stored-message records for the unit tests, built with the message crate's encoder.

use std::net::SocketAddr;

use message::record::{self, RecordFields};

/// A record's fields: `topic`, `body`, `props`, the rest fixed (queue 2, offset 5, CommitLog
/// offset 4096, born at 10.0.0.9, stored at 127.0.0.1:10911).
pub fn fields<'a>(topic: &'a str, body: &'a [u8], props: &'a str) -> RecordFields<'a> {
    let addr = |s: &str| -> SocketAddr { s.parse().expect("a literal address") };
    RecordFields {
        body_crc: 0,
        flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        queue_id: 2,
        queue_offset: 5,
        physical_offset: 4096,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_123,
        born_host: addr("10.0.0.9:40000"),
        store_timestamp: 1_700_000_000_200,
        store_host: addr("127.0.0.1:10911"),
        body,
        topic: topic.as_bytes(),
        properties: [props.as_bytes(), &[], &[]],
    }
}

/// The encoded record of `f`.
pub fn encode(f: &RecordFields<'_>) -> Vec<u8> {
    let mut buf = vec![0u8; f.encoded_len().expect("a test record fits")];
    record::encode(&mut buf, f);
    buf
}
