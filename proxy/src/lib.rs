//! The native gRPC endpoint of sluice for the RocketMQ 5.x SDKs (issue 17).
//!
//! RocketMQ 5's gRPC clients (Java `rocketmq-client-java`, Go `golang/v5`, Python, C++, ...)
//! do not speak remoting: they call `apache.rocketmq.v2.MessagingService` over HTTP/2. Apache
//! serves it from a separate proxy; this crate is where sluice serves it itself, in two modes:
//!
//! - local mode: inside `mqbroker`, calling the broker through an in-process trait;
//! - cluster mode: a separate `mqproxy` process in front of name servers and brokers, speaking
//!   remoting to them as Apache's proxy does.
//!
//! Only the protocol layer exists so far: [`pb`], generated at build time from our own
//! statement of the protocol in `proto/apache/rocketmq/v2/` (same package, names, field
//! numbers and rpc shapes as the official definitions, so the SDKs work unmodified).
//!
//! Layout:
//! - [`pb`]: the `apache.rocketmq.v2` messages (prost), the `MessagingService` server trait
//!   and a client (for tests), and tests that pin encodings to hand-worked bytes.

pub mod pb;
