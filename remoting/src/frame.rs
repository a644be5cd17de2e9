//! Sans-io framing: splits a byte stream into remoting frames.
//!
//! | offset | size | field                                                     |
//! |--------|------|-----------------------------------------------------------|
//! | 0      | 4    | `length` (i32 BE) = 4 + headerLen + bodyLen               |
//! | 4      | 4    | header word: serialize type (high byte), headerLen (24 b) |
//! | 8      | n    | header (JSON or ROCKETMQ binary, see `header`)            |
//! | 8 + n  | m    | body (opaque bytes; absent when m = 0)                    |
//!
//! `decode` never blocks and never panics: it returns `Ok(None)` until a whole
//! frame is buffered, and `Err` only for input that can never become valid, at
//! which point the connection must be closed.

use bytes::{Buf, Bytes, BytesMut};

use crate::error::FrameError;

/// Largest frame accepted by default (`com.rocketmq.remoting.frameMaxLength`), 16 MiB.
pub const DEFAULT_MAX_FRAME_LEN: usize = 16 * 1024 * 1024;
/// Size of the length prefix.
pub const LENGTH_PREFIX_LEN: usize = 4;
/// Size of the header word that follows the length prefix.
pub const HEADER_WORD_LEN: usize = 4;
/// At most this much is reserved ahead for an incomplete frame.
const RESERVE_STEP: usize = 256 * 1024;
/// Header length is a 24-bit field.
pub const MAX_HEADER_LEN: usize = 0x00FF_FFFF;

/// How the header of a frame is encoded (high byte of the header word).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SerializeType {
    /// `{"code":..}` JSON text (serializeType 0), the default of every standard client.
    #[default]
    Json,
    /// RocketMQ's compact binary header (serializeType 1).
    RocketMq,
}

impl SerializeType {
    /// Value of the high byte of the header word.
    #[must_use]
    pub const fn byte(self) -> u8 {
        match self {
            SerializeType::Json => 0,
            SerializeType::RocketMq => 1,
        }
    }

    /// Parses the high byte of the header word.
    #[must_use]
    pub const fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(SerializeType::Json),
            1 => Some(SerializeType::RocketMq),
            _ => None,
        }
    }
}

/// One frame, split but not yet interpreted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    /// Encoding of `header`.
    pub serialize_type: SerializeType,
    /// Header bytes.
    pub header: Bytes,
    /// Body bytes (empty when the frame has none).
    pub body: Bytes,
}

/// Splits frames off a receive buffer, enforcing a maximum frame length.
#[derive(Debug, Clone, Copy)]
pub struct FrameDecoder {
    max_frame_len: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new(DEFAULT_MAX_FRAME_LEN)
    }
}

impl FrameDecoder {
    /// A decoder refusing frames whose `length` field exceeds `max_frame_len`.
    #[must_use]
    pub const fn new(max_frame_len: usize) -> Self {
        FrameDecoder { max_frame_len }
    }

    /// The configured maximum `length` value.
    #[must_use]
    pub const fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }

    /// Takes one frame off the front of `buf`.
    ///
    /// Returns `Ok(None)` and leaves `buf` untouched while the frame is incomplete.
    ///
    /// # Errors
    /// When the prefix can never describe a valid frame: a length that is negative,
    /// too small to hold the header word, larger than the maximum, a header length
    /// larger than the frame, or an unknown serialize type.
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<RawFrame>, FrameError> {
        if buf.len() < LENGTH_PREFIX_LEN {
            return Ok(None);
        }
        let length = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        let frame_len = usize::try_from(length).map_err(|_| FrameError::NegativeLength(length))?;
        if frame_len > self.max_frame_len {
            return Err(FrameError::TooLarge {
                len: frame_len,
                max: self.max_frame_len,
            });
        }
        if frame_len < HEADER_WORD_LEN {
            return Err(FrameError::TooShort(frame_len));
        }
        // The header word can be validated as soon as it is here, before the whole
        // frame arrives, so garbage is refused early.
        if buf.len() >= LENGTH_PREFIX_LEN + HEADER_WORD_LEN {
            let (serialize_type, header_len) = parse_header_word([buf[4], buf[5], buf[6], buf[7]])?;
            if header_len > frame_len - HEADER_WORD_LEN {
                return Err(FrameError::HeaderLengthInvalid {
                    header_len,
                    frame_len,
                });
            }
            if buf.len() < LENGTH_PREFIX_LEN + frame_len {
                // Grow with what arrives, not with what the prefix announces: 8 bytes
                // must not make us allocate 16 MiB.
                let missing = LENGTH_PREFIX_LEN + frame_len - buf.len();
                buf.reserve(missing.min(RESERVE_STEP));
                return Ok(None);
            }
            buf.advance(LENGTH_PREFIX_LEN + HEADER_WORD_LEN);
            let header = buf.split_to(header_len).freeze();
            let body = buf
                .split_to(frame_len - HEADER_WORD_LEN - header_len)
                .freeze();
            return Ok(Some(RawFrame {
                serialize_type,
                header,
                body,
            }));
        }
        Ok(None)
    }
}

fn parse_header_word(word: [u8; 4]) -> Result<(SerializeType, usize), FrameError> {
    let serialize_type =
        SerializeType::from_byte(word[0]).ok_or(FrameError::UnknownSerializeType(word[0]))?;
    let header_len =
        (usize::from(word[1]) << 16) | (usize::from(word[2]) << 8) | usize::from(word[3]);
    Ok((serialize_type, header_len))
}

/// Writes the 8-byte prefix (length + header word) of a frame.
///
/// # Errors
/// When the header exceeds 24 bits or the frame exceeds `i32::MAX`.
pub fn encode_prefix(
    buf: &mut BytesMut,
    serialize_type: SerializeType,
    header_len: usize,
    body_len: usize,
) -> Result<(), FrameError> {
    use bytes::BufMut;
    if header_len > MAX_HEADER_LEN {
        return Err(FrameError::HeaderTooLarge(header_len));
    }
    let frame_len = HEADER_WORD_LEN + header_len + body_len;
    let length = i32::try_from(frame_len).map_err(|_| FrameError::TooLarge {
        len: frame_len,
        max: i32::MAX as usize,
    })?;
    buf.put_i32(length);
    // header_len fits in 24 bits (checked above), so this cannot truncate.
    #[allow(clippy::cast_possible_truncation)]
    buf.put_u32((u32::from(serialize_type.byte()) << 24) | header_len as u32);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    fn frame(ser: u8, header: &[u8], body: &[u8]) -> BytesMut {
        let mut b = BytesMut::new();
        b.put_i32(i32::try_from(4 + header.len() + body.len()).unwrap());
        b.put_u32((u32::from(ser) << 24) | u32::try_from(header.len()).unwrap());
        b.put_slice(header);
        b.put_slice(body);
        b
    }

    #[test]
    fn decodes_one_frame_and_leaves_the_rest() {
        let mut buf = frame(0, b"{}", b"body");
        buf.put_slice(&[0, 0]);
        let f = FrameDecoder::default().decode(&mut buf).unwrap().unwrap();
        assert_eq!(f.serialize_type, SerializeType::Json);
        assert_eq!(&f.header[..], b"{}");
        assert_eq!(&f.body[..], b"body");
        assert_eq!(&buf[..], &[0, 0]);
    }

    #[test]
    fn incomplete_leaves_buffer_unchanged() {
        let full = frame(1, b"hdr", b"xyz");
        for cut in 0..full.len() {
            let mut buf = BytesMut::from(&full[..cut]);
            assert_eq!(FrameDecoder::default().decode(&mut buf).unwrap(), None);
            assert_eq!(&buf[..], &full[..cut]);
        }
    }

    #[test]
    fn refuses_bad_prefixes() {
        let d = FrameDecoder::new(1024);
        let mut neg = BytesMut::from(&(-1i32).to_be_bytes()[..]);
        assert!(matches!(
            d.decode(&mut neg),
            Err(FrameError::NegativeLength(-1))
        ));
        let mut big = BytesMut::from(&2000i32.to_be_bytes()[..]);
        assert!(matches!(
            d.decode(&mut big),
            Err(FrameError::TooLarge {
                len: 2000,
                max: 1024
            })
        ));
        let mut short = BytesMut::from(&3i32.to_be_bytes()[..]);
        assert!(matches!(d.decode(&mut short), Err(FrameError::TooShort(3))));
        let mut bad_type = frame(7, b"{}", b"");
        assert!(matches!(
            d.decode(&mut bad_type),
            Err(FrameError::UnknownSerializeType(7))
        ));
        let mut bad_hlen = BytesMut::new();
        bad_hlen.put_i32(10);
        bad_hlen.put_u32(100);
        assert!(matches!(
            d.decode(&mut bad_hlen),
            Err(FrameError::HeaderLengthInvalid {
                header_len: 100,
                frame_len: 10
            })
        ));
    }

    #[test]
    fn prefix_round_trip() {
        let mut buf = BytesMut::new();
        encode_prefix(&mut buf, SerializeType::RocketMq, 3, 2).unwrap();
        buf.put_slice(b"abcde");
        let f = FrameDecoder::default().decode(&mut buf).unwrap().unwrap();
        assert_eq!(f.serialize_type, SerializeType::RocketMq);
        assert_eq!(&f.header[..], b"abc");
        assert_eq!(&f.body[..], b"de");
    }
}
