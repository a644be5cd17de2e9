//! The SEND_BATCH_MESSAGE body a client builds (`MessageDecoder.encodeMessages`):
//! messages back to back, each
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 4 | TOTALSIZE = 22 + bodyLen + propLen (this field included) |
//! | 4 | 4 | MAGICCODE, 0 |
//! | 8 | 4 | BODYCRC, 0 (the broker computes it) |
//! | 12 | 4 | FLAG |
//! | 16 | 4 | bodyLen, then the body (never compressed in a batch) |
//! | 20+bodyLen | 2 | propLen, then the properties string ([`Properties`]) |

use bytes::{BufMut, BytesMut};
use store::record::MAX_PROPERTIES_LEN;
use thiserror::Error;

use crate::message::properties::Properties;

/// Fixed bytes of one entry besides body and properties.
pub const BATCH_ENTRY_OVERHEAD: usize = 22;

/// One message of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchEntry {
    /// User flag.
    pub flag: i32,
    /// Body.
    pub body: Vec<u8>,
    /// Its own properties (UNIQ_KEY, KEYS, TAGS, WAIT, ...).
    pub properties: Properties,
}

/// A batch entry that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchEncodeError {
    /// Properties over 32 767 bytes.
    #[error("properties of batch entry {index} are {len} bytes, more than {MAX_PROPERTIES_LEN}")]
    PropertiesTooLong {
        /// Entry index.
        index: usize,
        /// Their length.
        len: usize,
    },
    /// An entry larger than an int32 can say.
    #[error("batch entry {index} is too large")]
    TooLarge {
        /// Entry index.
        index: usize,
    },
}

/// The exact encoded size of `entries`.
#[must_use]
pub fn encoded_len(entries: &[BatchEntry]) -> usize {
    entries
        .iter()
        .map(|e| BATCH_ENTRY_OVERHEAD + e.body.len() + e.properties.encode().len())
        .sum()
}

/// Appends the batch body for `entries` to `buf`; `buf` is unchanged on error.
///
/// # Errors
/// An entry's properties are longer than 32 767 bytes or the entry exceeds `i32::MAX`.
pub fn encode_batch(entries: &[BatchEntry], buf: &mut BytesMut) -> Result<(), BatchEncodeError> {
    let encoded: Vec<String> = entries.iter().map(|e| e.properties.encode()).collect();
    let mut sizes = Vec::with_capacity(entries.len());
    for (index, (entry, props)) in entries.iter().zip(&encoded).enumerate() {
        let prop_len = u16::try_from(props.len())
            .ok()
            .filter(|l| usize::from(*l) <= MAX_PROPERTIES_LEN)
            .ok_or(BatchEncodeError::PropertiesTooLong {
                index,
                len: props.len(),
            })?;
        let total = i32::try_from(BATCH_ENTRY_OVERHEAD + entry.body.len() + props.len())
            .map_err(|_| BatchEncodeError::TooLarge { index })?;
        let body_len =
            i32::try_from(entry.body.len()).map_err(|_| BatchEncodeError::TooLarge { index })?;
        sizes.push((total, body_len, prop_len));
    }
    buf.reserve(encoded_len(entries));
    for ((entry, props), (total, body_len, prop_len)) in entries.iter().zip(&encoded).zip(sizes) {
        buf.put_i32(total);
        buf.put_i32(0);
        buf.put_i32(0);
        buf.put_i32(entry.flag);
        buf.put_i32(body_len);
        buf.put_slice(&entry.body);
        buf.put_u16(prop_len);
        buf.put_slice(props.as_bytes());
    }
    Ok(())
}

/// Bytes that are not a valid batch body. `offset` is where the failing entry starts.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BatchDecodeError {
    /// The body ends inside a field.
    #[error("truncated at {field} (entry at byte {offset}): need {need} bytes, {have} left")]
    Truncated {
        /// Start of the entry.
        offset: usize,
        /// Field being read.
        field: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes left.
        have: usize,
    },
    /// TOTALSIZE out of range for the body.
    #[error("entry at byte {offset} claims size {size}")]
    BadSize {
        /// Start of the entry.
        offset: usize,
        /// The size it claims.
        size: i32,
    },
    /// A negative length.
    #[error("{field} length {len} is negative (entry at byte {offset})")]
    NegativeLength {
        /// Start of the entry.
        offset: usize,
        /// Field.
        field: &'static str,
        /// Length read.
        len: i32,
    },
    /// Properties not UTF-8.
    #[error("PROPERTIES is not UTF-8 (entry at byte {offset})")]
    NotUtf8 {
        /// Start of the entry.
        offset: usize,
    },
}

/// A bounds-checked big-endian reader over one entry; errors carry the entry offset.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    entry: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], BatchDecodeError> {
        let have = self.buf.len() - self.pos;
        if n > have {
            return Err(BatchDecodeError::Truncated {
                offset: self.entry,
                field,
                need: n,
                have,
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], BatchDecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N, field)?);
        Ok(out)
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, BatchDecodeError> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }

    /// An int32 length that must not be negative.
    fn len_i32(&mut self, field: &'static str) -> Result<usize, BatchDecodeError> {
        let len = self.i32(field)?;
        usize::try_from(len).map_err(|_| BatchDecodeError::NegativeLength {
            offset: self.entry,
            field,
            len,
        })
    }
}

/// Decodes a batch body (what a broker does before storing each entry).
///
/// # Errors
/// Truncated or inconsistent entries, or properties that are not UTF-8.
pub fn decode_batch(mut bytes: &[u8]) -> Result<Vec<BatchEntry>, BatchDecodeError> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while !bytes.is_empty() {
        let mut r = Reader {
            buf: bytes,
            pos: 0,
            entry: at,
        };
        let total = r.i32("TOTALSIZE")?;
        let total = usize::try_from(total)
            .ok()
            .filter(|t| *t >= BATCH_ENTRY_OVERHEAD && *t <= bytes.len())
            .ok_or(BatchDecodeError::BadSize {
                offset: at,
                size: total,
            })?;
        let mut r = Reader {
            buf: &bytes[..total],
            pos: 0,
            entry: at,
        };
        r.bytes(12, "header")?;
        let flag = r.i32("FLAG")?;
        let body_len = r.len_i32("BODY length")?;
        let body = r.bytes(body_len, "BODY")?.to_vec();
        let prop_len = usize::from(u16::from_be_bytes(r.array("PROPERTIES length")?));
        let props = r.bytes(prop_len, "PROPERTIES")?;
        let props =
            std::str::from_utf8(props).map_err(|_| BatchDecodeError::NotUtf8 { offset: at })?;
        out.push(BatchEntry {
            flag,
            body,
            properties: Properties::decode(props),
        });
        bytes = &bytes[total..];
        at += total;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_layout() {
        let entry = BatchEntry {
            flag: 7,
            body: b"hi".to_vec(),
            properties: [("WAIT", "true")].into_iter().collect(),
        };
        let mut buf = BytesMut::new();
        encode_batch(&[entry.clone(), entry.clone()], &mut buf).unwrap();
        let one: Vec<u8> = [
            &[0, 0, 0, 33][..], // 22 + 2 + 9
            &[0, 0, 0, 0],      // magic
            &[0, 0, 0, 0],      // crc
            &[0, 0, 0, 7],      // flag
            &[0, 0, 0, 2],      // body length
            b"hi",
            &[0, 9],
            b"WAIT\x01true",
        ]
        .concat();
        assert_eq!(&buf[..], [one.clone(), one].concat());
        assert_eq!(encoded_len(&[entry.clone(), entry.clone()]), buf.len());
        assert_eq!(decode_batch(&buf).unwrap(), vec![entry.clone(), entry]);
    }

    #[test]
    fn too_long_properties_leave_buffer_alone() {
        let entry = BatchEntry {
            flag: 0,
            body: vec![],
            properties: [("K", "v".repeat(40_000))].into_iter().collect(),
        };
        let mut buf = BytesMut::from(&b"x"[..]);
        assert!(matches!(
            encode_batch(&[entry], &mut buf),
            Err(BatchEncodeError::PropertiesTooLong { index: 0, .. })
        ));
        assert_eq!(&buf[..], b"x");
    }

    proptest! {
        #[test]
        fn round_trip(entries in proptest::collection::vec(
            (any::<i32>(), proptest::collection::vec(any::<u8>(), 0..64), "[a-z]{1,6}", "[^\u{1}\u{2}]{1,10}"),
            0..6,
        )) {
            let entries: Vec<BatchEntry> = entries
                .into_iter()
                .map(|(flag, body, k, v)| BatchEntry { flag, body, properties: [(k, v)].into_iter().collect() })
                .collect();
            let mut buf = BytesMut::new();
            encode_batch(&entries, &mut buf).unwrap();
            prop_assert_eq!(decode_batch(&buf).unwrap(), entries);
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = decode_batch(&bytes);
        }
    }
}
