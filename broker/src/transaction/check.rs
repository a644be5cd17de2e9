//! The check-back service of a master (RocketMQ's TransactionalMessageCheckService and
//! `TransactionalMessageServiceImpl.check`): every `transactionCheckInterval` it reads
//! each half queue from the progress of `CID_SYS_RMQ_TRANS`, skips half messages an op
//! record resolves, and asks a producer of the group about each one older than
//! `transactionTimeOut` (or its own `CHECK_IMMUNITY_TIME_IN_SECONDS`).
//!
//! Asking means: put a copy of the half message back at the end of the half queue with
//! `TRANSACTION_CHECK_TIMES` + 1, then send CHECK_TRANSACTION_STATE (oneway) about the
//! copy to one live channel of the producer group in `PGROUP`; the producer answers with
//! END_TRANSACTION naming the copy's offsets. The original is passed over for good, so
//! progress only ever moves forward and a restart does not ask again about anything
//! behind it. After `transactionCheckMax` checks a half message is moved to
//! `TRANS_CHECK_MAX_TIME_TOPIC` instead (RocketMQ 4.9.8's choice; older 4.x dropped it).
//!
//! A half message with its own `CHECK_IMMUNITY_TIME_IN_SECONDS` is copied back (with
//! `TRAN_PREPARED_QUEUE_OFFSET` naming the original) each round until that time is up; as
//! in RocketMQ, an op record for the original only cancels a copy when both are read in
//! the same round, so a commit that comes in during the immunity time may still be
//! checked back once after it.
//!
//! Two departures from RocketMQ, both on its odd corners: all op records up to the op
//! queue's end are read before a half message is judged (RocketMQ reads them in batches
//! of 32 and may judge early by the born time of the last one), and an op record that
//! does not parse is stepped over instead of pinning the op progress forever.
//!
//! Runs on masters only; [`TransactionCheckService::start`] and
//! [`TransactionCheckService::stop`] are idempotent (role switches call them freely). A
//! round runs on a blocking thread: it reads and writes the store synchronously.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use message::properties;
use message::properties::keys::{
    CHECK_IMMUNITY_TIME_IN_SECONDS, PGROUP, REAL_TOPIC, TRAN_PREPARED_QUEUE_OFFSET,
    TRANSACTION_CHECK_TIMES, UNIQ_KEY,
};
use message::record::{self, Record, StoredMessage};
use parking_lot::Mutex;
use remoting::protocol::broker::CheckTransactionStateRequestHeader;
use remoting::protocol::constants::{perm, system};
use remoting::{RemotingCommand, RequestCode};
use tracing::{debug, error, info, warn};

use super::{CID_SYS_RMQ_TRANS, RealQueue, Renewed};
use crate::broker::Broker;
use crate::service_switch::ServiceSwitch;

/// Longest one queue is scanned in a round (`MAX_PROCESS_TIME_LIMIT`).
const MAX_PROCESS_TIME_MS: i64 = 60_000;

/// What one round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Half messages a producer was asked about (copies put back).
    pub checked: usize,
    /// Half messages passed over because an op record resolves them.
    pub resolved: usize,
    /// Half messages moved to TRANS_CHECK_MAX_TIME_TOPIC.
    pub discarded: usize,
    /// Checks that found no producer channel to go to.
    pub no_channel: usize,
    /// Half messages within their own `CHECK_IMMUNITY_TIME_IN_SECONDS`, put back to wait.
    pub deferred: usize,
}

/// The check-back service of a broker.
#[derive(Debug, Default)]
pub struct TransactionCheckService {
    /// Start/stop, idempotent through one atomic flag (role switches call both).
    switch: ServiceSwitch,
    /// One round at a time (the loop, and tests calling [`Self::check_once`]).
    round: Mutex<()>,
}

impl TransactionCheckService {
    /// A stopped service.
    #[must_use]
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Whether the check loop runs.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.switch.is_running()
    }

    /// Starts checking every `transactionCheckInterval` (masters). Returns false if it
    /// was already running.
    pub fn start(self: &Arc<Self>, broker: &Arc<Broker>) -> bool {
        let weak = Arc::downgrade(broker);
        let me = Arc::clone(self);
        let started = self.switch.start(|| tokio::spawn(run(me, weak)));
        if started {
            info!(
                interval_ms = broker.config().transaction_check_interval,
                "transaction check service started"
            );
        }
        started
    }

    /// Stops checking. A round under way finishes on its thread. Returns false if it was
    /// not running.
    pub fn stop(&self) -> bool {
        let stopped = self.switch.stop();
        if stopped {
            info!("transaction check service stopped");
        }
        stopped
    }

    /// Runs one round over every half queue now (blocking: reads and writes the store).
    /// Skipped while puts cannot be durable (a `SYNC_MASTER` without a slave): the
    /// copies a round puts back would be put again by the next one.
    pub fn check_once(&self, broker: &Broker) -> CheckReport {
        let _one_at_a_time = self.round.lock();
        if !broker.can_be_durable() {
            debug!("transaction check round skipped: no slave to make its copies durable");
            return CheckReport::default();
        }
        let (timeout, check_max) = {
            let c = broker.config();
            (
                i64::try_from(c.transaction_time_out).unwrap_or(i64::MAX),
                c.transaction_check_max,
            )
        };
        let mut report = CheckReport::default();
        for queue_id in broker.store.queue_ids(system::TRANS_HALF_TOPIC) {
            QueueCheck::new(broker, queue_id, timeout, check_max).run(&mut report);
        }
        if report != CheckReport::default() {
            info!(?report, "transaction check round");
        }
        report
    }
}

async fn run(service: Arc<TransactionCheckService>, weak: Weak<Broker>) {
    loop {
        let Some(interval) = weak
            .upgrade()
            .map(|b| b.config().transaction_check_interval)
        else {
            return;
        };
        tokio::time::sleep(Duration::from_millis(interval)).await;
        let Some(broker) = weak.upgrade() else {
            return;
        };
        if !service.is_running() {
            return;
        }
        let me = Arc::clone(&service);
        let round = tokio::task::spawn_blocking(move || me.check_once(&broker));
        if let Err(e) = round.await {
            error!(error = %e, "transaction check round failed");
        }
    }
}

/// The op records read so far of one op queue.
struct OpScan {
    /// Next op queue offset to read.
    next: u64,
    /// Half offsets below this were passed over by earlier rounds.
    half_floor: u64,
    /// Half queue offset → op queue offset, for half messages not reached yet.
    remove: HashMap<u64, u64>,
    /// Op queue offsets whose work is done.
    done: Vec<u64>,
}

impl OpScan {
    /// Reads every op record up to the op queue's current end.
    fn read_new(&mut self, broker: &Broker, queue_id: i32) {
        let store = &broker.store;
        let max = store.max_offset_in_queue(system::TRANS_OP_HALF_TOPIC, queue_id);
        if self.next >= max {
            return;
        }
        let Some(cq) = store
            .consume_queues()
            .get(system::TRANS_OP_HALF_TOPIC, queue_id)
        else {
            return;
        };
        while self.next < max {
            let Some(unit) = cq.unit_at(self.next) else {
                break;
            };
            let target = store
                .look_message_by_offset_and_size(unit.commit_log_offset, unit.size as usize)
                .and_then(|bytes| match record::decode(&bytes) {
                    Ok(Some(Record::Message(op))) => super::op_target(&op),
                    _ => None,
                });
            match target {
                Some(half) if half >= self.half_floor => {
                    self.remove.insert(half, self.next);
                }
                Some(_) => self.done.push(self.next),
                None => {
                    warn!(
                        op_offset = self.next,
                        "transaction op record does not parse; stepping over it"
                    );
                    self.done.push(self.next);
                }
            }
            self.next += 1;
        }
    }

    /// The op progress after this round: past every done record without a gap.
    fn progress(&mut self, from: u64) -> u64 {
        self.done.sort_unstable();
        let mut offset = from;
        for d in &self.done {
            if *d == offset {
                offset += 1;
            } else if *d > offset {
                break;
            }
        }
        offset
    }
}

/// One round over one half queue.
struct QueueCheck<'a> {
    broker: &'a Broker,
    queue_id: i32,
    timeout: i64,
    check_max: i32,
    started: i64,
    ops: OpScan,
    half_offset: u64,
    op_offset: u64,
}

impl<'a> QueueCheck<'a> {
    fn new(broker: &'a Broker, queue_id: i32, timeout: i64, check_max: i32) -> Self {
        let half_offset = progress(broker, system::TRANS_HALF_TOPIC, queue_id);
        let op_offset = progress(broker, system::TRANS_OP_HALF_TOPIC, queue_id);
        QueueCheck {
            broker,
            queue_id,
            timeout,
            check_max,
            started: crate::clock::now_ms(),
            ops: OpScan {
                next: op_offset,
                half_floor: half_offset,
                remove: HashMap::new(),
                done: Vec::new(),
            },
            half_offset,
            op_offset,
        }
    }

    fn run(mut self, report: &mut CheckReport) {
        let store = &self.broker.store;
        debug!(
            queue_id = self.queue_id,
            half_offset = self.half_offset,
            op_offset = self.op_offset,
            "checking half queue"
        );
        self.ops.read_new(self.broker, self.queue_id);
        let cq = store
            .consume_queues()
            .get(system::TRANS_HALF_TOPIC, self.queue_id);
        let mut i = self.half_offset;
        while let Some(cq) = &cq {
            if crate::clock::now_ms() - self.started > MAX_PROCESS_TIME_MS {
                info!(
                    queue_id = self.queue_id,
                    "half queue check took too long; going on next round"
                );
                break;
            }
            if let Some(op) = self.ops.remove.remove(&i) {
                self.ops.done.push(op);
                report.resolved += 1;
                i += 1;
                continue;
            }
            let Some(unit) = cq.unit_at(i) else {
                break;
            };
            let Some(bytes) =
                store.look_message_by_offset_and_size(unit.commit_log_offset, unit.size as usize)
            else {
                warn!(half_offset = i, "half message is gone; skipping");
                i += 1;
                continue;
            };
            let Ok(Some(Record::Message(half))) = record::decode(&bytes) else {
                warn!(half_offset = i, "half message does not decode; skipping");
                i += 1;
                continue;
            };
            match self.judge(&half, &bytes, report) {
                Verdict::Next => i += 1,
                Verdict::Again => {}
                Verdict::Stop => break,
            }
        }
        if i != self.half_offset {
            self.commit(system::TRANS_HALF_TOPIC, i);
        }
        let op_progress = self.ops.progress(self.op_offset);
        if op_progress != self.op_offset {
            self.commit(system::TRANS_OP_HALF_TOPIC, op_progress);
        }
    }

    /// What to do with the unresolved half message at the scan position.
    fn judge(
        &mut self,
        half: &StoredMessage<'_>,
        bytes: &Bytes,
        report: &mut CheckReport,
    ) -> Verdict {
        let now = crate::clock::now_ms();
        let mut props = half.properties_str().into_owned();
        // RocketMQ's needDiscard, which also counts this check in the properties.
        let discard = match properties::get(&props, TRANSACTION_CHECK_TIMES) {
            None => {
                props = properties::set(&props, &[(TRANSACTION_CHECK_TIMES, "1")]);
                false
            }
            Some(times) => {
                let times = times.trim().parse::<i32>().unwrap_or(-1);
                if times >= self.check_max {
                    true
                } else {
                    props = properties::set(
                        &props,
                        &[(TRANSACTION_CHECK_TIMES, &(times + 1).to_string())],
                    );
                    false
                }
            }
        };
        let kept_ms = i64::try_from(self.broker.store.config().file_reserved_time)
            .unwrap_or(i64::MAX / 3_600_000)
            .saturating_mul(3_600_000);
        if discard || now - half.born_timestamp > kept_ms {
            if !self.discard(half, bytes, props) {
                return Verdict::Stop;
            }
            report.discarded += 1;
            return Verdict::Next;
        }
        if half.store_timestamp >= self.started {
            // Stored during this round (the copies it puts back, among others).
            return Verdict::Stop;
        }
        let age = now - half.born_timestamp;
        let mut immunity = self.timeout;
        if let Some(seconds) = properties::get(&props, CHECK_IMMUNITY_TIME_IN_SECONDS) {
            immunity = immunity_ms(seconds, self.timeout);
            if age < immunity && self.immune(half, bytes, &props, report) {
                return Verdict::Next;
            }
        } else if (0..immunity).contains(&age) {
            // Too young; so is everything behind it.
            return Verdict::Stop;
        }
        // A commit or rollback may have come in since the op queue was read.
        let before = self.ops.next;
        self.ops.read_new(self.broker, self.queue_id);
        if self.ops.next != before {
            return Verdict::Again;
        }
        if !(age > immunity || age <= -1) {
            return Verdict::Stop;
        }
        let Some(real) = RealQueue::of(&props) else {
            warn!(
                offset = half.queue_offset,
                "half message without REAL_TOPIC / REAL_QID; moving it away"
            );
            if !self.discard(half, bytes, props) {
                return Verdict::Stop;
            }
            report.discarded += 1;
            return Verdict::Next;
        };
        let copy = super::renewed_half(half, bytes.slice_ref(half.body), props.clone());
        let Some(append) = self.put_durably(&copy, "a half message put back for its check") else {
            return Verdict::Stop;
        };
        let renewed = Renewed {
            queue_offset: append.queue_offset.0,
            commit_log_offset: append.wrote_offset.0,
            offset_msg_id: append.msg_id(),
        };
        if self.send_check(half, &props, real, &renewed) {
            report.checked += 1;
        } else {
            report.no_channel += 1;
        }
        Verdict::Next
    }

    /// RocketMQ's `checkPrepareQueueOffset` for a half message within its immunity time:
    /// true when it is done with (resolved, or copied back to wait on).
    fn immune(
        &mut self,
        half: &StoredMessage<'_>,
        bytes: &Bytes,
        props: &str,
        report: &mut CheckReport,
    ) -> bool {
        let original = match properties::get(props, TRAN_PREPARED_QUEUE_OFFSET) {
            None => None,
            Some(v) => match v.trim().parse::<i64>() {
                Ok(o) if o >= 0 => u64::try_from(o).ok(),
                _ => return false,
            },
        };
        if let Some(original) = original {
            if let Some(op) = self.ops.remove.remove(&original) {
                self.ops.done.push(op);
                report.resolved += 1;
                return true;
            }
        }
        let original = original.unwrap_or(half.queue_offset).to_string();
        let props = properties::set(props, &[(TRAN_PREPARED_QUEUE_OFFSET, &original)]);
        let copy = super::renewed_half(half, bytes.slice_ref(half.body), props);
        if self
            .put_durably(&copy, "an immune half message put back")
            .is_none()
        {
            return false;
        }
        report.deferred += 1;
        true
    }

    /// Puts `msg` and waits until it is as durable as the role requires: the progress
    /// moves past the original only then. `None` (logged) when it is not.
    fn put_durably(&self, msg: &store::MessageInner, what: &str) -> Option<store::AppendResult> {
        let result = self.broker.store.put_message(msg);
        let status = self.broker.durable(&result).wait_blocking();
        match result.append {
            Some(append) if status.is_ok() => Some(append),
            _ => {
                log_limit::limited!(error!(%status, "cannot store {what}; trying next round"));
                None
            }
        }
    }

    /// Asks one producer of the group about the renewed copy; false if none is there.
    fn send_check(
        &self,
        half: &StoredMessage<'_>,
        props: &str,
        real: RealQueue<'_>,
        renewed: &Renewed,
    ) -> bool {
        let Some(group) = properties::get(props, PGROUP) else {
            warn!(
                offset = renewed.queue_offset,
                "half message without PGROUP; nobody to ask"
            );
            return false;
        };
        let Some(channel) = self.broker.producers.available_channel(group) else {
            warn!(
                group,
                "cannot check a transaction: no producer of the group is connected"
            );
            return false;
        };
        let Some(body) = super::check_body(half, props, real, renewed) else {
            warn!(
                offset = renewed.queue_offset,
                "half message too large to re-encode"
            );
            return false;
        };
        let uniq = properties::get(props, UNIQ_KEY).map(str::to_owned);
        let header = CheckTransactionStateRequestHeader {
            topic: Some(real.topic.to_owned()),
            tran_state_table_offset: i64::try_from(renewed.queue_offset).unwrap_or(i64::MAX),
            commit_log_offset: i64::try_from(renewed.commit_log_offset).unwrap_or(i64::MAX),
            msg_id: uniq.clone(),
            transaction_id: uniq,
            offset_msg_id: Some(renewed.offset_msg_id.clone()),
        };
        let request = RemotingCommand::request_with(RequestCode::CheckTransactionState, &header)
            .with_body(Bytes::from(body));
        if let Err(e) = channel.invoke_oneway(request) {
            debug!(error = %e, group, "check transaction state not sent");
            return false;
        }
        debug!(group, offset = renewed.queue_offset, peer = %channel.peer_addr(), "transaction check sent");
        true
    }

    /// Moves a half message to TRANS_CHECK_MAX_TIME_TOPIC; false when it could not be
    /// (the scan stops there: the progress must not pass a message kept nowhere).
    fn discard(&self, half: &StoredMessage<'_>, bytes: &Bytes, props: String) -> bool {
        warn!(
            offset = half.queue_offset,
            real_topic = properties::get(&props, REAL_TOPIC).unwrap_or("-"),
            "half message checked too often or too old; moving it to TRANS_CHECK_MAX_TIME_TOPIC"
        );
        self.broker.topics.create_in_send_back(
            system::TRANS_CHECK_MAX_TIME_TOPIC,
            1,
            perm::READ | perm::WRITE,
            0,
        );
        let msg = super::check_max_message(half, bytes.slice_ref(half.body), props);
        self.put_durably(&msg, "a half message moved to TRANS_CHECK_MAX_TIME_TOPIC")
            .is_some()
    }

    fn commit(&self, topic: &str, offset: u64) {
        debug!(
            topic,
            queue_id = self.queue_id,
            offset,
            "transaction check progress"
        );
        self.broker.offsets.commit(
            CID_SYS_RMQ_TRANS,
            topic,
            self.queue_id,
            i64::try_from(offset).unwrap_or(i64::MAX),
        );
    }
}

enum Verdict {
    /// Done with this half message; on to the next.
    Next,
    /// Judge the same one again (more op records came in).
    Again,
    /// Nothing more to do this round.
    Stop,
}

/// Where `CID_SYS_RMQ_TRANS` has got in a queue: its committed offset, or the queue's
/// minimum when there is none or it points below what the store still has.
fn progress(broker: &Broker, topic: &str, queue_id: i32) -> u64 {
    let min = broker.store.min_offset_in_queue(topic, queue_id);
    broker
        .offsets
        .query(CID_SYS_RMQ_TRANS, topic, queue_id)
        .and_then(|o| u64::try_from(o).ok())
        .map_or(min, |o| o.max(min))
}

/// `CHECK_IMMUNITY_TIME_IN_SECONDS` in ms; -1 or a bad value means `transactionTimeOut`.
fn immunity_ms(seconds: &str, timeout: i64) -> i64 {
    match seconds.trim().parse::<i64>() {
        Ok(s) if s != -1 => s.saturating_mul(1000),
        _ => timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_progress_stops_at_the_first_gap() {
        let mut ops = OpScan {
            next: 0,
            half_floor: 0,
            remove: HashMap::new(),
            done: vec![7, 5, 4, 9],
        };
        assert_eq!(ops.progress(4), 6);
        ops.done = vec![];
        assert_eq!(ops.progress(4), 4);
        ops.done = vec![2, 3, 4];
        assert_eq!(ops.progress(3), 5);
    }

    #[test]
    fn immunity() {
        assert_eq!(immunity_ms("10", 6000), 10_000);
        assert_eq!(immunity_ms("-1", 6000), 6000);
        assert_eq!(immunity_ms("x", 6000), 6000);
    }
}
