//! Property tests of the frame codec: round trips in both header encodings, no
//! panic on arbitrary bytes, and chunking independence.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use remoting::header::Header;
use remoting::{Body, ExtFields, FrameDecoder, LanguageCode, RemotingCommand, SerializeType};

fn language() -> impl Strategy<Value = LanguageCode> {
    (0u8..14).prop_map(LanguageCode::from_code)
}

fn ext_fields() -> impl Strategy<Value = ExtFields> {
    proptest::collection::btree_map("[a-zA-Z_]{1,12}", any::<String>(), 0..12)
        .prop_map(|m| m.into_iter().collect())
}

fn command(ser: SerializeType) -> impl Strategy<Value = RemotingCommand> {
    (
        any::<i16>(),
        language(),
        any::<i16>(),
        any::<i32>(),
        0i32..4,
        proptest::option::of(".{1,40}"),
        ext_fields(),
        proptest::collection::vec(any::<u8>(), 0..2048),
    )
        .prop_map(
            move |(code, language, version, opaque, flag, remark, ext_fields, body)| {
                RemotingCommand {
                    header: Header {
                        code: i32::from(code),
                        language,
                        version: i32::from(version),
                        opaque,
                        flag,
                        remark,
                        ext_fields,
                    },
                    body: Body::from(body),
                    serialize_type: ser,
                }
            },
        )
}

fn any_command() -> impl Strategy<Value = RemotingCommand> {
    prop_oneof![
        command(SerializeType::Json),
        command(SerializeType::RocketMq)
    ]
}

fn encode(cmds: &[RemotingCommand]) -> BytesMut {
    let mut buf = BytesMut::new();
    for c in cmds {
        c.encode(&mut buf).unwrap();
    }
    buf
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn round_trip(cmd in any_command()) {
        let mut buf = encode(std::slice::from_ref(&cmd));
        let frame = FrameDecoder::default().decode(&mut buf).unwrap().unwrap();
        prop_assert!(buf.is_empty());
        prop_assert_eq!(RemotingCommand::from_frame(frame).unwrap(), cmd);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096), max in 0usize..8192) {
        let decoder = FrameDecoder::new(max);
        let mut buf = BytesMut::from(&bytes[..]);
        while let Ok(Some(frame)) = decoder.decode(&mut buf) {
            let _ = RemotingCommand::from_frame(frame);
        }
    }

    #[test]
    fn plausible_frames_with_garbage_headers_never_panic(
        ser in 0u8..2,
        header in proptest::collection::vec(any::<u8>(), 0..512),
        body in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut wire = Vec::new();
        wire.extend_from_slice(&i32::try_from(4 + header.len() + body.len()).unwrap().to_be_bytes());
        wire.extend_from_slice(&((u32::from(ser) << 24) | u32::try_from(header.len()).unwrap()).to_be_bytes());
        wire.extend_from_slice(&header);
        wire.extend_from_slice(&body);
        let mut buf = BytesMut::from(&wire[..]);
        let frame = FrameDecoder::default().decode(&mut buf).unwrap().unwrap();
        let _ = RemotingCommand::from_frame(frame);
    }

    #[test]
    fn any_chunking_yields_the_same_frames(
        cmds in proptest::collection::vec(any_command(), 1..6),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let wire: Bytes = encode(&cmds).freeze();
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(wire.len() + 1)).collect();
        points.push(0);
        points.push(wire.len());
        points.sort_unstable();
        points.dedup();
        let decoder = FrameDecoder::default();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for w in points.windows(2) {
            buf.extend_from_slice(&wire[w[0]..w[1]]);
            while let Some(frame) = decoder.decode(&mut buf).unwrap() {
                out.push(RemotingCommand::from_frame(frame).unwrap());
            }
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(out, cmds);
    }

    #[test]
    fn multi_part_bodies_encode_like_one(parts in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..5)) {
        let joined: Vec<u8> = parts.concat();
        let many = RemotingCommand::response(0, None)
            .with_body(Body::Parts(parts.into_iter().map(Bytes::from).collect()));
        let one = RemotingCommand::response(0, None).with_body(joined);
        prop_assert_eq!(encode(&[many]), encode(&[one]));
    }
}
