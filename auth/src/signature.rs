//! Request signatures, as the standard clients' `AclClientRPCHook` makes them and the broker
//! checks them: HMAC-SHA1, keyed with the secret key, over the values of the request's
//! extFields in the order of their names (Java `TreeMap`: UTF-16 code units), leaving out
//! `Signature` itself, followed by the body; Base64 (standard alphabet, padded).
//!
//! The client adds `AccessKey` (and `SecurityToken`, when it has one) before it signs, so both
//! are covered. A server compares the signature it computes with the one sent in constant time.
//!
//! ```text
//! content = value(k1) ‖ value(k2) ‖ … ‖ body     for k1 < k2 < … over extFields \ {Signature}
//! Signature = Base64(HMAC-SHA1(secretKey, content))
//! ```

use base64::Engine as _;
use hmac::{KeyInit, Mac};
use remoting::{Body, ExtFields, RemotingCommand, RequestHook};
use subtle::ConstantTimeEq;

/// extFields key of the access key.
pub const ACCESS_KEY: &str = "AccessKey";
/// extFields key of the signature.
pub const SIGNATURE: &str = "Signature";
/// extFields key of the (optional) security token.
pub const SECURITY_TOKEN: &str = "SecurityToken";
/// `MixAll.UNIQUE_MSG_QUERY_FLAG`: left out of the content of requests from clients up to
/// 4.9.3, whose hook signed before the field was added.
pub const UNIQUE_MSG_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";
/// `MQVersion.Version.V4_9_3.ordinal()`.
pub const V4_9_3: i32 = 399;

type HmacSha1 = hmac::Hmac<sha1::Sha1>;

/// Java's `String.compareTo`: UTF-16 code units.
fn java_order(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Which extFields are signed: every one but `Signature`, and but `skip`.
fn signed_values<'a>(ext: &'a ExtFields, skip: Option<&str>) -> Vec<(&'a str, &'a str)> {
    let mut fields: Vec<(&str, &str)> = ext
        .iter()
        .filter(|(k, _)| *k != SIGNATURE && Some(*k) != skip)
        .collect();
    fields.sort_by(|a, b| java_order(a.0, b.0));
    fields
}

/// The signature of `ext` + `body` under `secret_key`, leaving `skip` (a field name) out too.
#[must_use]
pub fn compute(ext: &ExtFields, body: &Body, secret_key: &str, skip: Option<&str>) -> String {
    // HMAC takes a key of any length; new_from_slice cannot fail.
    let Ok(mut mac) = HmacSha1::new_from_slice(secret_key.as_bytes()) else {
        return String::new();
    };
    for (_, value) in signed_values(ext, skip) {
        mac.update(value.as_bytes());
    }
    for part in body.parts() {
        mac.update(part);
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Checks the signature a request carries against the one `secret_key` gives
/// (`DefaultAuthenticationHandler`): the content leaves out `_UNIQUE_KEY_QUERY` for clients
/// up to 4.9.3. Constant time in the signature's bytes.
#[must_use]
pub fn verify(request: &RemotingCommand, secret_key: &str) -> bool {
    let Some(sent) = request.ext(SIGNATURE) else {
        return false;
    };
    let skip = (request.header.version <= V4_9_3).then_some(UNIQUE_MSG_QUERY_FLAG);
    let expected = compute(request.ext_fields(), &request.body, secret_key, skip);
    bool::from(expected.as_bytes().ct_eq(sent.as_bytes()))
}

/// The 4.9 plain ACL's check: `_UNIQUE_KEY_QUERY` is always left out.
#[must_use]
pub fn verify_plain(request: &RemotingCommand, secret_key: &str) -> bool {
    let Some(sent) = request.ext(SIGNATURE) else {
        return false;
    };
    let expected = compute(
        request.ext_fields(),
        &request.body,
        secret_key,
        Some(UNIQUE_MSG_QUERY_FLAG),
    );
    bool::from(expected.as_bytes().ct_eq(sent.as_bytes()))
}

/// Access key and secret key of a client (`SessionCredentials`). `Debug` shows the access key
/// only.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// Access key (the user name).
    pub access_key: String,
    /// Secret key.
    pub secret_key: String,
    /// Security token, signed along when present.
    pub security_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Credentials without a security token.
    #[must_use]
    pub fn new(access_key: impl Into<String>, secret_key: impl Into<String>) -> Self {
        Credentials {
            access_key: access_key.into(),
            secret_key: secret_key.into(),
            security_token: None,
        }
    }

    /// Signs `request` as `AclClientRPCHook.doBeforeRequest` does: adds `AccessKey` (and
    /// `SecurityToken`), then `Signature` over everything.
    pub fn sign(&self, request: &mut RemotingCommand) {
        let ext = &mut request.header.ext_fields;
        ext.insert(ACCESS_KEY, self.access_key.as_str());
        if let Some(token) = &self.security_token {
            ext.insert(SECURITY_TOKEN, token.as_str());
        }
        let signature = compute(ext, &request.body, &self.secret_key, None);
        request.header.ext_fields.insert(SIGNATURE, signature);
    }
}

impl RequestHook for Credentials {
    fn before_request(&self, request: &mut RemotingCommand) {
        self.sign(request);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Java's AclClientRPCHook on this request (a 5.3.3 client, checked by hand with
    /// `javax.crypto.Mac` HmacSHA1): extFields `{b=TopicA, a=G, AccessKey=ak}`, body `hi`.
    #[test]
    fn signs_values_in_key_order_then_body() {
        let mut req = RemotingCommand::request(310).with_body(b"hi".to_vec());
        req.header.ext_fields.insert("b", "TopicA");
        req.header.ext_fields.insert("a", "G");
        Credentials::new("ak", "sk").sign(&mut req);
        // Content: AccessKey(ak) a(G) b(TopicA) body(hi) = "akGTopicAhi".
        let mut mac = HmacSha1::new_from_slice(b"sk").unwrap();
        mac.update(b"akGTopicAhi");
        let want = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
        assert_eq!(req.ext(SIGNATURE), Some(want.as_str()));
        assert!(verify(&req, "sk"));
        assert!(!verify(&req, "sk2"));
    }

    /// RFC 2202 test case 2: HMAC-SHA1("Jefe", "what do ya want for nothing?").
    #[test]
    fn hmac_sha1_known_answer() {
        let mut ext = ExtFields::new();
        ext.insert("k", "what do ya want for nothing?");
        let sig = compute(&ext, &Body::Empty, "Jefe", None);
        let raw = base64::engine::general_purpose::STANDARD
            .decode(sig)
            .unwrap();
        let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    }

    #[test]
    fn the_unique_key_flag_is_skipped_for_old_clients_only() {
        let mut req = RemotingCommand::request(12);
        req.header.ext_fields.insert("topic", "T");
        req.header.version = 300;
        Credentials::new("ak", "sk").sign(&mut req);
        // Added after signing, as a 4.9.3 client's query did.
        req.header.ext_fields.insert(UNIQUE_MSG_QUERY_FLAG, "true");
        assert!(verify(&req, "sk"));
        req.header.version = 409;
        assert!(!verify(&req, "sk"));
        assert!(verify_plain(&req, "sk"));
    }

    #[test]
    fn java_string_order() {
        use std::cmp::Ordering;
        assert_eq!(java_order("AccessKey", "a"), Ordering::Less);
        // U+FF5E sorts after U+1F600 in UTF-8 bytes, before it in UTF-16.
        assert_eq!(java_order("\u{1F600}", "\u{FF5E}"), Ordering::Less);
    }

    #[test]
    fn no_signature_never_verifies() {
        let req = RemotingCommand::request(10);
        assert!(!verify(&req, ""));
        assert!(!verify_plain(&req, ""));
        assert!(!format!("{:?}", Credentials::new("ak", "hidden-sk")).contains("hidden"));
    }

    proptest! {
        /// Whatever the fields and body, a signed request verifies under its key only, and
        /// the order the fields were added in does not matter.
        #[test]
        fn sign_then_verify(fields in proptest::collection::btree_map("\\PC{1,8}", "\\PC{0,12}", 0..6),
                            body in proptest::collection::vec(any::<u8>(), 0..64),
                            key in "\\PC{1,16}") {
            let mut a = RemotingCommand::request(10).with_body(body.clone());
            let mut b = RemotingCommand::request(10).with_body(body);
            for (k, v) in &fields {
                a.header.ext_fields.insert(k.as_str(), v.as_str());
            }
            for (k, v) in fields.iter().rev() {
                b.header.ext_fields.insert(k.as_str(), v.as_str());
            }
            let creds = Credentials::new("ak", key.clone());
            creds.sign(&mut a);
            creds.sign(&mut b);
            prop_assert_eq!(a.ext(SIGNATURE), b.ext(SIGNATURE));
            prop_assert!(verify(&a, &key));
            let other = format!("{key}x");
            prop_assert!(!verify(&a, &other));
        }
    }
}
