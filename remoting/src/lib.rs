//! The RocketMQ remoting protocol, as spoken by the standard clients, `mqadmin`,
//! Apache RocketMQ's name servers and brokers, and every sluice process.
//!
//! Layout:
//! - [`frame`]: sans-io framing (length prefix, header word, header, body).
//! - [`header`]: the JSON and ROCKETMQ binary header encodings, `extFields`.
//! - [`command`]: [`RemotingCommand`], bodies, the [`CommandHeader`] trait.
//! - [`ext_header`]: typed custom headers declared with [`ext_header!`].
//! - [`code`]: every request and response code of RocketMQ 4.9.8 and 5.x.
//! - [`fastjson`]: JSON bodies with fastjson's bare and object map keys.
//! - [`protocol`]: the typed headers and bodies of the protocol.
//! - [`connection`]: one framed TCP connection (read loop, vectored writer,
//!   request/response correlation in both directions).
//! - [`server`]: accept loop and dispatch of requests to processors by code.
//! - [`rpc_metrics`]: `rocketmq_rpc_latency` of the answered requests.
//! - [`client`]: connection cache, sync/async/oneway invocation with timeouts.
//! - [`local`]: a client of a request handler in the same process (no socket).
//! - [`config_file`]: crash-safe config files (temp, fsync, rename, `.bak`).
//! - [`settings`]: `-c FILE -o key=value` configuration loading shared by every binary.
//! - [`net`]: listeners, socket options and address parsing.
//! - [`heap`]: returning the heap freed by a connection storm to the OS.
//! - [`startup`]: the one-line fatal error every binary exits with.
#![warn(clippy::pedantic)]
#![allow(
    clippy::module_name_repetitions,
    reason = "RocketMQ names (RemotingCommand in remoting) are kept on purpose"
)]
#![allow(
    clippy::doc_markdown,
    reason = "docs quote RocketMQ constant names (SEND_MESSAGE_V2, extFields) as prose"
)]

pub mod client;
pub mod code;
pub mod command;
pub mod config_file;
pub mod connection;
pub mod error;
pub mod ext_header;
pub mod fastjson;
pub mod frame;
pub mod header;
pub mod heap;
pub mod local;
pub mod net;
pub mod protocol;
pub mod rpc_metrics;
pub mod server;
pub mod settings;
pub mod startup;

pub use client::{RemotingClient, RequestHook};
pub use code::{RequestCode, ResponseCode};
pub use command::{Body, CommandHeader, RemotingCommand};
pub use connection::Channel;
pub use error::{BodyError, ExtFieldError, FrameError, HeaderError, RemotingError, Result};
pub use frame::{FrameDecoder, SerializeType};
pub use header::{ExtFields, LanguageCode};
pub use server::{Processor, Reply, ServerConfig};
