//! The broker's topics (`TopicConfigManager`): system topics, auto-creation through
//! TBW102 on first send, retry/DLQ topics on send-back, admin updates, the data
//! version the name server compares, and topics.json.
//!
//! Every change bumps the data version, persists the table and asks the registration
//! service to tell the name servers at once (`changed` notify).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use remoting::BodyError;
use remoting::config_file::ConfigFileError;
use remoting::fastjson::{self, KeyStyle};
use remoting::protocol::constants::{perm, system};
use remoting::protocol::topic::{DataVersion, TopicConfig, TopicConfigSerializeWrapper};
use tokio::sync::Notify;
use tracing::{error, info};

use crate::config::BrokerConfig;
use crate::persist;

/// Queues of SCHEDULE_TOPIC_XXXX: one per delay level.
pub const SCHEDULE_TOPIC_QUEUE_NUM: i32 = 18;

/// topics.json, assembled from per-topic pieces kept between writes. Encoding the
/// whole table afresh for every group of changes took 94% of the broker's CPU while
/// topics were created by the thousand; now only changed topics are encoded. The
/// bytes are exactly those of `persist::encode` (fastjson's sorted keys).
#[derive(Debug, Default)]
struct TopicsJson {
    /// Topic → its config as last encoded, and `"name":{...}`.
    pieces: HashMap<String, (TopicConfig, Vec<u8>)>,
}

impl TopicsJson {
    fn encode(&mut self, table: &TopicConfigSerializeWrapper) -> Result<Vec<u8>, BodyError> {
        let topics = &table.topic_config_table;
        self.pieces.retain(|name, _| topics.contains_key(name));
        let mut out =
            Vec::with_capacity(64 + self.pieces.values().map(|p| p.1.len() + 1).sum::<usize>());
        out.extend_from_slice(b"{\"dataVersion\":");
        out.extend(fastjson::to_vec(&table.data_version, KeyStyle::Fastjson)?);
        out.extend_from_slice(b",\"topicConfigTable\":{");
        for (i, (name, config)) in topics.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let fresh = self
                .pieces
                .get(name)
                .is_none_or(|(known, _)| known != config);
            if fresh {
                let mut piece = fastjson::to_vec(name, KeyStyle::Fastjson)?;
                piece.push(b':');
                piece.extend(fastjson::to_vec(config, KeyStyle::Fastjson)?);
                self.pieces.insert(name.clone(), (config.clone(), piece));
            }
            if let Some((_, piece)) = self.pieces.get(name) {
                out.extend_from_slice(piece);
            }
        }
        out.extend_from_slice(b"}}");
        Ok(out)
    }
}

/// The topic table of one broker.
#[derive(Debug)]
pub struct TopicConfigManager {
    table: Arc<RwLock<TopicConfigSerializeWrapper>>,
    /// The only writer of topics.json (group commit: one write per burst of changes).
    writer: persist::GroupWriter,
    path: PathBuf,
    auto_create_topic_enable: bool,
    /// Notified after every change, so the broker re-registers at once.
    changed: Arc<Notify>,
    /// What the name servers have not been told yet.
    unregistered: Mutex<Unregistered>,
}

/// Changes since the last registration. A creation or update names its topic, so the
/// next registration can carry just those topics (RocketMQ's
/// `registerIncrementBrokerData`) instead of the whole table, which at thousands of
/// topics made every creation cost O(topics).
#[derive(Debug)]
struct Unregistered {
    /// Something only a full table says (a deletion, a permission change, a new
    /// table): the next registration sends every topic.
    all: bool,
    topics: BTreeSet<String>,
}

fn now_ms() -> i64 {
    crate::clock::now_ms()
}

impl TopicConfigManager {
    /// System topics for `config`, then whatever topics.json (or its `.bak`) holds.
    ///
    /// # Errors
    /// topics.json exists but neither it nor its `.bak` parses.
    pub fn load(config: &BrokerConfig, path: PathBuf) -> Result<Self, ConfigFileError> {
        let mut wrapper = TopicConfigSerializeWrapper {
            topic_config_table: BTreeMap::new(),
            data_version: DataVersion::new(now_ms()),
        };
        for topic in system_topics(config) {
            wrapper
                .topic_config_table
                .insert(topic.topic_name.clone(), topic);
        }
        if let Some(stored) = persist::load::<TopicConfigSerializeWrapper>(&path)? {
            info!(file = %path.display(), topics = stored.topic_config_table.len(), "loaded topics");
            wrapper.topic_config_table.extend(stored.topic_config_table);
            wrapper.data_version = stored.data_version;
        }
        let table = Arc::new(RwLock::new(wrapper));
        let writer = {
            let table = Arc::downgrade(&table);
            let file = path.clone();
            let json = Mutex::new(TopicsJson::default());
            persist::GroupWriter::start("topics-json", move || {
                let Some(table) = table.upgrade() else {
                    return Ok(());
                };
                let bytes =
                    json.lock()
                        .encode(&table.read())
                        .map_err(|e| ConfigFileError::Corrupt {
                            path: file.clone(),
                            reason: e.to_string(),
                        })?;
                remoting::config_file::write_atomic(&file, &bytes)
            })
            .map_err(|e| ConfigFileError::Io {
                op: "start the topics.json writer",
                path: path.clone(),
                source: e,
            })?
        };
        Ok(TopicConfigManager {
            table,
            writer,
            path,
            auto_create_topic_enable: config.auto_create_topic_enable,
            changed: Arc::new(Notify::new()),
            unregistered: Mutex::new(Unregistered {
                all: true,
                topics: BTreeSet::new(),
            }),
        })
    }

    /// Records a change for the next registration (`None`: one only the whole table
    /// tells) and asks for that registration.
    fn note_change(&self, topic: Option<&str>) {
        {
            let mut u = self.unregistered.lock();
            match topic {
                Some(t) if !u.all => {
                    u.topics.insert(t.to_owned());
                }
                Some(_) => {}
                None => {
                    u.all = true;
                    u.topics.clear();
                }
            }
        }
        self.changed.notify_one();
    }

    /// The table for the next registration, with the current data version: every
    /// topic when `full` or when a change needs it, otherwise only the topics changed
    /// since the last call. Either way the changes count as registered from now on.
    #[must_use]
    pub fn registration_table(&self, full: bool) -> TopicConfigSerializeWrapper {
        let Unregistered { all, topics } = std::mem::replace(
            &mut *self.unregistered.lock(),
            Unregistered {
                all: false,
                topics: BTreeSet::new(),
            },
        );
        let table = self.table.read();
        if full || all {
            return table.clone();
        }
        TopicConfigSerializeWrapper {
            topic_config_table: topics
                .into_iter()
                .filter_map(|t| table.topic_config_table.get(&t).map(|c| (t, c.clone())))
                .collect(),
            data_version: table.data_version.clone(),
        }
    }

    /// Notified after every change of the table.
    #[must_use]
    pub fn changed(&self) -> Arc<Notify> {
        Arc::clone(&self.changed)
    }

    /// The config of `topic`.
    #[must_use]
    pub fn select(&self, topic: &str) -> Option<TopicConfig> {
        self.table.read().topic_config_table.get(topic).cloned()
    }

    /// Whether `topic` is known.
    #[must_use]
    pub fn contains(&self, topic: &str) -> bool {
        self.table.read().topic_config_table.contains_key(topic)
    }

    /// A copy of the whole table and its version (registration, slave sync, admin).
    #[must_use]
    pub fn wrapper(&self) -> TopicConfigSerializeWrapper {
        self.table.read().clone()
    }

    /// The current data version.
    #[must_use]
    pub fn data_version(&self) -> DataVersion {
        self.table.read().data_version.clone()
    }

    /// Topic names.
    #[must_use]
    pub fn topic_names(&self) -> Vec<String> {
        self.table
            .read()
            .topic_config_table
            .keys()
            .cloned()
            .collect()
    }

    /// Creates `topic` on its first send from the template `default_topic` (normally
    /// TBW102) when the template may be inherited: `min(client queues, template write
    /// queues)` queues, the template's permission without INHERIT. Returns the config
    /// and whether it was created now.
    pub fn create_in_send(
        &self,
        topic: &str,
        default_topic: &str,
        remote: &str,
        client_default_queue_nums: i32,
        topic_sys_flag: i32,
    ) -> (Option<TopicConfig>, bool) {
        let created = {
            let mut table = self.table.write();
            if let Some(existing) = table.topic_config_table.get(topic) {
                return (Some(existing.clone()), false);
            }
            let Some(template) = table.topic_config_table.get(default_topic).cloned() else {
                log_limit::limited!(warn!(
                    topic,
                    default_topic, remote, "create topic: the default topic does not exist"
                ));
                return (None, false);
            };
            let mut template_perm = template.perm;
            if default_topic == system::AUTO_CREATE_TOPIC_KEY && !self.auto_create_topic_enable {
                template_perm = perm::READ | perm::WRITE;
            }
            if !perm::is_inherited(template_perm) {
                log_limit::limited!(warn!(
                    topic,
                    default_topic,
                    perm = template_perm,
                    remote,
                    "create topic: the default topic cannot be inherited"
                ));
                return (None, false);
            }
            let queues = client_default_queue_nums
                .min(template.write_queue_nums)
                .max(0);
            let config = TopicConfig {
                topic_name: topic.to_owned(),
                read_queue_nums: queues,
                write_queue_nums: queues,
                perm: template_perm & !perm::INHERIT,
                topic_filter_type: template.topic_filter_type,
                topic_sys_flag,
                ..TopicConfig::default()
            };
            info!(
                topic,
                default_topic, queues, remote, "auto-created topic on send"
            );
            table
                .topic_config_table
                .insert(topic.to_owned(), config.clone());
            table.data_version.next_version(now_ms());
            config
        };
        self.persist_and_wait();
        self.note_change(Some(topic));
        (Some(created), true)
    }

    /// Creates a retry or DLQ topic (send-back, heartbeat) if missing.
    pub fn create_in_send_back(
        &self,
        topic: &str,
        queue_nums: i32,
        perm: i32,
        topic_sys_flag: i32,
    ) -> TopicConfig {
        if let Some(existing) = self.select(topic) {
            return existing;
        }
        let config = {
            let mut table = self.table.write();
            if let Some(existing) = table.topic_config_table.get(topic) {
                return existing.clone();
            }
            let config = TopicConfig {
                topic_name: topic.to_owned(),
                read_queue_nums: queue_nums,
                write_queue_nums: queue_nums,
                perm,
                topic_sys_flag,
                ..TopicConfig::default()
            };
            info!(topic, queue_nums, "created topic");
            table
                .topic_config_table
                .insert(topic.to_owned(), config.clone());
            table.data_version.next_version(now_ms());
            config
        };
        self.persist_and_wait();
        self.note_change(Some(topic));
        config
    }

    /// Creates or replaces a topic (UPDATE_AND_CREATE_TOPIC) in memory and asks for
    /// topics.json to be written: the returned generation is durable once
    /// [`TopicConfigManager::persisted`] says so.
    #[must_use]
    pub fn update(&self, config: TopicConfig) -> u64 {
        {
            let mut table = self.table.write();
            let old = table
                .topic_config_table
                .insert(config.topic_name.clone(), config.clone());
            info!(topic = %config.topic_name, new = old.is_none(), ?config, "topic config updated");
            table.data_version.next_version(now_ms());
        }
        let generation = self.writer.request();
        self.note_change(Some(&config.topic_name));
        generation
    }

    /// Waits until topics.json holds the change of `generation` ([`TopicConfigManager::update`]).
    ///
    /// # Errors
    /// The write failed (the change is kept in memory).
    pub async fn persisted(&self, generation: u64) -> Result<(), persist::WriteError> {
        self.writer.written(generation).await
    }

    /// Deletes a topic (DELETE_TOPIC_IN_BROKER). Returns whether it existed.
    ///
    /// # Errors
    /// The table could not be persisted (the change is kept in memory).
    pub fn delete(&self, topic: &str) -> Result<bool, ConfigFileError> {
        {
            let mut table = self.table.write();
            if table.topic_config_table.remove(topic).is_none() {
                return Ok(false);
            }
            info!(topic, "topic deleted");
            table.data_version.next_version(now_ms());
        }
        let result = self.persist();
        self.note_change(None);
        result.map(|()| true)
    }

    /// Bumps the data version and asks for a registration at once (broker permission
    /// changed: the name servers must see the topics again).
    pub fn touch(&self) {
        self.table.write().data_version.next_version(now_ms());
        self.note_change(None);
    }

    /// Marks exactly the topics named in the name server's ORDER_TOPIC_CONFIG as ordered.
    pub fn update_order_topics(&self, ordered: &[String]) {
        let mut table = self.table.write();
        let mut changed = false;
        for (name, config) in &mut table.topic_config_table {
            let order = ordered.iter().any(|t| t == name);
            if config.order != order {
                config.order = order;
                changed = true;
            }
        }
        if changed {
            table.data_version.next_version(now_ms());
            drop(table);
            self.unregistered.lock().all = true;
            self.persist_and_wait();
        }
    }

    /// Replaces the whole table with the master's (slaves, every sync).
    pub fn replace_from_master(&self, master: TopicConfigSerializeWrapper) {
        let mut table = self.table.write();
        if table.data_version == master.data_version {
            return;
        }
        *table = master;
        drop(table);
        self.unregistered.lock().all = true;
        self.persist_and_wait();
    }

    /// Writes topics.json (through its writer) and waits for it.
    ///
    /// # Errors
    /// The file could not be written.
    pub fn persist(&self) -> Result<(), ConfigFileError> {
        let generation = self.writer.request();
        self.writer
            .wait(generation)
            .map_err(|reason| ConfigFileError::WriteFailed {
                path: self.path.clone(),
                reason: reason.to_string(),
            })
    }

    /// [`TopicConfigManager::persist`], logging a failure (the change stays in memory).
    fn persist_and_wait(&self) {
        if let Err(e) = self.persist() {
            error!(error = %e, "cannot persist topics.json");
        }
    }
}

/// The topics every broker has (`TopicConfigManager`'s constructor in 4.9.8).
fn system_topics(config: &BrokerConfig) -> Vec<TopicConfig> {
    let mut topics = vec![TopicConfig::new(system::SELF_TEST_TOPIC, 1)];
    if config.auto_create_topic_enable {
        let mut tbw = TopicConfig::new(
            system::AUTO_CREATE_TOPIC_KEY,
            config.default_topic_queue_nums,
        );
        tbw.perm = perm::INHERIT | perm::READ | perm::WRITE;
        topics.push(tbw);
    }
    topics.push(TopicConfig::new(system::BENCHMARK_TOPIC, 1024));
    let rw_if = |enabled: bool| perm::INHERIT | if enabled { perm::READ | perm::WRITE } else { 0 };
    let mut cluster = TopicConfig {
        topic_name: config.broker_cluster_name.clone(),
        ..TopicConfig::default()
    };
    cluster.perm = rw_if(config.cluster_topic_enable);
    topics.push(cluster);
    let mut broker = TopicConfig::new(config.broker_name.clone(), 1);
    broker.perm = rw_if(config.broker_topic_enable);
    topics.push(broker);
    topics.push(TopicConfig::new(system::OFFSET_MOVED_EVENT, 1));
    topics.push(TopicConfig::new(
        system::SCHEDULE_TOPIC,
        SCHEDULE_TOPIC_QUEUE_NUM,
    ));
    if config.trace_topic_enable {
        topics.push(TopicConfig::new(config.msg_trace_topic_name.clone(), 1));
    }
    topics.push(TopicConfig::new(
        format!(
            "{}_{}",
            config.broker_cluster_name,
            system::REPLY_TOPIC_POSTFIX
        ),
        1,
    ));
    // POP's checkpoints and acks (RocketMQ 5 creates it at start the same way).
    topics.push(TopicConfig::new(
        remoting::protocol::pop::revive_topic(&config.broker_cluster_name),
        config.revive_queue_num,
    ));
    topics
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manager(dir: &tempfile::TempDir, config: &BrokerConfig) -> TopicConfigManager {
        TopicConfigManager::load(config, dir.path().join("config/topics.json")).unwrap()
    }

    fn config() -> BrokerConfig {
        BrokerConfig {
            broker_name: "broker-a".into(),
            ..BrokerConfig::default()
        }
    }

    fn named(topic: &str) -> TopicConfig {
        TopicConfig {
            topic_name: topic.into(),
            ..TopicConfig::default()
        }
    }

    /// Pieces kept between writes give the bytes a whole encode gives, through
    /// creations, updates and deletions.
    #[test]
    fn topics_json_from_kept_pieces_is_the_whole_encode() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(&dir, &config());
        let path = dir.path().join("t.json");
        let mut json = TopicsJson::default();
        let same = |json: &mut TopicsJson, m: &TopicConfigManager| {
            let table = m.wrapper();
            assert_eq!(
                String::from_utf8(json.encode(&table).unwrap()).unwrap(),
                String::from_utf8(persist::encode(&path, &table).unwrap()).unwrap()
            );
        };
        same(&mut json, &m);
        for t in ["A", "%RETRY%g", "b-1", "Z_9"] {
            let _ = m.update(named(t));
        }
        same(&mut json, &m);
        let _ = m.update(TopicConfig {
            read_queue_nums: 3,
            order: true,
            ..named("A")
        });
        m.delete("b-1").unwrap();
        same(&mut json, &m);
        assert!(!json.pieces.contains_key("b-1"));
        // What is on disk reads back as the table.
        let stored: TopicConfigSerializeWrapper =
            fastjson::from_slice(&json.encode(&m.wrapper()).unwrap()).unwrap();
        assert_eq!(stored, m.wrapper());
    }

    #[test]
    fn registrations_carry_the_changed_topics_between_full_ones() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(&dir, &config());
        let everything = m.topic_names().len();
        // The first registration after loading is the whole table.
        assert_eq!(
            m.registration_table(false).topic_config_table.len(),
            everything
        );
        let names = |w: TopicConfigSerializeWrapper| -> Vec<String> {
            w.topic_config_table.into_keys().collect()
        };
        assert!(names(m.registration_table(false)).is_empty());

        let _ = m.update(named("A"));
        let _ = m.create_in_send("B", "TBW102", "x", 4, 0);
        let _ = m.create_in_send_back("%RETRY%g", 1, 6, 0);
        let increment = m.registration_table(false);
        assert_eq!(increment.data_version, m.data_version());
        assert_eq!(names(increment), ["%RETRY%g", "A", "B"]);
        assert!(names(m.registration_table(false)).is_empty());
        // A periodic registration is whole and counts the changes as told.
        let _ = m.update(named("C"));
        assert_eq!(
            m.registration_table(true).topic_config_table.len(),
            everything + 4
        );
        assert!(names(m.registration_table(false)).is_empty());
        // A deletion or a permission change is only told by the whole table.
        m.delete("C").unwrap();
        let _ = m.update(named("D"));
        assert_eq!(
            m.registration_table(false).topic_config_table.len(),
            everything + 4
        );
        m.touch();
        assert_eq!(
            m.registration_table(false).topic_config_table.len(),
            everything + 4
        );
    }

    #[test]
    fn system_topics_exist() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(&dir, &config());
        let tbw = m.select("TBW102").unwrap();
        assert_eq!((tbw.perm, tbw.write_queue_nums), (7, 8));
        assert_eq!(m.select("SCHEDULE_TOPIC_XXXX").unwrap().read_queue_nums, 18);
        assert_eq!(m.select("broker-a").unwrap().perm, 7);
        assert_eq!(m.select("DefaultCluster").unwrap().read_queue_nums, 16);
        assert!(m.select("DefaultCluster_REPLY_TOPIC").is_some());
        assert!(m.select("BenchmarkTest").is_some());
    }

    #[test]
    fn auto_create_inherits_from_tbw102_and_persists() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(&dir, &config());
        let v0 = m.data_version();
        let (created, new) = m.create_in_send("T1", "TBW102", "1.2.3.4:5", 4, 0);
        let created = created.unwrap();
        assert!(new);
        assert_eq!(
            (
                created.read_queue_nums,
                created.write_queue_nums,
                created.perm
            ),
            (4, 4, 6)
        );
        assert_ne!(m.data_version(), v0);
        let (again, new) = m.create_in_send("T1", "TBW102", "x", 16, 0);
        assert!(!new);
        assert_eq!(again.unwrap().write_queue_nums, 4);
        // More queues than the template has are capped.
        assert_eq!(
            m.create_in_send("T2", "TBW102", "x", 64, 0)
                .0
                .unwrap()
                .write_queue_nums,
            8
        );
        // A template that cannot be inherited creates nothing.
        assert_eq!(m.create_in_send("T3", "T1", "x", 4, 0), (None, false));
        assert_eq!(m.create_in_send("T4", "NoSuch", "x", 4, 0), (None, false));

        let reloaded = manager(&dir, &config());
        assert_eq!(reloaded.select("T1"), m.select("T1"));
        assert_eq!(reloaded.data_version(), m.data_version());
    }

    #[test]
    fn auto_create_off_means_no_inheritance() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = BrokerConfig {
            auto_create_topic_enable: false,
            ..config()
        };
        let m = manager(&dir, &cfg);
        assert!(m.select("TBW102").is_none());
        assert_eq!(m.create_in_send("T1", "TBW102", "x", 4, 0), (None, false));
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn update_delete_and_order() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(&dir, &config());
        let _ = m.update(TopicConfig::new("A", 2));
        let b = m.update(TopicConfig::new("B", 2));
        block_on(m.persisted(b)).unwrap();
        m.update_order_topics(&["B".to_owned()]);
        assert!(m.select("B").unwrap().order);
        assert!(!m.select("A").unwrap().order);
        assert!(m.delete("A").unwrap());
        assert!(!m.delete("A").unwrap());
        let reloaded = manager(&dir, &config());
        assert!(reloaded.select("A").is_none());
        assert!(reloaded.select("B").unwrap().order);
        let retry = m.create_in_send_back("%RETRY%g", 1, 6, 0);
        assert_eq!(retry.write_queue_nums, 1);
    }

    /// Every update acknowledged as persisted is in topics.json, however many writers
    /// share one write.
    #[test]
    fn concurrent_updates_are_all_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let m = Arc::new(manager(&dir, &config()));
        let writers: Vec<_> = (0..8)
            .map(|t| {
                let m = Arc::clone(&m);
                std::thread::spawn(move || {
                    for i in 0..40 {
                        let g = m.update(TopicConfig::new(format!("T{t}_{i}"), 1));
                        block_on(m.persisted(g)).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let reloaded = manager(&dir, &config());
        for t in 0..8 {
            for i in 0..40 {
                assert!(reloaded.select(&format!("T{t}_{i}")).is_some(), "T{t}_{i}");
            }
        }
    }
}
