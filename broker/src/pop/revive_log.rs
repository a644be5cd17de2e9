//! Writing the revive log (`rmq_sys_REVIVE_LOG_<cluster>`) as RocketMQ does: each record
//! a message of the revive queue with tag `ck`, `ack` or `bAck`, its JSON as the body,
//! `TIMER_DELIVER_MS` the time it should be read at and `UNIQ_KEY` RocketMQ's unique id
//! of it. A record due later is parked in the timer wheel like any timer message (so
//! the log fills in time order); one due already goes straight to its queue.

use bytes::Bytes;
use message::properties;
use message::properties::keys::{TAGS, TIMER_DELIVER_MS, UNIQ_KEY};
use remoting::protocol::pop::{ACK_TAG, BATCH_ACK_TAG, CK_TAG, revive_topic};
use store::{MessageInner, PutMessageStatus};

use super::records::{AckRecord, CheckPoint};
use crate::broker::Broker;
use crate::durability::Durable;
use crate::timer::TimerService;

/// What RocketMQ subtracts from a checkpoint's revive time to deliver it
/// (`PopAckConstants.ackTimeInterval`): the checkpoint is read a second before its acks.
pub const CK_AHEAD_MS: i64 = 1000;

/// Why a record was not written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReviveLogError {
    /// The timer refused it (wheel off, too far ahead).
    #[error("{0}")]
    Timer(String),
    /// The store did not take it.
    #[error("revive log put failed: {}", .0.rocketmq().as_str())]
    Put(PutMessageStatus),
}

/// A record appended to the log: wait on it for the durability the role requires.
#[derive(Debug)]
pub struct Written {
    /// Completes when the record is as durable as the role requires.
    pub durable: Durable,
    /// The CommitLog offset just past the record.
    pub end: u64,
}

/// Appends checkpoint `ck` to revive queue `revive_qid`, to be read a second before its
/// revive time.
///
/// # Errors
/// The timer refused it or the store did not take it.
pub fn put_checkpoint(
    broker: &Broker,
    timer: &TimerService,
    ck: &CheckPoint,
    revive_qid: i32,
) -> Result<Written, ReviveLogError> {
    let uniq = format!(
        "{}@{}@{}@{}@{}@{}@{CK_TAG}",
        ck.topic,
        ck.queue_id,
        ck.start_offset,
        ck.group,
        ck.pop_time,
        ck.broker_name.as_deref().unwrap_or("null")
    );
    let written = put(
        broker,
        timer,
        revive_qid,
        CK_TAG,
        ck.to_json(),
        ck.revive_time() - CK_AHEAD_MS,
        &uniq,
    );
    broker
        .metrics
        .revive_put(&ck.group, &ck.topic, true, put_status(&written));
    written
}

/// The store's answer to a revive-log put, for its metrics.
fn put_status(written: &Result<Written, ReviveLogError>) -> PutMessageStatus {
    match written {
        Ok(_) => PutMessageStatus::PutOk,
        Err(ReviveLogError::Put(status)) => *status,
        Err(_) => PutMessageStatus::ServiceNotAvailable,
    }
}

/// Appends `ack` (one offset, or a batch with `aol`) to revive queue `revive_qid`, to be
/// read at `deliver_ms` (the checkpoint's revive time).
///
/// # Errors
/// The timer refused it or the store did not take it.
pub fn put_ack(
    broker: &Broker,
    timer: &TimerService,
    ack: &AckRecord,
    revive_qid: i32,
    deliver_ms: i64,
) -> Result<Written, ReviveLogError> {
    // RocketMQ's batch acks carry the single-ack id form too (its batch id is
    // overwritten before the put).
    let uniq = format!(
        "{}@{}@{}@{}@{}@{}@{ACK_TAG}",
        ack.topic,
        ack.queue_id,
        ack.ack_offset,
        ack.group,
        ack.pop_time,
        ack.broker_name.as_deref().unwrap_or("null")
    );
    let tag = if ack.ack_offset_list.is_some() {
        BATCH_ACK_TAG
    } else {
        ACK_TAG
    };
    let written = put(
        broker,
        timer,
        revive_qid,
        tag,
        ack.to_json(),
        deliver_ms,
        &uniq,
    );
    broker
        .metrics
        .revive_put(&ack.group, &ack.topic, false, put_status(&written));
    written
}

fn put(
    broker: &Broker,
    timer: &TimerService,
    revive_qid: i32,
    tag: &str,
    body: Vec<u8>,
    deliver_ms: i64,
    uniq: &str,
) -> Result<Written, ReviveLogError> {
    let topic = revive_topic(&broker.config().broker_cluster_name);
    let props = properties::build([
        (TAGS, tag),
        (TIMER_DELIVER_MS, deliver_ms.to_string().as_str()),
        (UNIQ_KEY, uniq),
    ]);
    let now = crate::clock::now_ms();
    // The revive log's own records are never refused for a congested slot: a pop or an
    // ack failing would only move the load elsewhere.
    let parked = crate::timer::park(timer.settings(), &topic, revive_qid, &props, now, |_| 0)
        .map_err(|r| ReviveLogError::Timer(r.remark))?;
    let (topic, queue_id, properties) = match parked {
        Some(p) => (p.topic, p.queue_id, p.properties),
        None => (topic, revive_qid, props),
    };
    let host = broker.store_host();
    let msg = MessageInner {
        topic,
        queue_id,
        flag: 0,
        body: Bytes::from(body),
        properties,
        sys_flag: 0,
        born_timestamp: now,
        born_host: host,
        store_host: host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    };
    let result = broker.store.put_message(&msg);
    let Some(end) = result
        .append
        .as_ref()
        .filter(|_| result.status.is_ok())
        .map(|a| a.end_offset().0)
    else {
        return Err(ReviveLogError::Put(result.status));
    };
    Ok(Written {
        durable: broker.durable(&result),
        end,
    })
}
