//! Wiring of a running broker: the remoting server with the broker processor, the
//! registration loop, housekeeping (client expiry, stats sampling, offset flushes),
//! and the clean shutdown (unregister, flush offsets, close the store).
//!
//! `run` takes a bound listener and a shutdown future, so tests bind port 0 in
//! process and stop the broker without signals.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use remoting::RemotingCommand;
use remoting::heap::{StormTrim, release_heap};
use remoting::server::{self, ConnectionListener, Dispatcher, Processor, ServerConfig};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{error, info, warn};

use crate::broker::{Broker, BrokerError};
use crate::filter::ConsumerFilters;
use crate::grpc::GrpcEndpoint;
use crate::processor::{self, BrokerProcessor, pull};
use crate::pull_hold::PullHold;
use crate::role::Role;
use store::{DispatchListener, DispatchRequest};

/// How often a slave that does not know its master yet registers again to learn it.
const SLAVE_MASTER_POLL: Duration = Duration::from_secs(2);

/// Clients without a heartbeat for this long are dropped (`channelExpiredTimeout`).
const CLIENT_EXPIRY_MS: i64 = 120_000;

/// A broker with every part its role needs up (ports bound, HA service running),
/// ready to [`serve`](Self::serve).
pub struct Started {
    role: Arc<Role>,
    listener: TcpListener,
    vip_channel: Option<TcpListener>,
    grpc: Option<GrpcEndpoint>,
    on_ready: Option<OnReady>,
}

/// Called once the broker serves and has made its first registration.
type OnReady = Box<dyn FnOnce() + Send>;

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("listener", &self.listener)
            .field("vip_channel", &self.vip_channel)
            .field("grpc", &self.grpc)
            .finish_non_exhaustive()
    }
}

/// Starts the parts of `broker` its role needs before it may answer anything: the HA
/// service (a master's listener on `haListenPort`, a slave's client). A part that
/// cannot start stops the broker before it serves: a SYNC_MASTER without its HA
/// listener would answer every send SLAVE_NOT_AVAILABLE at best, and an operator must
/// hear about a port conflict at start, not from producers.
///
/// # Errors
/// A part cannot start; the store is shut down cleanly first.
pub fn start(
    broker: Arc<Broker>,
    listener: TcpListener,
    vip_channel: Option<TcpListener>,
) -> Result<Started, BrokerError> {
    let replication = if broker.role().is_master() {
        broker.replication.start_master()
    } else {
        broker
            .replication
            .start_slave(broker.replication.config().ha_master_address.clone())
    };
    if let Err(e) = replication {
        if let Err(close) = broker.store.shutdown() {
            warn!(error = %close, "store shutdown after a failed start");
        }
        return Err(BrokerError::Replication(e));
    }
    let role = match Role::new(Arc::clone(&broker)) {
        Ok(role) => role,
        Err(e) => {
            broker.replication.stop();
            if let Err(close) = broker.store.shutdown() {
                warn!(error = %close, "store shutdown after a failed start");
            }
            return Err(BrokerError::Store(e));
        }
    };
    Ok(Started {
        role,
        listener,
        vip_channel,
        grpc: None,
        on_ready: None,
    })
}

/// Serves `broker` on `listener` until `shutdown` resolves, then shuts down cleanly.
///
/// Logs `listening on <addr>` once serving (tests wait for that line).
///
/// # Errors
/// As [`start`].
pub async fn run(
    broker: Arc<Broker>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<(), BrokerError> {
    run_with_vip_channel(broker, listener, None, shutdown).await
}

/// [`run`], also answering on `vip_channel` (the same processors) while it serves.
///
/// # Errors
/// As [`start`].
pub async fn run_with_vip_channel(
    broker: Arc<Broker>,
    listener: TcpListener,
    vip_channel: Option<TcpListener>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), BrokerError> {
    start(broker, listener, vip_channel)?.serve(shutdown).await;
    Ok(())
}

impl Started {
    /// The broker's role, and through it the broker.
    #[must_use]
    pub fn role(&self) -> &Arc<Role> {
        &self.role
    }

    /// Also serves the gRPC endpoint `grpc` (local mode), from when the broker serves until
    /// it shuts down.
    #[must_use]
    pub fn with_grpc(mut self, grpc: Option<GrpcEndpoint>) -> Self {
        self.grpc = grpc;
        self
    }

    /// Calls `ready` once the broker serves and its first registration with the name
    /// servers was answered (or failed): as RocketMQ's broker, which registers before it
    /// says "boot success", so a client routed by the name server finds it.
    #[must_use]
    pub fn on_ready(mut self, ready: impl FnOnce() + Send + 'static) -> Self {
        self.on_ready = Some(Box::new(ready));
        self
    }

    /// Serves until `shutdown` resolves, then shuts down cleanly.
    ///
    /// Logs `listening on <addr>` once serving and registered (tests wait for that line).
    pub async fn serve(self, shutdown: impl Future<Output = ()>) {
        let Started {
            role,
            listener,
            vip_channel,
            grpc,
            on_ready,
        } = self;
        serve(role, listener, vip_channel, grpc, on_ready, shutdown).await;
    }
}

/// The request handler of the broker of `role`: what its listeners serve, and what an
/// in-process client (`remoting::local::LocalClient`, the gRPC endpoint's local mode)
/// calls.
#[must_use]
pub fn dispatcher(role: &Arc<Role>) -> Dispatcher {
    let processor = Arc::new(BrokerProcessor::new(Arc::clone(role)));
    let mut dispatcher = Dispatcher::new();
    let as_processor: Arc<dyn Processor> = processor.clone();
    dispatcher.set_default(as_processor);
    let as_listener: Arc<dyn ConnectionListener> = processor;
    dispatcher.add_listener(as_listener);
    if let Some(observer) = role.broker().metrics.rpc_observer() {
        dispatcher.set_observer(observer);
    }
    dispatcher
}

async fn serve(
    role: Arc<Role>,
    listener: TcpListener,
    vip_channel: Option<TcpListener>,
    grpc: Option<GrpcEndpoint>,
    on_ready: Option<OnReady>,
    shutdown: impl Future<Output = ()>,
) {
    let broker = Arc::clone(role.broker());
    let config = broker.config().clone();
    let server_config = ServerConfig {
        max_frame_len: config.frame_max_length,
        idle_timeout: config.idle_timeout(),
        ..ServerConfig::default()
    };
    let dispatcher = dispatcher(&role);

    let pull_tasks = start_long_polling(&role);
    role.timer().start_enqueue();
    role.start();
    let (stop_tx, stop_rx) = watch::channel(false);
    let (registered_tx, registered_rx) = tokio::sync::oneshot::channel();
    let registration = tokio::spawn(registration_loop(
        Arc::clone(&role),
        registered_tx,
        stop_rx.clone(),
    ));
    let housekeeping = tokio::spawn(housekeeping(Arc::clone(&broker), stop_rx.clone()));
    let slave_sync = tokio::spawn(crate::slave_sync::run(
        Arc::clone(&broker),
        Arc::clone(role.timer()),
        stop_rx,
    ));

    // Connections wait in the listener's backlog meanwhile; the call is bounded by the
    // name server client's timeout.
    let _ = registered_rx.await;
    if let Some(ready) = on_ready {
        ready();
    }
    if let Ok(addr) = listener.local_addr() {
        info!(
            broker = %config.broker_name,
            id = config.broker_id,
            role = config.broker_role.name(),
            store_host = %broker.store_host(),
            "listening on {addr}"
        );
    }
    let vip = vip_channel.map(|fast| {
        if let Ok(addr) = fast.local_addr() {
            info!("VIP channel listening on {addr}");
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(server::run(
            fast,
            dispatcher.clone(),
            server_config.clone(),
            async move {
                let _ = stopped.await;
            },
        ));
        (stop, task)
    });
    // Last: the broker serves (its listener is up, its role's services run).
    let grpc = grpc.map(|endpoint| {
        let handler: Arc<dyn remoting::connection::RequestHandler> = Arc::new(dispatcher.clone());
        endpoint.serve(&role, handler)
    });
    server::run(listener, dispatcher, server_config, shutdown).await;
    // First to stop: nothing may reach the broker in-process once it shuts down.
    if let Some(grpc) = grpc {
        grpc.stop().await;
    }
    if let Some((stop, task)) = vip {
        let _ = stop.send(());
        let _ = task.await;
    }

    stop_tx.send_replace(true);
    role.stop();
    role.timer().shutdown();
    broker.replication.stop();
    for task in pull_tasks {
        task.abort();
    }
    let _ = registration.await;
    let _ = housekeeping.await;
    let _ = slave_sync.await;
    broker.namesrv.unregister(&broker.identity()).await;
    if let Err(e) = broker.offsets.flush() {
        error!(error = %e, "cannot persist consumer offsets");
    }
    if let Err(e) = broker.order_info.flush() {
        error!(error = %e, "cannot persist the orderly pop batches");
    }
    if let Err(e) = broker.topics.persist() {
        error!(error = %e, "cannot persist topics");
    }
    if let Err(e) = broker.store.shutdown() {
        error!(error = %e, "store shutdown failed");
    }
    info!("broker stopped");
}

/// Wires long polling: dispatch wakes held pulls and pops, woken ones run again.
fn start_long_polling(role: &Arc<Role>) -> Vec<tokio::task::JoinHandle<()>> {
    let broker = role.broker();
    let hold = Arc::clone(&broker.pull_hold);
    if broker.config().filter_match_index_enable {
        // Before the pulls it may wake, so they find the bits.
        broker
            .store
            .add_dispatch_listener(Arc::new(IndexFilters(Arc::clone(&broker.filters))));
    }
    broker
        .store
        .add_dispatch_listener(Arc::new(WakePulls(Arc::clone(&hold))));
    let for_rerun = Arc::clone(broker);
    let pop = Arc::clone(role.pop());
    let for_offsets = Arc::clone(broker);
    hold.start(
        move |held| {
            if held.request.code() == remoting::RequestCode::Notification.code() {
                let response = processor::pop_info::rerun_notification(&pop, &held);
                answer_held(pop.broker(), &held, response);
            } else if held.offset.is_none() {
                rerun_pop(&pop, held);
            } else if let Some(response) =
                pull::execute(&for_rerun, &held.channel, &held.request, false)
            {
                answer_held(&for_rerun, &held, response);
            }
        },
        move |topic, queue_id| for_offsets.store.max_offset_in_queue(topic, queue_id),
    )
}

/// Answers a held request; its latency counts from when it was held.
fn answer_held(broker: &Broker, held: &crate::pull_hold::HeldPull, response: RemotingCommand) {
    let code = response.code();
    let sent = held
        .channel
        .send_late(response.answering(&held.request))
        .is_ok();
    broker
        .metrics
        .held_answered(held.request.code(), code, held.since.elapsed(), sent);
}

/// Runs a woken pop again: answered now, or held again
/// (it found nothing before its deadline).
fn rerun_pop(pop: &Arc<crate::pop::PopService>, held: crate::pull_hold::HeldPull) {
    match processor::pop::execute(pop, &held.channel, &held.request) {
        processor::pop::Popped::Now(response) => answer_held(pop.broker(), &held, response),
        processor::pop::Popped::Held => {}
    }
}

/// The dispatch listener that fills the match bits of registered SQL92 filters (it
/// holds the filters only: the store holds its listeners).
#[derive(Debug)]
struct IndexFilters(Arc<ConsumerFilters>);

impl DispatchListener for IndexFilters {
    fn on_dispatch(&self, d: &DispatchRequest<'_>) {
        if store::recovery::takes_queue_offset(d.sys_flag) {
            self.0
                .on_dispatch(d.topic, d.queue_id, d.queue_offset, d.properties);
        }
    }
}

/// The dispatch listener that wakes held pulls.
#[derive(Debug)]
struct WakePulls(Arc<PullHold>);

impl DispatchListener for WakePulls {
    fn on_dispatch(&self, d: &DispatchRequest<'_>) {
        self.0.notify(
            d.topic,
            d.queue_id,
            d.queue_offset,
            Some(d.tags_code),
            Some(d.properties),
        );
    }
}

/// Registers at once (then says so on `first_round`), then every
/// `registerNameServerPeriod` with the whole topic table and, whenever topics change, with
/// the changed ones.
async fn registration_loop(
    role: Arc<Role>,
    first_round: tokio::sync::oneshot::Sender<()>,
    mut stop: watch::Receiver<bool>,
) {
    let mut first_round = Some(first_round);
    let broker = role.broker();
    let changed = broker.topics.changed();
    let mut following: Option<String> = None;
    let mut full = true;
    loop {
        // A fenced master stays out of the routes (its successor is in them).
        let registered = if role.is_fenced() {
            None
        } else {
            broker
                .namesrv
                .register(&broker.identity(), broker.topics.registration_table(full))
                .await
        };
        if let Some(done) = first_round.take() {
            let _ = done.send(());
        }
        // A slave follows the master the name server knows, unless haMasterAddress pins one
        // (read after the registration: a role switch may have happened meanwhile).
        let follows_name_server =
            !broker.role().is_master() && broker.replication.config().ha_master_address.is_none();
        if let Some(reg) = registered {
            if !reg.order_topics.is_empty() {
                broker.topics.update_order_topics(&reg.order_topics);
            }
            // A new master is checked for divergence first.
            if follows_name_server {
                if let (Some(master), Some(ha_addr)) = (&reg.master_addr, &reg.ha_server_addr) {
                    // Not followed (unreachable, or a tail it cannot cut): asked again at
                    // the next registration.
                    if following.as_deref() != Some(master.as_str())
                        && role.follow(master, ha_addr).await
                    {
                        following = Some(master.clone());
                        // Copy the new master's tables now, not a SYNC_INTERVAL later: a
                        // slave must know its topics before it serves them (RocketMQ 4.9's
                        // first copy comes 3 s after start).
                        broker.sync_now.notify_one();
                    }
                }
            } else {
                following = None;
            }
        } else if !broker.namesrv.addrs().is_empty() {
            warn!("no name server accepted the registration");
        }
        let mut period = Duration::from_millis(broker.config().register_name_server_period);
        // A slave that has not learned its master yet (it registered before its master
        // did) asks again soon rather than a whole period later, as RocketMQ would.
        if follows_name_server && following.is_none() {
            period = period.min(SLAVE_MASTER_POLL);
        }
        // A name server that missed this round gets the whole table next time.
        let missed = broker.namesrv.take_missed();
        full = tokio::select! {
            () = tokio::time::sleep(period) => true,
            () = changed.notified() => missed,
            _ = stop.wait_for(|s| *s) => return,
        };
    }
}

/// Once a second: stats, and after a storm of closed connections (remoting or HA)
/// the freed heap goes back to the OS. Every 10 s: drop clients without heartbeat.
/// Every `flushConsumerOffsetInterval`: persist consumer offsets.
async fn housekeeping(broker: Arc<Broker>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut seconds: u64 = 0;
    let mut storm = StormTrim::default();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        seconds += 1;
        broker.stats.sample(crate::clock::now_ms());
        if storm.tick(remoting::connection::closed_total() + ha::closed_connections()) {
            release_heap().await;
        }
        if seconds % 10 == 0 {
            broker.consumers.scan_not_active(CLIENT_EXPIRY_MS);
            broker.producers.scan_not_active(CLIENT_EXPIRY_MS);
            let clean_after = broker.config().filter_data_clean_time_span;
            broker.filters.sweep(
                |group| broker.consumers.group(group).is_some(),
                crate::clock::now_ms(),
                clean_after,
            );
        }
        let flush_every = (broker.config().flush_consumer_offset_interval / 1000).max(1);
        if seconds % flush_every == 0 {
            if let Err(e) = broker.offsets.flush() {
                error!(error = %e, "cannot persist consumer offsets");
            }
            if let Err(e) = broker.order_info.flush() {
                error!(error = %e, "cannot persist the orderly pop batches");
            }
        }
    }
}
