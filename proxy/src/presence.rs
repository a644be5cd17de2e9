//! gRPC clients as the broker sees them in local mode.
//!
//! Apache's local mode gives each gRPC client a channel of its own in the broker's client
//! tables (`GrpcClientChannel`), so an operator's tools see them as they see remoting
//! clients — `mqadmin consumerConnection` / `producerConnection` list each with its client
//! id, language and version — and the broker's requests for one client reach that client
//! (`GET_CONSUMER_RUNNING_INFO`, `CONSUME_MESSAGE_DIRECTLY`: [`crate::relay`]). The same here:
//! [`heartbeat`] is the HEART_BEAT the proxy sends for a client on the client's own
//! in-process connection ([`crate::Backend::invoke_as_client`]):
//!
//! - a producer under each topic it publishes (Apache's producer group of a gRPC producer);
//! - a push consumer as CONSUME_PASSIVELY, a simple consumer as CONSUME_ACTIVELY (Apache's
//!   mapping), clustering, from the last offset, with its subscriptions (TAG or SQL92).
//!
//! It is sent with the client's settings and each of its heartbeats (the SDKs heartbeat every
//! 10 s; a broker drops clients silent for 120 s), and the connection closes when the client
//! terminates or its telemetry stream ends, so the broker forgets it then. The language is the
//! SDK's (`x-mq-language`: `GOLANG` is the broker's `GO`), the version the SDK's release
//! (`x-mq-client-version` `5.0.7` is `V5_0_7`; Apache writes its own broker's version for every
//! gRPC client, having no name for the SDKs' form). Cluster mode registers nothing, as Apache's.

use remoting::header::LanguageCode;
use remoting::protocol::constants::version_ordinal;
use remoting::protocol::heartbeat::{
    ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData, MessageModel, ProducerData,
    SubscriptionData,
};
use remoting::{RemotingCommand, RequestCode};

use crate::pb::{self, ClientType, FilterType, settings::PubSub};

/// Who a client is, from its calls' headers.
#[derive(Debug, Clone, Copy)]
pub struct Who<'a> {
    /// `x-mq-client-id`.
    pub client_id: &'a str,
    /// `x-mq-language`.
    pub language: &'a str,
    /// `x-mq-client-version`.
    pub version: &'a str,
}

/// The broker's language code of an SDK's `x-mq-language`.
#[must_use]
pub fn language(name: &str) -> LanguageCode {
    match name.trim().to_ascii_uppercase().as_str() {
        "GOLANG" => LanguageCode::Go,
        "NODEJS" => LanguageCode::NodeJs,
        "CSHARP" => LanguageCode::Dotnet,
        other => LanguageCode::from_name(other),
    }
}

/// The broker's subscription of a gRPC subscription entry (TAG or SQL92); `None` without a
/// topic.
fn subscription(entry: &pb::SubscriptionEntry, version: i64) -> Option<SubscriptionData> {
    let topic = entry.topic.as_ref()?.name.as_str();
    let (kind, expression) = entry
        .expression
        .as_ref()
        .map_or((FilterType::Tag, "*"), |e| {
            (e.r#type(), e.expression.as_str())
        });
    Some(if kind == FilterType::Sql {
        SubscriptionData {
            class_filter_mode: false,
            topic: topic.to_owned(),
            sub_string: expression.to_owned(),
            tags_set: Default::default(),
            code_set: Default::default(),
            sub_version: version,
            expression_type: "SQL92".to_owned(),
            filter_class_source: None,
        }
    } else {
        SubscriptionData::build_tag(topic, expression, version)
    })
}

/// The HEART_BEAT that registers the client `who` with `settings` (its consumer group
/// `group` when the heartbeat named one, else the settings'); `None` for a client the broker
/// has no table of (no settings' kind it knows, no group, no topic). `now_ms` versions the
/// subscriptions.
#[must_use]
pub fn heartbeat(
    who: &Who<'_>,
    settings: &pb::Settings,
    group: Option<&str>,
    now_ms: i64,
) -> Option<RemotingCommand> {
    let mut data = HeartbeatData {
        client_id: who.client_id.to_owned(),
        ..HeartbeatData::default()
    };
    match (settings.client_type(), settings.pub_sub.as_ref()) {
        (ClientType::Producer, Some(PubSub::Publishing(p))) => {
            data.producer_data_set = p
                .topics
                .iter()
                .filter(|t| !t.name.is_empty())
                .map(|t| ProducerData {
                    group_name: t.name.clone(),
                })
                .collect();
            if data.producer_data_set.is_empty() {
                return None;
            }
        }
        (
            kind @ (ClientType::PushConsumer | ClientType::SimpleConsumer),
            Some(PubSub::Subscription(s)),
        ) => {
            let group = group
                .or_else(|| s.group.as_ref().map(|g| g.name.as_str()))
                .filter(|g| !g.is_empty())?;
            data.consumer_data_set = vec![ConsumerData {
                group_name: group.to_owned(),
                consume_type: if kind == ClientType::PushConsumer {
                    ConsumeType::ConsumePassively
                } else {
                    ConsumeType::ConsumeActively
                },
                message_model: MessageModel::Clustering,
                consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
                subscription_data_set: s
                    .subscriptions
                    .iter()
                    .filter_map(|e| subscription(e, now_ms))
                    .collect(),
                unit_mode: false,
            }];
        }
        _ => return None,
    }
    // A struct of strings, numbers and vectors always serialises.
    let body = serde_json::to_vec(&data).unwrap_or_default();
    let mut request = RemotingCommand::request(RequestCode::HeartBeat).with_body(body);
    request.header.language = language(who.language);
    request.header.version =
        version_ordinal(who.version).unwrap_or(remoting::protocol::constants::version::V5_3_3);
    Some(request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::settings::PubSub;

    fn resource(name: &str) -> Option<pb::Resource> {
        Some(pb::Resource {
            resource_namespace: String::new(),
            name: name.to_owned(),
        })
    }

    fn body(request: &RemotingCommand) -> HeartbeatData {
        serde_json::from_slice(&request.body.to_bytes()).unwrap()
    }

    const WHO: Who<'static> = Who {
        client_id: "host@1@2@abc",
        language: "GOLANG",
        version: "5.0.7",
    };

    #[test]
    fn a_push_consumer_is_registered_under_its_group_with_its_subscriptions() {
        let settings = pb::Settings {
            client_type: Some(ClientType::PushConsumer.into()),
            pub_sub: Some(PubSub::Subscription(pb::Subscription {
                group: resource("G1"),
                subscriptions: vec![
                    pb::SubscriptionEntry {
                        topic: resource("T1"),
                        expression: Some(pb::FilterExpression {
                            r#type: FilterType::Tag.into(),
                            expression: "a || b".to_owned(),
                        }),
                    },
                    pb::SubscriptionEntry {
                        topic: resource("T2"),
                        expression: Some(pb::FilterExpression {
                            r#type: FilterType::Sql.into(),
                            expression: "x > 1".to_owned(),
                        }),
                    },
                ],
                ..pb::Subscription::default()
            })),
            ..pb::Settings::default()
        };
        let request = heartbeat(&WHO, &settings, None, 42).unwrap();
        assert_eq!(request.code(), RequestCode::HeartBeat.code());
        assert_eq!(request.header.language, LanguageCode::Go);
        assert_eq!(request.header.version, version_ordinal("V5_0_7").unwrap());
        let data = body(&request);
        assert_eq!(data.client_id, "host@1@2@abc");
        let consumer = &data.consumer_data_set[0];
        assert_eq!(consumer.group_name, "G1");
        assert_eq!(consumer.consume_type, ConsumeType::ConsumePassively);
        assert_eq!(consumer.message_model, MessageModel::Clustering);
        let subs = &consumer.subscription_data_set;
        assert_eq!(subs[0].topic, "T1");
        assert_eq!(subs[0].tags_set.len(), 2);
        assert_eq!(subs[0].sub_version, 42);
        assert_eq!(
            (
                subs[1].expression_type.as_str(),
                subs[1].sub_string.as_str()
            ),
            ("SQL92", "x > 1")
        );
        // A simple consumer is an active one; the heartbeat's group wins.
        let simple = pb::Settings {
            client_type: Some(ClientType::SimpleConsumer.into()),
            ..settings
        };
        let data = body(&heartbeat(&WHO, &simple, Some("G2"), 42).unwrap());
        assert_eq!(data.consumer_data_set[0].group_name, "G2");
        assert_eq!(
            data.consumer_data_set[0].consume_type,
            ConsumeType::ConsumeActively
        );
    }

    #[test]
    fn a_producer_is_registered_under_each_topic_and_unknown_kinds_not_at_all() {
        let settings = pb::Settings {
            client_type: Some(ClientType::Producer.into()),
            pub_sub: Some(PubSub::Publishing(pb::Publishing {
                topics: vec![resource("T1").unwrap(), resource("T2").unwrap()],
                ..pb::Publishing::default()
            })),
            ..pb::Settings::default()
        };
        let who = Who {
            language: "JAVA",
            version: "not.a.version",
            ..WHO
        };
        let request = heartbeat(&who, &settings, None, 1).unwrap();
        assert_eq!(request.header.language, LanguageCode::Java);
        assert_eq!(
            request.header.version,
            remoting::protocol::constants::version::V5_3_3
        );
        let groups: Vec<_> = body(&request)
            .producer_data_set
            .into_iter()
            .map(|p| p.group_name)
            .collect();
        assert_eq!(groups, ["T1", "T2"]);
        let no_group = pb::Settings {
            client_type: Some(ClientType::PushConsumer.into()),
            pub_sub: Some(PubSub::Subscription(pb::Subscription::default())),
            ..pb::Settings::default()
        };
        assert!(heartbeat(&WHO, &no_group, None, 1).is_none());
        assert!(heartbeat(&WHO, &pb::Settings::default(), None, 1).is_none());
        assert_eq!(language("python"), LanguageCode::Python);
        assert_eq!(language("whatever"), LanguageCode::Other);
    }
}
