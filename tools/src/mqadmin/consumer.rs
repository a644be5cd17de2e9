//! Consumer group commands: updateSubGroup, consumerProgress, resetOffsetByTime.

use std::collections::BTreeMap;
use std::io::Write;

use clap::Args;
use remoting::protocol::admin::{ConsumeStats, ConsumerConnection, OffsetWrapper};
use remoting::protocol::constants::system::{RETRY_GROUP_TOPIC_PREFIX, retry_topic};
use remoting::protocol::constants::version_name;
use remoting::protocol::heartbeat::{ConsumeType, MessageQueue};
use remoting::protocol::subscription::SubscriptionGroupConfig;
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use serde::Deserialize;

use super::format::{front, subscription_group};
use super::{Common, Ctx, Tally, Target, java_bool};
use crate::admin::{master_addrs, select_addr};
use crate::client::{Client, parse_body};
use crate::error::{Result, ToolsError};
use crate::time::now_millis;
use crate::time::{human_seconds, parse_timestamp_arg};

/// `updateSubGroup`.
#[derive(Debug, Args)]
pub struct UpdateSubGroup {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// Consumer group name.
    #[arg(short = 'g', long = "groupName")]
    pub group: String,
    /// Consume enable.
    #[arg(short = 's', long = "consumeEnable", value_parser = java_bool)]
    pub consume_enable: Option<bool>,
    /// From min offset.
    #[arg(short = 'm', long = "consumeFromMinEnable", value_parser = java_bool)]
    pub consume_from_min_enable: Option<bool>,
    /// Broadcast.
    #[arg(short = 'd', long = "consumeBroadcastEnable", value_parser = java_bool)]
    pub consume_broadcast_enable: Option<bool>,
    /// Retry queue nums.
    #[arg(short = 'q', long = "retryQueueNums")]
    pub retry_queue_nums: Option<i32>,
    /// Retry max times.
    #[arg(short = 'r', long = "retryMaxTimes")]
    pub retry_max_times: Option<i32>,
    /// Consume from which broker id.
    #[arg(short = 'i', long = "brokerId")]
    pub broker_id: Option<i64>,
    /// Which broker id when consume slowly.
    #[arg(short = 'w', long = "whichBrokerWhenConsumeSlowly")]
    pub which_broker_when_consume_slowly: Option<i64>,
    /// Notify consumerId changed.
    #[arg(short = 'a', long = "notifyConsumerIdsChanged", value_parser = java_bool)]
    pub notify_consumer_ids_changed: Option<bool>,
}

impl UpdateSubGroup {
    /// The config sent: RocketMQ's defaults, except that this tool (like Java's) turns
    /// broadcast and from-min off unless asked.
    #[must_use]
    pub fn config(&self) -> SubscriptionGroupConfig {
        let mut c = SubscriptionGroupConfig::new(self.group.trim());
        c.consume_enable = self.consume_enable.unwrap_or(c.consume_enable);
        c.consume_from_min_enable = self.consume_from_min_enable.unwrap_or(false);
        c.consume_broadcast_enable = self.consume_broadcast_enable.unwrap_or(false);
        c.retry_queue_nums = self.retry_queue_nums.unwrap_or(c.retry_queue_nums);
        c.retry_max_times = self.retry_max_times.unwrap_or(c.retry_max_times);
        c.broker_id = self.broker_id.unwrap_or(c.broker_id);
        c.which_broker_when_consume_slowly = self
            .which_broker_when_consume_slowly
            .unwrap_or(c.which_broker_when_consume_slowly);
        c.notify_consumer_ids_changed_enable = self
            .notify_consumer_ids_changed
            .unwrap_or(c.notify_consumer_ids_changed_enable);
        c
    }

    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let config = self.config();
        if let Some(addr) = self.target.broker() {
            ctx.client.create_subscription_group(addr, &config).await?;
            writeln!(ctx.out, "create subscription group to {addr} success.")?;
            writeln!(ctx.out, "{}", subscription_group(&config))?;
            return Ok(());
        }
        let info = ctx.client.cluster_info().await?;
        let mut tally = Tally::default();
        for addr in master_addrs(&info, self.target.cluster())?.values() {
            let result = ctx.client.create_subscription_group(addr, &config).await;
            if tally
                .check(ctx, result, || {
                    format!("create subscription group to {addr} failed")
                })?
                .is_some()
            {
                writeln!(ctx.out, "create subscription group to {addr} success.")?;
            }
        }
        writeln!(ctx.out, "{}", subscription_group(&config))?;
        tally.finish()
    }
}

/// The consume stats of a group over every broker that serves its retry topic
/// (`DefaultMQAdminExt.examineConsumeStats`).
///
/// # Errors
/// No route for `%RETRY%group`, a broker failing, or (for all topics) no offsets at all.
pub async fn examine_consume_stats(
    client: &Client,
    group: &str,
    topic: Option<&str>,
) -> Result<ConsumeStats> {
    let addrs = group_broker_addrs(client, group).await?;
    let mut all = ConsumeStats::default();
    for addr in &addrs {
        let stats = client.consume_stats(addr, group, topic).await?;
        all.offset_table.extend(stats.offset_table);
        all.consume_tps += stats.consume_tps;
    }
    if topic.is_none() && all.offset_table.is_empty() {
        return Err(ToolsError::NotFound(format!(
            "Not found the consumer group consume stats, because return offset table is empty, maybe the consumer not consume any message (group {group})"
        )));
    }
    Ok(all)
}

/// The masters serving `%RETRY%group`; when the retry topic has no route (a group that
/// never sent a heartbeat, e.g. one whose offsets were set by resetOffsetByTime), every
/// master the name server knows.
async fn group_broker_addrs(client: &Client, group: &str) -> Result<Vec<String>> {
    match client.fetch_route(&retry_topic(group)).await {
        Ok(route) => Ok(route
            .broker_datas
            .iter()
            .filter_map(|b| b.master_addr().map(str::to_owned))
            .collect()),
        Err(ToolsError::NoRoute { .. }) => {
            let info = client.cluster_info().await?;
            Ok(info
                .broker_addr_table
                .values()
                .filter_map(|b| b.master_addr().map(str::to_owned))
                .collect())
        }
        Err(e) => Err(e),
    }
}

/// The broker to ask about a group's clients: the first one of its retry topic.
///
/// # Errors
/// No route, or no address in it.
async fn group_addr(client: &Client, group: &str) -> Result<String> {
    let route = client.route(&retry_topic(group)).await?;
    route
        .broker_datas
        .iter()
        .find_map(select_addr)
        .map(str::to_owned)
        .ok_or_else(|| ToolsError::NoRoute {
            topic: retry_topic(group),
            remark: "no broker address in the route".to_owned(),
        })
}

/// The connections of a group, from one broker of its retry topic.
///
/// # Errors
/// No route, or the broker's CONSUMER_NOT_ONLINE.
pub async fn examine_consumer_connection(
    client: &Client,
    group: &str,
) -> Result<ConsumerConnection> {
    let addr = group_addr(client, group).await?;
    client.consumer_connection(&addr, group).await
}

/// `consumerProgress`.
#[derive(Debug, Args)]
pub struct ConsumerProgress {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Consumer group name (none: every group).
    #[arg(short = 'g', long = "groupName")]
    pub group: Option<String>,
    /// Show client IP per queue.
    #[arg(short = 's', long = "showClientIP", value_parser = java_bool)]
    pub show_client_ip: Option<bool>,
}

/// The part of ConsumerRunningInfo this tool reads: which queues a client holds.
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RunningInfo {
    mq_table: BTreeMap<String, serde_json::Value>,
}

impl ConsumerProgress {
    async fn allocation(ctx: &mut Ctx<'_>, group: &str) -> BTreeMap<MessageQueue, String> {
        let mut out = BTreeMap::new();
        let Ok(conn) = examine_consumer_connection(&ctx.client, group).await else {
            return out;
        };
        let Ok(addr) = group_addr(&ctx.client, group).await else {
            return out;
        };
        for c in &conn.connection_set {
            let header = remoting::protocol::broker::GetConsumerRunningInfoRequestHeader {
                consumer_group: group.to_owned(),
                client_id: c.client_id.clone(),
                jstack_enable: Some(false),
            };
            let request =
                RemotingCommand::request_with(RequestCode::GetConsumerRunningInfo, &header);
            let Ok(resp) = ctx.client.call(&addr, request).await else {
                continue;
            };
            let Ok(info) = parse_body::<RunningInfo>(&resp, &addr) else {
                continue;
            };
            let ip = c.client_id.split('@').next().unwrap_or_default().to_owned();
            for key in info.mq_table.keys() {
                if let Ok(mq) = serde_json::from_str::<MessageQueue>(key) {
                    out.insert(mq, ip.clone());
                }
            }
        }
        out
    }

    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let Some(group) = self.group.as_deref().map(str::trim) else {
            return Self::all_groups(ctx).await;
        };
        let show_ip = self.show_client_ip.unwrap_or(false);
        let stats = examine_consume_stats(&ctx.client, group, None).await?;
        let alloc = if show_ip {
            Self::allocation(ctx, group).await
        } else {
            BTreeMap::new()
        };
        progress_line(
            ctx.out,
            [
                "#Topic",
                "#Broker Name",
                "#QID",
                "#Broker Offset",
                "#Consumer Offset",
            ],
            show_ip.then_some("#Client IP"),
            "#Diff",
            "#LastTime",
        )?;
        let mut diff_total = 0;
        for (mq, o) in &stats.offset_table {
            let diff = o.broker_offset - o.consumer_offset;
            diff_total += diff;
            let last = if o.last_timestamp == 0 {
                "N/A".to_owned()
            } else {
                human_seconds(o.last_timestamp)
            };
            let ip = show_ip.then(|| alloc.get(mq).map_or("N/A", String::as_str));
            progress_line(
                ctx.out,
                [
                    front(&mq.topic, 64),
                    front(&mq.broker_name, 32),
                    &mq.queue_id.to_string(),
                    &o.broker_offset.to_string(),
                    &o.consumer_offset.to_string(),
                ],
                ip,
                &diff.to_string(),
                &last,
            )?;
        }
        writeln!(ctx.out)?;
        writeln!(ctx.out, "Consume TPS: {:.2}", stats.consume_tps)?;
        writeln!(ctx.out, "Diff Total: {diff_total}")?;
        Ok(())
    }

    async fn all_groups(ctx: &mut Ctx<'_>) -> Result<()> {
        writeln!(
            ctx.out,
            "{:<64}  {:<6}  {:<24} {:<5}  {:<14}  {:<7}  {}",
            "#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total"
        )?;
        let topics = ctx.client.all_topics().await?;
        for topic in &topics.topic_list {
            let Some(group) = topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) else {
                continue;
            };
            let stats = examine_consume_stats(&ctx.client, group, None).await.ok();
            let conn = examine_consumer_connection(&ctx.client, group).await.ok();
            let count = conn.as_ref().map_or(0, |c| c.connection_set.len());
            let (version, kind, model) = match conn.as_ref().filter(|_| count > 0) {
                Some(c) => {
                    let min_version = c
                        .connection_set
                        .iter()
                        .map(|x| x.version)
                        .min()
                        .unwrap_or(0);
                    let kind = match c.consume_type {
                        Some(ConsumeType::ConsumeActively) => "PULL",
                        Some(_) => "PUSH",
                        None => "",
                    };
                    let model = if matches!(c.consume_type, Some(ConsumeType::ConsumePassively)) {
                        c.message_model
                            .map(|m| m.name().to_owned())
                            .unwrap_or_default()
                    } else {
                        String::new()
                    };
                    (version_name(min_version).to_owned(), kind, model)
                }
                None => ("OFFLINE".to_owned(), "", String::new()),
            };
            #[allow(
                clippy::cast_possible_truncation,
                reason = "Java casts the TPS to int too"
            )]
            let tps = stats.as_ref().map_or(0, |s| s.consume_tps as i64);
            let diff: i64 = stats.as_ref().map_or(0, |s| {
                s.offset_table
                    .values()
                    .map(|o: &OffsetWrapper| o.broker_offset - o.consumer_offset)
                    .sum()
            });
            writeln!(
                ctx.out,
                "{:<64}  {:<6}  {:<24} {:<5}  {:<14}  {:<7}  {}",
                front(group, 64),
                count,
                version,
                kind,
                model,
                tps,
                diff
            )?;
        }
        Ok(())
    }
}

/// A consumerProgress line: queue, offsets, the client IP only with `-s true` (Java's two
/// formats), diff and last consume time.
fn progress_line(
    out: &mut dyn Write,
    [topic, broker, queue_id, broker_offset, consumer_offset]: [&str; 5],
    ip: Option<&str>,
    diff: &str,
    last: &str,
) -> std::io::Result<()> {
    write!(
        out,
        "{topic:<64}  {broker:<32}  {queue_id:<4}  {broker_offset:<20}  {consumer_offset:<20}  "
    )?;
    if let Some(ip) = ip {
        write!(out, "{ip:<20} ")?;
    }
    writeln!(out, "{diff:<20}  {last}")
}

/// Whether an INVOKE_BROKER_TO_RESET_OFFSET failure calls for the offline method:
/// CONSUMER_NOT_ONLINE (what Java's tool falls back on), or a 4.x broker's SYSTEM_ERROR
/// "THe consumer group <g> not exist" for a group without offsets (Java's tool fails there;
/// the offline method starts such a group from the topic's offsets instead).
fn group_offline_or_new(e: &ToolsError) -> bool {
    match e {
        ToolsError::Response { code, remark, .. } => {
            *code == ResponseCode::ConsumerNotOnline.code()
                || (*code == ResponseCode::SystemError.code() && remark.contains("not exist"))
        }
        _ => false,
    }
}

/// `resetOffsetByTime`.
#[derive(Debug, Args)]
pub struct ResetOffsetByTime {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Consumer group.
    #[arg(short = 'g', long = "group")]
    pub group: String,
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Timestamp: now | currentTimeMillis | yyyy-MM-dd#HH:mm:ss:SSS (-1 = max offset).
    #[arg(short = 's', long = "timestamp", allow_hyphen_values = true)]
    pub timestamp: String,
    /// Force rollback even past the consumed offset (true|false, default true).
    #[arg(short = 'f', long = "force", value_parser = java_bool)]
    pub force: Option<bool>,
    /// Only this broker (with -q).
    #[arg(short = 'b', long = "broker")]
    pub broker: Option<String>,
    /// Only this queue (with -b).
    #[arg(short = 'q', long = "queue")]
    pub queue: Option<i32>,
    /// Exact offset instead of a timestamp search (with -b -q).
    #[arg(short = 'o', long = "offset")]
    pub offset: Option<i64>,
    /// Cluster name (accepted for compatibility).
    #[arg(short = 'c', long = "cluster")]
    pub cluster: Option<String>,
}

impl ResetOffsetByTime {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let group = self.group.trim();
        let topic = self.topic.trim();
        let ts_text = self.timestamp.trim();
        let timestamp = parse_timestamp_arg(ts_text, now_millis()).ok_or_else(|| {
            ToolsError::Usage(format!(
                "invalid timestamp {ts_text:?}: use now, milliseconds or yyyy-MM-dd#HH:mm:ss:SSS"
            ))
        })?;
        let force = self.force.unwrap_or(true);

        if let (Some(broker), Some(queue)) = (&self.broker, self.queue) {
            let broker = broker.trim();
            writeln!(
                ctx.out,
                "start reset consumer offset by specified, group[{group}], topic[{topic}], queueId[{queue}], broker[{broker}], timestamp(string)[{ts_text}], timestamp(long)[{timestamp}]"
            )?;
            let offset = match self.offset {
                Some(o) => o,
                None => {
                    ctx.client
                        .search_offset(broker, topic, queue, timestamp)
                        .await?
                }
            };
            writeln!(ctx.out, "reset consumer offset to {offset}")?;
            if offset > 0 {
                ctx.client
                    .update_consumer_offset(broker, group, topic, queue, offset)
                    .await?;
                // Then the broker's own reset, which the group's online clients follow (as
                // RocketMQ 5's resetOffsetByQueueId; a 4.9 broker has no such thing for an
                // offline group, and the offset is updated already).
                match ctx
                    .client
                    .invoke_broker_to_reset_offset(
                        broker,
                        topic,
                        group,
                        0,
                        false,
                        Some((queue, offset)),
                    )
                    .await
                {
                    Ok(_) => {}
                    Err(e) if group_offline_or_new(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            return Ok(());
        }

        let route = ctx.client.fetch_route(topic).await?;
        let mut table: BTreeMap<MessageQueue, i64> = BTreeMap::new();
        for b in &route.broker_datas {
            let Some(addr) = select_addr(b) else { continue };
            match ctx
                .client
                .invoke_broker_to_reset_offset(addr, topic, group, timestamp, force, None)
                .await
            {
                Ok(body) => table.extend(body.offset_table),
                Err(e) if group_offline_or_new(&e) => {
                    // No live consumer (or, on 4.x brokers, no offsets yet): rewrite the
                    // stored offsets directly, as RocketMQ's ResetOffsetByTimeOldCommand does.
                    return self
                        .reset_offline(ctx, group, topic, timestamp, force, ts_text)
                        .await;
                }
                Err(e) => return Err(e),
            }
        }
        writeln!(
            ctx.out,
            "start reset consumer offset by specified, group[{group}], topic[{topic}], force[{force}], timestamp(string)[{ts_text}], timestamp(long)[{timestamp}]"
        )?;
        writeln!(
            ctx.out,
            "{:<40}  {:<40}  {:<40}",
            "#brokerName", "#queueId", "#offset"
        )?;
        for (mq, offset) in &table {
            writeln!(
                ctx.out,
                "{:<40}  {:<40}  {:<40}",
                front(&mq.broker_name, 32),
                mq.queue_id,
                offset
            )?;
        }
        Ok(())
    }

    /// `ResetOffsetByTimeOldCommand`: per queue of every broker of the topic, search the
    /// offset for the timestamp and store it as the group's offset when forced or earlier.
    async fn reset_offline(
        &self,
        ctx: &mut Ctx<'_>,
        group: &str,
        topic: &str,
        timestamp: i64,
        force: bool,
        ts_text: &str,
    ) -> Result<()> {
        let route = ctx.client.fetch_route(topic).await?;
        let mut rows = Vec::new();
        for b in &route.broker_datas {
            let Some(addr) = select_addr(b) else { continue };
            let stats = ctx.client.consume_stats(addr, group, None).await?;
            let mut queues: Vec<(MessageQueue, OffsetWrapper)> = stats
                .offset_table
                .into_iter()
                .filter(|(mq, _)| mq.topic == topic)
                .collect();
            if queues.is_empty() {
                // Never consumed: start from the topic's min offsets.
                let read = route
                    .queue_datas
                    .iter()
                    .find(|q| q.broker_name == b.broker_name)
                    .map_or(0, |q| q.read_queue_nums);
                let topic_stats = ctx.client.topic_stats(addr, topic).await?;
                for queue_id in 0..read {
                    let mq = MessageQueue {
                        topic: topic.to_owned(),
                        broker_name: b.broker_name.clone(),
                        queue_id,
                    };
                    let o = topic_stats
                        .offset_table
                        .get(&mq)
                        .copied()
                        .unwrap_or_default();
                    queues.push((
                        mq,
                        OffsetWrapper {
                            broker_offset: o.max_offset,
                            consumer_offset: o.min_offset,
                            ..OffsetWrapper::default()
                        },
                    ));
                }
            }
            for (mq, o) in queues {
                let target = if timestamp == -1 {
                    ctx.client.max_offset(addr, topic, mq.queue_id).await?
                } else {
                    ctx.client
                        .search_offset(addr, topic, mq.queue_id, timestamp)
                        .await?
                };
                let mut rollback = o.consumer_offset;
                if force || target <= o.consumer_offset {
                    rollback = target;
                    ctx.client
                        .update_consumer_offset(addr, group, topic, mq.queue_id, target)
                        .await?;
                }
                rows.push((mq, o, target, rollback));
            }
        }
        writeln!(
            ctx.out,
            "reset consumer offset by specified consumerGroup[{group}], topic[{topic}], force[{force}], timestamp(string)[{ts_text}], timestamp(long)[{timestamp}]"
        )?;
        writeln!(
            ctx.out,
            "{:<20}  {:<20}  {:<20}  {:<20}  {:<20}  {:<20}",
            "#brokerName",
            "#queueId",
            "#brokerOffset",
            "#consumerOffset",
            "#timestampOffset",
            "#resetOffset"
        )?;
        for (mq, o, target, rollback) in rows {
            writeln!(
                ctx.out,
                "{:<20}  {:<20}  {:<20}  {:<20}  {:<20}  {:<20}",
                front(&mq.broker_name, 32),
                mq.queue_id,
                o.broker_offset,
                o.consumer_offset,
                target,
                rollback
            )?;
        }
        Ok(())
    }
}
