//! The client's side of a call, as the SDKs make it: the endpoint in the protocol's terms
//! (QueryRoute's `endpoints`, Telemetry's `access_point`) and the headers every SDK puts on
//! every call. Written once for sluice's own gRPC clients: `mqgrpc`, `mqbench`'s gRPC loads and
//! the integration tests.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tonic::metadata::MetadataValue;

use crate::pb;
use crate::service::{CLIENT_ID, CLIENT_VERSION, LANGUAGE};

/// The `x-mq-protocol` header.
pub const PROTOCOL: &str = "x-mq-protocol";
/// The `x-mq-request-id` header.
pub const REQUEST_ID: &str = "x-mq-request-id";

/// `host:port` as the protocol's endpoints (scheme IPv4, IPv6 or domain name, as the host reads).
///
/// # Errors
/// It is not `host:port` with a numeric port.
pub fn endpoints(endpoint: &str) -> Result<pb::Endpoints, String> {
    let (host, port) = endpoint
        .rsplit_once(':')
        .ok_or_else(|| format!("endpoint {endpoint:?} is not host:port"))?;
    let port: i32 = port
        .parse()
        .map_err(|_| format!("endpoint {endpoint:?}: bad port"))?;
    let scheme = match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => pb::AddressScheme::IPv4,
        Ok(IpAddr::V6(_)) => pb::AddressScheme::IPv6,
        Err(_) => pb::AddressScheme::DomainName,
    };
    Ok(pb::Endpoints {
        scheme: scheme.into(),
        addresses: vec![pb::Address {
            host: host.to_owned(),
            port,
        }],
    })
}

/// `message` as a call from `client_id` within `timeout`, with the headers every SDK sends:
/// client id, language (RUST), client version, protocol (v2) and a request id.
#[must_use]
pub fn request<T>(message: T, client_id: &str, timeout: Duration) -> tonic::Request<T> {
    static NEXT_REQUEST_ID: AtomicU64 = AtomicU64::new(1);
    let mut request = tonic::Request::new(message);
    request.set_timeout(timeout);
    let headers = request.metadata_mut();
    if let Ok(id) = MetadataValue::try_from(client_id) {
        headers.insert(CLIENT_ID, id);
    }
    headers.insert(LANGUAGE, MetadataValue::from_static("RUST"));
    headers.insert(
        CLIENT_VERSION,
        MetadataValue::from_static(env!("CARGO_PKG_VERSION")),
    );
    headers.insert(PROTOCOL, MetadataValue::from_static("v2"));
    headers.insert(
        REQUEST_ID,
        MetadataValue::from(NEXT_REQUEST_ID.fetch_add(1, Ordering::Relaxed)),
    );
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_name_the_scheme_of_the_host() {
        let e = endpoints("127.0.0.1:8081").unwrap();
        assert_eq!(e.scheme, i32::from(pb::AddressScheme::IPv4));
        assert_eq!(
            e.addresses,
            [pb::Address {
                host: "127.0.0.1".into(),
                port: 8081
            }]
        );
        assert_eq!(
            endpoints("::1:8081").unwrap().scheme,
            i32::from(pb::AddressScheme::IPv6)
        );
        assert_eq!(
            endpoints("proxy.local:8081").unwrap().scheme,
            i32::from(pb::AddressScheme::DomainName)
        );
        assert!(endpoints("127.0.0.1").is_err());
        assert!(endpoints("127.0.0.1:x").is_err());
    }

    #[test]
    fn requests_carry_the_sdk_headers() {
        let first = request((), "me@1", Duration::from_secs(3));
        let second = request((), "me@1", Duration::from_secs(3));
        let h = first.metadata();
        assert_eq!(h.get(CLIENT_ID).unwrap(), "me@1");
        assert_eq!(h.get(LANGUAGE).unwrap(), "RUST");
        assert_eq!(h.get(PROTOCOL).unwrap(), "v2");
        assert!(h.get(CLIENT_VERSION).is_some());
        assert_eq!(h.get("grpc-timeout").unwrap(), "3000000u");
        assert_ne!(
            h.get(REQUEST_ID).unwrap(),
            second.metadata().get(REQUEST_ID).unwrap(),
            "each call its own request id"
        );
    }
}
