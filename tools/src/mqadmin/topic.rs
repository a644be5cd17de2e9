//! Topic commands: updateTopic, deleteTopic, topicList, topicRoute, topicStatus.

use std::collections::BTreeMap;
use std::io::Write;

use clap::Args;
use remoting::protocol::admin::TopicOffset;
use remoting::protocol::constants::system::{
    DLQ_GROUP_TOPIC_PREFIX, ORDER_TOPIC_CONFIG_NAMESPACE, RETRY_GROUP_TOPIC_PREFIX,
};
use remoting::protocol::constants::{topic_sys_flag, validate_topic};
use remoting::protocol::heartbeat::MessageQueue;
use remoting::protocol::topic::TopicConfig;

use super::format::{front, route_pretty, topic_config};
use super::{Common, Ctx, Tally, Target, fail_on_any, java_bool};
use crate::admin::{broker_name_of, cluster_broker_names, cluster_of, master_addrs, select_addr};
use crate::error::{Result, ToolsError};
use crate::time::human_millis;

/// `updateTopic`.
#[derive(Debug, Args)]
pub struct UpdateTopic {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Read queue nums.
    #[arg(short = 'r', long = "readQueueNums", default_value_t = 8)]
    pub read_queue_nums: i32,
    /// Write queue nums.
    #[arg(short = 'w', long = "writeQueueNums", default_value_t = 8)]
    pub write_queue_nums: i32,
    /// Permission (2|4|6), intro[2:W 4:R; 6:RW].
    #[arg(short = 'p', long = "perm", default_value_t = 6)]
    pub perm: i32,
    /// Order topic (true|false).
    #[arg(short = 'o', long = "order", value_parser = java_bool, default_value = "false", action = clap::ArgAction::Set)]
    pub order: bool,
    /// Unit topic (true|false).
    #[arg(short = 'u', long = "unit", value_parser = java_bool, default_value = "false", action = clap::ArgAction::Set)]
    pub unit: bool,
    /// Has unit sub (true|false).
    #[arg(short = 's', long = "hasUnitSub", value_parser = java_bool, default_value = "false", action = clap::ArgAction::Set)]
    pub has_unit_sub: bool,
}

impl UpdateTopic {
    fn config(&self) -> TopicConfig {
        let mut c = TopicConfig::new(self.topic.trim(), 8);
        c.read_queue_nums = self.read_queue_nums;
        c.write_queue_nums = self.write_queue_nums;
        c.perm = self.perm;
        c.order = self.order;
        c.topic_sys_flag = (if self.unit { topic_sys_flag::UNIT } else { 0 })
            | (if self.has_unit_sub {
                topic_sys_flag::UNIT_SUB
            } else {
                0
            });
        c
    }

    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let config = self.config();
        validate_topic(&config.topic_name).map_err(|e| {
            ToolsError::Usage(format!("invalid topic name {:?}: {e}", config.topic_name))
        })?;
        if let Some(addr) = self.target.broker() {
            ctx.client.create_topic(addr, &config).await?;
            if self.order {
                let info = ctx.client.cluster_info().await?;
                let name = broker_name_of(&info, addr).ok_or_else(|| ToolsError::NoBroker {
                    broker_name: addr.to_owned(),
                })?;
                let conf = format!("{name}:{}", config.write_queue_nums);
                put_order_conf(ctx, "broker", &config.topic_name, &conf).await?;
            }
            writeln!(ctx.out, "create topic to {addr} success.")?;
            writeln!(ctx.out, "{}", topic_config(&config))?;
            return Ok(());
        }
        let cluster = self.target.cluster();
        let info = ctx.client.cluster_info().await?;
        let mut tally = Tally::default();
        for addr in master_addrs(&info, cluster)?.values() {
            let result = ctx.client.create_topic(addr, &config).await;
            if tally
                .check(ctx, result, || format!("create topic to {addr} failed"))?
                .is_some()
            {
                writeln!(ctx.out, "create topic to {addr} success.")?;
            }
        }
        if self.order {
            let conf = cluster_broker_names(&info, cluster)?
                .iter()
                .map(|name| format!("{name}:{}", config.write_queue_nums))
                .collect::<Vec<_>>()
                .join(";");
            put_order_conf(ctx, "cluster", &config.topic_name, &conf).await?;
        }
        writeln!(ctx.out, "{}", topic_config(&config))?;
        tally.finish()
    }
}

/// Registers an order topic's `brokerName:queues[;...]` with every name server and says
/// so, for one broker or a whole cluster (`scope`).
async fn put_order_conf(ctx: &mut Ctx<'_>, scope: &str, topic: &str, conf: &str) -> Result<()> {
    fail_on_any(
        ctx.client
            .put_kv_config(ORDER_TOPIC_CONFIG_NAMESPACE, topic, conf)
            .await,
    )?;
    writeln!(
        ctx.out,
        "set {scope} orderConf. isOrder=true, orderConf=[{conf}]"
    )?;
    Ok(())
}

/// `deleteTopic`.
#[derive(Debug, Args)]
pub struct DeleteTopic {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Delete topic from which cluster.
    #[arg(short = 'c', long = "clusterName")]
    pub cluster_name: String,
}

impl DeleteTopic {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let topic = self.topic.trim();
        let cluster = self.cluster_name.trim();
        let info = ctx.client.cluster_info().await?;
        let masters = master_addrs(&info, cluster)?;
        for addr in masters.values() {
            ctx.client.delete_topic_in_broker(addr, topic).await?;
        }
        writeln!(
            ctx.out,
            "delete topic [{topic}] from cluster [{cluster}] success."
        )?;
        fail_on_any(
            ctx.client
                .delete_topic_in_namesrv(topic, Some(cluster))
                .await,
        )?;
        writeln!(ctx.out, "delete topic [{topic}] from NameServer success.")?;
        Ok(())
    }
}

/// `topicList`.
#[derive(Debug, Args)]
pub struct TopicList {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Cluster model: with cluster and consumer groups.
    #[arg(short = 'c', long = "clusterModel")]
    pub cluster_model: bool,
}

impl TopicList {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        if !self.cluster_model {
            let topics = ctx.client.all_topics().await?;
            for t in &topics.topic_list {
                writeln!(ctx.out, "{t}")?;
            }
            return Ok(());
        }
        let info = ctx.client.cluster_info().await?;
        writeln!(
            ctx.out,
            "{:<20}  {:<48}  {:<48}",
            "#Cluster Name", "#Topic", "#Consumer Group"
        )?;
        let topics = ctx.client.all_topics().await?;
        for topic in &topics.topic_list {
            if topic.starts_with(RETRY_GROUP_TOPIC_PREFIX)
                || topic.starts_with(DLQ_GROUP_TOPIC_PREFIX)
            {
                continue;
            }
            let mut cluster = String::new();
            let mut groups = Vec::new();
            if let Ok(route) = ctx.client.route(topic).await {
                if let Some(b) = route.broker_datas.first() {
                    cluster = cluster_of(&info, &b.broker_name).unwrap_or_default();
                    if let Some(addr) = select_addr(b) {
                        if let Ok(list) = ctx.client.topic_consumed_by(addr, topic).await {
                            groups.extend(list.group_list);
                        }
                    }
                }
            }
            if groups.is_empty() {
                groups.push(String::new());
            }
            for g in &groups {
                writeln!(
                    ctx.out,
                    "{:<20}  {:<64}  {:<64}",
                    front(&cluster, 20),
                    front(topic, 64),
                    front(g, 64)
                )?;
            }
        }
        Ok(())
    }
}

/// `topicRoute`.
#[derive(Debug, Args)]
pub struct TopicRoute {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Use list format to print data.
    #[arg(short = 'l', long = "list")]
    pub list: bool,
}

impl TopicRoute {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let route = ctx.client.fetch_route(self.topic.trim()).await?;
        if !self.list {
            writeln!(ctx.out, "{}", route_pretty(&route))?;
            return Ok(());
        }
        let row = |out: &mut dyn Write, a: &str, b: &str, c: &str, d: &str, e: &str, f: &str| {
            writeln!(out, "{a:<45} {b:<32} {c:<50} {d:<10} {e:<11} {f:<5}")
        };
        row(
            ctx.out,
            "#ClusterName",
            "#BrokerName",
            "#BrokerAddrs",
            "#ReadQueue",
            "#WriteQueue",
            "#Perm",
        )?;
        let queues: BTreeMap<&str, _> = route
            .queue_datas
            .iter()
            .map(|q| (q.broker_name.as_str(), q))
            .collect();
        let mut brokers: Vec<_> = route.broker_datas.iter().collect();
        brokers.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
        let (mut read, mut write) = (0, 0);
        for b in brokers {
            let Some(q) = queues.get(b.broker_name.as_str()) else {
                continue;
            };
            read += q.read_queue_nums;
            write += q.write_queue_nums;
            // Java prints the HashMap: {0=addr, 1=addr}.
            let addrs = b
                .broker_addrs
                .iter()
                .map(|(id, a)| format!("{id}={a}"))
                .collect::<Vec<_>>()
                .join(", ");
            row(
                ctx.out,
                &b.cluster,
                &b.broker_name,
                &format!("{{{addrs}}}"),
                &q.read_queue_nums.to_string(),
                &q.write_queue_nums.to_string(),
                &q.perm.to_string(),
            )?;
        }
        writeln!(ctx.out, "{}", "-".repeat(158))?;
        row(
            ctx.out,
            "Total:",
            &queues.len().to_string(),
            "",
            &read.to_string(),
            &write.to_string(),
            "",
        )?;
        Ok(())
    }
}

/// `topicStatus`.
#[derive(Debug, Args)]
pub struct TopicStatus {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Cluster name: ask that cluster's brokers (found through the route of the cluster-named topic).
    #[arg(short = 'c', long = "cluster")]
    pub cluster: Option<String>,
}

impl TopicStatus {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let topic = self.topic.trim();
        let route_topic = self.cluster.as_deref().map_or(topic, str::trim);
        let route = ctx.client.fetch_route(route_topic).await?;
        let mut table: BTreeMap<MessageQueue, TopicOffset> = BTreeMap::new();
        let mut tps = 0.0;
        for b in &route.broker_datas {
            let Some(addr) = select_addr(b) else { continue };
            let stats = ctx.client.topic_stats(addr, topic).await?;
            tps += stats.topic_put_tps;
            table.extend(stats.offset_table);
        }
        writeln!(
            ctx.out,
            "{:<32}  {:<4}  {:<20}  {:<20}    {}",
            "#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"
        )?;
        for (mq, o) in &table {
            let last = if o.last_update_timestamp > 0 {
                human_millis(o.last_update_timestamp)
            } else {
                String::new()
            };
            writeln!(
                ctx.out,
                "{:<32}  {:<4}  {:<20}  {:<20}    {}",
                front(&mq.broker_name, 32),
                mq.queue_id,
                o.min_offset,
                o.max_offset,
                last
            )?;
        }
        writeln!(ctx.out)?;
        writeln!(ctx.out, "Topic Put TPS: {tps:?}")?;
        Ok(())
    }
}
