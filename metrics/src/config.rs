//! The metrics keys of RocketMQ 5's `BrokerConfig`, with its defaults: exporting is off
//! (`DISABLE`) until `metricsExporterType=PROM`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// RocketMQ's default `metricsPromExporterPort`.
pub const DEFAULT_PROM_PORT: u16 = 5557;

/// Why metrics cannot be exported as configured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// `metricsExporterType` names no exporter RocketMQ has.
    #[error("metricsExporterType '{0}' is not one of DISABLE, OTLP_GRPC, PROM, LOG (or 0-3)")]
    UnknownExporter(String),
    /// An exporter RocketMQ has and sluice does not.
    #[error("metricsExporterType={0} is not supported by sluice (PROM or DISABLE)")]
    Unsupported(ExporterType),
    /// The endpoint's port could not be bound.
    #[error("cannot bind the metrics endpoint (metricsPromExporterPort) on {addr}: {source}")]
    Bind {
        /// host:port.
        addr: String,
        /// Cause.
        source: std::io::Error,
    },
}

/// `metricsExporterType` (RocketMQ's `MetricsExporterType`; its numbers are accepted too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
#[allow(
    non_camel_case_types,
    clippy::upper_case_acronyms,
    reason = "spelled as RocketMQ spells them in broker.conf"
)]
pub enum ExporterType {
    /// No metrics (RocketMQ's default).
    #[default]
    DISABLE,
    /// Push over OTLP/gRPC (not in sluice).
    OTLP_GRPC,
    /// The Prometheus endpoint.
    PROM,
    /// Metrics written to the log (not in sluice).
    LOG,
}

impl FromStr for ExporterType {
    type Err = MetricsError;

    fn from_str(s: &str) -> Result<Self, MetricsError> {
        match s.trim() {
            "DISABLE" | "0" => Ok(ExporterType::DISABLE),
            "OTLP_GRPC" | "1" => Ok(ExporterType::OTLP_GRPC),
            "PROM" | "2" => Ok(ExporterType::PROM),
            "LOG" | "3" => Ok(ExporterType::LOG),
            other => Err(MetricsError::UnknownExporter(other.to_owned())),
        }
    }
}

impl TryFrom<String> for ExporterType {
    type Error = MetricsError;

    fn try_from(s: String) -> Result<Self, MetricsError> {
        s.parse()
    }
}

impl From<ExporterType> for String {
    fn from(t: ExporterType) -> String {
        t.to_string()
    }
}

impl fmt::Display for ExporterType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ExporterType::DISABLE => "DISABLE",
            ExporterType::OTLP_GRPC => "OTLP_GRPC",
            ExporterType::PROM => "PROM",
            ExporterType::LOG => "LOG",
        })
    }
}

/// The metrics settings of a broker (and of sluice's name server, which reads the same
/// keys).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MetricsConfig {
    /// Which exporter (`DISABLE`).
    pub metrics_exporter_type: ExporterType,
    /// Address the endpoint binds; blank: the broker's `brokerIP1` (as RocketMQ), the
    /// name server's bind address.
    pub metrics_prom_exporter_host: String,
    /// Port of the endpoint (5557).
    pub metrics_prom_exporter_port: u16,
    /// `k:v,k:v` labels added to every series.
    pub metrics_label: String,
    /// Adds `aggregation="delta"` to every series, as RocketMQ does (the endpoint itself
    /// always reports cumulative figures, as RocketMQ's does).
    pub metrics_in_delta: bool,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            metrics_exporter_type: ExporterType::DISABLE,
            metrics_prom_exporter_host: String::new(),
            metrics_prom_exporter_port: DEFAULT_PROM_PORT,
            metrics_label: String::new(),
            metrics_in_delta: false,
        }
    }
}

impl MetricsConfig {
    /// Whether metrics are recorded and served; an exporter sluice lacks is an error, so
    /// that a broker configured for it does not start without it.
    pub fn enabled(&self) -> Result<bool, MetricsError> {
        match self.metrics_exporter_type {
            ExporterType::DISABLE => Ok(false),
            ExporterType::PROM => Ok(true),
            other => Err(MetricsError::Unsupported(other)),
        }
    }

    /// The labels every series carries besides the process's own (`cluster`, `node_type`,
    /// `node_id`): `metricsLabel`'s pairs (malformed ones skipped with a warning, as
    /// RocketMQ does), then `aggregation` when `metricsInDelta`.
    #[must_use]
    pub fn extra_labels(&self) -> Vec<(String, String)> {
        let mut labels = Vec::new();
        for item in self.metrics_label.split(',').filter(|s| !s.is_empty()) {
            let parts: Vec<&str> = item.split(':').collect();
            match parts.as_slice() {
                [k, v] if !k.trim().is_empty() => {
                    labels.push((crate::scrape::label_key(k.trim()), (*v).trim().to_owned()));
                }
                _ => tracing::warn!(item, "metricsLabel item is not key:value, skipped"),
            }
        }
        if self.metrics_in_delta {
            labels.push(("aggregation".to_owned(), "delta".to_owned()));
        }
        labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exporter_types_by_name_and_number() {
        assert_eq!(
            "PROM".parse::<ExporterType>().ok(),
            Some(ExporterType::PROM)
        );
        assert_eq!("2".parse::<ExporterType>().ok(), Some(ExporterType::PROM));
        assert_eq!(
            "0".parse::<ExporterType>().ok(),
            Some(ExporterType::DISABLE)
        );
        assert!("prometheus".parse::<ExporterType>().is_err());
    }

    #[test]
    fn only_prom_and_disable_are_served() {
        let mut c = MetricsConfig::default();
        assert!(!c.enabled().unwrap_or(true));
        c.metrics_exporter_type = ExporterType::PROM;
        assert!(c.enabled().unwrap_or(false));
        c.metrics_exporter_type = ExporterType::OTLP_GRPC;
        assert!(matches!(c.enabled(), Err(MetricsError::Unsupported(_))));
    }

    #[test]
    fn metrics_label_pairs() {
        let c = MetricsConfig {
            metrics_label: "instance_id:i-1,bad,uid:42,a:b:c,,x-y:z".to_owned(),
            metrics_in_delta: true,
            ..MetricsConfig::default()
        };
        assert_eq!(
            c.extra_labels(),
            vec![
                ("instance_id".to_owned(), "i-1".to_owned()),
                ("uid".to_owned(), "42".to_owned()),
                ("x_y".to_owned(), "z".to_owned()),
                ("aggregation".to_owned(), "delta".to_owned()),
            ]
        );
    }
}
