//! The property names we read or write (RocketMQ `MessageConst`), in one list, so a
//! name is spelled once whichever crate looks at it.

/// `TAGS`: the message's tag; its hash is the consume-queue tagsCode ([`crate::tags`]).
pub const TAGS: &str = "TAGS";
/// `KEYS`: space-separated keys, indexed by the store.
pub const KEYS: &str = "KEYS";
/// `UNIQ_KEY`: the id the producer made ([`crate::id::UniqIdGenerator`]), indexed.
pub const UNIQ_KEY: &str = "UNIQ_KEY";
/// `WAIT`: "false" means the producer does not wait for flush/replication.
pub const WAIT: &str = "WAIT";
/// `DELAY`: delay level.
pub const DELAY: &str = "DELAY";
/// `TIMER_DELIVER_MS`: a 5.x timer message's delivery time (epoch ms).
pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
/// `TIMER_DELAY_SEC`: a 5.x timer message's delay from now (seconds).
pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
/// `TIMER_DELAY_MS`: a 5.x timer message's delay from now (ms).
pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
/// `TIMER_OUT_MS`: set by the broker on a message parked in the timer wheel.
pub const TIMER_OUT_MS: &str = "TIMER_OUT_MS";
/// `TIMER_ENQUEUE_MS`: when the timer wheel took a delivered timer message in.
pub const TIMER_ENQUEUE_MS: &str = "TIMER_ENQUEUE_MS";
/// `TIMER_DEQUEUE_MS`: when the timer wheel delivered it.
pub const TIMER_DEQUEUE_MS: &str = "TIMER_DEQUEUE_MS";
/// `TIMER_ROLL_TIMES`: how often a far timer was parked again for the next window.
pub const TIMER_ROLL_TIMES: &str = "TIMER_ROLL_TIMES";
/// `TIMER_DEL_UNIQKEY`: marks a timer message that recalls (deletes) the one of
/// `<real topic>+<UNIQ_KEY>` due at the same time.
pub const TIMER_DEL_UNIQKEY: &str = "TIMER_DEL_UNIQKEY";
/// `REAL_TOPIC`: the topic of a delayed or half message.
pub const REAL_TOPIC: &str = "REAL_TOPIC";
/// `REAL_QID`: the queue of a delayed or half message.
pub const REAL_QID: &str = "REAL_QID";
/// `TRAN_MSG`: "true" on transactional half messages.
pub const TRAN_MSG: &str = "TRAN_MSG";
/// `PGROUP`: producer group of a transactional message.
pub const PGROUP: &str = "PGROUP";
/// `CLUSTER`: added by the broker to every message.
pub const CLUSTER: &str = "CLUSTER";
/// `RETRY_TOPIC`: original topic of a retried message.
pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
/// `ORIGIN_MESSAGE_ID`: id of the message a retry copies.
pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
/// `MAX_RECONSUME_TIMES`.
pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
/// `RECONSUME_TIME`.
pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
/// `MSG_REGION` (also a send response extField).
pub const MSG_REGION: &str = "MSG_REGION";
/// `TRACE_ON` (also a send response extField).
pub const TRACE_ON: &str = "TRACE_ON";
/// `TRAN_PREPARED_QUEUE_OFFSET`: on a half message copied back during its immunity
/// time, the queue offset of the original half message.
pub const TRAN_PREPARED_QUEUE_OFFSET: &str = "TRAN_PREPARED_QUEUE_OFFSET";
/// `TRANSACTION_CHECK_TIMES`: check-backs of a half message so far.
pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
/// `CHECK_IMMUNITY_TIME_IN_SECONDS`: a producer's own first check-back delay (seconds).
pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
/// `MIN_OFFSET`: added client-side after a pull.
pub const MIN_OFFSET: &str = "MIN_OFFSET";
/// `MAX_OFFSET`: added client-side after a pull.
pub const MAX_OFFSET: &str = "MAX_OFFSET";
/// `REPLY_TO_CLIENT`: on a request (`DefaultMQProducer.request`), the requester's client
/// id; copied onto its reply, whose broker pushes it to that client.
pub const REPLY_TO_CLIENT: &str = "REPLY_TO_CLIENT";
/// `CORRELATION_ID`: pairs a reply with its request.
pub const CORRELATION_ID: &str = "CORRELATION_ID";
/// `PUSH_REPLY_TIME`: when the broker pushed a reply to its requester.
pub const PUSH_REPLY_TIME: &str = "PUSH_REPLY_TIME";
/// `POP_CK`: a popped message's extraInfo (its receipt), set by the broker on messages
/// of a pop retry topic and by the client on the others.
pub const POP_CK: &str = "POP_CK";
/// `1ST_POP_TIME`: when a message was popped the first time (epoch ms), set by the
/// revive service on its retry copy, and by the client if absent.
pub const FIRST_POP_TIME: &str = "1ST_POP_TIME";
/// `__SHARDINGKEY`: a FIFO message's message group (what keeps it in order with others).
pub const SHARDING_KEY: &str = "__SHARDINGKEY";
/// `_SYS_MSG_PRIORITY_` (RocketMQ 5.4): a priority message's priority, ≥ 0.
pub const PRIORITY: &str = "_SYS_MSG_PRIORITY_";
/// `__BORNHOST`: where a 5.x (gRPC) message was born, `ip:port`, set by the proxy.
pub const BORN_HOST: &str = "__BORNHOST";
/// `BORN_TIMESTAMP`: when a 5.x (gRPC) message was built by its producer (epoch ms).
pub const BORN_TIMESTAMP: &str = "BORN_TIMESTAMP";
/// `TRACE_CONTEXT`: the producer's trace context (OpenTelemetry), passed through.
pub const TRACE_CONTEXT: &str = "TRACE_CONTEXT";
/// `TRANSFER_FLAG`: set on messages a broker forwards; their type is not checked again.
pub const TRANSFER_FLAG: &str = "TRANSFER_FLAG";

/// The names RocketMQ keeps for itself (`MessageConst.STRING_HASH_SET`): a 5.x producer's
/// user property may not use one. `__SHARDINGKEY` and `TRACE_CONTEXT` are not among them.
pub const RESERVED: [&str; 51] = [
    TRACE_ON,
    MSG_REGION,
    KEYS,
    TAGS,
    WAIT,
    DELAY,
    RETRY_TOPIC,
    REAL_TOPIC,
    REAL_QID,
    TRAN_MSG,
    PGROUP,
    MIN_OFFSET,
    MAX_OFFSET,
    "BUYER_ID",
    ORIGIN_MESSAGE_ID,
    TRANSFER_FLAG,
    "CORRECTION_FLAG",
    "MQ2_FLAG",
    RECONSUME_TIME,
    UNIQ_KEY,
    MAX_RECONSUME_TIMES,
    "CONSUME_START_TIME",
    POP_CK,
    "POP_CK_OFFSET",
    FIRST_POP_TIME,
    TRAN_PREPARED_QUEUE_OFFSET,
    "DUP_INFO",
    "EXTEND_UNIQ_INFO",
    "INSTANCE_ID",
    CORRELATION_ID,
    REPLY_TO_CLIENT,
    "TTL",
    "ARRIVE_TIME",
    PUSH_REPLY_TIME,
    CLUSTER,
    "MSG_TYPE",
    "INNER_MULTI_QUEUE_OFFSET",
    TIMER_DELAY_MS,
    TIMER_DELAY_SEC,
    TIMER_DELIVER_MS,
    TIMER_ENQUEUE_MS,
    TIMER_DEQUEUE_MS,
    TIMER_ROLL_TIMES,
    TIMER_OUT_MS,
    TIMER_DEL_UNIQKEY,
    "TIMER_DELAY_LEVEL",
    BORN_HOST,
    BORN_TIMESTAMP,
    "DLQ_ORIGIN_TOPIC",
    "DLQ_ORIGIN_MESSAGE_ID",
    "__CRC32#",
];
