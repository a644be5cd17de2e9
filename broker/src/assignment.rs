//! Broker-side rebalance (RocketMQ 5's `QueryAssignmentProcessor` and
//! `MessageRequestModeManager`): a consumer with `clientRebalance = false` asks the
//! broker which queues it reads (QUERY_ASSIGNMENT, 400) and whether it pulls or pops
//! them; operators set a group's mode per topic with SET_MESSAGE_REQUEST_MODE (401,
//! `mqadmin setConsumeMode`), kept in `config/messageRequestMode.json` and answered by
//! GET_ALL_MESSAGE_REQUEST_MODE (402).
//!
//! The queues are the topic's readable queues on every broker, from the name server's
//! route (cached briefly, as RocketMQ's `TopicRouteInfoManager` refreshes its copy);
//! the consumers are the group's connected clients. A POP group by default shares every
//! queue: each consumer gets queue −1 of each broker ("pop the whole broker").

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use remoting::config_file::ConfigFileError;
use remoting::protocol::constants::perm;
use remoting::protocol::heartbeat::{MessageModel, MessageQueue};
use remoting::protocol::pop::{
    MessageQueueAssignment, MessageRequestMode, MessageRequestModeSerializeWrapper,
    QueryAssignmentRequestBody, QueryAssignmentResponseBody, SetMessageRequestModeRequestBody,
};
use remoting::protocol::route::TopicRouteData;

use crate::persist;

/// How long a topic's queue set from the name server is used before asking again.
const ROUTE_TTL: Duration = Duration::from_secs(10);

/// The request modes of a broker, persisted.
#[derive(Debug)]
pub struct RequestModes {
    table: RwLock<MessageRequestModeSerializeWrapper>,
    path: PathBuf,
    routes: Mutex<HashMap<String, (Instant, Vec<MessageQueue>)>>,
}

impl RequestModes {
    /// Loads `path` (absent: no modes set).
    ///
    /// # Errors
    /// The file exists and neither it nor its `.bak` parses.
    pub fn load(path: PathBuf) -> Result<Self, ConfigFileError> {
        let table = persist::load(&path)?.unwrap_or_default();
        Ok(RequestModes {
            table: RwLock::new(table),
            path,
            routes: Mutex::new(HashMap::new()),
        })
    }

    /// The mode set for the group on the topic.
    #[must_use]
    pub fn get(&self, topic: &str, group: &str) -> Option<SetMessageRequestModeRequestBody> {
        self.table
            .read()
            .message_request_mode_map
            .get(topic)
            .and_then(|g| g.get(group))
            .cloned()
    }

    /// Sets a mode and persists the table at once (as RocketMQ).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn set(&self, body: SetMessageRequestModeRequestBody) -> Result<(), ConfigFileError> {
        let snapshot = {
            let mut t = self.table.write();
            t.message_request_mode_map
                .entry(body.topic.clone())
                .or_default()
                .insert(body.consumer_group.clone(), body);
            t.clone()
        };
        persist::save(&self.path, &snapshot)
    }

    /// The whole table (GET_ALL_MESSAGE_REQUEST_MODE).
    #[must_use]
    pub fn all(&self) -> MessageRequestModeSerializeWrapper {
        self.table.read().clone()
    }

    /// Replaces the table with the master's (a slave's sync).
    pub fn replace_from_master(&self, master: MessageRequestModeSerializeWrapper) {
        *self.table.write() = master;
    }

    /// The cached queue set of a topic, if fresh.
    #[must_use]
    pub fn cached_queues(&self, topic: &str) -> Option<Vec<MessageQueue>> {
        let routes = self.routes.lock();
        routes
            .get(topic)
            .filter(|(at, _)| at.elapsed() < ROUTE_TTL)
            .map(|(_, q)| q.clone())
    }

    /// Caches a topic's queue set.
    pub fn cache_queues(&self, topic: &str, queues: Vec<MessageQueue>) {
        self.routes
            .lock()
            .insert(topic.to_owned(), (Instant::now(), queues));
    }
}

/// The readable queues of a route (`topicRouteData2TopicSubscribeInfo`).
#[must_use]
pub fn subscribe_queues(topic: &str, route: &TopicRouteData) -> Vec<MessageQueue> {
    let mut out = Vec::new();
    for qd in &route.queue_datas {
        if !perm::is_readable(qd.perm) {
            continue;
        }
        for queue_id in 0..qd.read_queue_nums.max(0) {
            out.push(MessageQueue {
                topic: topic.to_owned(),
                broker_name: qd.broker_name.clone(),
                queue_id,
            });
        }
    }
    out.sort();
    out
}

/// The mode a group reads a topic with: the one set, else `default_mode`
/// (`defaultMessageRequestMode`, with `defaultPopShareQueueNum` for POP); retry topics
/// are always pulled.
#[must_use]
pub fn mode_of(
    modes: &RequestModes,
    topic: &str,
    group: &str,
    default_mode: MessageRequestMode,
    default_share: i32,
) -> SetMessageRequestModeRequestBody {
    modes.get(topic, group).unwrap_or_else(|| {
        let retry =
            topic.starts_with(remoting::protocol::constants::system::RETRY_GROUP_TOPIC_PREFIX);
        let mode = if retry {
            MessageRequestMode::Pull
        } else {
            default_mode
        };
        SetMessageRequestModeRequestBody {
            consumer_group: group.to_owned(),
            mode,
            pop_share_queue_num: if mode == MessageRequestMode::Pop {
                default_share
            } else {
                0
            },
            topic: topic.to_owned(),
        }
    })
}

/// The assignment of one consumer: `queues` (the topic's, sorted) among `clients`
/// (the group's), as RocketMQ 5.3.3's `doLoadBalance`. `None` means "keep what you
/// have" (unknown strategy, no route, the client not known).
#[must_use]
pub fn assign(
    request: &QueryAssignmentRequestBody,
    mode: &SetMessageRequestModeRequestBody,
    queues: Option<Vec<MessageQueue>>,
    mut clients: Vec<String>,
    server_load_balancer: bool,
) -> QueryAssignmentResponseBody {
    let with_mode = |qs: Vec<MessageQueue>| QueryAssignmentResponseBody {
        message_queue_assignments: Some(
            dedup(qs)
                .into_iter()
                .map(|message_queue| MessageQueueAssignment {
                    attachments: None,
                    message_queue,
                    mode: mode.mode,
                })
                .collect(),
        ),
    };
    let none = QueryAssignmentResponseBody {
        message_queue_assignments: None,
    };
    let Some(mut all) = queues else {
        return none;
    };
    all.sort();
    if request.message_model == MessageModel::Broadcasting || !server_load_balancer {
        return with_mode(all);
    }
    if clients.is_empty() {
        return none;
    }
    clients.sort();
    let Some(strategy) = Strategy::named(request.strategy_name.as_deref()) else {
        return none;
    };
    if all.is_empty() {
        return with_mode(Vec::new());
    }
    let me = &request.client_id;
    let picked = if mode.mode == MessageRequestMode::Pop {
        let share = mode.pop_share_queue_num;
        let n = i32::try_from(clients.len()).unwrap_or(i32::MAX);
        if share <= 0 || share >= n - 1 {
            all.iter()
                .map(|q| MessageQueue {
                    queue_id: -1,
                    ..q.clone()
                })
                .collect()
        } else if clients.len() <= all.len() {
            let mut picked = strategy.allocate(me, &all, &clients);
            if let Some(mut index) = clients.iter().position(|c| c == me) {
                for _ in 0..share {
                    index = (index + 1) % clients.len();
                    picked.extend(strategy.allocate(&clients[index], &all, &clients));
                }
            }
            picked
        } else {
            clients
                .iter()
                .position(|c| c == me)
                .map(|i| vec![all[i % all.len()].clone()])
                .unwrap_or_default()
        }
    } else {
        strategy.allocate(me, &all, &clients)
    };
    with_mode(picked)
}

fn dedup(qs: Vec<MessageQueue>) -> Vec<MessageQueue> {
    let mut set: BTreeMap<MessageQueue, ()> = BTreeMap::new();
    for q in qs {
        set.insert(q, ());
    }
    set.into_keys().collect()
}

/// The broker's allocation strategies.
#[derive(Debug, Clone, Copy)]
enum Strategy {
    /// `AllocateMessageQueueAveragely`: consecutive runs.
    Avg,
    /// `AllocateMessageQueueAveragelyByCircle`: every n-th queue.
    AvgByCircle,
}

impl Strategy {
    fn named(name: Option<&str>) -> Option<Self> {
        match name {
            Some("AVG") => Some(Strategy::Avg),
            Some("AVG_BY_CIRCLE") => Some(Strategy::AvgByCircle),
            _ => None,
        }
    }

    fn allocate(self, me: &str, all: &[MessageQueue], clients: &[String]) -> Vec<MessageQueue> {
        let Some(index) = clients.iter().position(|c| c == me) else {
            return Vec::new();
        };
        let (n, c) = (all.len(), clients.len());
        match self {
            Strategy::Avg => {
                let rem = n % c;
                let size = if n <= c {
                    1
                } else if rem > 0 && index < rem {
                    n / c + 1
                } else {
                    n / c
                };
                let start = if rem > 0 && index < rem {
                    index * size
                } else {
                    index * size + rem
                };
                let range = size.min(n.saturating_sub(start));
                (0..range).map(|i| all[(start + i) % n].clone()).collect()
            }
            Strategy::AvgByCircle => (index..n).step_by(c).map(|i| all[i].clone()).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(n: i32) -> Vec<MessageQueue> {
        (0..n)
            .map(|queue_id| MessageQueue {
                topic: "T".into(),
                broker_name: "broker-a".into(),
                queue_id,
            })
            .collect()
    }

    fn request(client: &str, strategy: &str) -> QueryAssignmentRequestBody {
        QueryAssignmentRequestBody {
            client_id: client.into(),
            consumer_group: "G".into(),
            message_model: MessageModel::Clustering,
            strategy_name: Some(strategy.into()),
            topic: "T".into(),
        }
    }

    fn ids(r: &QueryAssignmentResponseBody) -> Vec<i32> {
        r.message_queue_assignments
            .as_ref()
            .unwrap()
            .iter()
            .map(|a| a.message_queue.queue_id)
            .collect()
    }

    fn mode(m: MessageRequestMode, share: i32) -> SetMessageRequestModeRequestBody {
        SetMessageRequestModeRequestBody {
            consumer_group: "G".into(),
            mode: m,
            pop_share_queue_num: share,
            topic: "T".into(),
        }
    }

    #[test]
    fn pull_groups_get_rocketmq_s_averages() {
        let clients = vec!["c1".to_owned(), "c2".to_owned(), "c3".to_owned()];
        let pull = mode(MessageRequestMode::Pull, 0);
        let avg = |c: &str| {
            ids(&assign(
                &request(c, "AVG"),
                &pull,
                Some(queues(8)),
                clients.clone(),
                true,
            ))
        };
        assert_eq!(avg("c1"), vec![0, 1, 2]);
        assert_eq!(avg("c2"), vec![3, 4, 5]);
        assert_eq!(avg("c3"), vec![6, 7]);
        let circle = ids(&assign(
            &request("c2", "AVG_BY_CIRCLE"),
            &pull,
            Some(queues(8)),
            clients.clone(),
            true,
        ));
        assert_eq!(circle, vec![1, 4, 7]);
        // Unknown strategy, no route, no clients: keep what you have.
        for r in [
            assign(
                &request("c1", "X"),
                &pull,
                Some(queues(8)),
                clients.clone(),
                true,
            ),
            assign(&request("c1", "AVG"), &pull, None, clients.clone(), true),
            assign(
                &request("c1", "AVG"),
                &pull,
                Some(queues(8)),
                Vec::new(),
                true,
            ),
        ] {
            assert!(r.message_queue_assignments.is_none());
        }
        // A client the group does not know gets nothing.
        assert!(avg("c9").is_empty());
    }

    #[test]
    fn the_default_mode_applies_where_none_was_set_but_never_to_retry_topics() {
        let dir = tempfile::tempdir().unwrap();
        let modes = RequestModes::load(dir.path().join("messageRequestMode.json")).unwrap();
        let m = mode_of(&modes, "T", "G", MessageRequestMode::Pop, -1);
        assert_eq!(
            (m.mode, m.pop_share_queue_num),
            (MessageRequestMode::Pop, -1)
        );
        let r = mode_of(&modes, "%RETRY%G", "G", MessageRequestMode::Pop, -1);
        assert_eq!(r.mode, MessageRequestMode::Pull);
        modes.set(mode(MessageRequestMode::Pull, 0)).unwrap();
        assert_eq!(
            mode_of(&modes, "T", "G", MessageRequestMode::Pop, -1).mode,
            MessageRequestMode::Pull
        );
        let reloaded = RequestModes::load(dir.path().join("messageRequestMode.json")).unwrap();
        assert_eq!(reloaded.all(), modes.all());
    }

    #[test]
    fn pop_groups_share_queues() {
        let clients: Vec<String> = (1..=4).map(|i| format!("c{i}")).collect();
        let all = assign(
            &request("c1", "AVG"),
            &mode(MessageRequestMode::Pop, 0),
            Some(queues(8)),
            clients.clone(),
            true,
        );
        assert_eq!(ids(&all), vec![-1]);
        assert_eq!(
            all.message_queue_assignments.unwrap()[0].mode,
            MessageRequestMode::Pop
        );
        let shared = assign(
            &request("c4", "AVG"),
            &mode(MessageRequestMode::Pop, 1),
            Some(queues(8)),
            clients,
            true,
        );
        // Its own two, and those of the next client in the ring (c1).
        assert_eq!(ids(&shared), vec![0, 1, 6, 7]);
    }
}
