//! Request processors: one [`Processor`](remoting::server::Processor) that routes every
//! broker code to a handler function, and the one place where handler failures turn
//! into RocketMQ response codes and remarks.
//!
//! Layout:
//! - `client`: heartbeat, unregister, client config check, consumer lists, offsets,
//!   orderly locks (RocketMQ's ClientManageProcessor + ConsumerManageProcessor).
//! - `send`: the three send codes.

use remoting::{BodyError, ExtFieldError, RemotingCommand, ResponseCode};

pub mod client;
pub mod send;

/// Why a request failed; becomes the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Response code.
    pub code: ResponseCode,
    /// Remark for the client.
    pub remark: String,
}

impl Refusal {
    /// A refusal with `code` and `remark`.
    pub fn new(code: ResponseCode, remark: impl Into<String>) -> Self {
        Refusal {
            code,
            remark: remark.into(),
        }
    }

    /// SYSTEM_ERROR with `remark`.
    pub fn system(remark: impl Into<String>) -> Self {
        Refusal::new(ResponseCode::SystemError, remark)
    }

    /// The response it stands for.
    #[must_use]
    pub fn into_response(self) -> RemotingCommand {
        RemotingCommand::response(self.code, Some(self.remark))
    }
}

impl From<ExtFieldError> for Refusal {
    fn from(e: ExtFieldError) -> Self {
        Refusal::system(e.to_string())
    }
}

impl From<BodyError> for Refusal {
    fn from(e: BodyError) -> Self {
        Refusal::system(e.to_string())
    }
}

/// What a handler returns.
pub type Handled = Result<RemotingCommand, Refusal>;

/// The response for a handler's outcome.
#[must_use]
pub fn respond(outcome: Handled) -> RemotingCommand {
    outcome.unwrap_or_else(Refusal::into_response)
}

/// A SUCCESS response with no remark.
#[must_use]
pub fn success() -> RemotingCommand {
    RemotingCommand::response(ResponseCode::Success, None)
}
