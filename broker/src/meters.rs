//! The broker's event meters, under RocketMQ 5's names (its `BrokerMetricsManager`) and
//! labels: what is counted where it happens (a put, a pull, a commit), only when
//! `metricsExporterType=PROM` turned them on (one relaxed load otherwise), and written on
//! every scrape by [`crate::metrics`].
//!
//! Where sluice counts differently from RocketMQ 5.3, on purpose:
//! `rocketmq_messages_in_total` counts a message once, under the topic its producer named and
//! its kind (`delay`, `transaction`, `fifo`, `normal`): RocketMQ counts a delayed or half
//! message under its system topic, and a timer-wheel message never under its own.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use ::metrics::family::{Family, PairFamily};
use ::metrics::meter::{CREATE_TIME_MS, Counter, FINISH_LATENCY_S, Histogram, MESSAGE_SIZE_BYTES};
use ::metrics::scrape::{Def, Labels, Scrape, Series, flag};
use remoting::protocol::constants::system;
use remoting::rpc_metrics::RpcLatency;
use remoting::server::{RpcObserver, RpcOutcome, RpcResult};

/// The kind of a message sent, as `message_type` labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageType {
    /// Plain.
    Normal,
    /// With a message group (`__SHARDINGKEY`).
    Fifo,
    /// A delay level or a delivery time.
    Delay,
    /// A half message.
    Transaction,
}

impl MessageType {
    const ALL: [MessageType; 4] = [
        MessageType::Normal,
        MessageType::Fifo,
        MessageType::Delay,
        MessageType::Transaction,
    ];

    fn label(self) -> &'static str {
        match self {
            MessageType::Normal => "normal",
            MessageType::Fifo => "fifo",
            MessageType::Delay => "delay",
            MessageType::Transaction => "transaction",
        }
    }
}

// ------------------------------------------------------------------ descriptions

const MESSAGES_IN: Def = Def::counter(
    "rocketmq_messages_in_total",
    "Total number of incoming messages",
);
const THROUGHPUT_IN: Def = Def::counter(
    "rocketmq_throughput_in_total",
    "Total traffic of incoming messages",
);
const MESSAGE_SIZE: Def = Def::histogram("rocketmq_message_size", "Incoming messages size");
const MESSAGES_OUT: Def = Def::counter(
    "rocketmq_messages_out_total",
    "Total number of outgoing messages",
);
const THROUGHPUT_OUT: Def = Def::counter(
    "rocketmq_throughput_out_total",
    "Total traffic of outgoing messages",
);
const SEND_TO_DLQ: Def = Def::counter(
    "rocketmq_send_to_dlq_messages_total",
    "Consumer send to DLQ messages",
);
const COMMITS: Def = Def::counter(
    "rocketmq_commit_messages_total",
    "Total number of commit messages",
);
const ROLLBACKS: Def = Def::counter(
    "rocketmq_rollback_messages_total",
    "Total number of rollback messages",
);
// RocketMQ records seconds under this unit; so does sluice, so that dashboards agree.
const FINISH_LATENCY: Def = Def::histogram(
    "rocketmq_finish_message_latency",
    "Transaction finish latency",
)
.unit("ms");
const HALF_MESSAGES: Def = Def::gauge("rocketmq_half_messages", "Half messages of all topics");
const TOPIC_CREATE: Def = Def::histogram(
    "rocketmq_topic_create_execution_time",
    "The distribution of create topic time",
)
.unit("milliseconds");
const GROUP_CREATE: Def = Def::histogram(
    "rocketmq_consumer_group_create_execution_time",
    "The distribution of create subscription time",
)
.unit("milliseconds");
const HA_ACK_LATENCY: Def = Def::histogram(
    "sluice_ha_ack_latency",
    "From a put to its slave's acknowledgement (SYNC_MASTER)",
)
.unit("microseconds");
const REVIVE_IN: Def = Def::counter(
    "rocketmq_pop_revive_in_message_total",
    "Total number of put message to revive topic",
);
const REVIVE_OUT: Def = Def::counter(
    "rocketmq_pop_revive_out_message_total",
    "Total number of get message from revive topic",
);
const REVIVE_RETRY: Def = Def::counter(
    "rocketmq_pop_revive_retry_messages_total",
    "Total number of put message to pop retry topic",
);

// ------------------------------------------------------------------ meters

/// Incoming meters of one topic and message type.
#[derive(Debug)]
struct InMeters {
    messages: Counter,
    bytes: Counter,
    size: Histogram,
}

impl Default for InMeters {
    fn default() -> Self {
        InMeters {
            messages: Counter::default(),
            bytes: Counter::default(),
            size: Histogram::new(MESSAGE_SIZE_BYTES),
        }
    }
}

/// Incoming meters of one topic, by message type.
#[derive(Debug, Default)]
struct TopicIn([InMeters; 4]);

/// Outgoing meters of one (group, topic): normal and retry queues apart.
#[derive(Debug, Default)]
struct OutMeters {
    messages: [Counter; 2],
    bytes: [Counter; 2],
}

/// Puts of one (group, topic): `PUT_OK` ones by kind (checkpoint, ack), failed ones by
/// kind and status.
#[derive(Debug, Default)]
struct PutCounts {
    ok: [Counter; 2],
    failed: parking_lot::Mutex<std::collections::BTreeMap<(usize, &'static str), u64>>,
}

impl PutCounts {
    fn record(&self, kind: usize, status: store::PutMessageStatus) {
        if status.is_ok() {
            self.ok[kind].inc();
        } else {
            *self
                .failed
                .lock()
                .entry((kind, status.rocketmq().as_str()))
                .or_default() += 1;
        }
    }

    /// (kind, put_status, count) of every non-zero figure.
    fn figures(&self) -> Vec<(usize, &'static str, u64)> {
        let mut all: Vec<(usize, &'static str, u64)> = (0..2)
            .map(|k| (k, "PUT_OK", self.ok[k].get()))
            .filter(|(_, _, n)| *n > 0)
            .collect();
        all.extend(self.failed.lock().iter().map(|((k, s), n)| (*k, *s, *n)));
        all
    }
}

/// A revive record's kind, as `revive_message_type` labels it.
const REVIVE_KINDS: [&str; 2] = ["CK", "ACK"];

/// The broker's meters.
#[derive(Debug)]
pub struct BrokerMetrics {
    on: AtomicBool,
    messages_in: Family<Box<str>, TopicIn>,
    messages_out: PairFamily<OutMeters>,
    send_to_dlq: PairFamily<Counter>,
    commits: Family<Box<str>, Counter>,
    rollbacks: Family<Box<str>, Counter>,
    finish_latency: Family<Box<str>, Histogram>,
    half_messages: Family<Box<str>, AtomicI64>,
    /// (success, failure).
    topic_create: [Histogram; 2],
    group_create: [Histogram; 2],
    rpc: Arc<RpcLatency>,
    /// From a put to its slave's ack, on a SYNC_MASTER (µs).
    ha_ack_us: Arc<Histogram>,
    /// Checkpoints and acks written to the revive log, by (group, topic).
    revive_in: PairFamily<PutCounts>,
    /// Revive records read back, by (group, topic): (queue, kind) → count.
    revive_out: PairFamily<parking_lot::Mutex<std::collections::BTreeMap<(i32, usize), u64>>>,
    /// Un-acked messages put to the POP retry topic, by (group, topic).
    revive_retry: PairFamily<PutCounts>,
}

/// Times one put until its slave acknowledges it.
#[derive(Debug)]
pub struct HaAckClock {
    started: std::time::Instant,
    into: Arc<Histogram>,
}

impl HaAckClock {
    /// The slave acknowledged.
    pub fn stop(self) {
        let us = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.into.observe(us);
    }
}

impl BrokerMetrics {
    /// Meters that record nothing until [`Self::enable`]d.
    #[must_use]
    pub fn new() -> Self {
        BrokerMetrics {
            on: AtomicBool::new(false),
            messages_in: Family::new(TopicIn::default),
            messages_out: PairFamily::new(OutMeters::default),
            send_to_dlq: PairFamily::new(Counter::default),
            commits: Family::new(Counter::default),
            rollbacks: Family::new(Counter::default),
            finish_latency: Family::new(|| Histogram::new(FINISH_LATENCY_S)),
            half_messages: Family::new(|| AtomicI64::new(0)),
            topic_create: [
                Histogram::new(CREATE_TIME_MS),
                Histogram::new(CREATE_TIME_MS),
            ],
            group_create: [
                Histogram::new(CREATE_TIME_MS),
                Histogram::new(CREATE_TIME_MS),
            ],
            rpc: Arc::new(RpcLatency::default()),
            ha_ack_us: Arc::new(Histogram::new(::metrics::meter::LATENCY_US)),
            revive_in: PairFamily::new(PutCounts::default),
            revive_out: PairFamily::new(Default::default),
            revive_retry: PairFamily::new(PutCounts::default),
        }
    }
}

impl Default for BrokerMetrics {
    fn default() -> Self {
        BrokerMetrics::new()
    }
}

impl BrokerMetrics {
    /// Meters record from now on (`metricsExporterType=PROM`, once its endpoint is up).
    pub fn enable(&self) {
        self.on.store(true, Ordering::Relaxed);
    }

    /// Whether meters record.
    #[inline]
    #[must_use]
    pub fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// `messages` messages of `bytes` bytes in all were stored for `topic` (retry and DLQ
    /// topics are not counted, as RocketMQ does not).
    #[inline]
    pub fn messages_in(&self, topic: &str, kind: MessageType, messages: u64, bytes: u64) {
        if !self.on() || messages == 0 || is_retry_or_dlq(topic) {
            return;
        }
        thread_local! {
            static LAST: ::metrics::family::LastHit<Box<str>, TopicIn> = const { std::cell::RefCell::new(None) };
        }
        self.messages_in.with_last(&LAST, topic, |t| {
            let m = &t.0[kind as usize];
            m.messages.add(messages);
            m.bytes.add(bytes);
            m.size.observe_n(bytes / messages, messages);
        });
    }

    /// `messages` messages of `bytes` bytes were handed to `group` from `topic` (a pull,
    /// a pop; `retry`: from the group's retry queue).
    #[inline]
    pub fn messages_out(&self, group: &str, topic: &str, retry: bool, messages: u64, bytes: u64) {
        if !self.on() || messages == 0 || (!retry && is_retry_or_dlq(topic)) {
            return;
        }
        self.messages_out.with(group, topic, |m| {
            m.messages[usize::from(retry)].add(messages);
            m.bytes[usize::from(retry)].add(bytes);
        });
    }

    /// `msg` was stored; counted if it is a dead letter (`%DLQ%<group>`), under its group
    /// and the topic it was first sent to (`RETRY_TOPIC`).
    #[inline]
    pub fn stored_maybe_dead(&self, msg: &store::MessageInner) {
        // Every send passes here: the first byte rules out all but `%` topics.
        if !msg.topic.starts_with('%') || !self.on() {
            return;
        }
        if let Some(group) = msg.topic.strip_prefix(system::DLQ_GROUP_TOPIC_PREFIX) {
            let origin =
                message::properties::get(&msg.properties, message::properties::keys::RETRY_TOPIC)
                    .unwrap_or(&msg.topic);
            self.send_to_dlq.with(group, origin, Counter::inc);
        }
    }

    /// A half message for `topic` was stored.
    pub fn half_stored(&self, topic: &str) {
        if self.on() {
            self.half_messages
                .with(topic, |n| n.fetch_add(1, Ordering::Relaxed));
        }
    }

    /// A transaction on `topic` ended (`commit` or rollback), `age` after its message was
    /// born.
    pub fn transaction_ended(&self, topic: &str, commit: bool, age: Duration) {
        if !self.on() {
            return;
        }
        let family = if commit {
            &self.commits
        } else {
            &self.rollbacks
        };
        family.with(topic, Counter::inc);
        if commit {
            self.finish_latency
                .with(topic, |h| h.observe(age.as_secs()));
        }
        self.half_messages.with(topic, |n| {
            // Never below zero: the half may predate this process.
            let _ = n.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                (v > 0).then(|| v - 1)
            });
        });
    }

    /// A topic was created or updated by an admin request, in `took`.
    pub fn topic_created(&self, ok: bool, took: Duration) {
        if self.on() {
            self.topic_create[usize::from(!ok)].observe(millis(took));
        }
    }

    /// A subscription group was created or updated by an admin request, in `took`.
    pub fn group_created(&self, ok: bool, took: Duration) {
        if self.on() {
            self.group_create[usize::from(!ok)].observe(millis(took));
        }
    }

    /// The requests' latencies, as the servers' observer (`None` while off: the
    /// servers then take no time stamps).
    #[must_use]
    pub fn rpc_observer(&self) -> Option<Arc<dyn RpcObserver>> {
        self.on()
            .then(|| Arc::clone(&self.rpc) as Arc<dyn RpcObserver>)
    }

    /// A checkpoint (`ck`) or an ack of `group` on `topic` was put to the revive log.
    pub fn revive_put(&self, group: &str, topic: &str, ck: bool, status: store::PutMessageStatus) {
        if self.on() {
            self.revive_in
                .with(group, topic, |c| c.record(usize::from(!ck), status));
        }
    }

    /// A checkpoint (`ck`) or an ack of `group` on `topic` was read back from revive queue
    /// `queue_id`.
    pub fn revive_read(&self, group: &str, topic: &str, queue_id: i32, ck: bool) {
        if self.on() {
            self.revive_out.with(group, topic, |m| {
                *m.lock().entry((queue_id, usize::from(!ck))).or_default() += 1;
            });
        }
    }

    /// An un-acked message of `group` on `topic` was put to the POP retry topic.
    pub fn revive_retry(&self, group: &str, topic: &str, status: store::PutMessageStatus) {
        if self.on() {
            self.revive_retry
                .with(group, topic, |c| c.record(0, status));
        }
    }

    /// A clock for a put waiting for its slave (`None` while off).
    #[must_use]
    pub fn ha_ack_clock(&self) -> Option<HaAckClock> {
        self.on().then(|| HaAckClock {
            started: std::time::Instant::now(),
            into: Arc::clone(&self.ha_ack_us),
        })
    }

    /// A held request was answered, `held_for` after it was held.
    pub fn held_answered(
        &self,
        request_code: i32,
        response_code: i32,
        held_for: Duration,
        sent: bool,
    ) {
        if self.on() {
            self.rpc.on_answered(&RpcOutcome {
                request_code,
                response_code,
                elapsed: held_for,
                long_polling: true,
                result: if sent {
                    RpcResult::Success
                } else {
                    RpcResult::WriteChannelFailed
                },
            });
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub(crate) fn is_retry_or_dlq(topic: &str) -> bool {
    topic.starts_with(system::RETRY_GROUP_TOPIC_PREFIX)
        || topic.starts_with(system::DLQ_GROUP_TOPIC_PREFIX)
}

pub(crate) fn is_system_group(group: &str) -> bool {
    // RocketMQ's metrics also take its prefix in any case (`BrokerMetricsManager.isSystemGroup`).
    const PREFIX: &str = "cid_rmq_sys_";
    system::is_system_group(group)
        || group
            .get(..PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(PREFIX))
}

/// `consumer_group` and `topic`, then `rest` (the POP revive counters' labels).
fn group_topic_labels<const N: usize>(
    group: &str,
    topic: &str,
    rest: [(&'static str, Cow<'static, str>); N],
) -> Labels<'static> {
    let mut labels = Vec::with_capacity(2 + N);
    labels.push(("consumer_group", Cow::Owned(group.to_owned())));
    labels.push(("topic", Cow::Owned(topic.to_owned())));
    labels.extend(rest);
    labels
}

fn topic_labels(topic: &str) -> Labels<'static> {
    vec![
        ("topic", Cow::Owned(topic.to_owned())),
        ("is_system", flag(system::is_system_topic(topic))),
    ]
}

impl BrokerMetrics {
    /// Writes the event meters (what was counted where it happened).
    ///
    /// # Errors
    /// When the scrape cannot be written.
    pub fn collect(&self, s: &mut Scrape<'_>) -> fmt::Result {
        let m = self;
        let mut msgs: Series<'_, u64> = Vec::new();
        let mut bytes: Series<'_, u64> = Vec::new();
        let mut sizes: Series<'_, _> = Vec::new();
        for (topic, t) in m.messages_in.entries() {
            for kind in MessageType::ALL {
                let meters = &t.0[kind as usize];
                let n = meters.messages.get();
                if n == 0 {
                    continue;
                }
                let mut labels = topic_labels(&topic);
                labels.push(("message_type", kind.label().into()));
                msgs.push((labels.clone(), n));
                bytes.push((labels.clone(), meters.bytes.get()));
                sizes.push((labels, meters.size.snapshot()));
            }
        }
        s.counter(&MESSAGES_IN, &msgs)?;
        s.counter(&THROUGHPUT_IN, &bytes)?;
        s.histogram(&MESSAGE_SIZE, &sizes)?;

        let mut msgs: Series<'_, u64> = Vec::new();
        let mut bytes: Series<'_, u64> = Vec::new();
        for (group, topic, o) in m.messages_out.entries() {
            for retry in [false, true] {
                let n = o.messages[usize::from(retry)].get();
                if n == 0 {
                    continue;
                }
                let labels: Labels<'_> = vec![
                    ("topic", Cow::Owned(topic.to_string())),
                    ("consumer_group", Cow::Owned(group.to_string())),
                    ("is_retry", flag(retry)),
                    (
                        "is_system",
                        flag(system::is_system_topic(&topic) || is_system_group(&group)),
                    ),
                ];
                msgs.push((labels.clone(), n));
                bytes.push((labels, o.bytes[usize::from(retry)].get()));
            }
        }
        s.counter(&MESSAGES_OUT, &msgs)?;
        s.counter(&THROUGHPUT_OUT, &bytes)?;

        let dlq: Series<'_, u64> = m
            .send_to_dlq
            .entries()
            .into_iter()
            .map(|(group, topic, c)| {
                (
                    vec![
                        ("topic", Cow::Owned(topic.to_string())),
                        ("consumer_group", Cow::Owned(group.to_string())),
                        ("is_system", flag(is_system_group(&group))),
                    ],
                    c.get(),
                )
            })
            .collect();
        s.counter(&SEND_TO_DLQ, &dlq)?;

        let per_topic = |f: &Family<Box<str>, Counter>| -> Series<'static, u64> {
            f.entries()
                .into_iter()
                .map(|(t, c)| (vec![("topic", Cow::Owned(t.to_string()))], c.get()))
                .collect()
        };
        s.counter(&COMMITS, &per_topic(&m.commits))?;
        s.counter(&ROLLBACKS, &per_topic(&m.rollbacks))?;
        let finish: Series<'_, _> = m
            .finish_latency
            .entries()
            .into_iter()
            .map(|(t, h)| (vec![("topic", Cow::Owned(t.to_string()))], h.snapshot()))
            .collect();
        s.histogram(&FINISH_LATENCY, &finish)?;
        let half: Series<'_, i64> = m
            .half_messages
            .entries()
            .into_iter()
            .map(|(t, n)| {
                (
                    vec![("topic", Cow::Owned(t.to_string()))],
                    n.load(Ordering::Relaxed),
                )
            })
            .collect();
        s.gauge(&HALF_MESSAGES, &half)?;

        for (def, pair) in [
            (&TOPIC_CREATE, &m.topic_create),
            (&GROUP_CREATE, &m.group_create),
        ] {
            let series: Series<'_, _> = [("success", &pair[0]), ("failure", &pair[1])]
                .into_iter()
                .filter_map(|(status, h)| {
                    let snap = h.snapshot();
                    (snap.count > 0).then(|| {
                        (
                            vec![
                                ("invocation_status", Cow::Borrowed(status)),
                                ("is_system", flag(false)),
                            ],
                            snap,
                        )
                    })
                })
                .collect();
            s.histogram(def, &series)?;
        }
        let mut series: Series<'_, u64> = Vec::new();
        for (group, topic, c) in m.revive_in.entries() {
            for (kind, status, n) in c.figures() {
                series.push((
                    group_topic_labels(
                        &group,
                        &topic,
                        [
                            ("revive_message_type", Cow::Borrowed(REVIVE_KINDS[kind])),
                            ("put_status", Cow::Borrowed(status)),
                        ],
                    ),
                    n,
                ));
            }
        }
        s.counter(&REVIVE_IN, &series)?;
        let mut series: Series<'_, u64> = Vec::new();
        for (group, topic, by) in m.revive_out.entries() {
            for ((queue_id, kind), n) in by.lock().iter() {
                series.push((
                    group_topic_labels(
                        &group,
                        &topic,
                        [
                            ("queue_id", Cow::Owned(queue_id.to_string())),
                            ("revive_message_type", Cow::Borrowed(REVIVE_KINDS[*kind])),
                        ],
                    ),
                    *n,
                ));
            }
        }
        s.counter(&REVIVE_OUT, &series)?;
        let mut series: Series<'_, u64> = Vec::new();
        for (group, topic, c) in m.revive_retry.entries() {
            for (_, status, n) in c.figures() {
                series.push((
                    group_topic_labels(&group, &topic, [("put_status", Cow::Borrowed(status))]),
                    n,
                ));
            }
        }
        s.counter(&REVIVE_RETRY, &series)?;
        let snap = m.ha_ack_us.snapshot();
        if snap.count > 0 {
            s.histogram(&HA_ACK_LATENCY, &[(vec![], snap)])?;
        }
        m.rpc.collect(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Only(Arc<BrokerMetrics>);

    impl ::metrics::exporter::Collect for Only {
        fn collect(&self, s: &mut Scrape<'_>) -> fmt::Result {
            self.0.collect(s)
        }
    }

    fn scrape(m: &Arc<BrokerMetrics>) -> String {
        let mut r = ::metrics::Registry::new(vec![]);
        r.register(Only(Arc::clone(m)));
        r.encode()
    }

    #[test]
    fn off_records_nothing_on_records_events() {
        let m = Arc::new(BrokerMetrics::new());
        m.messages_in("T", MessageType::Normal, 2, 2048);
        assert!(!scrape(&m).contains("rocketmq_messages_in_total"));
        m.enable();
        m.messages_in("T", MessageType::Fifo, 2, 2048);
        m.messages_in("%RETRY%g", MessageType::Normal, 1, 10);
        m.messages_out("g", "T", false, 3, 300);
        m.revive_put("g", "T", true, store::PutMessageStatus::PutOk);
        m.revive_put("g", "T", false, store::PutMessageStatus::PutOk);
        m.revive_put("g", "T", false, store::PutMessageStatus::FlushDiskTimeout);
        m.revive_read("g", "T", 3, false);
        m.revive_retry("g", "T", store::PutMessageStatus::PutOk);
        let text = scrape(&m);
        for line in [
            r#"rocketmq_messages_in_total{topic="T",is_system="false",message_type="fifo"} 2"#,
            r#"rocketmq_messages_out_total{topic="T",consumer_group="g",is_retry="false",is_system="false"} 3"#,
            r#"rocketmq_pop_revive_in_message_total{consumer_group="g",topic="T",revive_message_type="CK",put_status="PUT_OK"} 1"#,
            r#"rocketmq_pop_revive_in_message_total{consumer_group="g",topic="T",revive_message_type="ACK",put_status="FLUSH_DISK_TIMEOUT"} 1"#,
            r#"rocketmq_pop_revive_out_message_total{consumer_group="g",topic="T",queue_id="3",revive_message_type="ACK"} 1"#,
            r#"rocketmq_pop_revive_retry_messages_total{consumer_group="g",topic="T",put_status="PUT_OK"} 1"#,
        ] {
            assert!(text.contains(line), "{line} not in:\n{text}");
        }
        assert!(
            !text.contains("%RETRY%"),
            "retry topics are not counted in:\n{text}"
        );
    }
}
