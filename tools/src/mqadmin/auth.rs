//! ACL 2.0's user and ACL commands, with Apache 5.3.3 mqadmin's names, options and output:
//! createUser, updateUser, deleteUser, getUser, listUser, createAcl, updateAcl, deleteAcl,
//! getAcl, listAcl. Changes go to one broker (`-b`) or to every master and slave of a cluster
//! (`-c`: each broker keeps its own users and ACLs); reads ask one broker, or the masters.

use clap::Args;
use remoting::fastjson;
use remoting::protocol::auth::{
    AclInfo, AclRequestHeader, DeleteAclRequestHeader, ListAclsRequestHeader,
    ListUsersRequestHeader, PolicyInfo, UserInfo, UserRequestHeader,
};
use remoting::{RemotingCommand, RequestCode};

use super::{Common, Ctx, Target};
use crate::admin::{all_addrs, master_addrs};
use crate::error::{Result, ToolsError};

fn split_list(text: Option<&str>) -> Option<Vec<String>> {
    text.map(|t| {
        t.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    })
}

/// A create/update user request: the username in the header, the user in the body.
fn user_request(code: RequestCode, info: &UserInfo) -> Result<RemotingCommand> {
    let body = fastjson::to_vec(info, fastjson::KeyStyle::Fastjson)
        .map_err(|e| ToolsError::Usage(e.to_string()))?;
    let header = UserRequestHeader {
        username: info.username.clone(),
    };
    Ok(RemotingCommand::request_with(code, &header).with_body(body))
}

/// Where a change goes: `-b`, or every address of `-c`.
async fn change_targets(ctx: &Ctx<'_>, target: &Target) -> Result<Vec<String>> {
    if let Some(addr) = target.broker() {
        return Ok(vec![addr.to_owned()]);
    }
    let info = ctx.client.cluster_info().await?;
    all_addrs(&info, target.cluster())
}

/// Where a read goes: `-b`, or the masters of `-c`.
async fn read_targets(ctx: &Ctx<'_>, target: &Target) -> Result<Vec<String>> {
    if let Some(addr) = target.broker() {
        return Ok(vec![addr.to_owned()]);
    }
    let info = ctx.client.cluster_info().await?;
    let masters: Vec<String> = master_addrs(&info, target.cluster())?
        .into_values()
        .collect();
    if masters.is_empty() {
        return Err(ToolsError::Usage("there is no broker in cluster.".into()));
    }
    Ok(masters)
}

async fn send_all(
    ctx: &mut Ctx<'_>,
    target: &Target,
    verb: &str,
    what: &str,
    request: &RemotingCommand,
) -> Result<()> {
    for addr in change_targets(ctx, target).await? {
        ctx.client.call(&addr, request.clone()).await?;
        writeln!(ctx.out, "{verb} {what} to {addr} success.")?;
    }
    Ok(())
}

/// Java's `String.format("%-Ns", value)` with `null` for none.
fn col(value: Option<&str>, width: usize) -> String {
    format!("{:<width$}", value.unwrap_or("null"))
}

const USER_WIDTHS: [usize; 3] = [16, 22, 22];

fn user_row(out: &mut dyn std::io::Write, cells: [Option<&str>; 4]) -> std::io::Result<()> {
    writeln!(
        out,
        "{}  {}  {}  {}",
        col(cells[0], USER_WIDTHS[0]),
        col(cells[1], USER_WIDTHS[1]),
        col(cells[2], USER_WIDTHS[2]),
        col(cells[3], 22)
    )
}

fn print_users(out: &mut dyn std::io::Write, users: &[UserInfo]) -> std::io::Result<()> {
    user_row(
        out,
        [
            Some("#UserName"),
            Some("#Password"),
            Some("#UserType"),
            Some("#UserStatus"),
        ],
    )?;
    for u in users {
        user_row(
            out,
            [
                u.username.as_deref(),
                u.password.as_deref(),
                u.user_type.as_deref(),
                u.user_status.as_deref(),
            ],
        )?;
    }
    Ok(())
}

/// Java's `List.toString`.
fn java_list(items: Option<&Vec<String>>) -> String {
    items.map_or_else(|| "null".to_owned(), |v| format!("[{}]", v.join(", ")))
}

fn acl_row(out: &mut dyn std::io::Write, cells: [&str; 6]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<16}  {:<10}  {:<22}  {:<20}  {:<24}  {:<10}",
        cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]
    )
}

fn print_acl_rows(out: &mut dyn std::io::Write, acl: &AclInfo) -> std::io::Result<()> {
    let subject = acl.subject.as_deref().unwrap_or("null");
    let policies: &[PolicyInfo] = acl.policies.as_deref().unwrap_or_default();
    if policies.is_empty() {
        acl_row(out, [subject, "", "", "", "", ""])?;
    }
    for p in policies {
        for e in p.entries.iter().flatten() {
            acl_row(
                out,
                [
                    subject,
                    p.policy_type.as_deref().unwrap_or("null"),
                    e.resource.as_deref().unwrap_or("null"),
                    &java_list(e.actions.as_ref()),
                    &java_list(e.source_ips.as_ref()),
                    e.decision.as_deref().unwrap_or("null"),
                ],
            )?;
        }
    }
    Ok(())
}

const ACL_HEADER: [&str; 6] = [
    "#Subject",
    "#PolicyType",
    "#Resource",
    "#Actions",
    "#SourceIp",
    "#Decision",
];

/// `createUser -b|-c -u -p [-t]`.
#[derive(Debug, Args)]
pub struct CreateUser {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// The username of user to create.
    #[arg(short = 'u', long = "username")]
    pub username: String,
    /// The password of user to create.
    #[arg(short = 'p', long = "password")]
    pub password: String,
    /// The userType of user to create (Super or Normal).
    #[arg(short = 't', long = "userType")]
    pub user_type: Option<String>,
}

impl CreateUser {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let info = UserInfo {
            username: Some(self.username.trim().to_owned()),
            password: Some(self.password.trim().to_owned()),
            user_type: self.user_type.as_deref().map(|t| t.trim().to_owned()),
            user_status: None,
        };
        let request = user_request(RequestCode::AuthCreateUser, &info)?;
        send_all(ctx, &self.target, "create", "user", &request).await
    }
}

/// `updateUser -b|-c -u [-p] [-t] [-s]`.
#[derive(Debug, Args)]
pub struct UpdateUser {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// The username of user to update.
    #[arg(short = 'u', long = "username")]
    pub username: String,
    /// The password of user to update.
    #[arg(short = 'p', long = "password")]
    pub password: Option<String>,
    /// The userType of user to update.
    #[arg(short = 't', long = "userType")]
    pub user_type: Option<String>,
    /// The userStatus of user to update (enable or disable).
    #[arg(short = 's', long = "userStatus")]
    pub user_status: Option<String>,
}

impl UpdateUser {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let trim = |v: &Option<String>| v.as_deref().map(|s| s.trim().to_owned());
        let info = UserInfo {
            username: Some(self.username.trim().to_owned()),
            password: trim(&self.password),
            user_type: trim(&self.user_type),
            user_status: trim(&self.user_status),
        };
        let request = user_request(RequestCode::AuthUpdateUser, &info)?;
        send_all(ctx, &self.target, "update", "user", &request).await
    }
}

/// `deleteUser -b|-c -u`.
#[derive(Debug, Args)]
pub struct DeleteUser {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// The username of user to delete.
    #[arg(short = 'u', long = "username")]
    pub username: String,
}

impl DeleteUser {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let header = UserRequestHeader {
            username: Some(self.username.trim().to_owned()),
        };
        let request = RemotingCommand::request_with(RequestCode::AuthDeleteUser, &header);
        send_all(ctx, &self.target, "delete", "user", &request).await
    }
}

/// `getUser -b|-c -u`.
#[derive(Debug, Args)]
pub struct GetUser {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// The username of user to get.
    #[arg(short = 'u', long = "username")]
    pub username: Option<String>,
}

impl GetUser {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let header = UserRequestHeader {
            username: self.username.as_deref().map(|u| u.trim().to_owned()),
        };
        for addr in read_targets(ctx, &self.target).await? {
            let request = RemotingCommand::request_with(RequestCode::AuthGetUser, &header);
            let response = ctx.client.call(&addr, request).await?;
            let body = response.body.to_bytes();
            if body.is_empty() {
                continue;
            }
            let user: UserInfo =
                fastjson::from_slice(&body).map_err(|e| ToolsError::Usage(e.to_string()))?;
            print_users(ctx.out, std::slice::from_ref(&user))?;
            break;
        }
        Ok(())
    }
}

/// `listUser -b|-c [-f]`.
#[derive(Debug, Args)]
pub struct ListUser {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// The filter to list users.
    #[arg(short = 'f', long = "filter")]
    pub filter: Option<String>,
}

impl ListUser {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let header = ListUsersRequestHeader {
            filter: self.filter.as_deref().map(|f| f.trim().to_owned()),
        };
        let single = self.target.broker().is_some();
        for addr in read_targets(ctx, &self.target).await? {
            let request = RemotingCommand::request_with(RequestCode::AuthListUser, &header);
            let response = ctx.client.call(&addr, request).await?;
            let body = response.body.to_bytes();
            if body.is_empty() {
                continue;
            }
            let users: Vec<UserInfo> =
                serde_json::from_slice(&body).map_err(|e| ToolsError::Usage(e.to_string()))?;
            if users.is_empty() {
                continue;
            }
            print_users(ctx.out, &users)?;
            if !single {
                writeln!(ctx.out, "get user from {addr} success.")?;
            }
            break;
        }
        Ok(())
    }
}

/// `createAcl` / `updateAcl -b|-c -s -r -a [-i] -d`.
#[derive(Debug, Args)]
pub struct PutAcl {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// The subject of the acl (User:name).
    #[arg(short = 's', long = "subject")]
    pub subject: String,
    /// The resources of the acl, ','-separated (Topic:name, Group:prefix*, *).
    #[arg(short = 'r', long = "resources")]
    pub resources: String,
    /// The actions of the acl, ','-separated (Pub, Sub, Create, Update, Delete, Get, List, All).
    #[arg(short = 'a', long = "actions")]
    pub actions: String,
    /// The sourceIps of the acl, ','-separated IPs or CIDRs.
    #[arg(short = 'i', long = "sourceIp")]
    pub source_ips: Option<String>,
    /// The decision of the acl (Allow or Deny).
    #[arg(short = 'd', long = "decision")]
    pub decision: String,
}

impl PutAcl {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>, create: bool) -> Result<()> {
        let subject = self.subject.trim().to_owned();
        let actions = split_list(Some(&self.actions));
        let source_ips = split_list(self.source_ips.as_deref());
        let decision = Some(self.decision.trim().to_owned());
        let entries = split_list(Some(&self.resources))
            .unwrap_or_default()
            .into_iter()
            .map(|r| remoting::protocol::auth::PolicyEntryInfo {
                resource: Some(r),
                actions: actions.clone(),
                source_ips: source_ips.clone(),
                decision: decision.clone(),
            })
            .collect();
        let info = AclInfo {
            subject: Some(subject.clone()),
            policies: Some(vec![PolicyInfo {
                policy_type: None,
                entries: Some(entries),
            }]),
        };
        let header = AclRequestHeader {
            subject: Some(subject),
        };
        let code = if create {
            RequestCode::AuthCreateAcl
        } else {
            RequestCode::AuthUpdateAcl
        };
        let body = fastjson::to_vec(&info, fastjson::KeyStyle::Fastjson)
            .map_err(|e| ToolsError::Usage(e.to_string()))?;
        let request = RemotingCommand::request_with(code, &header).with_body(body);
        send_all(
            ctx,
            &self.target,
            if create { "create" } else { "update" },
            "acl",
            &request,
        )
        .await
    }
}

/// `deleteAcl -b|-c -s [-r]`.
#[derive(Debug, Args)]
pub struct DeleteAcl {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// The subject of the acl to delete.
    #[arg(short = 's', long = "subject")]
    pub subject: String,
    /// The resource of the acl to delete (none: the whole acl).
    #[arg(short = 'r', long = "resources")]
    pub resource: Option<String>,
}

impl DeleteAcl {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let header = DeleteAclRequestHeader {
            subject: Some(self.subject.trim().to_owned()),
            policy_type: None,
            resource: self.resource.as_deref().map(|r| r.trim().to_owned()),
        };
        let request = RemotingCommand::request_with(RequestCode::AuthDeleteAcl, &header);
        // Apache prints "delete acl to".
        send_all(ctx, &self.target, "delete", "acl", &request).await
    }
}

/// `getAcl -b|-c -s`.
#[derive(Debug, Args)]
pub struct GetAcl {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// The subject of the acl to get.
    #[arg(short = 's', long = "subject")]
    pub subject: String,
}

impl GetAcl {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let header = AclRequestHeader {
            subject: Some(self.subject.trim().to_owned()),
        };
        for addr in read_targets(ctx, &self.target).await? {
            let request = RemotingCommand::request_with(RequestCode::AuthGetAcl, &header);
            let response = ctx.client.call(&addr, request).await?;
            let body = response.body.to_bytes();
            if body.is_empty() {
                continue;
            }
            let acl: AclInfo =
                fastjson::from_slice(&body).map_err(|e| ToolsError::Usage(e.to_string()))?;
            acl_row(ctx.out, ACL_HEADER)?;
            print_acl_rows(ctx.out, &acl)?;
            break;
        }
        Ok(())
    }
}

/// `listAcl -b|-c [-s] [-r]`.
#[derive(Debug, Args)]
pub struct ListAcl {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Broker or cluster.
    #[command(flatten)]
    pub target: Target,
    /// The subject of acl to filter.
    #[arg(short = 's', long = "subject")]
    pub subject: Option<String>,
    /// The resource of acl to filter.
    #[arg(short = 'r', long = "resource")]
    pub resource: Option<String>,
}

impl ListAcl {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let header = ListAclsRequestHeader {
            subject_filter: self.subject.as_deref().map(|s| s.trim().to_owned()),
            resource_filter: self.resource.as_deref().map(|s| s.trim().to_owned()),
        };
        for addr in read_targets(ctx, &self.target).await? {
            let request = RemotingCommand::request_with(RequestCode::AuthListAcl, &header);
            let response = ctx.client.call(&addr, request).await?;
            let body = response.body.to_bytes();
            if body.is_empty() {
                continue;
            }
            let acls: Vec<AclInfo> =
                serde_json::from_slice(&body).map_err(|e| ToolsError::Usage(e.to_string()))?;
            if acls.is_empty() {
                continue;
            }
            acl_row(ctx.out, ACL_HEADER)?;
            for acl in &acls {
                print_acl_rows(ctx.out, acl)?;
            }
        }
        Ok(())
    }
}
