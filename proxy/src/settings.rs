//! Client settings: what each client (by its `x-mq-client-id`) said about itself on its
//! telemetry stream, and the settings the server answers with (Apache's
//! `GrpcClientSettingsManager`).
//!
//! A client opens the Telemetry stream first and sends its `Settings` (its type, topics or
//! subscription, request timeout, user agent); the server keeps them and answers with the
//! same settings, overwritten where the server decides: a producer's retry policy
//! (exponential backoff from the `grpcClientProducer*` keys) and its publishing limits
//! (body size, whether to check message types); a consumer's batch size, long-polling
//! timeout, FIFO flag and attempts (the last two from its group's config, merged by
//! [`crate::consume::Consumers::merge_group`]; the retry ladder a default group's); metrics
//! off. Heartbeats and terminations are answered
//! by the stored client type.

use std::collections::HashMap;
use std::time::Instant;

use parking_lot::Mutex;
use prost_types::Duration;

use crate::config::ProxyConfig;
use crate::pb::{self, retry_policy, settings::PubSub};

/// A subscription group's retries by default (`SubscriptionGroupConfig.retryMaxTimes`).
const DEFAULT_RETRY_MAX_TIMES: i32 = 16;
/// A group's default retry ladder (`CustomizedRetryPolicy`): 1s 5s 10s 30s 1m 2m ... 2h.
const DEFAULT_RETRY_DELAYS_S: [i64; 18] = [
    1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200,
];

fn millis(ms: u64) -> Duration {
    Duration {
        seconds: i64::try_from(ms / 1000).unwrap_or(i64::MAX),
        nanos: i32::try_from((ms % 1000) * 1_000_000).unwrap_or(0),
    }
}

/// The settings clients reported, by client id, with when each was last heard of (settings
/// or heartbeat).
#[derive(Debug, Default)]
pub struct ClientSettings {
    clients: Mutex<HashMap<String, (pb::Settings, Instant)>>,
}

impl ClientSettings {
    /// No clients.
    #[must_use]
    pub fn new() -> Self {
        ClientSettings::default()
    }

    /// Stores what `client_id` reported.
    pub fn update(&self, client_id: &str, settings: pb::Settings) {
        self.clients
            .lock()
            .insert(client_id.to_owned(), (settings, Instant::now()));
    }

    /// `client_id` was heard of (a heartbeat).
    pub fn touch(&self, client_id: &str) {
        if let Some((_, seen)) = self.clients.lock().get_mut(client_id) {
            *seen = Instant::now();
        }
    }

    /// What `client_id` reported, if it did.
    #[must_use]
    pub fn get(&self, client_id: &str) -> Option<pb::Settings> {
        self.clients.lock().get(client_id).map(|(s, _)| s.clone())
    }

    /// Forgets `client_id`, returning what it had reported.
    pub fn remove(&self, client_id: &str) -> Option<pb::Settings> {
        self.clients.lock().remove(client_id).map(|(s, _)| s)
    }

    /// Forgets the clients not heard of for `idle` unless `keep` (one with an open stream),
    /// as Apache's proxy drops a client after `channelExpiredTimeout`; their ids.
    pub fn expire(&self, idle: std::time::Duration, keep: impl Fn(&str) -> bool) -> Vec<String> {
        let mut gone = Vec::new();
        self.clients.lock().retain(|id, (_, seen)| {
            let stays = seen.elapsed() < idle || keep(id);
            if !stays {
                gone.push(id.clone());
            }
            stays
        });
        gone
    }

    /// How many clients are known.
    #[must_use]
    pub fn len(&self) -> usize {
        self.clients.lock().len()
    }

    /// Whether none is.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The settings the server answers a client's `reported` ones with.
#[must_use]
pub fn answer(reported: &pb::Settings, config: &ProxyConfig) -> pb::Settings {
    let mut settings = reported.clone();
    match &mut settings.pub_sub {
        Some(PubSub::Publishing(publishing)) => {
            settings.backoff_policy = Some(pb::RetryPolicy {
                max_attempts: config.grpc_client_producer_max_attempts,
                strategy: Some(retry_policy::Strategy::ExponentialBackoff(
                    pb::ExponentialBackoff {
                        initial: Some(millis(config.grpc_client_producer_backoff_initial_millis)),
                        max: Some(millis(config.grpc_client_producer_backoff_max_millis)),
                        #[allow(
                            clippy::cast_precision_loss,
                            reason = "a small integer multiplier as a float, as Apache's"
                        )]
                        multiplier: config.grpc_client_producer_backoff_multiplier as f32,
                    },
                )),
            });
            publishing.validate_message_type = config.enable_topic_message_type_check;
            publishing.max_body_size = i32::try_from(config.max_message_size).unwrap_or(i32::MAX);
        }
        Some(PubSub::Subscription(subscription)) => {
            subscription.receive_batch_size =
                Some(config.grpc_client_consumer_long_polling_batch_size);
            subscription.long_polling_timeout = Some(millis(
                config.grpc_client_consumer_max_long_polling_timeout_millis,
            ));
            // A default group's; the group's own `consumeMessageOrderly` and `retryMaxTimes`
            // are merged in by `consume::Consumers::merge_group`.
            subscription.fifo = Some(false);
            settings.backoff_policy = Some(pb::RetryPolicy {
                max_attempts: DEFAULT_RETRY_MAX_TIMES + 1,
                strategy: Some(retry_policy::Strategy::CustomizedBackoff(
                    pb::CustomizedBackoff {
                        next: DEFAULT_RETRY_DELAYS_S
                            .iter()
                            .map(|s| Duration {
                                seconds: *s,
                                nanos: 0,
                            })
                            .collect(),
                    },
                )),
            });
        }
        None => {}
    }
    settings.metric = Some(pb::Metric {
        on: false,
        endpoints: None,
    });
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_clients_without_a_stream_expire() {
        let clients = ClientSettings::new();
        clients.update("quiet", pb::Settings::default());
        clients.update("streaming", pb::Settings::default());
        clients.update("beating", pb::Settings::default());
        let idle = std::time::Duration::from_millis(50);
        std::thread::sleep(idle * 2);
        clients.touch("beating");
        let gone = clients.expire(idle, |id| id == "streaming");
        assert_eq!(gone, ["quiet"]);
        assert!(clients.get("quiet").is_none());
        assert!(clients.get("streaming").is_some() && clients.get("beating").is_some());
        assert!(clients.expire(idle, |_| true).is_empty());
    }

    fn producer() -> pb::Settings {
        pb::Settings {
            client_type: Some(pb::ClientType::Producer.into()),
            request_timeout: Some(Duration {
                seconds: 3,
                nanos: 0,
            }),
            pub_sub: Some(PubSub::Publishing(pb::Publishing {
                topics: vec![pb::Resource {
                    resource_namespace: String::new(),
                    name: "T".into(),
                }],
                max_body_size: 0,
                validate_message_type: false,
            })),
            user_agent: Some(pb::Ua {
                language: pb::Language::Java.into(),
                version: "5.2.0".into(),
                platform: "Linux".into(),
                hostname: "h".into(),
            }),
            ..pb::Settings::default()
        }
    }

    #[test]
    fn producer_answer() {
        let a = answer(&producer(), &ProxyConfig::default());
        let Some(PubSub::Publishing(p)) = &a.pub_sub else {
            panic!("publishing kept")
        };
        assert!(p.validate_message_type);
        assert_eq!(p.max_body_size, 4 * 1024 * 1024);
        assert_eq!(p.topics.len(), 1);
        let policy = a.backoff_policy.unwrap();
        assert_eq!(policy.max_attempts, 3);
        let Some(retry_policy::Strategy::ExponentialBackoff(e)) = policy.strategy else {
            panic!("exponential backoff")
        };
        assert_eq!(
            e.initial,
            Some(Duration {
                seconds: 0,
                nanos: 10_000_000
            })
        );
        assert_eq!(
            e.max,
            Some(Duration {
                seconds: 1,
                nanos: 0
            })
        );
        assert!((e.multiplier - 2.0).abs() < f32::EPSILON);
        // What the client said about itself is echoed.
        assert_eq!(a.user_agent, producer().user_agent);
        assert_eq!(a.request_timeout, producer().request_timeout);
        assert_eq!(a.metric.map(|m| m.on), Some(false));
    }

    #[test]
    fn consumer_answer_and_store() {
        let reported = pb::Settings {
            client_type: Some(pb::ClientType::SimpleConsumer.into()),
            pub_sub: Some(PubSub::Subscription(pb::Subscription::default())),
            ..pb::Settings::default()
        };
        let a = answer(&reported, &ProxyConfig::default());
        let Some(PubSub::Subscription(s)) = &a.pub_sub else {
            panic!("subscription kept")
        };
        assert_eq!(s.receive_batch_size, Some(32));
        assert_eq!(s.long_polling_timeout.as_ref().map(|d| d.seconds), Some(20));
        assert_eq!(s.fifo, Some(false));
        let policy = a.backoff_policy.unwrap();
        assert_eq!(policy.max_attempts, 17);
        let Some(retry_policy::Strategy::CustomizedBackoff(c)) = policy.strategy else {
            panic!("customized backoff")
        };
        assert_eq!(c.next.len(), 18);
        assert_eq!(c.next.last().map(|d| d.seconds), Some(7200));

        let store = ClientSettings::new();
        store.update("c1", reported.clone());
        assert_eq!(store.get("c1"), Some(reported));
        assert!(store.remove("c1").is_some());
        assert!(store.is_empty());
    }
}
