//! `mqadmin`: RocketMQ's operator CLI, same sub command names, flags and (close to the
//! byte) output, so operators' habits and grep patterns carry over. Unlike Java's
//! `MQAdminStartup`, a failed command exits non-zero with one clear line on stderr.
//!
//! Layout:
//! - `topic`: updateTopic, deleteTopic, topicList, topicRoute, topicStatus.
//! - `cluster`: clusterList, brokerStatus, getBrokerConfig, updateBrokerConfig.
//! - `consumer`: updateSubGroup, consumerProgress, resetOffsetByTime.
//! - `message`: queryMsgById, queryMsgByKey, queryMsgByOffset, sendMessage, consumeMessage.
//! - `auth`: ACL 2.0's user and ACL commands (createUser ... listAcl).
//! - `console`: the web console (`console`), over the same calls and sub commands.
//! - `format`: Java-compatible formatting (padding, `toString` shapes, fastjson pretty JSON).
//!
//! Every sub command is a clap struct with `async fn run(&self, ctx: &mut Ctx<'_>)`;
//! output goes to `ctx.out` (stdout) and per-broker warnings to `ctx.err` (stderr), so
//! tests run commands in-process against captured buffers.

pub mod auth;
pub mod cluster;
pub mod console;
pub mod consumer;
pub mod format;
pub mod ha;
pub mod message;
pub mod topic;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::client::{Client, DEFAULT_TIMEOUT};
use crate::error::{Result, ToolsError};

/// `mqadmin` command line.
#[derive(Debug, Parser)]
#[command(
    name = "mqadmin",
    about = "RocketMQ-compatible admin tool for sluice (and Apache RocketMQ) clusters",
    disable_version_flag = true
)]
pub struct Cli {
    /// The sub command.
    #[command(subcommand)]
    pub command: Command,
}

/// Options every sub command takes.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// Name server address list, e.g. '192.168.0.1:9876;192.168.0.2:9876'.
    #[arg(short = 'n', long = "namesrvAddr", env = "NAMESRV_ADDR")]
    pub namesrv: Option<String>,
    /// Request timeout in milliseconds (sluice extension).
    #[arg(long = "timeoutMillis", default_value_t = 5000)]
    pub timeout_millis: u64,
    /// Sign requests as this user (sluice extension; else `accessKey` of
    /// `$ROCKETMQ_HOME/conf/tools.yml`, as Apache's mqadmin).
    #[arg(long = "accessKey")]
    pub access_key: Option<String>,
    /// The user's secret key (with `--accessKey`).
    #[arg(long = "secretKey")]
    pub secret_key: Option<String>,
}

impl Common {
    /// Who requests are signed as: the flags, else `$ROCKETMQ_HOME/conf/tools.yml`; `None`:
    /// unsigned.
    #[must_use]
    pub fn credentials(&self) -> Option<::auth::Credentials> {
        if let Some(ak) = &self.access_key {
            return Some(::auth::Credentials::new(
                ak.clone(),
                self.secret_key.clone().unwrap_or_default(),
            ));
        }
        let home = std::env::var_os("ROCKETMQ_HOME")?;
        let text =
            std::fs::read_to_string(std::path::Path::new(&home).join("conf/tools.yml")).ok()?;
        let value = |key: &str| {
            text.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().trim_matches(['"', '\'']).to_owned())
            })
        };
        match (value("accessKey"), value("secretKey")) {
            (Some(ak), Some(sk)) if !ak.is_empty() && !sk.is_empty() => {
                Some(::auth::Credentials::new(ak, sk))
            }
            _ => None,
        }
    }
}

/// `-b brokerAddr | -c clusterName`, one required.
#[derive(Debug, Clone, Args)]
#[group(required = true, multiple = false)]
pub struct Target {
    /// Broker address (`ip:port`).
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker_addr: Option<String>,
    /// Cluster name (every master of it).
    #[arg(short = 'c', long = "clusterName")]
    pub cluster_name: Option<String>,
}

impl Target {
    /// The `-b` address, trimmed.
    #[must_use]
    pub fn broker(&self) -> Option<&str> {
        self.broker_addr.as_deref().map(str::trim)
    }

    /// The `-c` cluster name, trimmed (empty with `-b`).
    #[must_use]
    pub fn cluster(&self) -> &str {
        self.cluster_name.as_deref().unwrap_or_default().trim()
    }
}

/// The sub commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Update or create topic
    #[command(name = "updateTopic")]
    UpdateTopic(topic::UpdateTopic),
    /// Delete topic from broker and NameServer.
    #[command(name = "deleteTopic")]
    DeleteTopic(topic::DeleteTopic),
    /// Fetch all topic list from name server
    #[command(name = "topicList")]
    TopicList(topic::TopicList),
    /// Examine topic route info
    #[command(name = "topicRoute")]
    TopicRoute(topic::TopicRoute),
    /// Examine topic Status info
    #[command(name = "topicStatus")]
    TopicStatus(topic::TopicStatus),
    /// List all of clusters
    #[command(name = "clusterList")]
    ClusterList(cluster::ClusterList),
    /// Fetch broker runtime status data
    #[command(name = "brokerStatus")]
    BrokerStatus(cluster::BrokerStatus),
    /// Get broker config by cluster or special broker
    #[command(name = "getBrokerConfig")]
    GetBrokerConfig(cluster::GetBrokerConfig),
    /// Update broker's config
    #[command(name = "updateBrokerConfig")]
    UpdateBrokerConfig(cluster::UpdateBrokerConfig),
    /// Update or create subscription group
    #[command(name = "updateSubGroup")]
    UpdateSubGroup(consumer::UpdateSubGroup),
    /// Query consumers's progress, speed
    #[command(name = "consumerProgress")]
    ConsumerProgress(consumer::ConsumerProgress),
    /// Reset consumer offset by timestamp(without client restart)
    #[command(name = "resetOffsetByTime")]
    ResetOffsetByTime(consumer::ResetOffsetByTime),
    /// Query Message by Id
    #[command(name = "queryMsgById")]
    QueryMsgById(message::QueryMsgById),
    /// Query Message by Key
    #[command(name = "queryMsgByKey")]
    QueryMsgByKey(message::QueryMsgByKey),
    /// Query Message by offset
    #[command(name = "queryMsgByOffset")]
    QueryMsgByOffset(message::QueryMsgByOffset),
    /// Send a message
    #[command(name = "sendMessage")]
    SendMessage(message::SendMessage),
    /// Consume message
    #[command(name = "consumeMessage")]
    ConsumeMessage(message::ConsumeMessage),
    /// Switch a broker between master and slave (sluice failover drills)
    #[command(name = "switchRole", long_about = ha::SWITCH_ROLE_HELP)]
    SwitchRole(ha::SwitchRole),
    /// Show a broker's role, log end, promotion point and replication state (sluice)
    #[command(name = "haStatus")]
    HaStatus(ha::HaStatus),
    /// switch the engine of timer message in broker
    #[command(name = "switchTimerEngine")]
    SwitchTimerEngine(cluster::SwitchTimerEngine),
    /// Create user to cluster.
    #[command(name = "createUser")]
    CreateUser(auth::CreateUser),
    /// Update user to cluster.
    #[command(name = "updateUser")]
    UpdateUser(auth::UpdateUser),
    /// Delete user from cluster.
    #[command(name = "deleteUser")]
    DeleteUser(auth::DeleteUser),
    /// Get user from cluster.
    #[command(name = "getUser")]
    GetUser(auth::GetUser),
    /// List user from cluster.
    #[command(name = "listUser")]
    ListUser(auth::ListUser),
    /// Create acl to cluster.
    #[command(name = "createAcl")]
    CreateAcl(auth::PutAcl),
    /// Update acl to cluster.
    #[command(name = "updateAcl")]
    UpdateAcl(auth::PutAcl),
    /// Delete acl from cluster.
    #[command(name = "deleteAcl")]
    DeleteAcl(auth::DeleteAcl),
    /// Get acl from cluster.
    #[command(name = "getAcl")]
    GetAcl(auth::GetAcl),
    /// List acl from cluster.
    #[command(name = "listAcl")]
    ListAcl(auth::ListAcl),
    /// sluice: serve the web console (cluster, topics, groups, messages) until Ctrl-C.
    #[command(name = "console")]
    Console(console::Console),
}

/// What a running command writes to and talks through.
pub struct Ctx<'a> {
    /// The client (name servers from `-n` / `NAMESRV_ADDR`).
    pub client: Client,
    /// Standard output.
    pub out: &'a mut dyn Write,
    /// Standard error (warnings about single brokers).
    pub err: &'a mut dyn Write,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl Command {
    fn common(&self) -> &Common {
        match self {
            Command::UpdateTopic(c) => &c.common,
            Command::DeleteTopic(c) => &c.common,
            Command::TopicList(c) => &c.common,
            Command::TopicRoute(c) => &c.common,
            Command::TopicStatus(c) => &c.common,
            Command::ClusterList(c) => &c.common,
            Command::BrokerStatus(c) => &c.common,
            Command::GetBrokerConfig(c) => &c.common,
            Command::UpdateBrokerConfig(c) => &c.common,
            Command::UpdateSubGroup(c) => &c.common,
            Command::ConsumerProgress(c) => &c.common,
            Command::ResetOffsetByTime(c) => &c.common,
            Command::QueryMsgById(c) => &c.common,
            Command::QueryMsgByKey(c) => &c.common,
            Command::QueryMsgByOffset(c) => &c.common,
            Command::SendMessage(c) => &c.common,
            Command::ConsumeMessage(c) => &c.common,
            Command::SwitchRole(c) => &c.common,
            Command::HaStatus(c) => &c.common,
            Command::SwitchTimerEngine(c) => &c.common,
            Command::CreateUser(c) => &c.common,
            Command::UpdateUser(c) => &c.common,
            Command::DeleteUser(c) => &c.common,
            Command::GetUser(c) => &c.common,
            Command::ListUser(c) => &c.common,
            Command::CreateAcl(c) | Command::UpdateAcl(c) => &c.common,
            Command::DeleteAcl(c) => &c.common,
            Command::GetAcl(c) => &c.common,
            Command::ListAcl(c) => &c.common,
            Command::Console(c) => &c.common,
        }
    }

    /// Runs the command.
    ///
    /// # Errors
    /// Whatever the command reports; the caller prints it and exits non-zero.
    pub async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        match self {
            Command::UpdateTopic(c) => c.run(ctx).await,
            Command::DeleteTopic(c) => c.run(ctx).await,
            Command::TopicList(c) => c.run(ctx).await,
            Command::TopicRoute(c) => c.run(ctx).await,
            Command::TopicStatus(c) => c.run(ctx).await,
            Command::ClusterList(c) => c.run(ctx).await,
            Command::BrokerStatus(c) => c.run(ctx).await,
            Command::GetBrokerConfig(c) => c.run(ctx).await,
            Command::UpdateBrokerConfig(c) => c.run(ctx).await,
            Command::UpdateSubGroup(c) => c.run(ctx).await,
            Command::ConsumerProgress(c) => c.run(ctx).await,
            Command::ResetOffsetByTime(c) => c.run(ctx).await,
            Command::QueryMsgById(c) => c.run(ctx).await,
            Command::QueryMsgByKey(c) => c.run(ctx).await,
            Command::QueryMsgByOffset(c) => c.run(ctx).await,
            Command::SendMessage(c) => c.run(ctx).await,
            Command::ConsumeMessage(c) => c.run(ctx).await,
            Command::SwitchRole(c) => c.run(ctx).await,
            Command::HaStatus(c) => c.run(ctx).await,
            Command::SwitchTimerEngine(c) => c.run(ctx).await,
            Command::CreateUser(c) => c.run(ctx).await,
            Command::UpdateUser(c) => c.run(ctx).await,
            Command::DeleteUser(c) => c.run(ctx).await,
            Command::GetUser(c) => c.run(ctx).await,
            Command::ListUser(c) => c.run(ctx).await,
            Command::CreateAcl(c) => c.run(ctx, true).await,
            Command::UpdateAcl(c) => c.run(ctx, false).await,
            Command::DeleteAcl(c) => c.run(ctx).await,
            Command::GetAcl(c) => c.run(ctx).await,
            Command::ListAcl(c) => c.run(ctx).await,
            Command::Console(c) => c.run(ctx).await,
        }
    }
}

/// Runs a parsed command line with the given output streams.
///
/// # Errors
/// No name server, or the command's own failure.
pub async fn run(cli: &Cli, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
    let common = cli.command.common();
    let namesrv = common
        .namesrv
        .as_deref()
        .map(remoting::net::split_addr_list)
        .unwrap_or_default();
    let timeout = if common.timeout_millis == 0 {
        DEFAULT_TIMEOUT
    } else {
        Duration::from_millis(common.timeout_millis)
    };
    let hook = common
        .credentials()
        .map(|c| std::sync::Arc::new(c) as std::sync::Arc<dyn remoting::RequestHook>);
    let remoting = remoting::RemotingClient::default().with_hook(hook);
    let client = Client::with_remoting(remoting, namesrv, timeout);
    let mut ctx = Ctx {
        client: client.clone(),
        out,
        err,
    };
    let result = cli.command.run(&mut ctx).await;
    ctx.out.flush()?;
    client.shutdown();
    result
}

/// The whole program: parse `args`, run on a small runtime, print the error, pick the
/// exit code (0 ok, 1 failure, 2 usage).
#[must_use]
pub fn main_with<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mqadmin: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    let result = runtime.block_on(run(&cli, &mut stdout, &mut stderr));
    drop(stdout);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`mqadmin clusterList | grep -q ...`): as `head` does, stop
        // quietly; it has what it wanted.
        Err(ToolsError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(ToolsError::Usage(msg)) => {
            eprintln!("mqadmin: {msg}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("mqadmin: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Java's `Boolean.parseBoolean` for options like `-o true`: `true` in any case is true,
/// anything else false.
///
/// # Errors
/// Never; the signature is clap's.
#[allow(clippy::unnecessary_wraps, reason = "clap value parsers return Result")]
pub fn java_bool(text: &str) -> std::result::Result<bool, String> {
    Ok(text.trim().eq_ignore_ascii_case("true"))
}

/// Reports a per-broker failure on stderr, as Java prints a stack trace and goes on.
pub(crate) fn warn(ctx: &mut Ctx<'_>, what: &str, e: &ToolsError) {
    let _ = writeln!(ctx.err, "{what}: {e}");
}

/// The outcomes of a command's per-broker operations: a failure is reported on stderr
/// as it happens and the command goes on, then fails as a whole ([`ToolsError::Partial`]).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    failed: usize,
    total: usize,
}

impl Tally {
    /// Counts one operation: its value, or `None` after reporting `what` failed.
    ///
    /// # Errors
    /// Local I/O (writing our own output) is not a broker's failure and stops the command.
    pub(crate) fn check<T>(
        &mut self,
        ctx: &mut Ctx<'_>,
        result: Result<T>,
        what: impl FnOnce() -> String,
    ) -> Result<Option<T>> {
        self.total += 1;
        match result {
            Ok(v) => Ok(Some(v)),
            Err(ToolsError::Io(e)) => Err(ToolsError::Io(e)),
            Err(e) => {
                self.failed += 1;
                warn(ctx, &what(), &e);
                Ok(None)
            }
        }
    }

    /// [`ToolsError::Partial`] when some operation failed.
    ///
    /// # Errors
    /// See above.
    pub(crate) fn finish(self) -> Result<()> {
        if self.failed == 0 {
            Ok(())
        } else {
            Err(ToolsError::Partial {
                failed: self.failed,
                total: self.total,
            })
        }
    }
}

/// The first error of a fan-out to name servers, if any.
pub(crate) fn fail_on_any(errors: Vec<ToolsError>) -> Result<()> {
    match errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use proptest::prelude::*;

    fn parse(args: &[&str]) -> std::result::Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("mqadmin").chain(args.iter().copied()))
    }

    /// Every sub command with the flags it takes (`-x` and `--long`).
    fn commands() -> Vec<(String, Vec<String>)> {
        Cli::command()
            .get_subcommands()
            .map(|c| {
                let mut flags = Vec::new();
                for arg in c.get_arguments() {
                    flags.extend(arg.get_short().map(|s| format!("-{s}")));
                    flags.extend(arg.get_long().map(|l| format!("--{l}")));
                }
                (c.get_name().to_owned(), flags)
            })
            .collect()
    }

    fn value_text() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "T",
                "0",
                "-1",
                "true",
                "TRUE",
                "2147483648",
                "127.0.0.1:10911",
                "now",
                "a:1;b:2",
                "2026-11-29#14:03:07:123",
                "7F000001000051AF0000000000000000",
                "",
                "-",
                "--",
            ])
            .prop_map(str::to_owned),
            any::<i64>().prop_map(|n| n.to_string()),
            "\\PC{0,16}",
        ]
    }

    proptest! {
        #[test]
        fn any_arguments_parse_or_fail_cleanly(
            command in any::<prop::sample::Index>(),
            args in prop::collection::vec((any::<prop::sample::Index>(), value_text(), any::<bool>()), 0..8),
        ) {
            let commands = commands();
            let (name, flags) = command.get(&commands);
            let mut argv = vec!["mqadmin".to_owned(), name.clone()];
            for (flag, value, with_value) in args {
                if !flags.is_empty() {
                    argv.push(flag.get(flags).clone());
                }
                if with_value {
                    argv.push(value);
                }
            }
            let _ = Cli::try_parse_from(&argv);
        }

        #[test]
        fn java_bool_never_panics(text in "\\PC{0,12}") {
            prop_assert_eq!(java_bool(&text), Ok(text.trim().eq_ignore_ascii_case("true")));
        }
    }

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn java_style_flags() {
        let cli = parse(&[
            "updateTopic",
            "-n",
            "127.0.0.1:9876",
            "-c",
            "DefaultCluster",
            "-t",
            "T",
            "-r",
            "4",
            "-w",
            "4",
            "-p",
            "6",
            "-o",
            "TRUE",
        ])
        .unwrap();
        let Command::UpdateTopic(c) = cli.command else {
            panic!("wrong command")
        };
        assert_eq!(c.common.namesrv.as_deref(), Some("127.0.0.1:9876"));
        assert_eq!(
            (c.read_queue_nums, c.write_queue_nums, c.perm, c.order),
            (4, 4, 6, true)
        );
        assert_eq!(c.target.cluster_name.as_deref(), Some("DefaultCluster"));

        // -b and -c are exclusive, one of them is required.
        assert!(parse(&["updateTopic", "-t", "T"]).is_err());
        assert!(parse(&["updateTopic", "-t", "T", "-b", "a:1", "-c", "C"]).is_err());
        // Missing -t.
        assert!(parse(&["topicRoute"]).is_err());
        assert!(parse(&["noSuchCommand"]).is_err());
        // Long names work too.
        let cli = parse(&["topicRoute", "--topic", "T", "--namesrvAddr", "x:1"]).unwrap();
        assert!(matches!(cli.command, Command::TopicRoute(ref t) if t.topic == "T"));
    }

    #[test]
    fn every_documented_command_parses() {
        for args in [
            &["deleteTopic", "-t", "T", "-c", "C"][..],
            &["topicList", "-c"],
            &["topicRoute", "-t", "T", "-l"],
            &["topicStatus", "-t", "T"],
            &["clusterList", "-m", "-i", "2", "-c", "C"],
            &["brokerStatus", "-b", "127.0.0.1:10911"],
            &["getBrokerConfig", "-c", "C"],
            &[
                "updateBrokerConfig",
                "-b",
                "a:1",
                "-k",
                "flushDiskType",
                "-v",
                "SYNC_FLUSH",
            ],
            &[
                "updateSubGroup",
                "-c",
                "C",
                "-g",
                "G",
                "-s",
                "true",
                "-m",
                "false",
                "-d",
                "true",
                "-q",
                "2",
                "-r",
                "3",
                "-i",
                "0",
                "-w",
                "1",
                "-a",
                "false",
            ],
            &["consumerProgress"],
            &["consumerProgress", "-g", "G", "-s", "true"],
            &[
                "resetOffsetByTime",
                "-g",
                "G",
                "-t",
                "T",
                "-s",
                "now",
                "-f",
                "false",
            ],
            &["queryMsgById", "-i", "7F000001000051AF0000000000000000"],
            &["queryMsgById", "-t", "T", "-i", "A,B", "-f", "UTF-8"],
            &[
                "queryMsgByKey",
                "-t",
                "T",
                "-k",
                "K",
                "-b",
                "0",
                "-e",
                "100",
                "-m",
                "10",
            ],
            &[
                "queryMsgByOffset",
                "-t",
                "T",
                "-b",
                "broker-a",
                "-i",
                "0",
                "-o",
                "5",
            ],
            &[
                "sendMessage",
                "-t",
                "T",
                "-p",
                "body",
                "-k",
                "K",
                "-c",
                "TagA",
                "-b",
                "broker-a",
                "-i",
                "1",
            ],
            &[
                "consumeMessage",
                "-t",
                "T",
                "-b",
                "broker-a",
                "-i",
                "0",
                "-o",
                "3",
                "-c",
                "10",
                "-s",
                "1",
                "-e",
                "now",
            ],
        ] {
            parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        assert!(parse(&["updateBrokerConfig", "-b", "a:1", "-k", "x"]).is_err());
    }

    #[test]
    fn java_bool_semantics() {
        assert_eq!(java_bool("True"), Ok(true));
        assert_eq!(java_bool("yes"), Ok(false));
    }
}
