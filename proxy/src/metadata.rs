//! What a topic accepts: its `message.type` attribute (RocketMQ 5's `TopicMessageType`), read
//! from a broker of the topic with GET_TOPIC_CONFIG and cached briefly.
//!
//! QueryRoute tells the SDKs which message types a queue accepts, and a send whose message is
//! of another type is refused with MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, both as Apache's proxy
//! does (`ClusterMetadataService`, `DefaultTopicMessageTypeValidator`). A topic whose config
//! cannot be read is UNSPECIFIED, which accepts nothing: the check fails safe.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use remoting::protocol::namesrv::TopicRequestHeader;
use remoting::protocol::topic::TopicConfig;
use remoting::{RemotingCommand, RequestCode, ResponseCode, fastjson};

use crate::backend::{Backend, Target};
use crate::pb::{Code, MessageType};
use crate::route::Routes;
use crate::status::Refusal;

/// How long a topic's type is used before it is read again.
pub const TOPIC_TYPE_TTL: Duration = Duration::from_secs(5);
/// Limit of one GET_TOPIC_CONFIG (Apache's proxy: 3 s).
pub const BROKER_TIMEOUT: Duration = Duration::from_secs(3);
/// The topic attribute holding the type.
pub const MESSAGE_TYPE_ATTRIBUTE: &str = "message.type";

/// A topic's `message.type`, or what a message's properties make it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicMessageType {
    /// Unknown (the config could not be read, or holds an unknown name): accepts nothing.
    Unspecified,
    /// Plain messages.
    Normal,
    /// Messages with a message group.
    Fifo,
    /// Messages with a delivery time.
    Delay,
    /// Half messages of transactions.
    Transaction,
    /// All of normal, FIFO, delay and transaction.
    Mixed,
    /// Messages with a priority (RocketMQ 5.4).
    Priority,
}

impl TopicMessageType {
    /// From RocketMQ's name (`FIFO`); `None` for an unknown one.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "UNSPECIFIED" => TopicMessageType::Unspecified,
            "NORMAL" => TopicMessageType::Normal,
            "FIFO" => TopicMessageType::Fifo,
            "DELAY" => TopicMessageType::Delay,
            "TRANSACTION" => TopicMessageType::Transaction,
            "MIXED" => TopicMessageType::Mixed,
            "PRIORITY" => TopicMessageType::Priority,
            _ => return None,
        })
    }

    /// RocketMQ's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            TopicMessageType::Unspecified => "UNSPECIFIED",
            TopicMessageType::Normal => "NORMAL",
            TopicMessageType::Fifo => "FIFO",
            TopicMessageType::Delay => "DELAY",
            TopicMessageType::Transaction => "TRANSACTION",
            TopicMessageType::Mixed => "MIXED",
            TopicMessageType::Priority => "PRIORITY",
        }
    }

    /// A topic config's type: its attribute, NORMAL when it has none (`TopicConfig
    /// .getTopicMessageType`).
    #[must_use]
    pub fn of_topic(config: &TopicConfig) -> Self {
        match config.attributes.get(MESSAGE_TYPE_ATTRIBUTE) {
            None => TopicMessageType::Normal,
            Some(name) => Self::from_name(name).unwrap_or(TopicMessageType::Unspecified),
        }
    }

    /// What a message's properties make it ([`message::properties::message_type`]).
    #[must_use]
    pub fn of_message(properties: &str) -> Self {
        Self::from_name(message::properties::message_type(properties))
            .unwrap_or(TopicMessageType::Normal)
    }

    /// The `accept_message_types` of the topic's queues in QueryRoute.
    #[must_use]
    pub fn accepted(self) -> Vec<MessageType> {
        match self {
            TopicMessageType::Normal => vec![MessageType::Normal],
            TopicMessageType::Fifo => vec![MessageType::Fifo],
            TopicMessageType::Delay => vec![MessageType::Delay],
            TopicMessageType::Transaction => vec![MessageType::Transaction],
            TopicMessageType::Priority => vec![MessageType::Priority],
            TopicMessageType::Mixed => vec![
                MessageType::Normal,
                MessageType::Fifo,
                MessageType::Delay,
                MessageType::Transaction,
            ],
            TopicMessageType::Unspecified => vec![MessageType::Unspecified],
        }
    }

    /// Whether a topic of type `self` takes a message of type `message`.
    ///
    /// # Errors
    /// MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, in Apache's words.
    pub fn check(self, message: TopicMessageType) -> Result<(), Refusal> {
        if message != TopicMessageType::Unspecified
            && (message == self || self == TopicMessageType::Mixed)
        {
            return Ok(());
        }
        Err(Refusal::new(
            Code::MessagePropertyConflictWithType,
            format!(
                "TopicMessageType validate failed, the expected type is {}, but actual type is {}",
                self.name(),
                message.name()
            ),
        ))
    }
}

/// The cache of topic types.
#[derive(Debug)]
pub struct TopicTypes<B> {
    backend: Arc<B>,
    routes: Arc<Routes<B>>,
    cache: Mutex<HashMap<String, (Instant, TopicMessageType)>>,
}

impl<B: Backend> TopicTypes<B> {
    /// An empty cache; brokers are found through `routes`.
    #[must_use]
    pub fn new(backend: Arc<B>, routes: Arc<Routes<B>>) -> Self {
        TopicTypes {
            backend,
            routes,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The type of `topic`: UNSPECIFIED when no broker of it tells.
    pub async fn get(&self, topic: &str) -> TopicMessageType {
        if let Some((at, kind)) = self.cache.lock().get(topic) {
            if at.elapsed() < TOPIC_TYPE_TTL {
                return *kind;
            }
        }
        let kind = match self.fetch(topic).await {
            Ok(kind) => kind,
            Err(why) => {
                tracing::warn!(topic, error = %why, "cannot read the topic's message type");
                // Not cached: the next call tries again.
                return TopicMessageType::Unspecified;
            }
        };
        self.cache
            .lock()
            .insert(topic.to_owned(), (Instant::now(), kind));
        kind
    }

    async fn fetch(&self, topic: &str) -> Result<TopicMessageType, Refusal> {
        let route = self.routes.get(topic).await?;
        let Some(addr) = route.any_master() else {
            return Err(Refusal::new(
                Code::InternalServerError,
                "no master serves the topic",
            ));
        };
        let header = TopicRequestHeader {
            topic: topic.to_owned(),
        };
        let request = RemotingCommand::request_with(RequestCode::GetTopicConfig, &header);
        let response = self
            .backend
            .invoke(Target::Broker(addr.to_owned()), request, BROKER_TIMEOUT)
            .await?;
        if response.code() != ResponseCode::Success.code() {
            return Err(Refusal::from_response(response.code(), response.remark()));
        }
        let config: TopicConfig = fastjson::from_slice(&response.body.to_bytes())
            .map_err(|e| Refusal::new(Code::InternalServerError, e.to_string()))?;
        Ok(TopicMessageType::of_topic(&config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_types_and_checks() {
        let mut config = TopicConfig::new("T", 4);
        assert_eq!(
            TopicMessageType::of_topic(&config),
            TopicMessageType::Normal
        );
        config
            .attributes
            .insert(MESSAGE_TYPE_ATTRIBUTE.into(), "FIFO".into());
        assert_eq!(TopicMessageType::of_topic(&config), TopicMessageType::Fifo);
        config
            .attributes
            .insert(MESSAGE_TYPE_ATTRIBUTE.into(), "fifo".into());
        assert_eq!(
            TopicMessageType::of_topic(&config),
            TopicMessageType::Unspecified
        );

        use TopicMessageType as T;
        assert!(T::Normal.check(T::Normal).is_ok());
        assert!(T::Mixed.check(T::Fifo).is_ok());
        assert!(T::Mixed.check(T::Transaction).is_ok());
        let refused = T::Normal.check(T::Fifo).unwrap_err();
        assert_eq!(refused.code, Code::MessagePropertyConflictWithType);
        assert_eq!(
            refused.message,
            "TopicMessageType validate failed, the expected type is NORMAL, but actual type is FIFO"
        );
        assert!(T::Unspecified.check(T::Normal).is_err());
        assert!(T::Fifo.check(T::Unspecified).is_err());

        assert_eq!(T::Delay.accepted(), [MessageType::Delay]);
        assert_eq!(T::Mixed.accepted().len(), 4);
        assert_eq!(T::Unspecified.accepted(), [MessageType::Unspecified]);

        assert_eq!(T::of_message("__SHARDINGKEY\u{1}g"), T::Fifo);
        assert_eq!(T::of_message("TIMER_DELIVER_MS\u{1}5"), T::Delay);
        assert_eq!(T::of_message("TAGS\u{1}a"), T::Normal);
    }
}
