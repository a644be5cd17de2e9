//! Arbitrary bytes through the frame decoder and header decoders: never a panic,
//! and every frame that decodes re-encodes to a frame that decodes to the same command.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use remoting::{FrameDecoder, RemotingCommand, SerializeType};

fuzz_target!(|data: &[u8]| {
    let decoder = FrameDecoder::new(1 << 20);
    let mut buf = BytesMut::from(data);
    while let Ok(Some(frame)) = decoder.decode(&mut buf) {
        let Ok(cmd) = RemotingCommand::from_frame(frame) else { continue };
        let mut out = BytesMut::new();
        if cmd.encode(&mut out).is_err() {
            continue;
        }
        let again = decoder.decode(&mut out).ok().flatten().expect("re-encoded frame decodes");
        let back = RemotingCommand::from_frame(again).expect("re-encoded header decodes");
        if cmd.serialize_type == SerializeType::Json {
            assert_eq!(back, cmd);
        }
    }
});
