//! The SQL92 filters of consumer groups (RocketMQ's `ConsumerFilterManager`): per topic
//! and group, the expression a heartbeat registered, compiled once per subscription
//! version. A push consumer's pulls carry no subscription and are filtered with this
//! one; RocketMQ answers FILTER_DATA_NOT_EXIST when there is none (the expression did
//! not compile) and FILTER_DATA_NOT_LATEST when the pull's version is newer.
//!
//! Versions follow RocketMQ's rules: a registration with an older or equal version is
//! ignored; a newer one with the same expression only takes the version; a newer one
//! with another expression is compiled, and if it does not compile the group's filter
//! for the topic is dropped (so the client's pulls report the error). Entries of groups
//! that went away are kept, marked dead, for `filterDataCleanTimeSpan`.
//!
//! Pulls that carry their subscription (lite pull consumers) compile it on every pull
//! in RocketMQ, through a parse cache of 100 expressions; [`ConsumerFilters::compile`]
//! is that cache.
//!
//! Each registered filter has a [`MatchIndex`] that dispatch fills
//! ([`ConsumerFilters::on_dispatch`]), so its pulls skip what does not match.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use filter::{ParseError, Selector};
use message::properties;
use parking_lot::{Mutex, RwLock};
use remoting::protocol::heartbeat::{EXPRESSION_TYPE_SQL92, SubscriptionData};
use tracing::{info, warn};

use super::index::MatchIndex;
use super::is_tag_type;

/// Expressions the pull-side compile cache keeps (RocketMQ's `SelectorParser` cache).
const COMPILE_CACHE_CAPACITY: usize = 100;

/// Why a subscription's expression cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// The SQL92 expression does not parse; the message is RocketMQ's.
    #[error("{0}")]
    Parse(#[from] ParseError),
    /// No filter of this expression type (RocketMQ has only SQL92): what Java 17 says
    /// when `FilterFactory.get(type)` is null.
    #[error(
        "Cannot invoke \"org.apache.rocketmq.filter.FilterSpi.compile(String)\" because the return value of \"org.apache.rocketmq.filter.FilterFactory.get(String)\" is null"
    )]
    UnknownType(String),
}

/// A group's registered filter of a topic.
#[derive(Debug, Clone)]
pub struct FilterData {
    /// The expression.
    pub expression: String,
    /// Its type (`SQL92`).
    pub expression_type: String,
    /// The subscription version it was registered with (RocketMQ `clientVersion`).
    pub client_version: i64,
    /// Compiled.
    pub selector: Arc<Selector>,
    /// When it was first registered, ms.
    pub born: i64,
    /// Since when its group has not registered it, ms.
    pub dead_since: Option<i64>,
    /// Which messages dispatched since it was compiled match.
    pub index: Arc<MatchIndex>,
}

/// topic → group → filter.
type Table = HashMap<String, HashMap<String, FilterData>>;

/// The SQL92 filters of a broker's consumer groups.
#[derive(Debug, Default)]
pub struct ConsumerFilters {
    table: RwLock<Table>,
    /// Whether the table holds any filter (dispatch looks at nothing else then).
    any: AtomicBool,
    cache: Mutex<HashMap<String, Result<Arc<Selector>, ParseError>>>,
}

impl ConsumerFilters {
    /// Compiles an expression of `expression_type` (`SqlFilter.compile`), through the
    /// cache.
    ///
    /// # Errors
    /// The expression does not compile, or the type has no filter.
    pub fn compile(
        &self,
        expression_type: &str,
        expression: &str,
    ) -> Result<Arc<Selector>, CompileError> {
        if expression_type != EXPRESSION_TYPE_SQL92 {
            return Err(CompileError::UnknownType(expression_type.to_owned()));
        }
        let mut cache = self.cache.lock();
        if let Some(done) = cache.get(expression) {
            return done.clone().map_err(CompileError::from);
        }
        let done = Selector::parse(expression).map(Arc::new);
        if cache.len() >= COMPILE_CACHE_CAPACITY {
            cache.clear();
        }
        cache.insert(expression.to_owned(), done.clone());
        done.map_err(CompileError::from)
    }

    /// The filter `group` registered for `topic`.
    #[must_use]
    pub fn get(&self, topic: &str, group: &str) -> Option<FilterData> {
        self.table.read().get(topic)?.get(group).cloned()
    }

    /// A heartbeat of `group` with `subs` (RocketMQ's REGISTER event): registers each
    /// non-TAG subscription and marks the group's filters of other topics dead.
    pub fn register(&self, group: &str, subs: &[SubscriptionData], now: i64) {
        for sub in subs {
            self.register_one(group, sub, now);
        }
        let mut table = self.table.write();
        for (topic, groups) in table.iter_mut() {
            if let Some(data) = groups.get_mut(group) {
                if data.dead_since.is_none() && !subs.iter().any(|s| &s.topic == topic) {
                    info!(group, topic = %topic, "consumer filter no longer subscribed");
                    data.dead_since = Some(now);
                }
            }
        }
    }

    fn register_one(&self, group: &str, sub: &SubscriptionData, now: i64) {
        let ty = sub.expression_type.as_str();
        if is_tag_type(Some(ty)) || sub.sub_string.is_empty() {
            return;
        }
        let version = sub.sub_version;
        let mut table = self.table.write();
        let groups = table.entry(sub.topic.clone()).or_default();
        if let Some(old) = groups.get_mut(group) {
            if version <= old.client_version {
                if version == old.client_version {
                    old.dead_since = None;
                }
                return;
            }
            if old.expression == sub.sub_string && old.expression_type == ty {
                old.client_version = version;
                old.dead_since = None;
                return;
            }
        }
        match self.compile(ty, &sub.sub_string) {
            Ok(selector) => {
                let born = groups.get(group).map_or(now, |o| o.born);
                info!(group, topic = %sub.topic, expression = %sub.sub_string, version, "consumer filter registered");
                groups.insert(
                    group.to_owned(),
                    FilterData {
                        expression: sub.sub_string.clone(),
                        expression_type: ty.to_owned(),
                        client_version: version,
                        selector,
                        born,
                        dead_since: None,
                        index: Arc::new(MatchIndex::default()),
                    },
                );
                self.any.store(true, Ordering::Release);
            }
            Err(e) => {
                // Dropped, so the group's pulls answer FILTER_DATA_NOT_EXIST.
                warn!(group, topic = %sub.topic, expression = %sub.sub_string, error = %e, "consumer filter does not compile");
                groups.remove(group);
            }
        }
    }

    /// Marks the filters of groups `alive` says are gone as dead, and forgets those dead
    /// for at least `clean_after_ms` (`filterDataCleanTimeSpan`).
    pub fn sweep(&self, alive: impl Fn(&str) -> bool, now: i64, clean_after_ms: i64) {
        let mut table = self.table.write();
        for groups in table.values_mut() {
            groups.retain(|group, data| {
                match data.dead_since {
                    None if !alive(group) => data.dead_since = Some(now),
                    Some(since) if now.saturating_sub(since) >= clean_after_ms => return false,
                    _ => {}
                }
                true
            });
        }
        table.retain(|_, groups| !groups.is_empty());
        self.any.store(!table.is_empty(), Ordering::Release);
    }

    /// A message was dispatched: records in the index of every filter of its topic
    /// whether it matches. `properties` is its properties string. Filters of groups that
    /// went away are indexed too until they are cleaned (as RocketMQ computes its bloom
    /// bits for them), so a consumer that comes back finds its backlog indexed.
    pub fn on_dispatch(&self, topic: &str, queue_id: i32, queue_offset: u64, props: &str) {
        if !self.any.load(Ordering::Acquire) {
            return;
        }
        let table = self.table.read();
        let Some(groups) = table.get(topic) else {
            return;
        };
        for data in groups.values() {
            let matched = data.selector.matches_properties(properties::iter(props));
            data.index.record(queue_id, queue_offset, matched);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn sql(topic: &str, expression: &str, version: i64) -> SubscriptionData {
        SubscriptionData {
            class_filter_mode: false,
            topic: topic.to_owned(),
            sub_string: expression.to_owned(),
            tags_set: BTreeSet::new(),
            code_set: BTreeSet::new(),
            sub_version: version,
            expression_type: EXPRESSION_TYPE_SQL92.to_owned(),
            filter_class_source: None,
        }
    }

    #[test]
    fn versions_decide_and_bad_expressions_drop_the_filter() {
        let f = ConsumerFilters::default();
        f.register(
            "g",
            &[
                sql("T", "a = 1", 10),
                SubscriptionData::build_tag("U", "*", 1),
            ],
            1,
        );
        let d = f.get("T", "g").unwrap();
        assert_eq!((d.client_version, d.expression.as_str()), (10, "a = 1"));
        assert!(f.get("U", "g").is_none());
        // An older or equal version changes nothing, even with another expression.
        f.register("g", &[sql("T", "a = 2", 9)], 2);
        f.register("g", &[sql("T", "a = 2", 10)], 2);
        assert_eq!(f.get("T", "g").unwrap().expression, "a = 1");
        // A newer version with the same expression keeps the compiled one.
        let before = f.get("T", "g").unwrap().selector;
        f.register("g", &[sql("T", "a = 1", 11)], 3);
        let d = f.get("T", "g").unwrap();
        assert_eq!(d.client_version, 11);
        assert!(Arc::ptr_eq(&before, &d.selector));
        // A newer expression is compiled; one that does not compile drops the filter.
        f.register("g", &[sql("T", "a = 3", 12)], 4);
        assert!(f.get("T", "g").unwrap().selector.matches(|_| Some("3")));
        f.register("g", &[sql("T", "a >", 13)], 5);
        assert!(f.get("T", "g").is_none());
        f.register("g", &[sql("T", "a = 4", 14)], 6);
        assert!(f.get("T", "g").is_some());
    }

    #[test]
    fn gone_groups_are_forgotten_after_the_clean_span() {
        let f = ConsumerFilters::default();
        f.register("g", &[sql("T", "a = 1", 1), sql("V", "b = 1", 1)], 0);
        // A heartbeat without V marks it dead; it still filters until cleaned.
        f.register("g", &[sql("T", "a = 1", 1)], 10);
        assert_eq!(f.get("V", "g").unwrap().dead_since, Some(10));
        f.sweep(|_| true, 20, 100);
        assert!(f.get("V", "g").is_some());
        f.sweep(|_| true, 110, 100);
        assert!(f.get("V", "g").is_none());
        // The group disconnects: dead at the next sweep, gone one span later.
        f.sweep(|_| false, 200, 100);
        assert_eq!(f.get("T", "g").unwrap().dead_since, Some(200));
        // Coming back with the same version revives it.
        f.register("g", &[sql("T", "a = 1", 1)], 250);
        assert_eq!(f.get("T", "g").unwrap().dead_since, None);
        f.sweep(|_| false, 300, 100);
        f.sweep(|_| false, 400, 100);
        assert!(f.get("T", "g").is_none());
    }

    #[test]
    fn compile_caches_and_knows_only_sql92() {
        let f = ConsumerFilters::default();
        let a = f.compile("SQL92", "a = 1").unwrap();
        assert!(Arc::ptr_eq(&a, &f.compile("SQL92", "a = 1").unwrap()));
        let e = f.compile("SQL92", "a > 'x'").unwrap_err();
        assert_eq!(
            e.to_string(),
            "java.lang.RuntimeException: Value ''x'' cannot be compared."
        );
        assert!(matches!(
            f.compile("sql92", "a = 1"),
            Err(CompileError::UnknownType(_))
        ));
        for i in 0..(COMPILE_CACHE_CAPACITY * 2) {
            f.compile("SQL92", &format!("a = {i}")).unwrap();
        }
        assert!(f.cache.lock().len() <= COMPILE_CACHE_CAPACITY);
    }
}
