//! `mqbench topics`: creates many topics at once (UPDATE_AND_CREATE_TOPIC on every master of
//! a cluster, a bounded number in flight), timed like a benchmark: "TPS" is topics created per
//! second and the latency is each creation's round trip. The names are those
//! `mqbench producer --topics N` and `mqbench consumer --topics N` use.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use remoting::protocol::topic::TopicConfig;
use tokio::task::JoinSet;

use super::producer::topic_names;
use super::stats::Summary;
use super::{Run, report_progress, settings};
use crate::admin::master_addrs;
use crate::client::Client;
use crate::error::{Result, ToolsError};

/// `mqbench topics` options.
#[derive(Debug, Args)]
pub struct TopicsArgs {
    /// Name server address list.
    #[arg(short = 'n', long = "namesrv", env = "NAMESRV_ADDR")]
    pub namesrv: Option<String>,
    /// Cluster whose masters get the topics.
    #[arg(short = 'c', long = "cluster", default_value = "DefaultCluster")]
    pub cluster: String,
    /// Topic name, or prefix with `--count` > 1 (`TOPIC-0` .. `TOPIC-(N-1)`).
    #[arg(short = 't', long = "topic", default_value = "BenchmarkTest")]
    pub topic: String,
    /// How many topics.
    #[arg(long = "count", default_value_t = 1)]
    pub count: usize,
    /// Read and write queues of each topic.
    #[arg(long = "queues", default_value_t = 8)]
    pub queues: i32,
    /// Creations in flight.
    #[arg(long = "concurrency", default_value_t = 16)]
    pub concurrency: usize,
    /// Timeout of one creation in milliseconds.
    #[arg(long = "timeout-ms", default_value_t = 30_000)]
    pub timeout_ms: u64,
    /// Print the summary as JSON.
    #[arg(long = "json")]
    pub json: bool,
}

/// Creates the topics and returns the summary.
///
/// # Errors
/// No name server, or the cluster has no master.
pub async fn run(
    args: &TopicsArgs,
    err: Arc<parking_lot::Mutex<Box<dyn Write + Send>>>,
) -> Result<Summary> {
    let namesrv = super::namesrv_list(args.namesrv.as_deref())?;
    if args.queues < 1 || args.concurrency == 0 {
        return Err(ToolsError::Usage(
            "--queues and --concurrency must be at least 1".to_owned(),
        ));
    }
    let client = Client::new(namesrv, Duration::from_millis(args.timeout_ms));
    let info = client.cluster_info().await?;
    let masters: Vec<String> = master_addrs(&info, &args.cluster)?.into_values().collect();
    if masters.is_empty() {
        return Err(ToolsError::Usage(format!(
            "cluster {} has no master",
            args.cluster
        )));
    }
    let names = topic_names(args.topic.trim(), args.count);
    let _ = writeln!(
        err.lock(),
        "mqbench topics: {} topic(s) x {} queue(s) on {} master(s), {} in flight",
        names.len(),
        args.queues,
        masters.len(),
        args.concurrency
    );
    let run = Arc::new(Run::default());
    let recorder = run.latencies.recorder();
    let started = Instant::now();
    let reporter = tokio::spawn(report_progress(
        Arc::clone(&run),
        "created",
        Arc::clone(&err),
    ));
    let mut pending = JoinSet::new();
    let jobs = names
        .iter()
        .flat_map(|name| masters.iter().map(move |addr| (name.clone(), addr.clone())));
    for (name, addr) in jobs {
        while pending.len() >= args.concurrency {
            let _ = pending.join_next().await;
        }
        let (client, run, recorder) = (client.clone(), Arc::clone(&run), recorder.clone());
        let queues = args.queues;
        pending.spawn(async move {
            let config = TopicConfig::new(name, queues);
            let at = Instant::now();
            match client.create_topic(&addr, &config).await {
                Ok(()) => {
                    recorder.record(at.elapsed());
                    run.counters.ok(1, 0);
                }
                Err(e) => run
                    .counters
                    .error(e.response_code(), "create failed", &e.detail()),
            }
        });
    }
    while pending.join_next().await.is_some() {}
    let elapsed = started.elapsed();
    run.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = reporter.await;
    let _ = run.latencies.interval();
    client.shutdown();
    Ok(Summary::new(
        "topics",
        settings([
            ("topic", args.topic.trim().to_owned()),
            ("count", names.len().to_string()),
            ("queues", args.queues.to_string()),
            ("masters", masters.len().to_string()),
            ("concurrency", args.concurrency.to_string()),
        ]),
        elapsed,
        &run.counters,
        &run.latencies.total(),
    ))
}
