//! The one check a server runs on every request before its processor sees it: the 4.9 plain
//! ACL when `aclEnable` is on, then (5.x) authentication, then authorization, in the order of
//! Apache's request pipeline; and the AUTH_* admin requests on the same metadata.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use remoting::{RemotingCommand, ResponseCode};
use tracing::{info, warn};

use crate::config::AuthConfig;
use crate::error::{AuthError, Result};
use crate::evaluate::{self, Denied};
use crate::plain::PlainAcl;
use crate::request;
use crate::signature::Credentials;
use crate::store::MetadataStore;

/// Apache's remark when the request cannot be mapped to resources.
pub const UNREADABLE_REMARK: &str = "parse authorization context error.";

/// What a server checks requests with.
#[derive(Debug)]
pub struct Guard {
    config: AuthConfig,
    cluster: String,
    authn_whitelist: Vec<String>,
    authz_whitelist: Vec<String>,
    store: Arc<MetadataStore>,
    plain: Option<Arc<PlainAcl>>,
}

impl Guard {
    /// Opens the metadata (in `authConfigPath`, else `default_dir`), creates the users of
    /// `initAuthenticationUser` and `innerClientAuthenticationCredentials`, migrates the 4.9
    /// accounts when asked, and loads the plain ACL when `aclEnable` is on.
    ///
    /// # Errors
    /// Unreadable metadata, settings that do not parse, an invalid plain ACL file.
    pub fn open(config: &AuthConfig, cluster: &str, default_dir: &Path) -> Result<Self> {
        let dir = config
            .auth_config_path
            .clone()
            .unwrap_or_else(|| default_dir.to_owned());
        let store = Arc::new(MetadataStore::open(&dir)?);
        let init = |what: &'static str| {
            move |e: crate::store::ManageError| AuthError::Init {
                what,
                reason: e.to_string(),
            }
        };
        if let Some((name, password)) = config.init_user()? {
            store
                .ensure_super_user(&name, &password)
                .map_err(init("initAuthenticationUser"))?;
        }
        if let Some(inner) = config.inner_credentials()? {
            store
                .ensure_super_user(&inner.access_key, &inner.secret_key)
                .map_err(init("innerClientAuthenticationCredentials"))?;
        }
        let plain = if config.acl_enable || config.migrate_auth_from_v1_enabled {
            Some(Arc::new(PlainAcl::load_home(config)?))
        } else {
            None
        };
        if config.migrate_auth_from_v1_enabled {
            if let Some(p) = &plain {
                crate::plain::migrate(&p.snapshot(), &store);
            }
        }
        if config.acl_enable {
            if let Some(p) = &plain {
                p.watch();
            }
        }
        if config.enforces() {
            info!(
                authentication = config.authentication_enabled,
                authorization = config.authorization_enabled,
                plain_acl = config.acl_enable,
                dir = %dir.display(),
                "request checks on"
            );
        }
        Ok(Guard {
            config: config.clone(),
            cluster: config
                .cluster_name
                .clone()
                .unwrap_or_else(|| cluster.to_owned()),
            authn_whitelist: config.authentication_whitelist(),
            authz_whitelist: config.authorization_whitelist(),
            store,
            plain: plain.filter(|_| config.acl_enable),
        })
    }

    /// The users and ACLs.
    #[must_use]
    pub fn store(&self) -> &Arc<MetadataStore> {
        &self.store
    }

    /// The 4.9 plain ACL, when `aclEnable` is on.
    #[must_use]
    pub fn plain(&self) -> Option<&Arc<PlainAcl>> {
        self.plain.as_ref()
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// Whether any request is checked at all.
    #[must_use]
    pub fn enforces(&self) -> bool {
        self.config.enforces()
    }

    /// What this server signs its own requests with.
    #[must_use]
    pub fn inner_credentials(&self) -> Option<Credentials> {
        self.config.inner_credentials().ok().flatten()
    }

    /// Checks `request` from `peer`; `Err` is the response that refuses it.
    ///
    /// # Errors
    /// The refusal: SYSTEM_ERROR with the exception text (4.9 plain ACL), NO_PERMISSION with
    /// Apache's remark (5.x).
    pub fn check(
        &self,
        request: &RemotingCommand,
        peer: SocketAddr,
    ) -> Result<(), RemotingCommand> {
        if !self.enforces() {
            return Ok(());
        }
        let source_ip = peer.ip().to_string();
        if let Some(plain) = &self.plain {
            if let Err(remark) = plain.validate(request, &source_ip) {
                log_limited(request, &source_ip, &remark);
                return Err(RemotingCommand::response(
                    ResponseCode::SystemError,
                    Some(remark),
                ));
            }
        }
        let code = request.code().to_string();
        let refuse = |Denied(remark): Denied| {
            log_limited(request, &source_ip, &remark);
            RemotingCommand::response(ResponseCode::NoPermission, Some(remark))
        };
        if self.config.authentication_enabled && !self.authn_whitelist.contains(&code) {
            evaluate::authenticate(&*self.store, request).map_err(refuse)?;
        }
        if self.config.authorization_enabled {
            let accesses = request::accesses(
                request.code(),
                request.ext_fields(),
                &request.body.to_bytes(),
                &self.cluster,
            )
            .map_err(|_| refuse(Denied(UNREADABLE_REMARK.into())))?;
            if !self.authz_whitelist.contains(&code) {
                evaluate::authorize(
                    &*self.store,
                    evaluate::sender(request),
                    &accesses,
                    &source_ip,
                )
                .map_err(refuse)?;
            }
        }
        Ok(())
    }

    /// Answers an AUTH_* admin request; `None` for other codes.
    #[must_use]
    pub fn handle_admin(&self, request: &RemotingCommand) -> Option<RemotingCommand> {
        crate::admin::handle(&self.store, request)
    }
}

fn log_limited(request: &RemotingCommand, source_ip: &str, remark: &str) {
    // The access key is a name, not a secret; the signature is left out.
    let user = evaluate::sender(request).unwrap_or("-");
    warn!(
        code = request.code(),
        user, source_ip, remark, "request refused"
    );
}
