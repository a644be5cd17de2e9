//! Who is connected (`ConsumerManager` / `ProducerManager`): client channels by group,
//! consumer groups' subscriptions as registered by heartbeats, and the
//! NOTIFY_CONSUMER_IDS_CHANGED push that makes a group rebalance at once.
//!
//! Push consumers pull without a subscription: the broker's copy, kept here from
//! heartbeats, is the one a pull is filtered with.

use std::collections::{BTreeMap, HashMap};

use parking_lot::RwLock;
use remoting::protocol::broker::NotifyConsumerIdsChangedRequestHeader;
use remoting::protocol::heartbeat::{
    ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData,
};
use remoting::{Channel, LanguageCode, RemotingCommand, RequestCode};
use tracing::{debug, info, warn};

use crate::clock::now_ms;

/// A client channel that registered through a heartbeat.
#[derive(Debug, Clone)]
pub struct ClientChannelInfo {
    /// The connection.
    pub channel: Channel,
    /// `clientID` from the heartbeat.
    pub client_id: String,
    /// Header language of the heartbeat.
    pub language: LanguageCode,
    /// Header version of the heartbeat.
    pub version: i32,
    /// Last heartbeat, ms since the epoch.
    pub last_update: i64,
}

/// One consumer group: its channels and what it subscribes to.
#[derive(Debug, Clone)]
pub struct ConsumerGroupInfo {
    /// Channels by channel id.
    pub channels: HashMap<u64, ClientChannelInfo>,
    /// Topic → subscription (latest subVersion wins).
    pub subscriptions: BTreeMap<String, SubscriptionData>,
    /// Push or pull.
    pub consume_type: ConsumeType,
    /// Clustering or broadcasting.
    pub message_model: MessageModel,
    /// Start position of the group.
    pub consume_from_where: ConsumeFromWhere,
    /// Last heartbeat of any member.
    pub last_update: i64,
}

impl ConsumerGroupInfo {
    /// Client ids of the group's channels.
    #[must_use]
    pub fn client_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .channels
            .values()
            .map(|c| c.client_id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// Registers or refreshes a channel; true when it is new.
    fn update_channel(
        &mut self,
        info: ClientChannelInfo,
        ct: ConsumeType,
        mm: MessageModel,
        cfw: ConsumeFromWhere,
    ) -> bool {
        self.consume_type = ct;
        self.message_model = mm;
        self.consume_from_where = cfw;
        self.last_update = info.last_update;
        self.channels.insert(info.channel.id(), info).is_none()
    }

    /// Applies a heartbeat's subscriptions; true when the topic set changed.
    fn update_subscriptions(&mut self, subs: &[SubscriptionData]) -> bool {
        let mut changed = false;
        for sub in subs {
            match self.subscriptions.get(&sub.topic) {
                None => {
                    self.subscriptions.insert(sub.topic.clone(), sub.clone());
                    changed = true;
                }
                Some(old) if sub.sub_version > old.sub_version => {
                    self.subscriptions.insert(sub.topic.clone(), sub.clone());
                }
                Some(_) => {}
            }
        }
        let before = self.subscriptions.len();
        self.subscriptions
            .retain(|topic, _| subs.iter().any(|s| &s.topic == topic));
        changed || self.subscriptions.len() != before
    }
}

/// Consumer groups of the broker.
#[derive(Debug, Default)]
pub struct ConsumerManager {
    groups: RwLock<HashMap<String, ConsumerGroupInfo>>,
}

/// A heartbeat's registration of one consumer group.
#[derive(Debug)]
pub struct ConsumerRegistration<'a> {
    /// Group name.
    pub group: &'a str,
    /// The client's channel.
    pub client: ClientChannelInfo,
    /// Push or pull.
    pub consume_type: ConsumeType,
    /// Clustering or broadcasting.
    pub message_model: MessageModel,
    /// Start position.
    pub consume_from_where: ConsumeFromWhere,
    /// Subscriptions.
    pub subscriptions: &'a [SubscriptionData],
    /// Tell the group's channels if membership or subscriptions changed.
    pub notify: bool,
}

impl ConsumerManager {
    /// Applies a heartbeat. Returns whether the group's membership or topics changed
    /// (its channels are then told to rebalance, when `notify`).
    pub fn register(&self, reg: ConsumerRegistration<'_>) -> bool {
        let (changed, channels) = {
            let mut groups = self.groups.write();
            let info = groups
                .entry(reg.group.to_owned())
                .or_insert_with(|| ConsumerGroupInfo {
                    channels: HashMap::new(),
                    subscriptions: BTreeMap::new(),
                    consume_type: reg.consume_type,
                    message_model: reg.message_model,
                    consume_from_where: reg.consume_from_where,
                    last_update: reg.client.last_update,
                });
            let r1 = info.update_channel(
                reg.client,
                reg.consume_type,
                reg.message_model,
                reg.consume_from_where,
            );
            let r2 = info.update_subscriptions(reg.subscriptions);
            (r1 || r2, channels_of(info))
        };
        if changed {
            info!(group = reg.group, "consumer group changed");
            if reg.notify {
                notify_ids_changed(reg.group, &channels);
            }
        }
        changed
    }

    /// Removes one client from a group (UNREGISTER_CLIENT).
    pub fn unregister(&self, group: &str, channel: &Channel, notify: bool) {
        let remaining = {
            let mut groups = self.groups.write();
            let Some(info) = groups.get_mut(group) else {
                return;
            };
            if info.channels.remove(&channel.id()).is_none() {
                return;
            }
            if info.channels.is_empty() {
                groups.remove(group);
                info!(group, "consumer group has no more clients");
                return;
            }
            channels_of(info)
        };
        if notify {
            notify_ids_changed(group, &remaining);
        }
    }

    /// Removes a closed channel from every group and tells the others.
    pub fn channel_closed(&self, channel: &Channel) {
        let mut to_notify = Vec::new();
        {
            let mut groups = self.groups.write();
            groups.retain(|group, info| {
                if info.channels.remove(&channel.id()).is_none() {
                    return true;
                }
                if info.channels.is_empty() {
                    info!(group, "consumer group has no more clients");
                    return false;
                }
                to_notify.push((group.clone(), channels_of(info)));
                true
            });
        }
        for (group, channels) in to_notify {
            notify_ids_changed(&group, &channels);
        }
    }

    /// Closes and removes channels without a heartbeat for `expiry_ms`.
    pub fn scan_not_active(&self, expiry_ms: i64) {
        let now = now_ms();
        let expired: Vec<Channel> = self
            .groups
            .read()
            .values()
            .flat_map(|g| g.channels.values())
            .filter(|c| now - c.last_update > expiry_ms)
            .map(|c| c.channel.clone())
            .collect();
        for channel in expired {
            warn!(peer = %channel.peer_addr(), "consumer channel expired, closing");
            channel.close();
            self.channel_closed(&channel);
        }
    }

    /// A copy of a group's state.
    #[must_use]
    pub fn group(&self, group: &str) -> Option<ConsumerGroupInfo> {
        self.groups.read().get(group).cloned()
    }

    /// The registered subscription of `group` to `topic`.
    #[must_use]
    pub fn subscription(&self, group: &str, topic: &str) -> Option<SubscriptionData> {
        self.groups
            .read()
            .get(group)?
            .subscriptions
            .get(topic)
            .cloned()
    }

    /// The channel of `client_id` in `group`.
    #[must_use]
    pub fn find_channel(&self, group: &str, client_id: &str) -> Option<ClientChannelInfo> {
        self.groups
            .read()
            .get(group)?
            .channels
            .values()
            .find(|c| c.client_id == client_id)
            .cloned()
    }

    /// Names of the groups subscribing to `topic`.
    #[must_use]
    pub fn groups_subscribing(&self, topic: &str) -> Vec<String> {
        self.groups
            .read()
            .iter()
            .filter(|(_, g)| g.subscriptions.contains_key(topic))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Names of every group with clients.
    #[must_use]
    pub fn group_names(&self) -> Vec<String> {
        self.groups.read().keys().cloned().collect()
    }
}

fn channels_of(info: &ConsumerGroupInfo) -> Vec<Channel> {
    info.channels.values().map(|c| c.channel.clone()).collect()
}

/// NOTIFY_CONSUMER_IDS_CHANGED, oneway, to every channel of the group.
fn notify_ids_changed(group: &str, channels: &[Channel]) {
    let header = NotifyConsumerIdsChangedRequestHeader {
        consumer_group: group.to_owned(),
    };
    for channel in channels {
        let request = RemotingCommand::request_with(RequestCode::NotifyConsumerIdsChanged, &header);
        if let Err(e) = channel.invoke_oneway(request) {
            debug!(error = %e, group, "consumer ids changed not sent");
        }
    }
}

/// Producer groups of the broker (transaction checks, replies, admin listings).
#[derive(Debug, Default)]
pub struct ProducerManager {
    tables: RwLock<ProducerTables>,
    /// Round-robin position of [`ProducerManager::available_channel`].
    next: std::sync::atomic::AtomicUsize,
}

#[derive(Debug, Default)]
struct ProducerTables {
    /// Group → channel id → channel.
    groups: HashMap<String, HashMap<u64, ClientChannelInfo>>,
    /// Client id → its latest channel: where a reply to its request is pushed.
    by_client: HashMap<String, Channel>,
}

impl ProducerTables {
    /// Forgets `channel` as the channel of `client_id` (not a newer one of that client).
    fn forget_client(&mut self, client_id: &str, channel: &Channel) {
        if self
            .by_client
            .get(client_id)
            .is_some_and(|c| c.id() == channel.id())
        {
            self.by_client.remove(client_id);
        }
    }
}

impl ProducerManager {
    /// Registers or refreshes a producer channel.
    pub fn register(&self, group: &str, client: ClientChannelInfo) {
        let mut t = self.tables.write();
        t.by_client
            .insert(client.client_id.clone(), client.channel.clone());
        t.groups
            .entry(group.to_owned())
            .or_default()
            .insert(client.channel.id(), client);
    }

    /// Removes a producer channel from a group.
    pub fn unregister(&self, group: &str, channel: &Channel) {
        let mut t = self.tables.write();
        let Some(members) = t.groups.get_mut(group) else {
            return;
        };
        let removed = members.remove(&channel.id());
        if members.is_empty() {
            t.groups.remove(group);
        }
        if let Some(c) = removed {
            t.forget_client(&c.client_id, channel);
        }
    }

    /// Removes a closed channel from every group.
    pub fn channel_closed(&self, channel: &Channel) {
        let mut t = self.tables.write();
        let mut gone = Vec::new();
        t.groups.retain(|_, members| {
            gone.extend(members.remove(&channel.id()));
            !members.is_empty()
        });
        for c in gone {
            t.forget_client(&c.client_id, channel);
        }
    }

    /// Closes and removes channels without a heartbeat for `expiry_ms`.
    pub fn scan_not_active(&self, expiry_ms: i64) {
        let now = now_ms();
        let mut expired = Vec::new();
        let mut t = self.tables.write();
        t.groups.retain(|_, members| {
            members.retain(|_, c| {
                let alive = now - c.last_update <= expiry_ms;
                if !alive {
                    expired.push(c.clone());
                }
                alive
            });
            !members.is_empty()
        });
        for c in &expired {
            t.forget_client(&c.client_id, &c.channel);
        }
        drop(t);
        for c in expired {
            warn!(peer = %c.channel.peer_addr(), "producer channel expired, closing");
            c.channel.close();
        }
    }

    /// The channels of a group.
    #[must_use]
    pub fn channels(&self, group: &str) -> Vec<ClientChannelInfo> {
        self.tables
            .read()
            .groups
            .get(group)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The open channel of the producer with this client id (`ProducerManager.findChannel`):
    /// where a reply to its request goes.
    #[must_use]
    pub fn find_channel(&self, client_id: &str) -> Option<Channel> {
        self.tables
            .read()
            .by_client
            .get(client_id)
            .filter(|c| !c.is_closed())
            .cloned()
    }

    /// One open channel of `group` for a transaction check-back, taking the group's
    /// channels in turn (RocketMQ's `getAvailableChannel`); `None` if none is open.
    #[must_use]
    pub fn available_channel(&self, group: &str) -> Option<Channel> {
        let t = self.tables.read();
        let mut channels: Vec<&Channel> = t
            .groups
            .get(group)?
            .values()
            .map(|c| &c.channel)
            .filter(|c| !c.is_closed())
            .collect();
        if channels.is_empty() {
            return None;
        }
        // Map order is arbitrary; sort so that turns are fair.
        channels.sort_by_key(|c| c.id());
        let turn = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        channels.get(turn % channels.len()).map(|c| (*c).clone())
    }

    /// Every group with its channels.
    #[must_use]
    pub fn all(&self) -> BTreeMap<String, Vec<ClientChannelInfo>> {
        self.tables
            .read()
            .groups
            .iter()
            .map(|(g, m)| (g.clone(), m.values().cloned().collect()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(
        id: &str,
    ) -> (
        ClientChannelInfo,
        tokio::sync::mpsc::UnboundedReceiver<RemotingCommand>,
    ) {
        let (channel, rx) = Channel::detached("127.0.0.1:1".parse().unwrap());
        (
            ClientChannelInfo {
                channel,
                client_id: id.into(),
                language: LanguageCode::Java,
                version: 409,
                last_update: now_ms(),
            },
            rx,
        )
    }

    fn reg<'a>(
        group: &'a str,
        c: &ClientChannelInfo,
        subs: &'a [SubscriptionData],
    ) -> ConsumerRegistration<'a> {
        ConsumerRegistration {
            group,
            client: c.clone(),
            consume_type: ConsumeType::ConsumePassively,
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            subscriptions: subs,
            notify: true,
        }
    }

    #[test]
    fn membership_changes_notify_the_group() {
        let m = ConsumerManager::default();
        let subs = vec![SubscriptionData::build_tag("T", "*", 1)];
        let (a, mut rx_a) = client("a");
        let (b, mut rx_b) = client("b");
        assert!(m.register(reg("g", &a, &subs)));
        assert_eq!(
            rx_a.try_recv().unwrap().code(),
            RequestCode::NotifyConsumerIdsChanged.code()
        );
        // Same heartbeat again: nothing changes, nobody is told.
        assert!(!m.register(reg("g", &a, &subs)));
        assert!(rx_a.try_recv().is_err());
        assert!(m.register(reg("g", &b, &subs)));
        assert!(rx_a.try_recv().is_ok() && rx_b.try_recv().is_ok());
        assert_eq!(m.group("g").unwrap().client_ids(), vec!["a", "b"]);

        m.channel_closed(&b.channel);
        let note = rx_a.try_recv().unwrap();
        assert_eq!(note.ext("consumerGroup"), Some("g"));
        assert_eq!(m.group("g").unwrap().client_ids(), vec!["a"]);
        m.unregister("g", &a.channel, true);
        assert!(m.group("g").is_none());
    }

    #[test]
    fn subscriptions_follow_versions_and_topic_sets() {
        let m = ConsumerManager::default();
        let (a, _rx) = client("a");
        m.register(reg("g", &a, &[SubscriptionData::build_tag("T", "A", 5)]));
        // An older version does not replace a newer one.
        assert!(!m.register(reg("g", &a, &[SubscriptionData::build_tag("T", "B", 4)])));
        assert_eq!(m.subscription("g", "T").unwrap().sub_string, "A");
        m.register(reg("g", &a, &[SubscriptionData::build_tag("T", "B", 6)]));
        assert_eq!(m.subscription("g", "T").unwrap().sub_string, "B");
        // Dropping a topic is a change.
        assert!(m.register(reg("g", &a, &[SubscriptionData::build_tag("U", "*", 7)])));
        assert!(m.subscription("g", "T").is_none());
        assert_eq!(m.groups_subscribing("U"), vec!["g"]);
    }

    #[test]
    fn producers() {
        let m = ProducerManager::default();
        let (a, _rx) = client("a");
        m.register("pg", a.clone());
        assert_eq!(m.channels("pg").len(), 1);
        let (b, _rx_b) = client("b");
        m.register("pg", b.clone());
        let picks: Vec<u64> = (0..4)
            .map(|_| m.available_channel("pg").unwrap().id())
            .collect();
        assert_ne!(picks[0], picks[1], "turns: {picks:?}");
        assert_eq!(picks[0], picks[2]);
        b.channel.close();
        assert_eq!(m.available_channel("pg").unwrap().id(), a.channel.id());
        assert!(m.available_channel("other").is_none());
        m.channel_closed(&b.channel);
        m.channel_closed(&a.channel);
        assert!(m.all().is_empty());
    }

    #[test]
    fn producers_by_client_id() {
        let m = ProducerManager::default();
        let (a, _rx) = client("a");
        m.register("pg", a.clone());
        m.register("other", a.clone());
        assert_eq!(m.find_channel("a").unwrap().id(), a.channel.id());
        assert!(m.find_channel("b").is_none());
        // A reconnect: the newer channel is the client's; dropping the old one keeps it.
        let (a2, _rx2) = client("a");
        m.register("pg", a2.clone());
        m.unregister("pg", &a.channel);
        assert_eq!(m.find_channel("a").unwrap().id(), a2.channel.id());
        m.channel_closed(&a.channel);
        assert_eq!(m.find_channel("a").unwrap().id(), a2.channel.id());
        a2.channel.close();
        assert!(
            m.find_channel("a").is_none(),
            "a closed channel is no target"
        );
        m.channel_closed(&a2.channel);
        assert!(m.all().is_empty());
    }
}
