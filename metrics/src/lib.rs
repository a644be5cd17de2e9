//! Metrics of a sluice process, under the names, labels and units of RocketMQ 5, so that
//! an operator's Prometheus rules and Grafana dashboards carry over unchanged.
//!
//! RocketMQ records through OpenTelemetry and exports with its Prometheus exporter
//! (`metricsExporterType=PROM`, port 5557). sluice keeps the same sample names (a counter
//! `rocketmq_messages_in_total`, a histogram `rocketmq_rpc_latency_milliseconds_bucket`)
//! with plain atomics on the hot path: a [`meter`] is bumped where the work happens, the
//! figures that are states rather than events (lag, connections, storage) are read at
//! scrape time, and [`scrape`] writes both through the Prometheus project's own encoder.
//!
//! - [`config`]: the broker.conf keys (`metricsExporterType`, `metricsPromExporterHost`,
//!   `metricsPromExporterPort`, `metricsLabel`, `metricsInDelta`).
//! - [`meter`]: counters and fixed-bucket histograms, with RocketMQ's bucket bounds.
//! - [`family`]: meters keyed by label values (a topic, a group, a request code).
//! - [`scrape`]: metric descriptions and the writing of one scrape.
//! - [`exporter`]: the HTTP endpoint.

pub mod config;
pub mod exporter;
pub mod family;
pub mod meter;
pub mod scrape;

pub use config::{ExporterType, MetricsConfig, MetricsError};
pub use exporter::{BoundEndpoint, Collect, Endpoint, Registry};
pub use meter::{Counter, Histogram};
pub use scrape::{Def, Kind, Scrape};
