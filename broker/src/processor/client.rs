//! Client bookkeeping codes: HEART_BEAT, UNREGISTER_CLIENT, CHECK_CLIENT_CONFIG,
//! GET_CONSUMER_LIST_BY_GROUP, UPDATE_CONSUMER_OFFSET, LOCK_BATCH_MQ, UNLOCK_BATCH_MQ.
//! (QUERY_CONSUMER_OFFSET needs the store and lives with the store-backed handlers.)

use remoting::protocol::broker::{
    GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
use remoting::protocol::constants::{perm, system, topic_sys_flag};
use remoting::protocol::heartbeat::{
    CheckClientRequestBody, GetConsumerListByGroupResponseBody, HeartbeatData,
    LockBatchRequestBody, LockBatchResponseBody,
};
use remoting::{Channel, RemotingCommand, ResponseCode, fastjson};
use tracing::debug;

use super::{Handled, Refusal, success};
use crate::client_manager::{
    ClientChannelInfo, ConsumerManager, ConsumerRegistration, ProducerManager,
};
use crate::clock::now_ms;
use crate::consumer_offset::ConsumerOffsetManager;
use crate::rebalance_lock::RebalanceLockManager;
use crate::subscription_group::SubscriptionGroupManager;
use crate::topic_config::TopicConfigManager;

/// What the client handlers touch.
#[derive(Debug, Clone, Copy)]
pub struct ClientTables<'a> {
    /// Topics (retry topics are created on heartbeat).
    pub topics: &'a TopicConfigManager,
    /// Subscription groups.
    pub groups: &'a SubscriptionGroupManager,
    /// Consumers.
    pub consumers: &'a ConsumerManager,
    /// Producers.
    pub producers: &'a ProducerManager,
    /// Offsets.
    pub offsets: &'a ConsumerOffsetManager,
    /// Orderly locks.
    pub locks: &'a RebalanceLockManager,
}

fn body_bytes(request: &RemotingCommand) -> bytes::Bytes {
    request.body.to_bytes()
}

/// HEART_BEAT: registers the client's producer and consumer groups; creates each
/// consumer group's `%RETRY%` topic.
pub fn heartbeat(t: ClientTables<'_>, channel: &Channel, request: &RemotingCommand) -> Handled {
    let data: HeartbeatData = fastjson::from_slice(&body_bytes(request))?;
    let info = ClientChannelInfo {
        channel: channel.clone(),
        client_id: data.client_id.clone(),
        language: request.header.language,
        version: request.header.version,
        last_update: now_ms(),
    };
    for consumer in &data.consumer_data_set {
        let mut notify = true;
        if let Some(group) = t.groups.find_or_create(&consumer.group_name) {
            notify = group.notify_consumer_ids_changed_enable;
            let sys_flag = if consumer.unit_mode {
                topic_sys_flag::UNIT_SUB
            } else {
                0
            };
            t.topics.create_in_send_back(
                &system::retry_topic(&consumer.group_name),
                group.retry_queue_nums,
                perm::READ | perm::WRITE,
                sys_flag,
            );
        }
        let changed = t.consumers.register(ConsumerRegistration {
            group: &consumer.group_name,
            client: info.clone(),
            consume_type: consumer.consume_type,
            message_model: consumer.message_model,
            consume_from_where: consumer.consume_from_where,
            subscriptions: &consumer.subscription_data_set,
            notify,
        });
        if changed {
            debug!(group = %consumer.group_name, client = %data.client_id, "consumer registration changed");
        }
    }
    for producer in &data.producer_data_set {
        t.producers.register(&producer.group_name, info.clone());
    }
    Ok(success())
}

/// UNREGISTER_CLIENT.
pub fn unregister_client(
    t: ClientTables<'_>,
    channel: &Channel,
    request: &RemotingCommand,
) -> Handled {
    let header: UnregisterClientRequestHeader = request.decode_header()?;
    if let Some(group) = header.producer_group.as_deref().filter(|g| !g.is_empty()) {
        t.producers.unregister(group, channel);
    }
    if let Some(group) = header.consumer_group.as_deref().filter(|g| !g.is_empty()) {
        let notify = t
            .groups
            .find(group)
            .is_none_or(|g| g.notify_consumer_ids_changed_enable);
        t.consumers.unregister(group, channel, notify);
    }
    Ok(success())
}

/// CHECK_CLIENT_CONFIG: TAG subscriptions are fine; SQL92 needs `enablePropertyFilter`,
/// which sluice does not support.
pub fn check_client_config(request: &RemotingCommand) -> Handled {
    let body: CheckClientRequestBody = fastjson::from_slice(&body_bytes(request))?;
    match body.subscription_data {
        Some(sub) if !sub.expression_type.eq_ignore_ascii_case("TAG") => {
            Err(Refusal::system(format!(
                "The broker does not support consumer to filter message by {}",
                sub.expression_type
            )))
        }
        _ => Ok(success()),
    }
}

/// GET_CONSUMER_LIST_BY_GROUP.
pub fn consumer_list(t: ClientTables<'_>, request: &RemotingCommand) -> Handled {
    let header: GetConsumerListByGroupRequestHeader = request.decode_header()?;
    let ids = t
        .consumers
        .group(&header.consumer_group)
        .map(|g| g.client_ids())
        .unwrap_or_default();
    if ids.is_empty() {
        return Err(Refusal::system(format!(
            "no consumer for this group, {}",
            header.consumer_group
        )));
    }
    let body = GetConsumerListByGroupResponseBody {
        consumer_id_list: ids,
    };
    Ok(success().with_body(fastjson::to_vec(&body, fastjson::KeyStyle::Fastjson)?))
}

/// UPDATE_CONSUMER_OFFSET (usually oneway from push consumers every 5 s).
pub fn update_consumer_offset(t: ClientTables<'_>, request: &RemotingCommand) -> Handled {
    let header: UpdateConsumerOffsetRequestHeader = request.decode_header()?;
    t.offsets.commit(
        &header.consumer_group,
        &header.topic,
        header.queue_id,
        header.commit_offset,
    );
    Ok(success())
}

/// LOCK_BATCH_MQ: locks what is free (or already the client's) and answers with the
/// queues the client now holds.
pub fn lock_batch(t: ClientTables<'_>, request: &RemotingCommand) -> Handled {
    let body: LockBatchRequestBody = fastjson::from_slice(&body_bytes(request))?;
    let locked = t
        .locks
        .try_lock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    let resp = LockBatchResponseBody {
        lock_ok_mq_set: locked,
    };
    Ok(success().with_body(fastjson::to_vec(&resp, fastjson::KeyStyle::Fastjson)?))
}

/// UNLOCK_BATCH_MQ.
pub fn unlock_batch(t: ClientTables<'_>, request: &RemotingCommand) -> Handled {
    let body: LockBatchRequestBody = fastjson::from_slice(&body_bytes(request))?;
    t.locks
        .unlock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    Ok(success())
}

/// SYSTEM_ERROR naming a missing body, for codes that need one.
#[must_use]
pub fn missing_body(what: &str) -> Refusal {
    Refusal::new(
        ResponseCode::SystemError,
        format!("{what}: request body is missing"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BrokerConfig;
    use remoting::RequestCode;

    struct Fixture {
        _dir: tempfile::TempDir,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        consumers: ConsumerManager,
        producers: ProducerManager,
        offsets: ConsumerOffsetManager,
        locks: RebalanceLockManager,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let cfg = BrokerConfig::default();
            Fixture {
                topics: TopicConfigManager::load(&cfg, dir.path().join("topics.json")).unwrap(),
                groups: SubscriptionGroupManager::load(dir.path().join("sub.json"), true).unwrap(),
                consumers: ConsumerManager::default(),
                producers: ProducerManager::default(),
                offsets: ConsumerOffsetManager::load(dir.path().join("off.json")).unwrap(),
                locks: RebalanceLockManager::default(),
                _dir: dir,
            }
        }

        fn t(&self) -> ClientTables<'_> {
            ClientTables {
                topics: &self.topics,
                groups: &self.groups,
                consumers: &self.consumers,
                producers: &self.producers,
                offsets: &self.offsets,
                locks: &self.locks,
            }
        }
    }

    const CPP_HEARTBEAT: &[u8] = br#"{"clientID":"30664-127.0.0.1@DEFAULT","consumerDataSet":[{"consumeFromWhere":0,"consumeType":1,"groupName":"g_stub","messageModel":1,"subscriptionDataSet":[{"subString":"*","subVersion":"1795955673742","topic":"%RETRY%g_stub"},{"subString":"*","subVersion":"1795955673742","topic":"PeerTopic"}]}]}
"#;

    #[test]
    fn heartbeat_registers_group_and_retry_topic() {
        let f = Fixture::new();
        let (ch, _rx) = Channel::detached("127.0.0.1:7".parse().unwrap());
        let req =
            RemotingCommand::request(RequestCode::HeartBeat).with_body(CPP_HEARTBEAT.to_vec());
        assert_eq!(heartbeat(f.t(), &ch, &req).unwrap().code(), 0);
        assert_eq!(
            f.topics.select("%RETRY%g_stub").unwrap().write_queue_nums,
            1
        );
        assert!(f.consumers.subscription("g_stub", "PeerTopic").is_some());
        let list = consumer_list(
            f.t(),
            &RemotingCommand::request(RequestCode::GetConsumerListByGroup).with_header(
                &GetConsumerListByGroupRequestHeader {
                    consumer_group: "g_stub".into(),
                },
            ),
        )
        .unwrap();
        let body: GetConsumerListByGroupResponseBody =
            fastjson::from_slice(&list.body.to_bytes()).unwrap();
        assert_eq!(body.consumer_id_list, vec!["30664-127.0.0.1@DEFAULT"]);

        let unknown = consumer_list(
            f.t(),
            &RemotingCommand::request(RequestCode::GetConsumerListByGroup).with_header(
                &GetConsumerListByGroupRequestHeader {
                    consumer_group: "nobody".into(),
                },
            ),
        )
        .unwrap_err();
        assert_eq!(unknown.remark, "no consumer for this group, nobody");
    }

    #[test]
    fn bad_bodies_are_system_errors() {
        let f = Fixture::new();
        let (ch, _rx) = Channel::detached("127.0.0.1:7".parse().unwrap());
        let req = RemotingCommand::request(RequestCode::HeartBeat).with_body(b"{not json".to_vec());
        assert_eq!(
            heartbeat(f.t(), &ch, &req).unwrap_err().code,
            ResponseCode::SystemError
        );
        let req = RemotingCommand::request(RequestCode::UpdateConsumerOffset);
        let err = update_consumer_offset(f.t(), &req).unwrap_err();
        assert_eq!(err.remark, "the custom field <consumerGroup> is null");
    }

    #[test]
    fn sql92_is_refused() {
        let body = br#"{"clientId":"c","group":"g","subscriptionData":{"topic":"T","subString":"a > 1","expressionType":"SQL92","subVersion":1}}"#;
        let req = RemotingCommand::request(RequestCode::CheckClientConfig).with_body(body.to_vec());
        assert!(
            check_client_config(&req)
                .unwrap_err()
                .remark
                .contains("SQL92")
        );
        let tag = br#"{"clientId":"c","group":"g","subscriptionData":{"topic":"T","subString":"*","expressionType":"TAG","subVersion":1}}"#;
        let req = RemotingCommand::request(RequestCode::CheckClientConfig).with_body(tag.to_vec());
        assert!(check_client_config(&req).is_ok());
    }
}
