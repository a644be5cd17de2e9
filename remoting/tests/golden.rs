//! Golden frames captured from real clients (ali-ons, the C++ client through its
//! Python wrapper, rocketmq-client-rust): the codec must decode every one of them
//! exactly as the capture's own summary line describes it, and re-encoding must
//! round-trip.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::path::{Path, PathBuf};

use bytes::BytesMut;
use remoting::{FrameDecoder, LanguageCode, RemotingCommand, SerializeType};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/frames")
}

/// One captured connection: raw bytes and the capture tool's description of each frame.
struct Capture {
    bytes: Vec<u8>,
    headers: Vec<Value>,
}

/// Parses a hexdump capture: `=== connection` starts a stream, `00000000: 00 01 ..`
/// lines carry bytes, `FRAME ... header={json} body=..` lines describe frames.
fn parse_hexdump(text: &str) -> Vec<Capture> {
    let mut out: Vec<Capture> = Vec::new();
    for line in text.lines() {
        if line.starts_with("=== connection") {
            out.push(Capture {
                bytes: Vec::new(),
                headers: Vec::new(),
            });
        } else if let Some(rest) = line.strip_prefix("FRAME ") {
            let start = rest.find("header=").expect("header=") + "header=".len();
            let end = rest.rfind(" body=").expect(" body=");
            let header: Value =
                serde_json::from_str(&rest[start..end]).expect("summary header is JSON");
            out.last_mut()
                .expect("frame after connection")
                .headers
                .push(header);
        } else if line.len() > 10
            && line.as_bytes()[8] == b':'
            && line[..8].bytes().all(|b| b.is_ascii_hexdigit())
        {
            let hex = &line[10..line.len().min(10 + 16 * 3)];
            for byte in hex.split_whitespace() {
                out.last_mut()
                    .expect("bytes after connection")
                    .bytes
                    .push(u8::from_str_radix(byte, 16).expect("hex byte"));
            }
        }
    }
    out
}

fn assert_matches_summary(cmd: &RemotingCommand, summary: &Value) {
    assert_eq!(i64::from(cmd.code()), summary["code"].as_i64().unwrap());
    assert_eq!(i64::from(cmd.opaque()), summary["opaque"].as_i64().unwrap());
    assert_eq!(
        i64::from(cmd.header.version),
        summary["version"].as_i64().unwrap()
    );
    assert_eq!(
        i64::from(cmd.header.flag),
        summary["flag"].as_i64().unwrap()
    );
    assert_eq!(
        cmd.header.language,
        LanguageCode::from_name(summary["language"].as_str().unwrap())
    );
    assert_ne!(
        cmd.header.language,
        LanguageCode::Other,
        "every captured client names a known language"
    );
    let ext = summary["extFields"].as_object().unwrap();
    assert_eq!(cmd.ext_fields().len(), ext.len());
    for (k, v) in ext {
        let expected = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        assert_eq!(cmd.ext(k), Some(expected.as_str()), "extField {k}");
    }
}

fn round_trip(cmd: &RemotingCommand) {
    for ser in [SerializeType::Json, SerializeType::RocketMq] {
        let mut c = cmd.clone();
        c.serialize_type = ser;
        if ser == SerializeType::RocketMq && c.header.remark.as_deref() == Some("") {
            // The binary form cannot tell an empty remark from none.
            c.header.remark = None;
        }
        let mut buf = BytesMut::new();
        c.encode(&mut buf).unwrap();
        let frame = FrameDecoder::default().decode(&mut buf).unwrap().unwrap();
        assert_eq!(RemotingCommand::from_frame(frame).unwrap(), c);
    }
}

#[test]
fn hexdump_captures_decode_exactly() {
    let mut frames = 0;
    for name in [
        "js-ali-ons-producer.txt",
        "js-ali-ons-consumer.txt",
        "py-rocketmq-producer.txt",
        "py-rocketmq-consumer.txt",
        "rust-remoting-producer.txt",
    ] {
        let text = std::fs::read_to_string(fixtures().join(name)).unwrap();
        let captures = parse_hexdump(&text);
        assert!(!captures.is_empty(), "{name}");
        for capture in captures {
            let mut buf = BytesMut::from(&capture.bytes[..]);
            let mut decoded = Vec::new();
            while let Some(frame) = FrameDecoder::default().decode(&mut buf).unwrap() {
                decoded.push(RemotingCommand::from_frame(frame).unwrap());
            }
            assert!(buf.is_empty(), "{name}: trailing bytes");
            assert_eq!(decoded.len(), capture.headers.len(), "{name}");
            for (cmd, summary) in decoded.iter().zip(&capture.headers) {
                assert_matches_summary(cmd, summary);
                round_trip(cmd);
                frames += 1;
            }
        }
    }
    assert!(frames >= 8, "only {frames} frames");
}

/// Decodes a Python bytes literal body `b'...'`.
fn python_bytes(lit: &str) -> Vec<u8> {
    let inner = lit
        .strip_prefix("b'")
        .and_then(|s| s.strip_suffix('\''))
        .or_else(|| lit.strip_prefix("b\"").and_then(|s| s.strip_suffix('"')))
        .expect("bytes literal");
    let mut out = Vec::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut tmp = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
            continue;
        }
        match chars.next().expect("escape") {
            'n' => out.push(b'\n'),
            'r' => out.push(b'\r'),
            't' => out.push(b'\t'),
            'x' => {
                let hex: String = chars.by_ref().take(2).collect();
                out.push(u8::from_str_radix(&hex, 16).unwrap());
            }
            other => out.push(u8::try_from(other).unwrap()),
        }
    }
    out
}

#[test]
fn recorded_sessions_decode_as_json_frames() {
    let mut seen_codes = std::collections::BTreeSet::new();
    for name in [
        "stub-js-ali-ons-producer.txt",
        "stub-js-ali-ons-consumer.txt",
        "stub-py-rocketmq-producer.txt",
        "stub-py-rocketmq-consumer.txt",
        "stub-rust-remoting-producer.txt",
        "stub-rust-remoting-consumer.txt",
    ] {
        let text = std::fs::read_to_string(fixtures().join(name)).unwrap();
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            let Some(pos) = line.find("header=") else {
                continue;
            };
            if !line.starts_with("port=") {
                continue;
            }
            let header_text = &line[pos + "header=".len()..];
            let body_line = lines.next().expect("body line");
            let body_lit = &body_line[body_line.find('=').unwrap() + 1..];
            let body = python_bytes(body_lit);
            // Rebuild the frame the client sent: JSON header (as recorded) + body.
            let mut wire = Vec::new();
            let total = 4 + header_text.len() + body.len();
            wire.extend_from_slice(&i32::try_from(total).unwrap().to_be_bytes());
            wire.extend_from_slice(&u32::try_from(header_text.len()).unwrap().to_be_bytes());
            wire.extend_from_slice(header_text.as_bytes());
            wire.extend_from_slice(&body);
            let mut buf = BytesMut::from(&wire[..]);
            let frame = FrameDecoder::default().decode(&mut buf).unwrap().unwrap();
            let cmd = RemotingCommand::from_frame(frame).unwrap();
            let summary: Value = serde_json::from_str(header_text).unwrap();
            assert_matches_summary(&cmd, &summary);
            assert_eq!(cmd.body.to_bytes().as_ref(), &body[..], "{name}");
            seen_codes.insert(cmd.code());
            round_trip(&cmd);
        }
    }
    // Route lookups, both send codes, heartbeat, consumer list, unregister.
    for code in [105, 10, 310, 34, 38, 35] {
        assert!(
            seen_codes.contains(&code),
            "no frame with code {code} in the sessions: {seen_codes:?}"
        );
    }
}
