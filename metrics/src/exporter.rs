//! The Prometheus endpoint (`metricsExporterType=PROM`): every path answers a scrape, as
//! RocketMQ's exporter does (`/metrics` is what Prometheus asks for), `/-/healthy`
//! answers that it is up. Scrapes are OpenMetrics text, which Prometheus asks for first;
//! the figures are read when the scrape comes, on a blocking thread (walking every
//! group's offsets must not stall the runtime).

use std::borrow::Cow;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use tracing::{info, warn};

use crate::config::MetricsError;
use crate::scrape::{Scrape, escape_label_value};

/// OpenMetrics' media type.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A source of figures, asked on every scrape.
pub trait Collect: fmt::Debug + Send + Sync + 'static {
    /// Writes its metrics.
    fn collect(&self, scrape: &mut Scrape<'_>) -> fmt::Result;
}

#[derive(Debug)]
struct Adapter<C>(C);

impl<C: Collect> Collector for Adapter<C> {
    fn encode(&self, encoder: DescriptorEncoder<'_>) -> fmt::Result {
        self.0.collect(&mut Scrape::new(encoder))
    }
}

/// What one process exports: its collectors under the labels every series carries
/// (`cluster`, `node_type`, `node_id`, then `metricsLabel`'s).
#[derive(Debug)]
pub struct Registry {
    inner: prometheus_client::registry::Registry,
}

impl Registry {
    /// A registry for a process identified by `own` labels (`cluster`, `node_type`,
    /// `node_id`), with `config`'s labels added (an own label wins over a configured one of
    /// the same name, as in RocketMQ).
    #[must_use]
    pub fn for_process(own: &[(&str, &str)], config: &crate::MetricsConfig) -> Self {
        let mut labels: Vec<(String, String)> = own
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        for (k, v) in config.extra_labels() {
            if !labels.iter().any(|(own, _)| *own == k) {
                labels.push((k, v));
            }
        }
        Registry::new(labels)
    }

    /// A registry whose series all carry `labels` (values escaped here).
    #[must_use]
    pub fn new(labels: Vec<(String, String)>) -> Self {
        let labels = labels
            .into_iter()
            .map(|(k, v)| (Cow::Owned(k), Cow::Owned(escape_label_value(&v))));
        Registry {
            inner: prometheus_client::registry::Registry::with_labels(labels),
        }
    }

    /// Adds a source of figures.
    pub fn register(&mut self, collector: impl Collect) {
        self.inner.register_collector(Box::new(Adapter(collector)));
    }

    /// One scrape, as text.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(16 * 1024);
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.inner) {
            warn!(error = %e, "a metrics scrape could not be written");
        }
        out
    }
}

/// The running endpoint.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

/// The endpoint's port, bound and not yet served (a process binds every port before it
/// opens anything else).
#[derive(Debug)]
pub struct BoundEndpoint {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
}

impl BoundEndpoint {
    /// Binds `host:port`, within a tokio runtime (an error names the address, so the
    /// process can refuse to start; once bound, serving cannot fail).
    pub fn bind(host: &str, port: u16) -> Result<Self, MetricsError> {
        let addr_text = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let bind_err = |source| MetricsError::Bind {
            addr: addr_text.clone(),
            source,
        };
        let listener = std::net::TcpListener::bind(&addr_text).map_err(bind_err)?;
        listener.set_nonblocking(true).map_err(bind_err)?;
        let addr = listener.local_addr().map_err(bind_err)?;
        let listener = tokio::net::TcpListener::from_std(listener).map_err(bind_err)?;
        Ok(BoundEndpoint { listener, addr })
    }

    /// The bound address.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves `registry` on the current tokio runtime.
    #[must_use]
    pub fn serve(self, registry: Arc<Registry>) -> Endpoint {
        let BoundEndpoint { listener, addr } = self;
        let app = Router::new()
            .route("/-/healthy", get(|| async { "Exporter is Healthy." }))
            .fallback(move || scrape(Arc::clone(&registry)));
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                warn!(error = %e, "metrics endpoint stopped");
            }
        });
        info!(%addr, "metrics endpoint listening (Prometheus)");
        Endpoint { addr, task }
    }
}

impl Endpoint {
    /// Binds `host:port` and serves `registry` on the current tokio runtime.
    pub fn start(registry: Arc<Registry>, host: &str, port: u16) -> Result<Self, MetricsError> {
        Ok(BoundEndpoint::bind(host, port)?.serve(registry))
    }

    /// The bound address.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn scrape(registry: Arc<Registry>) -> impl IntoResponse {
    match tokio::task::spawn_blocking(move || registry.encode()).await {
        Ok(text) => (StatusCode::OK, [(header::CONTENT_TYPE, CONTENT_TYPE)], text),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            format!("scrape failed: {e}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::{Histogram, RPC_LATENCY_MS};
    use crate::scrape::{Def, flag};

    #[derive(Debug)]
    struct Fixed {
        latency: Histogram,
    }

    const IN: Def = Def::counter(
        "rocketmq_messages_in_total",
        "Total number of incoming messages",
    );
    const LAT: Def = Def::histogram("rocketmq_rpc_latency", "Rpc latency").unit("milliseconds");
    const EMPTY: Def = Def::gauge("rocketmq_nothing", "never has a series");

    impl Collect for Fixed {
        fn collect(&self, s: &mut Scrape<'_>) -> fmt::Result {
            s.counter(
                &IN,
                &[(
                    vec![("topic", "T\"q".into()), ("is_system", flag(false))],
                    7,
                )],
            )?;
            s.gauge(&EMPTY, &[])?;
            s.histogram(
                &LAT,
                &[(
                    vec![("request_code", "send_message_v2".into())],
                    self.latency.snapshot(),
                )],
            )
        }
    }

    #[test]
    fn exposition_has_rocketmq_sample_names_and_common_labels() {
        let mut r = Registry::new(vec![
            ("cluster".into(), "C".into()),
            ("node_type".into(), "broker".into()),
        ]);
        let latency = Histogram::new(RPC_LATENCY_MS);
        latency.observe(2);
        latency.observe(5000);
        r.register(Fixed { latency });
        let text = r.encode();
        assert!(
            text.contains(
                "rocketmq_messages_in_total{cluster=\"C\",node_type=\"broker\",topic=\"T\\\"q\",is_system=\"false\"} 7\n"
            ),
            "{text}"
        );
        assert!(!text.contains("rocketmq_nothing"), "{text}");
        assert!(text.contains("rocketmq_rpc_latency_milliseconds_count{cluster=\"C\",node_type=\"broker\",request_code=\"send_message_v2\"} 2\n"), "{text}");
        assert!(text.contains("rocketmq_rpc_latency_milliseconds_bucket{cluster=\"C\",node_type=\"broker\",le=\"3.0\",request_code=\"send_message_v2\"} 1\n"), "{text}");
        assert!(
            text.contains("le=\"+Inf\",request_code=\"send_message_v2\"} 2\n"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[tokio::test]
    async fn endpoint_serves_any_path_and_refuses_a_taken_port() {
        let r = Arc::new(Registry::new(vec![]));
        let ep = Endpoint::start(Arc::clone(&r), "127.0.0.1", 0).expect("bind");
        let taken = Endpoint::start(r, "127.0.0.1", ep.addr().port());
        assert!(matches!(taken, Err(MetricsError::Bind { .. })));
        let mut s = tokio::net::TcpStream::connect(ep.addr())
            .await
            .expect("connect");
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        s.write_all(b"GET /anything HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("write");
        let mut got = String::new();
        s.read_to_string(&mut got).await.expect("read");
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        assert!(got.contains("openmetrics-text"), "{got}");
        assert!(got.contains("# EOF"), "{got}");
    }
}
