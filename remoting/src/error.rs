//! Errors of the remoting crate: framing, header decoding, typed headers, bodies, transport.

use std::io;
use std::time::Duration;

/// A byte stream that can never become a valid frame. The connection must be closed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// The length prefix is negative.
    #[error("negative frame length {0}")]
    NegativeLength(i32),
    /// The length prefix cannot even hold the header word.
    #[error("frame length {0} is shorter than the 4-byte header word")]
    TooShort(usize),
    /// The length prefix exceeds the configured maximum.
    #[error("frame length {len} exceeds the maximum {max}")]
    TooLarge {
        /// Announced frame length.
        len: usize,
        /// Configured maximum.
        max: usize,
    },
    /// The header length does not fit inside the frame.
    #[error("header length {header_len} does not fit in a frame of {frame_len} bytes")]
    HeaderLengthInvalid {
        /// Announced header length.
        header_len: usize,
        /// Announced frame length.
        frame_len: usize,
    },
    /// A header too long for the 24-bit length field (encoding side).
    #[error("header of {0} bytes exceeds the 24-bit header length field")]
    HeaderTooLarge(usize),
    /// The high byte of the header word is neither 0 (JSON) nor 1 (ROCKETMQ).
    #[error("unknown serialize type {0}")]
    UnknownSerializeType(u8),
    /// The header bytes do not parse.
    #[error("bad header: {0}")]
    Header(#[from] HeaderError),
}

/// The header of a frame does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderError {
    /// JSON header that is not valid JSON or not an object of the expected shape.
    #[error("invalid JSON header: {0}")]
    Json(String),
    /// ROCKETMQ binary header that is truncated or inconsistent.
    #[error("invalid ROCKETMQ header: {0}")]
    Binary(&'static str),
    /// No `code` field.
    #[error("header has no code")]
    MissingCode,
    /// A string in the header is not UTF-8.
    #[error("header string is not UTF-8")]
    Utf8,
}

/// A typed request/response header cannot be built from `extFields`.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtFieldError {
    /// A required field is absent.
    #[error("the custom field <{0}> is null")]
    Missing(&'static str),
    /// A field is present but does not parse as its type.
    #[error("the custom field <{field}> has an invalid value '{value}'")]
    Invalid {
        /// Wire name of the field.
        field: &'static str,
        /// The offending value.
        value: String,
    },
}

/// A JSON body does not parse.
#[derive(Debug, thiserror::Error)]
#[error("invalid {what} body: {reason}")]
pub struct BodyError {
    /// Which body type was expected.
    pub what: &'static str,
    /// Why it was refused.
    pub reason: String,
}

/// Errors of the client and of server-initiated requests.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemotingError {
    /// Could not connect to the address.
    #[error("connect to {addr} failed: {source}")]
    Connect {
        /// Peer address.
        addr: String,
        /// Cause.
        source: io::Error,
    },
    /// Connecting took longer than the timeout.
    #[error("connect to {addr} timed out after {timeout:?}")]
    ConnectTimeout {
        /// Peer address.
        addr: String,
        /// The limit.
        timeout: Duration,
    },
    /// The address is not `host:port`.
    #[error("invalid address '{0}'")]
    InvalidAddress(String),
    /// No response arrived in time.
    #[error("request {opaque} to {addr} timed out after {timeout:?}")]
    Timeout {
        /// Peer address.
        addr: String,
        /// Request id.
        opaque: i32,
        /// The limit.
        timeout: Duration,
    },
    /// The connection closed before the response arrived.
    #[error("connection to {0} closed")]
    ConnectionClosed(String),
    /// Encoding the request failed.
    #[error("cannot encode request: {0}")]
    Encode(#[from] FrameError),
    /// I/O failure.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Result alias of the remoting crate.
pub type Result<T, E = RemotingError> = std::result::Result<T, E>;
