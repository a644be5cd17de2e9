//! Which request needs which actions on which resources (RocketMQ 5.3.3's
//! `DefaultAuthorizationContextBuilder` for remoting requests).
//!
//! Sends, pulls, heartbeats, offsets and locks are decided from their fields (and bodies) by
//! hand, as Apache does; every other code by the `@RocketMQAction` / `@RocketMQResource`
//! annotations of its request header, written out here as [`ANNOTATED`]. A code in neither is
//! authorized by authentication alone. A retry topic (`%RETRY%g`) stands for its group.
//!
//! Pure: extFields and body in, resources and actions out.

use remoting::{ExtFields, RequestCode};
use serde::Deserialize;

use crate::model::{Action, Resource, ResourceType, is_retry_topic};

/// One thing a request needs: any of `actions` on `resource` (Apache's
/// `DefaultAuthorizationContext`, less subject and source IP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// The resource asked for (always literal).
    pub resource: Resource,
    /// Any one of these, granted, will do.
    pub actions: Vec<Action>,
}

impl Access {
    fn new(resource: Resource, actions: &[Action]) -> Self {
        Access {
            resource,
            actions: actions.to_vec(),
        }
    }
}

/// The request could not be read (Apache: "parse authorization context error.").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable;

/// Where an annotated header names a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceField {
    /// Its type.
    pub kind: ResourceType,
    /// The extFields key.
    pub field: &'static str,
    /// Several names in one field, split on this.
    pub splitter: Option<char>,
}

/// The `@RocketMQAction` of one request header, and its `@RocketMQResource` fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotated {
    /// Request code.
    pub code: i32,
    /// `resource = CLUSTER`: the cluster is the resource when no field names one.
    pub cluster: bool,
    /// Actions asked on every resource.
    pub actions: &'static [Action],
    /// Resource fields, in declaration order.
    pub fields: &'static [ResourceField],
}

const fn f(kind: ResourceType, field: &'static str) -> ResourceField {
    ResourceField {
        kind,
        field,
        splitter: None,
    }
}

const TOPIC: ResourceType = ResourceType::Topic;
const GROUP: ResourceType = ResourceType::Group;
const CLUSTER: ResourceType = ResourceType::Cluster;
const PUB: &[Action] = &[Action::Pub];
const SUB: &[Action] = &[Action::Sub];
const GET: &[Action] = &[Action::Get];
const UPDATE: &[Action] = &[Action::Update];

const fn a(
    code: RequestCode,
    actions: &'static [Action],
    fields: &'static [ResourceField],
) -> Annotated {
    Annotated {
        code: code as i32,
        cluster: false,
        actions,
        fields,
    }
}

const fn c(
    code: RequestCode,
    actions: &'static [Action],
    fields: &'static [ResourceField],
) -> Annotated {
    Annotated {
        code: code as i32,
        cluster: true,
        actions,
        fields,
    }
}

/// Every annotated request header of RocketMQ 5.3.3 (`remoting/protocol/header/**`) whose
/// code the builder does not handle by hand. Headers annotated without a resource of theirs and
/// a non-cluster type (UPDATE_AND_CREATE_TOPIC_LIST, GET_ALL_TOPIC_CONFIG,
/// GET_TOPICS_BY_CLUSTER) ask for nothing, as in Apache.
pub const ANNOTATED: &[Annotated] = &[
    a(
        RequestCode::AckMessage,
        SUB,
        &[f(GROUP, "consumerGroup"), f(TOPIC, "topic")],
    ),
    c(RequestCode::AddBroker, UPDATE, &[]),
    a(
        RequestCode::ChangeMessageInvisibletime,
        SUB,
        &[f(GROUP, "consumerGroup"), f(TOPIC, "topic")],
    ),
    a(
        RequestCode::CheckRocksdbCqWriteProgress,
        GET,
        &[f(TOPIC, "topic")],
    ),
    a(
        RequestCode::CheckTransactionState,
        PUB,
        &[f(TOPIC, "topic")],
    ),
    a(
        RequestCode::CloneGroupOffset,
        UPDATE,
        &[f(GROUP, "destGroup"), f(TOPIC, "topic")],
    ),
    a(
        RequestCode::ConsumeMessageDirectly,
        SUB,
        &[f(GROUP, "consumerGroup"), f(TOPIC, "topic")],
    ),
    c(RequestCode::AuthCreateAcl, UPDATE, &[]),
    a(
        RequestCode::UpdateAndCreateTopic,
        &[Action::Create],
        &[f(TOPIC, "topic")],
    ),
    c(RequestCode::AuthCreateUser, UPDATE, &[]),
    a(
        RequestCode::DeleteSubscriptiongroup,
        &[Action::Delete],
        &[f(GROUP, "groupName")],
    ),
    a(
        RequestCode::DeleteTopicInBroker,
        &[Action::Delete],
        &[f(TOPIC, "topic")],
    ),
    c(RequestCode::AuthDeleteAcl, UPDATE, &[]),
    c(RequestCode::AuthDeleteUser, UPDATE, &[]),
    c(RequestCode::ExchangeBrokerHaInfo, UPDATE, &[]),
    c(RequestCode::ExportRocksdbConfigToJson, GET, &[]),
    c(RequestCode::AuthGetAcl, GET, &[]),
    c(RequestCode::GetAllProducerInfo, GET, &[]),
    a(
        RequestCode::GetBrokerMemberGroup,
        GET,
        &[f(CLUSTER, "clusterName")],
    ),
    c(RequestCode::GetBrokerConsumeStats, GET, &[]),
    a(
        RequestCode::GetConsumeStats,
        GET,
        &[
            f(GROUP, "consumerGroup"),
            f(TOPIC, "topic"),
            ResourceField {
                kind: TOPIC,
                field: "topicList",
                splitter: Some(';'),
            },
        ],
    ),
    a(
        RequestCode::GetConsumerConnectionList,
        GET,
        &[f(GROUP, "consumerGroup")],
    ),
    a(
        RequestCode::GetConsumerRunningInfo,
        GET,
        &[f(GROUP, "consumerGroup")],
    ),
    a(
        RequestCode::InvokeBrokerToGetConsumerStatus,
        GET,
        &[f(TOPIC, "topic"), f(GROUP, "group")],
    ),
    a(
        RequestCode::GetEarliestMsgStoretime,
        GET,
        &[f(TOPIC, "topic")],
    ),
    a(RequestCode::GetMaxOffset, GET, &[f(TOPIC, "topic")]),
    a(RequestCode::GetMinOffset, GET, &[f(TOPIC, "topic")]),
    c(RequestCode::GetProducerConnectionList, GET, &[]),
    a(
        RequestCode::GetSubscriptiongroupConfig,
        GET,
        &[f(GROUP, "group")],
    ),
    a(RequestCode::GetTopicConfig, GET, &[f(TOPIC, "topic")]),
    a(RequestCode::GetTopicStatsInfo, GET, &[f(TOPIC, "topic")]),
    c(RequestCode::AuthGetUser, GET, &[]),
    c(RequestCode::AuthListAcl, GET, &[]),
    c(RequestCode::AuthListUser, GET, &[]),
    a(
        RequestCode::Notification,
        SUB,
        &[f(GROUP, "consumerGroup"), f(TOPIC, "topic")],
    ),
    c(RequestCode::NotifyBrokerRoleChanged, UPDATE, &[]),
    a(
        RequestCode::NotifyConsumerIdsChanged,
        SUB,
        &[f(GROUP, "consumerGroup")],
    ),
    c(RequestCode::NotifyMinBrokerIdChange, UPDATE, &[]),
    a(
        RequestCode::PeekMessage,
        SUB,
        &[f(TOPIC, "topic"), f(GROUP, "consumerGroup")],
    ),
    a(
        RequestCode::PollingInfo,
        GET,
        &[f(GROUP, "consumerGroup"), f(TOPIC, "topic")],
    ),
    a(
        RequestCode::PopMessage,
        SUB,
        &[f(GROUP, "consumerGroup"), f(TOPIC, "topic")],
    ),
    a(
        RequestCode::QueryConsumeQueue,
        GET,
        &[f(TOPIC, "topic"), f(GROUP, "consumerGroup")],
    ),
    a(
        RequestCode::QueryConsumeTimeSpan,
        GET,
        &[f(TOPIC, "topic"), f(GROUP, "group")],
    ),
    a(
        RequestCode::QueryCorrectionOffset,
        GET,
        &[
            ResourceField {
                kind: GROUP,
                field: "filterGroups",
                splitter: Some(','),
            },
            f(GROUP, "compareGroup"),
            f(TOPIC, "topic"),
        ],
    ),
    a(
        RequestCode::QuerySubscriptionByConsumer,
        GET,
        &[f(GROUP, "group"), f(TOPIC, "topic")],
    ),
    a(
        RequestCode::QueryTopicConsumeByWho,
        GET,
        &[f(TOPIC, "topic")],
    ),
    a(
        RequestCode::QueryTopicsByConsumer,
        GET,
        &[f(GROUP, "group")],
    ),
    c(
        RequestCode::RemoveBroker,
        UPDATE,
        &[f(CLUSTER, "brokerClusterName")],
    ),
    a(
        RequestCode::PushReplyMessageToClient,
        SUB,
        &[f(GROUP, "producerGroup"), f(TOPIC, "topic")],
    ),
    c(RequestCode::ResetMasterFlushOffset, UPDATE, &[]),
    a(
        RequestCode::InvokeBrokerToResetOffset,
        UPDATE,
        &[f(GROUP, "group"), f(TOPIC, "topic")],
    ),
    a(
        RequestCode::ResumeCheckHalfMessage,
        UPDATE,
        &[f(TOPIC, "topic")],
    ),
    a(
        RequestCode::SearchOffsetByTimestamp,
        GET,
        &[f(TOPIC, "topic")],
    ),
    c(RequestCode::AuthUpdateAcl, UPDATE, &[]),
    a(
        RequestCode::UpdateAndGetGroupForbidden,
        UPDATE,
        &[f(GROUP, "group"), f(TOPIC, "topic")],
    ),
    c(RequestCode::AuthUpdateUser, UPDATE, &[]),
    c(RequestCode::ViewBrokerStatsData, GET, &[]),
    a(RequestCode::ViewMessageById, GET, &[f(TOPIC, "topic")]),
    // controller/
    c(RequestCode::ControllerAlterSyncStateSet, UPDATE, &[]),
    c(
        RequestCode::ControllerElectMaster,
        UPDATE,
        &[f(CLUSTER, "clusterName")],
    ),
    c(RequestCode::ControllerGetReplicaInfo, GET, &[]),
    c(
        RequestCode::CleanBrokerData,
        UPDATE,
        &[f(CLUSTER, "clusterName")],
    ),
    c(
        RequestCode::ControllerApplyBrokerId,
        UPDATE,
        &[f(CLUSTER, "clusterName")],
    ),
    c(
        RequestCode::ControllerGetNextBrokerId,
        GET,
        &[f(CLUSTER, "clusterName")],
    ),
    c(
        RequestCode::ControllerRegisterBroker,
        UPDATE,
        &[f(CLUSTER, "clusterName")],
    ),
    // namesrv/
    c(RequestCode::AddWritePermOfBroker, UPDATE, &[]),
    c(
        RequestCode::BrokerHeartbeat,
        UPDATE,
        &[f(CLUSTER, "clusterName")],
    ),
    c(RequestCode::DeleteKvConfig, UPDATE, &[]),
    c(
        RequestCode::DeleteTopicInNamesrv,
        UPDATE,
        &[f(CLUSTER, "clusterName")],
    ),
    c(RequestCode::GetKvConfig, GET, &[]),
    c(RequestCode::GetKvlistByNamespace, GET, &[]),
    c(RequestCode::PutKvConfig, UPDATE, &[]),
    c(
        RequestCode::QueryDataVersion,
        GET,
        &[f(CLUSTER, "clusterName")],
    ),
    c(
        RequestCode::RegisterBroker,
        UPDATE,
        &[f(CLUSTER, "clusterName")],
    ),
    c(RequestCode::RegisterTopicInNamesrv, UPDATE, &[]),
    c(
        RequestCode::UnregisterBroker,
        UPDATE,
        &[f(CLUSTER, "clusterName")],
    ),
    c(RequestCode::WipeWritePermOfBroker, UPDATE, &[]),
];

/// The codes decided by hand, with what they ask (for the table in docs and reports).
pub const BY_HAND: &[(RequestCode, &str)] = &[
    (
        RequestCode::GetRouteinfoByTopic,
        "Topic:{topic} Pub|Sub|Get (retry topic: its Group Sub|Get)",
    ),
    (
        RequestCode::SendMessage,
        "Topic:{topic} Pub (retry topic: Group:{group} Sub)",
    ),
    (
        RequestCode::SendMessageV2,
        "Topic:{b} Pub (retry topic: Group:{a} Sub)",
    ),
    (
        RequestCode::SendBatchMessage,
        "Topic:{b} Pub (retry topic: Group:{a} Sub)",
    ),
    (RequestCode::RecallMessage, "Topic:{topic} Pub"),
    (
        RequestCode::EndTransaction,
        "Topic:{topic} Pub (none without a topic)",
    ),
    (RequestCode::ConsumerSendMsgBack, "Group:{group} Sub"),
    (
        RequestCode::PullMessage,
        "Topic:{topic} Sub (not for a retry topic), Group:{consumerGroup} Sub",
    ),
    (RequestCode::QueryMessage, "Topic:{topic} Sub|Get"),
    (
        RequestCode::HeartBeat,
        "each consumer's Group Sub and subscribed Topic Sub",
    ),
    (
        RequestCode::UnregisterClient,
        "Group:{consumerGroup} Sub (when given)",
    ),
    (
        RequestCode::GetConsumerListByGroup,
        "Group:{consumerGroup} Sub|Get",
    ),
    (
        RequestCode::QueryConsumerOffset,
        "Topic:{topic} Sub|Get, Group:{consumerGroup} Sub|Get",
    ),
    (
        RequestCode::UpdateConsumerOffset,
        "Topic:{topic} Sub|Update, Group:{consumerGroup} Sub|Update",
    ),
    (
        RequestCode::LockBatchMq,
        "Group:{consumerGroup} Sub, each queue's Topic Sub",
    ),
    (
        RequestCode::UnlockBatchMq,
        "Group:{consumerGroup} Sub, each queue's Topic Sub",
    ),
];

/// `value` unless it is missing or blank.
fn not_blank(value: Option<&str>) -> Option<&str> {
    value.filter(|v| !v.trim().is_empty())
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct HeartbeatBody {
    consumer_data_set: Vec<ConsumerBody>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ConsumerBody {
    group_name: Option<String>,
    subscription_data_set: Vec<TopicOnly>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct TopicOnly {
    topic: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct LockBody {
    consumer_group: Option<String>,
    mq_set: Vec<TopicOnly>,
}

fn body_json<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Unreadable> {
    if body.is_empty() {
        // Java: decode(null) throws.
        return Err(Unreadable);
    }
    remoting::fastjson::from_slice(body).map_err(|_| Unreadable)
}

/// What request `code` with `ext` and `body` needs; `cluster` is this server's cluster
/// (`authConfig.clusterName`). Empty: nothing beyond authentication.
///
/// # Errors
/// A body or a required header field the decision needs cannot be read.
pub fn accesses(
    code: i32,
    ext: &ExtFields,
    body: &[u8],
    cluster: &str,
) -> Result<Vec<Access>, Unreadable> {
    use Action::{Get, Pub, Sub, Update};
    // Apache returns nothing at once for a request without extFields.
    if ext.is_empty() {
        return Ok(Vec::new());
    }
    let get = |k: &str| ext.get(k);
    let required = |k: &str| ext.get(k).ok_or(Unreadable);
    let Ok(known) = RequestCode::try_from(code) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    match known {
        RequestCode::GetRouteinfoByTopic => {
            let topic = get("topic");
            if is_retry_topic(topic) {
                out.push(Access::new(Resource::group(topic), &[Sub, Get]));
            } else {
                out.push(Access::new(Resource::topic(topic), &[Pub, Sub, Get]));
            }
        }
        RequestCode::SendMessage => {
            let topic = get("topic");
            if is_retry_topic(topic) {
                let group = not_blank(get("group")).or(topic);
                out.push(Access::new(Resource::group(group), &[Sub]));
            } else {
                out.push(Access::new(Resource::topic(topic), &[Pub]));
            }
        }
        RequestCode::SendMessageV2 | RequestCode::SendBatchMessage => {
            let topic = get("b");
            if is_retry_topic(topic) {
                let group = not_blank(get("a")).or(topic);
                out.push(Access::new(Resource::group(group), &[Sub]));
            } else {
                out.push(Access::new(Resource::topic(topic), &[Pub]));
            }
        }
        RequestCode::RecallMessage => out.push(Access::new(Resource::topic(get("topic")), &[Pub])),
        RequestCode::EndTransaction => {
            if let Some(topic) = not_blank(get("topic")) {
                out.push(Access::new(Resource::topic(Some(topic)), &[Pub]));
            }
        }
        RequestCode::ConsumerSendMsgBack => {
            out.push(Access::new(Resource::group(get("group")), &[Sub]));
        }
        RequestCode::PullMessage => {
            let topic = get("topic");
            if !is_retry_topic(topic) {
                out.push(Access::new(Resource::topic(topic), &[Sub]));
            }
            out.push(Access::new(Resource::group(get("consumerGroup")), &[Sub]));
        }
        RequestCode::QueryMessage => {
            out.push(Access::new(Resource::topic(get("topic")), &[Sub, Get]));
        }
        RequestCode::HeartBeat => {
            let heartbeat: HeartbeatBody = body_json(body)?;
            for consumer in heartbeat.consumer_data_set {
                out.push(Access::new(
                    Resource::group(consumer.group_name.as_deref()),
                    &[Sub],
                ));
                for sub in consumer.subscription_data_set {
                    if is_retry_topic(sub.topic.as_deref()) {
                        continue;
                    }
                    out.push(Access::new(Resource::topic(sub.topic.as_deref()), &[Sub]));
                }
            }
        }
        RequestCode::UnregisterClient => {
            required("clientID")?;
            if let Some(group) = not_blank(get("consumerGroup")) {
                out.push(Access::new(Resource::group(Some(group)), &[Sub]));
            }
        }
        RequestCode::GetConsumerListByGroup => {
            let group = required("consumerGroup")?;
            out.push(Access::new(Resource::group(Some(group)), &[Sub, Get]));
        }
        RequestCode::QueryConsumerOffset | RequestCode::UpdateConsumerOffset => {
            let group = required("consumerGroup")?;
            let topic = required("topic")?;
            required("queueId")?;
            let second = if known == RequestCode::QueryConsumerOffset {
                Get
            } else {
                required("commitOffset")?;
                Update
            };
            if !is_retry_topic(Some(topic)) {
                out.push(Access::new(Resource::topic(Some(topic)), &[Sub, second]));
            }
            out.push(Access::new(Resource::group(Some(group)), &[Sub, second]));
        }
        RequestCode::LockBatchMq | RequestCode::UnlockBatchMq => {
            let lock: LockBody = body_json(body)?;
            out.push(Access::new(
                Resource::group(lock.consumer_group.as_deref()),
                &[Sub],
            ));
            for mq in lock.mq_set {
                if is_retry_topic(mq.topic.as_deref()) {
                    continue;
                }
                out.push(Access::new(Resource::topic(mq.topic.as_deref()), &[Sub]));
            }
        }
        _ => {
            if let Some(rule) = ANNOTATED.iter().find(|r| r.code == code) {
                annotated(rule, ext, cluster, &mut out);
            }
        }
    }
    Ok(out)
}

fn annotated(rule: &Annotated, ext: &ExtFields, cluster: &str, out: &mut Vec<Access>) {
    for field in rule.fields {
        let Some(value) = ext.get(field.field) else {
            continue;
        };
        let values: Vec<&str> = match field.splitter {
            // StringUtils.split: empty pieces dropped.
            Some(sep) => value.split(sep).filter(|v| !v.is_empty()).collect(),
            None => vec![value],
        };
        for v in values {
            let resource = if field.kind == ResourceType::Topic && is_retry_topic(Some(v)) {
                Resource::group(Some(v))
            } else {
                Resource::literal(field.kind, Some(v))
            };
            out.push(Access::new(resource, rule.actions));
        }
    }
    if out.is_empty() && rule.cluster {
        out.push(Access::new(Resource::cluster(cluster), rule.actions));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ext(pairs: &[(&str, &str)]) -> ExtFields {
        let mut e = ExtFields::new();
        for (k, v) in pairs {
            e.insert(*k, *v);
        }
        e
    }

    fn keys(code: RequestCode, pairs: &[(&str, &str)], body: &[u8]) -> Vec<String> {
        accesses(code.code(), &ext(pairs), body, "DefaultCluster")
            .unwrap()
            .into_iter()
            .map(|a| {
                let acts: Vec<&str> = a.actions.iter().map(|x| x.name()).collect();
                format!("{} {}", a.resource.key(), acts.join("|"))
            })
            .collect()
    }

    #[test]
    fn sends() {
        assert_eq!(
            keys(RequestCode::SendMessageV2, &[("a", "G"), ("b", "T")], b""),
            ["Topic:T Pub"]
        );
        assert_eq!(
            keys(
                RequestCode::SendMessageV2,
                &[("a", "G"), ("b", "%RETRY%G2")],
                b""
            ),
            ["Group:G Sub"]
        );
        assert_eq!(
            keys(RequestCode::SendMessage, &[("topic", "%RETRY%G2")], b""),
            ["Group:G2 Sub"]
        );
    }

    #[test]
    fn pulls_and_offsets() {
        assert_eq!(
            keys(
                RequestCode::PullMessage,
                &[("topic", "T"), ("consumerGroup", "G")],
                b""
            ),
            ["Topic:T Sub", "Group:G Sub"]
        );
        assert_eq!(
            keys(
                RequestCode::PullMessage,
                &[("topic", "%RETRY%G"), ("consumerGroup", "G")],
                b""
            ),
            ["Group:G Sub"]
        );
        assert_eq!(
            keys(
                RequestCode::UpdateConsumerOffset,
                &[
                    ("topic", "T"),
                    ("consumerGroup", "G"),
                    ("queueId", "0"),
                    ("commitOffset", "5")
                ],
                b""
            ),
            ["Topic:T Sub|Update", "Group:G Sub|Update"]
        );
        assert_eq!(
            accesses(
                RequestCode::QueryConsumerOffset.code(),
                &ext(&[("topic", "T")]),
                b"",
                "c"
            ),
            Err(Unreadable)
        );
    }

    #[test]
    fn heartbeat_body() {
        let body = br#"{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"T"},{"topic":"%RETRY%G"}]}],"producerDataSet":[{"groupName":"P"}]}"#;
        assert_eq!(
            keys(RequestCode::HeartBeat, &[("x", "y")], body),
            ["Group:G Sub", "Topic:T Sub"]
        );
        assert_eq!(
            accesses(RequestCode::HeartBeat.code(), &ext(&[("x", "y")]), b"", "c"),
            Err(Unreadable)
        );
    }

    #[test]
    fn annotations() {
        assert_eq!(
            keys(RequestCode::AuthCreateUser, &[("username", "u")], b""),
            ["Cluster:DefaultCluster Update"]
        );
        assert_eq!(
            keys(RequestCode::RegisterBroker, &[("clusterName", "C2")], b""),
            ["Cluster:C2 Update"]
        );
        assert_eq!(
            keys(
                RequestCode::GetConsumeStats,
                &[("consumerGroup", "G"), ("topicList", "A;B")],
                b""
            ),
            ["Group:G Get", "Topic:A Get", "Topic:B Get"]
        );
        assert_eq!(
            keys(
                RequestCode::UpdateAndCreateTopic,
                &[("topic", "%RETRY%G")],
                b""
            ),
            ["Group:G Create"]
        );
        // Annotated with a resource type but no field: nothing asked.
        assert!(keys(RequestCode::GetAllTopicConfig, &[("x", "y")], b"").is_empty());
        // Not annotated at all.
        assert!(keys(RequestCode::GetBrokerClusterInfo, &[("x", "y")], b"").is_empty());
        // No extFields at all: nothing.
        assert!(keys(RequestCode::AuthCreateUser, &[], b"").is_empty());
    }

    #[test]
    fn every_annotated_code_once() {
        let mut seen = std::collections::BTreeSet::new();
        for rule in ANNOTATED {
            assert!(seen.insert(rule.code), "{} twice", rule.code);
            assert!(
                !BY_HAND.iter().any(|(c, _)| c.code() == rule.code),
                "{} both by hand and annotated",
                rule.code
            );
        }
    }

    proptest! {
        /// Client input (fields, body) never panics the mapping.
        #[test]
        fn never_panics(code in prop::sample::select(RequestCode::ALL.to_vec()),
                        fields in proptest::collection::vec(("[a-zA-Z]{1,14}", "\\PC{0,12}"), 0..6),
                        body in proptest::collection::vec(any::<u8>(), 0..80)) {
            let mut e = ExtFields::new();
            for (k, v) in &fields {
                e.insert(k.as_str(), v.as_str());
            }
            let _ = accesses(code.code(), &e, &body, "c");
        }
    }
}
