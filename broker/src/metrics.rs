//! The broker's Prometheus endpoint (`metricsExporterType=PROM`) and what it writes on every
//! scrape: the event meters of [`crate::meters`], then the states RocketMQ 5 reads from its
//! tables when asked (its observable gauges: lag, connections, storage), plus what only
//! sluice can tell (`sluice_*`: group commit, fsync, replication, long polling, the page
//! cache's share of pulls).
//!
//! `rocketmq_processor_watermark` is not exported: sluice has no request thread pools whose
//! queues it would measure.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use ::metrics::exporter::{BoundEndpoint, Collect, Endpoint, Registry};
use ::metrics::scrape::{Def, Labels, Scrape, Series, flag};
use ::metrics::{MetricsConfig, MetricsError};
use remoting::protocol::heartbeat::ConsumeType;

use crate::broker::Broker;
use crate::meters::{is_retry_or_dlq, is_system_group};
use crate::role::Role;
use remoting::protocol::constants::system::is_system_topic;

const PERMISSION: Def = Def::gauge("rocketmq_broker_permission", "Broker permission");
const TOPIC_NUMBER: Def = Def::gauge("rocketmq_topic_number", "Active topic number");
const GROUP_NUMBER: Def = Def::gauge(
    "rocketmq_consumer_group_number",
    "Active subscription group number",
);
const PRODUCER_CONNECTIONS: Def =
    Def::gauge("rocketmq_producer_connections", "Producer connections");
const CONSUMER_CONNECTIONS: Def =
    Def::gauge("rocketmq_consumer_connections", "Consumer connections");
const LAG_MESSAGES: Def = Def::gauge("rocketmq_consumer_lag_messages", "Consumer lag messages");
const LAG_LATENCY: Def =
    Def::gauge("rocketmq_consumer_lag_latency", "Consumer lag time").unit("milliseconds");
const INFLIGHT: Def = Def::gauge(
    "rocketmq_consumer_inflight_messages",
    "Consumer inflight messages",
);
const QUEUEING_LATENCY: Def = Def::gauge(
    "rocketmq_consumer_queueing_latency",
    "Consumer queueing time",
)
.unit("milliseconds");
const READY: Def = Def::gauge(
    "rocketmq_consumer_ready_messages",
    "Consumer ready messages",
);
const STORAGE_SIZE: Def = Def::gauge("rocketmq_storage_size", "Broker storage size").unit("bytes");
const FLUSH_BEHIND: Def = Def::gauge(
    "rocketmq_storage_flush_behind_bytes",
    "Broker flush behind bytes",
)
.unit("bytes");
const DISPATCH_BEHIND: Def = Def::gauge(
    "rocketmq_storage_dispatch_behind_bytes",
    "Broker dispatch behind bytes",
)
.unit("bytes");
const RESERVE_TIME: Def = Def::gauge(
    "rocketmq_storage_message_reserve_time",
    "Broker message reserve time",
)
.unit("milliseconds");
const FSYNC_LATENCY: Def = Def::histogram(
    "sluice_store_fsync_latency",
    "Time of each CommitLog sync that wrote something",
)
.unit("microseconds");
const GROUP_COMMIT_SIZE: Def = Def::histogram(
    "sluice_store_group_commit_size",
    "Puts made durable by one group commit (SYNC_FLUSH)",
);
const HA_SLAVE_LAG_BYTES: Def = Def::gauge(
    "sluice_ha_slave_lag_bytes",
    "CommitLog bytes a connected slave has not acknowledged",
)
.unit("bytes");
const HA_SLAVE_LAG_TIME: Def = Def::gauge(
    "sluice_ha_slave_lag_time",
    "Age of the oldest message a connected slave has not acknowledged",
)
.unit("milliseconds");
const HA_SLAVES: Def = Def::gauge("sluice_ha_slaves", "Slaves connected to this master");
const HA_MASTER_LINK: Def = Def::gauge(
    "sluice_ha_master_link_up",
    "On a slave: 1 while connected to its master",
);
const TIMER_ENQUEUE_LAG: Def =
    Def::gauge("rocketmq_timer_enqueue_lag", "Timer enqueue messages lag");
const TIMER_ENQUEUE_LATENCY: Def =
    Def::gauge("rocketmq_timer_enqueue_latency", "Timer enqueue latency").unit("milliseconds");
const TIMER_DEQUEUE_LAG: Def =
    Def::gauge("rocketmq_timer_dequeue_lag", "Timer dequeue messages lag");
const TIMER_DEQUEUE_LATENCY: Def =
    Def::gauge("rocketmq_timer_dequeue_latency", "Timer dequeue latency").unit("milliseconds");
const TIMING_MESSAGES: Def = Def::gauge(
    "rocketmq_timing_messages",
    "Current message number in timing",
);
const TIMER_ENQUEUE_TOTAL: Def = Def::counter(
    "rocketmq_timer_enqueue_total",
    "Total number of timer enqueue",
);
const TIMER_DEQUEUE_TOTAL: Def = Def::counter(
    "rocketmq_timer_dequeue_total",
    "Total number of timer dequeue",
);
const DELAY_LATENCY: Def = Def::histogram(
    "rocketmq_delay_message_latency",
    "Timer message set latency distribution",
)
.unit("seconds");
const TIMER_SNAPSHOT: Def = Def::gauge(
    "rocketmq_timer_message_snapshot",
    "Timer message distribution snapshot, only count timing messages in 24h.",
);
const POP_CHECKPOINT_BUFFER: Def = Def::gauge(
    "rocketmq_pop_checkpoint_buffer_size",
    "The number of buffered checkpoint",
);
// RocketMQ labels this count of revive records "milliseconds"; the name is kept so that
// its dashboards find it.
const POP_REVIVE_LAG: Def = Def::gauge(
    "rocketmq_pop_revive_lag",
    "The processing lag of revive topic",
)
.unit("milliseconds");
const POP_REVIVE_LATENCY: Def = Def::gauge(
    "rocketmq_pop_revive_latency",
    "The processing latency of revive topic",
)
.unit("milliseconds");
const PULL_PAGE_CACHE: Def = Def::counter(
    "sluice_pull_page_cache_messages_total",
    "Messages read by sampled pulls (one in 16), by whether the page cache held all their pages",
);
const HELD_NOW: Def = Def::gauge(
    "sluice_long_polling_held",
    "Pull and pop requests held for long polling now",
);
const HOLDS: Def = Def::counter(
    "sluice_long_polling_holds_total",
    "Pull and pop requests held for long polling",
);

// ------------------------------------------------------------------ the endpoint

/// Binds the endpoint `metrics` asks for (`None` with `DISABLE`): on
/// `metricsPromExporterHost`, else on `brokerIP1` as RocketMQ does.
///
/// # Errors
/// An exporter sluice does not have, or a port that cannot be bound.
pub fn bind(
    metrics: &MetricsConfig,
    config: &crate::config::BrokerConfig,
) -> Result<Option<BoundEndpoint>, MetricsError> {
    if !metrics.enabled()? {
        return Ok(None);
    }
    let host = if metrics.metrics_prom_exporter_host.trim().is_empty() {
        config.broker_ip1()
    } else {
        metrics.metrics_prom_exporter_host.trim().to_owned()
    };
    BoundEndpoint::bind(&host, metrics.metrics_prom_exporter_port).map(Some)
}

/// Serves the metrics of `role`'s broker on `bound` and turns its meters on.
#[must_use]
pub fn serve(bound: BoundEndpoint, role: &Arc<Role>, metrics: &MetricsConfig) -> Endpoint {
    let broker = role.broker();
    let (cluster, name) = {
        let c = broker.config();
        (c.broker_cluster_name.clone(), c.broker_name.clone())
    };
    let mut registry = Registry::for_process(
        &[
            ("cluster", &cluster),
            ("node_type", "broker"),
            ("node_id", &name),
        ],
        metrics,
    );
    registry.register(BrokerCollector::new(Arc::clone(role)));
    broker.metrics.enable();
    broker.store.page_cache().enable();
    bound.serve(Arc::new(registry))
}

// ------------------------------------------------------------------ the scrape

/// Writes the broker's metrics on every scrape.
#[derive(Debug)]
pub struct BrokerCollector {
    role: Arc<Role>,
}

impl BrokerCollector {
    /// Reads the broker of `role` (and its timer and POP services) when scraped.
    #[must_use]
    pub fn new(role: Arc<Role>) -> Self {
        BrokerCollector { role }
    }
}

impl Collect for BrokerCollector {
    fn collect(&self, s: &mut Scrape<'_>) -> fmt::Result {
        let b = &**self.role.broker();
        timer(&self.role, s)?;
        pop(&self.role, s)?;
        b.metrics.collect(s)?;
        tables(b, s)?;
        connections(b, s)?;
        lag(b, s)?;
        storage(b, s)?;
        replication(b, s)?;
        s.gauge(
            &HELD_NOW,
            &[(
                vec![],
                i64::try_from(b.pull_hold.held()).unwrap_or(i64::MAX),
            )],
        )?;
        s.counter(&HOLDS, &[(vec![], b.pull_hold.holds_total())])
    }
}

fn tables(b: &Broker, s: &mut Scrape<'_>) -> fmt::Result {
    let permission = i64::from(b.config().broker_permission);
    s.gauge(&PERMISSION, &[(vec![], permission)])?;
    let topics = i64::try_from(b.topics.topic_names().len()).unwrap_or(i64::MAX);
    s.gauge(&TOPIC_NUMBER, &[(vec![], topics)])?;
    let groups = i64::try_from(b.groups.names().len()).unwrap_or(i64::MAX);
    s.gauge(&GROUP_NUMBER, &[(vec![], groups)])
}

fn language_label(l: remoting::LanguageCode) -> String {
    l.name().to_ascii_lowercase()
}

fn version_label(v: i32) -> String {
    remoting::protocol::constants::version_name(v).to_ascii_lowercase()
}

fn connections(b: &Broker, s: &mut Scrape<'_>) -> fmt::Result {
    let mut producers: std::collections::BTreeMap<(String, String), i64> = Default::default();
    for clients in b.producers.all().values() {
        for c in clients {
            *producers
                .entry((language_label(c.language), version_label(c.version)))
                .or_default() += 1;
        }
    }
    let series: Series<'_, i64> = producers
        .into_iter()
        .map(|((language, version), n)| {
            (
                vec![
                    ("language", Cow::Owned(language)),
                    ("version", Cow::Owned(version)),
                    ("protocol_type", Cow::Borrowed("remoting")),
                ],
                n,
            )
        })
        .collect();
    s.gauge(&PRODUCER_CONNECTIONS, &series)?;

    let mut consumers: std::collections::BTreeMap<(String, String, String, &'static str), i64> =
        Default::default();
    for group in b.consumers.group_names() {
        let Some(info) = b.consumers.group(&group) else {
            continue;
        };
        let mode = match info.consume_type {
            ConsumeType::ConsumeActively => "pull",
            ConsumeType::ConsumePassively => "push",
            ConsumeType::ConsumePop => "pop",
        };
        for c in info.channels.values() {
            *consumers
                .entry((
                    group.clone(),
                    language_label(c.language),
                    version_label(c.version),
                    mode,
                ))
                .or_default() += 1;
        }
    }
    let series: Series<'_, i64> = consumers
        .into_iter()
        .map(|((group, language, version, mode), n)| {
            let system = is_system_group(&group);
            (
                vec![
                    ("consumer_group", Cow::Owned(group)),
                    ("language", Cow::Owned(language)),
                    ("version", Cow::Owned(version)),
                    ("consume_mode", Cow::Borrowed(mode)),
                    ("protocol_type", Cow::Borrowed("remoting")),
                    ("is_system", flag(system)),
                ],
                n,
            )
        })
        .collect();
    s.gauge(&CONSUMER_CONNECTIONS, &series)
}

/// Lag of one (group, topic), summed over its queues (latencies: the oldest queue's).
#[derive(Debug, Default)]
struct Lag {
    messages: i64,
    latency_ms: i64,
}

/// The lag gauges of every online group in every topic it subscribes to, as RocketMQ's
/// `ConsumerLagCalculator` reports them. sluice keeps no pull offsets apart from the
/// committed ones, so nothing counts as in flight and all the lag is ready.
fn lag(b: &Broker, s: &mut Scrape<'_>) -> fmt::Result {
    let now = crate::clock::now_ms();
    let mut rows: Vec<(Labels<'static>, Lag)> = Vec::new();
    for group in b.consumers.group_names() {
        let Some(info) = b.consumers.group(&group) else {
            continue;
        };
        if !b.groups.contains(&group) {
            continue;
        }
        for topic in info.subscriptions.keys() {
            if is_retry_or_dlq(topic) {
                continue;
            }
            let Some(config) = b.topics.select(topic) else {
                continue;
            };
            let mut lag = Lag::default();
            for queue_id in 0..config.read_queue_nums {
                let p = crate::processor::offsets::queue_progress(b, &group, topic, queue_id);
                let behind = (p.broker_offset - p.consumer_offset).max(0);
                lag.messages += behind;
                if behind > 0 {
                    let first = u64::try_from(p.consumer_offset).unwrap_or(0);
                    if let Some(stored) = b.store.message_store_timestamp(topic, queue_id, first) {
                        lag.latency_ms = lag.latency_ms.max(now - stored);
                    }
                }
            }
            rows.push((
                vec![
                    ("topic", Cow::Owned(topic.clone())),
                    ("consumer_group", Cow::Owned(group.clone())),
                    ("is_retry", flag(false)),
                    (
                        "is_system",
                        flag(is_system_topic(topic) || is_system_group(&group)),
                    ),
                ],
                lag,
            ));
        }
    }
    let pick = |f: fn(&Lag) -> i64| -> Series<'static, i64> {
        rows.iter().map(|(l, lag)| (l.clone(), f(lag))).collect()
    };
    s.gauge(&LAG_MESSAGES, &pick(|l| l.messages))?;
    s.gauge(&LAG_LATENCY, &pick(|l| l.latency_ms))?;
    s.gauge(&INFLIGHT, &pick(|_| 0))?;
    s.gauge(&QUEUEING_LATENCY, &pick(|l| l.latency_ms))?;
    s.gauge(&READY, &pick(|l| l.messages))
}

fn storage(b: &Broker, s: &mut Scrape<'_>) -> fmt::Result {
    let labels = || -> Labels<'static> {
        vec![
            ("storage_type", Cow::Borrowed("local")),
            ("storage_medium", Cow::Borrowed("disk")),
        ]
    };
    if let Some(used) = used_space(b.store_root()) {
        s.gauge(&STORAGE_SIZE, &[(labels(), used)])?;
    }
    let reads = b.store.page_cache().reads();
    s.counter(
        &PULL_PAGE_CACHE,
        &[
            (vec![("result", Cow::Borrowed("hit"))], reads.hits),
            (vec![("result", Cow::Borrowed("miss"))], reads.misses),
        ],
    )?;
    let flush_behind = i64::try_from(b.store.commit_log().unflushed_bytes()).unwrap_or(i64::MAX);
    s.gauge(&FLUSH_BEHIND, &[(labels(), flush_behind)])?;
    let dispatch_behind = i64::try_from(b.store.dispatch_behind_bytes()).unwrap_or(i64::MAX);
    s.gauge(&DISPATCH_BEHIND, &[(labels(), dispatch_behind)])?;
    if let Some(earliest) = b.store.earliest_message_time_overall().filter(|t| *t > 0) {
        let reserve = crate::clock::now_ms() - earliest;
        s.gauge(&RESERVE_TIME, &[(labels(), reserve)])?;
    }
    Ok(())
}

fn replication(b: &Broker, s: &mut Scrape<'_>) -> fmt::Result {
    let flush = b.store.commit_log().flush_meters();
    let snap = flush.fsync_us.snapshot();
    if snap.count > 0 {
        s.histogram(&FSYNC_LATENCY, &[(vec![], snap)])?;
    }
    let snap = flush.group_size.snapshot();
    if snap.count > 0 {
        s.histogram(&GROUP_COMMIT_SIZE, &[(vec![], snap)])?;
    }
    match b.replication.status() {
        ha::HaStatus::Master(m) => {
            let max = b.store.commit_log().max_offset().0;
            let now = crate::clock::now_ms();
            let mut bytes = Vec::new();
            let mut time = Vec::new();
            for slave in &m.slaves {
                let Some(ack) = slave.ack_offset else {
                    continue;
                };
                let labels: Labels<'static> = vec![("slave", Cow::Owned(slave.addr.to_string()))];
                let behind = max.saturating_sub(ack);
                bytes.push((labels.clone(), i64::try_from(behind).unwrap_or(i64::MAX)));
                let age = if behind == 0 {
                    0
                } else {
                    b.store
                        .pickup_store_timestamp(ack, 128)
                        .map_or(0, |stored| (now - stored).max(0))
                };
                time.push((labels, age));
            }
            s.gauge(
                &HA_SLAVES,
                &[(vec![], i64::try_from(m.slaves.len()).unwrap_or(0))],
            )?;
            s.gauge(&HA_SLAVE_LAG_BYTES, &bytes)?;
            s.gauge(&HA_SLAVE_LAG_TIME, &time)
        }
        ha::HaStatus::Slave(c) => s.gauge(
            &HA_MASTER_LINK,
            &[(vec![], i64::from(c.connected.is_some()))],
        ),
        ha::HaStatus::Stopped => Ok(()),
    }
}

/// `TimerMetrics.timerDist`'s bounds, seconds.
const TIMER_BOUNDS_S: [i64; 8] = [5, 60, 300, 900, 3600, 14_400, 28_800, 86_400];

fn timer(role: &Role, s: &mut Scrape<'_>) -> fmt::Result {
    let timer = role.timer();
    if !timer.settings().enabled {
        return Ok(());
    }
    let g = timer.gauges(&TIMER_BOUNDS_S);
    s.gauge(&TIMER_ENQUEUE_LAG, &[(vec![], g.enqueue_lag)])?;
    s.gauge(&TIMER_ENQUEUE_LATENCY, &[(vec![], g.enqueue_latency_ms)])?;
    s.gauge(&TIMER_DEQUEUE_LAG, &[(vec![], g.dequeue_lag)])?;
    s.gauge(&TIMER_DEQUEUE_LATENCY, &[(vec![], g.dequeue_latency_ms)])?;
    let timing: Series<'_, i64> = timer
        .metrics()
        .wrapper()
        .timing_count
        .into_iter()
        .map(|(topic, m)| (vec![("topic", Cow::Owned(topic))], m.count))
        .collect();
    s.gauge(&TIMING_MESSAGES, &timing)?;
    let passes = timer.metrics().passes();
    let pick = |f: fn(&(Box<str>, u64, u64)) -> u64| -> Series<'_, u64> {
        passes
            .iter()
            .filter(|p| f(p) > 0)
            .map(|p| (vec![("topic", Cow::Owned(p.0.to_string()))], f(p)))
            .collect()
    };
    s.counter(&TIMER_ENQUEUE_TOTAL, &pick(|p| p.1))?;
    s.counter(&TIMER_DEQUEUE_TOTAL, &pick(|p| p.2))?;
    let delays: Series<'_, _> = timer
        .metrics()
        .delays()
        .into_iter()
        .map(|(t, h)| (vec![("topic", Cow::Owned(t.to_string()))], h))
        .collect();
    s.histogram(&DELAY_LATENCY, &delays)?;
    let snapshot: Series<'_, i64> = TIMER_BOUNDS_S
        .iter()
        .zip(g.distribution)
        .map(|(bound, n)| (vec![("timer_bound_s", Cow::Owned(bound.to_string()))], n))
        .collect();
    s.gauge(&TIMER_SNAPSHOT, &snapshot)
}

fn pop(role: &Role, s: &mut Scrape<'_>) -> fmt::Result {
    let b = role.broker();
    let buffered = i64::try_from(role.pop().buffer().buffered()).unwrap_or(i64::MAX);
    s.gauge(&POP_CHECKPOINT_BUFFER, &[(vec![], buffered)])?;
    let (cluster, queues) = {
        let c = b.config();
        (c.broker_cluster_name.clone(), c.revive_queue_num)
    };
    let topic = remoting::protocol::pop::revive_topic(&cluster);
    let now = crate::clock::now_ms();
    let mut lag = Vec::new();
    let mut latency = Vec::new();
    for queue_id in 0..queues {
        let max = b.store.max_offset_in_queue(&topic, queue_id);
        let done = b
            .offsets
            .query(remoting::protocol::pop::REVIVE_GROUP, &topic, queue_id)
            .and_then(|o| u64::try_from(o).ok())
            .unwrap_or(0);
        let behind = max.saturating_sub(done);
        let age = if behind == 0 {
            0
        } else {
            b.store
                .message_store_timestamp(&topic, queue_id, done)
                .map_or(0, |stored| (now - stored).max(0))
        };
        let labels: Labels<'static> = vec![("queue_id", Cow::Owned(queue_id.to_string()))];
        lag.push((labels.clone(), i64::try_from(behind).unwrap_or(i64::MAX)));
        latency.push((labels, age));
    }
    s.gauge(&POP_REVIVE_LAG, &lag)?;
    s.gauge(&POP_REVIVE_LATENCY, &latency)
}

fn used_space(path: &std::path::Path) -> Option<i64> {
    store::cleanup::used_bytes(path)
        .and_then(|b| i64::try_from(b).ok())
        .filter(|b| *b > 0)
}
