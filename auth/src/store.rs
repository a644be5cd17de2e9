//! Users and ACLs of one server, in memory and in two files (Apache keeps them in RocksDB):
//! `authUsers.json` and `authAcls.json` under the auth config directory
//! (`<storePathRootDir>/config` on a broker). Every change writes the whole table to
//! `<file>.tmp` (mode 0600: it holds secret keys), syncs it, keeps the previous file as
//! `<file>.bak`, renames and syncs the directory; memory changes only once the file has.
//!
//! The operations keep Apache's `AuthenticationMetadataManagerImpl` /
//! `AuthorizationMetadataManagerImpl` rules and remarks (validation, "The user is existed",
//! merging a new ACL into an existing one...).

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::cidr;
use crate::error::StoreError;
use crate::evaluate::Directory;
use crate::model::{
    Acl, Action, Policy, PolicyType, Resource, User, UserStatus, UserType, parse_subject,
    user_subject,
};

/// File of the users table.
pub const USERS_FILE: &str = "authUsers.json";
/// File of the ACL table.
pub const ACLS_FILE: &str = "authAcls.json";

/// Why a management operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManageError {
    /// Apache's `AuthenticationException` / `AuthorizationException`: NO_PERMISSION with this
    /// remark.
    #[error("{0}")]
    Refused(String),
    /// Anything else: SYSTEM_ERROR ("An system error occurred, please try again later.").
    #[error("{0}")]
    System(String),
}

fn refused(remark: impl Into<String>) -> ManageError {
    ManageError::Refused(remark.into())
}

/// A user as a create or update request gives it: every part optional.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct UserChange {
    /// Access key.
    pub username: Option<String>,
    /// Secret key.
    pub password: Option<String>,
    /// Type (`None`: Normal on create, unchanged on update).
    pub user_type: Option<UserType>,
    /// Status (`None`: enabled on create, unchanged on update).
    pub user_status: Option<UserStatus>,
}

impl std::fmt::Debug for UserChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserChange")
            .field("username", &self.username)
            .field("user_type", &self.user_type)
            .field("user_status", &self.user_status)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize, Deserialize, Default)]
struct UsersFile {
    users: Vec<User>,
}

#[derive(Serialize, Deserialize, Default)]
struct AclsFile {
    acls: Vec<Acl>,
}

type Users = BTreeMap<String, Arc<User>>;
type Acls = BTreeMap<String, Arc<Acl>>;

/// The users and ACLs of a server.
#[derive(Debug)]
pub struct MetadataStore {
    dir: Option<PathBuf>,
    users: RwLock<Users>,
    acls: RwLock<Acls>,
    /// One change at a time: read, change, write, publish.
    change: Mutex<()>,
    /// Modification times of the files last loaded or written (for [`reload_if_changed`]).
    ///
    /// [`reload_if_changed`]: MetadataStore::reload_if_changed
    stamps: Mutex<(Option<SystemTime>, Option<SystemTime>)>,
}

fn modified(path: &Path) -> Option<SystemTime> {
    fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn read_table<T: for<'de> Deserialize<'de> + Default>(path: &Path) -> Result<T, StoreError> {
    let parsed = remoting::config_file::read_with_backup(path, |bytes| {
        serde_json::from_slice::<T>(bytes).map_err(|e| e.to_string())
    })
    .map_err(|e| StoreError::Load {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(parsed.unwrap_or_default())
}

/// Writes `content` to `path` as described in the module docs.
fn write_private(path: &Path, content: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let with_suffix = |s: &str| {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(s);
        path.with_file_name(name)
    };
    let tmp = with_suffix(".tmp");
    let create = |p: &Path| {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(p)
    };
    {
        let mut file = create(&tmp)?;
        file.write_all(content)?;
        file.sync_all()?;
    }
    if path.exists() {
        let bak = with_suffix(".bak");
        let old = fs::read(path)?;
        let mut file = create(&bak)?;
        file.write_all(&old)?;
        file.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    File::open(dir)?.sync_all()
}

impl MetadataStore {
    /// A store kept in memory only (tests, and servers without a config directory).
    #[must_use]
    pub fn in_memory() -> Self {
        MetadataStore {
            dir: None,
            users: RwLock::new(Users::new()),
            acls: RwLock::new(Acls::new()),
            change: Mutex::new(()),
            stamps: Mutex::new((None, None)),
        }
    }

    /// Opens (or starts) the store in `dir`.
    ///
    /// # Errors
    /// A file exists but neither it nor its `.bak` can be read.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let store = MetadataStore {
            dir: Some(dir.to_owned()),
            ..MetadataStore::in_memory()
        };
        store.load()?;
        Ok(store)
    }

    fn path(&self, name: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(name))
    }

    fn load(&self) -> Result<(), StoreError> {
        let (Some(users_path), Some(acls_path)) = (self.path(USERS_FILE), self.path(ACLS_FILE))
        else {
            return Ok(());
        };
        let users: UsersFile = read_table(&users_path)?;
        let acls: AclsFile = read_table(&acls_path)?;
        *self.users.write() = users
            .users
            .into_iter()
            .map(|u| (u.username.clone(), Arc::new(u)))
            .collect();
        *self.acls.write() = acls
            .acls
            .into_iter()
            .map(|a| (a.subject.clone(), Arc::new(a)))
            .collect();
        *self.stamps.lock() = (modified(&users_path), modified(&acls_path));
        Ok(())
    }

    /// Loads the files again when another process changed them (a name server sharing a
    /// broker's directory). Returns whether it did.
    ///
    /// # Errors
    /// As [`open`](Self::open); memory is left as it was.
    pub fn reload_if_changed(&self) -> Result<bool, StoreError> {
        let (Some(users_path), Some(acls_path)) = (self.path(USERS_FILE), self.path(ACLS_FILE))
        else {
            return Ok(false);
        };
        let now = (modified(&users_path), modified(&acls_path));
        if *self.stamps.lock() == now {
            return Ok(false);
        }
        let _guard = self.change.lock();
        self.load()?;
        info!(dir = ?self.dir, "auth metadata reloaded");
        Ok(true)
    }

    fn save_users(&self, users: &Users) -> Result<(), ManageError> {
        let Some(path) = self.path(USERS_FILE) else {
            return Ok(());
        };
        let file = UsersFile {
            users: users.values().map(|u| (**u).clone()).collect(),
        };
        self.save(&path, &file)?;
        self.stamps.lock().0 = modified(&path);
        Ok(())
    }

    fn save_acls(&self, acls: &Acls) -> Result<(), ManageError> {
        let Some(path) = self.path(ACLS_FILE) else {
            return Ok(());
        };
        let file = AclsFile {
            acls: acls.values().map(|a| (**a).clone()).collect(),
        };
        self.save(&path, &file)?;
        self.stamps.lock().1 = modified(&path);
        Ok(())
    }

    fn save<T: Serialize>(&self, path: &Path, value: &T) -> Result<(), ManageError> {
        let bytes = serde_json::to_vec_pretty(value)
            .map_err(|e| ManageError::System(format!("cannot encode {}: {e}", path.display())))?;
        write_private(path, &bytes).map_err(|e| {
            warn!(file = %path.display(), error = %e, "cannot write auth metadata");
            ManageError::System(format!("cannot write {}: {e}", path.display()))
        })
    }

    // ------------------------------------------------------------------ users

    /// Creates a user (`createUser`): a name and a password are required, the name must be
    /// new; type defaults to Normal, status to enabled.
    ///
    /// # Errors
    /// Apache's refusals; `System` when the file cannot be written.
    pub fn create_user(&self, change: UserChange) -> Result<(), ManageError> {
        let username = blank_checked(change.username.as_deref())?;
        let Some(password) = change.password.filter(|p| !p.trim().is_empty()) else {
            return Err(refused("password can not be blank"));
        };
        let _guard = self.change.lock();
        let mut users = self.users.read().clone();
        if users.contains_key(username) {
            return Err(refused("The user is existed"));
        }
        users.insert(
            username.to_owned(),
            Arc::new(User {
                username: username.to_owned(),
                password,
                user_type: change.user_type.unwrap_or(UserType::Normal),
                user_status: change.user_status.unwrap_or(UserStatus::Enable),
            }),
        );
        self.save_users(&users)?;
        *self.users.write() = users;
        Ok(())
    }

    /// Changes a user (`updateUser`): a non-blank password, a type, a status, each when given.
    ///
    /// # Errors
    /// Blank name, no such user; `System` when the file cannot be written.
    pub fn update_user(&self, change: UserChange) -> Result<(), ManageError> {
        let username = blank_checked(change.username.as_deref())?;
        let _guard = self.change.lock();
        let mut users = self.users.read().clone();
        let Some(user) = users.get_mut(username).map(Arc::make_mut) else {
            return Err(refused("The user is not exist"));
        };
        if let Some(p) = change.password.filter(|p| !p.trim().is_empty()) {
            user.password = p;
        }
        if let Some(t) = change.user_type {
            user.user_type = t;
        }
        if let Some(s) = change.user_status {
            user.user_status = s;
        }
        self.save_users(&users)?;
        *self.users.write() = users;
        Ok(())
    }

    /// Deletes a user and its ACL (`deleteUser`); deleting a missing user is no error.
    ///
    /// # Errors
    /// Blank name; `System` when a file cannot be written.
    pub fn delete_user(&self, username: Option<&str>) -> Result<(), ManageError> {
        let username = blank_checked(username)?;
        let _guard = self.change.lock();
        let mut users = self.users.read().clone();
        if users.remove(username).is_some() {
            self.save_users(&users)?;
            *self.users.write() = users;
        }
        let subject = user_subject(username);
        let mut acls = self.acls.read().clone();
        if acls.remove(&subject).is_some() {
            self.save_acls(&acls)?;
            *self.acls.write() = acls;
        }
        Ok(())
    }

    /// Users whose name contains `filter` (all for none or blank), by name.
    #[must_use]
    pub fn list_users(&self, filter: Option<&str>) -> Vec<User> {
        let filter = filter.filter(|f| !f.trim().is_empty());
        self.users
            .read()
            .values()
            .filter(|u| filter.is_none_or(|f| u.username.contains(f)))
            .map(|u| (**u).clone())
            .collect()
    }

    /// Creates `username` as a super user with `password` unless it exists
    /// (`initAuthenticationUser`, `innerClientAuthenticationCredentials`).
    ///
    /// # Errors
    /// As [`create_user`](Self::create_user).
    pub fn ensure_super_user(&self, username: &str, password: &str) -> Result<(), ManageError> {
        if self.users.read().contains_key(username) {
            return Ok(());
        }
        self.create_user(UserChange {
            username: Some(username.to_owned()),
            password: Some(password.to_owned()),
            user_type: Some(UserType::Super),
            user_status: None,
        })
    }

    /// Whether `username` is a super user (`isSuperUser`; an unknown user is not).
    #[must_use]
    pub fn is_super_user(&self, username: &str) -> bool {
        self.users
            .read()
            .get(username)
            .is_some_and(|u| u.user_type == UserType::Super)
    }

    // ------------------------------------------------------------------ ACLs

    /// Creates or extends the ACL of `subject` (`createAcl` and `updateAcl` alike: new policy
    /// types are added, entries for new resources appended, entries for known ones replaced).
    ///
    /// # Errors
    /// Apache's validation remarks; the subject's user must exist; `System` when the subject is
    /// missing or the file cannot be written.
    pub fn put_acl(
        &self,
        subject: Option<&str>,
        mut policies: Vec<PolicyDraft>,
    ) -> Result<(), ManageError> {
        let Some(subject) = subject else {
            // Apache: a NullPointerException in validate.
            return Err(ManageError::System("The subject is null.".into()));
        };
        if policies.is_empty() {
            return Err(refused("The policies is empty."));
        }
        let mut checked = Vec::with_capacity(policies.len());
        for draft in policies.drain(..) {
            checked.push(draft.validate()?);
        }
        let username = parse_subject(subject).unwrap_or_default();
        let _guard = self.change.lock();
        if !self.users.read().contains_key(username) {
            return Err(refused(format!(
                "The subject of {} is not exist.",
                user_subject(username)
            )));
        }
        let key = user_subject(username);
        let mut acls = self.acls.read().clone();
        match acls.get_mut(&key) {
            Some(old) => Arc::make_mut(old).update_policies(checked),
            None => {
                acls.insert(
                    key.clone(),
                    Arc::new(Acl {
                        subject: key,
                        policies: checked,
                    }),
                );
            }
        }
        self.save_acls(&acls)?;
        *self.acls.write() = acls;
        Ok(())
    }

    /// Deletes the ACL of `subject`, or only its entry for `resource` in the policy of
    /// `policy_type` (Custom when none), dropping the ACL once it has no policy left.
    ///
    /// # Errors
    /// No subject, no such user, no ACL; `System` when the file cannot be written.
    pub fn delete_acl(
        &self,
        subject: Option<&str>,
        policy_type: Option<PolicyType>,
        resource: Option<&Resource>,
    ) -> Result<(), ManageError> {
        let Some(username) = subject.and_then(parse_subject) else {
            return Err(refused("The subject is null."));
        };
        let _guard = self.change.lock();
        if !self.users.read().contains_key(username) {
            return Err(refused("The subject is not exist."));
        }
        let key = user_subject(username);
        let mut acls = self.acls.read().clone();
        let Some(acl) = acls.get_mut(&key).map(Arc::make_mut) else {
            return Err(refused("The acl is not exist."));
        };
        match resource {
            Some(r) => {
                acl.delete_entry(policy_type.unwrap_or(PolicyType::Custom), r);
                if acl.policies.is_empty() {
                    acls.remove(&key);
                }
            }
            None => {
                acls.remove(&key);
            }
        }
        self.save_acls(&acls)?;
        *self.acls.write() = acls;
        Ok(())
    }

    /// The ACL of a user subject (`getAcl`).
    ///
    /// # Errors
    /// The subject's user does not exist.
    pub fn acl_of(&self, username: &str) -> Result<Option<Acl>, ManageError> {
        if !self.users.read().contains_key(username) {
            return Err(refused("The subject is not exist."));
        }
        Ok(self
            .acls
            .read()
            .get(&user_subject(username))
            .map(|a| (**a).clone()))
    }

    /// ACLs whose subject contains `subject_filter`; with a `resource_filter`, only entries
    /// whose resource contains it (unless the subject key itself does, as in Apache), and
    /// policies left empty dropped.
    #[must_use]
    pub fn list_acls(
        &self,
        subject_filter: Option<&str>,
        resource_filter: Option<&str>,
    ) -> Vec<Acl> {
        let nonblank = |f: Option<&str>| f.filter(|f| !f.trim().is_empty()).map(str::to_owned);
        let (sf, rf) = (nonblank(subject_filter), nonblank(resource_filter));
        let mut out = Vec::new();
        for (key, acl) in self.acls.read().iter() {
            if sf.as_ref().is_some_and(|f| !key.contains(f.as_str())) {
                continue;
            }
            let mut acl = (**acl).clone();
            if let Some(f) = rf.as_ref().filter(|f| !key.contains(f.as_str())) {
                for policy in &mut acl.policies {
                    policy
                        .entries
                        .retain(|e| e.resource.key().contains(f.as_str()));
                }
                acl.policies.retain(|p| !p.entries.is_empty());
            }
            if !acl.policies.is_empty() {
                out.push(acl);
            }
        }
        out
    }
}

fn blank_checked(username: Option<&str>) -> Result<&str, ManageError> {
    username
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| refused("username can not be blank"))
}

/// A policy as a request gives it, before validation (Apache's converted `Policy`, whose parts
/// may be null).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyDraft {
    /// Custom when none.
    pub policy_type: Option<PolicyType>,
    /// Entries.
    pub entries: Vec<EntryDraft>,
}

/// An entry as a request gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryDraft {
    /// The resource (none: the key did not parse).
    pub resource: Option<Resource>,
    /// Known action names only.
    pub actions: Vec<Action>,
    /// IPs or CIDRs.
    pub source_ips: Vec<String>,
    /// None: the name did not parse.
    pub decision: Option<crate::model::Decision>,
}

impl PolicyDraft {
    fn validate(self) -> Result<Policy, ManageError> {
        if self.entries.is_empty() {
            return Err(refused("The policy entries is empty."));
        }
        let mut entries = Vec::with_capacity(self.entries.len());
        for e in self.entries {
            let resource = e.resource.ok_or_else(|| refused("The resource is null."))?;
            if e.actions.is_empty() {
                return Err(refused("The actions is empty."));
            }
            if e.actions.contains(&Action::Any) {
                return Err(refused("The actions can not be Any."));
            }
            for ip in &e.source_ips {
                if ip.trim().is_empty() {
                    return Err(refused("The source ip is empty."));
                }
                if !cidr::is_valid_ip_or_cidr(ip) {
                    return Err(refused("The source ip is invalid."));
                }
            }
            let decision = e
                .decision
                .ok_or_else(|| refused("The decision is null or illegal."))?;
            entries.push(crate::model::PolicyEntry {
                resource,
                actions: e.actions,
                source_ips: e.source_ips,
                decision,
            });
        }
        Ok(Policy {
            policy_type: self.policy_type.unwrap_or(PolicyType::Custom),
            entries,
        })
    }
}

impl Directory for MetadataStore {
    fn user(&self, username: &str) -> Option<Arc<User>> {
        self.users.read().get(username).cloned()
    }

    fn acl(&self, subject: &str) -> Option<Arc<Acl>> {
        self.acls.read().get(subject).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Decision;

    fn alice() -> UserChange {
        UserChange {
            username: Some("alice".into()),
            password: Some("alice-secret".into()),
            ..UserChange::default()
        }
    }

    fn draft(resource: &str, decision: Option<Decision>) -> PolicyDraft {
        PolicyDraft {
            policy_type: None,
            entries: vec![EntryDraft {
                resource: Resource::parse(resource),
                actions: vec![Action::Pub],
                source_ips: vec![],
                decision,
            }],
        }
    }

    #[test]
    fn users_persist_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let store = MetadataStore::open(dir.path()).unwrap();
        store.create_user(alice()).unwrap();
        assert_eq!(
            store.create_user(alice()),
            Err(refused("The user is existed"))
        );
        assert_eq!(
            store.create_user(UserChange {
                password: None,
                ..alice()
            }),
            Err(refused("password can not be blank"))
        );
        store
            .update_user(UserChange {
                username: Some("alice".into()),
                user_status: Some(UserStatus::Disable),
                ..UserChange::default()
            })
            .unwrap();
        let again = MetadataStore::open(dir.path()).unwrap();
        let u = again.user("alice").unwrap();
        assert_eq!(
            (u.password.as_str(), u.user_status),
            ("alice-secret", UserStatus::Disable)
        );
        let mode = fs::metadata(dir.path().join(USERS_FILE))
            .unwrap()
            .permissions();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o077, 0);
        assert_eq!(
            store.update_user(UserChange {
                username: Some("bob".into()),
                ..UserChange::default()
            }),
            Err(refused("The user is not exist"))
        );
    }

    #[test]
    fn acls_merge_validate_and_delete() {
        let dir = tempfile::tempdir().unwrap();
        let store = MetadataStore::open(dir.path()).unwrap();
        assert_eq!(
            store.put_acl(
                Some("User:alice"),
                vec![draft("Topic:a", Some(Decision::Allow))]
            ),
            Err(refused("The subject of User:alice is not exist."))
        );
        store.create_user(alice()).unwrap();
        assert_eq!(
            store.put_acl(
                Some("User:alice"),
                vec![draft("Queue:a", Some(Decision::Allow))]
            ),
            Err(refused("The resource is null."))
        );
        assert_eq!(
            store.put_acl(Some("User:alice"), vec![draft("Topic:a", None)]),
            Err(refused("The decision is null or illegal."))
        );
        store
            .put_acl(
                Some("User:alice"),
                vec![draft("Topic:a", Some(Decision::Allow))],
            )
            .unwrap();
        store
            .put_acl(
                Some("User:alice"),
                vec![draft("Topic:b", Some(Decision::Deny))],
            )
            .unwrap();
        let acl = MetadataStore::open(dir.path())
            .unwrap()
            .acl_of("alice")
            .unwrap()
            .unwrap();
        assert_eq!(acl.policies[0].entries.len(), 2);
        assert_eq!(
            store.list_acls(None, Some("Topic:b"))[0].policies[0]
                .entries
                .len(),
            1
        );
        store
            .delete_acl(
                Some("User:alice"),
                None,
                Resource::parse("Topic:a").as_ref(),
            )
            .unwrap();
        assert_eq!(
            store.acl_of("alice").unwrap().unwrap().policies[0]
                .entries
                .len(),
            1
        );
        store.delete_user(Some("alice")).unwrap();
        assert!(store.list_acls(None, None).is_empty());
        assert_eq!(
            store.acl_of("alice"),
            Err(refused("The subject is not exist."))
        );
    }

    #[test]
    fn a_bad_ip_is_refused() {
        let store = MetadataStore::in_memory();
        store.create_user(alice()).unwrap();
        let mut d = draft("Topic:a", Some(Decision::Allow));
        d.entries[0].source_ips = vec!["10.0.0.0/99".into()];
        assert_eq!(
            store.put_acl(Some("User:alice"), vec![d]),
            Err(refused("The source ip is invalid."))
        );
    }
}
