//! Topic routes from the name server (GET_ROUTEINFO_BY_TOPIC), cached briefly, and the
//! choice of a queue to write to.
//!
//! The SDKs learn a topic's queues from QueryRoute, but they send through the proxy and never
//! name a queue: the proxy picks one, as Apache's proxy does (`MessageQueueSelector`,
//! `SendMessageQueueSelector`): the writable queues of every broker name that has a master,
//! sorted by (broker name, queue id); a FIFO message goes to the queue its message group
//! hashes to (Guava's `Hashing.consistentHash` of the group's Java hash code, so that Apache's
//! proxy and this one put a group in the same queue), any other message to the next queue
//! round robin.
//!
//! In local mode ([`Mode::Local`]) the queues written to are this broker's only, whatever
//! the name server says of its master, as Apache's `LocalTopicRouteService` takes them from
//! the broker's own topic table: a message sent to a broker's endpoint is stored by that
//! broker (or refused by it), never forwarded.
//!
//! A route is kept [`ROUTE_TTL`] and fetched again when older, or when a send through it
//! failed to reach its broker ([`Routes::invalidate`]): brokers come and go every 30 s of
//! registration, and a stale route costs a failed send.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use remoting::protocol::constants::perm;
use remoting::protocol::namesrv::GetRouteInfoRequestHeader;
use remoting::protocol::route::TopicRouteData;
use remoting::{RemotingCommand, RequestCode, ResponseCode, fastjson};

use crate::backend::{Backend, Target};
use crate::local::{LocalBroker, Mode};
use crate::pb::Code;
use crate::status::Refusal;

/// How long a fetched route is used.
pub const ROUTE_TTL: Duration = Duration::from_secs(5);
/// Limit of one name server request (Apache's proxy: 3 s).
pub const NAMESRV_TIMEOUT: Duration = Duration::from_secs(3);

/// One writable queue and the master that serves it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct WriteQueue {
    /// Broker name.
    pub broker_name: String,
    /// Queue id on that broker.
    pub queue_id: i32,
    /// The master's `ip:port`.
    pub addr: String,
}

/// A topic's route as the proxy uses it.
#[derive(Debug)]
pub struct TopicRoute {
    /// The name server's answer as it is (QueryRoute lists its queues).
    pub data: TopicRouteData,
    /// Broker name → master address, for the brokers that have a master.
    pub masters: BTreeMap<String, String>,
    /// Writable queues with a master, sorted by (broker name, queue id).
    pub write_queues: Vec<WriteQueue>,
    /// Local mode: this broker's address, where every send and topic request goes.
    local_addr: Option<String>,
    /// Local mode: this broker's name.
    local_name: Option<String>,
    /// Round-robin position (starts anywhere, as Apache's).
    next: AtomicUsize,
}

impl TopicRoute {
    /// The route of `data` (cluster mode).
    #[must_use]
    pub fn new(data: TopicRouteData) -> Self {
        Self::in_mode(data, &Mode::Cluster)
    }

    /// The route of `data` as an endpoint in `mode` writes to it.
    #[must_use]
    pub fn in_mode(data: TopicRouteData, mode: &Mode) -> Self {
        let masters: BTreeMap<String, String> = data
            .broker_datas
            .iter()
            .filter_map(|b| Some((b.broker_name.clone(), b.master_addr()?.to_owned())))
            .collect();
        let local = mode.local();
        // Who serves a broker name's writes: its master, or in local mode this broker for
        // its own name and nobody for the others.
        let writer = |broker: &str| -> Option<String> {
            match local {
                None => masters.get(broker).cloned(),
                Some(LocalBroker { name, addr }) => (name == broker).then(|| addr.clone()),
            }
        };
        let mut write_queues = Vec::new();
        let mut push = |broker: &str, nums: i32| {
            if let Some(addr) = writer(broker) {
                for queue_id in 0..nums {
                    write_queues.push(WriteQueue {
                        broker_name: broker.to_owned(),
                        queue_id,
                        addr: addr.clone(),
                    });
                }
            }
        };
        // An ordered topic's name server conf (`brokerA:4;brokerB:4`) wins over queue data.
        match data
            .order_topic_conf
            .as_deref()
            .filter(|c| !c.trim().is_empty())
        {
            Some(conf) => {
                for item in conf.split(';') {
                    if let Some((broker, nums)) = item.split_once(':') {
                        push(broker, nums.trim().parse().unwrap_or(0));
                    }
                }
            }
            None => {
                for q in &data.queue_datas {
                    if perm::is_writeable(q.perm) {
                        push(&q.broker_name, q.write_queue_nums);
                    }
                }
            }
        }
        write_queues.sort();
        write_queues.dedup();
        TopicRoute {
            data,
            masters,
            write_queues,
            local_addr: local.map(|b| b.addr.clone()),
            local_name: local.map(|b| b.name.clone()),
            next: AtomicUsize::new(fastrand::usize(..)),
        }
    }

    /// The queue a send goes to: by message group (`sharding_key`) when there is one, else
    /// the next round robin; `None` when no queue is writable.
    #[must_use]
    pub fn select(&self, sharding_key: Option<&str>) -> Option<&WriteQueue> {
        let n = self.write_queues.len();
        if n == 0 {
            return None;
        }
        let at = match sharding_key.filter(|k| !k.is_empty()) {
            Some(key) => consistent_hash(i64::from(message::tags::hash_code(key)), n),
            None => self.next.fetch_add(1, Ordering::Relaxed) % n,
        };
        self.write_queues.get(at)
    }

    /// The master of broker `name` (in local mode this broker for its own name).
    #[must_use]
    pub fn master_of(&self, name: &str) -> Option<&str> {
        match (&self.local_name, &self.local_addr) {
            (Some(local), Some(addr)) if local == name => Some(addr),
            _ => self.masters.get(name).map(String::as_str),
        }
    }

    /// Any master of the route (for requests about the topic, not one queue); in local mode
    /// this broker.
    #[must_use]
    pub fn any_master(&self) -> Option<&str> {
        if let Some(addr) = &self.local_addr {
            return Some(addr);
        }
        let n = self.masters.len();
        if n == 0 {
            return None;
        }
        self.masters
            .values()
            .nth(fastrand::usize(..n))
            .map(String::as_str)
    }
}

/// Guava's `Hashing.consistentHash(long, int)`: the bucket in `0..buckets` of `input`, moving
/// as few inputs as possible when `buckets` grows. Its linear congruential generator (seeded
/// with the input, multiplier 2862933555777941757, increment 1) draws doubles from the top 31
/// bits of the state; the candidate jumps forward while the draws allow.
#[must_use]
pub fn consistent_hash(input: i64, buckets: usize) -> usize {
    let buckets = i64::try_from(buckets).unwrap_or(i64::MAX).max(1);
    let mut state = input;
    let mut candidate: i64 = 0;
    loop {
        state = state
            .wrapping_mul(2_862_933_555_777_941_757)
            .wrapping_add(1);
        // (int) (state >>> 33) + 1, as a double, over 2^31.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "Java's (int) of a 31-bit value"
        )]
        let drawn = ((state as u64 >> 33) as i32).wrapping_add(1);
        let double = f64::from(drawn) / f64::from(1u32 << 31);
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_precision_loss,
            reason = "Java's (int) of the double, saturating as Java's does"
        )]
        let next = i64::from(((candidate + 1) as f64 / double) as i32);
        if next >= 0 && next < buckets {
            candidate = next;
        } else {
            return usize::try_from(candidate).unwrap_or(0);
        }
    }
}

/// The route cache in front of the name server.
#[derive(Debug)]
pub struct Routes<B> {
    backend: Arc<B>,
    mode: Mode,
    cache: Mutex<HashMap<String, (Instant, Arc<TopicRoute>)>>,
}

impl<B: Backend> Routes<B> {
    /// An empty cache over `backend` (cluster mode).
    #[must_use]
    pub fn new(backend: Arc<B>) -> Self {
        Self::with_mode(backend, Mode::Cluster)
    }

    /// An empty cache over `backend` for an endpoint in `mode`.
    #[must_use]
    pub fn with_mode(backend: Arc<B>, mode: Mode) -> Self {
        Routes {
            backend,
            mode,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The mode routes are taken in.
    #[must_use]
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// The route of `topic`: cached if fresh, else asked for.
    ///
    /// # Errors
    /// `TOPIC_NOT_FOUND` when the name server has no route; the mapped code of any other
    /// failure of the name server or of the request.
    pub async fn get(&self, topic: &str) -> Result<Arc<TopicRoute>, Refusal> {
        if let Some((at, route)) = self.cache.lock().get(topic) {
            if at.elapsed() < ROUTE_TTL {
                return Ok(Arc::clone(route));
            }
        }
        let route = Arc::new(TopicRoute::in_mode(self.fetch(topic).await?, &self.mode));
        self.cache
            .lock()
            .insert(topic.to_owned(), (Instant::now(), Arc::clone(&route)));
        Ok(route)
    }

    /// Forgets `topic`'s route: the next use asks the name server again.
    pub fn invalidate(&self, topic: &str) {
        self.cache.lock().remove(topic);
    }

    async fn fetch(&self, topic: &str) -> Result<TopicRouteData, Refusal> {
        let header = GetRouteInfoRequestHeader {
            topic: topic.to_owned(),
            accept_standard_json_only: Some(true),
        };
        let request = RemotingCommand::request_with(RequestCode::GetRouteinfoByTopic, &header);
        let response = self
            .backend
            .invoke(Target::Namesrv, request, NAMESRV_TIMEOUT)
            .await?;
        if response.code() == ResponseCode::TopicNotExist.code() {
            return Err(Refusal::new(
                Code::TopicNotFound,
                format!("topic {topic} not found"),
            ));
        }
        if response.code() != ResponseCode::Success.code() {
            return Err(Refusal::from_response(response.code(), response.remark()));
        }
        fastjson::from_slice(&response.body.to_bytes()).map_err(|e| {
            Refusal::new(
                Code::InternalServerError,
                format!("unreadable route of {topic}: {e}"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use remoting::protocol::route::{BrokerData, QueueData};

    use super::*;

    fn broker(name: &str, addrs: &[(i64, &str)]) -> BrokerData {
        BrokerData {
            cluster: "DefaultCluster".into(),
            broker_name: name.into(),
            broker_addrs: addrs.iter().map(|(i, a)| (*i, (*a).to_owned())).collect(),
            ..BrokerData::default()
        }
    }

    fn queues(name: &str, r: i32, w: i32, perm: i32) -> QueueData {
        QueueData {
            broker_name: name.into(),
            read_queue_nums: r,
            write_queue_nums: w,
            perm,
            topic_sys_flag: 0,
        }
    }

    #[test]
    fn write_queues_of_masters_sorted() {
        let route = TopicRoute::new(TopicRouteData {
            queue_datas: vec![
                queues("b", 4, 2, 6),
                queues("a", 4, 3, 6),
                queues("c", 4, 4, 4), // read only
                queues("d", 4, 4, 6), // slave only
            ],
            broker_datas: vec![
                broker("a", &[(0, "10.0.0.1:10911"), (1, "10.0.0.2:10911")]),
                broker("b", &[(0, "10.0.0.3:10911")]),
                broker("c", &[(0, "10.0.0.4:10911")]),
                broker("d", &[(1, "10.0.0.5:10911")]),
            ],
            ..TopicRouteData::default()
        });
        let got: Vec<(&str, i32, &str)> = route
            .write_queues
            .iter()
            .map(|q| (q.broker_name.as_str(), q.queue_id, q.addr.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", 0, "10.0.0.1:10911"),
                ("a", 1, "10.0.0.1:10911"),
                ("a", 2, "10.0.0.1:10911"),
                ("b", 0, "10.0.0.3:10911"),
                ("b", 1, "10.0.0.3:10911"),
            ]
        );
        assert_eq!(route.masters.len(), 3);
        // Round robin visits every queue once per turn.
        let mut seen: Vec<_> = (0..5)
            .map(|_| {
                route
                    .select(None)
                    .map(|q| (q.broker_name.clone(), q.queue_id))
            })
            .collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 5);
        // A message group always lands in the same queue.
        let g = route.select(Some("group-1")).cloned();
        assert!(g.is_some());
        assert_eq!(route.select(Some("group-1")).cloned(), g);
    }

    #[test]
    fn local_mode_writes_to_this_broker_only() {
        let data = TopicRouteData {
            queue_datas: vec![queues("a", 4, 2, 6), queues("b", 4, 3, 6)],
            broker_datas: vec![
                broker("a", &[(0, "10.0.0.1:10911"), (1, "10.0.0.2:10911")]),
                broker("b", &[(0, "10.0.0.3:10911")]),
            ],
            ..TopicRouteData::default()
        };
        // The slave of broker a: its own queues, at its own address (its store refuses).
        let slave = Mode::Local(LocalBroker {
            name: "a".into(),
            addr: "10.0.0.2:10911".into(),
        });
        let route = TopicRoute::in_mode(data.clone(), &slave);
        let got: Vec<(&str, i32, &str)> = route
            .write_queues
            .iter()
            .map(|q| (q.broker_name.as_str(), q.queue_id, q.addr.as_str()))
            .collect();
        assert_eq!(
            got,
            [("a", 0, "10.0.0.2:10911"), ("a", 1, "10.0.0.2:10911")]
        );
        assert_eq!(route.any_master(), Some("10.0.0.2:10911"));
        // QueryRoute still lists the whole cluster.
        assert_eq!(route.data.broker_datas.len(), 2);
        // A broker with no queue of the topic has nothing to write to.
        let other = Mode::Local(LocalBroker {
            name: "c".into(),
            addr: "10.0.0.9:10911".into(),
        });
        assert!(TopicRoute::in_mode(data, &other).select(None).is_none());
    }

    #[test]
    fn ordered_topic_conf_wins() {
        let route = TopicRoute::new(TopicRouteData {
            order_topic_conf: Some("b:2;a:1".into()),
            queue_datas: vec![queues("a", 8, 8, 6), queues("b", 8, 8, 6)],
            broker_datas: vec![broker("a", &[(0, "A:1")]), broker("b", &[(0, "B:1")])],
            ..TopicRouteData::default()
        });
        let got: Vec<(&str, i32)> = route
            .write_queues
            .iter()
            .map(|q| (q.broker_name.as_str(), q.queue_id))
            .collect();
        assert_eq!(got, [("a", 0), ("b", 0), ("b", 1)]);
    }

    #[test]
    fn no_writable_queue() {
        let route = TopicRoute::new(TopicRouteData::default());
        assert!(route.select(None).is_none());
        assert!(route.select(Some("g")).is_none());
        assert!(route.any_master().is_none());
    }

    #[test]
    fn consistent_hash_is_guavas() {
        // Guava 32.0.1's Hashing.consistentHash(input, buckets), printed by jshell; 293427298
        // is "group-0".hashCode().
        let cases = [
            (1, 8, 6),
            (1, 1000, 549),
            (-1, 2, 1),
            (-1, 16, 10),
            (-1, 1000, 313),
            (12345, 1000, 938),
            (293_427_298, 4, 1),
            (293_427_298, 1000, 168),
            (293_427_299, 8, 7),
            (293_427_299, 16, 15),
            (293_427_300, 16, 13),
            (293_427_300, 1000, 677),
            (i64::MAX, 4, 2),
            (i64::MAX, 1000, 972),
            (i64::from(i32::MIN), 1000, 185),
            (0, 1000, 0),
        ];
        assert_eq!(i64::from(message::tags::hash_code("group-0")), 293_427_298);
        for (input, buckets, want) in cases {
            assert_eq!(consistent_hash(input, buckets), want, "{input} {buckets}");
        }
        for buckets in 1..20 {
            for input in -50..50 {
                assert!(consistent_hash(input, buckets) < buckets);
            }
        }
        assert_eq!(consistent_hash(12345, 1), 0);
    }
}
