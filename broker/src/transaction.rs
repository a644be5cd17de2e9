//! Transactional messages (RocketMQ's `broker/transaction/queue`): the half message a
//! prepared send becomes, the message a commit stores, the op record that marks a half
//! message resolved, and the copies the check-back service ([`check`]) writes.
//!
//! Everything lives in ordinary topics of the store, as in RocketMQ, so it is replicated,
//! recovered and cleaned like any other message and a promoted slave has it all:
//! - `RMQ_SYS_TRANS_HALF_TOPIC` queue 0: half messages, the real topic and queue in
//!   `REAL_TOPIC` / `REAL_QID`, transaction bits cleared (so they take a queue offset
//!   there and are invisible in the real topic).
//! - `RMQ_SYS_TRANS_OP_HALF_TOPIC` (same queue id): one op record per commit or
//!   rollback, tag `d`, body = the half message's queue offset in decimal.
//! - the consumer offsets of the system group `CID_SYS_RMQ_TRANS` on both topics: how far
//!   the check-back service has got.
//!
//! The builders here are pure (a stored record in, the message to put out); the
//! END_TRANSACTION handler is `processor::end_transaction`.

use std::net::SocketAddr;

use bytes::Bytes;
use message::properties;
use message::properties::keys::{REAL_QID, REAL_TOPIC, TAGS, WAIT};
use message::record::{self, RecordFields, StoredMessage, sys_flag};
use remoting::protocol::constants::system;
use store::MessageInner;

pub use crate::properties::RealQueue;

pub mod check;

/// The group whose consumer offsets keep the check-back progress (`MixAll.CID_SYS_RMQ_TRANS`).
pub const CID_SYS_RMQ_TRANS: &str = "CID_SYS_RMQ_TRANS";
/// Tag of an op record that removes a half message (`TransactionalMessageUtil.REMOVETAG`).
pub const REMOVE_TAG: &str = "d";

/// A prepared send as it is stored (RocketMQ's `parseHalfMessageInner`): topic and queue
/// kept in `REAL_TOPIC` / `REAL_QID`, moved to queue 0 of the half topic, transaction
/// bits of the sysFlag cleared.
#[must_use]
pub fn half_message(mut msg: MessageInner) -> MessageInner {
    msg.properties = properties::set(
        &msg.properties,
        &[
            (REAL_TOPIC, msg.topic.as_str()),
            (REAL_QID, &msg.queue_id.to_string()),
        ],
    );
    msg.sys_flag &= !sys_flag::TRANSACTION_MASK;
    msg.topic = system::TRANS_HALF_TOPIC.to_owned();
    msg.queue_id = 0;
    msg
}

/// The message a commit stores (RocketMQ's `endMessageTransaction`): the half message's
/// body, flag, born time and host, store host and reconsume times, in its real topic and
/// queue, sysFlag COMMIT, `preparedTransactionOffset` = the half message's CommitLog
/// offset. Its properties are the half message's as stored: RocketMQ 4.9 clears
/// `TRAN_MSG`, `REAL_TOPIC` and `REAL_QID` from the property map only after it has
/// encoded the string it stores, so consumers see all three (and the Java consumer sets
/// the transaction id from `TRAN_MSG`).
#[must_use]
pub fn committed_message(
    half: &StoredMessage<'_>,
    body: Bytes,
    properties: String,
    real: RealQueue<'_>,
) -> MessageInner {
    MessageInner {
        topic: real.topic.to_owned(),
        queue_id: real.queue_id,
        flag: half.flag,
        body,
        properties,
        sys_flag: (half.sys_flag & !sys_flag::TRANSACTION_MASK) | sys_flag::TRANSACTION_COMMIT_TYPE,
        born_timestamp: half.born_timestamp,
        born_host: half.born_host,
        store_host: half.store_host,
        reconsume_times: half.reconsume_times,
        prepared_transaction_offset: i64::try_from(half.physical_offset).unwrap_or(i64::MAX),
    }
}

/// The op record that resolves the half message at `half_queue_offset` of half queue
/// `half_queue_id` (RocketMQ's `addRemoveTagInTransactionOp`): same queue id in the op
/// topic, tag `d`, body = the offset in decimal, born and stored by this broker.
#[must_use]
pub fn op_message(
    half_queue_id: i32,
    half_queue_offset: u64,
    store_host: SocketAddr,
    now_ms: i64,
) -> MessageInner {
    MessageInner {
        topic: system::TRANS_OP_HALF_TOPIC.to_owned(),
        queue_id: half_queue_id,
        flag: 0,
        body: Bytes::from(half_queue_offset.to_string()),
        properties: properties::build([(TAGS, REMOVE_TAG), (WAIT, "true")]),
        sys_flag: 0,
        born_timestamp: now_ms,
        born_host: store_host,
        store_host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// The half queue offset an op record resolves: its body in decimal, if its tag is `d`.
#[must_use]
pub fn op_target(op: &StoredMessage<'_>) -> Option<u64> {
    let props = op.properties_str();
    if properties::get(&props, TAGS) != Some(REMOVE_TAG) {
        return None;
    }
    std::str::from_utf8(op.body).ok()?.trim().parse().ok()
}

/// A copy of a stored half message with new properties, put back at the end of the half
/// queue before each check-back (RocketMQ's `renewHalfMessageInner`). Unlike RocketMQ,
/// which loses them here, the flag and reconsume times are kept.
#[must_use]
pub fn renewed_half(half: &StoredMessage<'_>, body: Bytes, properties: String) -> MessageInner {
    MessageInner {
        topic: half.topic.to_owned(),
        queue_id: half.queue_id,
        flag: half.flag,
        body,
        properties,
        sys_flag: half.sys_flag,
        born_timestamp: half.born_timestamp,
        born_host: half.born_host,
        store_host: half.store_host,
        reconsume_times: half.reconsume_times,
        prepared_transaction_offset: 0,
    }
}

/// A half message checked `transactionCheckMax` times (or older than the CommitLog keeps
/// files), moved to `TRANS_CHECK_MAX_TIME_TOPIC` queue 0 as 4.9.8's
/// `DefaultTransactionalMessageCheckListener.resolveDiscardMsg` does.
#[must_use]
pub fn check_max_message(
    half: &StoredMessage<'_>,
    body: Bytes,
    properties: String,
) -> MessageInner {
    MessageInner {
        topic: system::TRANS_CHECK_MAX_TIME_TOPIC.to_owned(),
        queue_id: 0,
        ..renewed_half(half, body, properties)
    }
}

/// A message (typically one moved to TRANS_CHECK_MAX_TIME_TOPIC) put back into half queue
/// 0 to be checked again from scratch (RESUME_CHECK_HALF_MESSAGE); `properties` carry
/// `TRANSACTION_CHECK_TIMES` = 0.
#[must_use]
pub fn resumed_half(msg: &StoredMessage<'_>, body: Bytes, properties: String) -> MessageInner {
    MessageInner {
        topic: system::TRANS_HALF_TOPIC.to_owned(),
        queue_id: 0,
        ..renewed_half(msg, body, properties)
    }
}

/// Where a renewed half message landed: the offsets the producer echoes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renewed {
    /// Its half queue offset (`tranStateTableOffset`).
    pub queue_offset: u64,
    /// Its CommitLog offset.
    pub commit_log_offset: u64,
    /// Its offset message id.
    pub offset_msg_id: String,
}

/// The body of CHECK_TRANSACTION_STATE: the renewed half message in the stored-record
/// encoding (`MessageDecoder.encode`) with its real topic and queue restored, the
/// renewed copy's offsets, and `properties`. `None` if a field is too long to encode.
#[must_use]
pub fn check_body(
    half: &StoredMessage<'_>,
    properties: &str,
    real: RealQueue<'_>,
    renewed: &Renewed,
) -> Option<Vec<u8>> {
    let fields = RecordFields {
        queue_id: real.queue_id,
        queue_offset: renewed.queue_offset,
        physical_offset: renewed.commit_log_offset,
        topic: real.topic.as_bytes(),
        properties: [properties.as_bytes(), &[], &[]],
        ..half.fields()
    };
    let mut buf = vec![0u8; fields.encoded_len()?];
    record::encode(&mut buf, &fields);
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use message::record::Record;

    fn host() -> SocketAddr {
        "127.0.0.1:10911".parse().unwrap()
    }

    fn prepared() -> MessageInner {
        MessageInner {
            topic: "T".into(),
            queue_id: 3,
            flag: 7,
            body: Bytes::from_static(b"hello"),
            properties: "TRAN_MSG\u{1}true\u{2}PGROUP\u{1}pg\u{2}UNIQ_KEY\u{1}u1".into(),
            sys_flag: sys_flag::TRANSACTION_PREPARED_TYPE | sys_flag::COMPRESSED,
            born_timestamp: 1000,
            born_host: "127.0.0.1:5555".parse().unwrap(),
            store_host: host(),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        }
    }

    /// The stored encoding of `m` at `phy` / `queue_offset`.
    fn stored(m: &MessageInner, phy: u64, queue_offset: u64) -> Vec<u8> {
        let f = RecordFields {
            body_crc: record::body_crc(&m.body),
            queue_id: m.queue_id,
            flag: m.flag,
            queue_offset,
            physical_offset: phy,
            sys_flag: m.sys_flag,
            born_timestamp: m.born_timestamp,
            born_host: m.born_host,
            store_timestamp: 2000,
            store_host: m.store_host,
            reconsume_times: m.reconsume_times,
            prepared_transaction_offset: m.prepared_transaction_offset,
            body: &m.body,
            topic: m.topic.as_bytes(),
            properties: [m.properties.as_bytes(), &[], &[]],
        };
        let mut buf = vec![0; f.encoded_len().unwrap()];
        record::encode(&mut buf, &f);
        buf
    }

    fn decode(buf: &[u8]) -> StoredMessage<'_> {
        match record::decode(buf).unwrap().unwrap() {
            Record::Message(m) => m,
            Record::Blank { .. } => panic!("blank"),
        }
    }

    #[test]
    fn half_then_commit() {
        let half = half_message(prepared());
        assert_eq!(half.topic, system::TRANS_HALF_TOPIC);
        assert_eq!(half.queue_id, 0);
        assert_eq!(half.sys_flag, sys_flag::COMPRESSED);
        let real = RealQueue::of(&half.properties).unwrap();
        assert_eq!(
            real,
            RealQueue {
                topic: "T",
                queue_id: 3
            }
        );

        let bytes = stored(&half, 4096, 9);
        let h = decode(&bytes);
        let props = h.properties_str().into_owned();
        let c = committed_message(&h, Bytes::copy_from_slice(h.body), props.clone(), real);
        assert_eq!((c.topic.as_str(), c.queue_id, c.flag), ("T", 3, 7));
        assert_eq!(
            c.sys_flag,
            sys_flag::COMPRESSED | sys_flag::TRANSACTION_COMMIT_TYPE
        );
        assert_eq!(c.prepared_transaction_offset, 4096);
        // As RocketMQ 4.9 stores it: TRAN_MSG and REAL_* are still there.
        assert_eq!(c.properties, props);
        assert!(c.properties.contains("TRAN_MSG\u{1}true"));
    }

    #[test]
    fn op_records_name_the_half_offset() {
        let op = op_message(0, 42, host(), 5);
        assert_eq!(op.topic, system::TRANS_OP_HALF_TOPIC);
        let bytes = stored(&op, 0, 0);
        assert_eq!(op_target(&decode(&bytes)), Some(42));
        let mut other = op.clone();
        other.properties = "TAGS\u{1}x".into();
        assert_eq!(op_target(&decode(&stored(&other, 0, 0))), None);
        other.properties = "TAGS\u{1}d".into();
        other.body = Bytes::from_static(b"forty-two");
        assert_eq!(op_target(&decode(&stored(&other, 0, 0))), None);
    }

    #[test]
    fn check_body_restores_the_real_queue() {
        let half = half_message(prepared());
        let bytes = stored(&half, 100, 1);
        let h = decode(&bytes);
        let props = properties::set(&half.properties, &[("TRANSACTION_CHECK_TIMES", "1")]);
        let renewed = Renewed {
            queue_offset: 5,
            commit_log_offset: 900,
            offset_msg_id: String::new(),
        };
        let body = check_body(&h, &props, RealQueue::of(&props).unwrap(), &renewed).unwrap();
        let m = decode(&body);
        assert_eq!((m.topic, m.queue_id), ("T", 3));
        assert_eq!((m.queue_offset, m.physical_offset), (5, 900));
        assert_eq!(m.body, b"hello");
        assert!(m.properties_str().contains("TRANSACTION_CHECK_TIMES\u{1}1"));
        m.verify_crc().unwrap();
    }

    #[test]
    fn real_queue_needs_both_properties() {
        assert!(RealQueue::of("REAL_TOPIC\u{1}T").is_none());
        assert!(RealQueue::of("REAL_TOPIC\u{1}T\u{2}REAL_QID\u{1}x").is_none());
    }
}
