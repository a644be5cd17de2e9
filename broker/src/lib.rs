//! The sluice broker: one node of a master/slave pair, serving RocketMQ's standard
//! clients over the remoting protocol from a RocketMQ-compatible store.
//!
//! Layout:
//! - [`assignment`]: broker-side rebalance (QUERY_ASSIGNMENT) and the PULL/POP request
//!   modes, messageRequestMode.json.
//! - [`broker`]: `Broker`, the node's shared state.
//! - [`config`]: `BrokerConfig` with broker.conf key names, `BrokerRole`.
//! - [`topic_config`]: topics, system topics, auto-creation, topics.json.
//! - [`subscription_group`]: consumer group settings, subscriptionGroup.json.
//! - [`consumer_offset`]: committed offsets, consumerOffset.json.
//! - [`delay_offset`]: the schedule service's progress per delay level, delayOffset.json.
//! - [`client_manager`]: connected producers and consumers, heartbeat subscriptions,
//!   consumer-ids-changed notifications.
//! - [`rebalance_lock`]: queue locks of orderly consumers.
//! - [`registration`]: REGISTER_BROKER / UNREGISTER_BROKER to every name server.
//! - [`replication`]: HA service per role, the store as the HA log, promotion point.
//! - [`role`]: the role state machine (promotion, demotion, fencing, following) and the
//!   master-only services that follow the role.
//! - [`durability`]: what a put waits for (flush, slave) before it counts as done.
//! - [`schedule`]: delay levels and the schedule (delay) service.
//! - [`timer`]: 5.x timer messages: refused as RocketMQ with timerWheelEnable=false.
//! - [`transaction`]: half messages, op records and the check-back service.
//! - [`pop`]: POP consumption: checkpoints and acks in the revive log, queue locks,
//!   the revive service.
//! - [`processor`]: request handlers and the mapping of failures to response codes.
//! - [`properties`]: what the broker decides from message properties (send flags, the
//!   real queue of a parked message).
//! - [`grpc`]: the gRPC endpoint of RocketMQ 5's SDKs inside the broker (local mode,
//!   `enableGrpcProxy`), over the `proxy` crate.
//! - [`listen`]: the listening sockets, bound before the store is touched.
//! - [`server`]: serving, registration loop, housekeeping, clean shutdown.
//! - [`service_switch`]: idempotent start/stop of master-only services (one atomic flag).
//! - [`slave_sync`]: a slave's periodic copy of its master's tables.
//! - [`stats`]: counters and TPS windows for runtime info.
//! - [`meters`]: RocketMQ 5's event meters (a put, a pull, a commit counted where it happens).
//! - [`metrics`]: the Prometheus endpoint (`metricsExporterType=PROM`) and the states it reads.
//! - [`pull_hold`]: long polling: held pulls woken by dispatch or their deadline.
//! - [`filter`]: subscription filters (tags), shared by pulls and held pulls.
//! - [`persist`]: the config/*.json files.
//! - [`clock`]: wall-clock milliseconds.

pub mod assignment;
pub mod broker;
pub mod client_manager;
pub mod clock;
pub mod cold_read;
pub mod config;
pub mod consumer_offset;
pub mod delay_offset;
pub mod durability;
pub mod filter;
pub mod grpc;
pub mod listen;
pub mod meters;
pub mod metrics;
pub mod persist;
pub mod pop;
pub mod processor;
pub mod properties;
pub mod pull_hold;
pub mod rebalance_lock;
pub mod registration;
pub mod replication;
pub mod role;
pub mod schedule;
pub mod server;
pub mod service_switch;
pub mod slave_sync;
pub mod stats;
pub mod subscription_group;
pub mod timer;
pub mod topic_attributes;
pub mod topic_config;
pub mod transaction;
