//! One benchmark cluster: a name server, a master and (when the scenario needs one) a slave,
//! of sluice or of Apache RocketMQ, on reserved loopback ports with the store in a temp dir
//! on the same disk for both systems. Stopped (and the store removed) on drop.
//!
//! With [`Topology::grpc`] the master also serves RocketMQ 5's gRPC protocol in-process
//! ("local mode"): sluice's `mqbroker` with `enableGrpcProxy`, Apache's broker run by its
//! proxy (`ProxyStartup -pm local`, the broker inside the proxy's JVM, as Apache's
//! `mqbroker --enable-proxy` does), so both broker processes carry the proxy's work.

use std::fmt;
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use remoting::protocol::namesrv::GetRouteInfoRequestHeader;
use remoting::{RemotingCommand, RequestCode};
use tempfile::TempDir;

use crate::client::try_request;
use crate::harness::{HA_BROKER_NAME, registered_ids};
use crate::java::ApacheDist;
use crate::ports::{self, PortReservation};
use crate::procs::{Proc, cpu_seconds, rss_anon, vm_rss};

/// Cluster name of every benchmark cluster (both systems).
pub const CLUSTER: &str = "BenchCluster";
/// Broker name of the master/slave pair.
pub const BROKER_NAME: &str = HA_BROKER_NAME;
/// CommitLog file size on both systems (RocketMQ's default, 1 GiB).
pub const COMMIT_LOG_FILE_SIZE: u64 = 1 << 30;
/// How long a process may take to serve (a JVM under load needs a while).
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// Which broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum System {
    /// Ours.
    Sluice,
    /// Apache RocketMQ from Maven Central.
    RocketMq,
}

impl System {
    /// `sluice` / `rocketmq`, as in results and on the command line.
    #[must_use]
    pub fn key(self) -> &'static str {
        match self {
            System::Sluice => "sluice",
            System::RocketMq => "rocketmq",
        }
    }

    /// From [`key`](Self::key).
    #[must_use]
    pub fn from_key(key: &str) -> Option<Self> {
        match key {
            "sluice" => Some(System::Sluice),
            "rocketmq" | "apache" => Some(System::RocketMq),
            _ => None,
        }
    }
}

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// JVM settings of the Apache processes (recorded in the results).
#[derive(Debug, Clone)]
pub struct JvmSettings {
    /// Broker JVM flags (heap, direct memory, GC).
    pub broker: Vec<String>,
    /// Name server JVM flags.
    pub namesrv: Vec<String>,
}

impl JvmSettings {
    /// The settings, cut to fit when the machine has less memory: a broker gets
    /// `-Xms2g -Xmx2g -XX:MaxDirectMemorySize=2g` when two brokers (a pair) fit in half of
    /// the available memory, 1g each otherwise; the name server 512m.
    #[must_use]
    pub fn for_machine(available_bytes: u64) -> Self {
        let gib = if available_bytes >= 16 << 30 { 2 } else { 1 };
        let broker = vec![
            format!("-Xms{gib}g"),
            format!("-Xmx{gib}g"),
            format!("-XX:MaxDirectMemorySize={gib}g"),
            // As RocketMQ's runbroker.sh (minus AlwaysPreTouch, so RSS shows what is used).
            "-XX:+UseG1GC".to_owned(),
            "-XX:G1HeapRegionSize=16m".to_owned(),
            "-XX:G1ReservePercent=25".to_owned(),
            "-XX:InitiatingHeapOccupancyPercent=30".to_owned(),
            "-XX:SoftRefLRUPolicyMSPerMB=0".to_owned(),
            "-XX:-OmitStackTraceInFastThrow".to_owned(),
        ];
        let namesrv = vec![
            "-Xms512m".to_owned(),
            "-Xmx512m".to_owned(),
            "-XX:+UseG1GC".to_owned(),
        ];
        JvmSettings { broker, namesrv }
    }
}

/// Where the programs are.
#[derive(Debug, Clone)]
pub struct Programs {
    /// Holds `mqnamesrv`, `mqbroker`, `mqadmin`, `mqbench`.
    pub bin_dir: PathBuf,
    /// The workspace root (for `deploy/*.toml`).
    pub workspace: PathBuf,
    /// Apache RocketMQ's class path and `ROCKETMQ_HOME`, when resolved.
    pub apache: Option<ApacheDist>,
    /// JVM flags.
    pub jvm: JvmSettings,
}

/// How the cluster is laid out and stores.
#[derive(Debug, Clone)]
pub struct Topology {
    /// `ASYNC_MASTER` or `SYNC_MASTER`.
    pub role: &'static str,
    /// `ASYNC_FLUSH` or `SYNC_FLUSH`.
    pub flush: &'static str,
    /// Whether a slave (brokerId 1) follows the master.
    pub slave: bool,
    /// Further broker settings, the same on both systems.
    pub extra: Vec<(String, String)>,
    /// Whether the master serves gRPC too (local mode).
    pub grpc: bool,
}

/// The Apache proxy release whose local mode runs Apache's broker in the gRPC scenarios
/// (the broker release of [`ApacheDist`]).
const APACHE_PROXY: &str = crate::java::V5;

/// One broker or name server process with its address.
#[derive(Debug)]
pub struct Node {
    /// The process.
    pub proc: Proc,
    /// `127.0.0.1:port` it serves on.
    pub addr: String,
    /// `127.0.0.1:port` of its gRPC endpoint (a master of a [`Topology::grpc`] cluster).
    pub grpc: Option<String>,
    _ports: Vec<PortReservation>,
}

/// A running cluster.
pub struct Cluster {
    /// Which system.
    pub system: System,
    /// Name server.
    pub namesrv: Node,
    /// Master (brokerId 0).
    pub master: Node,
    /// Slave (brokerId 1).
    pub slave: Option<Node>,
    store: Option<TempDir>,
    /// What a restart of the master needs.
    programs: Programs,
    topology: Topology,
    log_dir: PathBuf,
}

/// How a restarted master's previous process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM, and time for a clean shutdown.
    Clean,
    /// SIGKILL: a crash.
    Kill,
}

/// How long a clean shutdown may take (a JVM broker flushing its timer files).
const CLEAN_STOP_GRACE: Duration = Duration::from_secs(60);

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("system", &self.system)
            .field("namesrv", &self.namesrv.addr)
            .field("master", &self.master.addr)
            .field("slave", &self.slave.as_ref().map(|s| &s.addr))
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// Starts a name server, the master (waits for its registration) and the slave if any
    /// (waits for its registration too). Logs go to `log_dir`; the stores to a temp dir under
    /// `store_root`.
    ///
    /// # Errors
    /// A process does not start or register; the message holds the end of its log.
    pub fn start(
        system: System,
        programs: &Programs,
        topology: &Topology,
        log_dir: &Path,
        store_root: &Path,
    ) -> Result<Self, String> {
        fs::create_dir_all(log_dir).map_err(|e| format!("{}: {e}", log_dir.display()))?;
        fs::create_dir_all(store_root).map_err(|e| format!("{}: {e}", store_root.display()))?;
        let store = tempfile::Builder::new()
            .prefix(&format!("sluice-bench-{}-", system.key()))
            .tempdir_in(store_root)
            .map_err(|e| format!("temp dir in {}: {e}", store_root.display()))?;
        let namesrv = start_namesrv(system, programs, store.path(), log_dir)?;
        let master = start_broker(
            system,
            programs,
            topology,
            &namesrv.addr,
            0,
            store.path(),
            log_dir,
        )?;
        wait_registered(&namesrv.addr, &master.addr, 0, START_TIMEOUT)?;
        let slave = if topology.slave {
            let slave = start_broker(
                system,
                programs,
                topology,
                &namesrv.addr,
                1,
                store.path(),
                log_dir,
            )?;
            wait_registered(&namesrv.addr, &slave.addr, 1, START_TIMEOUT)?;
            Some(slave)
        } else {
            None
        };
        Ok(Cluster {
            system,
            namesrv,
            master,
            slave,
            store: Some(store),
            programs: programs.clone(),
            topology: topology.clone(),
            log_dir: log_dir.to_owned(),
        })
    }

    /// The store temp dir (both brokers' stores are under it).
    #[must_use]
    pub fn store_dir(&self) -> Option<&Path> {
        self.store.as_ref().map(TempDir::path)
    }

    /// Pids of name server, master, slave (if any), in that order.
    #[must_use]
    pub fn pids(&self) -> Vec<u32> {
        let mut v = vec![self.namesrv.proc.pid(), self.master.proc.pid()];
        if let Some(s) = &self.slave {
            v.push(s.proc.pid());
        }
        v
    }

    /// CPU seconds so far of name server, master, slave.
    #[must_use]
    pub fn cpu(&self) -> Vec<f64> {
        self.pids()
            .into_iter()
            .map(|p| cpu_seconds(p).unwrap_or(0.0))
            .collect()
    }

    /// RssAnon now of name server, master, slave.
    #[must_use]
    pub fn rss(&self) -> Vec<u64> {
        self.pids()
            .into_iter()
            .map(|p| rss_anon(p).unwrap_or(0))
            .collect()
    }

    /// VmRSS now (mapped store files and page cache of them included) of name server,
    /// master, slave.
    #[must_use]
    pub fn vm_rss(&self) -> Vec<u64> {
        self.pids()
            .into_iter()
            .map(|p| vm_rss(p).unwrap_or(0))
            .collect()
    }

    /// Whether every process still runs.
    pub fn all_running(&mut self) -> bool {
        let slave_ok = self.slave.as_mut().is_none_or(|s| s.proc.is_running());
        self.namesrv.proc.is_running() && self.master.proc.is_running() && slave_ok
    }

    /// The ends of every log, for failure messages.
    #[must_use]
    pub fn log_tails(&self) -> String {
        let mut s = self.namesrv.proc.log_tail(20);
        s.push('\n');
        s.push_str(&self.master.proc.log_tail(40));
        if let Some(slave) = &self.slave {
            s.push('\n');
            s.push_str(&slave.proc.log_tail(40));
        }
        s
    }

    /// Waits until the name server has a route for every topic in `topics`.
    ///
    /// # Errors
    /// Some topic has none after `timeout`.
    pub fn wait_routes(&self, topics: &[String], timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        for topic in topics {
            loop {
                let header = GetRouteInfoRequestHeader {
                    topic: topic.clone(),
                    accept_standard_json_only: Some(true),
                };
                let request =
                    RemotingCommand::request_with(RequestCode::GetRouteinfoByTopic, &header);
                if try_request(&self.namesrv.addr, request).is_ok_and(|r| r.code() == 0) {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!(
                        "no route for {topic} at {} after {timeout:?}",
                        self.namesrv.addr
                    ));
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        Ok(())
    }

    /// Stops the master (`how`) and starts it again on the same port and store, with
    /// `overrides` on top of the topology's settings (which they replace for later
    /// restarts too). Returns once the new process is spawned, before it serves: the
    /// caller times its recovery.
    ///
    /// # Errors
    /// The command cannot be built or spawned.
    pub fn restart_master(
        &mut self,
        how: Stop,
        overrides: &[(&str, String)],
    ) -> Result<(), String> {
        match how {
            Stop::Clean => {
                self.master.proc.stop_within(CLEAN_STOP_GRACE);
            }
            Stop::Kill => {
                self.master.proc.kill();
            }
        }
        for (k, v) in overrides {
            self.topology.extra.retain(|(key, _)| key != k);
            self.topology.extra.push(((*k).to_owned(), v.clone()));
        }
        let port = socket_port(&self.master.addr)?;
        let dir = self
            .store_dir()
            .ok_or_else(|| "the cluster's store is gone".to_owned())?
            .to_owned();
        if self.topology.grpc {
            return Err("restarting a master that serves gRPC is not supported".to_owned());
        }
        let (name, cmd) = broker_command(
            self.system,
            &self.programs,
            &self.topology,
            &self.namesrv.addr,
            0,
            port,
            None,
            &dir,
            &self.log_dir,
        )?;
        self.master.proc = Proc::spawn(&name, cmd, &self.log_dir.join(format!("{name}.log")))
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Stops slave, master and name server (in that order) and removes the stores.
    pub fn stop(&mut self) {
        if let Some(s) = &mut self.slave {
            s.proc.stop();
        }
        self.master.proc.stop();
        self.namesrv.proc.stop();
        if let Some(dir) = self.store.take() {
            let path = dir.path().to_owned();
            if let Err(e) = dir.close() {
                eprintln!("bench: cannot remove {}: {e}", path.display());
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

fn start_namesrv(
    system: System,
    programs: &Programs,
    dir: &Path,
    log_dir: &Path,
) -> Result<Node, String> {
    let mut ports = vec![ports::reserve()];
    let port = ports[0].port();
    let addr = format!("127.0.0.1:{port}");
    let ns_dir = dir.join("namesrv");
    fs::create_dir_all(&ns_dir).map_err(|e| e.to_string())?;
    let (name, cmd) = match system {
        System::Sluice => {
            let mut cmd = Command::new(programs.bin_dir.join("mqnamesrv"));
            cmd.arg("-c")
                .arg(programs.workspace.join("deploy").join("namesrv.toml"))
                .args(settings(&[
                    ("listenPort", port.to_string()),
                    ("bindAddress", "127.0.0.1".to_owned()),
                    ("kvConfigPath", path_str(&ns_dir.join("kvConfig.json"))),
                    (
                        "configStorePath",
                        path_str(&ns_dir.join("namesrv.properties")),
                    ),
                ]))
                .env("RUST_LOG", "info");
            ("mqnamesrv", cmd)
        }
        System::RocketMq => {
            let dist = apache(programs)?;
            let conf = ns_dir.join("namesrv.properties");
            write_properties(
                &conf,
                &[
                    ("listenPort", port.to_string()),
                    ("bindAddress", "127.0.0.1".to_owned()),
                    ("kvConfigPath", path_str(&ns_dir.join("kvConfig.json"))),
                ],
            )?;
            // Its logs (`~/logs/rocketmqlogs`) stay with the run's other logs.
            let home = log_dir.join("home-namesrv");
            fs::create_dir_all(&home).map_err(|e| e.to_string())?;
            let mut cmd = java(dist, &programs.jvm.namesrv, &home);
            cmd.arg("org.apache.rocketmq.namesrv.NamesrvStartup")
                .arg("-c")
                .arg(&conf);
            ("rocketmq-namesrv", cmd)
        }
    };
    for p in &mut ports {
        p.release_listener();
    }
    let mut proc =
        Proc::spawn(name, cmd, &log_dir.join(format!("{name}.log"))).map_err(|e| e.to_string())?;
    proc.wait_connectable(socket(port), START_TIMEOUT)?;
    Ok(Node {
        proc,
        addr,
        grpc: None,
        _ports: ports,
    })
}

#[allow(clippy::too_many_arguments, reason = "one broker's whole setup")]
fn start_broker(
    system: System,
    programs: &Programs,
    topology: &Topology,
    namesrv: &str,
    broker_id: i64,
    dir: &Path,
    log_dir: &Path,
) -> Result<Node, String> {
    // listenPort - 2 (Apache's fast/VIP port) ..= listenPort + 1 (HA).
    let mut ports = ports::reserve_consecutive(4);
    let port = ports[2].port();
    let addr = format!("127.0.0.1:{port}");
    // The gRPC port and (Apache's proxy) the proxy's own remoting port.
    let grpc = (topology.grpc && broker_id == 0).then(|| {
        let (g, r) = (ports::reserve(), ports::reserve());
        let both = (g.port(), r.port());
        ports.extend([g, r]);
        both
    });
    let (name, cmd) = broker_command(
        system, programs, topology, namesrv, broker_id, port, grpc, dir, log_dir,
    )?;
    for p in &mut ports {
        p.release_listener();
    }
    let mut proc =
        Proc::spawn(&name, cmd, &log_dir.join(format!("{name}.log"))).map_err(|e| e.to_string())?;
    proc.wait_connectable(socket(port), START_TIMEOUT)?;
    if let Some((grpc_port, _)) = grpc {
        proc.wait_connectable(socket(grpc_port), START_TIMEOUT)?;
    }
    Ok(Node {
        proc,
        addr,
        grpc: grpc.map(|(g, _)| format!("127.0.0.1:{g}")),
        _ports: ports,
    })
}

/// The process name and command of broker `broker_id` serving on `port` with its store
/// under `dir`.
#[allow(clippy::too_many_arguments, reason = "one broker's whole setup")]
fn broker_command(
    system: System,
    programs: &Programs,
    topology: &Topology,
    namesrv: &str,
    broker_id: i64,
    port: u16,
    grpc: Option<(u16, u16)>,
    dir: &Path,
    log_dir: &Path,
) -> Result<(String, Command), String> {
    let label = if broker_id == 0 { "master" } else { "slave" };
    let store = dir.join(format!("store-{label}"));
    let role = if broker_id == 0 {
        topology.role
    } else {
        "SLAVE"
    };
    let mut conf: Vec<(&str, String)> = vec![
        ("brokerClusterName", CLUSTER.to_owned()),
        ("brokerName", BROKER_NAME.to_owned()),
        ("brokerId", broker_id.to_string()),
        ("brokerRole", role.to_owned()),
        ("flushDiskType", topology.flush.to_owned()),
        ("namesrvAddr", namesrv.to_owned()),
        ("brokerIP1", "127.0.0.1".to_owned()),
        ("listenPort", port.to_string()),
        ("haListenPort", (port + 1).to_string()),
        ("bindAddress", "127.0.0.1".to_owned()),
        ("storePathRootDir", path_str(&store)),
        ("storePathCommitLog", path_str(&store.join("commitlog"))),
        ("mappedFileSizeCommitLog", COMMIT_LOG_FILE_SIZE.to_string()),
        ("autoCreateTopicEnable", "true".to_owned()),
    ];
    for (k, v) in &topology.extra {
        // A later setting of a key replaces an earlier one (a restart's overrides).
        conf.retain(|(key, _)| key != k);
        conf.push((k.as_str(), v.clone()));
    }
    if let (System::Sluice, Some((grpc_port, _))) = (system, grpc) {
        conf.push(("enableGrpcProxy", "true".to_owned()));
        conf.push(("grpcServerPort", grpc_port.to_string()));
    }
    Ok(match system {
        System::Sluice => {
            let mut cmd = Command::new(programs.bin_dir.join("mqbroker"));
            cmd.arg("-c")
                .arg(programs.workspace.join("deploy").join("broker.toml"))
                .arg("-n")
                .arg(namesrv)
                .args(settings(&conf))
                .env("RUST_LOG", "info");
            (format!("mqbroker-{label}"), cmd)
        }
        System::RocketMq => {
            let dist = apache(programs)?;
            let conf_path = dir.join(format!("broker-{label}.conf"));
            write_properties(&conf_path, &conf)?;
            let home = log_dir.join(format!("home-{label}"));
            fs::create_dir_all(&home).map_err(|e| e.to_string())?;
            let cmd = match grpc {
                None => {
                    let mut cmd = java(dist, &programs.jvm.broker, &home);
                    cmd.arg("org.apache.rocketmq.broker.BrokerStartup")
                        .arg("-c")
                        .arg(&conf_path);
                    cmd
                }
                Some((grpc_port, remoting_port)) => apache_local_proxy(
                    dist,
                    programs,
                    namesrv,
                    grpc_port,
                    remoting_port,
                    &conf_path,
                    &home,
                )?,
            };
            (format!("rocketmq-broker-{label}"), cmd)
        }
    })
}

/// Apache's broker inside Apache's proxy in local mode (`ProxyStartup -pm local -bc`), gRPC on
/// `grpc_port`, the proxy's remoting listener on `remoting_port`, the broker's own settings
/// from `broker_conf`.
fn apache_local_proxy(
    dist: &ApacheDist,
    programs: &Programs,
    namesrv: &str,
    grpc_port: u16,
    remoting_port: u16,
    broker_conf: &Path,
    home: &Path,
) -> Result<Command, String> {
    let classpath = crate::harness::proxy::resolve(APACHE_PROXY)?;
    let proxy_conf = home.join("rmq-proxy.json");
    let conf = serde_json::json!({
        "rocketMQClusterName": CLUSTER,
        "namesrvAddr": namesrv,
        "grpcServerPort": grpc_port,
        "remotingListenPort": remoting_port,
        "localServeAddr": "127.0.0.1",
        "remotingAccessAddr": "127.0.0.1",
        "proxyName": "sluice-bench-proxy",
        "enablePrintJstack": false,
    });
    fs::write(&proxy_conf, conf.to_string())
        .map_err(|e| format!("{}: {e}", proxy_conf.display()))?;
    let mut cmd = Command::new("java");
    cmd.args(&programs.jvm.broker)
        .arg(format!("-Duser.home={}", home.display()))
        .arg("-cp")
        .arg(&classpath)
        .env("ROCKETMQ_HOME", &dist.home)
        .current_dir(home)
        .arg("org.apache.rocketmq.proxy.ProxyStartup")
        .args(["-pm", "local", "-bc"])
        .arg(broker_conf)
        .arg("-pc")
        .arg(&proxy_conf);
    Ok(cmd)
}

fn apache(programs: &Programs) -> Result<&ApacheDist, String> {
    programs
        .apache
        .as_ref()
        .ok_or_else(|| "Apache RocketMQ's class path is not resolved".to_owned())
}

/// `java FLAGS -Duser.home=HOME -cp CLASSPATH` with `ROCKETMQ_HOME` set; the class follows.
fn java(dist: &ApacheDist, flags: &[String], home: &Path) -> Command {
    let mut cmd = Command::new("java");
    cmd.args(flags)
        .arg(format!("-Duser.home={}", home.display()))
        .arg("-cp")
        .arg(&dist.classpath)
        .env("ROCKETMQ_HOME", &dist.home)
        .current_dir(home);
    cmd
}

fn settings(pairs: &[(&str, String)]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|(k, v)| ["-o".to_owned(), format!("{k}={v}")])
        .collect()
}

fn write_properties(path: &Path, pairs: &[(&str, String)]) -> Result<(), String> {
    let text: String = pairs.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

fn socket_port(addr: &str) -> Result<u16, String> {
    addr.rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .ok_or_else(|| format!("no port in {addr}"))
}

fn socket(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Waits until the name server lists `addr` as broker `id` of [`BROKER_NAME`] (checked every
/// 200 ms).
fn wait_registered(namesrv: &str, addr: &str, id: i64, timeout: Duration) -> Result<(), String> {
    if test_support::wait_until_every(Duration::from_millis(200), timeout, || {
        registered_ids(namesrv, addr).contains(&id)
    }) {
        Ok(())
    } else {
        Err(format!(
            "{addr} not registered as broker {id} with {namesrv} after {timeout:?}"
        ))
    }
}
