//! The credentials of the 5.x gRPC SDKs (rocketmq-clients), checked as RocketMQ 5.3's
//! `DefaultAuthenticationContextBuilder` and `DefaultAuthenticationHandler` check them, so a
//! gRPC endpoint authenticates against the same users as the remoting servers.
//!
//! A signing client sends two metadata entries per call:
//!
//! ```text
//! x-mq-date-time: 20210309T195445Z
//! authorization:  MQv2-HMAC-SHA1 Credential=<access key>, SignedHeaders=x-mq-date-time, Signature=<hex>
//! Signature = hex(HMAC-SHA1(secret key, date-time value))
//! ```
//!
//! The credential may carry more after a `/` (`ak/...`): only its first part names the user.
//! A call without `authorization` carries no user; whether that is allowed is the caller's
//! decision (an authentication whitelist, or authentication off), as for remoting requests.

use hmac::{KeyInit, Mac};
use subtle::ConstantTimeEq;

use crate::evaluate::{Denied, Directory};
use crate::model::UserStatus;

/// The metadata key of the signature header.
pub const AUTHORIZATION: &str = "authorization";
/// The metadata key of the signed date-time.
pub const DATE_TIME: &str = "x-mq-date-time";
/// The only algorithm the SDKs use.
pub const ALGORITHM: &str = "MQv2-HMAC-SHA1";

type HmacSha1 = hmac::Hmac<sha1::Sha1>;

/// Who a call says it comes from, and its proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcCredential {
    /// The user (the credential's access key).
    pub username: String,
    /// The signature's bytes (decoded from hex); empty when the header had none.
    pub signature: Vec<u8>,
    /// What was signed: the date-time value.
    pub content: Vec<u8>,
}

/// Reads a call's credential from its `authorization` and `x-mq-date-time` values: `None`
/// when it sends no `authorization`.
///
/// # Errors
/// Apache's refusals of a malformed header (the call is refused with UNAUTHORIZED).
pub fn parse(
    authorization: Option<&str>,
    date_time: Option<&str>,
) -> Result<Option<GrpcCredential>, Denied> {
    let Some(authorization) = authorization.filter(|a| !a.is_empty()) else {
        return Ok(None);
    };
    let Some(date_time) = date_time.filter(|d| !d.is_empty()) else {
        return Err(Denied("datetime is null.".into()));
    };
    let Some((_algorithm, pairs)) = authorization.split_once(' ') else {
        return Err(Denied("authentication header is incorrect.".into()));
    };
    let mut username = String::new();
    let mut signature = Vec::new();
    for pair in pairs.split(',') {
        let Some((item, value)) = pair.trim().split_once('=') else {
            return Err(Denied(
                "authentication keyValues length is incorrect, actual length=1.".into(),
            ));
        };
        match item {
            "Credential" => {
                username = value.split('/').next().unwrap_or_default().to_owned();
            }
            "Signature" => {
                signature = hex_decode(value)
                    .ok_or_else(|| Denied("create authentication context error.".into()))?;
            }
            _ => {}
        }
    }
    Ok(Some(GrpcCredential {
        username,
        signature,
        content: date_time.as_bytes().to_vec(),
    }))
}

/// Checks a call's credential: it names an enabled user whose secret key signs its
/// date-time to its signature.
///
/// # Errors
/// No user named, an unknown or disabled user, a wrong signature: Apache's remarks.
pub fn authenticate(directory: &dyn Directory, credential: &GrpcCredential) -> Result<(), Denied> {
    let username = credential.username.as_str();
    if username.is_empty() {
        return Err(Denied("username cannot be null.".into()));
    }
    let Some(user) = directory.user(username) else {
        return Err(Denied(format!("User:{username} is not found.")));
    };
    if user.user_status == UserStatus::Disable {
        return Err(Denied(format!("User:{username} is disabled.")));
    }
    let expected = sign(&user.password, &credential.content);
    if !bool::from(expected.ct_eq(&credential.signature)) {
        return Err(Denied("check signature failed.".into()));
    }
    Ok(())
}

/// HMAC-SHA1 of `content` under `secret_key`.
fn sign(secret_key: &str, content: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length; new_from_slice cannot fail.
    let Ok(mut mac) = HmacSha1::new_from_slice(secret_key.as_bytes()) else {
        return Vec::new();
    };
    mac.update(content);
    mac.finalize().into_bytes().to_vec()
}

/// The `authorization` value a client with `access_key`/`secret_key` sends with
/// `date_time` (the SDKs' form, upper-case hex): for tests and our own clients.
#[must_use]
pub fn authorization(access_key: &str, secret_key: &str, date_time: &str) -> String {
    let hex: String = sign(secret_key, date_time.as_bytes())
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    format!("{ALGORITHM} Credential={access_key}, SignedHeaders={DATE_TIME}, Signature={hex}")
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;
    use crate::model::{Acl, User, UserType};

    struct Users(HashMap<String, Arc<User>>);

    impl Directory for Users {
        fn user(&self, username: &str) -> Option<Arc<User>> {
            self.0.get(username).cloned()
        }
        fn acl(&self, _subject: &str) -> Option<Arc<Acl>> {
            None
        }
    }

    fn users() -> Users {
        let user = |name: &str, status| {
            Arc::new(User {
                username: name.into(),
                password: "secret".into(),
                user_type: UserType::Normal,
                user_status: status,
            })
        };
        Users(HashMap::from([
            ("alice".to_owned(), user("alice", UserStatus::Enable)),
            ("bob".to_owned(), user("bob", UserStatus::Disable)),
        ]))
    }

    const WHEN: &str = "20210309T195445Z";

    #[test]
    fn the_sdks_signature_is_accepted_and_a_wrong_key_is_not() {
        let header = authorization("alice", "secret", WHEN);
        assert!(header.starts_with(
            "MQv2-HMAC-SHA1 Credential=alice, SignedHeaders=x-mq-date-time, Signature="
        ));
        let c = parse(Some(&header), Some(WHEN)).unwrap().unwrap();
        assert_eq!(c.username, "alice");
        assert_eq!(authenticate(&users(), &c), Ok(()));
        // Lower-case hex, and a credential with a scope after `/`, are read as Apache reads them.
        let lower = header
            .to_lowercase()
            .replace("credential=alice", "Credential=alice/x");
        let lower = lower.replace("signature=", "Signature=");
        let c = parse(Some(&lower), Some(WHEN)).unwrap().unwrap();
        assert_eq!(authenticate(&users(), &c), Ok(()));

        let wrong = parse(Some(&authorization("alice", "guess", WHEN)), Some(WHEN))
            .unwrap()
            .unwrap();
        assert_eq!(
            authenticate(&users(), &wrong),
            Err(Denied("check signature failed.".into()))
        );
        let replayed = parse(Some(&header), Some("20210309T195446Z"))
            .unwrap()
            .unwrap();
        assert!(
            authenticate(&users(), &replayed).is_err(),
            "signs the date-time"
        );
    }

    #[test]
    fn unknown_disabled_and_malformed_callers_get_apaches_remarks() {
        let c = |h: &str| parse(Some(h), Some(WHEN)).unwrap().unwrap();
        let carol = c(&authorization("carol", "secret", WHEN));
        assert_eq!(
            authenticate(&users(), &carol),
            Err(Denied("User:carol is not found.".into()))
        );
        let bob = c(&authorization("bob", "secret", WHEN));
        assert_eq!(
            authenticate(&users(), &bob),
            Err(Denied("User:bob is disabled.".into()))
        );
        assert_eq!(parse(None, Some(WHEN)), Ok(None));
        assert_eq!(parse(Some(""), None), Ok(None));
        assert_eq!(
            parse(Some("MQv2-HMAC-SHA1 Credential=a"), None),
            Err(Denied("datetime is null.".into()))
        );
        assert_eq!(
            parse(Some("garbage"), Some(WHEN)),
            Err(Denied("authentication header is incorrect.".into()))
        );
        assert!(parse(Some("MQv2-HMAC-SHA1 Credential"), Some(WHEN)).is_err());
        assert!(parse(Some("MQv2-HMAC-SHA1 Signature=zz"), Some(WHEN)).is_err());
        let anonymous = c("MQv2-HMAC-SHA1 SignedHeaders=x-mq-date-time");
        assert_eq!(
            authenticate(&users(), &anonymous),
            Err(Denied("username cannot be null.".into()))
        );
    }
}
