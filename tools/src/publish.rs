//! What a producer needs besides the wire call: the writable queues of a topic (with
//! the TBW102 fallback RocketMQ producers use for auto-created topics) and the
//! SEND_MESSAGE_V2 header and properties of a message.

use message::properties::{Properties, keys};
use remoting::protocol::broker::SendMessageRequestHeaderV2;
use remoting::protocol::constants::perm;
use remoting::protocol::constants::system::AUTO_CREATE_TOPIC_KEY;
use remoting::protocol::route::TopicRouteData;

use crate::client::Client;
use crate::error::{Result, ToolsError};

/// Producer `defaultTopicQueueNums`.
pub const DEFAULT_TOPIC_QUEUE_NUMS: i32 = 4;

/// One writable queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishQueue {
    /// Broker name.
    pub broker_name: String,
    /// Master address.
    pub addr: String,
    /// Queue id.
    pub queue_id: i32,
}

/// The writable queues of a route: masters only, queues `0..writeQueueNums` of each
/// writable QueueData, at most `cap` per broker (the auto-create case).
#[must_use]
pub fn queues_from_route(route: &TopicRouteData, cap: Option<i32>) -> Vec<PublishQueue> {
    let mut out = Vec::new();
    let mut datas: Vec<_> = route.queue_datas.iter().collect();
    datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    for q in datas {
        if !perm::is_writeable(q.perm) {
            continue;
        }
        let Some(addr) = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == q.broker_name)
            .and_then(|b| b.master_addr())
        else {
            continue;
        };
        let n = cap.map_or(q.write_queue_nums, |c| c.min(q.write_queue_nums));
        for queue_id in 0..n.max(0) {
            out.push(PublishQueue {
                broker_name: q.broker_name.clone(),
                addr: addr.to_owned(),
                queue_id,
            });
        }
    }
    out
}

/// The queues to publish `topic` to. When the name server has no route, the queues of
/// TBW102 (capped at [`DEFAULT_TOPIC_QUEUE_NUMS`]) are used and the broker creates the
/// topic on first send, as Java producers do; the flag says so.
///
/// # Errors
/// Neither the topic nor TBW102 has a writable route.
pub async fn publish_queues(client: &Client, topic: &str) -> Result<(Vec<PublishQueue>, bool)> {
    match client.fetch_route(topic).await {
        Ok(route) => {
            let queues = queues_from_route(&route, None);
            if queues.is_empty() {
                return Err(ToolsError::NoRoute {
                    topic: topic.to_owned(),
                    remark: "no writable queue on a master".to_owned(),
                });
            }
            Ok((queues, false))
        }
        Err(ToolsError::NoRoute { .. }) => {
            let no_route = || ToolsError::NoRoute {
                topic: topic.to_owned(),
                remark: format!(
                    "no route, and no writable {AUTO_CREATE_TOPIC_KEY} route to auto-create it"
                ),
            };
            let route = client
                .fetch_route(AUTO_CREATE_TOPIC_KEY)
                .await
                .map_err(|_| no_route())?;
            let queues = queues_from_route(&route, Some(DEFAULT_TOPIC_QUEUE_NUMS));
            if queues.is_empty() {
                return Err(no_route());
            }
            Ok((queues, true))
        }
        Err(e) => Err(e),
    }
}

/// The properties of a message as a Java producer sets them: TAGS, KEYS, WAIT, UNIQ_KEY.
#[must_use]
pub fn message_properties(
    tags: Option<&str>,
    message_keys: Option<&str>,
    uniq_key: &str,
) -> Properties {
    let mut p = Properties::new();
    if let Some(t) = tags.filter(|t| !t.is_empty()) {
        p.insert(keys::TAGS, t);
    }
    if let Some(k) = message_keys.filter(|k| !k.is_empty()) {
        p.insert(keys::KEYS, k);
    }
    p.insert(keys::WAIT, "true");
    p.insert(keys::UNIQ_KEY, uniq_key);
    p
}

/// A SEND_MESSAGE_V2 header for one queue.
#[must_use]
pub fn send_header(
    group: &str,
    topic: &str,
    queue: &PublishQueue,
    properties: &Properties,
    born_timestamp: i64,
    batch: bool,
) -> SendMessageRequestHeaderV2 {
    SendMessageRequestHeaderV2 {
        producer_group: group.to_owned(),
        topic: topic.to_owned(),
        default_topic: AUTO_CREATE_TOPIC_KEY.to_owned(),
        default_topic_queue_nums: DEFAULT_TOPIC_QUEUE_NUMS,
        queue_id: queue.queue_id,
        sys_flag: 0,
        born_timestamp,
        flag: 0,
        properties: Some(properties.encode()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(batch),
        broker_name: Some(queue.broker_name.clone()),
    }
}

/// Properties of a batch request header: WAIT only. Java's `MessageBatch` also carries
/// a batch UNIQ_KEY, but Apache RocketMQ 5.3.3 appends the header properties to every
/// entry, so that key would shadow each message's own (see tests/fixtures.rs); leaving it
/// out keeps one id per message.
#[must_use]
pub fn batch_header_properties() -> Properties {
    let mut p = Properties::new();
    p.insert(keys::WAIT, "true");
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::protocol::route::{BrokerData, QueueData};

    fn route() -> TopicRouteData {
        let qd = |name: &str, w, perm| QueueData {
            broker_name: name.into(),
            read_queue_nums: w,
            write_queue_nums: w,
            perm,
            topic_sys_flag: 0,
        };
        let bd = |name: &str, addrs: &[(i64, &str)]| BrokerData {
            cluster: "C".into(),
            broker_name: name.into(),
            broker_addrs: addrs.iter().map(|(i, a)| (*i, (*a).to_owned())).collect(),
            enable_acting_master: false,
            zone_name: None,
        };
        TopicRouteData {
            order_topic_conf: None,
            queue_datas: vec![
                qd("b", 2, 6),
                qd("a", 8, 6),
                qd("ro", 4, 4),
                qd("noMaster", 4, 6),
            ],
            broker_datas: vec![
                bd("a", &[(0, "a:1"), (1, "a:2")]),
                bd("b", &[(0, "b:1")]),
                bd("ro", &[(0, "ro:1")]),
                bd("noMaster", &[(1, "n:2")]),
            ],
            filter_server_table: Default::default(),
        }
    }

    #[test]
    fn writable_master_queues() {
        let q = queues_from_route(&route(), None);
        assert_eq!(q.len(), 10);
        assert_eq!(
            q[0],
            PublishQueue {
                broker_name: "a".into(),
                addr: "a:1".into(),
                queue_id: 0
            }
        );
        assert_eq!(q[9].broker_name, "b");
        assert_eq!(queues_from_route(&route(), Some(4)).len(), 6);
    }

    #[test]
    fn header_and_properties() {
        let p = message_properties(Some("TagA"), Some("k1"), "ID");
        assert_eq!(
            p.encode(),
            "TAGS\u{1}TagA\u{2}KEYS\u{1}k1\u{2}WAIT\u{1}true\u{2}UNIQ_KEY\u{1}ID"
        );
        let q = PublishQueue {
            broker_name: "a".into(),
            addr: "a:1".into(),
            queue_id: 3,
        };
        let h = send_header("g", "T", &q, &p, 7, false);
        let mut ext = remoting::ExtFields::new();
        remoting::CommandHeader::write_to(&h, &mut ext);
        assert_eq!(ext.get("b"), Some("T"));
        assert_eq!(ext.get("c"), Some("TBW102"));
        assert_eq!(ext.get("e"), Some("3"));
        assert_eq!(ext.get("n"), Some("a"));
    }
}
