//! The name server's metrics (`metricsExporterType=PROM`, the broker's keys): RocketMQ's
//! name server exports none; sluice's answers with the request latencies of its
//! remoting server (`rocketmq_rpc_latency`, as a broker labels them) and the size of its
//! registry.

use std::fmt;
use std::sync::Arc;

use metrics::exporter::{BoundEndpoint, Collect, Endpoint, Registry};
use metrics::scrape::{Def, Scrape};
use metrics::{MetricsConfig, MetricsError};
use remoting::rpc_metrics::RpcLatency;

use crate::config::NamesrvConfig;
use crate::processor::NamesrvProcessor;

const LIVE_BROKERS: Def = Def::gauge(
    "sluice_namesrv_live_brokers",
    "Brokers registered and heard from within the expiry",
);
const TOPICS: Def = Def::gauge("sluice_namesrv_topics", "Topics in the route table");

/// Binds the endpoint `metrics` asks for (`None` with `DISABLE`): on
/// `metricsPromExporterHost`, else on the name server's `bindAddress`.
///
/// # Errors
/// An exporter sluice does not have, or a port that cannot be bound.
pub fn bind(
    metrics: &MetricsConfig,
    config: &NamesrvConfig,
) -> Result<Option<BoundEndpoint>, MetricsError> {
    if !metrics.enabled()? {
        return Ok(None);
    }
    let host = if metrics.metrics_prom_exporter_host.trim().is_empty() {
        config.bind_address.clone()
    } else {
        metrics.metrics_prom_exporter_host.trim().to_owned()
    };
    BoundEndpoint::bind(&host, metrics.metrics_prom_exporter_port).map(Some)
}

/// What a name server exports.
#[derive(Debug)]
pub(crate) struct NamesrvCollector {
    pub(crate) processor: Arc<NamesrvProcessor>,
    pub(crate) rpc: Arc<RpcLatency>,
}

impl Collect for NamesrvCollector {
    fn collect(&self, s: &mut Scrape<'_>) -> fmt::Result {
        let (brokers, topics) = {
            let routes = self.processor.routes();
            (routes.live_broker_count(), routes.topic_count())
        };
        s.gauge(
            &LIVE_BROKERS,
            &[(vec![], i64::try_from(brokers).unwrap_or(i64::MAX))],
        )?;
        s.gauge(
            &TOPICS,
            &[(vec![], i64::try_from(topics).unwrap_or(i64::MAX))],
        )?;
        self.rpc.collect(s)
    }
}

/// Serves `collector` on `bound`, labelled as the name server at `addr`.
pub(crate) fn serve(
    bound: BoundEndpoint,
    collector: NamesrvCollector,
    addr: &str,
    config: &MetricsConfig,
) -> Endpoint {
    let mut registry =
        Registry::for_process(&[("node_type", "namesrv"), ("node_id", addr)], config);
    registry.register(collector);
    bound.serve(Arc::new(registry))
}
