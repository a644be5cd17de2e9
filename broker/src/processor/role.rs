//! Role switching for failover drills (sluice's private codes, documented in
//! `remoting::code`): SLUICE_SWITCH_ROLE (40001) turns a slave into the master or a
//! master into a slave of a given master; SLUICE_HA_STATUS (40002) reports the role,
//! the log end, the promotion point and the HA state.
//!
//! Slave → master: stop the HA client, finish dispatching what was received (a
//! partial record at the tail is cut), record the promotion point, take writes,
//! start the HA accept service, the schedule service and the transaction check-back
//! service, re-register as brokerId 0.
//! Master → slave: stop taking writes, stop both services, cut the log back to
//! the new master's promotion point (bytes past it were never replicated there), start
//! the HA client, re-register with a slave id. Both are idempotent, and switches are
//! serialised, so racing requests leave one consistent role and at most one schedule
//! service running.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use remoting::server::Reply;
use remoting::{RemotingClient, RemotingCommand, RequestCode, ResponseCode, fastjson};
use serde::{Deserialize, Serialize};
use store::PhyOffset;
use tracing::{error, info, warn};

use super::{Refusal, success};
use crate::broker::Broker;
use crate::config::BrokerRole;

/// How long a promotion waits for dispatch to catch up with what was replicated.
const DISPATCH_WAIT: Duration = Duration::from_secs(5);
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// SLUICE_HA_STATUS body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct HaStatusBody {
    /// ASYNC_MASTER | SYNC_MASTER | SLAVE.
    pub role: String,
    /// Broker id.
    pub broker_id: i64,
    /// CommitLog max offset.
    pub max_offset: u64,
    /// Where the log ended when this broker was promoted (a new master), if it was.
    pub promoted_at_offset: Option<u64>,
    /// Id of that promotion.
    pub promotion_epoch: Option<u64>,
    /// `ip:port` slaves connect to.
    pub ha_address: String,
    /// Highest offset a slave acknowledged (masters).
    pub slave_ack_offset: Option<u64>,
    /// Connected slaves (masters).
    pub slaves: Vec<String>,
    /// Master HA address and whether connected (slaves).
    pub master: Option<String>,
    /// Whether the HA client is connected (slaves).
    pub connected: bool,
    /// Whether this master is fenced: read-only for a slave's promotion (see [`fence`]).
    #[serde(default)]
    pub fenced: bool,
}

/// SLUICE_SWITCH_ROLE answer body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SwitchResult {
    /// The role now.
    pub role: String,
    /// The broker id now.
    pub broker_id: i64,
    /// Where the log was cut, if it was.
    pub truncated_to: Option<u64>,
    /// Whether the role changed (false: it already had it).
    pub changed: bool,
    /// The old master this promotion fenced (made read-only and caught up with) first:
    /// a planned switchover. `None`: it could not be reached (a failover).
    pub fenced: Option<String>,
    /// How long the switch took, ms.
    pub took_ms: u64,
}

/// SLUICE_HA_STATUS.
pub fn ha_status(broker: &Broker) -> RemotingCommand {
    let config = broker.config();
    let mut body = HaStatusBody {
        role: config.broker_role.name().to_owned(),
        broker_id: config.broker_id,
        max_offset: broker.store.commit_log().max_offset().0,
        promoted_at_offset: broker.replication.promoted_at(),
        promotion_epoch: broker.replication.promotion_epoch(),
        ha_address: format!(
            "{}:{}",
            config.broker_ip2(),
            broker.replication.listen_addr().port()
        ),
        fenced: broker.fenced.load(Ordering::Acquire),
        ..HaStatusBody::default()
    };
    drop(config);
    match broker.replication.status() {
        ha::HaStatus::Master(m) => {
            body.slave_ack_offset = Some(m.push2_slave_max_offset);
            body.slaves = m.slaves.iter().map(|s| s.addr.to_string()).collect();
        }
        ha::HaStatus::Slave(c) => {
            body.master = c.master_addr.clone();
            body.connected = c.connected.is_some();
        }
        _ => {}
    }
    match fastjson::to_vec(&body, fastjson::KeyStyle::Fastjson) {
        Ok(bytes) => success().with_body(bytes),
        Err(e) => Refusal::from(e).into_response(),
    }
}

/// The `role` a promoting slave sends its master first (sluice's, broker to broker).
const FENCE: &str = "FENCE";
/// How long a promotion waits for its log to reach the fenced master's end.
const CATCH_UP_WAIT: Duration = Duration::from_secs(10);

/// SLUICE_SWITCH_ROLE. ExtFields: `role` = MASTER | SLAVE; for MASTER optionally
/// `brokerRole` = SYNC_MASTER | ASYNC_MASTER; for SLAVE `masterAddress` (the new
/// master's main `ip:port`) and optionally `haMasterAddress` and `brokerId`. `role` =
/// FENCE is what a promoting slave asks of its master (see [`fence`]).
pub fn switch_role(broker: &Arc<Broker>, request: &RemotingCommand) -> Reply {
    let target = request.ext("role").unwrap_or("").to_ascii_uppercase();
    let broker = Arc::clone(broker);
    let request = request.clone();
    Reply::later(async move {
        // One switch at a time.
        let _guard = broker.switch_lock.lock().await;
        let started = Instant::now();
        let outcome = match target.as_str() {
            "MASTER" => to_master(&broker, &request).await,
            "SLAVE" => to_slave(&broker, &request).await,
            FENCE => return Some(fence(&broker).await),
            other => Err(Refusal::new(
                ResponseCode::InvalidParameter,
                format!("role must be MASTER or SLAVE, not '{other}'"),
            )),
        };
        Some(match outcome {
            Ok(mut result) => {
                result.took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                info!(role = %result.role, id = result.broker_id, changed = result.changed, took_ms = result.took_ms, "role switch done");
                match fastjson::to_vec(&result, fastjson::KeyStyle::Fastjson) {
                    Ok(bytes) => success().with_body(bytes),
                    Err(e) => Refusal::from(e).into_response(),
                }
            }
            Err(refusal) => refusal.into_response(),
        })
    })
}

/// FENCE: a master whose slave is being promoted stops taking writes (puts in progress
/// finish first) and stops its schedule and check-back services, but keeps its role and
/// its HA service, so that the slave catches up with everything it acknowledged before
/// taking over. Without this, a master would go on acknowledging sends between its
/// slave's promotion and its own demotion, and the demotion would cut them: lost
/// SEND_OKs in a planned switchover. `switchRole -r MASTER` on it takes writes again.
/// Answers its HA status: `maxOffset` is the end the slave must reach.
async fn fence(broker: &Arc<Broker>) -> RemotingCommand {
    if !broker.role().is_master() {
        return Refusal::new(
            ResponseCode::InvalidParameter,
            "only a master can be fenced",
        )
        .into_response();
    }
    if let Err(e) = broker.store.set_writable(false) {
        return Refusal::system(e.to_string()).into_response();
    }
    broker.schedule.stop();
    broker.transactions.stop();
    // Out of the routes too: two brokers registered as the master would take turns in
    // them at every registration.
    broker.fenced.store(true, Ordering::Release);
    broker.namesrv.unregister(&broker.identity()).await;
    warn!(
        max_offset = broker.store.commit_log().max_offset().0,
        "fenced for the promotion of a slave: no writes until demoted or switched to master again"
    );
    ha_status(broker)
}

/// Before a promotion: fences the master this slave follows, if it can be reached, and
/// waits until this broker holds everything it had; returns its address and role.
/// `Ok(None)`: no master to fence (it
/// is gone — a failover); `Err` after a fence the log did not catch up with (the master
/// was told to take writes again).
async fn fence_master(broker: &Arc<Broker>) -> Result<Option<(String, String)>, String> {
    let Some(master) = broker.namesrv.last().master_addr else {
        return Ok(None);
    };
    let mut request = RemotingCommand::request(RequestCode::SluiceSwitchRole);
    request.header.ext_fields.insert("role", FENCE);
    let client = RemotingClient::default();
    let answer = client.invoke(&master, request, CALL_TIMEOUT).await;
    client.close_all();
    let (end, role) = match answer {
        Ok(r) if r.code() == ResponseCode::Success.code() => {
            match fastjson::from_slice::<HaStatusBody>(&r.body.to_bytes()) {
                Ok(status) => (status.max_offset, status.role),
                Err(e) => return Err(format!("unreadable answer to FENCE from {master}: {e}")),
            }
        }
        Ok(r) => {
            warn!(master, code = r.code(), remark = ?r.remark(), "the master cannot be fenced; promoting without it");
            return Ok(None);
        }
        Err(e) => {
            info!(master, error = %e, "the master is not reachable; promoting without fencing it");
            return Ok(None);
        }
    };
    let store = Arc::clone(&broker.store);
    let caught_up = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + CATCH_UP_WAIT;
        let watch = store.commit_log().readable_watch();
        // A wait can end early (interrupted); only the deadline ends this one.
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            if watch.wait_blocking(end, left) >= end {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    })
    .await
    .unwrap_or(false);
    if !caught_up {
        unfence(&master, &role).await;
        return Err(format!(
            "did not catch up with the fenced master {master} (offset {end}) within {CATCH_UP_WAIT:?}"
        ));
    }
    info!(master, end, "old master fenced, log caught up with it");
    Ok(Some((master, role)))
}

/// Undoes a fence: the old master takes writes again in its `role` (`-r MASTER` on a
/// master).
async fn unfence(master: &str, role: &str) {
    let mut request = RemotingCommand::request(RequestCode::SluiceSwitchRole);
    request.header.ext_fields.insert("role", "MASTER");
    request.header.ext_fields.insert("brokerRole", role);
    let client = RemotingClient::default();
    match client.invoke(master, request, CALL_TIMEOUT).await {
        Ok(r) if r.code() == ResponseCode::Success.code() => {
            info!(master, "fenced master takes writes again");
        }
        Ok(r) => {
            error!(master, remark = ?r.remark(), "the fenced master refused to take writes again");
        }
        Err(e) => error!(master, error = %e, "cannot tell the fenced master to take writes again"),
    }
    client.close_all();
}

async fn to_master(
    broker: &Arc<Broker>,
    request: &RemotingCommand,
) -> Result<SwitchResult, Refusal> {
    let role = match request
        .ext("brokerRole")
        .map(str::to_ascii_uppercase)
        .as_deref()
    {
        Some("SYNC_MASTER") => BrokerRole::SYNC_MASTER,
        Some("ASYNC_MASTER") => BrokerRole::ASYNC_MASTER,
        Some(other) => {
            return Err(Refusal::new(
                ResponseCode::InvalidParameter,
                format!("unknown brokerRole '{other}'"),
            ));
        }
        None if broker.start_role().is_master() => broker.start_role(),
        None => broker.config().master_role_on_switch,
    };
    let current = broker.role();
    let current_id = broker.config().broker_id;
    if current.is_master() && current_id == 0 {
        return master_to_master(broker, current, role).await;
    }
    info!(
        from = current.name(),
        to = role.name(),
        "switching to master"
    );
    let still = |why: String| {
        Refusal::system(format!(
            "cannot switch to {}: {why}; still {} (brokerId {current_id}), read-only",
            role.name(),
            current.name()
        ))
    };
    // Everything that can fail comes before anything a failure would have to undo: the
    // HA port first (a slave whose port is taken stays a read-only slave).
    let listener = broker
        .replication
        .bind()
        .map_err(|e| still(e.to_string()))?;
    // A planned switchover: the old master stops acknowledging and this log catches up
    // with it, so nothing it acknowledged is cut when it is demoted.
    let fenced = fence_master(broker).await.map_err(still)?;
    let following = broker.replication.followed_master();
    broker.replication.stop();
    let resume_following = || async {
        if let Err(e) = broker.replication.start_slave(following.clone()) {
            warn!(error = %e, "cannot restart the HA client after a failed switch");
        }
        if let Some((master, role)) = &fenced {
            unfence(master, role).await;
        }
    };
    let store = Arc::clone(&broker.store);
    let truncated = tokio::task::spawn_blocking(move || -> Result<Option<u64>, String> {
        // Whatever was received is dispatched; a record cut short by the old master's
        // death is removed, so the log ends on a record boundary.
        store.wait_dispatched(DISPATCH_WAIT);
        let end = store.reput_from();
        if end < store.commit_log().max_offset().0 {
            store
                .truncate_dirty(PhyOffset(end))
                .map_err(|e| e.to_string())?;
            return Ok(Some(end));
        }
        Ok(None)
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|r| r.map_err(|e| format!("cannot cut the partial tail: {e}")));
    let truncated = match truncated {
        Ok(t) => t,
        Err(why) => {
            resume_following().await;
            return Err(still(why));
        }
    };
    if let Err(e) = broker.replication.start_master_on(listener) {
        resume_following().await;
        return Err(still(format!("cannot start the HA service: {e}")));
    }
    // The store takes writes only once the role that acknowledges them is in place.
    let promoted_at = broker.store.commit_log().max_offset().0;
    let before = broker.replication.set_promoted_at(Some(promoted_at));
    broker.update_config(|c| {
        c.broker_role = role;
        c.broker_id = 0;
    });
    if let Err(e) = broker.store.set_writable(true) {
        broker.update_config(|c| {
            c.broker_role = current;
            c.broker_id = current_id;
        });
        broker.replication.restore_promotion(before);
        resume_following().await;
        return Err(still(format!("the store cannot take writes: {e}")));
    }
    broker.schedule.start(broker);
    broker.transactions.start(broker);
    register(broker).await;
    info!(promoted_at, fenced = ?fenced, "now master");
    let mut done = result(broker, truncated, true);
    done.fenced = fenced.map(|(master, _)| master);
    Ok(done)
}

/// A master asked to be a master: the HA service must run (started if it does not),
/// and the role may change between SYNC_MASTER and ASYNC_MASTER.
async fn master_to_master(
    broker: &Arc<Broker>,
    current: BrokerRole,
    role: BrokerRole,
) -> Result<SwitchResult, Refusal> {
    broker.replication.start_master().map_err(|e| {
        Refusal::system(format!(
            "{} without a running HA service: {e}",
            current.name()
        ))
    })?;
    let changed = current != role;
    if changed {
        info!(
            from = current.name(),
            to = role.name(),
            "changing master role"
        );
        broker.update_config(|c| c.broker_role = role);
    }
    // A fenced master (whose slave's promotion did not happen) takes writes again.
    broker
        .store
        .set_writable(true)
        .map_err(|e| Refusal::system(format!("the store cannot take writes: {e}")))?;
    let was_fenced = broker.fenced.swap(false, Ordering::AcqRel);
    broker.schedule.start(broker);
    broker.transactions.start(broker);
    if changed || was_fenced {
        register(broker).await;
    }
    Ok(result(broker, None, changed))
}

async fn to_slave(
    broker: &Arc<Broker>,
    request: &RemotingCommand,
) -> Result<SwitchResult, Refusal> {
    let master = request
        .ext("masterAddress")
        .filter(|a| !a.is_empty())
        .map(str::to_owned);
    let broker_id = match request.ext("brokerId") {
        Some(id) => id.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
            Refusal::new(
                ResponseCode::InvalidParameter,
                format!("brokerId '{id}' must be > 0"),
            )
        })?,
        None if broker.config().broker_id > 0 => broker.config().broker_id,
        None => 1,
    };
    // Ask the new master where its log ended at promotion and where its HA port is.
    let status = match &master {
        Some(addr) => Some(fetch_status(addr).await?),
        None => None,
    };
    let ha_addr = request
        .ext("haMasterAddress")
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .or_else(|| status.as_ref().map(|s| s.ha_address.clone()));
    if ha_addr.is_none() {
        return Err(Refusal::new(
            ResponseCode::InvalidParameter,
            "switching to SLAVE needs masterAddress (the new master's ip:port) or haMasterAddress",
        ));
    }
    info!(master = ?master, ha = ?ha_addr, broker_id, "switching to slave");
    // A demotion that fails half way leaves a read-only slave, never a master: the new
    // master may already take writes, and two writable masters of one pair diverge.
    broker
        .store
        .set_writable(false)
        .map_err(|e| Refusal::system(e.to_string()))?;
    broker.schedule.stop();
    broker.transactions.stop();
    broker.update_config(|c| {
        c.broker_role = BrokerRole::SLAVE;
        c.broker_id = broker_id;
    });
    // A fenced master being demoted registers again, as the slave it now is.
    broker.fenced.store(false, Ordering::Release);
    broker.replication.set_promoted_at(None);
    // Told to follow a master that is fenced (this broker's promotion fenced it, and is
    // now undone): it is the master again, and takes writes once this one no longer does.
    if let (Some(addr), Some(s)) = (&master, status.as_ref().filter(|s| s.fenced)) {
        unfence(addr, &s.role).await;
    }
    let not_following = |why: String| {
        Refusal::system(format!(
            "now a read-only SLAVE (brokerId {broker_id}) that does not replicate: {why}"
        ))
    };
    let own_end = broker.store.commit_log().max_offset().0;
    let cut_at = status
        .as_ref()
        .and_then(|s| s.promoted_at_offset.or(Some(s.max_offset)));
    let mut truncated = None;
    if let Some(point) = cut_at.filter(|p| own_end > *p) {
        warn!(
            own_end,
            point, "cutting the tail the new master does not have"
        );
        // Nothing may read (a master's connections pushing frames) or append (a slave's
        // client) at the tail while it is cut; `start_slave` below starts the client again.
        broker.replication.stop();
        let store = Arc::clone(&broker.store);
        let cut = tokio::task::spawn_blocking(move || store.truncate_dirty(PhyOffset(point)))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| format!("cannot cut the divergent tail: {e}")));
        if let Err(why) = cut {
            register(broker).await;
            return Err(not_following(why));
        }
        truncated = Some(point);
    }
    broker
        .replication
        .set_followed_epoch(status.as_ref().and_then(|s| s.promotion_epoch));
    let started = broker.replication.start_slave(ha_addr);
    register(broker).await;
    started.map_err(|e| not_following(format!("cannot start the HA client: {e}")))?;
    broker.sync_now.notify_one();
    Ok(result(broker, truncated, true))
}

/// Registers the broker's current identity with every name server.
async fn register(broker: &Broker) {
    broker
        .namesrv
        .register(&broker.identity(), broker.topics.wrapper())
        .await;
}

/// A slave starts following `master` (main address) at `ha_addr`: first cut any tail
/// past the master's promotion point — bytes there never came from this master — then
/// point the HA client at it. Called when a slave learns a (new) master from the name
/// server, e.g. an old master restarted as the slave of its successor.
///
/// Returns whether the HA client now follows it. It does not when the master cannot be
/// asked (unreachable: asked again at the next registration) or the divergent tail
/// cannot be cut: following with it would append the master's bytes after bytes the
/// master never had. A master that answers but does not know SLUICE_HA_STATUS (an Apache
/// broker) has no promotion point to cut to; it is followed as it is.
pub async fn follow(broker: &Arc<Broker>, master: &str, ha_addr: &str) -> bool {
    let _guard = broker.switch_lock.lock().await;
    if broker.role().is_master() {
        return false;
    }
    let (point, epoch) = match ask_status(master).await {
        Ok(Some(status)) => (status.promoted_at_offset, status.promotion_epoch),
        Ok(None) => (None, None),
        Err(e) => {
            warn!(master, error = %e.remark, "cannot ask the master for its promotion point; not following it yet");
            return false;
        }
    };
    let own_end = broker.store.commit_log().max_offset().0;
    // Already following this very promotion: everything past the point came from it.
    let already = epoch.is_some() && epoch == broker.replication.followed_epoch();
    if let Some(point) = point.filter(|p| own_end > *p && !already) {
        warn!(
            own_end,
            point, master, "cutting the tail the new master does not have before following it"
        );
        broker.replication.stop();
        let store = Arc::clone(&broker.store);
        let cut = tokio::task::spawn_blocking(move || store.truncate_dirty(PhyOffset(point)))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()));
        if let Err(e) = cut {
            error!(error = %e, "cannot cut the divergent tail; not following the new master");
            return false;
        }
    }
    broker.replication.set_followed_epoch(epoch);
    if let Err(e) = broker.replication.start_slave(Some(ha_addr.to_owned())) {
        error!(error = %e, "cannot start the HA client");
        return false;
    }
    true
}

fn result(broker: &Broker, truncated_to: Option<u64>, changed: bool) -> SwitchResult {
    let c = broker.config();
    SwitchResult {
        role: c.broker_role.name().to_owned(),
        broker_id: c.broker_id,
        truncated_to,
        changed,
        fenced: None,
        took_ms: 0,
    }
}

/// SLUICE_HA_STATUS of another broker.
///
/// # Errors
/// The broker cannot be reached or answers with an error.
pub async fn fetch_status(addr: &str) -> Result<HaStatusBody, Refusal> {
    ask_status(addr).await?.ok_or_else(|| {
        Refusal::system(format!(
            "the new master {addr} does not answer SLUICE_HA_STATUS (not a sluice broker?)"
        ))
    })
}

/// SLUICE_HA_STATUS of another broker; `None` when it answers that it does not know the
/// request (an Apache RocketMQ broker).
///
/// # Errors
/// The broker cannot be reached, refuses otherwise, or answers something unreadable.
async fn ask_status(addr: &str) -> Result<Option<HaStatusBody>, Refusal> {
    let client = RemotingClient::default();
    let response = client
        .invoke(
            addr,
            RemotingCommand::request(RequestCode::SluiceHaStatus),
            CALL_TIMEOUT,
        )
        .await
        .map_err(|e| Refusal::system(format!("cannot reach the new master {addr}: {e}")))?;
    client.close_all();
    if response.code() == ResponseCode::RequestCodeNotSupported.code() {
        return Ok(None);
    }
    if response.code() != ResponseCode::Success.code() {
        return Err(Refusal::system(format!(
            "the new master {addr} refused SLUICE_HA_STATUS: {:?}",
            response.remark()
        )));
    }
    Ok(Some(fastjson::from_slice(&response.body.to_bytes())?))
}
