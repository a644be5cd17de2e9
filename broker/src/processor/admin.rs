//! Admin codes `mqadmin` and consoles use (RocketMQ's AdminBrokerProcessor): topics,
//! subscription groups, broker config, runtime info, connections, the config tables
//! a slave copies, and relaying calls to a consumer.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use remoting::protocol::admin::{
    Connection, ConsumerConnection, GroupList, LanguageCodeOrd, ProducerConnection, ProducerInfo,
    ProducerTableInfo,
};
use remoting::protocol::body::{KvTable, TopicList, properties_to_text, text_to_properties};
use remoting::protocol::broker::{
    CreateTopicRequestHeader, DeleteSubscriptionGroupRequestHeader, DeleteTopicRequestHeader,
    GetBrokerConfigResponseHeader, GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader, GetProducerConnectionListRequestHeader,
    GetSubscriptionGroupConfigRequestHeader, QueryTopicConsumeByWhoRequestHeader,
};
use remoting::protocol::constants::{perm, system, validate_group, validate_topic, version_name};
use remoting::protocol::namesrv::TopicRequestHeader;
use remoting::protocol::subscription::SubscriptionGroupConfig;
use remoting::protocol::topic::{TopicConfig, TopicFilterType};
use remoting::server::Reply;
use remoting::settings::Settings;
use remoting::{Channel, RemotingCommand, RequestCode, ResponseCode, fastjson};
use serde::Serialize;
use tracing::info;

use super::{Handled, Refusal, success};
use crate::broker::Broker;
use crate::config::BrokerConfig;
use crate::timer::TimerService;
use crate::topic_attributes::{self, AttributeError};

/// How long a relayed call to a consumer may take.
const CALL_CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

fn json<T: Serialize>(value: &T) -> Result<Vec<u8>, Refusal> {
    Ok(fastjson::to_vec(value, fastjson::KeyStyle::Fastjson)?)
}

/// UPDATE_AND_CREATE_TOPIC (17).
pub fn update_and_create_topic(broker: &Arc<Broker>, request: &RemotingCommand) -> Reply {
    match prepare_topic_update(broker, request) {
        Err(refusal) => Reply::Now(refusal.into_response()),
        Ok(config) => {
            // The answer waits for the topics.json write that holds the change; changes
            // arriving meanwhile share that write (group commit).
            let generation = broker.topics.update(config);
            let broker = Arc::clone(broker);
            Reply::later(async move {
                Some(match broker.topics.persisted(generation).await {
                    Ok(()) => success(),
                    Err(e) => {
                        Refusal::system(format!("cannot persist the topic: {e}")).into_response()
                    }
                })
            })
        }
    }
}

/// A topic name an operator may create or update: valid, and not a system topic.
fn check_user_topic(broker: &Broker, topic: &str) -> Result<(), Refusal> {
    validate_topic(topic).map_err(|e| Refusal::system(e.to_string()))?;
    if system::is_system_topic(topic) || topic == broker.config().broker_cluster_name {
        return Err(Refusal::system(format!(
            "The topic[{topic}] is conflict with system topic."
        )));
    }
    Ok(())
}

/// UPDATE_AND_CREATE_TOPIC_LIST (18, `mqadmin updateTopicList`): every topic is checked
/// before any is stored; the answer waits for the topics.json write that holds them.
/// (RocketMQ stops at the first unchanged topic and leaves the rest of the list out; here
/// an unchanged one is only skipped.)
pub fn update_and_create_topic_list(broker: &Arc<Broker>, request: &RemotingCommand) -> Reply {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct CreateTopicListRequestBody {
        #[serde(default)]
        topic_config_list: Vec<TopicConfig>,
    }
    let checked = fastjson::from_slice::<CreateTopicListRequestBody>(&request.body.to_bytes())
        .map_err(Refusal::from)
        .and_then(|body| {
            let mut configs = body.topic_config_list;
            for config in &mut configs {
                check_user_topic(broker, &config.topic_name)
                    .map_err(|r| Refusal::new(ResponseCode::InvalidParameter, r.remark))?;
                // The list's attribute maps carry RocketMQ's `+key`/`-key` changes.
                let changes: Vec<String> = std::mem::take(&mut config.attributes)
                    .into_iter()
                    .map(|(k, v)| match k.chars().next() {
                        Some('-') => k,
                        Some('+') => format!("{k}={v}"),
                        _ => format!("+{k}={v}"),
                    })
                    .collect();
                let current = broker.topics.select(&config.topic_name);
                config.attributes = alter_attributes(broker, current.as_ref(), &changes.join(","))?;
            }
            Ok(configs)
        });
    let configs = match checked {
        Ok(configs) => configs,
        Err(refusal) => return Reply::Now(refusal.into_response()),
    };
    let names: Vec<&str> = configs.iter().map(|c| c.topic_name.as_str()).collect();
    info!(topics = ?names, "topic list update");
    let mut generation = None;
    for config in configs {
        if broker.topics.select(&config.topic_name).as_ref() != Some(&config) {
            generation = Some(broker.topics.update(config));
        }
    }
    let Some(generation) = generation else {
        return Reply::Now(success());
    };
    let broker = Arc::clone(broker);
    Reply::later(async move {
        Some(match broker.topics.persisted(generation).await {
            Ok(()) => success(),
            Err(e) => Refusal::system(format!("cannot persist the topics: {e}")).into_response(),
        })
    })
}

/// A topic's attributes after `changes` (`+k=v,-k`; see [`topic_attributes`]), with
/// RocketMQ's codes for a refusal.
fn alter_attributes(
    broker: &Broker,
    current: Option<&TopicConfig>,
    changes: &str,
) -> Result<BTreeMap<String, String>, Refusal> {
    topic_attributes::alter(
        current.map(|c| &c.attributes),
        Some(changes),
        broker.config().enable_mixed_message_type,
    )
    .map_err(|e| match e {
        AttributeError::Mixed => Refusal::new(ResponseCode::InvalidParameter, e.to_string()),
        AttributeError::Invalid(text) => Refusal::system(text),
    })
}

/// UPDATE_AND_CREATE_TOPIC's checks; the topic config to store.
fn prepare_topic_update(
    broker: &Broker,
    request: &RemotingCommand,
) -> Result<TopicConfig, Refusal> {
    let h: CreateTopicRequestHeader = request.decode_header()?;
    check_user_topic(broker, &h.topic)?;
    let current = broker.topics.select(&h.topic);
    let attributes = alter_attributes(
        broker,
        current.as_ref(),
        h.attributes.as_deref().unwrap_or(""),
    )?;
    let config = TopicConfig {
        topic_name: h.topic.clone(),
        read_queue_nums: h.read_queue_nums,
        write_queue_nums: h.write_queue_nums,
        perm: h.perm,
        topic_filter_type: TopicFilterType::from_name(&h.topic_filter_type).unwrap_or_default(),
        topic_sys_flag: h.topic_sys_flag.unwrap_or(0),
        order: h.order,
        attributes,
    };
    Ok(config)
}

/// DELETE_TOPIC_IN_BROKER (215): the config and the topic's offsets go; CommitLog
/// data stays until it expires.
pub fn delete_topic(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: DeleteTopicRequestHeader = request.decode_header()?;
    validate_topic(&h.topic).map_err(|e| Refusal::system(e.to_string()))?;
    if system::is_system_topic(&h.topic) {
        return Err(Refusal::system(format!(
            "The topic[{}] is conflict with system topic.",
            h.topic
        )));
    }
    broker
        .topics
        .delete(&h.topic)
        .map_err(|e| Refusal::system(format!("cannot persist the topics: {e}")))?;
    broker.offsets.remove_topic(&h.topic);
    Ok(success())
}

/// GET_ALL_TOPIC_CONFIG (21): topics.json content (slaves sync from it).
pub fn all_topic_config(broker: &Broker) -> Handled {
    Ok(success().with_body(json(&broker.topics.wrapper())?))
}

/// GET_TOPIC_CONFIG (351, 5.x; `topicStatus` of the 5.x tools): one topic's config
/// (a `TopicConfigAndQueueMapping` without mapping).
pub fn topic_config(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: TopicRequestHeader = request.decode_header()?;
    let config = broker.topics.select(&h.topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::TopicNotExist,
            format!("No topic in this broker. topic: {}", h.topic),
        )
    })?;
    Ok(success().with_body(json(&config)?))
}

/// GET_SUBSCRIPTIONGROUP_CONFIG (352, 5.x): an unknown group is created first when
/// `autoCreateSubscriptionGroup` is on, as RocketMQ does (Apache's proxy asks for every
/// group it serves).
pub fn subscription_group_config(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: GetSubscriptionGroupConfigRequestHeader = request.decode_header()?;
    let config = broker.groups.find_or_create(&h.group).ok_or_else(|| {
        Refusal::new(
            ResponseCode::SubscriptionGroupNotExist,
            "No group in this broker",
        )
    })?;
    Ok(success().with_body(json(&config)?))
}

/// GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305).
pub fn system_topics(broker: &Broker) -> Handled {
    let topic_list = broker
        .topics
        .topic_names()
        .into_iter()
        .filter(|t| system::is_system_topic(t))
        .collect();
    Ok(success().with_body(json(&TopicList {
        topic_list,
        broker_addr: None,
    })?))
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200).
pub fn update_subscription_group(broker: &Broker, request: &RemotingCommand) -> Handled {
    let mut config: SubscriptionGroupConfig = fastjson::from_slice(&request.body.to_bytes())?;
    group_attributes(broker, &mut config)?;
    broker
        .groups
        .update(config)
        .map_err(|e| Refusal::system(format!("cannot persist the group: {e}")))?;
    Ok(success())
}

/// Applies the `+k`/`-k` attributes an update carries to the stored group's.
fn group_attributes(broker: &Broker, config: &mut SubscriptionGroupConfig) -> Result<(), Refusal> {
    let current = broker.groups.find(&config.group_name).map(|g| g.attributes);
    config.attributes = topic_attributes::alter_group(current.as_ref(), &config.attributes)
        .map_err(|e| Refusal::system(e.to_string()))?;
    Ok(())
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225, `mqadmin updateSubGroupList`): every
/// name is checked before any group is stored.
pub fn update_subscription_group_list(broker: &Broker, request: &RemotingCommand) -> Handled {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct SubscriptionGroupList {
        #[serde(default)]
        group_config_list: Vec<SubscriptionGroupConfig>,
    }
    let mut body: SubscriptionGroupList = fastjson::from_slice(&request.body.to_bytes())?;
    for config in &mut body.group_config_list {
        validate_group(&config.group_name)
            .map_err(|e| Refusal::new(ResponseCode::InvalidParameter, e))?;
        group_attributes(broker, config)?;
    }
    for config in body.group_config_list {
        broker
            .groups
            .update(config)
            .map_err(|e| Refusal::system(format!("cannot persist the group: {e}")))?;
    }
    Ok(success())
}

/// DELETE_SUBSCRIPTIONGROUP (207), with its offsets when asked.
pub fn delete_subscription_group(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: DeleteSubscriptionGroupRequestHeader = request.decode_header()?;
    broker
        .groups
        .delete(&h.group_name)
        .map_err(|e| Refusal::system(format!("cannot persist the groups: {e}")))?;
    if h.clean_offset.or(h.remove_offset).unwrap_or(false) {
        broker.offsets.remove_group(&h.group_name);
    }
    Ok(success())
}

/// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201).
pub fn all_subscription_groups(broker: &Broker) -> Handled {
    Ok(success().with_body(json(&broker.groups.wrapper())?))
}

/// GET_ALL_CONSUMER_OFFSET (43). The body carries a `dataVersion` stamped now, as 5.x's does:
/// a 5.x slave copies it into its own table's version and fails on a body without one.
pub fn all_consumer_offsets(broker: &Broker) -> Handled {
    let mut wrapper = broker.offsets.wrapper();
    wrapper.data_version = Some(remoting::protocol::topic::DataVersion::new(
        crate::clock::now_ms(),
    ));
    Ok(success().with_body(json(&wrapper)?))
}

/// GET_ALL_DELAY_OFFSET (45): the schedule service's progress per delay level.
pub fn all_delay_offsets(broker: &Broker) -> Handled {
    Ok(success().with_body(json(&broker.delay_offsets.wrapper())?))
}

/// GET_TIMER_CHECK_POINT (RocketMQ 5 slaves copy it): the timer checkpoint's 56 bytes,
/// with the live read time and enqueue offset.
#[allow(clippy::unnecessary_wraps, reason = "every handler answers Handled")]
pub fn timer_checkpoint(timer: &TimerService) -> Handled {
    let cp = timer.current_checkpoint();
    Ok(success().with_body(bytes::Bytes::copy_from_slice(&cp.encode())))
}

/// GET_TIMER_METRICS (61, RocketMQ 5 slaves copy it): pending timers per real topic.
pub fn timer_metrics(timer: &TimerService) -> Handled {
    Ok(success().with_body(json(&timer.metrics().wrapper())?))
}

/// SWITCH_TIMER_ENGINE (5001, RocketMQ 5.4+): sluice has the file time wheel only, so
/// `F` succeeds (it is the engine in use) and `R` (RocksDB timeline) is refused as
/// Apache refuses it on a broker started without `timerRocksDBEnable`.
pub fn switch_timer_engine(timer: &TimerService, request: &RemotingCommand) -> Handled {
    use remoting::protocol::timer::{
        FILE_TIME_WHEEL, ROCKSDB_TIMELINE, SwitchTimerEngineRequestHeader,
    };
    if !timer.settings().enabled {
        return Err(Refusal::new(
            ResponseCode::InvalidParameter,
            "broker timerWheelEnable is false",
        ));
    }
    let h: SwitchTimerEngineRequestHeader = request
        .decode_header()
        .map_err(|_| Refusal::new(ResponseCode::InvalidParameter, "param error"))?;
    match h.engine_type.as_deref() {
        Some(FILE_TIME_WHEEL) => Ok(RemotingCommand::response(
            ResponseCode::Success,
            Some("switch timer engine success".to_owned()),
        )),
        Some(ROCKSDB_TIMELINE) => Err(Refusal::new(
            ResponseCode::InvalidParameter,
            "timerRocksDBEnable must be configured true when broker start",
        )),
        _ => Err(Refusal::new(ResponseCode::InvalidParameter, "param error")),
    }
}

/// GET_ALL_MESSAGE_REQUEST_MODE (RocketMQ 5 slaves copy it): the pop-mode table, always
/// empty here since SET_MESSAGE_REQUEST_MODE (pop consumption) is not supported.
pub fn all_message_request_modes(broker: &Broker) -> Handled {
    Ok(success().with_body(json(&broker.request_modes.all())?))
}

/// Every setting of the broker and its store as `key=value` properties text.
#[must_use]
pub fn config_properties(broker: &Broker) -> BTreeMap<String, String> {
    let mut props = BTreeMap::new();
    let mut add = |value: serde_json::Value| {
        if let serde_json::Value::Object(map) = value {
            for (k, v) in map {
                let text = match v {
                    serde_json::Value::String(s) => s,
                    serde_json::Value::Null => String::new(),
                    other => other.to_string(),
                };
                props.insert(k, text);
            }
        }
    };
    add(serde_json::to_value(&*broker.config()).unwrap_or_default());
    add(serde_json::to_value(broker.store.config()).unwrap_or_default());
    // Store keys that change at run time: their live values.
    props.insert(
        MAX_MESSAGE_SIZE.into(),
        broker.store.commit_log().max_message_size().to_string(),
    );
    props.insert("listenPort".into(), broker.listen_port().to_string());
    props
}

/// GET_BROKER_CONFIG (26): all settings as properties text; header `version` = the
/// topic table's data version.
pub fn broker_config(broker: &Broker) -> Handled {
    let text = properties_to_text(&config_properties(broker));
    let version = serde_json::to_string(&broker.topics.data_version()).unwrap_or_default();
    Ok(success()
        .with_header(&GetBrokerConfigResponseHeader { version })
        .with_body(text))
}

/// Keys UPDATE_BROKER_CONFIG may change at run time. Store settings need a restart.
/// The store key UPDATE_BROKER_CONFIG may change at run time (the body limit of puts).
const MAX_MESSAGE_SIZE: &str = "maxMessageSize";

const RUNTIME_KEYS: &[&str] = &[
    MAX_MESSAGE_SIZE,
    "brokerPermission",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
    "defaultTopicQueueNums",
    "longPollingEnable",
    "shortPollingTimeMills",
    "notifyConsumerIdsChangedEnable",
    "slaveReadEnable",
    "rejectTransactionMessage",
    "transactionTimeOut",
    "transactionCheckMax",
    "transactionCheckInterval",
    "traceOn",
    "regionId",
    "registerNameServerPeriod",
    "flushConsumerOffsetInterval",
    "namesrvAddr",
    "brokerFastFailureEnable",
    "waitTimeMillsInSendQueue",
];

/// Replaces the live settings with `updated`, read from a copy of them, except the role
/// and id: those belong to role switches, which may have run since the copy was made (a
/// stale role written back would undo a switch half way: a writable store under a slave's
/// role, or a master registered as a slave).
fn apply_update(live: &mut BrokerConfig, updated: BrokerConfig) {
    let (role, id) = (live.broker_role, live.broker_id);
    *live = updated;
    live.broker_role = role;
    live.broker_id = id;
}

/// UPDATE_BROKER_CONFIG (25): body is properties text. Black-listed keys are refused
/// with NO_PERMISSION; keys that only take effect at start are refused with a remark
/// saying so (RocketMQ accepts them silently and ignores them until a restart).
pub fn update_broker_config(broker: &Broker, request: &RemotingCommand) -> Handled {
    let body = request.body.to_bytes();
    let text =
        std::str::from_utf8(&body).map_err(|_| Refusal::system("string2Properties error"))?;
    let updates = text_to_properties(text);
    let black_list = broker.config().config_black_list.clone();
    if updates
        .keys()
        .any(|k| black_list.split(';').any(|b| b.trim() == k))
    {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            "Can not update config in black list.",
        ));
    }
    let mut current = config_properties(broker);
    // A key that needs a restart may be "updated" to the value it has (tools send whole
    // config sets); a real change to one is refused rather than silently ignored.
    if let Some((k, v)) = updates
        .iter()
        .find(|(k, v)| !RUNTIME_KEYS.contains(&k.as_str()) && current.get(*k) != Some(*v))
    {
        return Err(Refusal::system(format!(
            "{k}={v} cannot be applied at run time; set it in the config file and restart"
        )));
    }
    // Store keys: parsed and checked before anything changes.
    let max_message_size = match updates.get(MAX_MESSAGE_SIZE) {
        None => None,
        Some(v) => Some(v.trim().parse::<usize>().map_err(|_| {
            Refusal::system(format!("{MAX_MESSAGE_SIZE}={v} is not a size in bytes"))
        })?),
    };
    // Re-read the whole config with the updates applied, so values are parsed and
    // validated exactly as at start.
    current.extend(updates.clone());
    let settings = Settings::from_pairs(current);
    let mut updated: BrokerConfig = settings
        .deserialize()
        .map_err(|e| Refusal::system(e.to_string()))?;
    updated
        .sanitize()
        .map_err(|e| Refusal::system(e.to_string()))?;
    if let Some(size) = max_message_size {
        broker
            .store
            .commit_log()
            .set_max_message_size(size)
            .map_err(Refusal::system)?;
    }
    info!(?updates, "broker config updated");
    let permission_changed = updated.broker_permission != broker.config().broker_permission;
    let namesrv_changed = updated.namesrv_addr != broker.config().namesrv_addr;
    let addrs = updated.namesrv_addrs();
    broker.update_config(|c| apply_update(c, updated));
    if namesrv_changed {
        broker.namesrv.set_addrs(addrs);
    }
    if permission_changed {
        // Re-register at once so routes carry the new permission.
        broker.topics.touch();
    }
    Ok(success())
}

/// GET_BROKER_RUNTIME_INFO (28): the KV table `clusterList` / `brokerStatus` read: the
/// store's figures plus the broker's counters and version.
pub fn runtime_info(broker: &Broker, timer: &TimerService) -> Handled {
    let mut table = broker.store.runtime_info();
    let version = remoting::command::CURRENT_VERSION;
    table.insert(
        "brokerVersionDesc".to_owned(),
        version_name(version).to_owned(),
    );
    table.insert("brokerVersion".to_owned(), version.to_string());
    for (k, v) in broker.stats.runtime_entries() {
        table.insert(k.to_owned(), v);
    }
    // RocketMQ 5's timer keys, in its units (seconds behind; TPS as a float).
    let timer = if timer.settings().enabled {
        timer.figures()
    } else {
        crate::timer::service::TimerFigures::default()
    };
    for (key, value) in [
        ("timerReadBehind", (timer.read_behind_ms / 1000).to_string()),
        ("timerOffsetBehind", timer.offset_behind.to_string()),
        ("timerCongestNum", timer.congest_num.to_string()),
        ("timerEnqueueTps", java_float(timer.enqueue_tps)),
        ("timerDequeueTps", java_float(timer.dequeue_tps)),
    ] {
        table.insert(key.to_owned(), value);
    }
    // sluice has no send/pull/query thread-pool queues; RocketMQ's tools read these
    // keys, so they are reported empty with RocketMQ's default capacities.
    for (key, value) in [
        ("sendThreadPoolQueueSize", "0"),
        ("pullThreadPoolQueueSize", "0"),
        ("queryThreadPoolQueueSize", "0"),
        ("sendThreadPoolQueueHeadWaitTimeMills", "0"),
        ("pullThreadPoolQueueHeadWaitTimeMills", "0"),
        ("queryThreadPoolQueueHeadWaitTimeMills", "0"),
        ("sendThreadPoolQueueCapacity", "10000"),
        ("pullThreadPoolQueueCapacity", "100000"),
        ("queryThreadPoolQueueCapacity", "20000"),
        ("startAcceptSendRequestTimeStamp", "0"),
    ] {
        table
            .entry(key.to_owned())
            .or_insert_with(|| value.to_owned());
    }
    Ok(success().with_body(json(&KvTable { table })?))
}

/// A rate as Java prints a `float` (`0.0`, `12.5`).
fn java_float(v: f64) -> String {
    #[allow(clippy::cast_possible_truncation, reason = "Java's float")]
    let f = v as f32;
    format!("{f:?}")
}

fn connection(info: &crate::client_manager::ClientChannelInfo) -> Connection {
    Connection {
        client_id: info.client_id.clone(),
        client_addr: info.channel.peer_addr().to_string(),
        language: LanguageCodeOrd(info.language),
        version: info.version,
    }
}

/// GET_CONSUMER_CONNECTION_LIST (203).
pub fn consumer_connections(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: GetConsumerConnectionListRequestHeader = request.decode_header()?;
    let Some(group) = broker.consumers.group(&h.consumer_group) else {
        return Err(Refusal::new(
            ResponseCode::ConsumerNotOnline,
            format!("the consumer group[{}] not online", h.consumer_group),
        ));
    };
    let body = ConsumerConnection {
        connection_set: group.channels.values().map(connection).collect(),
        subscription_table: group.subscriptions.clone(),
        consume_type: Some(group.consume_type),
        message_model: Some(group.message_model),
        consume_from_where: Some(group.consume_from_where),
    };
    Ok(success().with_body(json(&body)?))
}

/// GET_PRODUCER_CONNECTION_LIST (204).
pub fn producer_connections(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: GetProducerConnectionListRequestHeader = request.decode_header()?;
    let channels = broker.producers.channels(&h.producer_group);
    if channels.is_empty() {
        return Err(Refusal::system(format!(
            "the producer group[{}] not exist",
            h.producer_group
        )));
    }
    let body = ProducerConnection {
        connection_set: channels.iter().map(connection).collect(),
    };
    Ok(success().with_body(json(&body)?))
}

/// GET_ALL_PRODUCER_INFO (328).
pub fn all_producers(broker: &Broker) -> Handled {
    let data = broker
        .producers
        .all()
        .into_iter()
        .map(|(group, infos)| {
            let infos = infos
                .iter()
                .map(|i| ProducerInfo {
                    client_id: i.client_id.clone(),
                    remote_ip: i.channel.peer_addr().to_string(),
                    language: i.language,
                    version: i.version,
                    last_update_timestamp: i.last_update,
                })
                .collect();
            (group, infos)
        })
        .collect();
    Ok(success().with_body(json(&ProducerTableInfo { data })?))
}

/// QUERY_TOPIC_CONSUME_BY_WHO (300): groups with offsets on, or subscriptions to, the topic.
pub fn topic_consumed_by(broker: &Broker, request: &RemotingCommand) -> Handled {
    let h: QueryTopicConsumeByWhoRequestHeader = request.decode_header()?;
    let mut groups = broker.offsets.groups_of_topic(&h.topic);
    groups.extend(broker.consumers.groups_subscribing(&h.topic));
    Ok(success().with_body(json(&GroupList { group_list: groups })?))
}

/// GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309): the same
/// request is relayed to the consumer's connection and its answer returned as is.
pub fn call_consumer(broker: &Broker, request: &RemotingCommand) -> Reply {
    let h: GetConsumerRunningInfoRequestHeader = match request.decode_header() {
        Ok(h) => h,
        Err(e) => return Reply::Now(Refusal::from(e).into_response()),
    };
    let Some(client) = broker
        .consumers
        .find_channel(&h.consumer_group, &h.client_id)
    else {
        return Reply::Now(
            Refusal::system(format!(
                "The Consumer <{}> <{}> not online",
                h.consumer_group, h.client_id
            ))
            .into_response(),
        );
    };
    let mut relay = RemotingCommand::request(request.code());
    relay.header.ext_fields = request.header.ext_fields.clone();
    relay.body = request.body.clone();
    if request.code() == RequestCode::ConsumeMessageDirectly.code() {
        direct_consumption(broker, &mut relay);
    }
    let channel: Channel = client.channel;
    Reply::later(async move {
        Some(match channel.invoke(relay, CALL_CLIENT_TIMEOUT).await {
            Ok(answer) => answer,
            Err(remoting::RemotingError::Timeout { .. }) => RemotingCommand::response(
                ResponseCode::ConsumeMsgTimeout,
                Some(format!(
                    "consumer <{}> <{}> Timeout",
                    h.consumer_group, h.client_id
                )),
            ),
            Err(e) => RemotingCommand::response(
                ResponseCode::SystemError,
                Some(format!(
                    "invoke consumer <{}> <{}> Exception: {e}",
                    h.consumer_group, h.client_id
                )),
            ),
        })
    })
}

/// What CONSUME_MESSAGE_DIRECTLY tells the consumer beyond the admin's request, as Apache's
/// broker adds it: this broker's name, the topic's and group's sys flags, and the message
/// itself (the record at the CommitLog offset of the request's offset msg id) as the body.
/// A message not found leaves the body as it came (the consumer answers that it has none).
fn direct_consumption(broker: &Broker, relay: &mut RemotingCommand) {
    let fields = &relay.header.ext_fields;
    let topic = fields.get("topic").map(str::to_owned);
    let group = fields.get("consumerGroup").map(str::to_owned);
    let msg_id = fields.get("msgId").map(str::to_owned);
    let broker_name = broker.config().broker_name.clone();
    relay.header.ext_fields.insert("brokerName", broker_name);
    if let Some(config) = topic.as_deref().and_then(|t| broker.topics.select(t)) {
        relay
            .header
            .ext_fields
            .insert("topicSysFlag", config.topic_sys_flag.to_string());
    }
    if let Some(config) = group.as_deref().and_then(|g| broker.groups.find(g)) {
        relay
            .header
            .ext_fields
            .insert("groupSysFlag", config.group_sys_flag.to_string());
    }
    let record = msg_id
        .as_deref()
        .and_then(|id| message::id::OffsetMsgId::decode(id).ok())
        .and_then(|id| broker.store.look_message_by_offset(id.offset));
    if let Some(record) = record {
        relay.body = record.into();
    }
}

/// Whether a topic may be read from this broker (for admin reads of queues).
#[must_use]
pub fn readable(broker: &Broker) -> bool {
    perm::is_readable(broker.config().broker_permission)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BrokerRole;

    #[test]
    fn a_config_update_keeps_the_role_a_switch_set_meanwhile() {
        let stale = BrokerConfig {
            broker_role: BrokerRole::SLAVE,
            broker_id: 1,
            auto_create_topic_enable: false,
            ..BrokerConfig::default()
        };
        let mut live = BrokerConfig {
            broker_role: BrokerRole::SYNC_MASTER,
            broker_id: 0,
            ..BrokerConfig::default()
        };
        apply_update(&mut live, stale);
        assert_eq!(live.broker_role, BrokerRole::SYNC_MASTER);
        assert_eq!(live.broker_id, 0);
        assert!(!live.auto_create_topic_enable, "the update itself applies");
    }
}
