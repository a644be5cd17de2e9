//! Decode + encode of a SEND_MESSAGE_V2 request with a 1 KiB body, in both header
//! encodings: the per-request cost of the codec on the send path.

#![allow(
    clippy::unwrap_used,
    reason = "benchmark setup: a failure should abort loudly"
)]

use bytes::{Bytes, BytesMut};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use remoting::protocol::broker::SendMessageRequestHeaderV2;
use remoting::{CommandHeader, FrameDecoder, RemotingCommand, RequestCode, SerializeType};
use std::hint::black_box;

fn send_v2(ser: SerializeType) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::SendMessageV2)
        .with_body(Bytes::from(vec![b'x'; 1024]));
    cmd.serialize_type = ser;
    cmd.header.opaque = 123_456;
    let ext = &mut cmd.header.ext_fields;
    for (k, v) in [
        ("a", "please_rename_unique_group_name"),
        ("b", "BenchmarkTopic"),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", "3"),
        ("f", "0"),
        ("g", "1795955659538"),
        ("h", "0"),
        (
            "i",
            "KEYS\u{1}key-000123\u{2}TAGS\u{1}TagA\u{2}UNIQ_KEY\u{1}7F0000011B5C18B4AAC2000000000001\u{2}WAIT\u{1}true",
        ),
        ("j", "0"),
        ("k", "false"),
        ("m", "false"),
        ("n", "broker-a"),
    ] {
        ext.insert(k, v);
    }
    cmd
}

fn codec(c: &mut Criterion) {
    let mut group = c.benchmark_group("send_v2_1KiB");
    group.throughput(Throughput::Elements(1));
    for (name, ser) in [
        ("json", SerializeType::Json),
        ("rocketmq", SerializeType::RocketMq),
    ] {
        let cmd = send_v2(ser);
        let mut wire = BytesMut::new();
        cmd.encode(&mut wire).unwrap();
        let wire = wire.freeze();
        let decoder = FrameDecoder::default();
        group.bench_function(format!("decode/{name}"), |b| {
            b.iter(|| {
                let mut buf = BytesMut::from(&wire[..]);
                let frame = decoder.decode(&mut buf).unwrap().unwrap();
                black_box(RemotingCommand::from_frame(frame).unwrap())
            });
        });
        // What the broker does with every send: the frame, then the typed header.
        group.bench_function(format!("decode+typed_header/{name}"), |b| {
            b.iter(|| {
                let mut buf = BytesMut::from(&wire[..]);
                let frame = decoder.decode(&mut buf).unwrap().unwrap();
                let cmd = RemotingCommand::from_frame(frame).unwrap();
                black_box(SendMessageRequestHeaderV2::read_from(&cmd.header.ext_fields).unwrap())
            });
        });
        let mut out = BytesMut::with_capacity(4096);
        group.bench_function(format!("encode/{name}"), |b| {
            b.iter(|| {
                out.clear();
                black_box(&cmd).encode(&mut out).unwrap();
                black_box(out.len())
            });
        });
        group.bench_function(format!("decode+encode/{name}"), |b| {
            b.iter(|| {
                let mut buf = BytesMut::from(&wire[..]);
                let frame = decoder.decode(&mut buf).unwrap().unwrap();
                let cmd = RemotingCommand::from_frame(frame).unwrap();
                out.clear();
                cmd.encode(&mut out).unwrap();
                black_box(out.len())
            });
        });
    }
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
