//! The AUTH_* admin requests of RocketMQ 5.x's ACL 2.0 (codes 3001..=3010): their headers and
//! the `UserInfo` / `AclInfo` bodies, as `mqadmin createUser` / `createAcl` and friends send
//! them and as the broker answers GET/LIST.
//!
//! Every header field is optional on the wire: Apache declares none of them `@CFNotNull` and
//! checks for blanks in the handler, with its own remarks.

use serde::{Deserialize, Serialize};

use crate::ext_header;

ext_header! {
    /// AUTH_CREATE_USER (3001), AUTH_UPDATE_USER (3002), AUTH_DELETE_USER (3003) and
    /// AUTH_GET_USER (3004) request (`CreateUserRequestHeader` and its siblings).
    pub struct UserRequestHeader {
        /// The user's name.
        username: Option<String> = "username",
    }
}

ext_header! {
    /// AUTH_LIST_USER (3005) request.
    pub struct ListUsersRequestHeader {
        /// Only users whose name contains this.
        filter: Option<String> = "filter",
    }
}

ext_header! {
    /// AUTH_CREATE_ACL (3006), AUTH_UPDATE_ACL (3007) and AUTH_GET_ACL (3009) request.
    pub struct AclRequestHeader {
        /// The subject key, `User:<name>`.
        subject: Option<String> = "subject",
    }
}

ext_header! {
    /// AUTH_DELETE_ACL (3008) request: the whole ACL of `subject`, or only its entry for
    /// `resource` in the policy of `policyType` (default Custom).
    pub struct DeleteAclRequestHeader {
        /// The subject key, `User:<name>`.
        subject: Option<String> = "subject",
        /// `Custom` or `Default`.
        policy_type: Option<String> = "policyType",
        /// A resource key (`Topic:orders`, `Group:g*`, `*`).
        resource: Option<String> = "resource",
    }
}

ext_header! {
    /// AUTH_LIST_ACL (3010) request.
    pub struct ListAclsRequestHeader {
        /// Only subjects whose key contains this.
        subject_filter: Option<String> = "subjectFilter",
        /// Only entries whose resource key contains this.
        resource_filter: Option<String> = "resourceFilter",
    }
}

/// A user as the AUTH_* requests carry it (`UserInfo`): names, not codes, for the enums
/// (`Super` / `Normal`, `enable` / `disable`). GET_USER answers carry the password too, as
/// Apache's do (`mqadmin getUser` prints it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct UserInfo {
    /// Secret key (`password`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Access key (`username`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// `enable` or `disable`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_status: Option<String>,
    /// `Super` or `Normal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_type: Option<String>,
}

/// An ACL as the AUTH_* requests carry it (`AclInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AclInfo {
    /// Policies, at most one per policy type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policies: Option<Vec<PolicyInfo>>,
    /// The subject key, `User:<name>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// One policy of an [`AclInfo`] (`AclInfo.PolicyInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PolicyInfo {
    /// Entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<PolicyEntryInfo>>,
    /// `Custom` (the default) or `Default`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_type: Option<String>,
}

/// One entry of a [`PolicyInfo`] (`AclInfo.PolicyEntryInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PolicyEntryInfo {
    /// Action names (`Pub`, `Sub`, `Create`, `Update`, `Delete`, `Get`, `List`, `All`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<String>>,
    /// `Allow` or `Deny`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// A resource key (`Topic:orders`, `Group:g*`, `Cluster:DefaultCluster`, `*`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// IPs or CIDRs the entry applies to (none: any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_ips: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fastjson::{self, KeyStyle};

    /// The body `mqadmin createAcl` sends (fastjson: keys in alphabetical order, nulls left
    /// out) decodes, and encodes back to the same bytes.
    #[test]
    fn acl_info_as_fastjson_writes_it() {
        let wire = br#"{"policies":[{"entries":[{"actions":["Pub","Sub"],"decision":"Allow","resource":"Topic:orders","sourceIps":["127.0.0.1"]}]}],"subject":"User:alice"}"#;
        let info: AclInfo = fastjson::from_slice(wire).unwrap();
        let entry = &info.policies.as_ref().unwrap()[0].entries.as_ref().unwrap()[0];
        assert_eq!(entry.resource.as_deref(), Some("Topic:orders"));
        assert_eq!(info.policies.as_ref().unwrap()[0].policy_type, None);
        assert_eq!(
            fastjson::to_vec(&info, KeyStyle::Fastjson).unwrap(),
            wire.to_vec()
        );
    }

    #[test]
    fn user_info_round_trip() {
        let wire = br#"{"password":"secret12","userType":"Super","username":"alice"}"#;
        let info: UserInfo = fastjson::from_slice(wire).unwrap();
        assert_eq!(info.user_type.as_deref(), Some("Super"));
        assert_eq!(info.user_status, None);
        assert_eq!(
            fastjson::to_vec(&info, KeyStyle::Fastjson).unwrap(),
            wire.to_vec()
        );
    }
}
