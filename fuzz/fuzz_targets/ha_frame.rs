//! Arbitrary bytes through the HA decoders of both directions: master -> slave transfer
//! frames (buffered and borrowed) and slave -> master reports (buffered and streamed).
//! Never a panic; both transfer decoders and both report decoders agree; every decoded
//! frame re-encodes to its own bytes.
#![no_main]

use bytes::BytesMut;
use ha::frame::{self, ReportDecoder, TRANSFER_HEADER_SIZE, TransferHeader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the body limit and the read size, the rest is the stream.
    let Some((&knob, stream)) = data.split_first() else {
        return;
    };
    let max_body = usize::from(knob) * 64;
    let chunk = usize::from(knob % 16) + 1;

    // Master -> slave.
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    'feed: for piece in stream.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            match frame::decode_transfer(&mut buf, max_body) {
                Ok(Some(f)) => frames.push(f),
                Ok(None) => break,
                Err(_) => break 'feed,
            }
        }
    }
    let mut rest = stream;
    for f in &frames {
        let (header, body) = frame::parse_transfer(rest, max_body)
            .expect("the borrowed parser accepts what the buffered one did")
            .expect("a whole frame");
        assert_eq!((header, body), (f.header, &f.body[..]));
        let mut again = BytesMut::new();
        frame::encode_transfer(header.offset(), body, &mut again).expect("encodable");
        assert_eq!(again[..], rest[..TRANSFER_HEADER_SIZE + header.size()]);
        rest = &rest[TRANSFER_HEADER_SIZE + header.size()..];
    }
    let _ = TransferHeader::decode(stream, max_body);

    // Slave -> master.
    let mut decoder = ReportDecoder::new();
    let mut buf = BytesMut::new();
    for piece in stream.chunks(chunk) {
        let streamed = decoder.feed(piece);
        buf.extend_from_slice(piece);
        let buffered = frame::decode_reports(&mut buf);
        match (streamed, buffered) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(_), Err(_)) => break,
            (a, b) => panic!("report decoders disagree: {a:?} vs {b:?}"),
        }
        assert_eq!(decoder.pending(), buf.len());
    }
});
