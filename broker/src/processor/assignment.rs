//! QUERY_ASSIGNMENT (400) and SET_MESSAGE_REQUEST_MODE (401): see [`crate::assignment`].

use std::sync::Arc;

use remoting::fastjson;
use remoting::protocol::constants::system::RETRY_GROUP_TOPIC_PREFIX;
use remoting::protocol::pop::{QueryAssignmentRequestBody, SetMessageRequestModeRequestBody};
use remoting::server::Reply;
use remoting::{RemotingCommand, ResponseCode};

use super::{Handled, Refusal, success};
use crate::assignment::{assign, mode_of, subscribe_queues};
use crate::broker::Broker;

/// QUERY_ASSIGNMENT: the queues this consumer reads, and how.
pub fn query_assignment(broker: &Arc<Broker>, request: &RemotingCommand) -> Reply {
    let body: QueryAssignmentRequestBody = match fastjson::from_slice(&request.body.to_bytes()) {
        Ok(b) => b,
        Err(e) => return Reply::Now(Refusal::from(e).into_response()),
    };
    let broker = Arc::clone(broker);
    Reply::later(async move {
        let topic = &body.topic;
        let queues = match broker.request_modes.cached_queues(topic) {
            Some(q) => Some(q),
            None => match broker.namesrv.topic_route(topic).await {
                Some(route) => {
                    let q = subscribe_queues(topic, &route);
                    broker.request_modes.cache_queues(topic, q.clone());
                    Some(q)
                }
                None => None,
            },
        };
        let (default_mode, default_share, balance) = {
            let c = broker.config();
            (
                c.default_message_request_mode,
                c.default_pop_share_queue_num,
                c.server_load_balancer_enable,
            )
        };
        let mode = mode_of(
            &broker.request_modes,
            topic,
            &body.consumer_group,
            default_mode,
            default_share,
        );
        let clients = broker
            .consumers
            .group(&body.consumer_group)
            .map(|g| g.client_ids())
            .unwrap_or_default();
        let answer = assign(&body, &mode, queues, clients, balance);
        Some(
            match fastjson::to_vec(&answer, fastjson::KeyStyle::Fastjson) {
                Ok(bytes) => success().with_body(bytes::Bytes::from(bytes)),
                Err(e) => Refusal::from(e).into_response(),
            },
        )
    })
}

/// SET_MESSAGE_REQUEST_MODE: a group's mode on a topic, persisted at once.
pub fn set_message_request_mode(broker: &Broker, request: &RemotingCommand) -> Handled {
    let body: SetMessageRequestModeRequestBody = fastjson::from_slice(&request.body.to_bytes())?;
    if body.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            "retry topic is not allowed to set mode",
        ));
    }
    if !broker.topics.contains(&body.topic) {
        return Err(Refusal::new(
            ResponseCode::TopicNotExist,
            format!("topic[{}] not exist", body.topic),
        ));
    }
    if broker.groups.find_or_create(&body.consumer_group).is_none() {
        return Err(Refusal::new(
            ResponseCode::SubscriptionGroupNotExist,
            "subscription group does not exist",
        ));
    }
    broker
        .request_modes
        .set(body)
        .map_err(|e| Refusal::system(e.to_string()))?;
    Ok(success())
}
