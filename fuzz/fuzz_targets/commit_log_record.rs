//! Arbitrary bytes as a CommitLog file: the record decoder and the recovery scan never
//! panic, and every record that decodes re-encodes to one that decodes to the same
//! fields.
#![no_main]

use libfuzzer_sys::fuzz_target;
use message::record::{self, Record, StoredMessage};

/// The fields of `m`, re-encoded by our encoder and decoded again.
fn reencode(m: &StoredMessage<'_>) {
    let f = m.fields();
    let len = f
        .encoded_len()
        .expect("a decoded record has encodable fields");
    let mut buf = vec![0u8; len];
    record::encode(&mut buf, &f);
    let Ok(Some(Record::Message(again))) = record::decode(&buf) else {
        panic!("a re-encoded record does not decode");
    };
    // The magic may differ (a v2 record with a short topic re-encodes as v1), so may
    // TOTALSIZE with it; every field is the same.
    assert_eq!(
        StoredMessage {
            total_size: m.total_size,
            magic: m.magic,
            ..again
        },
        *m
    );
}

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Ok(Some(rec)) = record::decode(rest) {
        let Record::Message(m) = rec else { break };
        let _ = (m.verify_crc(), m.properties_str());
        reencode(&m);
        rest = &rest[m.total_size as usize..];
    }
    let _ = record::peek_store_timestamp(data);
    // The same bytes as a whole file, and as the readable prefix of a larger one.
    for (file_size, check_crc) in [(data.len(), true), (data.len() + 64, false)] {
        let scan = store::recovery::scan(data, 0, file_size, check_crc, |_, m| {
            let _ = m.properties_str();
        });
        assert!(scan.valid_end <= data.len());
    }
});
