//! What a put takes: one message as the broker prepared it ([`MessageInner`], RocketMQ's
//! `MessageExtBrokerInner`), or a client batch as received ([`MessageBatch`]), whose body
//! the store splits itself (with [`message::batch::decode`]) so the broker stays simple.

use std::net::SocketAddr;

use bytes::Bytes;

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

impl MessageInner {
    /// A copy of the stored message `stored` (whose record is `record`) for `topic` /
    /// `queue_id` with `properties`: how parked messages (delay levels, timers) are put
    /// into their real queue.
    #[must_use]
    pub fn copy_of(
        stored: &message::record::StoredMessage<'_>,
        record: &Bytes,
        topic: &str,
        queue_id: i32,
        properties: String,
    ) -> Self {
        MessageInner {
            topic: topic.to_owned(),
            queue_id,
            flag: stored.flag,
            body: record.slice_ref(stored.body),
            properties,
            sys_flag: stored.sys_flag,
            born_timestamp: stored.born_timestamp,
            born_host: stored.born_host,
            store_host: stored.store_host,
            reconsume_times: stored.reconsume_times,
            prepared_transaction_offset: stored.prepared_transaction_offset,
        }
    }
}

/// A client batch (`SEND_BATCH_MESSAGE`): header fields shared by all entries plus the
/// raw batch body, which holds entries in the client batch encoding
/// ([`message::batch`]).
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
    /// Batch body in the client batch encoding ([`message::batch`]).
    pub body: Bytes,
    /// Properties appended to each entry's own.
    pub properties: String,
}
