//! The AUTH_* admin requests (3001..=3010), answered as RocketMQ 5.3.3's `AdminBrokerProcessor`
//! answers them: its response codes (SUCCESS, INVALID_PARAMETER for a blank user name,
//! NO_PERMISSION for a refused change, SYSTEM_ERROR otherwise) and remarks, and its rule that
//! only a super user may create, change or delete a super user.

use remoting::fastjson::{self, KeyStyle};
use remoting::protocol::auth::{
    AclInfo, AclRequestHeader, DeleteAclRequestHeader, ListAclsRequestHeader,
    ListUsersRequestHeader, PolicyEntryInfo, PolicyInfo, UserInfo, UserRequestHeader,
};
use remoting::{CommandHeader, RemotingCommand, RequestCode, ResponseCode};
use tracing::info;

use crate::model::{
    Acl, Action, Decision, Policy, PolicyEntry, PolicyType, Resource, User, UserStatus, UserType,
    parse_subject,
};
use crate::signature::ACCESS_KEY;
use crate::store::{EntryDraft, ManageError, MetadataStore, PolicyDraft, UserChange};

/// Apache's remark for a failure that is not a refusal.
pub const SYSTEM_ERROR_REMARK: &str = "An system error occurred, please try again later.";

fn respond(code: ResponseCode, remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response(code, Some(remark.into()))
}

fn success(body: Option<Vec<u8>>) -> RemotingCommand {
    let r = RemotingCommand::response(ResponseCode::Success, None);
    match body {
        Some(b) => r.with_body(b),
        None => r,
    }
}

fn from_manage(e: &ManageError) -> RemotingCommand {
    match e {
        ManageError::Refused(remark) => respond(ResponseCode::NoPermission, remark.clone()),
        ManageError::System(why) => {
            tracing::error!(error = %why, "auth admin request failed");
            respond(ResponseCode::SystemError, SYSTEM_ERROR_REMARK)
        }
    }
}

fn outcome(result: Result<(), ManageError>) -> RemotingCommand {
    match result {
        Ok(()) => success(None),
        Err(e) => from_manage(&e),
    }
}

/// Apache answers an exception thrown by the handler itself with its `exceptionSimpleDesc`.
fn thrown(class: &str, message: &str, frame: &str) -> RemotingCommand {
    respond(
        ResponseCode::SystemError,
        format!("{class}: {message}, {frame}"),
    )
}

fn json<T: serde::Serialize>(value: &T) -> Option<Vec<u8>> {
    fastjson::to_vec(value, KeyStyle::Fastjson).ok()
}

fn header<H: CommandHeader + Default>(request: &RemotingCommand) -> H {
    // Every field is optional: decoding cannot fail.
    request.decode_header().unwrap_or_default()
}

/// Whether a client that signed as someone is not a super user (`isNotSuperUserLogin`; no
/// access key: authentication is off, and the client may).
fn not_super_login(store: &MetadataStore, request: &RemotingCommand) -> bool {
    match request.ext(ACCESS_KEY).filter(|a| !a.is_empty()) {
        None => false,
        Some(ak) => !store.is_super_user(ak),
    }
}

fn user_info(user: &User) -> UserInfo {
    UserInfo {
        username: Some(user.username.clone()),
        password: Some(user.password.clone()),
        user_type: Some(user.user_type.name().to_owned()),
        user_status: Some(user.user_status.name().to_owned()),
    }
}

fn acl_info(acl: &Acl) -> AclInfo {
    AclInfo {
        subject: Some(acl.subject.clone()),
        policies: Some(
            acl.policies
                .iter()
                .map(|p| PolicyInfo {
                    policy_type: Some(p.policy_type.name().to_owned()),
                    entries: Some(
                        p.entries
                            .iter()
                            .map(|e| PolicyEntryInfo {
                                resource: Some(e.resource.key()),
                                actions: Some(
                                    e.actions.iter().map(|a| a.name().to_owned()).collect(),
                                ),
                                source_ips: (!e.source_ips.is_empty())
                                    .then(|| e.source_ips.clone()),
                                decision: Some(e.decision.name().to_owned()),
                            })
                            .collect(),
                    ),
                })
                .collect(),
        ),
    }
}

/// `AclConverter.convertAcl`: unknown action names are dropped, a policy without entries is
/// skipped, anything else that does not parse is left for validation to refuse.
fn drafts(info: &AclInfo) -> Vec<PolicyDraft> {
    let mut out = Vec::new();
    for p in info.policies.iter().flatten() {
        let Some(entries) = p.entries.as_ref().filter(|e| !e.is_empty()) else {
            continue;
        };
        out.push(PolicyDraft {
            policy_type: p.policy_type.as_deref().and_then(PolicyType::from_name),
            entries: entries
                .iter()
                .map(|e| EntryDraft {
                    resource: e.resource.as_deref().and_then(Resource::parse),
                    actions: e
                        .actions
                        .iter()
                        .flatten()
                        .filter_map(|a| Action::from_name(a))
                        .collect(),
                    source_ips: e.source_ips.clone().unwrap_or_default(),
                    decision: e.decision.as_deref().and_then(Decision::from_name),
                })
                .collect(),
        });
    }
    out
}

/// A `UserInfo` (AUTH_GET_USER's answer) as a user; the inverse of the answer this module
/// writes. A proxy reads its cluster's users so (`UserConverter.convertUser`); `None`
/// without a name.
#[must_use]
pub fn user_from_info(info: UserInfo) -> Option<User> {
    let username = info.username.filter(|u| !u.is_empty())?;
    Some(User {
        username,
        password: info.password.unwrap_or_default(),
        user_type: info
            .user_type
            .as_deref()
            .and_then(UserType::from_name)
            .unwrap_or(UserType::Normal),
        user_status: info
            .user_status
            .as_deref()
            .and_then(UserStatus::from_name)
            .unwrap_or(UserStatus::Enable),
    })
}

/// A broker's `AclInfo` as an ACL (`AclConverter.convertAcl`): entries that do not parse are
/// left out (they could only ever deny by not matching).
#[must_use]
pub fn acl_from_info(info: &AclInfo) -> Acl {
    let policies = info
        .policies
        .iter()
        .flatten()
        .map(|p| Policy {
            policy_type: p
                .policy_type
                .as_deref()
                .and_then(PolicyType::from_name)
                .unwrap_or(PolicyType::Custom),
            entries: p
                .entries
                .iter()
                .flatten()
                .filter_map(|e| {
                    Some(PolicyEntry {
                        resource: Resource::parse(e.resource.as_deref()?)?,
                        actions: e
                            .actions
                            .iter()
                            .flatten()
                            .filter_map(|a| Action::from_name(a))
                            .collect(),
                        source_ips: e.source_ips.clone().unwrap_or_default(),
                        decision: Decision::from_name(e.decision.as_deref()?)?,
                    })
                })
                .collect(),
        })
        .collect();
    Acl {
        subject: info.subject.clone().unwrap_or_default(),
        policies,
    }
}

fn change_of(info: UserInfo, username: String) -> UserChange {
    UserChange {
        username: Some(username),
        password: info.password,
        user_type: info.user_type.as_deref().and_then(UserType::from_name),
        user_status: info.user_status.as_deref().and_then(UserStatus::from_name),
    }
}

/// Answers `request` when it is an AUTH_* admin request; `None` for any other code.
#[must_use]
pub fn handle(store: &MetadataStore, request: &RemotingCommand) -> Option<RemotingCommand> {
    let code = RequestCode::try_from(request.code()).ok()?;
    let response = match code {
        RequestCode::AuthCreateUser => create_or_update_user(store, request, true),
        RequestCode::AuthUpdateUser => create_or_update_user(store, request, false),
        RequestCode::AuthDeleteUser => delete_user(store, request),
        RequestCode::AuthGetUser => {
            let h: UserRequestHeader = header(request);
            match h.username.filter(|u| !u.trim().is_empty()) {
                None => respond(ResponseCode::InvalidParameter, "The username is blank"),
                Some(u) => success(
                    store_user(store, &u)
                        .map(|u| user_info(&u))
                        .and_then(|i| json(&i)),
                ),
            }
        }
        RequestCode::AuthListUser => {
            let h: ListUsersRequestHeader = header(request);
            let users: Vec<UserInfo> = store
                .list_users(h.filter.as_deref())
                .iter()
                .map(user_info)
                .collect();
            success((!users.is_empty()).then(|| json(&users)).flatten())
        }
        RequestCode::AuthCreateAcl | RequestCode::AuthUpdateAcl => put_acl(store, request, code),
        RequestCode::AuthDeleteAcl => {
            let h: DeleteAclRequestHeader = header(request);
            let resource = h.resource.as_deref().and_then(Resource::parse);
            let policy_type = h.policy_type.as_deref().and_then(PolicyType::from_name);
            let done = store.delete_acl(h.subject.as_deref(), policy_type, resource.as_ref());
            if done.is_ok() {
                info!(subject = ?h.subject, resource = ?h.resource, "acl deleted");
            }
            outcome(done)
        }
        RequestCode::AuthGetAcl => {
            let h: AclRequestHeader = header(request);
            match h.subject.as_deref().and_then(parse_subject) {
                None => thrown(
                    "java.lang.NullPointerException",
                    "subject is null",
                    "org.apache.rocketmq.auth.authorization.manager.AuthorizationMetadataManagerImpl.getAcl(AuthorizationMetadataManagerImpl.java:180)",
                ),
                Some(username) => match store.acl_of(username) {
                    Ok(acl) => success(acl.as_ref().map(acl_info).and_then(|i| json(&i))),
                    Err(e) => from_manage(&e),
                },
            }
        }
        RequestCode::AuthListAcl => {
            let h: ListAclsRequestHeader = header(request);
            let acls: Vec<AclInfo> = store
                .list_acls(h.subject_filter.as_deref(), h.resource_filter.as_deref())
                .iter()
                .map(acl_info)
                .collect();
            success((!acls.is_empty()).then(|| json(&acls)).flatten())
        }
        _ => return None,
    };
    Some(response)
}

fn store_user(store: &MetadataStore, username: &str) -> Option<std::sync::Arc<User>> {
    crate::evaluate::Directory::user(store, username)
}

fn user_body(request: &RemotingCommand) -> Option<UserInfo> {
    fastjson::from_slice(&request.body.to_bytes()).ok()
}

fn create_or_update_user(
    store: &MetadataStore,
    request: &RemotingCommand,
    create: bool,
) -> RemotingCommand {
    let h: UserRequestHeader = header(request);
    let Some(username) = h.username.filter(|u| !u.is_empty()) else {
        return respond(ResponseCode::InvalidParameter, "The username is blank");
    };
    let Some(info) = user_body(request) else {
        return thrown(
            "java.lang.NullPointerException",
            "the body is not a UserInfo",
            "org.apache.rocketmq.broker.processor.AdminBrokerProcessor.createUser(AdminBrokerProcessor.java:3015)",
        );
    };
    let change = change_of(info, username.clone());
    let verb = if create { "create" } else { "update" };
    if change.user_type == Some(UserType::Super) && not_super_login(store, request) {
        return respond(
            ResponseCode::SystemError,
            format!("The super user can only be {verb} by super user"),
        );
    }
    let done = if create {
        store.create_user(change)
    } else {
        match store_user(store, &username) {
            None => Err(ManageError::Refused("The user is not exist".into())),
            Some(old) if old.user_type == UserType::Super && not_super_login(store, request) => {
                Err(ManageError::Refused(
                    "The super user can only be update by super user".into(),
                ))
            }
            Some(_) => store.update_user(change),
        }
    };
    if done.is_ok() {
        info!(user = %username, "user {verb}d");
    }
    outcome(done)
}

fn delete_user(store: &MetadataStore, request: &RemotingCommand) -> RemotingCommand {
    let h: UserRequestHeader = header(request);
    let Some(username) = h.username.filter(|u| !u.trim().is_empty()) else {
        return respond(ResponseCode::NoPermission, "username can not be blank");
    };
    let done = match store_user(store, &username) {
        None => Ok(()),
        Some(u) if u.user_type == UserType::Super && not_super_login(store, request) => Err(
            ManageError::Refused("The super user can only be update by super user".into()),
        ),
        Some(_) => store.delete_user(Some(&username)),
    };
    if done.is_ok() {
        info!(user = %username, "user deleted");
    }
    outcome(done)
}

fn put_acl(store: &MetadataStore, request: &RemotingCommand, code: RequestCode) -> RemotingCommand {
    let h: AclRequestHeader = header(request);
    let info: Option<AclInfo> = fastjson::from_slice(&request.body.to_bytes()).ok();
    let Some(info) = info.filter(|i| i.policies.as_ref().is_some_and(|p| !p.is_empty())) else {
        let (method, line) = if code == RequestCode::AuthCreateAcl {
            ("createAcl", 3158)
        } else {
            ("updateAcl", 3185)
        };
        return thrown(
            "org.apache.rocketmq.auth.authorization.exception.AuthorizationException",
            "The body of acl is null",
            &format!(
                "org.apache.rocketmq.broker.processor.AdminBrokerProcessor.{method}(AdminBrokerProcessor.java:{line})"
            ),
        );
    };
    // The body's subject, else the header's; either must name a user.
    let subject = info
        .subject
        .clone()
        .filter(|s| parse_subject(s).is_some())
        .or_else(|| h.subject.clone().filter(|s| parse_subject(s).is_some()));
    let done = store.put_acl(subject.as_deref(), drafts(&info));
    if done.is_ok() {
        info!(subject = ?subject, "acl {}", if code == RequestCode::AuthCreateAcl { "created" } else { "updated" });
    }
    outcome(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::Credentials;

    fn req(code: RequestCode, pairs: &[(&str, &str)], body: &str) -> RemotingCommand {
        let mut r = RemotingCommand::request(code).with_body(body.as_bytes().to_vec());
        for (k, v) in pairs {
            r.header.ext_fields.insert(*k, *v);
        }
        r
    }

    fn answer(store: &MetadataStore, r: &RemotingCommand) -> (i32, Option<String>, String) {
        let resp = handle(store, r).unwrap();
        (
            resp.code(),
            resp.remark().map(str::to_owned),
            String::from_utf8_lossy(&resp.body.to_bytes()).into_owned(),
        )
    }

    #[test]
    fn user_lifecycle() {
        let s = MetadataStore::in_memory();
        let create = req(
            RequestCode::AuthCreateUser,
            &[("username", "alice")],
            r#"{"password":"alice-pw","username":"alice"}"#,
        );
        assert_eq!(answer(&s, &create).0, 0);
        assert_eq!(
            answer(&s, &create).1.as_deref(),
            Some("The user is existed")
        );
        let (code, _, body) = answer(
            &s,
            &req(RequestCode::AuthGetUser, &[("username", "alice")], ""),
        );
        assert_eq!(code, 0);
        assert_eq!(
            body,
            r#"{"password":"alice-pw","userStatus":"enable","userType":"Normal","username":"alice"}"#
        );
        assert_eq!(
            answer(
                &s,
                &req(RequestCode::AuthGetUser, &[("username", "nobody")], "")
            ),
            (0, None, String::new())
        );
        assert_eq!(
            answer(&s, &req(RequestCode::AuthGetUser, &[], "")).0,
            ResponseCode::InvalidParameter.code()
        );
        let (_, _, list) = answer(&s, &req(RequestCode::AuthListUser, &[], ""));
        assert!(list.starts_with(r#"[{"password""#));
    }

    #[test]
    fn only_a_super_user_makes_a_super_user() {
        let s = MetadataStore::in_memory();
        s.ensure_super_user("root", "root-pw").unwrap();
        s.create_user(UserChange {
            username: Some("alice".into()),
            password: Some("alice-pw".into()),
            ..UserChange::default()
        })
        .unwrap();
        let body = r#"{"password":"x-pw","userType":"Super","username":"x"}"#;
        let mut by_alice = req(RequestCode::AuthCreateUser, &[("username", "x")], body);
        Credentials::new("alice", "alice-pw").sign(&mut by_alice);
        assert_eq!(
            answer(&s, &by_alice).1.as_deref(),
            Some("The super user can only be create by super user")
        );
        let mut by_root = req(RequestCode::AuthCreateUser, &[("username", "x")], body);
        Credentials::new("root", "root-pw").sign(&mut by_root);
        assert_eq!(answer(&s, &by_root).0, 0);
        let mut delete = req(RequestCode::AuthDeleteUser, &[("username", "root")], "");
        Credentials::new("alice", "alice-pw").sign(&mut delete);
        assert_eq!(
            answer(&s, &delete),
            (
                ResponseCode::NoPermission.code(),
                Some("The super user can only be update by super user".into()),
                String::new()
            )
        );
    }

    #[test]
    fn acl_lifecycle() {
        let s = MetadataStore::in_memory();
        s.create_user(UserChange {
            username: Some("alice".into()),
            password: Some("alice-pw".into()),
            ..UserChange::default()
        })
        .unwrap();
        let body = r#"{"policies":[{"entries":[{"actions":["Pub","Sub","Bogus"],"decision":"Allow","resource":"Topic:orders","sourceIps":["127.0.0.1"]}]}],"subject":"User:alice"}"#;
        let create = req(
            RequestCode::AuthCreateAcl,
            &[("subject", "User:alice")],
            body,
        );
        assert_eq!(answer(&s, &create).0, 0);
        let (_, _, got) = answer(
            &s,
            &req(RequestCode::AuthGetAcl, &[("subject", "User:alice")], ""),
        );
        assert_eq!(
            got,
            r#"{"policies":[{"entries":[{"actions":["Pub","Sub"],"decision":"Allow","resource":"Topic:orders","sourceIps":["127.0.0.1"]}],"policyType":"Custom"}],"subject":"User:alice"}"#
        );
        let empty = req(
            RequestCode::AuthCreateAcl,
            &[("subject", "User:alice")],
            "{}",
        );
        let (code, remark, _) = answer(&s, &empty);
        assert_eq!(code, ResponseCode::SystemError.code());
        assert!(remark.unwrap().contains("The body of acl is null"));
        let delete = req(
            RequestCode::AuthDeleteAcl,
            &[("subject", "User:alice"), ("resource", "Topic:orders")],
            "",
        );
        assert_eq!(answer(&s, &delete).0, 0);
        assert_eq!(
            answer(&s, &delete).1.as_deref(),
            Some("The acl is not exist.")
        );
        assert_eq!(
            answer(
                &s,
                &req(RequestCode::AuthGetAcl, &[("subject", "User:bob")], "")
            )
            .1
            .as_deref(),
            Some("The subject is not exist.")
        );
        assert!(handle(&s, &req(RequestCode::SendMessage, &[], "")).is_none());
    }
}
