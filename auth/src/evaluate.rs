//! The ACL 2.0 decisions, as RocketMQ 5.3.3 makes them for a remoting request: authentication
//! (`DefaultAuthenticationHandler`) and then authorization (`UserAuthorizationHandler`, then
//! `AclAuthorizationHandler`), each refusal carrying Apache's remark.
//!
//! Which entry decides: a Custom entry matching resource, actions and source IP wins over any
//! Default entry; among matches the most specific resource decides (a literal name over a
//! prefix, a longer prefix over a shorter one, a prefix over `Topic:*`, `Topic:*` over `*`);
//! between equally specific entries Deny wins. That is the order of Apache's fix for 5.3.3's
//! comparator (apache/rocketmq#9539), whose 5.3.3 form depended on the order entries were
//! added in; Deny winning a tie is what Apache's comment says and its code does not.

use std::sync::Arc;

use remoting::RemotingCommand;

use crate::cidr;
use crate::model::{
    Acl, Decision, PolicyEntry, PolicyType, ResourcePattern, ResourceType, User, UserStatus,
    UserType, parse_subject, user_subject,
};
use crate::request::Access;
use crate::signature::{self, ACCESS_KEY};

/// Users and ACLs, as the decisions read them.
pub trait Directory {
    /// The user named `username`.
    fn user(&self, username: &str) -> Option<Arc<User>>;
    /// The ACL of `subject` (`User:alice`).
    fn acl(&self, subject: &str) -> Option<Arc<Acl>>;
}

/// A refusal: the remark of Apache's exception (the response is NO_PERMISSION).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied(pub String);

/// Apache's remark when an authorization step throws something unexpected.
pub const AUTHORIZATION_FAILED: &str =
    "Authorization failed. Please verify your access rights and try again.";

/// Checks who sent `request`: its `AccessKey` names an enabled user whose secret key signs the
/// request to its `Signature`.
///
/// # Errors
/// No access key, an unknown or disabled user, a wrong signature.
pub fn authenticate(directory: &dyn Directory, request: &RemotingCommand) -> Result<(), Denied> {
    let Some(username) = request.ext(ACCESS_KEY).filter(|u| !u.is_empty()) else {
        return Err(Denied("username cannot be null.".into()));
    };
    let Some(user) = directory.user(username) else {
        return Err(Denied(format!("User:{username} is not found.")));
    };
    if user.user_status == UserStatus::Disable {
        return Err(Denied(format!("User:{username} is disabled.")));
    }
    if !signature::verify(request, &user.password) {
        return Err(Denied("check signature failed.".into()));
    }
    Ok(())
}

/// Checks that the sender (`username`, from its `AccessKey`; `None` when it sent none) may do
/// each of `accesses` from `source_ip`.
///
/// # Errors
/// The first access that is not allowed, with Apache's remark.
pub fn authorize(
    directory: &dyn Directory,
    username: Option<&str>,
    accesses: &[Access],
    source_ip: &str,
) -> Result<(), Denied> {
    for access in accesses {
        authorize_one(directory, username, access, source_ip)?;
    }
    Ok(())
}

fn authorize_one(
    directory: &dyn Directory,
    username: Option<&str>,
    access: &Access,
    source_ip: &str,
) -> Result<(), Denied> {
    // Apache: no subject is a NullPointerException in UserAuthorizationHandler.
    let username = username.ok_or_else(|| Denied(AUTHORIZATION_FAILED.into()))?;
    let Some(user) = directory.user(username) else {
        return Err(Denied(format!("User:{username} not found.")));
    };
    if user.user_type == UserType::Super {
        return Ok(());
    }
    let subject = user_subject(username);
    let refuse = |detail: &str| {
        Denied(format!(
            "{subject} has no permission to access {} from {source_ip}, {detail}",
            access.resource.key()
        ))
    };
    let acl = directory
        .acl(&subject)
        .ok_or_else(|| refuse("no matched policies."))?;
    match deciding_entry(&acl, access, source_ip)? {
        None => Err(refuse("no matched policies.")),
        Some(Decision::Deny) => Err(refuse("the decision is deny.")),
        Some(Decision::Allow) => Ok(()),
    }
}

/// The decision of the entry that decides `access` from `source_ip`, if one matches.
fn deciding_entry(acl: &Acl, access: &Access, source_ip: &str) -> Result<Option<Decision>, Denied> {
    for kind in [PolicyType::Custom, PolicyType::Default] {
        let Some(policy) = acl.policy(kind) else {
            continue;
        };
        let mut best: Option<&PolicyEntry> = None;
        for entry in &policy.entries {
            if !entry.resource.matches(&access.resource)
                || !entry.matches_actions(&access.actions)
                || !source_matches(entry, source_ip)?
            {
                continue;
            }
            best = match best {
                Some(b) if !decides_before(entry, b) => Some(b),
                _ => Some(entry),
            };
        }
        if let Some(entry) = best {
            return Ok(Some(entry.decision));
        }
    }
    Ok(None)
}

fn source_matches(entry: &PolicyEntry, source_ip: &str) -> Result<bool, Denied> {
    if entry.source_ips.is_empty() {
        return Ok(true);
    }
    if source_ip.is_empty() {
        return Ok(false);
    }
    for rule in &entry.source_ips {
        if cidr::ip_in_range(source_ip, rule).map_err(|_| Denied(AUTHORIZATION_FAILED.into()))? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// How specific an entry's resource is: higher decides first.
fn specificity(entry: &PolicyEntry) -> (u8, usize) {
    let r = &entry.resource;
    if r.kind == ResourceType::Any {
        return (0, 0);
    }
    match r.pattern {
        ResourcePattern::Any => (1, 0),
        ResourcePattern::Prefixed => (2, r.name.as_ref().map_or(0, String::len)),
        ResourcePattern::Literal => (3, 0),
    }
}

/// Whether `a` decides before `b`.
fn decides_before(a: &PolicyEntry, b: &PolicyEntry) -> bool {
    let (sa, sb) = (specificity(a), specificity(b));
    if sa != sb {
        return sa > sb;
    }
    a.decision == Decision::Deny && b.decision != Decision::Deny
}

/// The access key of `request`, when it sent one (the subject of its authorization).
#[must_use]
pub fn sender(request: &RemotingCommand) -> Option<&str> {
    request.ext(ACCESS_KEY)
}

/// Whether `subject` names a user (`Subject.of` finds a type).
#[must_use]
pub fn is_user_subject(subject: &str) -> bool {
    parse_subject(subject).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Action, Policy, Resource};
    use crate::signature::Credentials;
    use std::collections::HashMap;

    #[derive(Default)]
    struct Dir {
        users: HashMap<String, User>,
        acls: HashMap<String, Acl>,
    }

    impl Directory for Dir {
        fn user(&self, u: &str) -> Option<Arc<User>> {
            self.users.get(u).cloned().map(Arc::new)
        }
        fn acl(&self, s: &str) -> Option<Arc<Acl>> {
            self.acls.get(s).cloned().map(Arc::new)
        }
    }

    fn user(name: &str, kind: UserType) -> User {
        User {
            username: name.into(),
            password: format!("{name}-secret"),
            user_type: kind,
            user_status: UserStatus::Enable,
        }
    }

    fn entry(resource: &str, actions: &[Action], ips: &[&str], decision: Decision) -> PolicyEntry {
        PolicyEntry {
            resource: Resource::parse(resource).unwrap(),
            actions: actions.to_vec(),
            source_ips: ips.iter().map(|s| (*s).to_owned()).collect(),
            decision,
        }
    }

    fn dir() -> Dir {
        let mut d = Dir::default();
        d.users.insert("root".into(), user("root", UserType::Super));
        d.users
            .insert("alice".into(), user("alice", UserType::Normal));
        let mut off = user("off", UserType::Normal);
        off.user_status = UserStatus::Disable;
        d.users.insert("off".into(), off);
        d.acls.insert(
            "User:alice".into(),
            Acl {
                subject: "User:alice".into(),
                policies: vec![
                    Policy {
                        policy_type: PolicyType::Custom,
                        entries: vec![
                            entry("Topic:*", &[Action::Pub, Action::Sub], &[], Decision::Allow),
                            entry("Topic:secret", &[Action::All], &[], Decision::Deny),
                            entry(
                                "Topic:ord*",
                                &[Action::Pub],
                                &["10.0.0.0/8"],
                                Decision::Allow,
                            ),
                            entry("Topic:orders", &[Action::Pub], &[], Decision::Deny),
                            entry("Group:g*", &[Action::Sub], &["127.0.0.1"], Decision::Allow),
                        ],
                    },
                    Policy {
                        policy_type: PolicyType::Default,
                        entries: vec![entry("*", &[Action::Get], &[], Decision::Allow)],
                    },
                ],
            },
        );
        d
    }

    fn access(resource: &str, actions: &[Action]) -> Access {
        Access {
            resource: Resource::parse(resource).unwrap(),
            actions: actions.to_vec(),
        }
    }

    #[test]
    fn authentication_remarks() {
        let d = dir();
        let mut req = RemotingCommand::request(10);
        req.header.ext_fields.insert("topic", "T");
        assert_eq!(
            authenticate(&d, &req),
            Err(Denied("username cannot be null.".into()))
        );
        let mut bob = req.clone();
        Credentials::new("bob", "x").sign(&mut bob);
        assert_eq!(
            authenticate(&d, &bob),
            Err(Denied("User:bob is not found.".into()))
        );
        let mut off = req.clone();
        Credentials::new("off", "off-secret").sign(&mut off);
        assert_eq!(
            authenticate(&d, &off),
            Err(Denied("User:off is disabled.".into()))
        );
        let mut wrong = req.clone();
        Credentials::new("alice", "nope").sign(&mut wrong);
        assert_eq!(
            authenticate(&d, &wrong),
            Err(Denied("check signature failed.".into()))
        );
        let mut right = req.clone();
        Credentials::new("alice", "alice-secret").sign(&mut right);
        assert_eq!(authenticate(&d, &right), Ok(()));
        // A body change breaks the signature.
        right.body = b"x".to_vec().into();
        assert!(authenticate(&d, &right).is_err());
    }

    #[test]
    fn authorization_decisions() {
        let d = dir();
        let ok =
            |r: &str, a: &[Action], ip: &str| authorize(&d, Some("alice"), &[access(r, a)], ip);
        assert_eq!(ok("Topic:t1", &[Action::Pub], "127.0.0.1"), Ok(()));
        assert_eq!(
            ok("Topic:secret", &[Action::Sub], "127.0.0.1"),
            Err(Denied(
                "User:alice has no permission to access Topic:secret from 127.0.0.1, the decision is deny."
                    .into()
            ))
        );
        // Literal deny beats the longer-prefixed allow; the prefix allow needs 10/8.
        assert!(ok("Topic:orders", &[Action::Pub], "10.1.1.1").is_err());
        assert_eq!(ok("Topic:ord2", &[Action::Pub], "10.1.1.1"), Ok(()));
        // From elsewhere the prefix entry does not match; Topic:* allows.
        assert_eq!(ok("Topic:ord2", &[Action::Pub], "127.0.0.1"), Ok(()));
        assert_eq!(ok("Group:g1", &[Action::Sub], "127.0.0.1"), Ok(()));
        assert_eq!(
            ok("Group:g1", &[Action::Sub], "127.0.0.2"),
            Err(Denied(
                "User:alice has no permission to access Group:g1 from 127.0.0.2, no matched policies."
                    .into()
            ))
        );
        // No Custom match: the Default policy decides.
        assert_eq!(ok("Group:zz", &[Action::Get], "1.2.3.4"), Ok(()));
        assert_eq!(
            authorize(
                &d,
                Some("root"),
                &[access("Topic:secret", &[Action::Pub])],
                "x"
            ),
            Ok(())
        );
        assert_eq!(
            authorize(&d, Some("bob"), &[access("Topic:a", &[Action::Pub])], "x"),
            Err(Denied("User:bob not found.".into()))
        );
        assert_eq!(
            authorize(&d, None, &[access("Topic:a", &[Action::Pub])], "x"),
            Err(Denied(AUTHORIZATION_FAILED.into()))
        );
        assert_eq!(authorize(&d, None, &[], "x"), Ok(()));
    }

    #[test]
    fn deny_wins_a_tie() {
        let a = entry("Topic:x", &[Action::Pub], &[], Decision::Allow);
        let b = entry("Topic:x", &[Action::Pub], &[], Decision::Deny);
        assert!(decides_before(&b, &a));
        assert!(!decides_before(&a, &b));
    }
}
