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
use tracing::{debug, warn};

use super::{Handled, Refusal, success};
use crate::client_manager::{
    ClientChannelInfo, ConsumerManager, ConsumerRegistration, ProducerManager,
};
use crate::clock::now_ms;
use crate::consumer_offset::ConsumerOffsetManager;
use crate::filter::{ConsumerFilters, is_tag_type};
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
    /// SQL92 filters (registered by heartbeats).
    pub filters: &'a ConsumerFilters,
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
        t.filters.register(
            &consumer.group_name,
            &consumer.subscription_data_set,
            now_ms(),
        );
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

/// CHECK_CLIENT_CONFIG (RocketMQ's `checkClientConfig`): a TAG subscription is fine;
/// any other needs `enablePropertyFilter` (SYSTEM_ERROR without it) and an expression
/// that compiles (SUBSCRIPTION_PARSE_FAILED with the parser's message).
pub fn check_client_config(
    t: ClientTables<'_>,
    property_filter: bool,
    request: &RemotingCommand,
) -> Handled {
    let body: CheckClientRequestBody = fastjson::from_slice(&body_bytes(request))?;
    let Some(sub) = body.subscription_data else {
        return Ok(success());
    };
    if is_tag_type(Some(&sub.expression_type)) {
        return Ok(success());
    }
    if !property_filter {
        return Err(Refusal::system(format!(
            "The broker does not support consumer to filter message by {}",
            sub.expression_type
        )));
    }
    if let Err(e) = t.filters.compile(&sub.expression_type, &sub.sub_string) {
        warn!(client = %body.client_id, group = %body.group, expression = %sub.sub_string, error = %e, "client filters by an expression that does not compile");
        return Err(Refusal::new(
            ResponseCode::SubscriptionParseFailed,
            e.to_string(),
        ));
    }
    Ok(success())
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
    // RocketMQ 5's checks (4.9 took any offset).
    if !t.groups.contains(&header.consumer_group) {
        return Err(Refusal::new(
            ResponseCode::SubscriptionGroupNotExist,
            format!("Group {} not exist!", header.consumer_group),
        ));
    }
    if !t.topics.contains(&header.topic) {
        return Err(Refusal::new(
            ResponseCode::TopicNotExist,
            format!("Topic {} not exist!", header.topic),
        ));
    }
    let taken = t.offsets.commit_unless_reset(
        &header.consumer_group,
        &header.topic,
        header.queue_id,
        header.commit_offset,
    );
    if !taken {
        // RocketMQ 5's answer: the group's old position must not undo a reset.
        return Ok(RemotingCommand::response(
            ResponseCode::Success,
            "Offset has been previously reset".to_owned(),
        ));
    }
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
        filters: ConsumerFilters,
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
                filters: ConsumerFilters::default(),
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
                filters: &self.filters,
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

    fn check(sub: &str, ty: &str) -> RemotingCommand {
        let body = format!(
            r#"{{"clientId":"c","group":"g","subscriptionData":{{"topic":"T","subString":{sub:?},"expressionType":"{ty}","subVersion":1}}}}"#
        );
        RemotingCommand::request(RequestCode::CheckClientConfig).with_body(body.into_bytes())
    }

    #[test]
    fn check_client_config_as_rocketmq() {
        let f = Fixture::new();
        // Without enablePropertyFilter: SYSTEM_ERROR, whatever the expression.
        let off = check_client_config(f.t(), false, &check("a > 1", "SQL92")).unwrap_err();
        assert_eq!(off.code, ResponseCode::SystemError);
        assert_eq!(
            off.remark,
            "The broker does not support consumer to filter message by SQL92"
        );
        // With it: a good expression passes, a bad one gets the parser's message.
        assert!(check_client_config(f.t(), true, &check("a > 1", "SQL92")).is_ok());
        let bad = check_client_config(f.t(), true, &check("a > 'x'", "SQL92")).unwrap_err();
        assert_eq!(bad.code, ResponseCode::SubscriptionParseFailed);
        assert_eq!(
            bad.remark,
            "java.lang.RuntimeException: Value ''x'' cannot be compared."
        );
        let unknown = check_client_config(f.t(), true, &check("a", "XPATH")).unwrap_err();
        assert_eq!(unknown.code, ResponseCode::SubscriptionParseFailed);
        assert!(unknown.remark.starts_with("Cannot invoke"));
        // TAG subscriptions need nothing.
        for on in [false, true] {
            assert!(check_client_config(f.t(), on, &check("*", "TAG")).is_ok());
        }
    }

    #[test]
    fn heartbeat_registers_sql92_filters() {
        let f = Fixture::new();
        let (ch, _rx) = Channel::detached("127.0.0.1:7".parse().unwrap());
        let body = br#"{"clientID":"c1","consumerDataSet":[{"consumeFromWhere":0,"consumeType":1,"groupName":"g","messageModel":1,"subscriptionDataSet":[{"subString":"a > 1","subVersion":7,"topic":"T","expressionType":"SQL92"},{"subString":"*","subVersion":7,"topic":"%RETRY%g"}]}]}"#;
        let req = RemotingCommand::request(RequestCode::HeartBeat).with_body(body.to_vec());
        heartbeat(f.t(), &ch, &req).unwrap();
        let data = f.filters.get("T", "g").unwrap();
        assert_eq!(
            (data.client_version, data.expression.as_str()),
            (7, "a > 1")
        );
        assert!(f.filters.get("%RETRY%g", "g").is_none());
    }
}
