//! Outcomes of gRPC calls: the one place where failures become the `Status` a response
//! carries.
//!
//! The protocol reports a call's failure in its response (`status.code`), not as a gRPC
//! error: the SDKs read that field and decide whether to retry. So every handler works with
//! [`Refusal`] (a protocol [`Code`] and a message) and the service writes it into the
//! response. The mappings are Apache's proxy's (`ResponseBuilder`, `GrpcProxyException`):
//! a remoting response code through [`code_of_response`], a transport failure through
//! [`From<BackendError>`].

use remoting::ResponseCode;

use crate::backend::BackendError;
use crate::pb::{Code, Status};

/// A call answered with a failure code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct Refusal {
    /// The protocol code.
    pub code: Code,
    /// What went wrong, for the client's log.
    pub message: String,
}

impl Refusal {
    /// A refusal with `code`.
    #[must_use]
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Refusal {
            code,
            message: message.into(),
        }
    }

    /// `NOT_IMPLEMENTED`: what this endpoint does not serve (yet).
    #[must_use]
    pub fn not_implemented(what: &str) -> Self {
        Refusal::new(
            Code::NotImplemented,
            format!("{what} is not implemented by this proxy yet"),
        )
    }

    /// A broker's or name server's failure response, mapped as Apache's proxy maps it.
    #[must_use]
    pub fn from_response(code: i32, remark: Option<&str>) -> Self {
        Refusal::new(
            code_of_response(code),
            remark.map_or_else(|| code.to_string(), str::to_owned),
        )
    }

    /// The status a response carries.
    #[must_use]
    pub fn status(&self) -> Status {
        Status {
            code: self.code.into(),
            message: self.message.clone(),
        }
    }
}

impl From<BackendError> for Refusal {
    fn from(e: BackendError) -> Self {
        match e {
            // RemotingTimeoutException: PROXY_TIMEOUT; a broken or refused connection is
            // nothing Apache maps, so INTERNAL_SERVER_ERROR.
            BackendError::Timeout { .. } => Refusal::new(Code::ProxyTimeout, e.to_string()),
            _ => Refusal::new(Code::InternalServerError, e.to_string()),
        }
    }
}

/// `OK` with its name as the message, as Apache answers.
#[must_use]
pub fn ok() -> Status {
    Status {
        code: Code::Ok.into(),
        message: Code::Ok.as_str_name().to_owned(),
    }
}

/// The protocol code of a remoting response code (Apache `ResponseBuilder.buildCode`, plus
/// TOPIC_NOT_EXIST, which Apache recognises by its exception: `TopicRouteHelper`).
#[must_use]
pub fn code_of_response(code: i32) -> Code {
    match ResponseCode::try_from(code) {
        Ok(ResponseCode::Success) => Code::Ok,
        Ok(ResponseCode::SystemBusy) => Code::TooManyRequests,
        Ok(ResponseCode::RequestCodeNotSupported) => Code::NotImplemented,
        Ok(ResponseCode::SubscriptionGroupNotExist) => Code::ConsumerGroupNotFound,
        Ok(ResponseCode::TopicNotExist) => Code::TopicNotFound,
        _ => Code::InternalServerError,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_codes_map_as_apache_maps_them() {
        assert_eq!(code_of_response(0), Code::Ok);
        assert_eq!(code_of_response(2), Code::TooManyRequests);
        assert_eq!(code_of_response(3), Code::NotImplemented);
        assert_eq!(code_of_response(17), Code::TopicNotFound);
        assert_eq!(code_of_response(26), Code::ConsumerGroupNotFound);
        assert_eq!(code_of_response(1), Code::InternalServerError);
        assert_eq!(code_of_response(-1), Code::InternalServerError);
        let r = Refusal::from_response(14, None);
        assert_eq!(
            (r.code, r.message.as_str()),
            (Code::InternalServerError, "14")
        );
        assert_eq!(ok().code, 20000);
        assert_eq!(ok().message, "OK");
    }
}
