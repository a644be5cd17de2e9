//! Messages as tools see them: the stored-message decoder for pull, QUERY_MESSAGE and
//! VIEW_MESSAGE_BY_ID bodies, properties, message ids and the client batch body.
//!
//! The decoder is sans-io and total: any byte string gives either messages or a
//! [`DecodeError`] naming the field and offset, never a panic (proptested). The store
//! crate owns the writer side; this is the reader a client needs.
//!
//! Stored record (big-endian; offsets for IPv4 born and store hosts):
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 4 | TOTALSIZE (whole record) |
//! | 4 | 4 | MAGICCODE: `0xDAA320A7` v1, `0xDAA320AB` v2 (2-byte topic length) |
//! | 8 | 4 | BODYCRC (CRC32 of the stored body, masked to 31 bits) |
//! | 12 | 4 | QUEUEID |
//! | 16 | 4 | FLAG |
//! | 20 | 8 | QUEUEOFFSET |
//! | 28 | 8 | PHYSICALOFFSET (CommitLog offset) |
//! | 36 | 4 | SYSFLAG ([`sys_flag`]) |
//! | 40 | 8 | BORNTIMESTAMP |
//! | 48 | 8 / 20 | BORNHOST: IPv4 + int32 port, or IPv6 (sysFlag 0x10) + port |
//! | 56 | 8 | STORETIMESTAMP |
//! | 64 | 8 / 20 | STOREHOST: IPv4 or IPv6 (sysFlag 0x20) + port |
//! | 72 | 4 | RECONSUMETIMES |
//! | 76 | 8 | PREPARED TRANSACTION OFFSET |
//! | 84 | 4 + n | BODY length + bytes (zlib when sysFlag 0x1 and compression type 0 or 3) |
//! | | 1 + n / 2 + n | TOPIC length (v1 1 byte, v2 2 bytes) + UTF-8 |
//! | | 2 + n | PROPERTIES length + UTF-8 ([`properties`]) |

pub mod batch;
pub mod id;
pub mod properties;

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::Bytes;
use thiserror::Error;

pub use id::{OffsetMsgId, UniqIdGenerator};
pub use properties::Properties;

/// Magic of a v1 record (1-byte topic length).
pub const MAGIC_V1: i32 = 0xDAA3_20A7_u32 as i32;
/// Magic of a v2 record (2-byte topic length; 5.x, topics over 127 bytes).
pub const MAGIC_V2: i32 = 0xDAA3_20AB_u32 as i32;
/// Magic of the blank record that ends a CommitLog file.
pub const BLANK_MAGIC: i32 = 0xCBD4_3194_u32 as i32;
/// The smallest possible record: IPv4 hosts, empty body, 1-char topic, no properties.
pub const MIN_RECORD_SIZE: usize = 92;

/// Bits of the message sysFlag (`MessageSysFlag`). Not the pull sysFlag.
pub mod sys_flag {
    /// Body compressed.
    pub const COMPRESSED: i32 = 0x1;
    /// Set by the broker for MULTI_TAG topics.
    pub const MULTI_TAGS: i32 = 0x2;
    /// Transaction type mask.
    pub const TRANSACTION_MASK: i32 = 0xC;
    /// Half message.
    pub const TRANSACTION_PREPARED: i32 = 0x4;
    /// Committed.
    pub const TRANSACTION_COMMIT: i32 = 0x8;
    /// Rolled back.
    pub const TRANSACTION_ROLLBACK: i32 = 0xC;
    /// Born host is IPv6.
    pub const BORNHOST_V6: i32 = 0x10;
    /// Store host is IPv6.
    pub const STOREHOST_V6: i32 = 0x20;
    /// Compression type bits (8..=10).
    pub const COMPRESSION_TYPE_MASK: i32 = 0x700;
}

/// How a body is compressed (sysFlag bits 8..=10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// zlib (type 3, or 0 for old producers).
    Zlib,
    /// LZ4 (type 1): not decompressed by this tool.
    Lz4,
    /// Zstandard (type 2): not decompressed by this tool.
    Zstd,
    /// Any other value.
    Unknown(i32),
}

impl Compression {
    /// The compression a compressed message's sysFlag names.
    #[must_use]
    pub fn from_sys_flag(sys_flag: i32) -> Self {
        match (sys_flag & sys_flag::COMPRESSION_TYPE_MASK) >> 8 {
            0 | 3 => Compression::Zlib,
            1 => Compression::Lz4,
            2 => Compression::Zstd,
            other => Compression::Unknown(other),
        }
    }
}

/// Bytes that are not a valid stored message (or batch entry).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The buffer ends inside a field.
    #[error("truncated at {field} (record at byte {offset}): need {need} bytes, {have} left")]
    Truncated {
        /// Start of the record in the buffer.
        offset: usize,
        /// Field being read.
        field: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes left.
        have: usize,
    },
    /// TOTALSIZE out of range for the buffer.
    #[error("record at byte {offset} claims size {size}")]
    BadSize {
        /// Start of the record.
        offset: usize,
        /// The size it claims.
        size: i64,
    },
    /// Not a v1/v2 message magic.
    #[error("record at byte {offset} has magic {magic:#010x}, not a message")]
    BadMagic {
        /// Start of the record.
        offset: usize,
        /// The magic found.
        magic: u32,
    },
    /// A negative length.
    #[error("{field} length {len} is negative (record at byte {offset})")]
    NegativeLength {
        /// Start of the record.
        offset: usize,
        /// Field.
        field: &'static str,
        /// Length read.
        len: i32,
    },
    /// A port outside 0..=65535.
    #[error("{field} port {port} out of range (record at byte {offset})")]
    BadPort {
        /// Start of the record.
        offset: usize,
        /// Field.
        field: &'static str,
        /// Port read.
        port: i32,
    },
    /// Topic or properties not UTF-8.
    #[error("{field} is not UTF-8 (record at byte {offset})")]
    NotUtf8 {
        /// Start of the record.
        offset: usize,
        /// Field.
        field: &'static str,
    },
    /// Fields run past TOTALSIZE.
    #[error("record at byte {offset}: fields take {used} bytes, TOTALSIZE is {size}")]
    Overrun {
        /// Start of the record.
        offset: usize,
        /// Bytes the fields need.
        used: usize,
        /// TOTALSIZE.
        size: usize,
    },
}

/// A bounds-checked big-endian reader over one record; errors carry the record offset.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    record: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], record: usize) -> Self {
        Reader {
            buf,
            pos: 0,
            record,
        }
    }

    pub(crate) fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let have = self.buf.len() - self.pos;
        if n > have {
            return Err(DecodeError::Truncated {
                offset: self.record,
                field,
                need: n,
                have,
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub(crate) fn skip(&mut self, n: usize, field: &'static str) -> Result<(), DecodeError> {
        self.bytes(n, field).map(|_| ())
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N, field)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(field)?[0])
    }

    pub(crate) fn u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.array(field)?))
    }

    pub(crate) fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }

    pub(crate) fn i64(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(self.array(field)?))
    }

    /// An int32 length that must not be negative.
    pub(crate) fn len_i32(&mut self, field: &'static str) -> Result<usize, DecodeError> {
        let len = self.i32(field)?;
        usize::try_from(len).map_err(|_| DecodeError::NegativeLength {
            offset: self.record,
            field,
            len,
        })
    }

    fn host(&mut self, v6: bool, field: &'static str) -> Result<SocketAddr, DecodeError> {
        let ip = if v6 {
            IpAddr::V6(Ipv6Addr::from(self.array::<16>(field)?))
        } else {
            IpAddr::V4(Ipv4Addr::from(self.array::<4>(field)?))
        };
        let port = self.i32(field)?;
        let port = u16::try_from(port).map_err(|_| DecodeError::BadPort {
            offset: self.record,
            field,
            port,
        })?;
        Ok(SocketAddr::new(ip, port))
    }

    fn utf8(&mut self, n: usize, field: &'static str) -> Result<String, DecodeError> {
        let raw = self.bytes(n, field)?;
        std::str::from_utf8(raw)
            .map(str::to_owned)
            .map_err(|_| DecodeError::NotUtf8 {
                offset: self.record,
                field,
            })
    }
}

/// One stored message, every field decoded (`MessageExt` as a client sees it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// TOTALSIZE.
    pub store_size: i32,
    /// MAGICCODE ([`MAGIC_V1`] or [`MAGIC_V2`]).
    pub magic: i32,
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
    /// The offset msg id (store host + CommitLog offset).
    #[must_use]
    pub fn offset_msg_id(&self) -> String {
        OffsetMsgId {
            addr: self.store_host,
            offset: self.commit_log_offset,
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

/// Decodes the record at the start of `buf`; returns it and its size.
/// `at` is the position of `buf` in the whole body, for error messages.
///
/// # Errors
/// See [`DecodeError`].
pub fn decode_one(buf: &[u8], at: usize) -> Result<(StoredMessage, usize), DecodeError> {
    let mut head = Reader::new(buf, at);
    let store_size = head.i32("TOTALSIZE")?;
    let size = usize::try_from(store_size)
        .ok()
        .filter(|s| *s >= MIN_RECORD_SIZE && *s <= buf.len())
        .ok_or(DecodeError::BadSize {
            offset: at,
            size: i64::from(store_size),
        })?;
    let record = &buf[..size];
    let mut r = Reader::new(record, at);
    r.skip(4, "TOTALSIZE")?;
    let magic = r.i32("MAGICCODE")?;
    if magic != MAGIC_V1 && magic != MAGIC_V2 {
        return Err(DecodeError::BadMagic {
            offset: at,
            magic: u32::from_be_bytes(magic.to_be_bytes()),
        });
    }
    let body_crc = r.i32("BODYCRC")?;
    let queue_id = r.i32("QUEUEID")?;
    let flag = r.i32("FLAG")?;
    let queue_offset = r.i64("QUEUEOFFSET")?;
    let commit_log_offset = r.i64("PHYSICALOFFSET")?;
    let sys_flag = r.i32("SYSFLAG")?;
    let born_timestamp = r.i64("BORNTIMESTAMP")?;
    let born_host = r.host(sys_flag & sys_flag::BORNHOST_V6 != 0, "BORNHOST")?;
    let store_timestamp = r.i64("STORETIMESTAMP")?;
    let store_host = r.host(sys_flag & sys_flag::STOREHOST_V6 != 0, "STOREHOSTADDRESS")?;
    let reconsume_times = r.i32("RECONSUMETIMES")?;
    let prepared_transaction_offset = r.i64("PREPARED_TRANSACTION_OFFSET")?;
    let body_len = r.len_i32("BODY")?;
    let raw_body = r.bytes(body_len, "BODY")?;
    let topic_len = if magic == MAGIC_V2 {
        usize::from(r.u16("TOPIC")?)
    } else {
        usize::from(r.u8("TOPIC")?)
    };
    let topic = r.utf8(topic_len, "TOPIC")?;
    let prop_len = usize::from(r.u16("PROPERTIES")?);
    let properties = Properties::decode(&r.utf8(prop_len, "PROPERTIES")?);

    let (body, body_compressed) = if sys_flag & sys_flag::COMPRESSED != 0 {
        match Compression::from_sys_flag(sys_flag) {
            Compression::Zlib => match inflate(raw_body) {
                Some(b) => (Bytes::from(b), None),
                // Corrupt zlib: hand out what is stored rather than losing the message.
                None => (Bytes::copy_from_slice(raw_body), Some(Compression::Zlib)),
            },
            other => (Bytes::copy_from_slice(raw_body), Some(other)),
        }
    } else {
        (Bytes::copy_from_slice(raw_body), None)
    };

    Ok((
        StoredMessage {
            store_size,
            magic,
            body_crc,
            queue_id,
            flag,
            queue_offset,
            commit_log_offset,
            sys_flag,
            born_timestamp,
            born_host,
            store_timestamp,
            store_host,
            reconsume_times,
            prepared_transaction_offset,
            body,
            body_compressed,
            topic,
            properties,
        },
        size,
    ))
}

/// Decodes every record of a pull / query / view body.
///
/// # Errors
/// The first record that does not decode.
pub fn decode_all(mut buf: &[u8]) -> Result<Vec<StoredMessage>, DecodeError> {
    let mut out = Vec::new();
    let mut at = 0;
    while !buf.is_empty() {
        let (msg, size) = decode_one(buf, at)?;
        out.push(msg);
        buf = &buf[size..];
        at += size;
    }
    Ok(out)
}

/// Born timestamp and body length of every record, without copying bodies or parsing
/// properties (mqbench's consumer measures end-to-end latency from these).
///
/// # Errors
/// A record whose size, magic or body length is wrong.
pub fn scan_records(mut buf: &[u8], out: &mut Vec<(i64, usize)>) -> Result<(), DecodeError> {
    let mut at = 0;
    while !buf.is_empty() {
        let mut r = Reader::new(buf, at);
        let size = r.i32("TOTALSIZE")?;
        let size = usize::try_from(size)
            .ok()
            .filter(|s| *s >= MIN_RECORD_SIZE && *s <= buf.len())
            .ok_or(DecodeError::BadSize {
                offset: at,
                size: i64::from(size),
            })?;
        let mut r = Reader::new(&buf[..size], at);
        r.skip(4, "TOTALSIZE")?;
        let magic = r.i32("MAGICCODE")?;
        if magic != MAGIC_V1 && magic != MAGIC_V2 {
            return Err(DecodeError::BadMagic {
                offset: at,
                magic: u32::from_be_bytes(magic.to_be_bytes()),
            });
        }
        r.skip(28, "header")?;
        let sys = r.i32("SYSFLAG")?;
        let born = r.i64("BORNTIMESTAMP")?;
        let born_host = if sys & sys_flag::BORNHOST_V6 != 0 {
            20
        } else {
            8
        };
        let store_host = if sys & sys_flag::STOREHOST_V6 != 0 {
            20
        } else {
            8
        };
        r.skip(born_host + 8 + store_host + 4 + 8, "hosts")?;
        let body_len = r.len_i32("BODY")?;
        out.push((born, body_len));
        buf = &buf[size..];
        at += size;
    }
    Ok(())
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
    //! A stored-record writer for tests, straight from the layout table.
    use super::*;
    use bytes::{BufMut, BytesMut};

    /// Encodes `m` as a broker would store it (body as given, CRC computed).
    pub(crate) fn encode_stored(m: &StoredMessage) -> Vec<u8> {
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i32(m.magic);
        b.put_i32(m.body_crc);
        b.put_i32(m.queue_id);
        b.put_i32(m.flag);
        b.put_i64(m.queue_offset);
        b.put_i64(m.commit_log_offset);
        b.put_i32(m.sys_flag);
        b.put_i64(m.born_timestamp);
        put_host(&mut b, m.born_host);
        b.put_i64(m.store_timestamp);
        put_host(&mut b, m.store_host);
        b.put_i32(m.reconsume_times);
        b.put_i64(m.prepared_transaction_offset);
        b.put_i32(i32::try_from(m.body.len()).expect("test body fits"));
        b.put_slice(&m.body);
        if m.magic == MAGIC_V2 {
            b.put_u16(u16::try_from(m.topic.len()).expect("test topic fits"));
        } else {
            b.put_u8(u8::try_from(m.topic.len()).expect("test topic fits"));
        }
        b.put_slice(m.topic.as_bytes());
        let props = m.properties.encode();
        b.put_u16(u16::try_from(props.len()).expect("test properties fit"));
        b.put_slice(props.as_bytes());
        let len = i32::try_from(b.len()).expect("test record fits");
        b[..4].copy_from_slice(&len.to_be_bytes());
        b.to_vec()
    }

    fn put_host(b: &mut BytesMut, addr: SocketAddr) {
        match addr.ip() {
            IpAddr::V4(ip) => b.put_slice(&ip.octets()),
            IpAddr::V6(ip) => b.put_slice(&ip.octets()),
        }
        b.put_i32(i32::from(addr.port()));
    }

    /// A plausible message.
    pub(crate) fn sample() -> StoredMessage {
        let body = Bytes::from_static(b"Hello RocketMQ");
        StoredMessage {
            store_size: 0,
            magic: MAGIC_V1,
            body_crc: i32::try_from(crc32fast::hash(&body) & 0x7FFF_FFFF).expect("masked"),
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
        scan_records(&[g.clone(), g].concat(), &mut ts).unwrap();
        assert_eq!(ts, [(1_795_955_659_538, 14), (1_795_955_659_538, 14)]);
    }

    #[test]
    fn ipv6_hosts_v2_magic_and_no_uniq_key() {
        let mut m = sample();
        m.sys_flag = sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6;
        m.born_host = "[fe80::1]:1234".parse().unwrap();
        m.store_host = "[::1]:10911".parse().unwrap();
        m.magic = MAGIC_V2;
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
        assert!(matches!(
            decode_all(&good[..10]),
            Err(DecodeError::BadSize { offset: 0, .. })
        ));
        let mut bad = good.clone();
        bad[4] = 0;
        assert!(matches!(
            decode_all(&bad),
            Err(DecodeError::BadMagic { .. })
        ));
        // A record after a good one: offsets point at it.
        let two = [good.clone(), good[..50].to_vec()].concat();
        assert!(matches!(
            decode_all(&two),
            Err(DecodeError::BadSize { offset, .. }) if offset == good.len()
        ));
        // Body length pointing past TOTALSIZE.
        let mut bad = good.clone();
        bad[84..88].copy_from_slice(&1000i32.to_be_bytes());
        assert!(matches!(
            decode_all(&bad),
            Err(DecodeError::Truncated { field: "BODY", .. })
        ));
        let mut bad = good;
        bad[84..88].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(matches!(
            decode_all(&bad),
            Err(DecodeError::NegativeLength { field: "BODY", .. })
        ));
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
                    sys |= sys_flag::STOREHOST_V6;
                    SocketAddr::new(IpAddr::V6(Ipv6Addr::from(v6)), p2)
                } else {
                    SocketAddr::new(IpAddr::V4(Ipv4Addr::from(v4)), p2)
                };
                StoredMessage {
                    store_size: 0,
                    magic: MAGIC_V1,
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
