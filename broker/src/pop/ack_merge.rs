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
//! in. A batch still in memory (`pop::ck_buffer`) takes its acks there and needs no
//! record; any other gets one. Each ack is answered once it is kept (its record as
//! durable as the role requires, or the offset past its batch), never before.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use remoting::{Channel, RemotingCommand, ResponseCode};
use store::PutMessageStatus;
use tracing::debug;

use super::ck_buffer::{Acked, Answer, CheckpointBuffer, QueueKey};
use super::records::AckRecord;
use super::revive_log::{self, ReviveLogError};
use crate::broker::Broker;
use crate::timer::TimerService;

/// Why an ack of a batch lost in a crash is refused.
const LOST_RECEIPT: &str = "the receipt's batch was lost in a broker restart before it was kept; \
its messages are delivered again";

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

impl PendingAck {
    /// The answer of this ack: its SUCCESS, or SYSTEM_ERROR with the reason.
    fn into_answer(self) -> Answer {
        let PendingAck {
            channel, answer, ..
        } = self;
        Answer::new(move |outcome, late| {
            let Some(success) = answer else { return };
            let response = match outcome {
                Ok(()) => success,
                Err(remark) => {
                    let mut r = RemotingCommand::response(ResponseCode::SystemError, Some(remark));
                    r.header.opaque = success.header.opaque;
                    r.header.flag = success.header.flag;
                    r.serialize_type = success.serialize_type;
                    r
                }
            };
            let sent = if late {
                channel.send_late(response)
            } else {
                channel.send(response)
            };
            if let Err(e) = sent {
                debug!(error = %e, "ack response not sent");
            }
        })
    }
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
    /// `request`; it is settled and answered at the end of the burst (or at once when
    /// too many are pending).
    pub fn submit(
        &self,
        buffer: &Arc<CheckpointBuffer>,
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
            self.flush(buffer);
        }
    }

    /// Settles every pending ack, one checkpoint at a time: in the checkpoint buffer
    /// when the batch is still in memory, else as one record per checkpoint; each ack is
    /// answered once it is kept (SYSTEM_ERROR when it cannot be).
    pub fn flush(&self, buffer: &Arc<CheckpointBuffer>) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let batch = {
            let mut pending = self.pending.lock();
            self.count.store(0, Ordering::Release);
            std::mem::take(&mut *pending)
        };
        let mut by_checkpoint: HashMap<CheckpointKey, (Vec<i64>, Vec<Answer>)> = HashMap::new();
        for ack in batch {
            let (offsets, answers) = by_checkpoint.entry(ack.key.clone()).or_default();
            offsets.push(ack.offset);
            answers.push(ack.into_answer());
        }
        for (key, (offsets, answers)) in by_checkpoint {
            settle(buffer, &key, offsets, answers);
        }
    }
}

/// Settles the acks of `offsets` of checkpoint `key`: in memory when the batch is
/// buffered, else by one record.
pub fn settle(
    buffer: &Arc<CheckpointBuffer>,
    key: &CheckpointKey,
    offsets: Vec<i64>,
    answers: Vec<Answer>,
) {
    let queue = QueueKey {
        topic: key.topic.clone(),
        group: key.group.clone(),
        queue_id: key.queue_id,
    };
    let answers = match buffer.ack(&queue, key.start_offset, key.pop_time, &offsets, answers) {
        Acked::Taken { .. } => return,
        Acked::NotBuffered(answers) => answers,
        Acked::Lost(answers) => {
            for a in answers {
                a.send(Err(LOST_RECEIPT.into()), false);
            }
            return;
        }
    };
    write(buffer.broker(), buffer.timer(), key, offsets, answers);
}

/// The record of `offsets` (all of checkpoint `key`).
fn record(key: &CheckpointKey, offsets: Vec<i64>) -> AckRecord {
    AckRecord {
        broker_name: Some(key.broker_name.clone()),
        group: key.group.clone(),
        pop_time: key.pop_time,
        queue_id: key.queue_id,
        start_offset: key.start_offset,
        topic: key.topic.clone(),
        ..AckRecord::default()
    }
    .with_offsets(offsets)
}

fn write(
    broker: &Broker,
    timer: &TimerService,
    key: &CheckpointKey,
    offsets: Vec<i64>,
    answers: Vec<Answer>,
) {
    let ack = record(key, offsets);
    match revive_log::put_ack(broker, timer, &ack, key.revive_qid, key.deliver_ms) {
        Err(e) => answer(answers, Err(e), false),
        Ok(written) => match written.durable.ready() {
            Some(status) => answer(answers, Ok(status), false),
            None => {
                tokio::spawn(async move {
                    let status = written.durable.await;
                    answer(answers, Ok(status), true);
                });
            }
        },
    }
}

/// Answers every ack of one record with what became of it.
fn answer(answers: Vec<Answer>, outcome: Result<PutMessageStatus, ReviveLogError>, late: bool) {
    let refusal = match outcome {
        Ok(status) if status.is_ok() => None,
        Ok(status) => Some(format!(
            "ack record not stored as the broker's role requires: {}",
            status.rocketmq().as_str()
        )),
        Err(e) => Some(e.to_string()),
    };
    for a in answers {
        a.send(refusal.clone().map_or(Ok(()), Err), late);
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
        let k = key();
        let one = record(&k, vec![105]);
        assert_eq!((one.ack_offset, one.ack_offset_list), (105, None));
        let many = record(&k, vec![107, 101, 107]);
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
            vec![
                pending(&k, 101, &ch, 7).into_answer(),
                pending(&k, 102, &ch, 8).into_answer(),
            ],
            Ok(PutMessageStatus::PutOk),
            false,
        );
        answer(
            vec![pending(&k, 103, &ch, 9).into_answer()],
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
