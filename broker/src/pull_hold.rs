//! Long polling (RocketMQ's PullRequestHoldService and PopLongPollingService): pulls
//! and pops that found nothing wait here, keyed by `topic@queueId`, and are answered
//! the moment dispatch reports a matching message for their queue — or at their
//! deadline. A pop of every queue of a topic waits under queue id −1 and wakes for any
//! of them; an arrival wakes every matching pull but only one pop per group (the
//! oldest), as one message serves one pop.
//!
//! Dispatch calls [`PullHold::notify`] on the store's reput thread for every record,
//! so the common case (nobody waiting) is one atomic load. Woken pulls are re-run on
//! the tokio runtime, never on the reput thread. Deadlines are kept precisely by one
//! timer task (RocketMQ checks every 5 s); a periodic sweep also compares held pulls
//! with the queue's max offset, which is what wakes them on a slave.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc};
use tracing::debug;

use remoting::{Channel, RemotingCommand};

use crate::filter::SubscriptionFilter;

/// A pull being held for long polling.
#[derive(Debug, Clone)]
pub struct HeldPull {
    /// The client's connection.
    pub channel: Channel,
    /// The original request (answered with its opaque).
    pub request: RemotingCommand,
    /// The queue offset a pull asked for; `None` for a pop (the broker knows where it
    /// reads, any arrival may serve it).
    pub offset: Option<u64>,
    /// The filter, to wake only for matching messages.
    pub filter: SubscriptionFilter,
    /// When it was held (its answer's latency counts from here).
    pub since: Instant,
}

const POP_MESSAGE: i32 = remoting::RequestCode::PopMessage.code();

/// How often held pulls are compared with their queue's max offset.
const SWEEP_INTERVAL: Duration = Duration::from_secs(5);

#[derive(Debug)]
struct Held {
    pull: HeldPull,
    deadline: Instant,
    id: u64,
}

#[derive(Debug, Default)]
struct Table {
    by_queue: HashMap<(String, i32), Vec<Held>>,
    deadlines: BTreeMap<(Instant, u64), (String, i32)>,
    next_id: u64,
}

/// The held pulls of a broker.
#[derive(Debug)]
pub struct PullHold {
    table: Mutex<Table>,
    held: AtomicUsize,
    /// Holds since start.
    holds: std::sync::atomic::AtomicU64,
    /// Pulls to run again (woken or timed out).
    wake_tx: mpsc::UnboundedSender<HeldPull>,
    wake_rx: Mutex<Option<mpsc::UnboundedReceiver<HeldPull>>>,
    /// Wakes the timer task when an earlier deadline arrives.
    timer: Notify,
}

impl Default for PullHold {
    fn default() -> Self {
        let (wake_tx, wake_rx) = mpsc::unbounded_channel();
        PullHold {
            table: Mutex::new(Table::default()),
            held: AtomicUsize::new(0),
            holds: std::sync::atomic::AtomicU64::new(0),
            wake_tx,
            wake_rx: Mutex::new(Some(wake_rx)),
            timer: Notify::new(),
        }
    }
}

impl PullHold {
    /// Holds `pull` on `topic`/`queue_id` for at most `timeout_ms`.
    pub fn suspend(&self, topic: &str, queue_id: i32, pull: HeldPull, timeout_ms: u64) {
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let mut t = self.table.lock();
        t.next_id += 1;
        let id = t.next_id;
        let key = (topic.to_owned(), queue_id);
        let earliest = t.deadlines.keys().next().is_none_or(|(d, _)| deadline < *d);
        t.deadlines.insert((deadline, id), key.clone());
        t.by_queue
            .entry(key)
            .or_default()
            .push(Held { pull, deadline, id });
        self.held.fetch_add(1, Ordering::Release);
        self.holds.fetch_add(1, Ordering::Relaxed);
        drop(t);
        if earliest {
            self.timer.notify_one();
        }
    }

    /// Number of pulls held.
    #[must_use]
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// Number of holds since start (a pull held again counts again).
    #[must_use]
    pub fn holds_total(&self) -> u64 {
        self.holds.load(Ordering::Relaxed)
    }

    /// A message at `queue_offset` with `tags_code` and `properties` is now readable on
    /// the queue: wakes the pulls waiting at or below it whose filter matches it (a SQL92
    /// filter is evaluated on the arrival's properties).
    pub fn notify(
        &self,
        topic: &str,
        queue_id: i32,
        queue_offset: u64,
        tags_code: Option<i64>,
        properties: Option<&str>,
    ) {
        if self.held.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut woken_groups: Vec<String> = Vec::new();
        let mut wake = |h: &Held| match h.pull.offset {
            Some(offset) => {
                offset <= queue_offset && h.pull.filter.matches_arrival(tags_code, properties)
            }
            None if h.pull.request.code() != POP_MESSAGE => {
                // A notification: every one watching learns of the arrival.
                h.pull.filter.matches_arrival(tags_code, properties)
            }
            None => {
                let group = h.pull.request.ext("consumerGroup").unwrap_or_default();
                if woken_groups.iter().any(|g| g == group)
                    || !h.pull.filter.matches_arrival(tags_code, properties)
                {
                    return false;
                }
                woken_groups.push(group.to_owned());
                true
            }
        };
        self.wake_where(topic, queue_id, &mut wake);
        if queue_id >= 0 {
            self.wake_where(topic, -1, &mut wake);
        }
    }

    /// The queue's max offset is `max_offset` (sweep): wakes every pull below it (pops
    /// wait for an arrival or their deadline).
    pub fn check_max_offset(&self, topic: &str, queue_id: i32, max_offset: u64) {
        self.wake_where(topic, queue_id, |h| {
            h.pull.offset.is_some_and(|o| o < max_offset)
        });
    }

    /// How many pops of `group` wait on the queue (−1: on every queue of the topic).
    #[must_use]
    pub fn pops_held(&self, topic: &str, queue_id: i32, group: &str) -> usize {
        let t = self.table.lock();
        t.by_queue
            .get(&(topic.to_owned(), queue_id))
            .map_or(0, |list| {
                list.iter()
                    .filter(|h| {
                        h.pull.request.code() == POP_MESSAGE
                            && h.pull.request.ext("consumerGroup") == Some(group)
                    })
                    .count()
            })
    }

    /// Wakes `group`'s pulls held on the queue (its offset was reset: they answer with
    /// the new one at once rather than at their timeout).
    pub fn wake_group(&self, topic: &str, queue_id: i32, group: &str) {
        self.wake_where(topic, queue_id, |h| {
            h.pull.request.ext("consumerGroup") == Some(group)
        });
    }

    /// Queues with held pulls.
    #[must_use]
    pub fn queues(&self) -> Vec<(String, i32)> {
        self.table.lock().by_queue.keys().cloned().collect()
    }

    fn wake_where(&self, topic: &str, queue_id: i32, mut wake: impl FnMut(&Held) -> bool) {
        let mut woken = Vec::new();
        {
            let mut t = self.table.lock();
            let key = (topic.to_owned(), queue_id);
            let Some(list) = t.by_queue.get_mut(&key) else {
                return;
            };
            // In arrival order, so the oldest pop of a group is the one woken.
            let mut kept = Vec::with_capacity(list.len());
            for h in list.drain(..) {
                if wake(&h) {
                    woken.push(h);
                } else {
                    kept.push(h);
                }
            }
            *list = kept;
            if list.is_empty() {
                t.by_queue.remove(&key);
            }
            for h in &woken {
                t.deadlines.remove(&(h.deadline, h.id));
            }
        }
        self.release(woken);
    }

    fn release(&self, woken: Vec<Held>) {
        if woken.is_empty() {
            return;
        }
        self.held.fetch_sub(woken.len(), Ordering::AcqRel);
        for h in woken {
            if self.wake_tx.send(h.pull).is_err() {
                debug!("pull hold stopped; dropping a woken pull");
            }
        }
    }

    /// Takes the pulls whose deadline has passed.
    fn expire(&self, now: Instant) -> Option<Instant> {
        let mut expired = Vec::new();
        let next = {
            let mut t = self.table.lock();
            while let Some((&(deadline, id), _)) = t.deadlines.iter().next() {
                if deadline > now {
                    break;
                }
                let Some(key) = t.deadlines.remove(&(deadline, id)) else {
                    break;
                };
                if let Some(list) = t.by_queue.get_mut(&key) {
                    if let Some(pos) = list.iter().position(|h| h.id == id) {
                        expired.push(list.remove(pos));
                    }
                    if list.is_empty() {
                        t.by_queue.remove(&key);
                    }
                }
            }
            t.deadlines.keys().next().map(|(d, _)| *d)
        };
        self.release(expired);
        next
    }

    /// Runs the timer and hands every woken pull to `rerun` (on the runtime) until the
    /// returned task is dropped or aborted. Call once.
    pub fn start(
        self: &Arc<Self>,
        rerun: impl Fn(HeldPull) + Send + Sync + 'static,
        max_offset: impl Fn(&str, i32) -> u64 + Send + Sync + 'static,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let Some(mut rx) = self.wake_rx.lock().take() else {
            return Vec::new();
        };
        let runner = tokio::spawn(async move {
            while let Some(pull) = rx.recv().await {
                rerun(pull);
            }
        });
        let me = Arc::clone(self);
        let timer = tokio::spawn(async move {
            let mut sweep = tokio::time::interval(SWEEP_INTERVAL);
            loop {
                let next = me.expire(Instant::now());
                let sleep = async {
                    match next {
                        Some(d) => tokio::time::sleep_until(d.into()).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = sleep => {}
                    () = me.timer.notified() => {}
                    _ = sweep.tick() => {
                        for (topic, queue_id) in me.queues() {
                            me.check_max_offset(&topic, queue_id, max_offset(&topic, queue_id));
                        }
                    }
                }
            }
        });
        vec![runner, timer]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{SqlFilter, TagFilter};
    use remoting::protocol::heartbeat::SubscriptionData;

    fn held_with(offset: u64, filter: SubscriptionFilter) -> HeldPull {
        let (channel, _rx) = Channel::detached("127.0.0.1:1".parse().unwrap());
        HeldPull {
            channel,
            request: RemotingCommand::request(11),
            offset: Some(offset),
            filter,
            since: Instant::now(),
        }
    }

    fn held(offset: u64, tags: &str) -> HeldPull {
        let sub = SubscriptionData::build_tag("T", tags, 1);
        held_with(offset, SubscriptionFilter::Tag(TagFilter::new(&sub)))
    }

    fn held_sql(offset: u64, sql: &str) -> HeldPull {
        let selector = std::sync::Arc::new(filter::Selector::parse(sql).unwrap());
        held_with(offset, SubscriptionFilter::Sql(SqlFilter::new(selector)))
    }

    #[tokio::test]
    async fn wakes_on_matching_arrivals_and_deadlines() {
        let hold = Arc::new(PullHold::default());
        let (tx, mut rx) = mpsc::unbounded_channel();
        let _tasks = hold.start(
            move |p| {
                let _ = tx.send(p.offset.unwrap_or(u64::MAX));
            },
            |_, _| 0,
        );
        hold.suspend("T", 0, held(5, "A"), 60_000);
        hold.suspend("T", 0, held(5, "B"), 60_000);
        hold.suspend("T", 1, held(0, "*"), 100);
        assert_eq!(hold.held(), 3);
        // An arrival below the held offset, or on another queue, wakes nobody.
        hold.notify("T", 0, 4, Some(message::tags::tags_code(Some("A"))), None);
        hold.notify("U", 0, 9, None, None);
        assert_eq!(hold.held(), 3);
        // Tag A arrives at offset 5: only the A pull wakes.
        hold.notify("T", 0, 5, Some(message::tags::tags_code(Some("A"))), None);
        assert_eq!(rx.recv().await, Some(5));
        assert_eq!(hold.held(), 2);
        // The 100 ms pull times out on its own.
        let started = Instant::now();
        assert_eq!(rx.recv().await, Some(0));
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(hold.held(), 1);
        hold.check_max_offset("T", 0, 6);
        assert_eq!(rx.recv().await, Some(5));
        assert_eq!(hold.held(), 0);
    }

    #[tokio::test]
    async fn a_held_sql92_pull_wakes_only_for_a_matching_message() {
        let hold = Arc::new(PullHold::default());
        let (tx, mut rx) = mpsc::unbounded_channel();
        let _tasks = hold.start(
            move |p| {
                let _ = tx.send(p.offset.unwrap_or(u64::MAX));
            },
            |_, _| 0,
        );
        hold.suspend("T", 0, held_sql(3, "a > 5 AND TAGS = 'x'"), 60_000);
        let props = |tags: &str, a: &str| message::properties::build([("TAGS", tags), ("a", a)]);
        for (tags, a) in [("x", "1"), ("y", "9"), ("x", "q")] {
            hold.notify(
                "T",
                0,
                3,
                Some(message::tags::tags_code(Some(tags))),
                Some(&props(tags, a)),
            );
        }
        assert_eq!(hold.held(), 1);
        hold.notify("T", 0, 3, Some(0), Some(&props("x", "9")));
        assert_eq!(rx.recv().await, Some(3));
        assert_eq!(hold.held(), 0);
        // Without properties (as the periodic sweep checks) any arrival wakes it.
        hold.suspend("T", 0, held_sql(3, "a > 5"), 60_000);
        hold.notify("T", 0, 3, None, None);
        assert_eq!(rx.recv().await, Some(3));
    }
}
