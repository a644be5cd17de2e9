//! Broker-side rebalance: which queues a consumer gets (QUERY_ASSIGNMENT, 400) and
//! whether it pulls or pops them (SET_MESSAGE_REQUEST_MODE, 401; the table in
//! `config/messageRequestMode.json`, also GET_ALL_MESSAGE_REQUEST_MODE's (402) body).
//! Fields are declared in fastjson's (alphabetical) order so output matches Java's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::protocol::heartbeat::{MessageModel, MessageQueue};

/// How a consumer reads its queues (`MessageRequestMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MessageRequestMode {
    /// PULL_MESSAGE on assigned queues (Java's default).
    #[default]
    #[serde(rename = "PULL")]
    Pull,
    /// POP_MESSAGE; the queues may be shared with other consumers.
    #[serde(rename = "POP")]
    Pop,
}

/// SET_MESSAGE_REQUEST_MODE (401) body (`SetMessageRequestModeRequestBody`), also one
/// entry of the stored table: `{"consumerGroup":"G","mode":"POP","popShareQueueNum":0,"topic":"T"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SetMessageRequestModeRequestBody {
    /// The consumer group.
    pub consumer_group: String,
    /// PULL (default) or POP.
    pub mode: MessageRequestMode,
    /// POP: a consumer also pops the queues of the next N consumers of the group; ≤ 0
    /// (or at least consumers − 1) gives every consumer the whole broker (queue −1).
    pub pop_share_queue_num: i32,
    /// The topic (a `%RETRY%` topic is refused).
    pub topic: String,
}

/// `config/messageRequestMode.json` and the GET_ALL_MESSAGE_REQUEST_MODE (402) body
/// (`MessageRequestModeSerializeWrapper`): topic → group → mode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MessageRequestModeSerializeWrapper {
    /// topic → group → the group's mode on the topic.
    pub message_request_mode_map:
        BTreeMap<String, BTreeMap<String, SetMessageRequestModeRequestBody>>,
}

/// QUERY_ASSIGNMENT (400) request body (`QueryAssignmentRequestBody`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryAssignmentRequestBody {
    /// The asking consumer.
    pub client_id: String,
    /// Its group.
    pub consumer_group: String,
    /// CLUSTERING or BROADCASTING.
    pub message_model: MessageModel,
    /// `AVG` or `AVG_BY_CIRCLE`; anything else gets no assignment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy_name: Option<String>,
    /// The topic.
    pub topic: String,
}

/// One assigned queue (`MessageQueueAssignment`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueueAssignment {
    /// Never set by the 5.3.3 broker (and then omitted, as fastjson omits nulls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachments: Option<BTreeMap<String, String>>,
    /// The queue; queue id −1 means "pop the whole broker".
    pub message_queue: MessageQueue,
    /// How to read it.
    #[serde(default)]
    pub mode: MessageRequestMode,
}

/// QUERY_ASSIGNMENT response body (`QueryAssignmentResponseBody`). `None` (written
/// `{}`) tells the client to keep what it has; an empty list to drop everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct QueryAssignmentResponseBody {
    /// The assignments (a set in Java: each queue once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_queue_assignments: Option<Vec<MessageQueueAssignment>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_mode_bodies_as_java_writes_them() {
        let set = r#"{"consumerGroup":"GID","mode":"POP","popShareQueueNum":1,"topic":"TopicA"}"#;
        let body: SetMessageRequestModeRequestBody = serde_json::from_str(set).unwrap();
        assert_eq!(body.mode, MessageRequestMode::Pop);
        assert_eq!(body.pop_share_queue_num, 1);
        assert_eq!(serde_json::to_string(&body).unwrap(), set);
        // Java's defaults: PULL, 0.
        let bare: SetMessageRequestModeRequestBody =
            serde_json::from_str(r#"{"consumerGroup":"G","topic":"T"}"#).unwrap();
        assert_eq!(
            (bare.mode, bare.pop_share_queue_num),
            (MessageRequestMode::Pull, 0)
        );

        let file = format!(r#"{{"messageRequestModeMap":{{"TopicA":{{"GID":{set}}}}}}}"#);
        let table: MessageRequestModeSerializeWrapper = serde_json::from_str(&file).unwrap();
        assert_eq!(table.message_request_mode_map["TopicA"]["GID"], body);
        assert_eq!(serde_json::to_string(&table).unwrap(), file);
        assert_eq!(
            serde_json::to_string(&MessageRequestModeSerializeWrapper::default()).unwrap(),
            r#"{"messageRequestModeMap":{}}"#
        );
        assert!(serde_json::from_str::<MessageRequestMode>(r#""PUSH""#).is_err());
    }

    #[test]
    fn assignment_bodies_as_java_writes_them() {
        let req = r#"{"clientId":"10.0.0.1@1","consumerGroup":"GID","messageModel":"CLUSTERING","strategyName":"AVG","topic":"TopicA"}"#;
        let body: QueryAssignmentRequestBody = serde_json::from_str(req).unwrap();
        assert_eq!(body.message_model, MessageModel::Clustering);
        assert_eq!(body.strategy_name.as_deref(), Some("AVG"));
        assert_eq!(serde_json::to_string(&body).unwrap(), req);

        let resp = QueryAssignmentResponseBody {
            message_queue_assignments: Some(vec![MessageQueueAssignment {
                attachments: None,
                message_queue: MessageQueue {
                    topic: "TopicA".into(),
                    broker_name: "broker-a".into(),
                    queue_id: -1,
                },
                mode: MessageRequestMode::Pop,
            }]),
        };
        // As fastjson writes it (our MessageQueue writes its keys in another order).
        let text = r#"{"messageQueueAssignments":[{"messageQueue":{"brokerName":"broker-a","queueId":-1,"topic":"TopicA"},"mode":"POP"}]}"#;
        assert_eq!(
            serde_json::to_value(&resp).unwrap(),
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
        assert_eq!(
            serde_json::from_str::<QueryAssignmentResponseBody>(text).unwrap(),
            resp
        );
        assert_eq!(
            serde_json::to_string(&QueryAssignmentResponseBody::default()).unwrap(),
            "{}"
        );
    }
}
