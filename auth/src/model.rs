//! The ACL 2.0 model, as RocketMQ 5.3 defines it: users (super / normal, enabled /
//! disabled), resources (type + name + literal / prefixed / any pattern), actions, and ACLs of
//! policies whose entries allow or deny actions on a resource from a set of source IPs.
//!
//! Names are spelled as Apache spells them on the wire and in `mqadmin` (`Super`, `enable`,
//! `Topic:orders`, `Pub`, `Allow`), and parsed case-insensitively as Apache's `getByName` does.

use serde::{Deserialize, Serialize};

/// `%RETRY%`: the prefix of a consumer group's retry topic.
pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";
/// `%DLQ%`: the prefix of a consumer group's dead letter topic.
pub const DLQ_GROUP_TOPIC_PREFIX: &str = "%DLQ%";

/// Whether `topic` is a retry topic (`NamespaceUtil.isRetryTopic`: not blank, `%RETRY%...`).
#[must_use]
pub fn is_retry_topic(topic: Option<&str>) -> bool {
    topic.is_some_and(|t| !t.trim().is_empty() && t.starts_with(RETRY_GROUP_TOPIC_PREFIX))
}

/// The group behind a retry or dead letter topic name (`NamespaceUtil.withOutRetryAndDLQ`).
#[must_use]
pub fn without_retry_and_dlq(name: &str) -> &str {
    if name.trim().is_empty() {
        return name;
    }
    name.strip_prefix(RETRY_GROUP_TOPIC_PREFIX)
        .or_else(|| name.strip_prefix(DLQ_GROUP_TOPIC_PREFIX))
        .unwrap_or(name)
}

macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $wire:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            /// Every value, in Apache's declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// Apache's name.
            #[must_use]
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)*
                }
            }

            /// The value named `name`, ignoring case (`getByName`).
            #[must_use]
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.name().eq_ignore_ascii_case(name))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                $name::from_name(&text)
                    .ok_or_else(|| serde::de::Error::custom(format!("unknown {}: {text}", stringify!($name))))
            }
        }
    };
}

named_enum! {
    /// What a request does to a resource (`org.apache.rocketmq.common.action.Action`).
    Action {
        /// Never granted; never asked.
        Unknown => "Unknown",
        /// Granted: every action.
        All => "All",
        /// Asked: any granted action will do (never grantable).
        Any => "Any",
        /// Send to a topic.
        Pub => "Pub",
        /// Consume from a topic, or as a group.
        Sub => "Sub",
        /// Create (a topic).
        Create => "Create",
        /// Change (offsets, users, the cluster).
        Update => "Update",
        /// Delete.
        Delete => "Delete",
        /// Read.
        Get => "Get",
        /// List.
        List => "List",
    }
}

named_enum! {
    /// What a matching entry decides.
    Decision {
        /// The request may go on.
        Allow => "Allow",
        /// The request is refused.
        Deny => "Deny",
    }
}

named_enum! {
    /// The two policies of an ACL: a matching Custom entry wins; Default entries are looked at
    /// only when no Custom entry matches.
    PolicyType {
        /// Entries an operator wrote.
        Custom => "Custom",
        /// Fallback entries (4.9 migration: defaultTopicPerm / defaultGroupPerm).
        Default => "Default",
    }
}

named_enum! {
    /// What kind of thing a resource is (`org.apache.rocketmq.common.resource.ResourceType`).
    ResourceType {
        /// Not a real resource.
        Unknown => "Unknown",
        /// Every resource (`*`).
        Any => "Any",
        /// A cluster (admin requests on a broker or name server).
        Cluster => "Cluster",
        /// A namespace.
        Namespace => "Namespace",
        /// A topic.
        Topic => "Topic",
        /// A consumer (or producer) group.
        Group => "Group",
    }
}

named_enum! {
    /// How a resource's name matches.
    ResourcePattern {
        /// Every name (`Topic:*`).
        Any => "ANY",
        /// Exactly this name (`Topic:orders`).
        Literal => "LITERAL",
        /// Names starting with this (`Topic:orders*`).
        Prefixed => "PREFIXED",
    }
}

named_enum! {
    /// Super users pass every authorization check; normal users need ACL entries.
    UserType {
        /// Everything allowed.
        Super => "Super",
        /// Only what the user's ACL allows.
        Normal => "Normal",
    }
}

named_enum! {
    /// A disabled user cannot authenticate.
    UserStatus {
        /// May log in.
        Enable => "enable",
        /// Refused.
        Disable => "disable",
    }
}

/// A user: the access key (`username`) and secret key (`password`) a client signs with.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct User {
    /// Access key.
    pub username: String,
    /// Secret key. Never logged: `Debug` leaves it out.
    pub password: String,
    /// Super or normal.
    pub user_type: UserType,
    /// Enabled or disabled.
    pub user_status: UserStatus,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("username", &self.username)
            .field("user_type", &self.user_type)
            .field("user_status", &self.user_status)
            .finish_non_exhaustive()
    }
}

/// `User:` — the one subject type.
pub const USER_SUBJECT_PREFIX: &str = "User:";

/// The subject key of user `username` (`User:alice`).
#[must_use]
pub fn user_subject(username: &str) -> String {
    format!("{USER_SUBJECT_PREFIX}{username}")
}

/// The user named by a subject key (`Subject.of`): `User:alice` → `alice`, the type ignoring
/// case; `None` for any other type, or a key without one.
#[must_use]
pub fn parse_subject(key: &str) -> Option<&str> {
    let (kind, name) = key.split_once(':').unwrap_or((key, ""));
    kind.eq_ignore_ascii_case("User").then_some(name)
}

/// A resource: a type, a name and how the name matches. A requested resource is always
/// literal; its name may be missing (a request without the field: Apache's `null`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Resource {
    /// Type.
    pub kind: ResourceType,
    /// Name (none for `*` and `Topic:*`, or a request that did not name one).
    pub name: Option<String>,
    /// Pattern.
    pub pattern: ResourcePattern,
}

impl Resource {
    /// A literal resource of `kind`.
    #[must_use]
    pub fn literal(kind: ResourceType, name: Option<&str>) -> Self {
        Resource {
            kind,
            name: name.map(str::to_owned),
            pattern: ResourcePattern::Literal,
        }
    }

    /// `Cluster:<name>`.
    #[must_use]
    pub fn cluster(name: &str) -> Self {
        Resource::literal(ResourceType::Cluster, Some(name))
    }

    /// `Topic:<name>`.
    #[must_use]
    pub fn topic(name: Option<&str>) -> Self {
        Resource::literal(ResourceType::Topic, name)
    }

    /// `Group:<name>`; a retry or dead letter topic names its group (`Resource.ofGroup`).
    #[must_use]
    pub fn group(name: Option<&str>) -> Self {
        let name = name.map(|n| {
            if is_retry_topic(Some(n)) {
                without_retry_and_dlq(n)
            } else {
                n
            }
        });
        Resource::literal(ResourceType::Group, name)
    }

    /// Parses a resource key as `mqadmin createAcl -r` writes it (`Resource.of`): `*`,
    /// `Topic:orders`, `Topic:orders*`, `Topic:*`; `None` when blank or of no known type.
    #[must_use]
    pub fn parse(key: &str) -> Option<Self> {
        if key.trim().is_empty() {
            return None;
        }
        if key == "*" {
            return Some(Resource {
                kind: ResourceType::Any,
                name: None,
                pattern: ResourcePattern::Any,
            });
        }
        let (kind, name) = key.split_once(':').unwrap_or((key, ""));
        let kind = ResourceType::from_name(kind)?;
        let (name, pattern) = if name == "*" {
            (None, ResourcePattern::Any)
        } else if name.ends_with('*') {
            // substringBefore: up to the first `*`.
            let prefix = name.split('*').next().unwrap_or_default();
            (Some(prefix.to_owned()), ResourcePattern::Prefixed)
        } else {
            (Some(name.to_owned()), ResourcePattern::Literal)
        };
        Some(Resource {
            kind,
            name,
            pattern,
        })
    }

    /// The key (`getResourceKey`): `*`, `Topic:*`, `Topic:orders`, `Topic:orders*`; a missing
    /// name prints as Java prints it, `null`.
    #[must_use]
    pub fn key(&self) -> String {
        if self.kind == ResourceType::Any {
            return "*".to_owned();
        }
        let name = self.name.as_deref().unwrap_or("null");
        match self.pattern {
            ResourcePattern::Any => format!("{}:*", self.kind),
            ResourcePattern::Literal => format!("{}:{name}", self.kind),
            ResourcePattern::Prefixed => format!("{}:{name}*", self.kind),
        }
    }

    /// Whether this (granted) resource covers the `requested` one (`Resource.isMatch`).
    #[must_use]
    pub fn matches(&self, requested: &Resource) -> bool {
        if self.kind == ResourceType::Any {
            return true;
        }
        if self.kind != requested.kind {
            return false;
        }
        match self.pattern {
            ResourcePattern::Any => true,
            ResourcePattern::Literal => {
                requested.name.is_some() && requested.name.as_deref() == self.name.as_deref()
            }
            ResourcePattern::Prefixed => match (&requested.name, &self.name) {
                (Some(r), Some(p)) => r.starts_with(p.as_str()),
                _ => false,
            },
        }
    }
}

impl From<Resource> for String {
    fn from(r: Resource) -> String {
        r.key()
    }
}

impl TryFrom<String> for Resource {
    type Error = String;

    fn try_from(key: String) -> Result<Self, String> {
        Resource::parse(&key).ok_or_else(|| format!("not a resource: {key}"))
    }
}

/// One entry of a policy: `decision` for `actions` on `resource`, from `source_ips` (IPs or
/// CIDRs; empty: from anywhere).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEntry {
    /// The resource (pattern) the entry is about.
    pub resource: Resource,
    /// Granted (or denied) actions.
    pub actions: Vec<Action>,
    /// Where requests must come from; empty: anywhere.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// Allow or deny.
    pub decision: Decision,
}

impl PolicyEntry {
    /// Whether the entry is about any of `asked` (`PolicyEntry.isMatchAction`): `Any` asks
    /// for anything granted, `All` grants everything.
    #[must_use]
    pub fn matches_actions(&self, asked: &[Action]) -> bool {
        if self.actions.is_empty() {
            return false;
        }
        if asked.contains(&Action::Any) {
            return true;
        }
        asked
            .iter()
            .any(|a| self.actions.contains(a) || self.actions.contains(&Action::All))
    }
}

/// One policy: entries, at most one per resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// Custom or default.
    pub policy_type: PolicyType,
    /// Entries, in the order they were added.
    pub entries: Vec<PolicyEntry>,
}

impl Policy {
    /// Adds `new` entries; an entry for a resource already present replaces its actions,
    /// IPs and decision in place (`Policy.updateEntry`).
    pub fn update_entries(&mut self, new: Vec<PolicyEntry>) {
        for entry in new {
            match self
                .entries
                .iter_mut()
                .find(|e| e.resource == entry.resource)
            {
                Some(old) => {
                    old.actions = entry.actions;
                    old.source_ips = entry.source_ips;
                    old.decision = entry.decision;
                }
                None => self.entries.push(entry),
            }
        }
    }
}

/// The ACL of one subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Acl {
    /// Subject key (`User:alice`).
    pub subject: String,
    /// At most one policy per type.
    pub policies: Vec<Policy>,
}

impl Acl {
    /// The policy of `kind`.
    #[must_use]
    pub fn policy(&self, kind: PolicyType) -> Option<&Policy> {
        self.policies.iter().find(|p| p.policy_type == kind)
    }

    /// Merges `policies` in (`Acl.updatePolicy`): a new type is added, an existing one gets
    /// the new entries.
    pub fn update_policies(&mut self, policies: Vec<Policy>) {
        for policy in policies {
            match self
                .policies
                .iter_mut()
                .find(|p| p.policy_type == policy.policy_type)
            {
                Some(old) => old.update_entries(policy.entries),
                None => self.policies.push(policy),
            }
        }
    }

    /// Removes the entry for `resource` from the policy of `kind`, and the policy when it
    /// is left empty (`Acl.deletePolicy`).
    pub fn delete_entry(&mut self, kind: PolicyType, resource: &Resource) {
        if let Some(i) = self.policies.iter().position(|p| p.policy_type == kind) {
            let policy = &mut self.policies[i];
            policy.entries.retain(|e| &e.resource != resource);
            if policy.entries.is_empty() {
                self.policies.remove(i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_keys_round_trip() {
        for key in [
            "*",
            "Topic:*",
            "Topic:orders",
            "Topic:ord*",
            "Group:g1",
            "Cluster:DefaultCluster",
        ] {
            assert_eq!(Resource::parse(key).unwrap().key(), key);
        }
        assert_eq!(Resource::parse("topic:a").unwrap().key(), "Topic:a");
        assert_eq!(Resource::parse("Queue:a"), None);
        assert_eq!(Resource::parse("  "), None);
        // As substringBefore(name, "*"): `a*b*` is the prefix `a`.
        assert_eq!(Resource::parse("Topic:a*b*").unwrap().key(), "Topic:a*");
        // A key without a colon names a type and an empty name.
        assert_eq!(Resource::parse("Topic").unwrap().key(), "Topic:");
    }

    #[test]
    fn matching_follows_the_pattern() {
        let t = |n: &str| Resource::topic(Some(n));
        assert!(
            Resource::parse("*")
                .unwrap()
                .matches(&Resource::group(Some("g")))
        );
        assert!(Resource::parse("Topic:*").unwrap().matches(&t("x")));
        assert!(
            !Resource::parse("Topic:*")
                .unwrap()
                .matches(&Resource::group(Some("x")))
        );
        assert!(Resource::parse("Topic:ord*").unwrap().matches(&t("orders")));
        assert!(!Resource::parse("Topic:ord*").unwrap().matches(&t("or")));
        assert!(
            Resource::parse("Topic:orders")
                .unwrap()
                .matches(&t("orders"))
        );
        assert!(
            !Resource::parse("Topic:orders")
                .unwrap()
                .matches(&t("orders2"))
        );
        assert!(
            !Resource::parse("Topic:orders")
                .unwrap()
                .matches(&Resource::topic(None))
        );
        assert_eq!(Resource::topic(None).key(), "Topic:null");
    }

    #[test]
    fn a_retry_topic_names_its_group() {
        assert_eq!(Resource::group(Some("%RETRY%g1")).key(), "Group:g1");
        assert_eq!(Resource::group(Some("%DLQ%g1")).key(), "Group:%DLQ%g1");
        assert!(is_retry_topic(Some("%RETRY%x")));
        assert!(!is_retry_topic(Some(" ")));
        assert!(!is_retry_topic(None));
    }

    #[test]
    fn subjects_and_names() {
        assert_eq!(parse_subject("User:alice"), Some("alice"));
        assert_eq!(parse_subject("user:alice"), Some("alice"));
        assert_eq!(parse_subject("alice"), None);
        assert_eq!(parse_subject("Group:x"), None);
        assert_eq!(Action::from_name("pub"), Some(Action::Pub));
        assert_eq!(UserStatus::from_name("DISABLE"), Some(UserStatus::Disable));
        assert_eq!(Decision::from_name("maybe"), None);
    }

    #[test]
    fn actions_match_as_apache_does() {
        let entry = PolicyEntry {
            resource: Resource::parse("Topic:a").unwrap(),
            actions: vec![Action::Pub],
            source_ips: vec![],
            decision: Decision::Allow,
        };
        assert!(entry.matches_actions(&[Action::Pub, Action::Sub]));
        assert!(!entry.matches_actions(&[Action::Sub]));
        assert!(entry.matches_actions(&[Action::Any]));
        let all = PolicyEntry {
            actions: vec![Action::All],
            ..entry.clone()
        };
        assert!(all.matches_actions(&[Action::Delete]));
    }

    #[test]
    fn updates_merge_by_resource() {
        let entry = |r: &str, d| PolicyEntry {
            resource: Resource::parse(r).unwrap(),
            actions: vec![Action::Pub],
            source_ips: vec![],
            decision: d,
        };
        let mut acl = Acl {
            subject: user_subject("a"),
            policies: vec![Policy {
                policy_type: PolicyType::Custom,
                entries: vec![entry("Topic:a", Decision::Allow)],
            }],
        };
        acl.update_policies(vec![Policy {
            policy_type: PolicyType::Custom,
            entries: vec![
                entry("Topic:a", Decision::Deny),
                entry("Topic:b", Decision::Allow),
            ],
        }]);
        let custom = acl.policy(PolicyType::Custom).unwrap();
        assert_eq!(custom.entries.len(), 2);
        assert_eq!(custom.entries[0].decision, Decision::Deny);
        acl.delete_entry(PolicyType::Custom, &Resource::parse("Topic:a").unwrap());
        acl.delete_entry(PolicyType::Custom, &Resource::parse("Topic:b").unwrap());
        assert!(acl.policies.is_empty());
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let u = User {
            username: "alice".into(),
            password: "s3cr3t-pw".into(),
            user_type: UserType::Normal,
            user_status: UserStatus::Enable,
        };
        assert!(!format!("{u:?}").contains("s3cr3t"));
    }
}
