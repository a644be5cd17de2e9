//! `AuthConfig`: the auth keys of broker.conf (RocketMQ 5.3's `AuthConfig`, read from the same
//! file as the broker's other settings) and 4.9's `aclEnable`, for brokers and name servers.
//!
//! The provider, strategy and cache keys are accepted for an operator's broker.conf to load;
//! sluice has one provider (its metadata files) and checks every request (the stateless
//! strategy), so they change nothing.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{AuthError, Result};
use crate::signature::Credentials;

/// The auth settings of one server. Defaults are Apache's: everything off.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
#[allow(
    clippy::struct_excessive_bools,
    reason = "mirrors RocketMQ's AuthConfig one to one"
)]
pub struct AuthConfig {
    /// Every request must be signed by a known, enabled user (false).
    pub authentication_enabled: bool,
    /// Every request must be allowed by its user's ACL, unless the user is super (false).
    pub authorization_enabled: bool,
    /// Request codes (`,`-separated numbers) that need no authentication.
    pub authentication_whitelist: Option<String>,
    /// Request codes (`,`-separated numbers) that need no authorization.
    pub authorization_whitelist: Option<String>,
    /// A super user created at start unless it exists: `{"username":"u","password":"p"}`.
    pub init_authentication_user: Option<String>,
    /// What this server signs its own requests with (registration, a slave's copy of its
    /// master's tables); created as a super user at start: `{"accessKey":"a","secretKey":"s"}`.
    pub inner_client_authentication_credentials: Option<String>,
    /// Copy the 4.9 plain ACL accounts into users and ACLs at start (false).
    #[serde(rename = "migrateAuthFromV1Enabled")]
    pub migrate_auth_from_v1_enabled: bool,
    /// Where the users and ACLs live (default: `<storePathRootDir>/config` on a broker).
    pub auth_config_path: Option<PathBuf>,
    /// The cluster named by admin requests (default: `brokerClusterName`).
    pub cluster_name: Option<String>,
    /// RocketMQ 4.9's plain ACL: `$ROCKETMQ_HOME/conf/plain_acl.yml` and
    /// `$ROCKETMQ_HOME/conf/acl/*.yml`, reloaded when they change (false).
    pub acl_enable: bool,
    /// `ROCKETMQ_HOME` (default: the environment's).
    pub rocketmq_home: Option<PathBuf>,
    /// The plain ACL file, relative to `rocketmqHome` (Apache's `-Drocketmq.acl.plain.file`,
    /// `conf/plain_acl.yml`).
    pub acl_plain_file: Option<String>,
    /// Accepted, no effect (one provider).
    pub authentication_provider: Option<String>,
    /// Accepted, no effect (the metadata files).
    pub authentication_metadata_provider: Option<String>,
    /// Accepted, no effect (every request is checked).
    pub authentication_strategy: Option<String>,
    /// Accepted, no effect.
    pub authorization_provider: Option<String>,
    /// Accepted, no effect.
    pub authorization_metadata_provider: Option<String>,
    /// Accepted, no effect.
    pub authorization_strategy: Option<String>,
}

/// Cache sizes and lifetimes of Apache's metadata caches: sluice reads its tables from
/// memory, so they are accepted and ignored.
pub const ACCEPTED_UNUSED_KEYS: &[&str] = &[
    "userCacheMaxNum",
    "userCacheExpiredSecond",
    "userCacheRefreshSecond",
    "aclCacheMaxNum",
    "aclCacheExpiredSecond",
    "aclCacheRefreshSecond",
    "statefulAuthenticationCacheMaxNum",
    "statefulAuthenticationCacheExpiredSecond",
    "statefulAuthorizationCacheMaxNum",
    "statefulAuthorizationCacheExpiredSecond",
];

impl std::fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthConfig")
            .field("authentication_enabled", &self.authentication_enabled)
            .field("authorization_enabled", &self.authorization_enabled)
            .field("acl_enable", &self.acl_enable)
            .field("auth_config_path", &self.auth_config_path)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct InitUser {
    username: Option<String>,
    password: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InnerCredentials {
    access_key: Option<String>,
    secret_key: Option<String>,
    security_token: Option<String>,
}

fn whitelist(text: Option<&str>) -> Vec<String> {
    text.map(|t| {
        t.split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect()
    })
    .unwrap_or_default()
}

impl AuthConfig {
    /// Whether any check is on.
    #[must_use]
    pub fn enforces(&self) -> bool {
        self.authentication_enabled || self.authorization_enabled || self.acl_enable
    }

    /// The codes that skip authentication, as text (Apache compares `String.valueOf(code)`).
    #[must_use]
    pub fn authentication_whitelist(&self) -> Vec<String> {
        whitelist(self.authentication_whitelist.as_deref())
    }

    /// The codes that skip authorization.
    #[must_use]
    pub fn authorization_whitelist(&self) -> Vec<String> {
        whitelist(self.authorization_whitelist.as_deref())
    }

    /// The user of `initAuthenticationUser`: `(username, password)`.
    ///
    /// # Errors
    /// Not `{"username":...,"password":...}` (the value is not quoted: it holds a secret).
    pub fn init_user(&self) -> Result<Option<(String, String)>> {
        let Some(text) = self
            .init_authentication_user
            .as_deref()
            .filter(|t| !t.trim().is_empty())
        else {
            return Ok(None);
        };
        let bad = |reason: &str| AuthError::Config {
            key: "initAuthenticationUser",
            reason: reason.to_owned(),
        };
        let u: InitUser = serde_json::from_str(text).map_err(|_| bad("not a JSON user"))?;
        match (u.username, u.password) {
            (Some(name), Some(pw)) if !name.trim().is_empty() && !pw.trim().is_empty() => {
                Ok(Some((name, pw)))
            }
            _ => Err(bad("username and password are required")),
        }
    }

    /// `innerClientAuthenticationCredentials`, when set with both keys.
    ///
    /// # Errors
    /// Not `{"accessKey":...,"secretKey":...}` JSON.
    pub fn inner_credentials(&self) -> Result<Option<Credentials>> {
        let Some(text) = self
            .inner_client_authentication_credentials
            .as_deref()
            .filter(|t| !t.trim().is_empty())
        else {
            return Ok(None);
        };
        let c: InnerCredentials = serde_json::from_str(text).map_err(|_| AuthError::Config {
            key: "innerClientAuthenticationCredentials",
            reason: "not JSON credentials".into(),
        })?;
        // Apache: blank keys mean no signing hook.
        match (c.access_key, c.secret_key) {
            (Some(ak), Some(sk)) if !ak.trim().is_empty() && !sk.trim().is_empty() => {
                Ok(Some(Credentials {
                    access_key: ak,
                    secret_key: sk,
                    security_token: c.security_token,
                }))
            }
            _ => Ok(None),
        }
    }

    /// `ROCKETMQ_HOME`: the setting, else the environment.
    #[must_use]
    pub fn home(&self) -> Option<PathBuf> {
        self.rocketmq_home
            .clone()
            .or_else(|| std::env::var_os("ROCKETMQ_HOME").map(PathBuf::from))
    }

    /// A copy whose secrets print as `***` (for `mqbroker -p`).
    #[must_use]
    pub fn redacted(&self) -> AuthConfig {
        let hide = |v: &Option<String>| v.as_ref().map(|_| "***".to_owned());
        AuthConfig {
            init_authentication_user: hide(&self.init_authentication_user),
            inner_client_authentication_credentials: hide(
                &self.inner_client_authentication_credentials,
            ),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_apache_values() {
        let c = AuthConfig {
            init_authentication_user: Some(
                r#"{"username":"rocketmq","password":"12345678"}"#.into(),
            ),
            inner_client_authentication_credentials: Some(
                r#"{"accessKey":"rocketmq","secretKey":"12345678"}"#.into(),
            ),
            authentication_whitelist: Some(" 10, 34 ,".into()),
            ..AuthConfig::default()
        };
        assert_eq!(
            c.init_user().unwrap(),
            Some(("rocketmq".into(), "12345678".into()))
        );
        assert_eq!(
            c.inner_credentials().unwrap().unwrap().access_key,
            "rocketmq"
        );
        assert_eq!(c.authentication_whitelist(), ["10", "34"]);
        let bad = AuthConfig {
            init_authentication_user: Some("{oops secret".into()),
            ..AuthConfig::default()
        };
        let e = bad.init_user().unwrap_err().to_string();
        assert!(!e.contains("secret"), "{e}");
        assert!(!format!("{c:?}").contains("12345678"));
        assert!(
            !serde_json::to_string(&c.redacted())
                .unwrap()
                .contains("12345678")
        );
    }
}
