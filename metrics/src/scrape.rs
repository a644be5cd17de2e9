//! One scrape: each metric described once, then its series, written with the
//! `prometheus-client` encoder (OpenMetrics text).
//!
//! Names follow what RocketMQ 5.3's OpenTelemetry Prometheus exporter writes, so
//! queries written against RocketMQ work here: a counter keeps its `_total` name, a unit
//! is appended to the sample name unless the name already holds it
//! (`rocketmq_rpc_latency` in milliseconds is sampled as
//! `rocketmq_rpc_latency_milliseconds_bucket`, `rocketmq_storage_flush_behind_bytes`
//! stays as it is), and a metric without a series is left out entirely.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelSet, EncodeLabelValue, LabelSetEncoder, LabelValueEncoder,
    NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use crate::meter::HistogramSnapshot;

/// What kind of figure a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up.
    Counter,
    /// A level now.
    Gauge,
    /// Observations in buckets.
    Histogram,
}

/// A metric's description: RocketMQ's name (counters with their `_total`), help text and
/// unit.
#[derive(Debug, Clone, Copy)]
pub struct Def {
    /// RocketMQ's metric name.
    pub name: &'static str,
    /// What it measures.
    pub help: &'static str,
    /// OpenTelemetry unit (`milliseconds`, `bytes`, `seconds`), if any.
    pub unit: Option<&'static str>,
    /// Counter, gauge or histogram.
    pub kind: Kind,
}

impl Def {
    /// A counter.
    #[must_use]
    pub const fn counter(name: &'static str, help: &'static str) -> Self {
        Def {
            name,
            help,
            unit: None,
            kind: Kind::Counter,
        }
    }

    /// A gauge.
    #[must_use]
    pub const fn gauge(name: &'static str, help: &'static str) -> Self {
        Def {
            name,
            help,
            unit: None,
            kind: Kind::Gauge,
        }
    }

    /// A histogram.
    #[must_use]
    pub const fn histogram(name: &'static str, help: &'static str) -> Self {
        Def {
            name,
            help,
            unit: None,
            kind: Kind::Histogram,
        }
    }

    /// The same, with a unit.
    #[must_use]
    pub const fn unit(mut self, unit: &'static str) -> Self {
        self.unit = Some(unit);
        self
    }

    /// The name a query uses: a counter's samples (`..._total`), a gauge's, or the stem
    /// of a histogram's (`_bucket`, `_sum`, `_count` follow); the unit is appended unless
    /// the name already holds it.
    #[must_use]
    pub fn sample_name(&self) -> String {
        let (base, unit) = self.encoder_parts();
        let mut name = base.to_owned();
        if let Some(u) = unit {
            name.push('_');
            name.push_str(u.as_str());
        }
        if self.kind == Kind::Counter {
            name.push_str("_total");
        }
        name
    }

    /// (family name, unit) as given to the encoder, which appends the unit itself.
    fn encoder_parts(&self) -> (&'static str, Option<Unit>) {
        let base = match self.kind {
            Kind::Counter => self.name.strip_suffix("_total").unwrap_or(self.name),
            _ => self.name,
        };
        match self.unit {
            Some(u) if !self.name.contains(u) => (base, Some(Unit::Other(u.to_owned()))),
            _ => (base, None),
        }
    }

    fn metric_type(&self) -> MetricType {
        match self.kind {
            Kind::Counter => MetricType::Counter,
            Kind::Gauge => MetricType::Gauge,
            Kind::Histogram => MetricType::Histogram,
        }
    }
}

/// The labels of one series: (key, value) pairs, values escaped when written.
pub type Labels<'a> = Vec<(&'static str, Cow<'a, str>)>;

/// The series of one metric: labels and value.
pub type Series<'a, V> = Vec<(Labels<'a>, V)>;

/// A label value escaped as the text format requires (`\`, `"` and newlines).
#[derive(Debug)]
struct Escaped<'a>(&'a str);

impl EncodeLabelValue for Escaped<'_> {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> fmt::Result {
        write_escaped(encoder, self.0)
    }
}

fn write_escaped(w: &mut impl fmt::Write, s: &str) -> fmt::Result {
    if !s.contains(['\\', '"', '\n']) {
        return w.write_str(s);
    }
    for c in s.chars() {
        match c {
            '\\' => w.write_str("\\\\")?,
            '"' => w.write_str("\\\"")?,
            '\n' => w.write_str("\\n")?,
            c => w.write_char(c)?,
        }
    }
    Ok(())
}

/// `s` escaped as a label value (for labels handed to the encoder as they are).
#[must_use]
pub fn escape_label_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let _ = write_escaped(&mut out, s);
    out
}

/// `s` made a valid label name (`[a-zA-Z_][a-zA-Z0-9_]*`), as OpenTelemetry sanitises
/// attribute keys.
#[must_use]
pub fn label_key(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

#[derive(Debug)]
struct LabelSet<'l, 'a>(&'l Labels<'a>);

impl EncodeLabelSet for LabelSet<'_, '_> {
    fn encode(&self, encoder: &mut LabelSetEncoder<'_>) -> fmt::Result {
        for (k, v) in self.0 {
            let mut label = encoder.encode_label();
            let mut key = label.encode_label_key()?;
            key.write_str(k)?;
            let mut value = key.encode_label_value()?;
            Escaped(v).encode(&mut value)?;
            value.finish()?;
        }
        Ok(())
    }
}

/// A `true`/`false` label value.
#[must_use]
pub fn flag(b: bool) -> Cow<'static, str> {
    Cow::Borrowed(if b { "true" } else { "false" })
}

/// Writes the metrics of one collector.
#[derive(Debug)]
pub struct Scrape<'e> {
    encoder: DescriptorEncoder<'e>,
}

impl<'e> Scrape<'e> {
    /// Writes through `encoder` (what a [`prometheus_client::collector::Collector`] gets).
    #[must_use]
    pub fn new(encoder: DescriptorEncoder<'e>) -> Self {
        Scrape { encoder }
    }

    /// A counter's series (nothing written when there are none).
    pub fn counter(&mut self, def: &Def, series: &[(Labels<'_>, u64)]) -> fmt::Result {
        debug_assert_eq!(def.kind, Kind::Counter);
        self.family(def, series, |enc, v| {
            enc.encode_counter::<NoLabelSet, _, u64>(v, None)
        })
    }

    /// A gauge's series (nothing written when there are none).
    pub fn gauge(&mut self, def: &Def, series: &[(Labels<'_>, i64)]) -> fmt::Result {
        debug_assert_eq!(def.kind, Kind::Gauge);
        self.family(def, series, |enc, v| enc.encode_gauge(v))
    }

    /// A gauge with fractional values (a ratio).
    pub fn gauge_f64(&mut self, def: &Def, series: &[(Labels<'_>, f64)]) -> fmt::Result {
        debug_assert_eq!(def.kind, Kind::Gauge);
        self.family(def, series, |enc, v| enc.encode_gauge(v))
    }

    /// A histogram's series (nothing written when there are none).
    pub fn histogram(
        &mut self,
        def: &Def,
        series: &[(Labels<'_>, HistogramSnapshot)],
    ) -> fmt::Result {
        debug_assert_eq!(def.kind, Kind::Histogram);
        self.family(def, series, |enc, h| {
            enc.encode_histogram::<NoLabelSet>(h.sum as f64, h.count, &h.buckets, None)
        })
    }

    fn family<V>(
        &mut self,
        def: &Def,
        series: &[(Labels<'_>, V)],
        mut write: impl FnMut(&mut prometheus_client::encoding::MetricEncoder<'_>, &V) -> fmt::Result,
    ) -> fmt::Result {
        if series.is_empty() {
            return Ok(());
        }
        let (name, unit) = def.encoder_parts();
        let mut metric =
            self.encoder
                .encode_descriptor(name, def.help, unit.as_ref(), def.metric_type())?;
        for (labels, value) in series {
            let set = LabelSet(labels);
            let mut one = metric.encode_family(&set)?;
            write(&mut one, value)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_names_follow_rocketmq_5() {
        let c = Def::counter("rocketmq_messages_in_total", "");
        assert_eq!(c.sample_name(), "rocketmq_messages_in_total");
        let h = Def::histogram("rocketmq_rpc_latency", "").unit("milliseconds");
        assert_eq!(h.sample_name(), "rocketmq_rpc_latency_milliseconds");
        let g = Def::gauge("rocketmq_storage_flush_behind_bytes", "").unit("bytes");
        assert_eq!(g.sample_name(), "rocketmq_storage_flush_behind_bytes");
        let s = Def::gauge("rocketmq_storage_size", "").unit("bytes");
        assert_eq!(s.sample_name(), "rocketmq_storage_size_bytes");
    }

    #[test]
    fn label_values_are_escaped_and_keys_sanitised() {
        assert_eq!(escape_label_value(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape_label_value("plain"), "plain");
        assert_eq!(label_key("x-y.z"), "x_y_z");
        assert_eq!(label_key("9a"), "_9a");
    }
}
