//! Request processors: one [`Processor`](remoting::server::Processor) that routes every
//! broker code to a handler function, and the one place where handler failures turn
//! into RocketMQ response codes and remarks.
//!
//! Layout:
//! - `client`: heartbeat, unregister, client config check, consumer lists, offsets,
//!   orderly locks (RocketMQ's ClientManageProcessor + ConsumerManageProcessor).
//! - `send`: the three send codes; `send_back`: CONSUMER_SEND_MSG_BACK (retry, DLQ).
//! - `end_transaction`: END_TRANSACTION (commit / rollback of half messages) and
//!   RESUME_CHECK_HALF_MESSAGE.
//! - `pull`: PULL_MESSAGE / LITE_PULL_MESSAGE with long polling.
//! - `pop`: POP_MESSAGE; `ack`: ACK_MESSAGE, BATCH_ACK_MESSAGE,
//!   CHANGE_MESSAGE_INVISIBLETIME; `pop_info`: PEEK_MESSAGE, NOTIFICATION, POLLING_INFO
//!   (RocketMQ 5's POP consumption).
//! - `offsets`: offsets, topic and consume stats, reset offset.
//! - `query`: messages by key and by offset id.
//! - `admin`: topics, groups, config, runtime info, connections.
//! - `role`: role switching and HA status (sluice's private codes).
//!
//! Before any handler, the broker's [`Guard`](auth::Guard) checks the request (4.9 plain ACL,
//! 5.x authentication and authorization); the AUTH_* admin codes are its own.

use std::sync::Arc;

use remoting::server::{ConnectionListener, Processor, Reply};
use remoting::{BodyError, Channel, ExtFieldError, RemotingCommand, RequestCode, ResponseCode};

use crate::broker::Broker;
use crate::role::Role;

pub mod ack;
pub mod admin;
pub mod assignment;
pub mod client;
pub mod end_transaction;
pub mod ha_admin;
pub mod offsets;
pub mod pop;
pub mod pop_info;
pub mod pull;
pub mod query;
pub mod recall;
pub mod reply;
pub mod role;
pub mod send;
pub mod send_back;
pub mod store_admin;

/// Routes every broker request code to its handler.
#[derive(Debug, Clone)]
pub struct BrokerProcessor {
    broker: Arc<Broker>,
    role: Arc<Role>,
}

impl BrokerProcessor {
    /// A processor over the broker of `role`.
    #[must_use]
    pub fn new(role: Arc<Role>) -> Self {
        BrokerProcessor {
            broker: Arc::clone(role.broker()),
            role,
        }
    }

    fn client_tables(&self) -> client::ClientTables<'_> {
        let b = &*self.broker;
        client::ClientTables {
            topics: &b.topics,
            groups: &b.groups,
            consumers: &b.consumers,
            producers: &b.producers,
            offsets: &b.offsets,
            locks: &b.locks,
            filters: &b.filters,
        }
    }
}

impl Processor for BrokerProcessor {
    fn process(&self, channel: &Channel, request: RemotingCommand) -> Reply {
        // Every request, known or not, as Apache's request pipeline runs before any processor;
        // but not the broker's own gRPC endpoint (local mode), which checked its caller
        // already, as Apache's local mode calls the processors past that pipeline.
        if !channel.is_in_process() {
            if let Err(refusal) = self.broker.guard.check(&request, channel.peer_addr()) {
                return Reply::Now(refusal);
            }
        }
        let code = request.code();
        let Ok(known) = RequestCode::try_from(code) else {
            return Reply::Now(not_supported(code));
        };
        let t = self.client_tables();
        let b = &*self.broker;
        let outcome = match known {
            RequestCode::SendMessage
            | RequestCode::SendMessageV2
            | RequestCode::SendBatchMessage => {
                return send::process(&self.broker, self.role.timer(), channel, &request);
            }
            RequestCode::SendReplyMessage | RequestCode::SendReplyMessageV2 => {
                return reply::process(b, channel, &request);
            }
            RequestCode::PullMessage | RequestCode::LitePullMessage => {
                return pull::process(&self.broker, channel, request);
            }
            RequestCode::PopMessage => {
                return pop::process(self.role.pop(), channel, request);
            }
            RequestCode::PeekMessage => return pop_info::peek(self.role.pop(), channel, &request),
            RequestCode::Notification => {
                return pop_info::notification(self.role.pop(), channel, &request);
            }
            RequestCode::PollingInfo => {
                return pop_info::polling_info(self.role.pop(), channel, &request);
            }
            RequestCode::PopRollback => return pop_info::export_pop_records(self.role.pop()),
            RequestCode::AckMessage => return ack::ack(self.role.pop(), channel, &request),
            RequestCode::BatchAckMessage => return ack::batch_ack(self.role.pop(), &request),
            RequestCode::ChangeMessageInvisibletime => {
                return ack::change_invisible_time(self.role.pop(), &request);
            }
            RequestCode::ConsumerSendMsgBack => return send_back::process(b, &request),
            RequestCode::RecallMessage => {
                return recall::process(b, self.role.timer(), channel, &request);
            }
            RequestCode::ResumeCheckHalfMessage => {
                return end_transaction::resume_check_half_message(b, &request);
            }
            RequestCode::EndTransaction => {
                return end_transaction::process(b, self.role.timer(), channel, &request);
            }
            RequestCode::QueryConsumerOffset => offsets::query_consumer_offset(b, &request),
            RequestCode::GetMaxOffset => offsets::max_offset(b, &request),
            RequestCode::GetMinOffset => offsets::min_offset(b, &request),
            RequestCode::GetEarliestMsgStoretime => offsets::earliest_store_time(b, &request),
            RequestCode::SearchOffsetByTimestamp => offsets::search_offset(b, &request),
            RequestCode::GetTopicStatsInfo => offsets::topic_stats(b, &request),
            RequestCode::GetConsumeStats => offsets::consume_stats(b, &request),
            RequestCode::GetBrokerConsumeStats => offsets::broker_consume_stats(b, &request),
            RequestCode::QueryConsumeTimeSpan => offsets::consume_time_span(b, &request),
            RequestCode::InvokeBrokerToResetOffset => offsets::reset_offset(b, &request),
            RequestCode::CloneGroupOffset => offsets::clone_group_offset(b, &request),
            RequestCode::QueryMessage => query::query_message(b, &request),
            RequestCode::ViewMessageById => query::view_message(b, &request),
            RequestCode::SluiceSwitchRole => return role::switch_role(&self.role, &request),
            RequestCode::SluiceHaStatus => return Reply::Now(role::ha_status(&self.role)),
            RequestCode::GetBrokerHaStatus => ha_admin::ha_runtime_info(b),
            RequestCode::CleanExpiredConsumequeue => store_admin::clean_expired_consume_queues(b),
            RequestCode::CleanUnusedTopic => store_admin::clean_unused_topics(b),
            RequestCode::DeleteExpiredCommitlog => store_admin::delete_expired_commit_log(b),
            RequestCode::QueryConsumeQueue => store_admin::query_consume_queue(b, &request),
            RequestCode::SetCommitlogReadMode => store_admin::set_commit_log_read_mode(b, &request),
            RequestCode::GetColdDataFlowCtrInfo => store_admin::cold_data_flow_ctr_info(b),
            RequestCode::UpdateColdDataFlowCtrConfig => {
                store_admin::update_cold_data_flow_ctr_config(b, &request)
            }
            RequestCode::RemoveColdDataFlowCtrConfig => {
                store_admin::remove_cold_data_flow_ctr_config(b, &request)
            }
            RequestCode::CheckRocksdbCqWriteProgress => {
                store_admin::check_rocksdb_cq_write_progress()
            }
            RequestCode::ResetMasterFlushOffset => ha_admin::reset_master_flush_offset(b, &request),
            RequestCode::HeartBeat => client::heartbeat(t, channel, &request),
            RequestCode::UnregisterClient => client::unregister_client(t, channel, &request),
            RequestCode::CheckClientConfig => {
                client::check_client_config(t, b.config().enable_property_filter, &request)
            }
            RequestCode::GetConsumerListByGroup => client::consumer_list(t, &request),
            RequestCode::UpdateConsumerOffset => client::update_consumer_offset(t, &request),
            RequestCode::LockBatchMq => client::lock_batch(t, &request),
            RequestCode::UpdateAndCreateTopic => {
                let started = std::time::Instant::now();
                let reply = admin::update_and_create_topic(&self.broker, &request);
                return timed_topic_create(&self.broker, reply, started);
            }
            RequestCode::DeleteTopicInBroker => admin::delete_topic(b, &request),
            RequestCode::GetAllTopicConfig => admin::all_topic_config(b),
            RequestCode::GetTopicConfig => admin::topic_config(b, &request),
            RequestCode::GetSubscriptiongroupConfig => {
                admin::subscription_group_config(b, &request)
            }
            RequestCode::GetSystemTopicListFromBroker => admin::system_topics(b),
            RequestCode::UpdateAndCreateTopicList => {
                let started = std::time::Instant::now();
                let reply = admin::update_and_create_topic_list(&self.broker, &request);
                return timed_topic_create(&self.broker, reply, started);
            }
            RequestCode::UpdateAndCreateSubscriptiongroup => {
                let started = std::time::Instant::now();
                let outcome = admin::update_subscription_group(b, &request);
                b.metrics
                    .group_created(succeeded(&outcome), started.elapsed());
                outcome
            }
            RequestCode::UpdateAndCreateSubscriptiongroupList => {
                let started = std::time::Instant::now();
                let outcome = admin::update_subscription_group_list(b, &request);
                b.metrics
                    .group_created(succeeded(&outcome), started.elapsed());
                outcome
            }
            RequestCode::DeleteSubscriptiongroup => admin::delete_subscription_group(b, &request),
            RequestCode::GetAllSubscriptiongroupConfig => admin::all_subscription_groups(b),
            RequestCode::GetAllConsumerOffset => admin::all_consumer_offsets(b),
            RequestCode::GetAllDelayOffset => admin::all_delay_offsets(b),
            RequestCode::GetTimerCheckPoint => admin::timer_checkpoint(self.role.timer()),
            RequestCode::GetTimerMetrics => admin::timer_metrics(self.role.timer()),
            RequestCode::SwitchTimerEngine => {
                admin::switch_timer_engine(self.role.timer(), &request)
            }
            RequestCode::GetAllMessageRequestMode => admin::all_message_request_modes(b),
            RequestCode::QueryAssignment => {
                return assignment::query_assignment(&self.broker, &request);
            }
            RequestCode::SetMessageRequestMode => assignment::set_message_request_mode(b, &request),
            RequestCode::GetBrokerConfig => admin::broker_config(b),
            RequestCode::UpdateBrokerConfig => admin::update_broker_config(b, &request),
            RequestCode::GetBrokerRuntimeInfo => admin::runtime_info(b, self.role.timer()),
            RequestCode::GetConsumerConnectionList => admin::consumer_connections(b, &request),
            RequestCode::GetProducerConnectionList => admin::producer_connections(b, &request),
            RequestCode::GetAllProducerInfo => admin::all_producers(b),
            RequestCode::QueryTopicConsumeByWho => admin::topic_consumed_by(b, &request),
            RequestCode::GetConsumerRunningInfo | RequestCode::ConsumeMessageDirectly => {
                return admin::call_consumer(b, &request);
            }
            RequestCode::UnlockBatchMq => client::unlock_batch(t, &request),
            RequestCode::AuthCreateUser
            | RequestCode::AuthUpdateUser
            | RequestCode::AuthDeleteUser
            | RequestCode::AuthGetUser
            | RequestCode::AuthListUser
            | RequestCode::AuthCreateAcl
            | RequestCode::AuthUpdateAcl
            | RequestCode::AuthDeleteAcl
            | RequestCode::AuthGetAcl
            | RequestCode::AuthListAcl => {
                let answer = b.guard.handle_admin(&request);
                return Reply::Now(answer.unwrap_or_else(|| not_supported(code)));
            }
            _ => return Reply::Now(not_supported(code)),
        };
        Reply::Now(respond(outcome))
    }
}

/// Drops a closing connection's clients from the tables; writes the acks a burst of
/// requests brought.
impl ConnectionListener for BrokerProcessor {
    fn on_close(&self, channel: &Channel) {
        self.broker.consumers.channel_closed(channel);
        self.broker.producers.channel_closed(channel);
    }

    fn on_burst_end(&self, _channel: &Channel) {
        self.role.pop().end_burst();
    }
}

fn not_supported(code: i32) -> RemotingCommand {
    RemotingCommand::response(
        ResponseCode::RequestCodeNotSupported,
        Some(format!(" request type {code} not supported")),
    )
}

/// Why a request failed; becomes the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Response code.
    pub code: ResponseCode,
    /// Remark for the client.
    pub remark: String,
}

impl From<crate::timer::TimerRefusal> for Refusal {
    fn from(r: crate::timer::TimerRefusal) -> Self {
        Refusal::new(r.code, r.remark)
    }
}

impl Refusal {
    /// A refusal with `code` and `remark`.
    pub fn new(code: ResponseCode, remark: impl Into<String>) -> Self {
        Refusal {
            code,
            remark: remark.into(),
        }
    }

    /// SYSTEM_ERROR with `remark`.
    pub fn system(remark: impl Into<String>) -> Self {
        Refusal::new(ResponseCode::SystemError, remark)
    }

    /// The response it stands for.
    #[must_use]
    pub fn into_response(self) -> RemotingCommand {
        RemotingCommand::response(self.code, Some(self.remark))
    }
}

impl From<ExtFieldError> for Refusal {
    fn from(e: ExtFieldError) -> Self {
        Refusal::system(e.to_string())
    }
}

impl From<BodyError> for Refusal {
    fn from(e: BodyError) -> Self {
        Refusal::system(e.to_string())
    }
}

/// What a handler returns.
pub type Handled = Result<RemotingCommand, Refusal>;

/// Whether an admin request succeeded (for its metrics).
fn succeeded(outcome: &Handled) -> bool {
    outcome
        .as_ref()
        .is_ok_and(|r| r.code() == ResponseCode::Success.code())
}

/// Times a topic creation until it is answered (`rocketmq_topic_create_execution_time`).
fn timed_topic_create(broker: &Arc<Broker>, reply: Reply, started: std::time::Instant) -> Reply {
    if !broker.metrics.on() {
        return reply;
    }
    let ok = |r: &RemotingCommand| r.code() == ResponseCode::Success.code();
    match reply {
        Reply::Now(r) => {
            broker.metrics.topic_created(ok(&r), started.elapsed());
            Reply::Now(r)
        }
        Reply::Later(future) => {
            let broker = Arc::clone(broker);
            Reply::later(async move {
                let r = future.await;
                broker
                    .metrics
                    .topic_created(r.as_ref().is_some_and(ok), started.elapsed());
                r
            })
        }
        Reply::Nothing => Reply::Nothing,
    }
}

/// The response for a handler's outcome.
#[must_use]
pub fn respond(outcome: Handled) -> RemotingCommand {
    outcome.unwrap_or_else(Refusal::into_response)
}

/// A store offset or size as the wire's signed long (saturating).
pub(crate) fn as_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A SUCCESS response with no remark.
#[must_use]
pub fn success() -> RemotingCommand {
    RemotingCommand::response(ResponseCode::Success, None)
}
