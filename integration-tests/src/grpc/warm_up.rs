//! One QueryRoute through a gRPC endpoint before its first case.
//!
//! A proxy's first call does what no later one does: a cold JVM compiles its paths, the proxy
//! opens its connections to the name server and the broker, and with authentication on it
//! loads the caller's user and ACL from the broker. On a busy two-core machine that can
//! outlast the SDKs' own start-up deadline (3 s: seen with Go's SDK against Apache's proxy over
//! Apache's ACL broker), and the cases test the SDKs' behaviour, not a cold start. Every system
//! is warmed the same way, sluice's and Apache's.

use std::time::{Duration, Instant};

use proxy::pb;
use proxy::pb::messaging_service_client::MessagingServiceClient;
use tonic::metadata::MetadataValue;
use tonic::transport::Endpoint;

use crate::driver::utc_now;

/// How long the warm-up may take in all.
const WARM_UP_TIMEOUT: Duration = Duration::from_secs(60);

/// Asks `endpoint` (`127.0.0.1:port`) for the route of `topic`, signed with `credentials`
/// (access key, secret key) when given, until it answers, whatever the answer, or
/// [`WARM_UP_TIMEOUT`] passes.
///
/// # Errors
/// `endpoint` is not `host:port`, or no answer came in time: what the last attempt met.
pub fn warm_up(
    endpoint: &str,
    topic: &str,
    credentials: Option<(&str, &str)>,
) -> Result<Duration, String> {
    let address = proxy::client::endpoints(endpoint)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime for the warm-up: {e}"))?;
    let started = Instant::now();
    runtime.block_on(async {
        let mut last = String::new();
        while started.elapsed() < WARM_UP_TIMEOUT {
            match query_route(endpoint, &address, topic, credentials).await {
                Ok(()) => return Ok(started.elapsed()),
                Err(why) => last = why,
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(format!(
            "{endpoint} did not answer a QueryRoute within {WARM_UP_TIMEOUT:?}: {last}"
        ))
    })
}

/// One QueryRoute to `endpoint` (`address` in the request); `Ok` for any answer of the
/// service (a refusal too), `Err` when the call got none (not connected, timed out).
async fn query_route(
    endpoint: &str,
    address: &pb::Endpoints,
    topic: &str,
    credentials: Option<(&str, &str)>,
) -> Result<(), String> {
    let channel = Endpoint::from_shared(format!("http://{endpoint}"))
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let mut request = proxy::client::request(
        pb::QueryRouteRequest {
            topic: Some(pb::Resource {
                resource_namespace: String::new(),
                name: topic.to_owned(),
            }),
            endpoints: Some(address.clone()),
        },
        "sluice-it-warm-up",
        Duration::from_secs(20),
    );
    let m = request.metadata_mut();
    if let Some((access_key, secret_key)) = credentials {
        let date_time = utc_now("+%Y%m%dT%H%M%SZ");
        let signed = auth::grpc::authorization(access_key, secret_key, &date_time);
        m.insert(
            auth::grpc::DATE_TIME,
            MetadataValue::try_from(date_time.as_str()).map_err(|e| e.to_string())?,
        );
        m.insert(
            auth::grpc::AUTHORIZATION,
            MetadataValue::try_from(signed.as_str()).map_err(|e| e.to_string())?,
        );
    }
    match MessagingServiceClient::new(channel)
        .query_route(request)
        .await
    {
        Ok(_) => Ok(()),
        // The service answered with a gRPC status of its own: it is warm all the same.
        Err(s)
            if !matches!(
                s.code(),
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
            ) =>
        {
            Ok(())
        }
        Err(s) => Err(format!("{:?} {}", s.code(), s.message())),
    }
}
