//! RocketMQ 4.9's plain ACL (`aclEnable=true`), as Apache 4.9.8's `PlainAccessValidator` and
//! `PlainPermissionManager` enforce it: accounts from `$ROCKETMQ_HOME/conf/plain_acl.yml` and
//! every `*.yml` / `*.yaml` under `$ROCKETMQ_HOME/conf/acl/` (an access key counts in the first
//! file that names it), reloaded when a file changes.
//!
//! ```yaml
//! globalWhiteRemoteAddresses: [10.10.103.*]     # from here: no checks at all
//! accounts:
//!   - accessKey: RocketMQ                        # longer than 6
//!     secretKey: 12345678                        # longer than 6
//!     whiteRemoteAddress: 192.168.0.*            # from here: no signature, no permissions
//!     admin: false                               # admin codes (create/delete topic, group, config)
//!     defaultTopicPerm: DENY                     # PUB, SUB, PUB|SUB, DENY
//!     defaultGroupPerm: SUB
//!     topicPerms: [topicA=DENY, topicB=PUB|SUB]
//!     groupPerms: [groupA=DENY, groupB=SUB]
//! ```
//!
//! A refusal is SYSTEM_ERROR whose remark is the `AclException` as Apache's remoting layer
//! prints it (`exceptionSimpleDesc`: the exception, then where it was thrown).

pub mod address;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use parking_lot::{Mutex, RwLock};
use remoting::{RemotingCommand, RequestCode};
use tracing::{info, warn};
use yaml_rust2::{Yaml, YamlLoader};

use crate::config::AuthConfig;
use crate::error::{AuthError, Result};
use crate::model::{
    Action, Decision, PolicyType, RETRY_GROUP_TOPIC_PREFIX, Resource, ResourcePattern, ResourceType,
};
use crate::signature::{self, ACCESS_KEY};
use crate::store::{EntryDraft, MetadataStore, PolicyDraft, UserChange};
use address::AddressRule;

/// `Permission.DENY`.
pub const DENY: u8 = 1;
/// `Permission.ANY`.
pub const ANY: u8 = 1 << 1;
/// `Permission.PUB`.
pub const PUB: u8 = 1 << 2;
/// `Permission.SUB`.
pub const SUB: u8 = 1 << 3;

/// `RMQ_SYS_TRACE_TOPIC`: sending traces needs no permission.
const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";
/// Files larger than this are refused (a plain ACL file is a few KB).
const MAX_FILE_LEN: u64 = 4 * 1024 * 1024;
/// Deeper YAML nesting is refused (an ACL file nests three levels).
const MAX_NESTING: usize = 32;
/// How often the files are looked at for a change.
const WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// The codes only an admin account may send (`Permission.ADMIN_CODE`).
pub const ADMIN_CODES: &[RequestCode] = &[
    RequestCode::UpdateAndCreateTopic,
    RequestCode::UpdateBrokerConfig,
    RequestCode::DeleteTopicInBroker,
    RequestCode::UpdateAndCreateSubscriptiongroup,
    RequestCode::DeleteSubscriptiongroup,
];

/// `Permission.parsePermFromString`: anything unknown (or nothing) is DENY.
#[must_use]
pub fn parse_perm(text: Option<&str>) -> u8 {
    match text.map(str::trim) {
        Some("PUB") => PUB,
        Some("SUB") => SUB,
        Some("PUB|SUB" | "SUB|PUB") => PUB | SUB,
        _ => DENY,
    }
}

/// `Permission.checkPermission`.
#[must_use]
pub fn check_permission(needed: u8, owned: u8) -> bool {
    if owned & DENY != 0 {
        return false;
    }
    if needed & ANY != 0 {
        return owned & (PUB | SUB) != 0;
    }
    needed & owned != 0
}

/// One account of a file, as written (`PlainAccessConfig`).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AccountConfig {
    /// Access key.
    pub access_key: Option<String>,
    /// Secret key.
    pub secret_key: Option<String>,
    /// White address pattern.
    pub white_remote_address: Option<String>,
    /// Admin.
    pub admin: bool,
    /// Default topic permission.
    pub default_topic_perm: Option<String>,
    /// Default group permission.
    pub default_group_perm: Option<String>,
    /// `topic=PERM` lines.
    pub topic_perms: Vec<String>,
    /// `group=PERM` lines.
    pub group_perms: Vec<String>,
}

impl std::fmt::Debug for AccountConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountConfig")
            .field("access_key", &self.access_key)
            .field("admin", &self.admin)
            .finish_non_exhaustive()
    }
}

/// One plain ACL file, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlainFile {
    /// `globalWhiteRemoteAddresses`.
    pub global_white_remote_addresses: Vec<String>,
    /// `accounts`.
    pub accounts: Vec<AccountConfig>,
}

/// fastjson's view of a YAML scalar as a Java `String`.
fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn list(y: &Yaml, key: &str) -> std::result::Result<Vec<String>, String> {
    match y {
        Yaml::Null | Yaml::BadValue => Ok(Vec::new()),
        Yaml::Array(items) => Ok(items.iter().filter_map(scalar).collect()),
        _ => Err(format!("{key} is not a list")),
    }
}

fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Parses one file's text. An empty file is an empty [`PlainFile`].
///
/// # Errors
/// Not YAML, or not the shape of a plain ACL file.
pub fn parse_file(text: &str) -> std::result::Result<PlainFile, String> {
    if nesting_depth(text) > MAX_NESTING {
        return Err("nested too deeply".into());
    }
    let docs = YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
    let Some(doc) = docs.into_iter().next() else {
        return Ok(PlainFile::default());
    };
    let map = match doc {
        Yaml::Null => return Ok(PlainFile::default()),
        Yaml::Hash(map) => map,
        _ => return Err("not a map".into()),
    };
    let get = |k: &str| map.get(&Yaml::String(k.to_owned()));
    let mut file = PlainFile {
        global_white_remote_addresses: get("globalWhiteRemoteAddresses")
            .map_or(Ok(Vec::new()), |y| list(y, "globalWhiteRemoteAddresses"))?,
        accounts: Vec::new(),
    };
    match get("accounts") {
        None | Some(Yaml::Null) => {}
        Some(Yaml::Array(accounts)) => {
            for a in accounts {
                let Yaml::Hash(a) = a else {
                    return Err("an account is not a map".into());
                };
                let field = |k: &str| a.get(&Yaml::String(k.to_owned()));
                let text = |k: &str| field(k).and_then(scalar);
                let admin = match field("admin") {
                    None | Some(Yaml::Null) => false,
                    Some(Yaml::Boolean(b)) => *b,
                    Some(other) => scalar(other).is_some_and(|s| s.eq_ignore_ascii_case("true")),
                };
                file.accounts.push(AccountConfig {
                    access_key: text("accessKey"),
                    secret_key: text("secretKey"),
                    white_remote_address: text("whiteRemoteAddress"),
                    admin,
                    default_topic_perm: text("defaultTopicPerm"),
                    default_group_perm: text("defaultGroupPerm"),
                    topic_perms: field("topicPerms")
                        .map_or(Ok(Vec::new()), |y| list(y, "topicPerms"))?,
                    group_perms: field("groupPerms")
                        .map_or(Ok(Vec::new()), |y| list(y, "groupPerms"))?,
                });
            }
        }
        Some(_) => return Err("accounts is not a list".into()),
    }
    Ok(file)
}

/// An account, ready to check requests against (`PlainAccessResource`).
#[derive(Clone)]
pub struct Account {
    /// Access key.
    pub access_key: String,
    secret_key: String,
    white: AddressRule,
    /// Admin.
    pub admin: bool,
    default_topic_perm: u8,
    default_group_perm: u8,
    /// Resource (topic, or `%RETRY%group`) → permission; `None` when the account lists none.
    perms: Option<HashMap<String, u8>>,
    /// As written, for the migration to ACL 2.0.
    config: AccountConfig,
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("access_key", &self.access_key)
            .field("admin", &self.admin)
            .finish_non_exhaustive()
    }
}

fn retry_topic(group: &str) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}")
}

fn resource_perms(
    lines: &[String],
    topic: bool,
    perms: &mut HashMap<String, u8>,
) -> std::result::Result<(), String> {
    for line in lines {
        let items: Vec<&str> = line.split('=').filter(|p| !p.is_empty()).collect();
        if items.len() != 2 {
            return Err(format!(
                "Parse resource permission failed for {}:{line}",
                if topic { "topic" } else { "group" }
            ));
        }
        let name = items[0].trim();
        let key = if topic {
            name.to_owned()
        } else {
            retry_topic(name)
        };
        perms.insert(key, parse_perm(Some(items[1])));
    }
    Ok(())
}

impl Account {
    /// `buildPlainAccessResource`.
    ///
    /// # Errors
    /// Apache's refusals (keys too short, a bad permission line, a bad address pattern), with
    /// the secret key left out.
    pub fn build(config: &AccountConfig) -> std::result::Result<Account, String> {
        let (Some(ak), Some(sk)) = (&config.access_key, &config.secret_key) else {
            return Err(key_error(config.access_key.as_deref()));
        };
        if ak.chars().count() <= 6 || sk.chars().count() <= 6 {
            return Err(key_error(Some(ak)));
        }
        let mut perms = HashMap::new();
        resource_perms(&config.group_perms, false, &mut perms)?;
        resource_perms(&config.topic_perms, true, &mut perms)?;
        let listed = !config.group_perms.is_empty() || !config.topic_perms.is_empty();
        Ok(Account {
            access_key: ak.clone(),
            secret_key: sk.clone(),
            white: AddressRule::parse(config.white_remote_address.as_deref().unwrap_or(""))?,
            admin: config.admin,
            default_topic_perm: parse_perm(config.default_topic_perm.as_deref()),
            default_group_perm: parse_perm(config.default_group_perm.as_deref()),
            perms: listed.then_some(perms),
            config: config.clone(),
        })
    }
}

fn key_error(ak: Option<&str>) -> String {
    format!(
        "The accessKey={} and secretKey=*** cannot be null and length should longer than 6",
        ak.unwrap_or("null")
    )
}

/// Every account and white address of the loaded files.
#[derive(Debug, Clone, Default)]
pub struct PlainConfig {
    global: Vec<AddressRule>,
    accounts: HashMap<String, Account>,
    /// Account order as loaded (file order, then as written).
    order: Vec<String>,
}

impl PlainConfig {
    /// Builds the configuration from parsed files, in order: an access key counts in the
    /// first file that names it.
    ///
    /// # Errors
    /// The first invalid account or address, with its file.
    pub fn build(files: &[(PathBuf, PlainFile)]) -> Result<PlainConfig> {
        let mut out = PlainConfig::default();
        for (path, file) in files {
            let bad = |reason: String| AuthError::Plain {
                path: path.clone(),
                reason,
            };
            for addr in &file.global_white_remote_addresses {
                out.global.push(AddressRule::parse(addr).map_err(bad)?);
            }
            for a in &file.accounts {
                let account = Account::build(a).map_err(bad)?;
                if out.accounts.contains_key(&account.access_key) {
                    warn!(file = %path.display(), access_key = %account.access_key, "access key already defined in another ACL file; ignored");
                    continue;
                }
                out.order.push(account.access_key.clone());
                out.accounts.insert(account.access_key.clone(), account);
            }
        }
        Ok(out)
    }

    /// The accounts, in load order.
    pub fn accounts(&self) -> impl Iterator<Item = &Account> {
        self.order.iter().filter_map(|k| self.accounts.get(k))
    }
}

/// Where a refusal was thrown (for the remark's stack frame, as in 4.9.8's sources).
#[derive(Debug, Clone, Copy)]
enum Frame {
    Validate(u32),
    CheckPerm(u32),
    Parse,
}

fn remark(message: &str, frame: Frame) -> String {
    let at = match frame {
        Frame::Validate(line) => {
            format!("org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:{line})")
        }
        Frame::CheckPerm(line) => {
            format!("org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:{line})")
        }
        Frame::Parse => {
            "org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)".to_owned()
        }
    };
    format!("org.apache.rocketmq.acl.common.AclException: {message}, {at}")
}

/// Java's `String.hashCode`.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The resources a request needs, in the order Java's `HashMap` iterates them (so the first
/// failing one is the one Apache names).
#[derive(Debug, Default)]
struct Needed(Vec<(String, u8)>);

impl Needed {
    fn add(&mut self, resource: Option<&str>, perm: u8) {
        let Some(r) = resource else { return };
        match self.0.iter_mut().find(|(k, _)| k == r) {
            Some(e) => e.1 = perm,
            None => self.0.push((r.to_owned(), perm)),
        }
    }

    fn add_group(&mut self, group: Option<&str>, perm: u8) {
        if let Some(g) = group {
            self.add(Some(&retry_topic(g)), perm);
        }
    }

    /// Java HashMap order: by bucket of the spread hash in a table of 16, doubling past a
    /// load of 0.75, insertion order within a bucket.
    fn in_java_order(self) -> Vec<(String, u8)> {
        let mut table = 16usize;
        while self.0.len() > table * 3 / 4 {
            table *= 2;
        }
        let bucket = |k: &str| {
            #[allow(clippy::cast_sign_loss, reason = "Java's hash bits, reinterpreted")]
            let h = java_hash(k) as u32;
            ((h ^ (h >> 16)) as usize) & (table - 1)
        };
        let mut v: Vec<(usize, usize, (String, u8))> = self
            .0
            .into_iter()
            .enumerate()
            .map(|(i, e)| (bucket(&e.0), i, e))
            .collect();
        v.sort_by_key(|(b, i, _)| (*b, *i));
        v.into_iter().map(|(_, _, e)| e).collect()
    }
}

/// `PlainAccessValidator.parse`: the resources of the request.
fn needed(request: &RemotingCommand) -> std::result::Result<Needed, String> {
    let ext = request.ext_fields();
    let get = |k: &str| ext.get(k);
    let required = |k: &'static str| {
        ext.get(k)
            .ok_or_else(|| format!("the custom field <{k}> is null"))
    };
    let mut n = Needed::default();
    let Ok(code) = RequestCode::try_from(request.code()) else {
        return Ok(n);
    };
    let is_retry = |t: Option<&str>| t.is_some_and(|t| t.starts_with(RETRY_GROUP_TOPIC_PREFIX));
    match code {
        RequestCode::SendMessage => {
            let topic = get("topic");
            if is_retry(topic) {
                n.add_group(get("group"), SUB);
            } else {
                n.add(topic, PUB);
            }
        }
        RequestCode::SendMessageV2 => {
            let topic = get("b");
            if is_retry(topic) {
                n.add_group(get("a"), SUB);
            } else {
                n.add(topic, PUB);
            }
        }
        RequestCode::ConsumerSendMsgBack => n.add_group(get("group"), SUB),
        RequestCode::PullMessage => {
            n.add(get("topic"), SUB);
            n.add_group(get("consumerGroup"), SUB);
        }
        RequestCode::QueryMessage => n.add(get("topic"), SUB),
        RequestCode::HeartBeat => {
            let hb: remoting::protocol::heartbeat::HeartbeatData =
                remoting::fastjson::from_slice(&request.body.to_bytes())
                    .map_err(|e| e.to_string())?;
            for c in &hb.consumer_data_set {
                n.add_group(Some(&c.group_name), SUB);
                for s in &c.subscription_data_set {
                    n.add(Some(&s.topic), SUB);
                }
            }
        }
        RequestCode::UnregisterClient => {
            required("clientID")?;
            n.add_group(get("consumerGroup"), SUB);
        }
        RequestCode::GetConsumerListByGroup => n.add_group(Some(required("consumerGroup")?), SUB),
        RequestCode::UpdateConsumerOffset => {
            let group = required("consumerGroup")?;
            let topic = required("topic")?;
            required("queueId")?;
            required("commitOffset")?;
            n.add_group(Some(group), SUB);
            n.add(Some(topic), SUB);
        }
        _ => {}
    }
    Ok(n)
}

impl PlainConfig {
    /// `PlainPermissionManager.validate` of `request` from `source_ip`.
    ///
    /// # Errors
    /// The remark of the refusal.
    pub fn validate(
        &self,
        request: &RemotingCommand,
        source_ip: &str,
    ) -> std::result::Result<(), String> {
        // Resources are read first (a bad request fails even from a white address).
        let needed = if request.ext_fields().is_empty() {
            Needed::default()
        } else {
            needed(request).map_err(|m| remark(&m, Frame::Parse))?
        };
        if self.global.iter().any(|g| g.matches(source_ip)) {
            return Ok(());
        }
        let Some(ak) = request.ext(ACCESS_KEY) else {
            return Err(remark("No accessKey is configured", Frame::Validate(664)));
        };
        let Some(owned) = self.accounts.get(ak) else {
            return Err(remark(
                &format!("No acl config for {ak}"),
                Frame::Validate(668),
            ));
        };
        if owned.white.matches(source_ip) {
            return Ok(());
        }
        if !signature::verify_plain(request, &owned.secret_key) {
            return Err(remark(
                &format!("Check signature failed for accessKey={ak}"),
                Frame::Validate(684),
            ));
        }
        if needed.0.iter().any(|(r, p)| r == TRACE_TOPIC && *p == PUB) {
            return Ok(());
        }
        check_perm(request.code(), needed, owned)
    }
}

fn check_perm(code: i32, needed: Needed, owned: &Account) -> std::result::Result<(), String> {
    if ADMIN_CODES.iter().any(|c| c.code() == code) && !owned.admin {
        return Err(remark(
            &format!(
                "Need admin permission for request code={code}, but accessKey={} is not",
                owned.access_key
            ),
            Frame::CheckPerm(581),
        ));
    }
    if needed.0.is_empty() {
        return Ok(());
    }
    if owned.perms.is_none() && owned.admin {
        return Ok(());
    }
    for (resource, perm) in needed.in_java_order() {
        let group = resource.starts_with(RETRY_GROUP_TOPIC_PREFIX);
        let name = if group {
            format!("group:{}", &resource[RETRY_GROUP_TOPIC_PREFIX.len()..])
        } else {
            format!("topic:{resource}")
        };
        match owned.perms.as_ref().and_then(|m| m.get(&resource)) {
            None => {
                let default = if group {
                    owned.default_group_perm
                } else {
                    owned.default_topic_perm
                };
                if !check_permission(perm, default) {
                    return Err(remark(
                        &format!("No default permission for {name}"),
                        Frame::CheckPerm(606),
                    ));
                }
            }
            Some(p) => {
                if !check_permission(perm, *p) {
                    return Err(remark(
                        &format!("No default permission for {name}"),
                        Frame::CheckPerm(611),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// What the files looked like when last loaded: path, modification time, length.
type Stamp = Vec<(PathBuf, Option<SystemTime>, u64)>;

/// The plain ACL of a server: the files, the configuration built from them, hot reload.
#[derive(Debug)]
pub struct PlainAcl {
    default_file: PathBuf,
    acl_dir: PathBuf,
    current: RwLock<Arc<PlainConfig>>,
    stamp: Mutex<Stamp>,
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "yml" || e == "yaml")
            && p.file_name().is_some_and(|n| n != "tools.yml")
        {
            out.push(p);
        }
    }
}

impl PlainAcl {
    /// Loads the files under the home of `config`.
    ///
    /// # Errors
    /// No home, or a file that cannot be read or is not valid.
    pub fn load_home(config: &AuthConfig) -> Result<PlainAcl> {
        let home = config.home().ok_or_else(|| AuthError::Config {
            key: "aclEnable",
            reason: "needs rocketmqHome or ROCKETMQ_HOME (where conf/plain_acl.yml is)".into(),
        })?;
        let file = config
            .acl_plain_file
            .as_deref()
            .unwrap_or("conf/plain_acl.yml");
        PlainAcl::load(home.join(file), home.join("conf").join("acl"))
    }

    /// Loads `default_file` and the files under `acl_dir`.
    ///
    /// # Errors
    /// A file that cannot be read or is not valid.
    pub fn load(default_file: PathBuf, acl_dir: PathBuf) -> Result<PlainAcl> {
        let acl = PlainAcl {
            default_file,
            acl_dir,
            current: RwLock::new(Arc::new(PlainConfig::default())),
            stamp: Mutex::new(Vec::new()),
        };
        let (config, stamp) = acl.read_all()?;
        info!(accounts = config.order.len(), file = %acl.default_file.display(), "plain ACL loaded");
        *acl.current.write() = Arc::new(config);
        *acl.stamp.lock() = stamp;
        Ok(acl)
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        yaml_files(&self.acl_dir, &mut files);
        if self.default_file.exists() && !files.contains(&self.default_file) {
            files.push(self.default_file.clone());
        }
        files
    }

    fn stamp_of(files: &[PathBuf]) -> Stamp {
        files
            .iter()
            .map(|p| {
                let meta = fs::metadata(p).ok();
                (
                    p.clone(),
                    meta.as_ref().and_then(|m| m.modified().ok()),
                    meta.map_or(0, |m| m.len()),
                )
            })
            .collect()
    }

    fn read_all(&self) -> Result<(PlainConfig, Stamp)> {
        let files = self.files();
        let stamp = Self::stamp_of(&files);
        let mut parsed = Vec::with_capacity(files.len());
        for path in files {
            let bad = |reason: String| AuthError::Plain {
                path: path.clone(),
                reason,
            };
            let len = fs::metadata(&path).map_err(|e| bad(e.to_string()))?.len();
            if len > MAX_FILE_LEN {
                return Err(bad(format!("larger than {MAX_FILE_LEN} bytes")));
            }
            let text = fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
            let file = parse_file(&text).map_err(bad)?;
            parsed.push((path, file));
        }
        Ok((PlainConfig::build(&parsed)?, stamp))
    }

    /// Reloads when a file was added, removed or changed; a file that no longer loads leaves
    /// the previous configuration in force (and says why). Returns whether it reloaded.
    pub fn reload_if_changed(&self) -> bool {
        let now = Self::stamp_of(&self.files());
        if *self.stamp.lock() == now {
            return false;
        }
        match self.read_all() {
            Ok((config, stamp)) => {
                info!(accounts = config.order.len(), "plain ACL reloaded");
                *self.current.write() = Arc::new(config);
                *self.stamp.lock() = stamp;
                true
            }
            Err(e) => {
                warn!(error = %e, "plain ACL not reloaded; the previous one stays");
                *self.stamp.lock() = now;
                false
            }
        }
    }

    /// Watches the files from a thread of its own until `self` is dropped.
    pub fn watch(self: &Arc<Self>) {
        let weak: Weak<PlainAcl> = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("plain-acl-watch".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(WATCH_INTERVAL);
                    let Some(acl) = weak.upgrade() else { return };
                    acl.reload_if_changed();
                }
            });
        if let Err(e) = spawned {
            warn!(error = %e, "cannot start the plain ACL watcher; files are not reloaded");
        }
    }

    /// The configuration in force.
    #[must_use]
    pub fn snapshot(&self) -> Arc<PlainConfig> {
        Arc::clone(&self.current.read())
    }

    /// Checks `request` from `source_ip` against the configuration in force.
    ///
    /// # Errors
    /// The refusal's remark.
    pub fn validate(
        &self,
        request: &RemotingCommand,
        source_ip: &str,
    ) -> std::result::Result<(), String> {
        self.snapshot().validate(request, source_ip)
    }
}

fn parse_actions(perm: &str) -> Vec<Action> {
    match perm.trim() {
        "PUB" => vec![Action::Pub],
        "SUB" => vec![Action::Sub],
        "PUB|SUB" | "SUB|PUB" => vec![Action::Pub, Action::Sub],
        _ => vec![Action::All],
    }
}

fn parse_decision(perm: &str) -> Decision {
    if perm.trim().is_empty() || perm == "DENY" {
        Decision::Deny
    } else {
        Decision::Allow
    }
}

fn entry(resource: Resource, perm: &str) -> EntryDraft {
    EntryDraft {
        resource: Some(resource),
        actions: parse_actions(perm),
        source_ips: Vec::new(),
        decision: Some(parse_decision(perm)),
    }
}

/// `migrateAuthFromV1Enabled` (Apache's `AuthMigrator`): each account that is not a user yet
/// becomes one (admin: super), its topic/group permissions Custom entries and its default
/// permissions Default entries on `Topic:*` / `Group:*`. White addresses are not carried over.
pub fn migrate(config: &PlainConfig, store: &MetadataStore) {
    for account in config.accounts() {
        let a = &account.config;
        if crate::evaluate::Directory::user(store, &account.access_key).is_some() {
            continue;
        }
        let created = store.create_user(UserChange {
            username: Some(account.access_key.clone()),
            password: Some(account.secret_key.clone()),
            user_type: Some(if a.admin {
                crate::model::UserType::Super
            } else {
                crate::model::UserType::Normal
            }),
            user_status: None,
        });
        if let Err(e) = created {
            warn!(access_key = %account.access_key, error = %e, "plain ACL account not migrated");
            continue;
        }
        let mut custom = Vec::new();
        for (lines, group) in [(&a.topic_perms, false), (&a.group_perms, true)] {
            for line in lines {
                let parts: Vec<&str> = line.split('=').filter(|p| !p.is_empty()).collect();
                let [name, perm] = parts[..] else { continue };
                let resource = if group {
                    Resource::group(Some(name.trim()))
                } else {
                    Resource::topic(Some(name.trim()))
                };
                custom.push(entry(resource, perm.trim()));
            }
        }
        let mut default = Vec::new();
        for (perm, kind) in [
            (&a.default_topic_perm, ResourceType::Topic),
            (&a.default_group_perm, ResourceType::Group),
        ] {
            if let Some(p) = perm.as_deref().filter(|p| !p.trim().is_empty()) {
                let any = Resource {
                    kind,
                    name: None,
                    pattern: ResourcePattern::Any,
                };
                default.push(entry(any, p.trim()));
            }
        }
        let mut policies = Vec::new();
        if !custom.is_empty() {
            policies.push(PolicyDraft {
                policy_type: Some(PolicyType::Custom),
                entries: custom,
            });
        }
        if !default.is_empty() {
            policies.push(PolicyDraft {
                policy_type: Some(PolicyType::Default),
                entries: default,
            });
        }
        if policies.is_empty() {
            continue;
        }
        let subject = crate::model::user_subject(&account.access_key);
        match store.put_acl(Some(&subject), policies) {
            Ok(()) => info!(access_key = %account.access_key, "plain ACL account migrated"),
            Err(e) => {
                warn!(access_key = %account.access_key, error = %e, "plain ACL of account not migrated")
            }
        }
    }
}

#[cfg(test)]
mod tests;
