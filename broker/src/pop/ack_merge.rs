//! Single acks merged per checkpoint: the ACK_MESSAGEs of one burst of requests
//! (everything a connection's request task had queued, see
//! `RequestHandler::on_burst_end`) that ack the same checkpoint become one `bAck`
//! record in the revive log, not one `ack` record each.
//!
//! Why: a client acks every message of a pop on its own (RocketMQ's push consumer in
//! POP mode, Apache's proxy for the gRPC SDKs), and each record costs two appends (the
//! timer wheel, then the revive queue at its due time), a timer-log entry and a read by
//! the revive service — more than the request itself. The acks of one pop arrive
//! together, so a burst merges most of them. `bAck` is RocketMQ's own record (what
//! BATCH_ACK_MESSAGE writes), so the log stays readable by Apache's revive service.
//!
//! Nothing waits for a timer: the merge happens at the end of the burst the acks came
//! in, so a lone ack is written as soon as it was handled, as before. Each ack is
//! answered once its record is as durable as the role requires, never before.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use remoting::{Channel, RemotingCommand, ResponseCode};
use store::PutMessageStatus;
use tracing::debug;

use super::records::AckRecord;
use super::revive_log::{self, ReviveLogError};
use crate::broker::Broker;
use crate::timer::TimerService;

/// Pending acks past which a burst is written at once, whatever else is queued.
const MAX_PENDING: usize = 1024;

/// Which checkpoint an ack acks, and when its record is due (the checkpoint's revive
/// time): acks with equal keys share a record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CheckpointKey {
    /// The messages' topic (a retry topic for retried messages).
    pub topic: String,
    /// The consumer group.
    pub group: String,
    /// The queue.
    pub queue_id: i32,
    /// The checkpoint's start offset.
    pub start_offset: i64,
    /// The checkpoint's pop time.
    pub pop_time: i64,
    /// The broker that holds the messages.
    pub broker_name: String,
    /// The revive queue of the checkpoint.
    pub revive_qid: i32,
    /// When the record is to be read: the checkpoint's revive time.
    pub deliver_ms: i64,
}

/// One ack waiting for its burst to end.
struct PendingAck {
    key: CheckpointKey,
    offset: i64,
    channel: Channel,
    /// SUCCESS, addressed to the request (`None`: a oneway request, no answer).
    answer: Option<RemotingCommand>,
}

/// The acks handled since the last burst ended, across connections.
#[derive(Default)]
pub struct AckMerger {
    pending: Mutex<Vec<PendingAck>>,
    /// `pending.len()`, read without the lock at every burst's end.
    count: AtomicUsize,
}

impl std::fmt::Debug for AckMerger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AckMerger")
            .field("pending", &self.count.load(Ordering::Relaxed))
            .finish()
    }
}

impl AckMerger {
    /// Queues the ack of `offset` of checkpoint `key`, received on `channel` as
    /// `request`; it is written and answered at the end of the burst (or at once when
    /// too many are pending).
    pub fn submit(
        &self,
        broker: &Broker,
        timer: &TimerService,
        key: CheckpointKey,
        offset: i64,
        channel: &Channel,
        request: &RemotingCommand,
    ) {
        let answer = (!request.is_oneway())
            .then(|| RemotingCommand::response(ResponseCode::Success, None).answering(request));
        let full = {
            let mut pending = self.pending.lock();
            pending.push(PendingAck {
                key,
                offset,
                channel: channel.clone(),
                answer,
            });
            self.count.store(pending.len(), Ordering::Release);
            pending.len() >= MAX_PENDING
        };
        if full {
            self.flush(broker, timer);
        }
    }

    /// Writes one record per checkpoint for every pending ack and answers each ack once
    /// its record is durable (SYSTEM_ERROR when it cannot be).
    pub fn flush(&self, broker: &Broker, timer: &TimerService) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let batch = {
            let mut pending = self.pending.lock();
            self.count.store(0, Ordering::Release);
            std::mem::take(&mut *pending)
        };
        let mut by_checkpoint: HashMap<CheckpointKey, Vec<PendingAck>> = HashMap::new();
        for ack in batch {
            by_checkpoint.entry(ack.key.clone()).or_default().push(ack);
        }
        for (key, acks) in by_checkpoint {
            write(broker, timer, &key, acks);
        }
    }
}

/// The record of `acks` (all of checkpoint `key`): `ack` for one offset, `bAck` for more.
fn record(key: &CheckpointKey, acks: &[PendingAck]) -> AckRecord {
    let mut offsets: Vec<i64> = acks.iter().map(|a| a.offset).collect();
    offsets.sort_unstable();
    offsets.dedup();
    let (ack_offset, ack_offset_list) = match offsets.as_slice() {
        [one] => (*one, None),
        _ => (-1, Some(offsets)),
    };
    AckRecord {
        ack_offset,
        ack_offset_list,
        broker_name: Some(key.broker_name.clone()),
        group: key.group.clone(),
        pop_time: key.pop_time,
        queue_id: key.queue_id,
        start_offset: key.start_offset,
        topic: key.topic.clone(),
    }
}

fn write(broker: &Broker, timer: &TimerService, key: &CheckpointKey, acks: Vec<PendingAck>) {
    let ack = record(key, &acks);
    match revive_log::put_ack(broker, timer, &ack, key.revive_qid, key.deliver_ms) {
        Err(e) => answer(acks, Err(e), false),
        Ok(written) => match written.durable.ready() {
            Some(status) => answer(acks, Ok(status), false),
            None => {
                tokio::spawn(async move {
                    let status = written.durable.await;
                    answer(acks, Ok(status), true);
                });
            }
        },
    }
}

/// Answers every ack of one record with what became of it.
fn answer(acks: Vec<PendingAck>, outcome: Result<PutMessageStatus, ReviveLogError>, late: bool) {
    let refusal = match outcome {
        Ok(status) if status.is_ok() => None,
        Ok(status) => Some(format!(
            "ack record not stored as the broker's role requires: {}",
            status.rocketmq().as_str()
        )),
        Err(e) => Some(e.to_string()),
    };
    for ack in acks {
        let Some(success) = ack.answer else {
            continue;
        };
        let response = match &refusal {
            None => success,
            Some(remark) => {
                let mut r =
                    RemotingCommand::response(ResponseCode::SystemError, Some(remark.clone()));
                r.header.opaque = success.header.opaque;
                r.header.flag = success.header.flag;
                r.serialize_type = success.serialize_type;
                r
            }
        };
        let sent = if late {
            ack.channel.send_late(response)
        } else {
            ack.channel.send(response)
        };
        if let Err(e) = sent {
            debug!(error = %e, "ack response not sent");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CheckpointKey {
        CheckpointKey {
            topic: "T".into(),
            group: "G".into(),
            queue_id: 1,
            start_offset: 100,
            pop_time: 1_700_000_000_000,
            broker_name: "broker-a".into(),
            revive_qid: 3,
            deliver_ms: 1_700_000_060_000,
        }
    }

    fn pending(key: &CheckpointKey, offset: i64, channel: &Channel, opaque: i32) -> PendingAck {
        let mut request = RemotingCommand::request(remoting::RequestCode::AckMessage);
        request.header.opaque = opaque;
        PendingAck {
            key: key.clone(),
            offset,
            channel: channel.clone(),
            answer: Some(
                RemotingCommand::response(ResponseCode::Success, None).answering(&request),
            ),
        }
    }

    fn channel() -> (
        Channel,
        tokio::sync::mpsc::UnboundedReceiver<RemotingCommand>,
    ) {
        Channel::detached("127.0.0.1:1".parse().unwrap())
    }

    #[test]
    fn one_offset_is_an_ack_more_are_a_batch_ack_with_each_offset_once() {
        let (ch, _rx) = channel();
        let k = key();
        let one = record(&k, &[pending(&k, 105, &ch, 1)]);
        assert_eq!((one.ack_offset, one.ack_offset_list), (105, None));
        let many = record(
            &k,
            &[
                pending(&k, 107, &ch, 1),
                pending(&k, 101, &ch, 2),
                pending(&k, 107, &ch, 3),
            ],
        );
        assert_eq!(many.ack_offset, -1);
        assert_eq!(many.ack_offset_list, Some(vec![101, 107]));
        assert_eq!(
            (many.start_offset, many.pop_time, many.queue_id),
            (100, k.pop_time, 1)
        );
        assert_eq!(many.broker_name.as_deref(), Some("broker-a"));
    }

    #[test]
    fn every_ack_of_a_record_gets_its_own_answer_success_only_when_stored() {
        let (ch, mut rx) = channel();
        let k = key();
        answer(
            vec![pending(&k, 101, &ch, 7), pending(&k, 102, &ch, 8)],
            Ok(PutMessageStatus::PutOk),
            false,
        );
        answer(
            vec![pending(&k, 103, &ch, 9)],
            Ok(PutMessageStatus::FlushDiskTimeout),
            false,
        );
        let got: Vec<(i32, i32)> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|r| (r.header.opaque, r.code()))
            .collect();
        assert_eq!(
            got,
            vec![
                (7, ResponseCode::Success.code()),
                (8, ResponseCode::Success.code()),
                (9, ResponseCode::SystemError.code()),
            ]
        );
    }
}
