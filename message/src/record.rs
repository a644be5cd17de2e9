//! The stored-message record: RocketMQ's CommitLog format, which is also the body of
//! pull, query and view responses and of CHECK_TRANSACTION_STATE, so the store writes
//! it, the broker re-encodes it and tools read it, all through this one codec. Also the
//! BLANK end-of-file marker, the `MessageSysFlag` bits and the body CRC.
//!
//! No file, socket or clock in here: [`encode`] writes into a caller-owned `&mut [u8]`
//! of exactly [`record_len`] bytes (the put path hands it a slice of the mapping, so
//! there is no intermediate buffer), [`decode`] reads from `&[u8]` and tells
//! "need more bytes" (`Ok(None)`) from "invalid" (`Err`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Magic of a v1 message record (`0xDAA320A7`, RocketMQ `MESSAGE_MAGIC_CODE` = -626843481):
/// 1-byte topic length.
pub const MESSAGE_MAGIC_CODE: u32 = 0xDAA3_20A7;
/// Magic of a v2 message record (`0xDAA320AB`, RocketMQ 5.x): 2-byte topic length, used
/// only for topics longer than 127 bytes.
pub const MESSAGE_MAGIC_CODE_V2: u32 = 0xDAA3_20AB;
/// Magic of the end-of-file marker (`0xCBD43194`, RocketMQ `BLANK_MAGIC_CODE` = -875286124).
pub const BLANK_MAGIC_CODE: u32 = 0xCBD4_3194;
/// Size of the end-of-file marker: 4-byte remaining size + 4-byte magic. A record is
/// only placed in a file if this much room stays free behind it
/// (RocketMQ `END_FILE_MIN_BLANK_LENGTH`).
pub const END_FILE_MIN_BLANK_LENGTH: usize = 8;
/// Offset of the MAGICCODE field.
pub const MAGIC_POSITION: usize = 4;
/// Offset of the QUEUEOFFSET field.
pub const QUEUE_OFFSET_POSITION: usize = 20;
/// Offset of the PHYSICALOFFSET field.
pub const PHYSICAL_OFFSET_POSITION: usize = 28;
/// Offset of the SYSFLAG field.
pub const SYSFLAG_POSITION: usize = 36;
/// Offset of BORNHOST (right after BORNTIMESTAMP).
pub const BORN_HOST_POSITION: usize = 48;
/// Largest topic in a v1 record (a Java signed byte).
pub const MAX_TOPIC_LEN_V1: usize = 127;
/// Largest properties string (a Java signed short).
pub const MAX_PROPERTIES_LEN: usize = i16::MAX as usize;
/// Bytes of a record that do not depend on body, topic, properties or host kinds
/// (IPv4 hosts, v1 topic length): 91.
pub const FIXED_LEN_V4: usize = 91;

/// `MessageSysFlag` bits.
pub mod sys_flag {
    /// Body compressed.
    pub const COMPRESSED: i32 = 0x1;
    /// Tags hold several values.
    pub const MULTI_TAGS: i32 = 0x2;
    /// Transaction type mask.
    pub const TRANSACTION_MASK: i32 = 0xC;
    /// Not a transactional record.
    pub const TRANSACTION_NOT_TYPE: i32 = 0x0;
    /// Half (prepared) message.
    pub const TRANSACTION_PREPARED_TYPE: i32 = 0x4;
    /// Commit record.
    pub const TRANSACTION_COMMIT_TYPE: i32 = 0x8;
    /// Rollback record.
    pub const TRANSACTION_ROLLBACK_TYPE: i32 = 0xC;
    /// BORNHOST is IPv6 (20 bytes instead of 8).
    pub const BORNHOST_V6: i32 = 0x10;
    /// STOREHOSTADDRESS is IPv6.
    pub const STOREHOSTADDRESS_V6: i32 = 0x20;
    /// Compression type of a [`COMPRESSED`] body (bits 8..=10, see [`super::Compression`]).
    pub const COMPRESSION_TYPE_MASK: i32 = 0x700;

    /// The transaction type bits of `flag`.
    #[must_use]
    pub fn transaction_type(flag: i32) -> i32 {
        flag & TRANSACTION_MASK
    }

    /// `flag` with the two host bits set from the actual address families, as
    /// RocketMQ's put path does.
    #[must_use]
    pub fn with_host_bits(
        flag: i32,
        born: &std::net::SocketAddr,
        store: &std::net::SocketAddr,
    ) -> i32 {
        let mut f = flag & !(BORNHOST_V6 | STOREHOSTADDRESS_V6);
        if born.is_ipv6() {
            f |= BORNHOST_V6;
        }
        if store.is_ipv6() {
            f |= STOREHOSTADDRESS_V6;
        }
        f
    }
}

/// How a body is compressed (`MessageSysFlag.getCompressionType`, bits 8..=10 of a
/// sysFlag with [`sys_flag::COMPRESSED`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// zlib (type 3, or 0 for old producers).
    Zlib,
    /// LZ4 (type 1).
    Lz4,
    /// Zstandard (type 2).
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

/// Body CRC as RocketMQ stores it: CRC-32 (IEEE) masked with `0x7FFFFFFF`.
#[must_use]
pub fn body_crc(body: &[u8]) -> u32 {
    crc32fast::hash(body) & 0x7FFF_FFFF
}

fn host_len(v6: bool) -> usize {
    if v6 { 16 + 4 } else { 4 + 4 }
}

/// Length of a stored record, RocketMQ `calMsgLength`.
///
/// `v2` selects the 2-byte topic length. Returns `None` if the sum overflows `u32`.
#[must_use]
pub fn record_len(
    sys: i32,
    body_len: usize,
    topic_len: usize,
    props_len: usize,
    v2: bool,
) -> Option<usize> {
    let hosts = host_len(sys & sys_flag::BORNHOST_V6 != 0)
        + host_len(sys & sys_flag::STOREHOSTADDRESS_V6 != 0);
    let len = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 4 + 8 // fixed ints
        + hosts
        + 4usize.checked_add(body_len)?
        + if v2 { 2 } else { 1 }
        + topic_len
        + 2
        + props_len;
    (len <= u32::MAX as usize).then_some(len)
}

/// The fields of one record to encode.
///
/// The byte layout (big-endian, offsets for IPv4 hosts and a v1 magic):
///
/// | off | size | field |
/// |---|---|---|
/// | 0 | 4 | TOTALSIZE: whole record incl. this field |
/// | 4 | 4 | MAGICCODE `0xDAA320A7` (v1) / `0xDAA320AB` (v2) |
/// | 8 | 4 | BODYCRC: crc32(body) & 0x7FFFFFFF |
/// | 12 | 4 | QUEUEID |
/// | 16 | 4 | FLAG |
/// | 20 | 8 | QUEUEOFFSET |
/// | 28 | 8 | PHYSICALOFFSET: CommitLog offset of this record |
/// | 36 | 4 | SYSFLAG (0x10: born host v6, 0x20: store host v6) |
/// | 40 | 8 | BORNTIMESTAMP |
/// | 48 | 8 / 20 | BORNHOST: 4 or 16 address bytes + i32 port |
/// | 56 | 8 | STORETIMESTAMP |
/// | 64 | 8 / 20 | STOREHOSTADDRESS |
/// | 72 | 4 | RECONSUMETIMES |
/// | 76 | 8 | PREPARED TRANSACTION OFFSET |
/// | 84 | 4 + n | BODY: i32 length + bytes |
/// | .. | 1 (v1) / 2 (v2) + n | TOPIC: length + UTF-8 |
/// | .. | 2 + n | PROPERTIES: i16 length + `k\x01v\x02k\x01v` |
#[derive(Debug, Clone, Copy)]
pub struct RecordFields<'a> {
    /// BODYCRC (already masked).
    pub body_crc: u32,
    /// QUEUEID.
    pub queue_id: i32,
    /// FLAG.
    pub flag: i32,
    /// QUEUEOFFSET.
    pub queue_offset: u64,
    /// PHYSICALOFFSET.
    pub physical_offset: u64,
    /// SYSFLAG; its host bits must match the address families (see
    /// [`sys_flag::with_host_bits`]).
    pub sys_flag: i32,
    /// BORNTIMESTAMP (ms).
    pub born_timestamp: i64,
    /// BORNHOST.
    pub born_host: SocketAddr,
    /// STORETIMESTAMP (ms).
    pub store_timestamp: i64,
    /// STOREHOSTADDRESS.
    pub store_host: SocketAddr,
    /// RECONSUMETIMES.
    pub reconsume_times: i32,
    /// PREPARED TRANSACTION OFFSET.
    pub prepared_transaction_offset: i64,
    /// BODY.
    pub body: &'a [u8],
    /// TOPIC (UTF-8).
    pub topic: &'a [u8],
    /// PROPERTIES, written as the concatenation of these parts (a batch entry's own
    /// properties, a separator, the batch's properties).
    pub properties: [&'a [u8]; 3],
}

impl RecordFields<'_> {
    /// Total properties length.
    #[must_use]
    pub fn properties_len(&self) -> usize {
        self.properties.iter().map(|p| p.len()).sum()
    }

    /// Whether the topic needs the v2 (2-byte topic length) magic.
    #[must_use]
    pub fn needs_v2(&self) -> bool {
        self.topic.len() > MAX_TOPIC_LEN_V1
    }

    /// The encoded length, or `None` if a field is too long for the format.
    #[must_use]
    pub fn encoded_len(&self) -> Option<usize> {
        let props = self.properties_len();
        if props > MAX_PROPERTIES_LEN
            || self.topic.len() > u16::MAX as usize
            || self.body.len() > i32::MAX as usize
        {
            return None;
        }
        record_len(
            self.sys_flag,
            self.body.len(),
            self.topic.len(),
            props,
            self.needs_v2(),
        )
    }
}

/// Little cursor over a mutable slice; every write is bounds-checked by slicing.
struct Writer<'b> {
    buf: &'b mut [u8],
    pos: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }
    fn u32(&mut self, v: u32) {
        self.put(&v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.put(&v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.put(&v.to_be_bytes());
    }
    fn host(&mut self, addr: &SocketAddr) {
        match addr.ip() {
            IpAddr::V4(ip) => self.put(&ip.octets()),
            IpAddr::V6(ip) => self.put(&ip.octets()),
        }
        self.i32(i32::from(addr.port()));
    }
}

/// Encodes `f` into `buf`, which must be exactly `f.encoded_len()` bytes long.
///
/// # Panics
/// If `buf.len()` differs from the encoded length, or the host bits of `sys_flag` do
/// not match the address families (both are caller bugs, not input errors).
pub fn encode(buf: &mut [u8], f: &RecordFields<'_>) {
    let len = f.encoded_len().expect("caller checked encoded_len");
    assert_eq!(
        buf.len(),
        len,
        "record buffer must have the exact encoded length"
    );
    assert_eq!(
        sys_flag::with_host_bits(f.sys_flag, &f.born_host, &f.store_host),
        f.sys_flag,
        "sys_flag host bits must match the address families"
    );
    let v2 = f.needs_v2();
    let mut w = Writer { buf, pos: 0 };
    w.u32(len as u32);
    w.u32(if v2 {
        MESSAGE_MAGIC_CODE_V2
    } else {
        MESSAGE_MAGIC_CODE
    });
    w.u32(f.body_crc);
    w.i32(f.queue_id);
    w.i32(f.flag);
    w.i64(f.queue_offset as i64);
    w.i64(f.physical_offset as i64);
    w.i32(f.sys_flag);
    w.i64(f.born_timestamp);
    w.host(&f.born_host);
    w.i64(f.store_timestamp);
    w.host(&f.store_host);
    w.i32(f.reconsume_times);
    w.i64(f.prepared_transaction_offset);
    w.u32(f.body.len() as u32);
    w.put(f.body);
    if v2 {
        w.put(&(f.topic.len() as u16).to_be_bytes());
    } else {
        w.put(&[f.topic.len() as u8]);
    }
    w.put(f.topic);
    w.put(&(f.properties_len() as u16).to_be_bytes());
    for part in f.properties {
        w.put(part);
    }
    debug_assert_eq!(w.pos, len);
}

/// Writes the end-of-file marker (`remaining` as TOTALSIZE, then [`BLANK_MAGIC_CODE`])
/// into the first 8 bytes of `buf`. The rest of the file stays as it is.
///
/// # Panics
/// If `buf` is shorter than 8 bytes.
pub fn encode_blank(buf: &mut [u8], remaining: u32) {
    buf[..4].copy_from_slice(&remaining.to_be_bytes());
    buf[4..8].copy_from_slice(&BLANK_MAGIC_CODE.to_be_bytes());
}

/// Why bytes are not a valid record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// TOTALSIZE is smaller than any record can be.
    #[error("total size {0} is too small")]
    TooSmall(u32),
    /// MAGICCODE is none of the known ones.
    #[error("unknown magic code {0:#010x}")]
    BadMagic(u32),
    /// A length field is negative or points past TOTALSIZE.
    #[error("field length out of bounds")]
    BadFieldLength,
    /// TOTALSIZE disagrees with the lengths of the parts.
    #[error("total size {declared} but fields add up to {computed}")]
    LengthMismatch {
        /// TOTALSIZE.
        declared: u32,
        /// Length computed from the fields.
        computed: usize,
    },
    /// The body does not match BODYCRC.
    #[error("body crc {stored:#x} but computed {computed:#x}")]
    Crc {
        /// BODYCRC field.
        stored: u32,
        /// CRC of the body bytes.
        computed: u32,
    },
    /// PHYSICALOFFSET is not where the record is.
    #[error("record at {at} claims physical offset {claimed}")]
    Misplaced {
        /// Where the record was read.
        at: u64,
        /// Its PHYSICALOFFSET field.
        claimed: u64,
    },
    /// A BLANK marker whose size does not reach the end of its file.
    #[error("blank marker of {size} bytes but {remaining} remain in the file")]
    BadBlank {
        /// Its TOTALSIZE.
        size: u32,
        /// Bytes from it to the end of the file.
        remaining: usize,
    },
    /// Topic is not UTF-8.
    #[error("topic is not utf-8")]
    TopicNotUtf8,
}

/// A decoded message record, borrowing from the bytes it was decoded from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage<'a> {
    /// TOTALSIZE.
    pub total_size: u32,
    /// MAGICCODE.
    pub magic: u32,
    /// BODYCRC.
    pub body_crc: u32,
    /// QUEUEID.
    pub queue_id: i32,
    /// FLAG.
    pub flag: i32,
    /// QUEUEOFFSET.
    pub queue_offset: u64,
    /// PHYSICALOFFSET.
    pub physical_offset: u64,
    /// SYSFLAG.
    pub sys_flag: i32,
    /// BORNTIMESTAMP.
    pub born_timestamp: i64,
    /// BORNHOST.
    pub born_host: SocketAddr,
    /// STORETIMESTAMP.
    pub store_timestamp: i64,
    /// STOREHOSTADDRESS.
    pub store_host: SocketAddr,
    /// RECONSUMETIMES.
    pub reconsume_times: i32,
    /// PREPARED TRANSACTION OFFSET.
    pub prepared_transaction_offset: i64,
    /// BODY.
    pub body: &'a [u8],
    /// TOPIC.
    pub topic: &'a str,
    /// PROPERTIES (raw; see [`crate::properties`]).
    pub properties: &'a [u8],
}

impl<'a> StoredMessage<'a> {
    /// The fields to encode this record again; change some with struct update syntax
    /// (a decoded sysFlag's host bits always match its addresses).
    #[must_use]
    pub fn fields(&self) -> RecordFields<'a> {
        RecordFields {
            body_crc: self.body_crc,
            queue_id: self.queue_id,
            flag: self.flag,
            queue_offset: self.queue_offset,
            physical_offset: self.physical_offset,
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            born_host: self.born_host,
            store_timestamp: self.store_timestamp,
            store_host: self.store_host,
            reconsume_times: self.reconsume_times,
            prepared_transaction_offset: self.prepared_transaction_offset,
            body: self.body,
            topic: self.topic.as_bytes(),
            properties: [self.properties, &[], &[]],
        }
    }

    /// Whether BODYCRC matches the body.
    ///
    /// # Errors
    /// [`RecordError::Crc`] on a mismatch.
    pub fn verify_crc(&self) -> Result<(), RecordError> {
        let computed = body_crc(self.body);
        if computed == self.body_crc {
            Ok(())
        } else {
            Err(RecordError::Crc {
                stored: self.body_crc,
                computed,
            })
        }
    }

    /// Properties as text (lossy for invalid UTF-8).
    #[must_use]
    pub fn properties_str(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.properties)
    }
}

/// One item of a CommitLog file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record<'a> {
    /// A message.
    Message(StoredMessage<'a>),
    /// The end-of-file marker; `size` is the rest of the file.
    Blank {
        /// TOTALSIZE of the marker.
        size: u32,
    },
}

/// Reads big-endian numbers from a slice, failing softly at the end.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i32(&mut self) -> Option<i32> {
        self.u32().map(|v| v as i32)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take(8).map(|b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            i64::from_be_bytes(a)
        })
    }
    fn host(&mut self, v6: bool) -> Option<SocketAddr> {
        let ip: IpAddr = if v6 {
            let mut a = [0u8; 16];
            a.copy_from_slice(self.take(16)?);
            IpAddr::V6(Ipv6Addr::from(a))
        } else {
            let b = self.take(4)?;
            IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
        };
        let port = self.i32()?;
        Some(SocketAddr::new(ip, port as u16))
    }
}

/// Smallest possible message record (empty body/topic/properties, IPv4 hosts).
const MIN_MESSAGE_LEN: usize = FIXED_LEN_V4;

/// Decodes the record at the start of `buf`.
///
/// Returns `Ok(None)` if `buf` ends before the record does (the 8-byte head, or the
/// TOTALSIZE it declares), `Err` if the bytes cannot be a record. The CRC is not
/// checked here (see [`StoredMessage::verify_crc`]); nor is PHYSICALOFFSET, which
/// needs to know where `buf` lies.
///
/// # Errors
/// Bad magic, impossible sizes, or field lengths that disagree with TOTALSIZE.
pub fn decode(buf: &[u8]) -> Result<Option<Record<'_>>, RecordError> {
    if buf.len() < 8 {
        return Ok(None);
    }
    let total = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let magic = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let v2 = match magic {
        BLANK_MAGIC_CODE => {
            if (total as usize) < END_FILE_MIN_BLANK_LENGTH {
                return Err(RecordError::TooSmall(total));
            }
            return Ok(Some(Record::Blank { size: total }));
        }
        MESSAGE_MAGIC_CODE => false,
        MESSAGE_MAGIC_CODE_V2 => true,
        other => return Err(RecordError::BadMagic(other)),
    };
    if (total as usize) < MIN_MESSAGE_LEN || total > i32::MAX as u32 {
        return Err(RecordError::TooSmall(total));
    }
    let Some(rec) = buf.get(..total as usize) else {
        return Ok(None);
    };
    let bad = RecordError::BadFieldLength;
    let mut r = Reader { buf: rec, pos: 8 };
    let body_crc = r.u32().ok_or(bad)?;
    let queue_id = r.i32().ok_or(bad)?;
    let flag = r.i32().ok_or(bad)?;
    let queue_offset = r.i64().ok_or(bad)? as u64;
    let physical_offset = r.i64().ok_or(bad)? as u64;
    let sys = r.i32().ok_or(bad)?;
    let born_timestamp = r.i64().ok_or(bad)?;
    let born_host = r.host(sys & sys_flag::BORNHOST_V6 != 0).ok_or(bad)?;
    let store_timestamp = r.i64().ok_or(bad)?;
    let store_host = r
        .host(sys & sys_flag::STOREHOSTADDRESS_V6 != 0)
        .ok_or(bad)?;
    let reconsume_times = r.i32().ok_or(bad)?;
    let prepared_transaction_offset = r.i64().ok_or(bad)?;
    let body_len = r.i32().ok_or(bad)?;
    let body_len = usize::try_from(body_len).map_err(|_| bad)?;
    let body = r.take(body_len).ok_or(bad)?;
    let topic_len = if v2 {
        r.u16().ok_or(bad)? as usize
    } else {
        // A Java signed byte: lengths above 127 cannot appear in a v1 record.
        let l = r.take(1).ok_or(bad)?[0];
        if l > MAX_TOPIC_LEN_V1 as u8 {
            return Err(bad);
        }
        l as usize
    };
    let topic = r.take(topic_len).ok_or(bad)?;
    let props_len = r.u16().ok_or(bad)?;
    if props_len > MAX_PROPERTIES_LEN as u16 {
        return Err(bad);
    }
    let properties = r.take(props_len as usize).ok_or(bad)?;
    let computed = record_len(sys, body_len, topic_len, props_len as usize, v2).ok_or(bad)?;
    if computed != total as usize {
        return Err(RecordError::LengthMismatch {
            declared: total,
            computed,
        });
    }
    let topic = std::str::from_utf8(topic).map_err(|_| RecordError::TopicNotUtf8)?;
    Ok(Some(Record::Message(StoredMessage {
        total_size: total,
        magic,
        body_crc,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag: sys,
        born_timestamp,
        born_host,
        store_timestamp,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        body,
        topic,
        properties,
    })))
}

/// Store timestamp of the message record at the start of `buf`, if it is one.
#[must_use]
pub fn peek_store_timestamp(buf: &[u8]) -> Option<i64> {
    let magic = u32::from_be_bytes(buf.get(4..8)?.try_into().ok()?);
    if magic != MESSAGE_MAGIC_CODE && magic != MESSAGE_MAGIC_CODE_V2 {
        return None;
    }
    let sys = i32::from_be_bytes(
        buf.get(SYSFLAG_POSITION..SYSFLAG_POSITION + 4)?
            .try_into()
            .ok()?,
    );
    let pos = BORN_HOST_POSITION + host_len(sys & sys_flag::BORNHOST_V6 != 0);
    Some(i64::from_be_bytes(buf.get(pos..pos + 8)?.try_into().ok()?))
}

/// The PROPERTIES bytes of the message record at the start of `buf`, found from the
/// length fields alone (RocketMQ `MessageDecoder.decodeProperties`), without decoding
/// the rest: what a SQL92 filter reads of every record it scans. `None` if `buf` is not
/// a whole message record.
#[must_use]
pub fn peek_properties(buf: &[u8]) -> Option<&[u8]> {
    let be32 = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(buf.get(at..at + 4)?.try_into().ok()?))
    };
    let v2 = match be32(MAGIC_POSITION)? {
        MESSAGE_MAGIC_CODE => false,
        MESSAGE_MAGIC_CODE_V2 => true,
        _ => return None,
    };
    let total = usize::try_from(be32(0)?).ok()?;
    let rec = buf.get(..total)?;
    let sys = be32(SYSFLAG_POSITION)? as i32;
    // BORNTIMESTAMP .. PREPARED TRANSACTION OFFSET, then BODY's length.
    let body_len_at = BORN_HOST_POSITION
        + host_len(sys & sys_flag::BORNHOST_V6 != 0)
        + 8
        + host_len(sys & sys_flag::STOREHOSTADDRESS_V6 != 0)
        + 4
        + 8;
    let body_len = usize::try_from(be32(body_len_at)? as i32).ok()?;
    let topic_len_at = body_len_at.checked_add(4)?.checked_add(body_len)?;
    let (topic_len, topic_at) = if v2 {
        let b = rec.get(topic_len_at..topic_len_at + 2)?;
        (
            usize::from(u16::from_be_bytes([b[0], b[1]])),
            topic_len_at + 2,
        )
    } else {
        (usize::from(*rec.get(topic_len_at)?), topic_len_at + 1)
    };
    let props_len_at = topic_at.checked_add(topic_len)?;
    let b = rec.get(props_len_at..props_len_at + 2)?;
    let props_len = usize::from(u16::from_be_bytes([b[0], b[1]]));
    rec.get(props_len_at + 2..props_len_at + 2 + props_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample<'a>(body: &'a [u8], topic: &'a [u8], props: &'a [u8]) -> RecordFields<'a> {
        let born: SocketAddr = "10.0.0.1:5555".parse().unwrap();
        let store: SocketAddr = "10.0.0.2:10911".parse().unwrap();
        RecordFields {
            body_crc: body_crc(body),
            queue_id: 3,
            flag: 7,
            queue_offset: 42,
            physical_offset: 4096,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_000,
            born_host: born,
            store_timestamp: 1_700_000_000_123,
            store_host: store,
            reconsume_times: 1,
            prepared_transaction_offset: 0,
            body,
            topic,
            properties: [props, &[], &[]],
        }
    }

    #[test]
    fn v4_record_is_91_bytes_plus_payload_and_roundtrips() {
        let f = sample(b"hello", b"TopicA", b"TAGS\x01a");
        let len = f.encoded_len().unwrap();
        assert_eq!(len, 91 + 5 + 6 + 6);
        let mut buf = vec![0u8; len];
        encode(&mut buf, &f);
        assert_eq!(&buf[4..8], &[0xDA, 0xA3, 0x20, 0xA7]);
        assert_eq!(peek_store_timestamp(&buf), Some(1_700_000_000_123));
        let Some(Record::Message(m)) = decode(&buf).unwrap() else {
            panic!("not a message")
        };
        m.verify_crc().unwrap();
        assert_eq!(m.topic, "TopicA");
        assert_eq!(m.body, b"hello");
        assert_eq!(m.queue_offset, 42);
        assert_eq!(m.physical_offset, 4096);
        assert_eq!(m.born_host, f.born_host);
        assert_eq!(m.store_host, f.store_host);
        assert_eq!(m.properties, b"TAGS\x01a");
        // Every prefix is "incomplete", never an error.
        for cut in 0..len {
            assert_eq!(decode(&buf[..cut]), Ok(None), "cut {cut}");
        }
    }

    #[test]
    fn v6_hosts_and_long_topics() {
        let topic = vec![b'T'; 200];
        let mut f = sample(b"x", &topic, b"");
        f.born_host = "[::1]:1".parse().unwrap();
        f.sys_flag = sys_flag::with_host_bits(0, &f.born_host, &f.store_host);
        assert_eq!(f.sys_flag, sys_flag::BORNHOST_V6);
        let len = f.encoded_len().unwrap();
        assert_eq!(len, 91 + 12 + 1 + 1 + 200);
        let mut buf = vec![0u8; len];
        encode(&mut buf, &f);
        assert_eq!(
            u32::from_be_bytes(buf[4..8].try_into().unwrap()),
            MESSAGE_MAGIC_CODE_V2
        );
        let Some(Record::Message(m)) = decode(&buf).unwrap() else {
            panic!()
        };
        assert_eq!(m.born_host, f.born_host);
        assert_eq!(m.topic.len(), 200);
    }

    #[test]
    fn corrupt_bytes_are_errors_not_panics() {
        let f = sample(b"hello", b"T", b"");
        let mut buf = vec![0u8; f.encoded_len().unwrap()];
        encode(&mut buf, &f);
        let mut bad = buf.clone();
        bad[5] ^= 1;
        assert!(matches!(decode(&bad), Err(RecordError::BadMagic(_))));
        let mut bad = buf.clone();
        bad[84..88].copy_from_slice(&100i32.to_be_bytes());
        assert!(decode(&bad).is_err());
        let mut bad = buf.clone();
        bad[90] ^= 0xFF; // body byte
        let Some(Record::Message(m)) = decode(&bad).unwrap() else {
            panic!()
        };
        assert!(m.verify_crc().is_err());
        assert_eq!(decode(&[0u8; 16]), Err(RecordError::BadMagic(0)));
    }

    #[test]
    fn compression_type_bits() {
        assert_eq!(
            Compression::from_sys_flag(sys_flag::COMPRESSED),
            Compression::Zlib
        );
        assert_eq!(Compression::from_sys_flag(0x301), Compression::Zlib);
        assert_eq!(Compression::from_sys_flag(0x101), Compression::Lz4);
        assert_eq!(Compression::from_sys_flag(0x201), Compression::Zstd);
        assert_eq!(Compression::from_sys_flag(0x701), Compression::Unknown(7));
    }

    #[test]
    fn blank_marker() {
        let mut buf = [0u8; 8];
        encode_blank(&mut buf, 1000);
        assert_eq!(decode(&buf), Ok(Some(Record::Blank { size: 1000 })));
    }

    fn host() -> impl Strategy<Value = SocketAddr> {
        (any::<IpAddr>(), any::<u16>()).prop_map(|(ip, port)| SocketAddr::new(ip, port))
    }

    proptest! {
        #[test]
        fn decode_never_panics(
            mut bytes in prop::collection::vec(any::<u8>(), 0..256),
            magic in prop::sample::select(vec![MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, BLANK_MAGIC_CODE, 0]),
            total in prop::option::of(0u32..300),
        ) {
            // Mostly a known magic and a plausible size, so decoding gets past the head.
            if bytes.len() >= 8 {
                bytes[4..8].copy_from_slice(&magic.to_be_bytes());
                if let Some(total) = total {
                    bytes[..4].copy_from_slice(&total.to_be_bytes());
                }
            }
            if let Ok(Some(Record::Message(m))) = decode(&bytes) {
                prop_assert_eq!(m.total_size as usize, record_len(m.sys_flag, m.body.len(), m.topic.len(), m.properties.len(), m.magic == MESSAGE_MAGIC_CODE_V2).unwrap());
                let _ = (m.verify_crc(), m.properties_str());
            }
            let _ = peek_store_timestamp(&bytes);
            // Where decode finds a message, peek_properties finds its properties.
            if let Ok(Some(Record::Message(m))) = decode(&bytes) {
                prop_assert_eq!(peek_properties(&bytes), Some(m.properties));
            } else {
                let _ = peek_properties(&bytes);
            }
        }

        #[test]
        fn records_read_back(
            (born, store) in (host(), host()),
            (queue_id, flag, reconsume, sys) in (any::<i32>(), any::<i32>(), any::<i32>(), any::<i32>()),
            (queue_offset, physical_offset, born_ts, store_ts, prepared) in
                (0..=i64::MAX as u64, 0..=i64::MAX as u64, any::<i64>(), any::<i64>(), any::<i64>()),
            body in prop::collection::vec(any::<u8>(), 0..300),
            topic in "\\PC{0,140}",
            props in "\\PC{0,60}",
        ) {
            let sys_flag = sys_flag::with_host_bits(sys, &born, &store);
            let f = RecordFields {
                body_crc: body_crc(&body),
                queue_id, flag, queue_offset, physical_offset, sys_flag,
                born_timestamp: born_ts, born_host: born,
                store_timestamp: store_ts, store_host: store,
                reconsume_times: reconsume,
                prepared_transaction_offset: prepared,
                body: &body,
                topic: topic.as_bytes(),
                properties: [props.as_bytes(), &[], &[]],
            };
            let Some(len) = f.encoded_len() else { return Ok(()) };
            let mut buf = vec![0u8; len];
            encode(&mut buf, &f);
            let Some(Record::Message(m)) = decode(&buf).unwrap() else {
                return Err(TestCaseError::fail("not a message"));
            };
            prop_assert!(m.verify_crc().is_ok());
            prop_assert_eq!((m.queue_id, m.flag, m.queue_offset, m.physical_offset, m.sys_flag),
                (queue_id, flag, queue_offset, physical_offset, sys_flag));
            prop_assert_eq!((m.born_host, m.store_host, m.born_timestamp, m.store_timestamp), (born, store, born_ts, store_ts));
            prop_assert_eq!((m.reconsume_times, m.prepared_transaction_offset), (reconsume, prepared));
            prop_assert_eq!((m.body, m.topic, m.properties), (&body[..], topic.as_str(), props.as_bytes()));
            prop_assert_eq!(peek_store_timestamp(&buf), Some(store_ts));
            prop_assert_eq!(peek_properties(&buf), Some(props.as_bytes()));
            prop_assert_eq!(peek_properties(&buf[..len - 1]), None);
            // Re-encoding a decoded record gives the same bytes.
            let mut again = vec![0u8; len];
            encode(&mut again, &m.fields());
            prop_assert_eq!(&again, &buf);
            for cut in [0, 7, 8, len / 2, len - 1] {
                prop_assert_eq!(decode(&buf[..cut]), Ok(None));
            }
        }

    }
}
