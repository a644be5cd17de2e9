//! Which topics and consumer groups a client may name in a call: the one check every rpc
//! makes before it reaches a broker (ILLEGAL_TOPIC, ILLEGAL_CONSUMER_GROUP with Apache's
//! remarks), so system topics and groups stay out of clients' reach.

use remoting::protocol::constants::{system, validate_group, validate_topic};

use crate::pb::{self, Code};
use crate::status::Refusal;

/// Consumer groups of RocketMQ itself (`MixAll.CID_SYS_RMQ_TRANS` and the like).
const SYSTEM_GROUP_PREFIX: &str = "CID_RMQ_SYS_";

/// ILLEGAL_TOPIC unless `topic` names a topic clients may use.
pub(crate) fn check_topic(topic: Option<&pb::Resource>) -> Result<&str, Refusal> {
    let name = topic.map_or("", |t| t.name.as_str());
    validate_topic(name).map_err(|e| Refusal::new(Code::IllegalTopic, e.to_string()))?;
    if system::is_system_topic(name) {
        return Err(Refusal::new(
            Code::IllegalTopic,
            "cannot access system topic",
        ));
    }
    Ok(name)
}

/// ILLEGAL_CONSUMER_GROUP unless `group` names a group clients may use.
pub(crate) fn check_group(group: Option<&pb::Resource>) -> Result<&str, Refusal> {
    let name = group.map_or("", |g| g.name.as_str());
    validate_group(name).map_err(|e| Refusal::new(Code::IllegalConsumerGroup, e))?;
    if name.starts_with(SYSTEM_GROUP_PREFIX) {
        return Err(Refusal::new(
            Code::IllegalConsumerGroup,
            "cannot use system consumer group",
        ));
    }
    Ok(name)
}
