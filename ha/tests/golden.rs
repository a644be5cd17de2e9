//! Golden bytes captured from Apache RocketMQ 4.9.7 (`tests/fixtures/*.hex`): our
//! codecs decode them to the expected values and re-encode them byte for byte. The
//! same capture run also had a Java master feed a sluice slave and a sluice master feed
//! a Java slave, with byte-identical CommitLogs on both ends.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns

use bytes::BytesMut;
use ha::frame::{MAX_TRANSFER_BODY, ReportDecoder, TransferHeader, decode_reports, report_bytes};

fn fixture(name: &str) -> Vec<(String, Vec<u8>)> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut parts = l.split_whitespace();
            let kind = parts.next().unwrap().to_owned();
            let hex: String = parts.collect();
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            (kind, bytes)
        })
        .collect()
}

#[test]
fn rocketmq_4_9_7_ha_bytes_round_trip() {
    let items = fixture("rocketmq-4.9.7-ha.hex");
    let headers: Vec<_> = items
        .iter()
        .filter(|(k, _)| k == "master-header")
        .map(|(_, b)| b.clone())
        .collect();
    let reports: Vec<_> = items
        .iter()
        .filter(|(k, _)| k == "slave-report")
        .map(|(_, b)| b.clone())
        .collect();
    assert_eq!((headers.len(), reports.len()), (2, 2));

    let decoded: Vec<TransferHeader> = headers
        .iter()
        .map(|b| {
            TransferHeader::decode(b, MAX_TRANSFER_BODY)
                .unwrap()
                .unwrap()
        })
        .collect();
    assert_eq!(decoded[0], TransferHeader::new(0, 7440).unwrap());
    assert_eq!(decoded[1], TransferHeader::heartbeat(7440).unwrap());
    for (h, bytes) in decoded.iter().zip(&headers) {
        assert_eq!(&h.to_bytes()[..], &bytes[..]);
    }

    let wire: Vec<u8> = reports.concat();
    let mut d = ReportDecoder::new();
    assert_eq!(d.feed(&wire[..8]).unwrap(), Some(0));
    assert_eq!(d.feed(&wire[8..]).unwrap(), Some(40_000));
    let mut buf = BytesMut::from(&wire[..]);
    assert_eq!(decode_reports(&mut buf).unwrap(), Some(40_000));
    assert_eq!(&report_bytes(0).unwrap()[..], &reports[0][..]);
    assert_eq!(&report_bytes(40_000).unwrap()[..], &reports[1][..]);
}
