//! The stored messages of pull, QUERY_MESSAGE and VIEW_MESSAGE_BY_ID bodies, as tools
//! show them.
//!
//! Records are decoded by the `message` crate's codec ([`message::record::decode`],
//! whose `RecordFields` documents the byte layout); this module adds what a client-side
//! reader needs on top: an owned [`StoredMessage`] with the body inflated (zlib when
//! sysFlag 0x1 and compression type 0 or 3; LZ4 and ZSTD are flagged, not
//! decompressed; inflating needs `flate2`, which the sans-io crate does not take), the
//! [`Properties`] map, and errors that say which record of the body failed. Decoding is
//! total: any byte string gives either messages or a [`DecodeError`], never a panic
//! (proptested).

use std::io::Read;
use std::net::SocketAddr;

use bytes::Bytes;
use message::id::OffsetMsgId;
use message::properties::Properties;
use message::record::{self, Compression, Record, RecordError, sys_flag};
use thiserror::Error;

/// A pull / query / view body that does not decode into messages. `offset` is where
/// the failing record starts in the body.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The body ends inside a record (its head, or before the TOTALSIZE it declares).
    #[error("record at byte {offset} is truncated: the body ends {have} bytes into it")]
    Truncated {
        /// Start of the record.
        offset: usize,
        /// Bytes of it the body holds.
        have: usize,
    },
    /// The bytes are not a valid stored record.
    #[error("record at byte {offset}: {source}")]
    Record {
        /// Start of the record.
        offset: usize,
        /// What the record decoder found wrong.
        source: RecordError,
    },
    /// A CommitLog end-of-file marker where a message should be.
    #[error("record at byte {offset} is a blank end-of-file marker, not a message")]
    Blank {
        /// Start of the record.
        offset: usize,
    },
    /// The properties string is not UTF-8.
    #[error("PROPERTIES is not UTF-8 (record at byte {offset})")]
    PropertiesNotUtf8 {
        /// Start of the record.
        offset: usize,
    },
}

/// One stored message, every field decoded (`MessageExt` as a client sees it). Numbers
/// keep the signed types RocketMQ's wire format and Java's `toString` use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// TOTALSIZE.
    pub store_size: i32,
    /// MAGICCODE ([`record::MESSAGE_MAGIC_CODE`] or [`record::MESSAGE_MAGIC_CODE_V2`]).
    pub magic: u32,
    /// BODYCRC as stored.
    pub body_crc: i32,
    /// Queue id.
    pub queue_id: i32,
    /// User flag.
    pub flag: i32,
    /// Consume queue offset.
    pub queue_offset: i64,
    /// CommitLog offset.
    pub commit_log_offset: i64,
    /// Message sysFlag ([`sys_flag`]).
    pub sys_flag: i32,
    /// Producer clock at send (ms).
    pub born_timestamp: i64,
    /// Producer address.
    pub born_host: SocketAddr,
    /// Broker clock at store (ms).
    pub store_timestamp: i64,
    /// Broker address (`brokerIP1:listenPort`).
    pub store_host: SocketAddr,
    /// Delivery attempts so far.
    pub reconsume_times: i32,
    /// CommitLog offset of the half message (transaction commits).
    pub prepared_transaction_offset: i64,
    /// The body: decompressed when it was zlib-compressed.
    pub body: Bytes,
    /// Set when the body was compressed with a codec this tool does not decompress
    /// (LZ4, ZSTD): `body` is still compressed.
    pub body_compressed: Option<Compression>,
    /// Topic.
    pub topic: String,
    /// Properties.
    pub properties: Properties,
}

impl StoredMessage {
    /// The owned view of a record the codec decoded at byte `at` of a body.
    ///
    /// # Errors
    /// [`DecodeError::PropertiesNotUtf8`].
    // The `as` casts reinterpret the wire's signed fields bit for bit, as RocketMQ reads
    // them (TOTALSIZE is at most i32::MAX, the store's decoder checks).
    pub fn from_record(m: &record::StoredMessage<'_>, at: usize) -> Result<Self, DecodeError> {
        let properties = std::str::from_utf8(m.properties)
            .map_err(|_| DecodeError::PropertiesNotUtf8 { offset: at })?;
        let (body, body_compressed) = inflate_body(m.sys_flag, m.body);
        Ok(StoredMessage {
            store_size: m.total_size as i32,
            magic: m.magic,
            body_crc: m.body_crc as i32,
            queue_id: m.queue_id,
            flag: m.flag,
            queue_offset: m.queue_offset as i64,
            commit_log_offset: m.physical_offset as i64,
            sys_flag: m.sys_flag,
            born_timestamp: m.born_timestamp,
            born_host: m.born_host,
            store_timestamp: m.store_timestamp,
            store_host: m.store_host,
            reconsume_times: m.reconsume_times,
            prepared_transaction_offset: m.prepared_transaction_offset,
            body,
            body_compressed,
            topic: m.topic.to_owned(),
            properties: Properties::decode(properties),
        })
    }

    /// The offset msg id (store host + CommitLog offset).
    #[must_use]
    pub fn offset_msg_id(&self) -> String {
        // The offset is an int64 on the wire: the same eight bytes either way.
        OffsetMsgId {
            addr: self.store_host,
            offset: self.commit_log_offset as u64,
        }
        .encode()
    }

    /// The id clients show: `UNIQ_KEY` if the producer set one, else the offset msg id.
    #[must_use]
    pub fn msg_id(&self) -> String {
        self.properties
            .uniq_key()
            .map_or_else(|| self.offset_msg_id(), str::to_owned)
    }

    /// `TAGS`.
    #[must_use]
    pub fn tags(&self) -> Option<&str> {
        self.properties.tags()
    }

    /// `KEYS`.
    #[must_use]
    pub fn keys(&self) -> Option<&str> {
        self.properties.keys()
    }
}

/// The record at the start of `buf` (byte `at` of the body), borrowed; a truncated
/// record or a BLANK marker is an error here, where a CommitLog reader would wait or
/// move to the next file.
fn decode_record(buf: &[u8], at: usize) -> Result<record::StoredMessage<'_>, DecodeError> {
    match record::decode(buf) {
        Ok(Some(Record::Message(m))) => Ok(m),
        Ok(Some(Record::Blank { .. })) => Err(DecodeError::Blank { offset: at }),
        Ok(None) => Err(DecodeError::Truncated {
            offset: at,
            have: buf.len(),
        }),
        Err(source) => Err(DecodeError::Record { offset: at, source }),
    }
}

/// The records of a body, back to back, each with its byte offset; stops after the
/// first error.
fn records(
    mut buf: &[u8],
) -> impl Iterator<Item = Result<(usize, record::StoredMessage<'_>), DecodeError>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if buf.is_empty() {
            return None;
        }
        match decode_record(buf, at) {
            Ok(m) => {
                let start = at;
                // decode checked that the record lies within `buf`.
                let size = m.total_size as usize;
                buf = &buf[size..];
                at += size;
                Some(Ok((start, m)))
            }
            Err(e) => {
                buf = &[];
                Some(Err(e))
            }
        }
    })
}

/// Decodes the record at the start of `buf`; returns it and its size.
/// `at` is the position of `buf` in the whole body, for error messages.
///
/// # Errors
/// See [`DecodeError`].
pub fn decode_one(buf: &[u8], at: usize) -> Result<(StoredMessage, usize), DecodeError> {
    let m = decode_record(buf, at)?;
    Ok((StoredMessage::from_record(&m, at)?, m.total_size as usize))
}

/// Decodes every record of a pull / query / view body.
///
/// # Errors
/// The first record that does not decode.
pub fn decode_all(buf: &[u8]) -> Result<Vec<StoredMessage>, DecodeError> {
    records(buf)
        .map(|r| r.and_then(|(at, m)| StoredMessage::from_record(&m, at)))
        .collect()
}

/// Born timestamp and body (as stored, borrowed from `buf`) of every record, without
/// copying bodies or parsing properties (mqbench's consumer measures end-to-end latency
/// from these).
///
/// # Errors
/// The first record that does not decode.
pub fn scan_records<'a>(buf: &'a [u8], out: &mut Vec<(i64, &'a [u8])>) -> Result<(), DecodeError> {
    for r in records(buf) {
        let (_, m) = r?;
        out.push((m.born_timestamp, m.body));
    }
    Ok(())
}

/// Store timestamp and body (borrowed) of every record: when the broker stored each
/// message, for `mqbench timer`'s broker-side lateness.
///
/// # Errors
/// The first record that does not decode.
pub fn scan_store_times<'a>(
    buf: &'a [u8],
    out: &mut Vec<(i64, &'a [u8])>,
) -> Result<(), DecodeError> {
    for r in records(buf) {
        let (_, m) = r?;
        out.push((m.store_timestamp, m.body));
    }
    Ok(())
}

/// The body a reader shows, and the codec it is still compressed with if this tool
/// could not inflate it.
fn inflate_body(sys_flag: i32, raw: &[u8]) -> (Bytes, Option<Compression>) {
    if sys_flag & sys_flag::COMPRESSED == 0 {
        return (Bytes::copy_from_slice(raw), None);
    }
    match Compression::from_sys_flag(sys_flag) {
        Compression::Zlib => match inflate(raw) {
            Some(b) => (Bytes::from(b), None),
            // Corrupt zlib: hand out what is stored rather than losing the message.
            None => (Bytes::copy_from_slice(raw), Some(Compression::Zlib)),
        },
        other => (Bytes::copy_from_slice(raw), Some(other)),
    }
}

/// Inflates a zlib stream, refusing to expand past 64 MiB (garbage must not exhaust memory).
fn inflate(raw: &[u8]) -> Option<Vec<u8>> {
    const LIMIT: u64 = 64 << 20;
    let mut out = Vec::with_capacity(raw.len() * 4);
    let mut decoder = flate2::read::ZlibDecoder::new(raw).take(LIMIT + 1);
    decoder.read_to_end(&mut out).ok()?;
    (out.len() as u64 <= LIMIT).then_some(out)
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Stored records for tests, written by the record encoder.
    use super::*;

    /// Encodes `m` as a broker would store it (body, CRC and magic as given; the magic
    /// must be the one the topic length calls for).
    pub(crate) fn encode_stored(m: &StoredMessage) -> Vec<u8> {
        let props = m.properties.encode();
        let fields = record::RecordFields {
            body_crc: m.body_crc as u32,
            queue_id: m.queue_id,
            flag: m.flag,
            queue_offset: m.queue_offset as u64,
            physical_offset: m.commit_log_offset as u64,
            sys_flag: m.sys_flag,
            born_timestamp: m.born_timestamp,
            born_host: m.born_host,
            store_timestamp: m.store_timestamp,
            store_host: m.store_host,
            reconsume_times: m.reconsume_times,
            prepared_transaction_offset: m.prepared_transaction_offset,
            body: &m.body,
            topic: m.topic.as_bytes(),
            properties: [props.as_bytes(), &[], &[]],
        };
        assert_eq!(
            fields.needs_v2(),
            m.magic == record::MESSAGE_MAGIC_CODE_V2,
            "test message magic must match its topic length"
        );
        let mut buf = vec![0u8; fields.encoded_len().expect("test record fits")];
        record::encode(&mut buf, &fields);
        buf
    }

    /// A plausible message.
    pub(crate) fn sample() -> StoredMessage {
        let body = Bytes::from_static(b"Hello RocketMQ");
        StoredMessage {
            store_size: 0,
            magic: record::MESSAGE_MAGIC_CODE,
            body_crc: i32::try_from(record::body_crc(&body)).expect("masked"),
            queue_id: 3,
            flag: 0,
            queue_offset: 42,
            commit_log_offset: 4096,
            sys_flag: 0,
            born_timestamp: 1_795_955_659_538,
            born_host: "10.0.0.9:53211".parse().expect("addr"),
            store_timestamp: 1_795_955_659_540,
            store_host: "127.0.0.1:20911".parse().expect("addr"),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body,
            body_compressed: None,
            topic: "TopicTest".into(),
            properties: [
                ("TAGS", "TagA"),
                ("KEYS", "k1 k2"),
                ("UNIQ_KEY", "0A000009D0C318B4AAC2740E4F120000"),
                ("CLUSTER", "DefaultCluster"),
            ]
            .into_iter()
            .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::{encode_stored, sample};
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    /// Fixes `store_size` the way decode reports it.
    fn sized(mut m: StoredMessage, bytes: &[u8]) -> StoredMessage {
        m.store_size = i32::try_from(bytes.len()).unwrap();
        m
    }

    #[test]
    fn golden_ipv4_record() {
        // Built field by field from the layout table, independent of encode_stored.
        let mut g: Vec<u8> = Vec::new();
        let props = "TAGS\u{1}TagA\u{2}KEYS\u{1}k1 k2\u{2}UNIQ_KEY\u{1}0A000009D0C318B4AAC2740E4F120000\u{2}CLUSTER\u{1}DefaultCluster";
        let total = 91 + 14 + 9 + props.len();
        g.extend_from_slice(&i32::try_from(total).unwrap().to_be_bytes()); // TOTALSIZE
        g.extend_from_slice(&[0xDA, 0xA3, 0x20, 0xA7]); // MAGICCODE v1
        g.extend_from_slice(&(crc32fast::hash(b"Hello RocketMQ") & 0x7FFF_FFFF).to_be_bytes());
        g.extend_from_slice(&3i32.to_be_bytes()); // QUEUEID
        g.extend_from_slice(&0i32.to_be_bytes()); // FLAG
        g.extend_from_slice(&42i64.to_be_bytes()); // QUEUEOFFSET
        g.extend_from_slice(&4096i64.to_be_bytes()); // PHYSICALOFFSET
        g.extend_from_slice(&0i32.to_be_bytes()); // SYSFLAG
        g.extend_from_slice(&1_795_955_659_538i64.to_be_bytes()); // BORNTIMESTAMP
        g.extend_from_slice(&[10, 0, 0, 9, 0, 0, 0xCF, 0xDB]); // BORNHOST 10.0.0.9:53211
        g.extend_from_slice(&1_795_955_659_540i64.to_be_bytes()); // STORETIMESTAMP
        g.extend_from_slice(&[127, 0, 0, 1, 0, 0, 0x51, 0xAF]); // STOREHOST 127.0.0.1:20911
        g.extend_from_slice(&0i32.to_be_bytes()); // RECONSUMETIMES
        g.extend_from_slice(&0i64.to_be_bytes()); // PREPARED TRANSACTION OFFSET
        g.extend_from_slice(&14i32.to_be_bytes());
        g.extend_from_slice(b"Hello RocketMQ");
        g.push(9);
        g.extend_from_slice(b"TopicTest");
        g.extend_from_slice(&u16::try_from(props.len()).unwrap().to_be_bytes());
        g.extend_from_slice(props.as_bytes());
        assert_eq!(g.len(), total);

        assert_eq!(encode_stored(&sample()), g);
        let (m, size) = decode_one(&g, 0).unwrap();
        assert_eq!(size, total);
        assert_eq!(m, sized(sample(), &g));
        assert_eq!(m.msg_id(), "0A000009D0C318B4AAC2740E4F120000");
        assert_eq!(m.offset_msg_id(), "7F000001000051AF0000000000001000");
        assert_eq!((m.tags(), m.keys()), (Some("TagA"), Some("k1 k2")));

        let mut ts = Vec::new();
        let two = [g.clone(), g].concat();
        scan_records(&two, &mut ts).unwrap();
        let ts: Vec<(i64, usize)> = ts.iter().map(|(born, body)| (*born, body.len())).collect();
        assert_eq!(ts, [(1_795_955_659_538, 14), (1_795_955_659_538, 14)]);
    }

    #[test]
    fn ipv6_hosts_v2_magic_and_no_uniq_key() {
        let mut m = sample();
        m.sys_flag = sys_flag::BORNHOST_V6 | sys_flag::STOREHOSTADDRESS_V6;
        m.born_host = "[fe80::1]:1234".parse().unwrap();
        m.store_host = "[::1]:10911".parse().unwrap();
        m.magic = record::MESSAGE_MAGIC_CODE_V2;
        m.topic = "T".repeat(200);
        m.properties.remove("UNIQ_KEY");
        let bytes = encode_stored(&m);
        let decoded = decode_all(&bytes).unwrap();
        assert_eq!(decoded, vec![sized(m.clone(), &bytes)]);
        // 56 hex chars, and the msg id falls back to it.
        assert_eq!(decoded[0].msg_id().len(), 56);
        assert_eq!(
            OffsetMsgId::decode(&decoded[0].msg_id()).unwrap().addr,
            m.store_host
        );
    }

    #[test]
    fn zlib_body_is_inflated_other_codecs_kept() {
        let plain = b"a body that compresses well well well well well".to_vec();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(5));
        z.write_all(&plain).unwrap();
        let compressed = z.finish().unwrap();
        for flag in [sys_flag::COMPRESSED, sys_flag::COMPRESSED | 0x300] {
            let mut m = sample();
            m.sys_flag = flag;
            m.body = Bytes::from(compressed.clone());
            let (d, _) = decode_one(&encode_stored(&m), 0).unwrap();
            assert_eq!(&d.body[..], &plain[..]);
            assert_eq!(d.body_compressed, None);
        }
        let mut m = sample();
        m.sys_flag = sys_flag::COMPRESSED | 0x100; // LZ4
        let (d, _) = decode_one(&encode_stored(&m), 0).unwrap();
        assert_eq!(d.body, m.body);
        assert_eq!(d.body_compressed, Some(Compression::Lz4));
        // Corrupt zlib keeps the stored bytes.
        m.sys_flag = sys_flag::COMPRESSED;
        let (d, _) = decode_one(&encode_stored(&m), 0).unwrap();
        assert_eq!(d.body_compressed, Some(Compression::Zlib));
    }

    #[test]
    fn errors_name_the_problem() {
        let good = encode_stored(&sample());
        assert_eq!(
            decode_all(&good[..10]),
            Err(DecodeError::Truncated {
                offset: 0,
                have: 10
            })
        );
        let mut bad = good.clone();
        bad[4] = 0;
        assert!(matches!(
            decode_all(&bad),
            Err(DecodeError::Record {
                offset: 0,
                source: RecordError::BadMagic(_)
            })
        ));
        // A record after a good one: offsets point at it.
        let two = [good.clone(), good[..50].to_vec()].concat();
        assert!(matches!(
            decode_all(&two),
            Err(DecodeError::Truncated { offset, have: 50 }) if offset == good.len()
        ));
        assert!(
            decode_all(&two)
                .unwrap_err()
                .to_string()
                .contains("truncated")
        );
        // Body length pointing past TOTALSIZE, or negative.
        for len in [1000i32, -1] {
            let mut bad = good.clone();
            bad[84..88].copy_from_slice(&len.to_be_bytes());
            assert_eq!(
                decode_all(&bad),
                Err(DecodeError::Record {
                    offset: 0,
                    source: RecordError::BadFieldLength
                })
            );
        }
        // A CommitLog end-of-file marker is not a message.
        let mut blank = [0u8; 8];
        record::encode_blank(&mut blank, 8);
        let two = [good.clone(), blank.to_vec()].concat();
        assert_eq!(
            decode_all(&two),
            Err(DecodeError::Blank { offset: good.len() })
        );
        // Properties that are not UTF-8 (the last byte of the record is in them).
        let mut bad = good;
        let last = bad.len() - 1;
        bad[last] = 0xFF;
        assert_eq!(
            decode_all(&bad),
            Err(DecodeError::PropertiesNotUtf8 { offset: 0 })
        );
        assert_eq!(decode_all(&[]).unwrap(), vec![]);
    }

    fn arb_message() -> impl Strategy<Value = StoredMessage> {
        (
            any::<(i32, i32, i64, i64, i64, i64, i32, i64)>(),
            any::<([u8; 4], u16, bool, [u8; 16], u16)>(),
            proptest::collection::vec(any::<u8>(), 0..256),
            "[%|a-zA-Z0-9_-]{1,127}",
            proptest::collection::vec(("[A-Z_]{1,8}", "[^\u{1}\u{2}]{1,16}"), 0..5),
        )
            .prop_map(|(n, h, body, topic, props)| {
                let (
                    queue_id,
                    flag,
                    queue_offset,
                    commit_log_offset,
                    born,
                    stored,
                    reconsume,
                    prep,
                ) = n;
                let (v4, p1, v6_store, v6, p2) = h;
                let mut sys = 0;
                let store_host = if v6_store {
                    sys |= sys_flag::STOREHOSTADDRESS_V6;
                    SocketAddr::new(IpAddr::V6(Ipv6Addr::from(v6)), p2)
                } else {
                    SocketAddr::new(IpAddr::V4(Ipv4Addr::from(v4)), p2)
                };
                StoredMessage {
                    store_size: 0,
                    magic: record::MESSAGE_MAGIC_CODE,
                    body_crc: 0,
                    queue_id,
                    flag,
                    queue_offset,
                    commit_log_offset,
                    sys_flag: sys,
                    born_timestamp: born,
                    born_host: SocketAddr::new(IpAddr::V4(Ipv4Addr::from(v4)), p1),
                    store_timestamp: stored,
                    store_host,
                    reconsume_times: reconsume,
                    prepared_transaction_offset: prep,
                    body: Bytes::from(body),
                    body_compressed: None,
                    topic,
                    properties: props.into_iter().collect(),
                }
            })
    }

    proptest! {
        #[test]
        fn round_trip(msgs in proptest::collection::vec(arb_message(), 0..4)) {
            let encoded: Vec<Vec<u8>> = msgs.iter().map(encode_stored).collect();
            let expected: Vec<StoredMessage> = msgs
                .into_iter()
                .zip(&encoded)
                .map(|(m, b)| sized(m, b))
                .collect();
            prop_assert_eq!(decode_all(&encoded.concat()).unwrap(), expected);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode_all(&bytes);
            let _ = scan_records(&bytes, &mut Vec::new());
        }

        #[test]
        fn mutated_records_never_panic(m in arb_message(), at in any::<proptest::sample::Index>(), byte in any::<u8>()) {
            let mut bytes = encode_stored(&m);
            let i = at.index(bytes.len());
            bytes[i] = byte;
            let _ = decode_all(&bytes);
        }
    }
}
