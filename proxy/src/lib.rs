//! The native gRPC endpoint of sluice for the RocketMQ 5.x SDKs (issue 17).
//!
//! RocketMQ 5's gRPC clients (Java `rocketmq-client-java`, Go `golang/v5`, Python, C++, ...)
//! do not speak remoting: they call `apache.rocketmq.v2.MessagingService` over HTTP/2. Apache
//! serves it from a separate proxy; this crate is where sluice serves it itself, in two modes:
//!
//! - cluster mode: `mqproxy`, a separate process in front of name servers and brokers
//!   (sluice's or Apache's), speaking remoting to them as Apache's proxy does;
//! - local mode: inside `mqbroker` (`enableGrpcProxy=true`, or `--enable-proxy` as Apache's
//!   script), calling its own broker in-process through the same [`backend::Backend`] seam
//!   ([`local::LocalBackend`]); routes name each broker's own gRPC endpoint ([`local::Mode`]).
//!
//! The semantics (what a gRPC call becomes in remoting commands, and back) are written once,
//! above the seam; only the transport differs. Served so far: the sending side (QueryRoute,
//! Heartbeat, SendMessage, Telemetry settings, NotifyClientTermination), transactions
//! (transactional SendMessage, EndTransaction, orphaned-transaction recovery over Telemetry,
//! the transactional producer groups registered with the brokers) and the consuming side over
//! POP (ReceiveMessage, AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue,
//! QueryAssignment); every other rpc answers NOT_IMPLEMENTED.
//!
//! Layout:
//! - [`pb`]: the `apache.rocketmq.v2` messages (prost) and the `MessagingService` server and
//!   client (tonic), generated from our own `.proto` files.
//! - [`backend`]: the seam: remoting commands to a name server or broker ([`Backend`]); the
//!   cluster-mode [`ClusterBackend`].
//! - [`local`]: local mode: [`LocalBackend`] (this broker in-process, the rest over
//!   remoting) and [`Mode`], what the semantics do differently inside a broker.
//! - [`route`]: topic routes from the name server, cached; the queue a send goes to.
//! - [`metadata`]: a topic's `message.type`, read from a broker, cached; the type check.
//! - [`convert`]: gRPC messages to RocketMQ properties and send requests, send responses to
//!   result entries, routes to QueryRoute's queues.
//! - [`consume`]: receiving over POP: ReceiveMessage, acks, invisible time, the DLQ,
//!   assignments; popped messages as the SDKs receive them; a group's FIFO flag and attempts.
//! - [`settings`]: the clients' telemetry settings and the server's answer.
//! - [`status`]: failures as the protocol reports them ([`Refusal`]), code mappings.
//! - [`transaction`]: half messages' brokers and offsets, EndTransaction, the brokers'
//!   check-backs to a producer's telemetry stream, the producer groups' registration.
//! - [`resource`]: the topics and groups a client may name.
//! - [`presence`]: gRPC clients registered with the broker in local mode, each on a
//!   connection of its own, so tools list them and the broker can ask them.
//! - [`relay`]: the broker's questions to one client (thread stacks, a message to verify)
//!   over its telemetry stream, and the client's answers back.
//! - [`service`]: the tonic service ([`MessagingProxy`]).
//! - [`server`]: serving it on a bound listener with keepalive.
//! - [`config`]: [`ProxyConfig`], Apache's `rmq-proxy.json` keys.
//! - [`client`]: the client's side of a call (endpoints, the SDKs' headers), for sluice's own
//!   gRPC clients (`mqgrpc`, `mqbench`, the tests).
//! - [`clock`]: milliseconds since the epoch.
//! - [`auth`]: authentication and authorization of every call ([`auth::Gate`]) against the
//!   ACL 2.0 users and policies, read from the brokers (cluster mode) or a directory at hand.
//! - [`tls`]: TLS on the gRPC port (rustls): disabled, permissive (TLS and plaintext on one
//!   port) or enforcing; a self-signed certificate in test mode.

pub mod auth;
pub mod backend;
pub mod client;
pub mod clock;
pub mod config;
pub mod consume;
pub mod convert;
pub mod local;
pub mod metadata;
pub mod pb;
pub mod presence;
pub mod relay;
pub mod resource;
pub mod route;
pub mod server;
pub mod service;
pub mod settings;
pub mod status;
pub mod tls;
pub mod transaction;

#[cfg(test)]
mod test_util;

pub use backend::{Backend, BackendError, ClusterBackend, Target};
pub use config::ProxyConfig;
pub use local::{LocalBackend, LocalBroker, Mode};
pub use service::MessagingProxy;
pub use status::Refusal;
