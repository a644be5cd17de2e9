//! What a put takes: one message as the broker prepared it ([`MessageInner`], RocketMQ's
//! `MessageExtBrokerInner`), or a client batch as received ([`MessageBatch`]), whose body
//! the store splits itself so the broker stays simple.

use std::net::SocketAddr;
use std::ops::Range;

use bytes::Bytes;

use crate::record::{self, properties::PROPERTY_SEPARATOR};

/// One message to store. The store fills in CRC, queue offset, physical offset and
/// store timestamp; host bits of `sys_flag` are set from the address families.
#[derive(Debug, Clone)]
pub struct MessageInner {
    /// Topic (UTF-8; > 127 bytes is written with the v2 magic).
    pub topic: String,
    /// Queue id.
    pub queue_id: i32,
    /// User flag from the producer.
    pub flag: i32,
    /// Body as received (possibly compressed by the client).
    pub body: Bytes,
    /// Properties string (`k\x01v\x02...`), as it should be stored.
    pub properties: String,
    /// `MessageSysFlag` bits (compression, transaction type).
    pub sys_flag: i32,
    /// Producer timestamp (ms).
    pub born_timestamp: i64,
    /// Producer address.
    pub born_host: SocketAddr,
    /// This broker's address (`brokerIP1:listenPort`).
    pub store_host: SocketAddr,
    /// Delivery attempts so far.
    pub reconsume_times: i32,
    /// For commit/rollback records: offset of the half message.
    pub prepared_transaction_offset: i64,
}

/// A client batch (`SEND_BATCH_MESSAGE`): header fields shared by all entries plus the
/// raw batch body, which holds entries in the client batch encoding:
///
/// | size | field |
/// |---|---|
/// | 4 | TOTALSIZE (not relied upon) |
/// | 4 | MAGICCODE (0) |
/// | 4 | BODYCRC (0; recomputed) |
/// | 4 | FLAG |
/// | 4 + n | BODY: i32 length + bytes |
/// | 2 + n | PROPERTIES: i16 length + string |
///
/// Each entry becomes one record with the batch's queue id, sysFlag, hosts, timestamps
/// and reconsume times; its properties are the entry's, then a separator if needed,
/// then `properties` (e.g. `CLUSTER`), as RocketMQ 4.9 does. Queue offsets are
/// consecutive and the whole batch lands in one file.
#[derive(Debug, Clone)]
pub struct MessageBatch {
    /// Topic of every entry.
    pub topic: String,
    /// Queue id of every entry.
    pub queue_id: i32,
    /// `MessageSysFlag` (transactions are not allowed in batches).
    pub sys_flag: i32,
    /// Producer timestamp (ms).
    pub born_timestamp: i64,
    /// Producer address.
    pub born_host: SocketAddr,
    /// This broker's address.
    pub store_host: SocketAddr,
    /// Reconsume times for every entry.
    pub reconsume_times: i32,
    /// Batch body in the client batch encoding.
    pub body: Bytes,
    /// Properties appended to each entry's own.
    pub properties: String,
}

/// One entry of a parsed batch body: ranges into the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BatchEntry {
    pub flag: i32,
    pub body: Range<usize>,
    pub properties: Range<usize>,
    pub body_crc: u32,
    /// Whether a separator goes between the entry's and the batch's properties.
    pub separator: bool,
}

/// Why a batch body was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchError {
    /// An entry's lengths run past the body.
    Malformed,
    /// An entry's properties plus the batch's exceed 32767 bytes.
    PropertiesTooLong,
    /// No entries.
    Empty,
}

/// Splits a batch body into entries (sans-io), computing each body CRC.
pub(crate) fn parse_batch(
    body: &[u8],
    batch_props_len: usize,
) -> Result<Vec<BatchEntry>, BatchError> {
    let mut entries = Vec::new();
    let mut pos = 0usize;
    let field = |pos: usize, n: usize| {
        pos.checked_add(n)
            .and_then(|end| body.get(pos..end))
            .ok_or(BatchError::Malformed)
    };
    while pos < body.len() {
        // TOTALSIZE, MAGICCODE, BODYCRC are skipped, as RocketMQ does.
        let flag = i32::from_be_bytes(
            field(pos + 12, 4)?
                .try_into()
                .map_err(|_| BatchError::Malformed)?,
        );
        let body_len = i32::from_be_bytes(
            field(pos + 16, 4)?
                .try_into()
                .map_err(|_| BatchError::Malformed)?,
        );
        let body_len = usize::try_from(body_len).map_err(|_| BatchError::Malformed)?;
        let body_start = pos + 20;
        let b = field(body_start, body_len)?;
        let props_pos = body_start + body_len;
        let props_len = i16::from_be_bytes(
            field(props_pos, 2)?
                .try_into()
                .map_err(|_| BatchError::Malformed)?,
        );
        let props_len = usize::try_from(props_len).map_err(|_| BatchError::Malformed)?;
        let props_start = props_pos + 2;
        let p = field(props_start, props_len)?;
        let separator =
            props_len > 0 && batch_props_len > 0 && p.last() != Some(&(PROPERTY_SEPARATOR as u8));
        if props_len + usize::from(separator) + batch_props_len > record::MAX_PROPERTIES_LEN {
            return Err(BatchError::PropertiesTooLong);
        }
        entries.push(BatchEntry {
            flag,
            body: body_start..body_start + body_len,
            properties: props_start..props_start + props_len,
            body_crc: record::body_crc(b),
            separator,
        });
        pos = props_start + props_len;
    }
    if entries.is_empty() {
        return Err(BatchError::Empty);
    }
    Ok(entries)
}

/// Encodes entries in the client batch format (what a producer sends); for tests and
/// tools.
#[must_use]
pub fn encode_batch_body<'a>(
    entries: impl IntoIterator<Item = (i32, &'a [u8], &'a str)>,
) -> Vec<u8> {
    let mut out = Vec::new();
    for (flag, body, props) in entries {
        let total = 22 + body.len() + props.len();
        out.extend_from_slice(&(total as i32).to_be_bytes());
        out.extend_from_slice(&0i32.to_be_bytes());
        out.extend_from_slice(&0i32.to_be_bytes());
        out.extend_from_slice(&flag.to_be_bytes());
        out.extend_from_slice(&(body.len() as i32).to_be_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(&(props.len() as i16).to_be_bytes());
        out.extend_from_slice(props.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_roundtrip_and_separator_rule() {
        let body = encode_batch_body([
            (1, &b"one"[..], "TAGS\u{1}a"),
            (2, &b""[..], ""),
            (3, &b"3"[..], "K\u{1}v\u{2}"),
        ]);
        let e = parse_batch(&body, 10).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(&body[e[0].body.clone()], b"one");
        assert_eq!(e[0].flag, 1);
        assert!(e[0].separator);
        assert!(!e[1].separator, "no entry properties, no separator");
        assert!(!e[2].separator, "already ends with a separator");
        assert_eq!(e[0].body_crc, record::body_crc(b"one"));
        assert!(!parse_batch(&body, 0).unwrap()[0].separator);
    }

    #[test]
    fn malformed_batches_are_refused() {
        let body = encode_batch_body([(1, &b"one"[..], "")]);
        for cut in 1..body.len() {
            assert_eq!(
                parse_batch(&body[..cut], 0),
                Err(BatchError::Malformed),
                "cut {cut}"
            );
        }
        assert_eq!(parse_batch(&[], 0), Err(BatchError::Empty));
        let mut neg = body.clone();
        neg[16..20].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(parse_batch(&neg, 0), Err(BatchError::Malformed));
    }
}
