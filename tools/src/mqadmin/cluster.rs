//! Cluster and broker commands: clusterList, brokerStatus, getBrokerConfig, updateBrokerConfig.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use clap::Args;
use remoting::protocol::body::KvTable;
use remoting::protocol::constants::system::MASTER_ID;
use remoting::protocol::route::ClusterInfo;

use super::{Common, Ctx, Tally, Target, warn};
use crate::admin::{all_addrs, cluster_broker_names, master_addrs};
use crate::error::{Result, ToolsError};
use crate::time::now_millis;

/// `clusterList`.
#[derive(Debug, Args)]
pub struct ClusterList {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Print more stats.
    #[arg(short = 'm', long = "moreStats")]
    pub more_stats: bool,
    /// Repeat every N seconds (until interrupted).
    #[arg(short = 'i', long = "interval")]
    pub interval: Option<u64>,
    /// Only this cluster.
    #[arg(short = 'c', long = "clusterName")]
    pub cluster_name: Option<String>,
}

impl ClusterList {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let mut first = true;
        loop {
            if !first {
                tokio::time::sleep(Duration::from_secs(self.interval.unwrap_or(1).max(1))).await;
            }
            first = false;
            let info = ctx.client.cluster_info().await?;
            let clusters: Vec<String> = match &self.cluster_name {
                Some(c) => vec![c.trim().to_owned()],
                None => info.cluster_addr_table.keys().cloned().collect(),
            };
            if self.more_stats {
                self.print_more_stats(ctx, &info, &clusters).await?;
            } else {
                self.print_base_info(ctx, &info, &clusters).await?;
            }
            ctx.out.flush()?;
            if self.interval.is_none() {
                return Ok(());
            }
        }
    }

    async fn stats(ctx: &mut Ctx<'_>, addr: &str) -> Option<KvTable> {
        match ctx.client.broker_runtime_info(addr).await {
            Ok(t) => Some(t),
            Err(e) => {
                warn(ctx, &format!("runtime info of {addr} unavailable"), &e);
                None
            }
        }
    }

    async fn print_base_info(
        &self,
        ctx: &mut Ctx<'_>,
        info: &ClusterInfo,
        clusters: &[String],
    ) -> Result<()> {
        writeln!(
            ctx.out,
            "{:<16}  {:<22}  {:<4}  {:<22} {:<16} {:>19} {:>19} {:>10} {:>5} {:>6}",
            "#Cluster Name",
            "#Broker Name",
            "#BID",
            "#Addr",
            "#Version",
            "#InTPS(LOAD)",
            "#OutTPS(LOAD)",
            "#PCWait(ms)",
            "#Hour",
            "#SPACE"
        )?;
        for (cluster, name, id, addr) in rows(info, clusters) {
            let table = Self::stats(ctx, &addr).await.unwrap_or_default().table;
            let get = |k: &str| table.get(k).cloned().unwrap_or_default();
            let first_rate = |k: &str| {
                table
                    .get(k)
                    .and_then(|v| v.split(' ').next().and_then(|x| x.parse::<f64>().ok()))
                    .unwrap_or(0.0)
            };
            let hour = table
                .get("earliestMessageTimeStamp")
                .and_then(|v| v.parse::<i64>().ok())
                .map_or(0.0, |t| ms_to_f64(now_millis() - t) / 3_600_000.0);
            let space = table
                .get("commitLogDiskRatio")
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0);
            writeln!(
                ctx.out,
                "{:<16}  {:<22}  {:<4}  {:<22} {:<16} {:>19} {:>19} {:>10} {:>5} {:>6}",
                cluster,
                name,
                id,
                addr,
                get("brokerVersionDesc"),
                format!(
                    "{:9.2}({},{}ms)",
                    first_rate("putTps"),
                    get("sendThreadPoolQueueSize"),
                    get("sendThreadPoolQueueHeadWaitTimeMills")
                ),
                format!(
                    "{:9.2}({},{}ms)",
                    // 4.9 brokers say getTransferedTps, 5.x getTransferredTps.
                    first_rate(if table.contains_key("getTransferredTps") {
                        "getTransferredTps"
                    } else {
                        "getTransferedTps"
                    }),
                    get("pullThreadPoolQueueSize"),
                    get("pullThreadPoolQueueHeadWaitTimeMills")
                ),
                get("pageCacheLockTimeMills"),
                format!("{hour:2.2}"),
                format!("{space:.4}")
            )?;
        }
        Ok(())
    }

    async fn print_more_stats(
        &self,
        ctx: &mut Ctx<'_>,
        info: &ClusterInfo,
        clusters: &[String],
    ) -> Result<()> {
        writeln!(
            ctx.out,
            "{:<16}  {:<32} {:>14} {:>14} {:>14} {:>14}",
            "#Cluster Name",
            "#Broker Name",
            "#InTotalYest",
            "#OutTotalYest",
            "#InTotalToday",
            "#OutTotalToday"
        )?;
        for (cluster, name, _, addr) in rows(info, clusters) {
            let table = Self::stats(ctx, &addr).await.unwrap_or_default().table;
            let n = |k: &str| table.get(k).and_then(|v| v.parse::<i64>().ok());
            let diff = |a: &str, b: &str| match (n(a), n(b)) {
                (Some(a), Some(b)) => a - b,
                _ => 0,
            };
            writeln!(
                ctx.out,
                "{:<16}  {:<32} {:>14} {:>14} {:>14} {:>14}",
                cluster,
                name,
                diff("msgPutTotalTodayMorning", "msgPutTotalYesterdayMorning"),
                diff("msgGetTotalTodayMorning", "msgGetTotalYesterdayMorning"),
                diff("msgPutTotalTodayNow", "msgPutTotalTodayMorning"),
                diff("msgGetTotalTodayNow", "msgGetTotalTodayMorning")
            )?;
        }
        Ok(())
    }
}

#[allow(
    clippy::cast_precision_loss,
    reason = "hours since a timestamp, printed with 2 decimals"
)]
fn ms_to_f64(ms: i64) -> f64 {
    ms as f64
}

/// (cluster, broker name, broker id, address) in clusterList order: clusters and broker
/// names sorted, ids ascending.
fn rows(info: &ClusterInfo, clusters: &[String]) -> Vec<(String, String, i64, String)> {
    let mut out = Vec::new();
    for cluster in clusters {
        let names: BTreeSet<&String> = info
            .cluster_addr_table
            .get(cluster)
            .map(|s| s.iter().collect())
            .unwrap_or_default();
        for name in names {
            if let Some(data) = info.broker_addr_table.get(name) {
                for (id, addr) in &data.broker_addrs {
                    out.push((cluster.clone(), name.clone(), *id, addr.clone()));
                }
            }
        }
    }
    out
}

/// `brokerStatus`.
#[derive(Debug, Args)]
pub struct BrokerStatus {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster (masters and slaves).
    #[command(flatten)]
    pub target: Target,
}

impl BrokerStatus {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        if let Some(addr) = self.target.broker() {
            let table = ctx.client.broker_runtime_info(addr).await?;
            for (k, v) in &table.table {
                writeln!(ctx.out, "{k:<32}: {v}")?;
            }
            return Ok(());
        }
        let info = ctx.client.cluster_info().await?;
        let addrs: BTreeSet<String> = all_addrs(&info, self.target.cluster())?
            .into_iter()
            .collect();
        let mut tally = Tally::default();
        for addr in &addrs {
            let result = ctx.client.broker_runtime_info(addr).await;
            if let Some(table) = tally.check(ctx, result, || {
                format!("runtime info of {addr} unavailable")
            })? {
                for (k, v) in &table.table {
                    writeln!(ctx.out, "{addr:<24} {k:<32}: {v}")?;
                }
            }
        }
        tally.finish()
    }
}

/// `getBrokerConfig`.
#[derive(Debug, Args)]
pub struct GetBrokerConfig {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
}

impl GetBrokerConfig {
    async fn print(ctx: &mut Ctx<'_>, banner: &str, addr: &str) -> Result<()> {
        writeln!(ctx.out, "{banner}")?;
        let config = ctx.client.broker_config(addr).await?;
        if config.is_empty() {
            writeln!(ctx.out, "Broker[{addr}] has no config property!")?;
            return Ok(());
        }
        for (k, v) in &config {
            writeln!(ctx.out, "{k:<50}=  {v}")?;
        }
        writeln!(ctx.out)?;
        Ok(())
    }

    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        if let Some(addr) = self.target.broker() {
            return Self::print(ctx, &format!("============{addr}============"), addr).await;
        }
        let info = ctx.client.cluster_info().await?;
        let mut tally = Tally::default();
        for name in cluster_broker_names(&info, self.target.cluster())? {
            let Some(data) = info.broker_addr_table.get(name) else {
                continue;
            };
            let Some(master) = data.broker_addrs.get(&MASTER_ID) else {
                continue;
            };
            let mut targets = vec![(
                format!("============Master: {master}============"),
                master.clone(),
            )];
            for (id, slave) in &data.broker_addrs {
                if *id != MASTER_ID {
                    targets.push((
                        format!("============My Master: {master}=====Slave: {slave}============"),
                        slave.clone(),
                    ));
                }
            }
            for (banner, addr) in targets {
                let result = Self::print(ctx, &banner, &addr).await;
                tally.check(ctx, result, || format!("config of {addr} unavailable"))?;
            }
        }
        tally.finish()
    }
}

/// `updateBrokerConfig`.
#[derive(Debug, Args)]
pub struct UpdateBrokerConfig {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// With -c: update slaves too (any value).
    #[arg(short = 'a', long = "updateAllBroker")]
    pub update_all_broker: Option<String>,
    /// Config key.
    #[arg(short = 'k', long = "key")]
    pub key: String,
    /// Config value.
    #[arg(short = 'v', long = "value")]
    pub value: String,
}

impl UpdateBrokerConfig {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let props = BTreeMap::from([(self.key.trim().to_owned(), self.value.trim().to_owned())]);
        if let Some(addr) = self.target.broker() {
            ctx.client.update_broker_config(addr, &props).await?;
            writeln!(ctx.out, "update broker config success, {addr}")?;
            return Ok(());
        }
        let cluster = self.target.cluster();
        let info = ctx.client.cluster_info().await?;
        let addrs: Vec<String> = if self.update_all_broker.is_some() {
            all_addrs(&info, cluster)?
        } else {
            master_addrs(&info, cluster)?.into_values().collect()
        };
        if addrs.is_empty() {
            return Err(ToolsError::NoCluster {
                cluster: cluster.to_owned(),
            });
        }
        let mut tally = Tally::default();
        for addr in &addrs {
            let result = ctx.client.update_broker_config(addr, &props).await;
            if tally
                .check(ctx, result, || {
                    format!("update broker config of {addr} failed")
                })?
                .is_some()
            {
                writeln!(ctx.out, "update broker config success, {addr}")?;
            }
        }
        tally.finish()
    }
}

/// `switchTimerEngine` (RocketMQ 5.4+): `-e F` (file time wheel) or `R` (RocksDB
/// timeline) on one broker or every master of a cluster.
#[derive(Debug, Args)]
pub struct SwitchTimerEngine {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// R/F, R for rocksdb timeline engine, F for file time wheel engine.
    #[arg(short = 'e', long = "engineType")]
    pub engine_type: String,
}

impl SwitchTimerEngine {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let engine = self.engine_type.trim();
        let Some(name) = remoting::protocol::timer::engine_name(engine) else {
            return Err(ToolsError::Usage(
                "switchTimerEngine engineType must be R or F".into(),
            ));
        };
        if let Some(addr) = self.target.broker() {
            ctx.client.switch_timer_engine(addr, engine).await?;
            writeln!(ctx.out, "switchTimerEngine to {name} success, {addr}")?;
            return Ok(());
        }
        let cluster = self.target.cluster();
        let info = ctx.client.cluster_info().await?;
        let addrs: Vec<String> = master_addrs(&info, cluster)?.into_values().collect();
        if addrs.is_empty() {
            return Err(ToolsError::NoCluster {
                cluster: cluster.to_owned(),
            });
        }
        let mut tally = Tally::default();
        for addr in &addrs {
            let result = ctx.client.switch_timer_engine(addr, engine).await;
            if tally
                .check(ctx, result, || {
                    format!("switchTimerEngine on {addr} failed")
                })?
                .is_some()
            {
                writeln!(ctx.out, "switchTimerEngine to {name} success, {addr}")?;
            }
        }
        tally.finish()
    }
}
