//! What a slave copies from its master besides the CommitLog (RocketMQ's
//! SlaveSynchronize): topic configs, consumer offsets, delay offsets, the timer
//! checkpoint and metrics, and subscription groups, every `SYNC_INTERVAL`, from the master address the name server reported,
//! so a slave promoted to master serves with the master's tables.

use std::sync::Arc;
use std::time::Duration;

use remoting::protocol::subscription::{
    ConsumerOffsetSerializeWrapper, DelayOffsetSerializeWrapper, SubscriptionGroupWrapper,
};
use remoting::protocol::topic::TopicConfigSerializeWrapper;
use remoting::{RemotingClient, RemotingCommand, RequestCode, ResponseCode, fastjson};
use serde::de::DeserializeOwned;
use store::timer::checkpoint::TimerCheckpoint;
use tokio::sync::watch;
use tracing::{debug, warn};

use crate::broker::Broker;
use crate::timer::TimerService;
use crate::timer::metrics::TimerMetricsWrapper;

/// How often a slave copies its master's tables (the issue asks for 60 s; RocketMQ 4.9
/// uses 10 s). Learning a (new) master from the name server and a role switch also
/// trigger a copy at once through `sync_now`.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(60);
const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// The master's timer read time is copied this often: after a failover the promoted
/// slave re-delivers the timers of at most this long (at least once, never lost).
pub const TIMER_SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// Fetches one table from the master.
async fn fetch<T: DeserializeOwned>(
    client: &RemotingClient,
    master: &str,
    code: RequestCode,
) -> Option<T> {
    let response = match client
        .invoke(master, RemotingCommand::request(code), CALL_TIMEOUT)
        .await
    {
        Ok(r) => r,
        Err(e) => {
            warn!(master, code = code.name(), error = %e, "slave sync call failed");
            return None;
        }
    };
    if response.code() != ResponseCode::Success.code() {
        warn!(master, code = code.name(), answer = response.code(), remark = ?response.remark(), "slave sync refused");
        return None;
    }
    match fastjson::from_slice(&response.body.to_bytes()) {
        Ok(table) => Some(table),
        Err(e) => {
            warn!(master, code = code.name(), error = %e, "slave sync body does not parse");
            None
        }
    }
}

/// The master's timer checkpoint (its read time: where a promoted slave delivers from).
async fn fetch_timer_checkpoint(client: &RemotingClient, master: &str) -> Option<TimerCheckpoint> {
    let code = RequestCode::GetTimerCheckPoint;
    let response = client
        .invoke(master, RemotingCommand::request(code), CALL_TIMEOUT)
        .await
        .map_err(|e| warn!(master, code = code.name(), error = %e, "slave sync call failed"))
        .ok()?;
    if response.code() != ResponseCode::Success.code() {
        debug!(
            master,
            answer = response.code(),
            "master has no timer checkpoint"
        );
        return None;
    }
    TimerCheckpoint::decode(&response.body.to_bytes())
}

/// Copies every table once from `master`. Returns how many tables were copied.
pub async fn sync_all(
    broker: &Broker,
    timer: &TimerService,
    client: &RemotingClient,
    master: &str,
) -> usize {
    let mut copied = 0;
    if let Some(t) =
        fetch::<TopicConfigSerializeWrapper>(client, master, RequestCode::GetAllTopicConfig).await
    {
        broker.topics.replace_from_master(t);
        copied += 1;
    }
    if let Some(t) =
        fetch::<ConsumerOffsetSerializeWrapper>(client, master, RequestCode::GetAllConsumerOffset)
            .await
    {
        broker.offsets.replace_from_master(t);
        copied += 1;
    }
    if let Some(t) =
        fetch::<DelayOffsetSerializeWrapper>(client, master, RequestCode::GetAllDelayOffset).await
    {
        broker.delay_offsets.replace_from_master(&t);
        copied += 1;
    }
    if let Some(cp) = fetch_timer_checkpoint(client, master).await {
        timer.follow_master(&cp);
        copied += 1;
    }
    if let Some(t) =
        fetch::<TimerMetricsWrapper>(client, master, RequestCode::GetTimerMetrics).await
    {
        timer.metrics().replace_from_master(t);
        copied += 1;
    }
    if let Some(t) = fetch::<SubscriptionGroupWrapper>(
        client,
        master,
        RequestCode::GetAllSubscriptiongroupConfig,
    )
    .await
    {
        broker.groups.replace_from_master(t);
        copied += 1;
    }
    if let Some(t) = fetch::<remoting::protocol::pop::MessageRequestModeSerializeWrapper>(
        client,
        master,
        RequestCode::GetAllMessageRequestMode,
    )
    .await
    {
        broker.request_modes.replace_from_master(t);
        copied += 1;
    }
    debug!(master, copied, "slave sync");
    copied
}

/// Runs on every broker; copies while the broker is a slave with a known master.
pub async fn run(broker: Arc<Broker>, timer: Arc<TimerService>, mut stop: watch::Receiver<bool>) {
    let client = broker.inner_client();
    let mut next_full = tokio::time::Instant::now();
    let mut full = true;
    loop {
        if !broker.role().is_master() {
            if let Some(master) = broker.namesrv.last().master_addr {
                if full {
                    sync_all(&broker, &timer, &client, &master).await;
                    next_full = tokio::time::Instant::now() + SYNC_INTERVAL;
                } else if let Some(cp) = fetch_timer_checkpoint(&client, &master).await {
                    timer.follow_master(&cp);
                }
            }
        }
        full = tokio::select! {
            () = tokio::time::sleep(TIMER_SYNC_INTERVAL) => tokio::time::Instant::now() >= next_full,
            () = broker.sync_now.notified() => true,
            _ = stop.wait_for(|s| *s) => return,
        };
    }
}
