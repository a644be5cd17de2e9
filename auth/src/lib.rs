//! Authentication and authorization for sluice's servers, as Apache RocketMQ does them:
//! 5.x's ACL 2.0 (users, ACLs of policies on clusters, topics and groups, checked on every
//! request, managed with the AUTH_* admin requests) and 4.9's plain ACL (`plain_acl.yml`), so
//! that 4.9 users can move over.
//!
//! Everything but the metadata files and the plain ACL watcher is sans-io: a request and the
//! peer's IP in, a decision (or Apache's refusal) out.
//!
//! Layout:
//! - [`model`]: users, resources, actions, policies, ACLs.
//! - [`signature`]: the HMAC-SHA1 request signature (client [`Credentials`], server check).
//! - [`grpc`]: the 5.x gRPC SDKs' credentials (`authorization`, `x-mq-date-time`).
//! - [`request`]: which request needs which actions on which resources.
//! - [`cidr`]: source-IP conditions (IPs, CIDRs).
//! - [`evaluate`]: authentication and authorization decisions, with Apache's remarks.
//! - [`store`]: users and ACLs in memory and in files, with Apache's management rules.
//! - [`admin`]: the AUTH_* admin requests.
//! - [`plain`]: the 4.9 plain ACL (YAML files, white addresses, permissions, hot reload).
//! - [`config`]: `AuthConfig`, the broker.conf keys.
//! - [`guard`]: [`Guard`], the one check a server runs before its processors.
//! - [`error`]: start-up errors.
#![deny(unsafe_code)]

pub mod admin;
pub mod cidr;
pub mod config;
pub mod error;
pub mod evaluate;
pub mod grpc;
pub mod guard;
pub mod model;
pub mod plain;
pub mod request;
pub mod signature;
pub mod store;

pub use config::AuthConfig;
pub use error::{AuthError, Result};
pub use guard::Guard;
pub use signature::Credentials;
pub use store::MetadataStore;
