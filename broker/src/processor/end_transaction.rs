//! END_TRANSACTION (37), RocketMQ's EndTransactionProcessor: a producer commits or rolls
//! back a half message, after its local transaction or when a check-back asks. Also
//! RESUME_CHECK_HALF_MESSAGE (323), mqadmin's way back for a message given up on.
//!
//! Commit stores the real message and then the op record; rollback only the op record;
//! "unknown" (0) does nothing and answers nothing, leaving the half message to the
//! check-back service. Producers send it oneway; a two-way request gets RocketMQ's
//! answer, given once the commit and its op record are as durable as the role requires
//! (RocketMQ answers at once: it stores the final message with `WAIT=false`). A commit
//! stored but not yet durable still gets its op record — asking the producer again would
//! commit it twice — and the answer says which guarantee is missing (FLUSH_DISK_TIMEOUT,
//! FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE). The op record follows the commit in the
//! log, so it can never survive a crash or a failover that the commit did not.

use message::id::OffsetMsgId;
use message::properties;
use message::properties::keys::{PGROUP, REAL_QID, REAL_TOPIC, TRAN_MSG, TRANSACTION_CHECK_TIMES};
use message::record::{self, Record, StoredMessage, sys_flag};
use remoting::protocol::broker::{
    EndTransactionRequestHeader, ResumeCheckHalfMessageRequestHeader,
};
use remoting::server::Reply;
use remoting::{Channel, RemotingCommand, ResponseCode};
use store::{PhyOffset, PutMessageStatus, PutResult};
use tracing::{debug, info};

use super::{Refusal, success};
use crate::broker::Broker;
use crate::properties::SendFlags;
use crate::timer::TimerService;
use crate::transaction::{self, RealQueue};

/// Handles one END_TRANSACTION; no response when RocketMQ sends none (unknown state).
pub fn process(
    broker: &Broker,
    timer: &TimerService,
    channel: &Channel,
    request: &RemotingCommand,
) -> Reply {
    let header: EndTransactionRequestHeader = match request.decode_header() {
        Ok(h) => h,
        Err(e) => return Reply::Now(Refusal::from(e).into_response()),
    };
    if !broker.role().is_master() {
        log_limit::limited!(warn!("end transaction on a slave is forbidden"));
        return Reply::Now(RemotingCommand::response(
            ResponseCode::SlaveNotAvailable,
            None,
        ));
    }
    let from_check = header.from_transaction_check.unwrap_or(false);
    let peer = channel.peer_addr();
    match header.commit_or_rollback {
        sys_flag::TRANSACTION_COMMIT_TYPE => {
            debug!(%peer, from_check, msg_id = %header.msg_id, "commit");
        }
        sys_flag::TRANSACTION_ROLLBACK_TYPE => {
            debug!(%peer, from_check, msg_id = %header.msg_id, remark = ?request.remark(), "rollback");
        }
        sys_flag::TRANSACTION_NOT_TYPE => {
            debug!(%peer, from_check, msg_id = %header.msg_id, remark = ?request.remark(), "transaction still unknown");
            return Reply::Nothing;
        }
        other => {
            debug!(%peer, value = other, "unknown commitOrRollback value");
            return Reply::Nothing;
        }
    }
    let written = match end(broker, timer, &header) {
        Ok(end) => end,
        Err(refusal) => return Reply::Now(refusal.into_response()),
    };
    // Nobody reads a oneway request's answer: nothing to wait for.
    let durable = match written {
        Some(end) if !request.is_oneway() => broker.durable_to(end),
        _ => return Reply::Now(success()),
    };
    let answer = |status: PutMessageStatus| match super::send::status_response(status) {
        (ResponseCode::Success, _) => success(),
        (code, remark) => RemotingCommand::response(code, remark.map(str::to_owned)),
    };
    match durable.ready() {
        Some(status) => Reply::Now(answer(status)),
        None => Reply::later(async move { Some(answer(durable.await)) }),
    }
}

/// Commits or rolls back; returns the end of the last record written (the op record,
/// or the commit when the op could not be written).
fn end(
    broker: &Broker,
    timer: &TimerService,
    header: &EndTransactionRequestHeader,
) -> Result<Option<PhyOffset>, Refusal> {
    let phy = u64::try_from(header.commit_log_offset)
        .map_err(|_| Refusal::system("Find prepared transaction message failed"))?;
    let bytes = broker
        .store
        .look_message_by_offset(phy)
        .ok_or_else(|| Refusal::system("Find prepared transaction message failed"))?;
    let Ok(Some(Record::Message(half))) = record::decode(&bytes) else {
        return Err(Refusal::system("Find prepared transaction message failed"));
    };
    check_half(&half, header)?;
    let props = half.properties_str().into_owned();
    let mut committed = None;
    if header.commit_or_rollback == sys_flag::TRANSACTION_COMMIT_TYPE {
        let real = RealQueue::of(&props)
            .ok_or_else(|| Refusal::system("the prepared message has no REAL_TOPIC / REAL_QID"))?;
        let mut msg =
            transaction::committed_message(&half, bytes.slice_ref(half.body), props.clone(), real);
        let flags = SendFlags::scan(&props);
        let delay = flags.delay_level;
        if crate::timer::is_timer_message(real.topic, &flags, delay) {
            // Committed, a timer message is parked for the wheel (refused, the half stays
            // and is checked back).
            let cleared = properties::without(&props, &[TRAN_MSG, REAL_TOPIC, REAL_QID]);
            if let Some(parked) =
                super::send::park_timer(timer, real.topic, real.queue_id, &cleared)?
            {
                (msg.topic, msg.queue_id, msg.properties) =
                    (parked.topic, parked.queue_id, parked.properties);
            }
        } else if delay > 0 {
            // RocketMQ's store parks a COMMIT message that has a delay level like any
            // other; the property map it re-encodes then has lost TRAN_MSG and REAL_*.
            let cleared = properties::without(&props, &[TRAN_MSG, REAL_TOPIC, REAL_QID]);
            (msg.topic, msg.queue_id, msg.properties) =
                super::send::delay_rewrite(broker, real.topic, real.queue_id, &cleared, delay);
        }
        let result = broker.store.put_message(&msg);
        broker.stats.record_put(&msg.topic, &result);
        final_response(broker, &result)?;
        committed = result.append.map(|a| a.end_offset());
    }
    if broker.metrics.on()
        && let Some(real) = RealQueue::of(&props)
    {
        let age_ms = u64::try_from(crate::clock::now_ms() - half.born_timestamp).unwrap_or(0);
        broker.metrics.transaction_ended(
            real.topic,
            header.commit_or_rollback == sys_flag::TRANSACTION_COMMIT_TYPE,
            std::time::Duration::from_millis(age_ms),
        );
    }
    Ok(write_op(broker, &half).or(committed))
}

/// RocketMQ's `checkPrepareMessage`: the record must be the producer's half message.
fn check_half(
    half: &StoredMessage<'_>,
    header: &EndTransactionRequestHeader,
) -> Result<(), Refusal> {
    let props = half.properties_str();
    if properties::get(&props, PGROUP) != Some(header.producer_group.as_str()) {
        return Err(Refusal::system("The producer group wrong"));
    }
    if i64::try_from(half.queue_offset).ok() != Some(header.tran_state_table_offset) {
        return Err(Refusal::system("The transaction state table offset wrong"));
    }
    if i64::try_from(half.physical_offset).ok() != Some(header.commit_log_offset) {
        return Err(Refusal::system("The commit log offset wrong"));
    }
    Ok(())
}

/// Marks the half message resolved; returns the op record's end. A failed write only
/// means it will be checked back (RocketMQ ignores the failure the same way).
fn write_op(broker: &Broker, half: &StoredMessage<'_>) -> Option<PhyOffset> {
    let op = transaction::op_message(
        half.queue_id,
        half.queue_offset,
        broker.store_host(),
        crate::clock::now_ms(),
    );
    let result = broker.store.put_message(&op);
    if !result.status.is_ok() {
        log_limit::limited!(
            error!(status = %result.status, half_offset = half.queue_offset, "cannot write the transaction op record")
        );
    }
    result.append.map(|a| a.end_offset())
}

/// RocketMQ's `sendFinalMessage` status mapping.
fn final_response(broker: &Broker, result: &PutResult) -> Result<(), Refusal> {
    match result.status.rocketmq() {
        PutMessageStatus::PutOk
        | PutMessageStatus::FlushDiskTimeout
        | PutMessageStatus::FlushSlaveTimeout
        | PutMessageStatus::SlaveNotAvailable => Ok(()),
        PutMessageStatus::CreateMappedFileFailed => {
            Err(Refusal::system("Create mapped file failed."))
        }
        PutMessageStatus::MessageIllegal | PutMessageStatus::PropertiesSizeExceeded => {
            Err(Refusal::new(
                ResponseCode::MessageIllegal,
                format!(
                    "The message is illegal, maybe msg body or properties length not matched. msg body length limit {}B, msg properties length limit 32KB.",
                    broker.store.commit_log().max_message_size()
                ),
            ))
        }
        PutMessageStatus::ServiceNotAvailable => Err(Refusal::new(
            ResponseCode::ServiceNotAvailable,
            "Service not available now.",
        )),
        PutMessageStatus::OsPageCacheBusy => Err(Refusal::system(
            "OS page cache busy, please try another machine",
        )),
        _ => Err(Refusal::system("UNKNOWN_ERROR")),
    }
}

/// RESUME_CHECK_HALF_MESSAGE (323, `mqadmin resumeCheckHalfMessage`): the message with
/// offset id `msgId` (one moved to TRANS_CHECK_MAX_TIME_TOPIC, say) goes back into half
/// queue 0 with `TRANSACTION_CHECK_TIMES` = 0, to be checked again. As in RocketMQ 4.9
/// there is no role check: on a slave the put fails. Answered once the copy is durable.
pub fn resume_check_half_message(broker: &Broker, request: &RemotingCommand) -> Reply {
    let result = match resume(broker, request) {
        Ok(result) => result,
        Err(refusal) => return Reply::Now(refusal.into_response()),
    };
    let durable = broker.durable(&result);
    let answer = |status: PutMessageStatus| {
        if status.is_ok() {
            success()
        } else {
            log_limit::limited!(
                error!(%status, "a message put back into the half queue is not durable")
            );
            Refusal::system("Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.").into_response()
        }
    };
    match durable.ready() {
        Some(status) => Reply::Now(answer(status)),
        None => Reply::later(async move { Some(answer(durable.await)) }),
    }
}

fn resume(broker: &Broker, request: &RemotingCommand) -> Result<PutResult, Refusal> {
    let header: ResumeCheckHalfMessageRequestHeader = request.decode_header()?;
    let unreadable = || {
        Refusal::system(
            "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC.",
        )
    };
    let phy = header
        .msg_id
        .as_deref()
        .and_then(|id| OffsetMsgId::decode(id).ok())
        .ok_or_else(unreadable)?
        .offset;
    let bytes = broker
        .store
        .look_message_by_offset(phy)
        .ok_or_else(unreadable)?;
    let Ok(Some(Record::Message(msg))) = record::decode(&bytes) else {
        return Err(unreadable());
    };
    let props = properties::set(&msg.properties_str(), &[(TRANSACTION_CHECK_TIMES, "0")]);
    let half = transaction::resumed_half(&msg, bytes.slice_ref(msg.body), props);
    let result = broker.store.put_message(&half);
    broker.stats.record_put(&half.topic, &result);
    if !result.status.is_ok() {
        log_limit::limited!(
            error!(status = %result.status, "cannot put a message back into the half queue")
        );
        return Err(Refusal::system(
            "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.",
        ));
    }
    info!(
        real_topic = properties::get(&half.properties, REAL_TOPIC).unwrap_or("-"),
        "message put back into the half queue"
    );
    Ok(result)
}
