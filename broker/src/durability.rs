//! When a stored message may be acknowledged: the one place that knows what the
//! broker's role and flush type require of a put before anything counts it as done.
//!
//! A put is in the page cache when it returns. Under `SYNC_FLUSH` it is durable once a
//! group commit covers its end; on a `SYNC_MASTER` once a slave has acknowledged its end
//! as well. Everything that answers for a put waits here: a client's send (SEND_OK), a
//! consumer's send-back, a transaction's commit — and the services that move a
//! progress mark past a message they re-put (the schedule service's delay offsets),
//! because a mark persisted past a copy that a crash or a failover then loses loses the
//! message as surely as a false SEND_OK.
//!
//! A `SYNC_MASTER` whose HA service is not running has no slave to wait for: that is
//! `SLAVE_NOT_AVAILABLE`, never "nothing to wait for" ([`Replication::wait_for_slave`]).
//!
//! [`Replication::wait_for_slave`]: crate::replication::Replication::wait_for_slave

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use ha::ReplicaStatus;
use store::{PhyOffset, PutMessageStatus, PutResult};

use crate::broker::Broker;
use crate::config::BrokerRole;

/// The outcome of a put once it is as durable as the role requires, or the reason it
/// is not. Runtime-agnostic: awaited by processors, blocked on by service threads.
#[must_use = "a put is not durable until its wait resolves"]
pub struct Durable {
    state: State,
}

enum State {
    Ready(PutMessageStatus),
    Waiting(Pin<Box<dyn Future<Output = PutMessageStatus> + Send>>),
}

impl std::fmt::Debug for Durable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.state {
            State::Ready(s) => f.debug_tuple("Durable::Ready").field(s).finish(),
            State::Waiting(_) => f.write_str("Durable::Waiting"),
        }
    }
}

impl Durable {
    /// The final status if nothing is left to wait for.
    #[must_use]
    pub fn ready(&self) -> Option<PutMessageStatus> {
        match self.state {
            State::Ready(s) => Some(s),
            State::Waiting(_) => None,
        }
    }

    /// Waits on the calling thread (service threads, never the runtime's).
    pub fn wait_blocking(self) -> PutMessageStatus {
        futures::executor::block_on(self)
    }
}

impl Future for Durable {
    type Output = PutMessageStatus;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<PutMessageStatus> {
        match &mut self.get_mut().state {
            State::Ready(s) => Poll::Ready(*s),
            State::Waiting(f) => f.as_mut().poll(cx),
        }
    }
}

impl Broker {
    /// What `result` still has to wait for before it may be acknowledged: nothing when
    /// the put failed (its status is final) or the role asks for nothing more.
    pub fn durable(&self, result: &PutResult) -> Durable {
        match (&result.append, result.status.is_ok()) {
            (Some(append), true) => self.durable_to(append.end_offset()),
            _ => Durable {
                state: State::Ready(result.status),
            },
        }
    }

    /// Whether a put made now could become as durable as the role requires: false only
    /// on a `SYNC_MASTER` without a usable slave. Services that would otherwise put
    /// copies that cannot be acknowledged (and put them again next round) skip their
    /// round instead.
    #[must_use]
    pub fn can_be_durable(&self) -> bool {
        self.role() != BrokerRole::SYNC_MASTER
            || self
                .replication
                .is_slave_ok(self.store.commit_log().max_offset().0)
    }

    /// The wait for everything below `end` to be flushed (`SYNC_FLUSH`) and held by a
    /// slave (`SYNC_MASTER`).
    pub fn durable_to(&self, end: PhyOffset) -> Durable {
        let flush = self
            .store
            .config()
            .flush_disk_type
            .is_sync()
            .then(|| self.store.wait_flushed(end));
        let replica = (self.role() == BrokerRole::SYNC_MASTER)
            .then(|| self.replication.wait_for_slave(end.0));
        let ack_clock = replica.as_ref().and_then(|_| self.metrics.ha_ack_clock());
        if flush.is_none() && replica.is_none() {
            return Durable {
                state: State::Ready(PutMessageStatus::PutOk),
            };
        }
        Durable {
            state: State::Waiting(Box::pin(async move {
                if let Some(flush) = flush {
                    let status = flush.await;
                    if !status.is_ok() {
                        return status;
                    }
                }
                match replica {
                    None => PutMessageStatus::PutOk,
                    Some(replica) => match replica.await {
                        ReplicaStatus::PutOk => {
                            if let Some(clock) = ack_clock {
                                clock.stop();
                            }
                            PutMessageStatus::PutOk
                        }
                        ReplicaStatus::FlushSlaveTimeout => PutMessageStatus::FlushSlaveTimeout,
                        ReplicaStatus::SlaveNotAvailable => PutMessageStatus::SlaveNotAvailable,
                    },
                }
            })),
        }
    }
}
