//! Transactional messages over gRPC, as Apache's proxy serves them (`ProducerProcessor`,
//! `TransactionProcessor`, `ClusterTransactionService`, `TransactionDataManager`,
//! `EndTransactionActivity`, the check relay of `ProxyChannel` / `GrpcClientChannel`).
//!
//! A gRPC client never learns which broker holds its half message, nor where: it ends a
//! transaction by topic, message id and transaction id. So the proxy remembers, for each half
//! message it sent, the broker and the two offsets END_TRANSACTION needs (the half topic's
//! queue offset, `tranStateTableOffset`, and the CommitLog offset), keyed by producer group and
//! transaction id ([`TransactionTable`]); entries expire after `transactionDataExpireMillis`,
//! and EndTransaction takes its entry out. Producer groups are topic names (Apache's proxy
//! registers a gRPC producer under each topic it publishes).
//!
//! - SendMessage of a TRANSACTION message: the half message (`TRAN_MSG=true`, the prepared sys
//!   flag, `PGROUP`; [`crate::convert`]) goes out as any send; its result is recorded here
//!   ([`Transactions::record_sent`]). The transaction id is the broker's answer, the message id.
//! - EndTransaction: COMMIT / ROLLBACK become END_TRANSACTION to the recorded broker, with
//!   `fromTransactionCheck` when the client answers a check-back (`SOURCE_SERVER_CHECK`); the
//!   trace context is not used. Apache sends it oneway and answers OK; this proxy waits for the
//!   broker's answer and reports a refusal as one (an OK means the broker ended it). An UNKNOWN
//!   resolution asks nothing of the broker (which would do nothing with it) and answers OK,
//!   leaving the half message to the check-back. A transaction id the proxy holds no entry for
//!   answers INTERNAL_SERVER_ERROR "cannot found transaction data", as Apache's does.
//! - Check-back (orphaned-transaction recovery): a broker asks about a half message nobody ended
//!   with CHECK_TRANSACTION_STATE on a connection the proxy opened; it reaches
//!   [`Transactions::on_check`] through [`crate::backend::Inbound`]. The entry is recorded (the
//!   client's answer ends it) and the message, as a gRPC `Message`, goes in a
//!   `RecoverOrphanedTransactionCommand` down the telemetry stream of one producer of the group,
//!   round robin. With none connected the check is dropped (debug log): the broker asks again.
//! - Registration: a broker checks back only with a producer group it has a heartbeat of. Every
//!   `transactionHeartbeatPeriodSecond` (and at once when a group turns out transactional) the
//!   proxy sends HEART_BEAT, client id `rmq-proxy-producer-client`, with the transactional
//!   groups that have a producer (`transactionHeartbeatBatchNum` a request) to the brokers of
//!   the groups' topics (the master of each broker name, else any). Apache sends them to every
//!   broker of those brokers' clusters; the topics' brokers are the ones that can hold the half
//!   messages. When a group's last producer goes (NotifyClientTermination, or its telemetry
//!   stream ends) the proxy sends UNREGISTER_CLIENT for it to the brokers it registered it with.
//!
//! Everything here speaks remoting through the [`Backend`] seam only, so local mode runs the
//! same code. The entries keep the broker's address rather than its name: the address a check
//! came from or a send went to is the master that holds the message.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Weak};
use std::time::Duration;

use message::id::OffsetMsgId;
use message::properties::{self, keys};
use message::record::{self, Record, StoredMessage, sys_flag};
use parking_lot::Mutex;
use remoting::protocol::broker::{
    CheckTransactionStateRequestHeader, EndTransactionRequestHeader, SendMessageResponseHeader,
    UnregisterClientRequestHeader,
};
use remoting::protocol::heartbeat::{HeartbeatData, ProducerData};
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

use crate::backend::{Backend, Target};
use crate::clock::now_ms;
use crate::config::ProxyConfig;
use crate::convert::{self, Shown};
use crate::metadata::{TopicMessageType, TopicTypes};
use crate::pb::{self, Code, TransactionResolution, TransactionSource, telemetry_command::Command};
use crate::route::Routes;
use crate::status::Refusal;

/// The client id of the proxy's heartbeats for transactional producer groups (Apache's
/// `TRANS_HEARTBEAT_CLIENT_ID`).
pub const HEARTBEAT_CLIENT_ID: &str = "rmq-proxy-producer-client";
/// Limit of one registration request (Apache: 3 s).
const REGISTRATION_TIMEOUT: Duration = Duration::from_secs(3);
/// Apache's answer to an EndTransaction it holds no entry for.
pub const NO_TRANSACTION_DATA: &str = "cannot found transaction data";

pub use crate::pb::CommandSender;

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

// ------------------------------------------------------------------------ the bookkeeping

/// What END_TRANSACTION needs of one half message (Apache's `TransactionData`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionData {
    /// The broker (`ip:port`) that holds it.
    pub broker_addr: String,
    /// Its real topic.
    pub topic: String,
    /// Its offset in the half topic's queue (`tranStateTableOffset`).
    pub tran_state_table_offset: i64,
    /// Its CommitLog offset.
    pub commit_log_offset: i64,
    /// The transaction id.
    pub transaction_id: String,
    /// When the entry is dropped, epoch ms.
    pub expire_at_ms: i64,
}

/// Half messages waiting for their end, by producer group and transaction id; a few per id
/// (a check-back records another), latest expiry last.
#[derive(Debug)]
pub struct TransactionTable {
    entries: HashMap<(String, String), Vec<TransactionData>>,
    max_per_id: usize,
}

impl TransactionTable {
    /// An empty table keeping at most `max_per_id` entries per transaction id
    /// (`transactionDataMaxNum`).
    #[must_use]
    pub fn new(max_per_id: usize) -> Self {
        TransactionTable {
            entries: HashMap::new(),
            max_per_id: max_per_id.max(1),
        }
    }

    /// Records `data` for `producer_group`; the entry that expires first goes when the id
    /// has too many.
    pub fn add(&mut self, producer_group: &str, data: TransactionData) {
        let key = (producer_group.to_owned(), data.transaction_id.clone());
        let list = self.entries.entry(key).or_default();
        if !list.contains(&data) {
            list.push(data);
            list.sort_by_key(|d| d.expire_at_ms);
        }
        if list.len() > self.max_per_id {
            list.remove(0);
        }
    }

    /// Takes the latest unexpired entry of the transaction out (expired ones met on the way
    /// go too).
    pub fn poll(
        &mut self,
        producer_group: &str,
        transaction_id: &str,
        now_ms: i64,
    ) -> Option<TransactionData> {
        let key = (producer_group.to_owned(), transaction_id.to_owned());
        let list = self.entries.get_mut(&key)?;
        let mut found = None;
        while let Some(d) = list.pop() {
            if d.expire_at_ms >= now_ms {
                found = Some(d);
                break;
            }
        }
        if list.is_empty() {
            self.entries.remove(&key);
        }
        found
    }

    /// Forgets `data` (a check-back nobody could be asked).
    pub fn remove(&mut self, producer_group: &str, data: &TransactionData) {
        let key = (producer_group.to_owned(), data.transaction_id.clone());
        if let Some(list) = self.entries.get_mut(&key) {
            list.retain(|d| d != data);
            if list.is_empty() {
                self.entries.remove(&key);
            }
        }
    }

    /// Drops the entries expired at `now_ms`.
    pub fn clean(&mut self, now_ms: i64) {
        self.entries.retain(|_, list| {
            list.retain(|d| d.expire_at_ms >= now_ms);
            !list.is_empty()
        });
    }

    /// Entries held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.values().map(Vec::len).sum()
    }

    /// Whether none is.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The producers of each producer group (Apache's `ProducerManager`, by client id), and where
/// a check-back goes.
#[derive(Debug, Default)]
pub struct ProducerGroups {
    groups: BTreeMap<String, BTreeSet<String>>,
    /// Round-robin position of [`ProducerGroups::candidates`].
    next: usize,
}

impl ProducerGroups {
    /// `client_id` produces for `groups` (its settings' topics).
    pub fn register<'a>(&mut self, client_id: &str, groups: impl IntoIterator<Item = &'a str>) {
        for group in groups {
            self.groups
                .entry(group.to_owned())
                .or_default()
                .insert(client_id.to_owned());
        }
    }

    /// Forgets `client_id`; the groups it leaves without a producer.
    pub fn unregister(&mut self, client_id: &str) -> Vec<String> {
        let mut emptied = Vec::new();
        self.groups.retain(|group, clients| {
            if clients.remove(client_id) && clients.is_empty() {
                emptied.push(group.clone());
            }
            !clients.is_empty()
        });
        emptied
    }

    /// The producers of `group`, starting at the next one in turn.
    pub fn candidates(&mut self, group: &str) -> Vec<String> {
        let Some(clients) = self.groups.get(group) else {
            return Vec::new();
        };
        let mut all: Vec<String> = clients.iter().cloned().collect();
        if !all.is_empty() {
            let start = self.next % all.len();
            all.rotate_left(start);
            self.next = self.next.wrapping_add(1);
        }
        all
    }

    /// The groups with a producer.
    #[must_use]
    pub fn online(&self) -> Vec<String> {
        self.groups.keys().cloned().collect()
    }
}

// ------------------------------------------------------------------------ conversions

/// A stored message as the gRPC protocol shows it, in a transaction check: `fallback_id` is
/// the message id when it has no `UNIQ_KEY`.
#[must_use]
pub fn grpc_message(m: &StoredMessage<'_>, fallback_id: Option<&str>) -> pb::Message {
    let body = bytes::Bytes::copy_from_slice(m.body);
    let props = m.properties_str();
    let message_id = properties::get(&props, keys::UNIQ_KEY)
        .or(fallback_id)
        .unwrap_or_default();
    let shown = Shown {
        topic: m.topic,
        message_id,
        receipt: None,
        reconsume_times: m.reconsume_times,
    };
    convert::stored_message(m, &props, body, &shown, now_ms())
}

/// The END_TRANSACTION of `data` (Apache's `genEndTransactionRequestHeader`).
#[must_use]
pub fn end_request(
    data: &TransactionData,
    topic: &str,
    producer_group: &str,
    commit_or_rollback: i32,
    from_check: bool,
    message_id: &str,
) -> RemotingCommand {
    let header = EndTransactionRequestHeader {
        topic: Some(topic.to_owned()),
        producer_group: producer_group.to_owned(),
        tran_state_table_offset: data.tran_state_table_offset,
        commit_log_offset: data.commit_log_offset,
        commit_or_rollback,
        from_transaction_check: Some(from_check),
        msg_id: message_id.to_owned(),
        transaction_id: Some(data.transaction_id.clone()),
    };
    RemotingCommand::request_with(RequestCode::EndTransaction, &header)
}

/// The HEART_BEAT registering `groups` as producer groups of the proxy.
#[must_use]
pub fn registration(groups: &[String]) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: HEARTBEAT_CLIENT_ID.to_owned(),
        producer_data_set: groups
            .iter()
            .map(|g| ProducerData {
                group_name: g.clone(),
            })
            .collect(),
        ..HeartbeatData::default()
    };
    // A struct of strings and vectors always serialises.
    let body = serde_json::to_vec(&data).unwrap_or_default();
    RemotingCommand::request(RequestCode::HeartBeat).with_body(body)
}

// ------------------------------------------------------------------------ the service part

/// Timings from [`ProxyConfig`].
#[derive(Debug, Clone, Copy)]
struct Timings {
    heartbeat_period: Duration,
    heartbeat_batch: usize,
    expire: Duration,
    expire_scan: Duration,
    end_timeout: Duration,
}

/// The transactions of one proxy: the table, the producers, the registrations with brokers.
#[derive(Debug)]
pub struct Transactions<B> {
    backend: Arc<B>,
    routes: Arc<Routes<B>>,
    types: TopicTypes<B>,
    table: Mutex<TransactionTable>,
    producers: Mutex<ProducerGroups>,
    /// Producer groups known to be transactional (their topic's type, or a transactional
    /// send), with the brokers each was last registered with.
    transactional: Mutex<BTreeMap<String, BTreeSet<String>>>,
    /// Wakes the registration task before its period (a new transactional group).
    wake: Notify,
    timings: Timings,
}

impl<B: Backend> Transactions<B> {
    /// Transactions over `backend`, with `config`'s `transaction*` settings.
    #[must_use]
    pub fn new(backend: Arc<B>, routes: Arc<Routes<B>>, config: &ProxyConfig) -> Self {
        Transactions {
            types: TopicTypes::new(Arc::clone(&backend), Arc::clone(&routes)),
            backend,
            routes,
            table: Mutex::new(TransactionTable::new(config.transaction_data_max_num)),
            producers: Mutex::new(ProducerGroups::default()),
            transactional: Mutex::new(BTreeMap::new()),
            wake: Notify::new(),
            timings: Timings {
                heartbeat_period: Duration::from_secs(
                    config.transaction_heartbeat_period_second.max(1),
                ),
                heartbeat_batch: config.transaction_heartbeat_batch_num.max(1),
                expire: Duration::from_millis(config.transaction_data_expire_millis),
                expire_scan: Duration::from_millis(
                    config.transaction_data_expire_scan_period_millis.max(100),
                ),
                end_timeout: config.send_timeout(),
            },
        }
    }

    /// Starts the task that registers the transactional producer groups with their brokers
    /// and drops expired entries; it ends when `this` is dropped. Needs a tokio runtime.
    pub fn start(this: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            warn!(
                "no tokio runtime: transactional producer groups are not registered with brokers"
            );
            return;
        };
        let weak: Weak<Self> = Arc::downgrade(this);
        let timings = this.timings;
        runtime.spawn(async move {
            let mut beat = tokio::time::interval(timings.heartbeat_period);
            let mut scan = tokio::time::interval(timings.expire_scan);
            beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            scan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let Some(this) = weak.upgrade() else { break };
                tokio::select! {
                    _ = beat.tick() => this.register_groups().await,
                    () = this.wake.notified() => this.register_groups().await,
                    _ = scan.tick() => this.table.lock().clean(now_ms()),
                }
            }
        });
    }

    /// `client_id` publishes `topics` (its settings; a heartbeat repeats them): it produces
    /// for the groups of those names.
    pub fn register_producer<'a>(
        &self,
        client_id: &str,
        topics: impl IntoIterator<Item = &'a str>,
    ) {
        self.producers.lock().register(client_id, topics);
    }

    /// `client_id` is gone; the groups it leaves without a producer are unregistered from the
    /// brokers they were registered with.
    pub fn unregister_client(&self, client_id: &str) {
        let emptied = self.producers.lock().unregister(client_id);
        for group in emptied {
            let Some(brokers) = self.transactional.lock().remove(&group) else {
                continue;
            };
            info!(
                group,
                "last producer of a transactional group gone: unregistering it"
            );
            for addr in brokers {
                let header = UnregisterClientRequestHeader {
                    client_id: HEARTBEAT_CLIENT_ID.to_owned(),
                    producer_group: Some(group.clone()),
                    consumer_group: None,
                };
                let request = RemotingCommand::request_with(RequestCode::UnregisterClient, &header);
                self.spawn_request(addr, request, "UNREGISTER_CLIENT");
            }
        }
    }

    /// Sends `request` to `addr` in a task of its own, logging the outcome.
    fn spawn_request(&self, addr: String, request: RemotingCommand, what: &'static str) {
        let backend = Arc::clone(&self.backend);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            match backend
                .invoke(Target::Broker(addr.clone()), request, REGISTRATION_TIMEOUT)
                .await
            {
                Ok(r) if r.code() == i32::from(ResponseCode::Success) => {
                    debug!(broker = %addr, what, "done");
                }
                Ok(r) => {
                    warn!(broker = %addr, what, code = r.code(), remark = ?r.remark(), "refused")
                }
                Err(e) => warn!(broker = %addr, what, error = %e, "failed"),
            }
        });
    }

    /// Whether `group`'s topic takes transactional messages (cached as its type is).
    async fn is_transactional(&self, group: &str) -> bool {
        if self.transactional.lock().contains_key(group) {
            return true;
        }
        if self.types.get(group).await == TopicMessageType::Transaction {
            self.transactional
                .lock()
                .entry(group.to_owned())
                .or_default();
            return true;
        }
        false
    }

    /// One registration round: every transactional group with a producer, to the brokers of
    /// its topic (Apache's `scanProducerHeartBeat`).
    async fn register_groups(&self) {
        let online = self.producers.lock().online();
        let mut at: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for group in online {
            if !self.is_transactional(&group).await {
                continue;
            }
            let route = match self.routes.get(&group).await {
                Ok(r) => r,
                Err(e) => {
                    debug!(group, error = %e, "no route for a transactional group");
                    continue;
                }
            };
            let brokers: BTreeSet<String> = route
                .data
                .broker_datas
                .iter()
                .filter_map(|b| {
                    b.master_addr()
                        .or_else(|| b.broker_addrs.values().next().map(String::as_str))
                        .map(str::to_owned)
                })
                .collect();
            for addr in &brokers {
                at.entry(addr.clone()).or_default().push(group.clone());
            }
            if let Some(known) = self.transactional.lock().get_mut(&group) {
                known.extend(brokers);
            }
        }
        for (addr, groups) in at {
            for batch in groups.chunks(self.timings.heartbeat_batch) {
                debug!(broker = %addr, groups = ?batch, "registering transactional producer groups");
                self.spawn_request(addr.clone(), registration(batch), "HEART_BEAT");
            }
        }
    }

    /// A send of TRANSACTION messages of `producer_group` to the broker at `broker_addr`
    /// answered `response` (`entries` the result entries made of it): records each half
    /// message the broker took.
    pub fn record_sent(
        &self,
        producer_group: &str,
        broker_addr: &str,
        topic: &str,
        response: &RemotingCommand,
        entries: &[pb::SendResultEntry],
    ) {
        let Ok(header) = response.decode_header::<SendMessageResponseHeader>() else {
            return;
        };
        // A batch answers its offset message ids comma-separated.
        let ids: Vec<&str> = header.msg_id.split(',').collect();
        let expire_at_ms = now_ms().saturating_add(millis(self.timings.expire));
        let ok = i32::from(Code::Ok);
        let mut table = self.table.lock();
        for (i, entry) in entries.iter().enumerate() {
            if entry.status.as_ref().map(|s| s.code) != Some(ok)
                || entry.transaction_id.trim().is_empty()
            {
                continue;
            }
            let Some(commit_log_offset) = ids
                .get(i)
                .and_then(|id| OffsetMsgId::decode(id.trim()).ok())
                .and_then(|id| i64::try_from(id.offset).ok())
            else {
                warn!(
                    broker = broker_addr,
                    msg_id = header.msg_id,
                    "send answered no offset message id: the transaction cannot be ended"
                );
                continue;
            };
            table.add(
                producer_group,
                TransactionData {
                    broker_addr: broker_addr.to_owned(),
                    topic: topic.to_owned(),
                    tran_state_table_offset: entry.offset,
                    commit_log_offset,
                    transaction_id: entry.transaction_id.clone(),
                    expire_at_ms,
                },
            );
        }
        drop(table);
        let new = !self.transactional.lock().contains_key(producer_group);
        if new {
            self.transactional
                .lock()
                .entry(producer_group.to_owned())
                .or_default();
            // Registered at once: the broker's first check may come before the next round.
            self.wake.notify_one();
        }
    }

    /// EndTransaction of `topic` (validated; also the producer group).
    ///
    /// # Errors
    /// INVALID_TRANSACTION_ID for an empty id, INTERNAL_SERVER_ERROR when no entry is held,
    /// the broker's refusal or the transport's failure.
    pub async fn end(
        &self,
        topic: &str,
        request: &pb::EndTransactionRequest,
    ) -> Result<(), Refusal> {
        if request.transaction_id.trim().is_empty() {
            return Err(Refusal::new(
                Code::InvalidTransactionId,
                "transaction id cannot be empty",
            ));
        }
        let commit_or_rollback = match request.resolution() {
            TransactionResolution::Commit => sys_flag::TRANSACTION_COMMIT_TYPE,
            TransactionResolution::Rollback => sys_flag::TRANSACTION_ROLLBACK_TYPE,
            TransactionResolution::Unspecified => sys_flag::TRANSACTION_NOT_TYPE,
        };
        let from_check = request.source() == TransactionSource::SourceServerCheck;
        let producer_group = topic;
        let Some(data) = self
            .table
            .lock()
            .poll(producer_group, &request.transaction_id, now_ms())
        else {
            debug!(
                topic,
                transaction_id = request.transaction_id,
                "end of an unknown transaction"
            );
            return Err(Refusal::new(Code::InternalServerError, NO_TRANSACTION_DATA));
        };
        if commit_or_rollback == sys_flag::TRANSACTION_NOT_TYPE {
            // The broker does nothing with it; its check-back will ask again.
            debug!(
                topic,
                transaction_id = request.transaction_id,
                "transaction left unknown"
            );
            return Ok(());
        }
        let command = end_request(
            &data,
            topic,
            producer_group,
            commit_or_rollback,
            from_check,
            &request.message_id,
        );
        debug!(
            topic,
            broker = data.broker_addr,
            transaction_id = data.transaction_id,
            commit = commit_or_rollback == sys_flag::TRANSACTION_COMMIT_TYPE,
            from_check,
            "end transaction"
        );
        let response = self
            .backend
            .invoke(
                Target::Broker(data.broker_addr.clone()),
                command,
                self.timings.end_timeout,
            )
            .await?;
        if response.code() == i32::from(ResponseCode::Success) {
            Ok(())
        } else {
            Err(Refusal::from_response(response.code(), response.remark()))
        }
    }

    /// A broker's CHECK_TRANSACTION_STATE (`request`, from `broker`): recorded, and passed to
    /// one producer of the message's group as a `RecoverOrphanedTransactionCommand`
    /// (`stream_of` gives a client's telemetry stream, if it has one open).
    pub fn on_check(
        &self,
        broker: &str,
        request: &RemotingCommand,
        stream_of: &dyn Fn(&str) -> Option<CommandSender>,
    ) {
        let header: CheckTransactionStateRequestHeader = match request.decode_header() {
            Ok(h) => h,
            Err(e) => {
                warn!(broker, error = %e, "malformed transaction check");
                return;
            }
        };
        let body = request.body.to_bytes();
        let Ok(Some(Record::Message(message))) = record::decode(&body) else {
            warn!(broker, "transaction check without a message");
            return;
        };
        let props = message.properties_str();
        let Some(group) = properties::get(&props, keys::PGROUP) else {
            debug!(
                broker,
                "transaction check of a message without a producer group"
            );
            return;
        };
        let transaction_id = [
            header.transaction_id.as_deref(),
            header.msg_id.as_deref(),
            properties::get(&props, keys::UNIQ_KEY),
        ]
        .into_iter()
        .flatten()
        .find(|id| !id.trim().is_empty())
        .unwrap_or_default()
        .to_owned();
        let data = TransactionData {
            broker_addr: broker.to_owned(),
            topic: message.topic.to_owned(),
            tran_state_table_offset: header.tran_state_table_offset,
            commit_log_offset: header.commit_log_offset,
            transaction_id: transaction_id.clone(),
            expire_at_ms: now_ms().saturating_add(millis(self.timings.expire)),
        };
        self.table.lock().add(group, data.clone());
        let command = pb::TelemetryCommand {
            status: None,
            command: Some(Command::RecoverOrphanedTransactionCommand(
                pb::RecoverOrphanedTransactionCommand {
                    message: Some(grpc_message(&message, header.offset_msg_id.as_deref())),
                    transaction_id: transaction_id.clone(),
                },
            )),
        };
        let candidates = self.producers.lock().candidates(group);
        for client in candidates {
            let Some(out) = stream_of(&client) else {
                continue;
            };
            if out.try_send(Ok(command.clone())).is_ok() {
                debug!(
                    broker,
                    group, client, transaction_id, "transaction check sent to the client"
                );
                return;
            }
        }
        debug!(
            broker,
            group,
            transaction_id,
            "transaction check dropped: no producer of the group connected (the broker asks again)"
        );
        self.table.lock().remove(group, &data);
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use message::id::hex_upper;
    use remoting::protocol::route::{BrokerData, QueueData, TopicRouteData};
    use sha1::{Digest as _, Sha1};

    use super::*;
    use crate::backend::{BackendError, Inbound};
    use crate::pb::{DigestType, Encoding, MessageType};

    fn data(id: &str, broker: &str, expire_at_ms: i64) -> TransactionData {
        TransactionData {
            broker_addr: broker.into(),
            topic: "T".into(),
            tran_state_table_offset: 7,
            commit_log_offset: 1024,
            transaction_id: id.into(),
            expire_at_ms,
        }
    }

    #[test]
    fn table_polls_the_latest_unexpired_entry_once() {
        let mut t = TransactionTable::new(15);
        t.add("G", data("tx1", "a:1", 100));
        t.add("G", data("tx1", "b:1", 300));
        t.add("G", data("tx1", "b:1", 300)); // the same entry again
        t.add("G", data("tx2", "c:1", 50));
        assert_eq!(t.len(), 3);
        // Another group's id is another transaction.
        assert_eq!(t.poll("H", "tx1", 0), None);
        assert_eq!(
            t.poll("G", "tx1", 200).map(|d| d.broker_addr),
            Some("b:1".into())
        );
        // The one left expired at 100: gone, and nothing is answered.
        assert_eq!(t.poll("G", "tx1", 200), None);
        assert_eq!(t.len(), 1);
        t.clean(60);
        assert!(t.is_empty());
    }

    #[test]
    fn table_keeps_at_most_max_entries_per_id() {
        let mut t = TransactionTable::new(2);
        for (i, expire) in [30, 10, 20].into_iter().enumerate() {
            t.add("G", data("tx", &format!("b{i}:1"), expire));
        }
        assert_eq!(t.len(), 2);
        // The entry that expired first (10) went.
        assert_eq!(t.poll("G", "tx", 0).map(|d| d.expire_at_ms), Some(30));
        assert_eq!(t.poll("G", "tx", 0).map(|d| d.expire_at_ms), Some(20));
        assert_eq!(t.poll("G", "tx", 0), None);
        let d = data("tx", "a:1", 5);
        t.add("G", d.clone());
        t.remove("G", &d);
        assert!(t.is_empty());
    }

    #[test]
    fn producer_groups_round_robin_and_empty_groups() {
        let mut p = ProducerGroups::default();
        p.register("c1", ["T1", "T2"]);
        p.register("c2", ["T1"]);
        assert_eq!(p.online(), ["T1", "T2"]);
        let first = p.candidates("T1");
        let second = p.candidates("T1");
        assert_eq!(first.len(), 2);
        assert_ne!(
            first[0], second[0],
            "each check starts with the next producer"
        );
        assert!(p.candidates("T3").is_empty());
        assert_eq!(p.unregister("c2"), Vec::<String>::new());
        assert_eq!(p.unregister("c1"), ["T1", "T2"]);
        assert!(p.online().is_empty());
    }

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    /// A half message as a broker's check carries it.
    fn check_body(props: &str, body: &[u8]) -> Vec<u8> {
        let mut f = crate::test_util::fields("TopicTx", body, props);
        f.sys_flag = sys_flag::TRANSACTION_PREPARED_TYPE;
        crate::test_util::encode(&f)
    }

    #[test]
    fn a_checked_message_as_grpc_shows_it() {
        let props = properties::build([
            (keys::TRAN_MSG, "true"),
            (keys::PGROUP, "TopicTx"),
            (keys::UNIQ_KEY, "U1"),
            (keys::TAGS, "TagA"),
            (keys::KEYS, "k1 k2"),
            (keys::REAL_TOPIC, "TopicTx"),
            ("idx", "3"),
        ]);
        let bytes = check_body(&props, b"tx-2");
        let Ok(Some(Record::Message(m))) = record::decode(&bytes) else {
            panic!("a record")
        };
        let g = grpc_message(&m, Some("OFFSETID"));
        assert_eq!(g.topic.unwrap().name, "TopicTx");
        assert_eq!(g.body.as_ref(), b"tx-2");
        assert_eq!(g.user_properties.len(), 1);
        assert_eq!(g.user_properties.get("idx").map(String::as_str), Some("3"));
        let s = g.system_properties.unwrap();
        assert_eq!(s.message_id, "U1");
        assert_eq!(s.tag.as_deref(), Some("TagA"));
        assert_eq!(s.keys, ["k1", "k2"]);
        assert_eq!(s.message_type(), MessageType::Transaction);
        assert_eq!(s.body_encoding(), Encoding::Identity);
        let digest = s.body_digest.unwrap();
        assert_eq!(digest.r#type(), DigestType::Sha1);
        // sha1("tx-2")
        assert_eq!(digest.checksum, hex_upper(&Sha1::digest(b"tx-2")));
        assert_eq!(digest.checksum.len(), 40);
        assert_eq!(s.born_host, "10.0.0.9");
        assert_eq!(s.store_host, "127.0.0.1:10911");
        assert_eq!(
            s.born_timestamp,
            Some(prost_types::Timestamp {
                seconds: 1_700_000_000,
                nanos: 123_000_000
            })
        );
        assert_eq!((s.queue_id, s.queue_offset), (2, Some(5)));
        assert_eq!(s.delivery_attempt, Some(1));
    }

    // ------------------------------------------------------------ over a fake backend

    /// Answers name server and broker requests as a one-broker cluster would, recording the
    /// broker requests.
    #[derive(Debug, Default)]
    struct FakeCluster {
        requests: Mutex<Vec<(String, RemotingCommand)>>,
        end_code: AtomicUsize,
    }

    const BROKER: &str = "127.0.0.1:10911";

    impl FakeCluster {
        fn of_code(&self, code: i32) -> Vec<RemotingCommand> {
            self.requests
                .lock()
                .iter()
                .filter(|(_, r)| r.code() == code)
                .map(|(_, r)| r.clone())
                .collect()
        }
    }

    impl Backend for FakeCluster {
        async fn invoke(
            &self,
            target: Target,
            request: RemotingCommand,
            _timeout: Duration,
        ) -> Result<RemotingCommand, BackendError> {
            match target {
                Target::Namesrv => {
                    let route = TopicRouteData {
                        queue_datas: vec![QueueData {
                            broker_name: "b".into(),
                            read_queue_nums: 4,
                            write_queue_nums: 4,
                            perm: 6,
                            topic_sys_flag: 0,
                        }],
                        broker_datas: vec![BrokerData {
                            cluster: "C".into(),
                            broker_name: "b".into(),
                            broker_addrs: [(0, BROKER.to_owned())].into_iter().collect(),
                            ..BrokerData::default()
                        }],
                        ..TopicRouteData::default()
                    };
                    let body =
                        remoting::fastjson::to_vec(&route, remoting::fastjson::KeyStyle::Fastjson)
                            .unwrap();
                    Ok(RemotingCommand::response(ResponseCode::Success, None).with_body(body))
                }
                Target::Broker(addr) => {
                    let code = if request.code() == i32::from(RequestCode::EndTransaction) {
                        i32::try_from(self.end_code.load(Ordering::Relaxed)).unwrap()
                    } else if request.code() == i32::from(RequestCode::HeartBeat)
                        || request.code() == i32::from(RequestCode::UnregisterClient)
                    {
                        0
                    } else {
                        // GET_TOPIC_CONFIG and the like: not served here.
                        i32::from(ResponseCode::SystemError)
                    };
                    self.requests.lock().push((addr, request));
                    Ok(RemotingCommand::response(code, None))
                }
            }
        }

        fn serve_inbound(&self, _: Arc<dyn Inbound>) {}
    }

    fn transactions(config: &ProxyConfig) -> (Arc<FakeCluster>, Arc<Transactions<FakeCluster>>) {
        let cluster = Arc::new(FakeCluster::default());
        let routes = Arc::new(Routes::new(Arc::clone(&cluster)));
        (
            Arc::clone(&cluster),
            Arc::new(Transactions::new(cluster, routes, config)),
        )
    }

    fn sent_response(transaction_id: &str, commit_log_offset: u64) -> RemotingCommand {
        let header = SendMessageResponseHeader {
            msg_id: OffsetMsgId {
                addr: addr(BROKER),
                offset: commit_log_offset,
            }
            .encode(),
            queue_id: 1,
            queue_offset: 9,
            transaction_id: Some(transaction_id.to_owned()),
            ..SendMessageResponseHeader::default()
        };
        RemotingCommand::response(ResponseCode::Success, None).with_header(&header)
    }

    fn entry(transaction_id: &str) -> pb::SendResultEntry {
        pb::SendResultEntry {
            status: Some(crate::status::ok()),
            message_id: transaction_id.to_owned(),
            transaction_id: transaction_id.to_owned(),
            offset: 9,
            recall_handle: String::new(),
        }
    }

    fn end(
        id: &str,
        resolution: TransactionResolution,
        source: TransactionSource,
    ) -> pb::EndTransactionRequest {
        pb::EndTransactionRequest {
            topic: Some(pb::Resource {
                resource_namespace: String::new(),
                name: "TopicTx".into(),
            }),
            message_id: id.to_owned(),
            transaction_id: id.to_owned(),
            resolution: resolution.into(),
            source: source.into(),
            trace_context: String::new(),
        }
    }

    #[tokio::test]
    async fn a_sent_half_message_is_ended_at_its_broker_once() {
        let (cluster, tx) = transactions(&ProxyConfig::default());
        tx.record_sent(
            "TopicTx",
            BROKER,
            "TopicTx",
            &sent_response("U1", 4096),
            &[entry("U1")],
        );
        tx.end(
            "TopicTx",
            &end(
                "U1",
                TransactionResolution::Commit,
                TransactionSource::SourceClient,
            ),
        )
        .await
        .unwrap();
        let ends = cluster.of_code(i32::from(RequestCode::EndTransaction));
        assert_eq!(ends.len(), 1);
        let h: EndTransactionRequestHeader = ends[0].decode_header().unwrap();
        assert_eq!(h.producer_group, "TopicTx");
        assert_eq!(h.topic.as_deref(), Some("TopicTx"));
        assert_eq!((h.tran_state_table_offset, h.commit_log_offset), (9, 4096));
        assert_eq!(h.commit_or_rollback, sys_flag::TRANSACTION_COMMIT_TYPE);
        assert_eq!(h.from_transaction_check, Some(false));
        assert_eq!(
            (h.msg_id.as_str(), h.transaction_id.as_deref()),
            ("U1", Some("U1"))
        );
        // Ended: a second end knows nothing of it, as Apache answers.
        let again = tx
            .end(
                "TopicTx",
                &end(
                    "U1",
                    TransactionResolution::Rollback,
                    TransactionSource::SourceClient,
                ),
            )
            .await
            .unwrap_err();
        assert_eq!(
            (again.code, again.message.as_str()),
            (Code::InternalServerError, NO_TRANSACTION_DATA)
        );
        let empty = tx
            .end(
                "TopicTx",
                &end(
                    " ",
                    TransactionResolution::Commit,
                    TransactionSource::SourceClient,
                ),
            )
            .await
            .unwrap_err();
        assert_eq!(empty.code, Code::InvalidTransactionId);
        assert_eq!(
            cluster
                .of_code(i32::from(RequestCode::EndTransaction))
                .len(),
            1
        );
    }

    #[tokio::test]
    async fn a_broker_refusal_is_reported_and_unknown_asks_nothing() {
        let (cluster, tx) = transactions(&ProxyConfig::default());
        cluster.end_code.store(1, Ordering::Relaxed);
        tx.record_sent(
            "TopicTx",
            BROKER,
            "TopicTx",
            &sent_response("U1", 1),
            &[entry("U1")],
        );
        let refused = tx
            .end(
                "TopicTx",
                &end(
                    "U1",
                    TransactionResolution::Rollback,
                    TransactionSource::SourceClient,
                ),
            )
            .await
            .unwrap_err();
        assert_eq!(refused.code, Code::InternalServerError);
        tx.record_sent(
            "TopicTx",
            BROKER,
            "TopicTx",
            &sent_response("U2", 2),
            &[entry("U2")],
        );
        tx.end(
            "TopicTx",
            &end(
                "U2",
                TransactionResolution::Unspecified,
                TransactionSource::SourceClient,
            ),
        )
        .await
        .unwrap();
        assert_eq!(
            cluster
                .of_code(i32::from(RequestCode::EndTransaction))
                .len(),
            1
        );
    }

    #[tokio::test]
    async fn a_check_goes_to_a_producer_and_its_answer_ends_it() {
        let (cluster, tx) = transactions(&ProxyConfig::default());
        let props = properties::build([
            (keys::TRAN_MSG, "true"),
            (keys::PGROUP, "TopicTx"),
            (keys::UNIQ_KEY, "U7"),
        ]);
        let header = CheckTransactionStateRequestHeader {
            topic: Some("TopicTx".into()),
            tran_state_table_offset: 33,
            commit_log_offset: 8192,
            msg_id: Some("U7".into()),
            transaction_id: Some("U7".into()),
            offset_msg_id: None,
        };
        let check = RemotingCommand::request_with(RequestCode::CheckTransactionState, &header)
            .with_body(check_body(&props, b"tx-5"));

        // No producer connected: dropped, nothing kept.
        tx.on_check(BROKER, &check, &|_| None);
        let none = tx
            .end(
                "TopicTx",
                &end(
                    "U7",
                    TransactionResolution::Commit,
                    TransactionSource::SourceServerCheck,
                ),
            )
            .await
            .unwrap_err();
        assert_eq!(none.message, NO_TRANSACTION_DATA);

        // A producer of the group with a stream gets the command.
        let (out, mut commands) = tokio::sync::mpsc::channel(4);
        tx.register_producer("c1", ["TopicTx"]);
        tx.on_check(BROKER, &check, &|client| {
            (client == "c1").then(|| out.clone())
        });
        let Some(Ok(pb::TelemetryCommand {
            command: Some(Command::RecoverOrphanedTransactionCommand(recover)),
            ..
        })) = commands.try_recv().ok()
        else {
            panic!("a recovery command on the stream")
        };
        assert_eq!(recover.transaction_id, "U7");
        assert_eq!(recover.message.unwrap().body.as_ref(), b"tx-5");

        tx.end(
            "TopicTx",
            &end(
                "U7",
                TransactionResolution::Commit,
                TransactionSource::SourceServerCheck,
            ),
        )
        .await
        .unwrap();
        let ends = cluster.of_code(i32::from(RequestCode::EndTransaction));
        let h: EndTransactionRequestHeader = ends[0].decode_header().unwrap();
        assert_eq!((h.tran_state_table_offset, h.commit_log_offset), (33, 8192));
        assert_eq!(h.from_transaction_check, Some(true));
    }

    #[tokio::test]
    async fn transactional_groups_are_registered_then_unregistered() {
        let (cluster, tx) = transactions(&ProxyConfig::default());
        tx.register_producer("c1", ["TopicTx", "Plain"]);
        // A transactional send marks the group (the fake serves no topic config: Plain's
        // type stays unknown, so it is not registered).
        tx.record_sent(
            "TopicTx",
            BROKER,
            "TopicTx",
            &sent_response("U1", 1),
            &[entry("U1")],
        );
        tx.register_groups().await;
        // The requests go out in tasks of their own.
        for _ in 0..100 {
            if !cluster
                .of_code(i32::from(RequestCode::HeartBeat))
                .is_empty()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let beats = cluster.of_code(i32::from(RequestCode::HeartBeat));
        assert_eq!(beats.len(), 1);
        let body: HeartbeatData = serde_json::from_slice(&beats[0].body.to_bytes()).unwrap();
        assert_eq!(body.client_id, HEARTBEAT_CLIENT_ID);
        assert_eq!(
            body.producer_data_set,
            [ProducerData {
                group_name: "TopicTx".into()
            }]
        );

        tx.unregister_client("c1");
        for _ in 0..100 {
            if !cluster
                .of_code(i32::from(RequestCode::UnregisterClient))
                .is_empty()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let gone = cluster.of_code(i32::from(RequestCode::UnregisterClient));
        assert_eq!(gone.len(), 1);
        let h: UnregisterClientRequestHeader = gone[0].decode_header().unwrap();
        assert_eq!(h.client_id, HEARTBEAT_CLIENT_ID);
        assert_eq!(h.producer_group.as_deref(), Some("TopicTx"));
    }
}
