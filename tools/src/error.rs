//! The tools' error type: every failure an operator can see, with the data to act on it.
//! Response errors print as RocketMQ's `MQBrokerException`/`MQClientException` do
//! (`CODE: 17  DESC: ...`), because operators and scripts grep for that.

use message::batch::BatchEncodeError;
use message::id::MessageIdError;
use remoting::{BodyError, ExtFieldError, RemotingError, RequestCode, ResponseCode};
use thiserror::Error;

use crate::stored::DecodeError;

/// Result of the tools library.
pub type Result<T, E = ToolsError> = std::result::Result<T, E>;

/// What went wrong.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ToolsError {
    /// No `-n` and no `NAMESRV_ADDR`.
    #[error("no name server address: pass -n host:port[;host:port] or set NAMESRV_ADDR")]
    NoNamesrv,
    /// Transport failure (connect, timeout, closed connection).
    #[error("{op} to {addr} failed: {source}")]
    Remoting {
        /// Request code name.
        op: String,
        /// Server address.
        addr: String,
        /// Cause.
        source: RemotingError,
    },
    /// Every name server failed; the last error is kept.
    #[error("no name server answered ({tried} tried): {last}")]
    NamesrvUnavailable {
        /// How many were tried.
        tried: usize,
        /// The last failure.
        last: Box<ToolsError>,
    },
    /// The server answered with a non-success code.
    #[error("{op} to {addr}: CODE: {code}  DESC: {remark}")]
    Response {
        /// Request code name.
        op: String,
        /// Server address.
        addr: String,
        /// Response code.
        code: i32,
        /// Response remark (empty when none).
        remark: String,
    },
    /// A response header field is missing or invalid.
    #[error("{op} response from {addr}: {source}")]
    Header {
        /// Request code name.
        op: String,
        /// Server address.
        addr: String,
        /// Cause.
        source: ExtFieldError,
    },
    /// A JSON body does not parse.
    #[error("{op} response from {addr}: {source}")]
    Body {
        /// Request code name.
        op: String,
        /// Server address.
        addr: String,
        /// Cause.
        source: BodyError,
    },
    /// A JSON body we send could not be encoded.
    #[error("cannot encode request body: {0}")]
    Encode(BodyError),
    /// Stored messages in a response do not decode.
    #[error("{op} response from {addr}: {source}")]
    Decode {
        /// Request code name.
        op: String,
        /// Server address.
        addr: String,
        /// Cause.
        source: DecodeError,
    },
    /// A batch could not be encoded.
    #[error(transparent)]
    Batch(#[from] BatchEncodeError),
    /// A message id that is neither an offset id nor usable as a unique key.
    #[error(transparent)]
    MessageId(#[from] MessageIdError),
    /// The name server has no route for a topic (TOPIC_NOT_EXIST), or the route has no
    /// usable queue.
    #[error("no route for topic {topic}: CODE: 17  DESC: {remark}")]
    NoRoute {
        /// Topic.
        topic: String,
        /// The name server's remark, or what is missing.
        remark: String,
    },
    /// A cluster the name server does not know.
    #[error(
        "cluster {cluster} not found. Make sure the specified clusterName exists or the name server connected to is correct."
    )]
    NoCluster {
        /// Cluster name.
        cluster: String,
    },
    /// A broker name with no master (or any) address.
    #[error("no address for broker {broker_name}")]
    NoBroker {
        /// Broker name.
        broker_name: String,
    },
    /// Nothing matched a message query.
    #[error("{0}")]
    NotFound(String),
    /// Bad arguments that clap could not catch.
    #[error("{0}")]
    Usage(String),
    /// Local I/O (writing output, body files).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Several operations of one command failed (each reported as it happened).
    #[error("{failed} of {total} operations failed")]
    Partial {
        /// Failed count.
        failed: usize,
        /// Attempted count.
        total: usize,
    },
}

impl ToolsError {
    /// The server's remark for response errors, else the whole message.
    #[must_use]
    pub fn detail(&self) -> String {
        match self {
            ToolsError::Response { remark, .. } => remark.clone(),
            other => other.to_string(),
        }
    }

    /// The response code, when the server answered with one.
    #[must_use]
    pub fn response_code(&self) -> Option<i32> {
        match self {
            ToolsError::Response { code, .. } => Some(*code),
            ToolsError::NamesrvUnavailable { last, .. } => last.response_code(),
            _ => None,
        }
    }
}

/// `SEND_MESSAGE_V2(310)`-style name of a request code, or the number.
#[must_use]
pub fn op_name(code: i32) -> String {
    RequestCode::try_from(code).map_or_else(|c| format!("request {c}"), |c| c.name().to_owned())
}

/// `TOPIC_NOT_EXIST`-style name of a response code, or the number.
#[must_use]
pub fn response_name(code: i32) -> String {
    ResponseCode::try_from(code).map_or_else(|c| format!("CODE_{c}"), |c| c.name().to_owned())
}
