//! Sans-io codecs for RocketMQ's classic HA wire (no socket, no clock): the slave's
//! offset report and the master's transfer frame.
//!
//! The classic protocol has no framing beyond these two fixed layouts, no magic and
//! no version, so every byte must match Apache RocketMQ's `HAConnection` /
//! `HAClient` (4.9) and `DefaultHAConnection` / `DefaultHAClient` (5.x) exactly for
//! a Java slave to follow a sluice master and the other way round. All integers are
//! big-endian and signed on the wire; we hold them as `u64`/`usize` and refuse
//! negative values as invalid input.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::FrameError;

/// Size of a slave report on the wire.
pub const REPORT_SIZE: usize = 8;

/// Size of a transfer frame header on the wire (`TRANSFER_HEADER_SIZE` in RocketMQ).
pub const TRANSFER_HEADER_SIZE: usize = 12;

/// Largest body a transfer frame may carry. A Java slave reads into a fixed 4 MiB
/// buffer (`HAClient.READ_MAX_BUFFER_SIZE`) and can never complete a larger frame,
/// so no working master sends one; we refuse anything bigger as invalid.
pub const MAX_TRANSFER_BODY: usize = 4 * 1024 * 1024 - TRANSFER_HEADER_SIZE;

/// Header of a master → slave transfer frame.
///
/// | offset | size | type      | meaning                                                      |
/// |-------:|-----:|-----------|--------------------------------------------------------------|
/// | 0      | 8    | i64 BE    | `phyOffset`: CommitLog offset of the first body byte; for a heartbeat the master's next transfer offset |
/// | 8      | 4    | i32 BE    | `size`: body length; 0 = heartbeat                            |
/// | 12     | size | bytes     | raw CommitLog bytes, never crossing a CommitLog file end (BLANK end-of-file records included as they are) |
///
/// A heartbeat is the 12-byte header alone. Frames follow each other with nothing in
/// between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TransferHeader {
    offset: u64,
    size: usize,
}

impl TransferHeader {
    /// A header for `size` body bytes at `offset`.
    ///
    /// # Errors
    /// The values do not fit the wire's signed fields.
    pub fn new(offset: u64, size: usize) -> Result<Self, FrameError> {
        if i64::try_from(offset).is_err() {
            return Err(FrameError::OffsetOutOfRange(offset));
        }
        if i32::try_from(size).is_err() {
            return Err(FrameError::SizeOutOfRange(size));
        }
        Ok(TransferHeader { offset, size })
    }

    /// A heartbeat header (size 0) carrying the master's next transfer offset.
    ///
    /// # Errors
    /// `offset` does not fit the wire's signed field.
    pub fn heartbeat(offset: u64) -> Result<Self, FrameError> {
        TransferHeader::new(offset, 0)
    }

    /// CommitLog offset of the first body byte.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Body length.
    #[must_use]
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether this is a heartbeat (no body).
    #[must_use]
    pub fn is_heartbeat(&self) -> bool {
        self.size == 0
    }

    /// The 12 header bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; TRANSFER_HEADER_SIZE] {
        let mut out = [0u8; TRANSFER_HEADER_SIZE];
        // Both casts are lossless: `new` checked the ranges.
        out[..8].copy_from_slice(&(self.offset as i64).to_be_bytes());
        out[8..].copy_from_slice(&(self.size as i32).to_be_bytes());
        out
    }

    /// Appends the 12 header bytes to `dst`.
    pub fn encode(&self, dst: &mut BytesMut) {
        dst.put_slice(&self.to_bytes());
    }

    /// Decodes a header from the start of `src`: `Ok(None)` with fewer than 12 bytes.
    ///
    /// # Errors
    /// A negative offset or size, or a size above `max_body`.
    pub fn decode(src: &[u8], max_body: usize) -> Result<Option<Self>, FrameError> {
        let Some(head) = src.get(..TRANSFER_HEADER_SIZE) else {
            return Ok(None);
        };
        let mut off = [0u8; 8];
        off.copy_from_slice(&head[..8]);
        let mut size = [0u8; 4];
        size.copy_from_slice(&head[8..]);
        let offset = i64::from_be_bytes(off);
        let size = i32::from_be_bytes(size);
        let offset = u64::try_from(offset).map_err(|_| FrameError::NegativeOffset(offset))?;
        let size = usize::try_from(size).map_err(|_| FrameError::NegativeSize(size))?;
        if size > max_body {
            return Err(FrameError::BodyTooLarge {
                size,
                max: max_body,
            });
        }
        Ok(Some(TransferHeader { offset, size }))
    }
}

/// One decoded transfer frame owning its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferFrame {
    /// The header.
    pub header: TransferHeader,
    /// `header.size()` CommitLog bytes.
    pub body: Bytes,
}

/// Parses one whole transfer frame at the start of `src` without copying: the
/// header, the body as a sub-slice of `src`, and how many bytes the frame takes.
/// `Ok(None)` while the frame is incomplete.
///
/// # Errors
/// The header is invalid (see [`TransferHeader::decode`]).
pub fn parse_transfer(
    src: &[u8],
    max_body: usize,
) -> Result<Option<(TransferHeader, &[u8])>, FrameError> {
    let Some(header) = TransferHeader::decode(src, max_body)? else {
        return Ok(None);
    };
    let end = TRANSFER_HEADER_SIZE + header.size;
    Ok(src
        .get(TRANSFER_HEADER_SIZE..end)
        .map(|body| (header, body)))
}

/// Takes one whole transfer frame off the front of `buf`; an incomplete frame leaves
/// `buf` unchanged and returns `Ok(None)`.
///
/// # Errors
/// The header is invalid (see [`TransferHeader::decode`]); `buf` is unchanged.
pub fn decode_transfer(
    buf: &mut BytesMut,
    max_body: usize,
) -> Result<Option<TransferFrame>, FrameError> {
    let Some(header) = TransferHeader::decode(buf, max_body)? else {
        return Ok(None);
    };
    if buf.len() < TRANSFER_HEADER_SIZE + header.size {
        return Ok(None);
    }
    let mut frame = buf.split_to(TRANSFER_HEADER_SIZE + header.size);
    let body = frame.split_off(TRANSFER_HEADER_SIZE).freeze();
    Ok(Some(TransferFrame { header, body }))
}

/// Appends a whole transfer frame (header + `body`) to `dst`. The master itself
/// writes the header and the CommitLog slice with one vectored write instead.
///
/// # Errors
/// `offset` or `body.len()` do not fit the wire's signed fields.
pub fn encode_transfer(offset: u64, body: &[u8], dst: &mut BytesMut) -> Result<(), FrameError> {
    let header = TransferHeader::new(offset, body.len())?;
    dst.reserve(TRANSFER_HEADER_SIZE + body.len());
    header.encode(dst);
    dst.put_slice(body);
    Ok(())
}

/// The 8 bytes of a slave report.
///
/// | offset | size | type   | meaning                                           |
/// |-------:|-----:|--------|---------------------------------------------------|
/// | 0      | 8    | i64 BE | the slave's CommitLog max offset (its "ack")       |
///
/// Sent right after connecting (the first report is the transfer start; 0 means
/// "start at the master's last CommitLog file"), after appended data, and at least
/// every `haSendHeartbeatInterval`. Reports follow each other with nothing in between.
///
/// # Errors
/// `offset` does not fit the wire's signed field.
pub fn report_bytes(offset: u64) -> Result<[u8; REPORT_SIZE], FrameError> {
    let v = i64::try_from(offset).map_err(|_| FrameError::OffsetOutOfRange(offset))?;
    Ok(v.to_be_bytes())
}

/// Appends one slave report to `dst` (see [`report_bytes`] for the layout).
///
/// # Errors
/// `offset` does not fit the wire's signed field.
pub fn encode_report(offset: u64, dst: &mut BytesMut) -> Result<(), FrameError> {
    dst.put_slice(&report_bytes(offset)?);
    Ok(())
}

fn report_value(bytes: [u8; REPORT_SIZE]) -> Result<u64, FrameError> {
    let v = i64::from_be_bytes(bytes);
    u64::try_from(v).map_err(|_| FrameError::NegativeOffset(v))
}

/// Takes every complete report off the front of `buf` and returns the last one, as
/// RocketMQ's master does (it reads the last complete 8-byte value in its buffer and
/// ignores earlier ones). Fewer than 8 bytes leave `buf` unchanged and return
/// `Ok(None)`; a trailing partial report stays in `buf`.
///
/// # Errors
/// A consumed report is negative.
pub fn decode_reports(buf: &mut BytesMut) -> Result<Option<u64>, FrameError> {
    let whole = buf.len() - buf.len() % REPORT_SIZE;
    if whole == 0 {
        return Ok(None);
    }
    let mut last = None;
    for chunk in buf[..whole].chunks_exact(REPORT_SIZE) {
        let mut b = [0u8; REPORT_SIZE];
        b.copy_from_slice(chunk);
        last = Some(report_value(b)?);
    }
    let _ = buf.split_to(whole);
    Ok(last)
}

/// Streaming report decoder for a master connection: feed it whatever the socket
/// returned; it keeps a partial report between reads, so values stay aligned to the
/// stream as RocketMQ's fixed 8-byte reads are.
#[derive(Debug, Default, Clone)]
pub struct ReportDecoder {
    partial: [u8; REPORT_SIZE],
    len: usize,
}

impl ReportDecoder {
    /// A decoder at a report boundary.
    #[must_use]
    pub fn new() -> Self {
        ReportDecoder::default()
    }

    /// Bytes of an incomplete report held back.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.len
    }

    /// Consumes `src` and returns the last report completed by it, if any.
    ///
    /// # Errors
    /// A completed report is negative (the connection should be closed; the decoder
    /// state is unspecified afterwards).
    pub fn feed(&mut self, mut src: &[u8]) -> Result<Option<u64>, FrameError> {
        let mut last = None;
        if self.len > 0 {
            let take = (REPORT_SIZE - self.len).min(src.len());
            self.partial[self.len..self.len + take].copy_from_slice(&src[..take]);
            self.len += take;
            src = &src[take..];
            if self.len < REPORT_SIZE {
                return Ok(None);
            }
            self.len = 0;
            last = Some(report_value(self.partial)?);
        }
        let mut chunks = src.chunks_exact(REPORT_SIZE);
        for chunk in &mut chunks {
            let mut b = [0u8; REPORT_SIZE];
            b.copy_from_slice(chunk);
            last = Some(report_value(b)?);
        }
        let rest = chunks.remainder();
        self.partial[..rest.len()].copy_from_slice(rest);
        self.len = rest.len();
        Ok(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn transfer_header_layout() {
        let h = TransferHeader::new(0x0102_0304_0506_0708, 0x0A0B_0C0D).unwrap();
        assert_eq!(
            h.to_bytes(),
            [1, 2, 3, 4, 5, 6, 7, 8, 0x0A, 0x0B, 0x0C, 0x0D],
            "big-endian i64 offset then i32 size"
        );
        let hb = TransferHeader::heartbeat(1 << 30).unwrap();
        assert_eq!(hb.to_bytes(), [0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0]);
        assert!(hb.is_heartbeat());
    }

    #[test]
    fn report_layout() {
        assert_eq!(report_bytes(0).unwrap(), [0; 8]);
        assert_eq!(
            report_bytes(1_073_741_824 + 77).unwrap(),
            [0, 0, 0, 0, 0x40, 0, 0, 77]
        );
        assert_eq!(
            report_bytes(u64::MAX),
            Err(FrameError::OffsetOutOfRange(u64::MAX))
        );
    }

    #[test]
    fn encode_refuses_out_of_range() {
        assert_eq!(
            TransferHeader::new(1 << 63, 0),
            Err(FrameError::OffsetOutOfRange(1 << 63))
        );
        let big = i32::MAX as usize + 1;
        assert_eq!(
            TransferHeader::new(0, big),
            Err(FrameError::SizeOutOfRange(big))
        );
    }

    #[test]
    fn decode_rejects_impossible_headers() {
        let mut neg_off = [0u8; 12];
        neg_off[0] = 0x80;
        assert!(matches!(
            TransferHeader::decode(&neg_off, MAX_TRANSFER_BODY),
            Err(FrameError::NegativeOffset(_))
        ));
        let mut neg_size = [0u8; 12];
        neg_size[8] = 0xFF;
        assert_eq!(
            TransferHeader::decode(&neg_size, MAX_TRANSFER_BODY),
            Err(FrameError::NegativeSize(-16_777_216))
        );
        let mut big = [0u8; 12];
        big[8..].copy_from_slice(&(MAX_TRANSFER_BODY as i32 + 1).to_be_bytes());
        assert_eq!(
            TransferHeader::decode(&big, MAX_TRANSFER_BODY),
            Err(FrameError::BodyTooLarge {
                size: MAX_TRANSFER_BODY + 1,
                max: MAX_TRANSFER_BODY
            })
        );
        let mut neg_report = BytesMut::from(&[0xFFu8; 8][..]);
        assert_eq!(
            decode_reports(&mut neg_report),
            Err(FrameError::NegativeOffset(-1))
        );
    }

    #[test]
    fn incomplete_leaves_buffer_unchanged() {
        let mut buf = BytesMut::new();
        encode_transfer(100, b"hello", &mut buf).unwrap();
        let full = buf.clone();
        for cut in 0..full.len() {
            let mut part = BytesMut::from(&full[..cut]);
            assert_eq!(decode_transfer(&mut part, 64).unwrap(), None);
            assert_eq!(&part[..], &full[..cut]);
            assert_eq!(parse_transfer(&full[..cut], 64).unwrap(), None);
        }
        let mut reports = BytesMut::from(&[0u8, 0, 0, 0, 0, 0, 1][..]);
        assert_eq!(decode_reports(&mut reports).unwrap(), None);
        assert_eq!(reports.len(), 7);
    }

    #[test]
    fn master_uses_the_last_complete_report() {
        let mut buf = BytesMut::new();
        for v in [5u64, 9, 1000] {
            encode_report(v, &mut buf).unwrap();
        }
        buf.put_slice(&[0, 0, 0]);
        assert_eq!(decode_reports(&mut buf).unwrap(), Some(1000));
        assert_eq!(&buf[..], &[0, 0, 0], "the partial report stays");

        let mut d = ReportDecoder::new();
        let bytes: Vec<u8> = [7u64, 8].iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(d.feed(&bytes[..3]).unwrap(), None);
        assert_eq!(d.feed(&bytes[3..11]).unwrap(), Some(7));
        assert_eq!(d.pending(), 3);
        assert_eq!(d.feed(&bytes[11..]).unwrap(), Some(8));
        assert_eq!(d.pending(), 0);
    }

    fn frames_strategy() -> impl Strategy<Value = Vec<(u64, Vec<u8>)>> {
        prop::collection::vec(
            (
                0u64..=i64::MAX as u64,
                prop::collection::vec(any::<u8>(), 0..300),
            ),
            0..20,
        )
    }

    /// Splits `data` into chunks whose lengths come from `cuts` (cycled).
    fn chunked<'a>(data: &'a [u8], cuts: &'a [usize]) -> Vec<&'a [u8]> {
        let mut out = Vec::new();
        let mut at = 0;
        let mut i = 0;
        while at < data.len() {
            let n = cuts.get(i % cuts.len().max(1)).copied().unwrap_or(1).max(1);
            let end = (at + n).min(data.len());
            out.push(&data[at..end]);
            at = end;
            i += 1;
        }
        out
    }

    proptest! {
        #[test]
        fn transfer_round_trip_in_any_chunking(
            frames in frames_strategy(),
            cuts in prop::collection::vec(1usize..64, 1..10),
        ) {
            let mut wire = BytesMut::new();
            for (off, body) in &frames {
                encode_transfer(*off, body, &mut wire).unwrap();
            }
            let mut buf = BytesMut::new();
            let mut got = Vec::new();
            for chunk in chunked(&wire, &cuts) {
                buf.extend_from_slice(chunk);
                while let Some(f) = decode_transfer(&mut buf, 300).unwrap() {
                    got.push((f.header.offset(), f.body.to_vec()));
                }
            }
            prop_assert!(buf.is_empty());
            prop_assert_eq!(&got, &frames);

            // The borrowed parser agrees.
            let mut rest = &wire[..];
            let mut parsed = Vec::new();
            while let Some((h, body)) = parse_transfer(rest, 300).unwrap() {
                parsed.push((h.offset(), body.to_vec()));
                rest = &rest[TRANSFER_HEADER_SIZE + h.size()..];
            }
            prop_assert!(rest.is_empty());
            prop_assert_eq!(parsed, frames);
        }

        #[test]
        fn reports_round_trip_in_any_chunking(
            values in prop::collection::vec(0u64..=i64::MAX as u64, 1..30),
            cuts in prop::collection::vec(1usize..20, 1..10),
        ) {
            let wire: Vec<u8> = values.iter().flat_map(|v| report_bytes(*v).unwrap()).collect();
            let mut d = ReportDecoder::new();
            let mut buf = BytesMut::new();
            let mut fed = 0usize;
            let (mut last_stream, mut last_buf) = (None, None);
            for chunk in chunked(&wire, &cuts) {
                fed += chunk.len();
                let expect = (fed >= REPORT_SIZE).then(|| values[fed / REPORT_SIZE - 1]);
                if let Some(v) = d.feed(chunk).unwrap() {
                    last_stream = Some(v);
                }
                buf.extend_from_slice(chunk);
                if let Some(v) = decode_reports(&mut buf).unwrap() {
                    last_buf = Some(v);
                }
                prop_assert_eq!(last_stream, expect, "last complete report so far");
                prop_assert_eq!(last_buf, expect);
                prop_assert_eq!(d.pending(), fed % REPORT_SIZE);
            }
            prop_assert_eq!(last_stream, values.last().copied());
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            data in prop::collection::vec(any::<u8>(), 0..200),
            max in 0usize..1000,
        ) {
            let _ = TransferHeader::decode(&data, max);
            let _ = parse_transfer(&data, max);
            let mut buf = BytesMut::from(&data[..]);
            while let Ok(Some(_)) = decode_transfer(&mut buf, max) {}
            let mut buf = BytesMut::from(&data[..]);
            let _ = decode_reports(&mut buf);
            let mut d = ReportDecoder::new();
            for c in data.chunks(3) {
                if d.feed(c).is_err() {
                    break;
                }
            }
        }

        #[test]
        fn header_round_trip(off in 0u64..=i64::MAX as u64, size in 0usize..=MAX_TRANSFER_BODY) {
            let h = TransferHeader::new(off, size).unwrap();
            prop_assert_eq!(TransferHeader::decode(&h.to_bytes(), MAX_TRANSFER_BODY).unwrap(), Some(h));
        }
    }
}
