//! `deploy/` as an operator uses it, so its configs and scripts cannot rot.
//!
//! - Every topology (`deploy/{1m-1s,2m-2s}-{sync,async}/`): a name server from
//!   `deploy/namesrv.toml` and each broker from its file exactly as shipped, overriding
//!   only ports, the store dir, the name server address and (to stay small)
//!   `mappedFileSizeCommitLog`. Then, through our `mqadmin`: `clusterList` shows every
//!   broker with its id, `haStatus` shows each master with the topology's role and each
//!   slave connected and caught up (at once after a send for SYNC_MASTER: the send waited
//!   for it), a message sent to each pair is consumable, no key in the file is unknown to
//!   the broker, and every broker stops cleanly on SIGTERM.
//! - `deploy/local-cluster.sh`: `up` (twice: no duplicates; a message over remoting and
//!   one through the master's gRPC endpoint with `mqgrpc`), `status`, `drill`, `up`
//!   after the old master crashed (it rejoins as the slave, not as a second master),
//!   `drill --back`, `down`, on reserved ports in a temp dir with the test's binaries.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use integration_tests::spawn::GatedCommand;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use integration_tests::client::{SyncClient, send_request};
use integration_tests::harness::{ChildProcess, NamesrvProcess, ProcessSpec, TestDir, binary};
use integration_tests::ports::{self, PortReservation};

/// CommitLog file size for the test brokers (the configs say 1 GiB).
const TEST_COMMIT_LOG_SIZE: u64 = 16 * 1024 * 1024;
/// How long the cluster may take to form (registration, HA connect).
const FORM_TIMEOUT: Duration = Duration::from_secs(20);

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("integration-tests sits in the workspace root")
        .join("deploy")
}

fn nonce() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

// ---------------------------------------------------------------- mqadmin

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn assert_ok(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
    stdout(o)
}

/// Our `mqadmin` with `args` against name server `ns`.
fn mqadmin(ns: &str, args: &[&str]) -> Output {
    Command::new(binary("tools", "mqadmin"))
        .args(args)
        .args(["-n", ns])
        .env_remove("NAMESRV_ADDR")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .gated_output()
        .unwrap()
}

/// `(cluster, broker name, id, address)` of each `clusterList` row.
fn cluster_rows(ns: &str) -> BTreeSet<(String, String, String, String)> {
    let out = mqadmin(ns, &["clusterList"]);
    if !out.status.success() {
        return BTreeSet::new();
    }
    stdout(&out)
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4).then(|| (f[0].into(), f[1].into(), f[2].into(), f[3].into()))
        })
        .collect()
}

/// `mqadmin haStatus -b addr` as a map (empty when the broker does not answer).
fn ha_status(ns: &str, addr: &str) -> BTreeMap<String, String> {
    let out = mqadmin(ns, &["haStatus", "-b", addr]);
    if !out.status.success() {
        return BTreeMap::new();
    }
    stdout(&out)
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

fn field<'a>(status: &'a BTreeMap<String, String>, key: &str) -> &'a str {
    status.get(key).map_or("", String::as_str)
}

/// Polls `check` until it returns `Ok`, or panics with its last `Err` after `timeout`.
#[track_caller]
fn wait_for<T>(what: &str, timeout: Duration, mut check: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        match check() {
            Ok(v) => return v,
            Err(last) if Instant::now() > deadline => {
                panic!("{what}: not after {timeout:?}; last: {last}")
            }
            Err(_) => thread::sleep(Duration::from_millis(50)),
        }
    }
}

// ---------------------------------------------------------------- topologies

/// One broker of a topology, started from its file in `deploy/`.
struct DeployedBroker {
    /// File stem: `broker-a-master`.
    name: String,
    /// `broker-a`.
    broker_name: String,
    master: bool,
    port: u16,
    process: ChildProcess,
}

impl DeployedBroker {
    /// Starts `mqbroker -c <file>` overriding only ports, store dir, name server and
    /// CommitLog file size.
    fn start(file: &Path, ns: &str) -> Self {
        let name = file.file_stem().unwrap().to_str().unwrap().to_owned();
        let (broker_name, role) = name
            .rsplit_once('-')
            .unwrap_or_else(|| panic!("{name}: expected <brokerName>-master|slave"));
        assert!(
            role == "master" || role == "slave",
            "{}: expected <brokerName>-master|slave",
            file.display()
        );
        let dir = TestDir::new(&format!("deploy-{name}"));
        // listenPort - 2 (the VIP channel) ..= listenPort + 1 (HA).
        let ports = ports::reserve_consecutive(4);
        let port = ports[2].port();
        let spec = ProcessSpec::new(&name, binary("broker", "mqbroker"))
            .arg("-c")
            .arg(file)
            .setting("namesrvAddr", ns)
            .setting("listenPort", port)
            .setting("haListenPort", port + 1)
            .setting("storePathRootDir", dir.path().join("store").display())
            .setting("mappedFileSizeCommitLog", TEST_COMMIT_LOG_SIZE);
        let process = ChildProcess::start(spec, dir, ports);
        DeployedBroker {
            broker_name: broker_name.to_owned(),
            master: role == "master",
            name,
            port,
            process,
        }
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn ha_addr(&self) -> String {
        format!("127.0.0.1:{}", self.port + 1)
    }
}

/// The broker config files of a topology, sorted.
fn topology_files(topology: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(deploy_dir().join(topology))
        .unwrap_or_else(|e| panic!("deploy/{topology}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// Starts a whole topology and checks it forms, replicates and serves a message.
fn check_topology(topology: &str, pairs: &[&str], master_role: &str) {
    let started = Instant::now();
    let files = topology_files(topology);
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let expected: Vec<String> = pairs
        .iter()
        .flat_map(|p| [format!("{p}-master"), format!("{p}-slave")])
        .collect();
    assert_eq!(names, expected, "the files of deploy/{topology}");

    // Masters first, registered before their slaves start: a slave learns its master's
    // address when it registers, then only every 30 s.
    let ns = NamesrvProcess::start();
    let (master_files, slave_files): (Vec<&PathBuf>, Vec<&PathBuf>) = files
        .iter()
        .partition(|f| f.to_string_lossy().ends_with("-master.toml"));
    let mut brokers: Vec<DeployedBroker> = master_files
        .into_iter()
        .map(|f| DeployedBroker::start(f, &ns.addr()))
        .collect();
    wait_for(
        &format!("{topology}: masters registered"),
        FORM_TIMEOUT,
        || {
            let rows = cluster_rows(&ns.addr());
            let missing: Vec<String> = brokers
                .iter()
                .map(DeployedBroker::addr)
                .filter(|a| !rows.iter().any(|r| r.3 == *a))
                .collect();
            if missing.is_empty() {
                Ok(())
            } else {
                Err(format!("{missing:?} not in {rows:?}"))
            }
        },
    );
    brokers.extend(
        slave_files
            .into_iter()
            .map(|f| DeployedBroker::start(f, &ns.addr())),
    );

    // Every key in the files is one the broker knows.
    for b in &brokers {
        let logs = format!("{}{}", b.process.stdout(), b.process.stderr());
        assert!(
            !logs.contains("ignoring unknown setting"),
            "deploy/{topology}/{}.toml has keys mqbroker does not know:\n{}",
            b.name,
            b.process.log_tails()
        );
    }

    // clusterList: every broker, masters id 0, slaves id 1, registered at brokerIP1.
    let want: BTreeSet<_> = brokers
        .iter()
        .map(|b| {
            (
                "DefaultCluster".to_owned(),
                b.broker_name.clone(),
                if b.master { "0" } else { "1" }.to_owned(),
                b.addr(),
            )
        })
        .collect();
    wait_for(&format!("{topology}: clusterList"), FORM_TIMEOUT, || {
        let rows = cluster_rows(&ns.addr());
        if rows == want {
            Ok(())
        } else {
            Err(format!("{rows:?}, want {want:?}"))
        }
    });

    // haStatus: roles and ids as configured; each slave follows its own master.
    let master_of = |pair: &str| {
        brokers
            .iter()
            .find(|b| b.master && b.broker_name == pair)
            .unwrap()
    };
    for b in &brokers {
        let status = ha_status(&ns.addr(), &b.addr());
        if b.master {
            assert_eq!(
                field(&status, "role"),
                master_role,
                "{}: {status:?}",
                b.name
            );
            assert_eq!(field(&status, "brokerId"), "0", "{}: {status:?}", b.name);
        } else {
            assert_eq!(field(&status, "role"), "SLAVE", "{}: {status:?}", b.name);
            assert_eq!(field(&status, "brokerId"), "1", "{}: {status:?}", b.name);
            let master_ha = master_of(&b.broker_name).ha_addr();
            wait_for(
                &format!("{topology}: {} connected to its master", b.name),
                FORM_TIMEOUT,
                || {
                    let s = ha_status(&ns.addr(), &b.addr());
                    if field(&s, "connected") == "true" && field(&s, "master") == master_ha {
                        Ok(())
                    } else {
                        Err(format!("{s:?}"))
                    }
                },
            );
        }
    }

    // A topic on every master; one message to each pair.
    let topic = format!("Deploy_{}", topology.replace('-', "_"));
    let created = assert_ok(
        &mqadmin(
            &ns.addr(),
            &[
                "updateTopic",
                "-c",
                "DefaultCluster",
                "-t",
                &topic,
                "-r",
                "4",
                "-w",
                "4",
            ],
        ),
        "updateTopic",
    );
    for pair in pairs {
        assert!(
            created.to_ascii_lowercase().contains(&format!(
                "create topic to {} success",
                master_of(pair).addr()
            )),
            "{created}"
        );
    }
    let mut bodies = Vec::new();
    for pair in pairs {
        let body = format!("{topology} via {pair} {}", nonce());
        let sent = assert_ok(
            &mqadmin(
                &ns.addr(),
                &["sendMessage", "-t", &topic, "-p", &body, "-b", pair],
            ),
            "sendMessage",
        );
        assert!(sent.contains("SEND_OK"), "{sent}");
        let master = master_of(pair);
        let slave = brokers
            .iter()
            .find(|b| !b.master && b.broker_name == *pair)
            .unwrap();
        if master_role == "SYNC_MASTER" {
            // The send returned only once the slave had acknowledged it.
            let m = ha_status(&ns.addr(), &master.addr());
            let s = ha_status(&ns.addr(), &slave.addr());
            let end: u64 = field(&m, "maxOffset").parse().unwrap();
            assert!(end > 0, "{m:?}");
            assert!(
                field(&m, "slaveAckOffset").parse::<u64>().unwrap() >= end,
                "{topology}: SYNC_MASTER answered before its slave acked: {m:?}"
            );
            assert!(
                field(&s, "maxOffset").parse::<u64>().unwrap() >= end,
                "{topology}: slave behind a synced send: {s:?} vs {m:?}"
            );
        }
        // Caught up: the slave holds exactly what the master has.
        wait_for(
            &format!("{topology}: {} caught up", slave.name),
            FORM_TIMEOUT,
            || {
                let m = ha_status(&ns.addr(), &master.addr());
                let s = ha_status(&ns.addr(), &slave.addr());
                let end = field(&m, "maxOffset");
                if !end.is_empty()
                    && end != "0"
                    && field(&s, "maxOffset") == end
                    && field(&m, "slaveAckOffset") == end
                {
                    Ok(())
                } else {
                    Err(format!("master {m:?} slave {s:?}"))
                }
            },
        );
        bodies.push(body);
    }

    // Every message is consumable.
    let consumed = assert_ok(
        &mqadmin(&ns.addr(), &["consumeMessage", "-t", &topic, "-c", "100"]),
        "consumeMessage",
    );
    for body in &bodies {
        assert!(
            consumed.contains(&format!("BODY: {body}")),
            "{body} not consumed:\n{consumed}"
        );
    }

    // SIGTERM stops every broker cleanly (slaves first, as an operator would).
    let (mut slaves, mut masters): (Vec<_>, Vec<_>) = brokers.into_iter().partition(|b| !b.master);
    for b in slaves.iter_mut().chain(masters.iter_mut()) {
        let status = b.process.stop().unwrap();
        assert!(
            status.success(),
            "{} exited {status} on SIGTERM:\n{}",
            b.name,
            b.process.log_tails()
        );
    }
    eprintln!("{topology}: checked in {:?}", started.elapsed());
}

#[test]
fn topology_1m_1s_sync() {
    check_topology("1m-1s-sync", &["broker-a"], "SYNC_MASTER");
}

#[test]
fn topology_1m_1s_async() {
    check_topology("1m-1s-async", &["broker-a"], "ASYNC_MASTER");
}

#[test]
fn topology_2m_2s_sync() {
    check_topology("2m-2s-sync", &["broker-a", "broker-b"], "SYNC_MASTER");
}

#[test]
fn topology_2m_2s_async() {
    check_topology("2m-2s-async", &["broker-a", "broker-b"], "ASYNC_MASTER");
}

/// Every broker config in a topology directory is covered by a test above.
#[test]
fn every_topology_is_tested() {
    let mut dirs: Vec<String> = fs::read_dir(deploy_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.is_dir() && !topology_files(&p.file_name().unwrap().to_string_lossy()).is_empty()
        })
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert_eq!(
        dirs,
        ["1m-1s-async", "1m-1s-sync", "2m-2s-async", "2m-2s-sync"],
        "a new topology directory needs a test in deploy.rs"
    );
}

/// `mqnamesrv -p` loads deploy/namesrv.toml and prints it (mqbroker has no `-p`; the
/// topology tests start it instead).
#[test]
fn namesrv_config_prints() {
    let out = Command::new(binary("nameserver", "mqnamesrv"))
        .arg("-c")
        .arg(deploy_dir().join("namesrv.toml"))
        .arg("-p")
        .env("RUST_LOG", "warn")
        .gated_output()
        .unwrap();
    let text = assert_ok(&out, "mqnamesrv -p");
    assert!(text.lines().any(|l| l == "listenPort=9876"), "{text}");
    assert!(
        !stderr(&out).contains("unknown"),
        "deploy/namesrv.toml has unknown keys: {}",
        stderr(&out)
    );
}

// ---------------------------------------------------------------- local-cluster.sh

/// `deploy/local-cluster.sh` in a temp dir on reserved ports, with the test's binaries.
struct LocalCluster {
    dir: TestDir,
    bin_dir: PathBuf,
    ns_port: u16,
    master_port: u16,
    slave_port: u16,
    grpc_port: u16,
    /// Held so no other test takes the ports; their listeners are closed.
    _ports: Vec<PortReservation>,
}

impl LocalCluster {
    fn new() -> Self {
        let bin_dir = binary("nameserver", "mqnamesrv")
            .parent()
            .unwrap()
            .to_owned();
        let _ = binary("broker", "mqbroker");
        let _ = binary("tools", "mqadmin");
        let _ = binary("proxy", "mqgrpc");
        let mut ports = vec![ports::reserve()];
        ports.extend(ports::reserve_consecutive(2));
        ports.extend(ports::reserve_consecutive(2));
        ports.push(ports::reserve());
        for p in &mut ports {
            p.release_listener();
        }
        LocalCluster {
            dir: TestDir::new("local-cluster"),
            bin_dir,
            ns_port: ports[0].port(),
            master_port: ports[1].port(),
            slave_port: ports[3].port(),
            grpc_port: ports[5].port(),
            _ports: ports,
        }
    }

    fn ns(&self) -> String {
        format!("127.0.0.1:{}", self.ns_port)
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("bash")
            .arg(deploy_dir().join("local-cluster.sh"))
            .args(args)
            .env("SLUICE_LOCAL_DIR", self.dir.path())
            .env("SLUICE_BIN_DIR", &self.bin_dir)
            .env("NAMESRV_PORT", self.ns_port.to_string())
            .env("MASTER_PORT", self.master_port.to_string())
            .env("SLAVE_PORT", self.slave_port.to_string())
            .env("GRPC_PORT", self.grpc_port.to_string())
            .env("STOP_TIMEOUT", "10")
            .env("RUST_LOG", "info")
            .env_remove("NAMESRV_ADDR")
            .stdin(Stdio::null())
            .gated_output()
            .unwrap()
    }

    fn pids(&self) -> BTreeMap<String, u32> {
        ["namesrv", "broker-a-master", "broker-a-slave"]
            .into_iter()
            .filter_map(|n| {
                let pid = fs::read_to_string(self.dir.path().join(format!("{n}.pid"))).ok()?;
                Some((n.to_owned(), pid.trim().parse().ok()?))
            })
            .collect()
    }

    fn role(&self, port: u16) -> BTreeMap<String, String> {
        ha_status(&self.ns(), &format!("127.0.0.1:{port}"))
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        // Whatever happened, nothing is left running.
        let out = self.run(&["down"]);
        if std::thread::panicking() {
            eprintln!("local-cluster.sh down:\n{}{}", stdout(&out), stderr(&out));
        }
    }
}

/// Whether `pid` runs (a zombie that nobody reaped yet does not).
fn alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // pid (comm) state ...
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

#[test]
fn local_cluster_script_up_status_drill_down() {
    let started = Instant::now();
    let lc = LocalCluster::new();
    let (master, slave) = (
        format!("127.0.0.1:{}", lc.master_port),
        format!("127.0.0.1:{}", lc.slave_port),
    );

    // up: three processes, a message sent and read back.
    let up = assert_ok(&lc.run(&["up"]), "local-cluster.sh up");
    assert!(up.contains("SEND_OK"), "{up}");
    assert!(up.contains("read back: hello from sluice"), "{up}");
    assert!(
        up.contains(&format!("endpoint=127.0.0.1:{}", lc.grpc_port)),
        "{up}"
    );
    assert!(up.contains("read back: hello over gRPC"), "{up}");
    assert!(
        up.contains(&format!("logs:   {}", lc.dir.path().display())),
        "{up}"
    );
    let pids = lc.pids();
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert!(pids.values().all(|p| alive(*p)), "{pids:?}");

    // up again: nothing new is started.
    let again = assert_ok(&lc.run(&["up"]), "second local-cluster.sh up");
    assert_eq!(again.matches("already running").count(), 3, "{again}");
    assert_eq!(lc.pids(), pids);

    // status: running, the pair in clusterList.
    let status = assert_ok(&lc.run(&["status"]), "local-cluster.sh status");
    for name in ["namesrv", "broker-a-master", "broker-a-slave"] {
        assert!(status.contains(&format!("{name}: running")), "{status}");
    }
    let rows = cluster_rows(&lc.ns());
    assert!(
        rows.contains(&(
            "DefaultCluster".into(),
            "broker-a".into(),
            "0".into(),
            master.clone()
        )) && rows.contains(&(
            "DefaultCluster".into(),
            "broker-a".into(),
            "1".into(),
            slave.clone()
        )),
        "{rows:?}"
    );

    // drill: the slave is master (SYNC_MASTER, as the pair was), the old master follows
    // it; the output shows the cluster before and after. The safe sequence: a producer
    // sending to the slave all along is refused while it is a slave, then acknowledged,
    // and never answered SLAVE_NOT_AVAILABLE (a slave promoted straight to SYNC_MASTER
    // answers that until the old master has rejoined).
    let answers = {
        let stop = std::sync::atomic::AtomicBool::new(false);
        thread::scope(|scope| {
            let sender = scope.spawn(|| {
                let client = SyncClient::new();
                let mut codes = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let r = client.invoke(&slave, send_request("LocalClusterTopic", b"drill"));
                    codes.push(r.code());
                    // 200 a second: enough to see an outage of a few ms, little load.
                    thread::sleep(Duration::from_millis(5));
                }
                codes
            });
            let drill = assert_ok(&lc.run(&["drill"]), "local-cluster.sh drill");
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            (drill, sender.join().unwrap())
        })
    };
    let (drill, codes) = answers;
    let acked = codes.iter().filter(|c| **c == 0).count();
    let not_available = codes.iter().filter(|c| **c == 11).count();
    eprintln!(
        "drill: {} sends to the promoted slave, {acked} acknowledged, {not_available} SLAVE_NOT_AVAILABLE",
        codes.len()
    );
    assert!(
        acked > 0,
        "the promoted slave acknowledged nothing: {codes:?}"
    );
    assert_eq!(not_available, 0, "producers saw an outage: {codes:?}");
    assert!(
        drill.contains("becomes SYNC_MASTER, as the pair was"),
        "{drill}"
    );
    assert!(
        drill.contains("== before") && drill.contains("== after"),
        "{drill}"
    );
    assert!(
        drill.contains(&format!("switchRole {slave} -> MASTER: OK")),
        "{drill}"
    );
    assert!(
        drill.contains(&format!("switchRole {master} -> SLAVE: OK")),
        "{drill}"
    );
    let new_master = lc.role(lc.slave_port);
    assert_eq!(field(&new_master, "role"), "SYNC_MASTER", "{new_master:?}");
    assert_eq!(field(&new_master, "brokerId"), "0", "{new_master:?}");
    let new_slave = lc.role(lc.master_port);
    assert_eq!(field(&new_slave, "role"), "SLAVE", "{new_slave:?}");
    assert_eq!(field(&new_slave, "connected"), "true", "{new_slave:?}");
    assert_eq!(
        field(&new_slave, "master"),
        format!("127.0.0.1:{}", lc.slave_port + 1)
    );
    let rows = cluster_rows(&lc.ns());
    assert!(
        rows.contains(&(
            "DefaultCluster".into(),
            "broker-a".into(),
            "0".into(),
            slave.clone()
        )),
        "{rows:?}"
    );

    // The old master, now a slave, crashes; `up` brings it back as the slave of the
    // current master instead of as a second master.
    let crashed = lc.pids()["broker-a-master"];
    let killed = Command::new("kill")
        .args(["-KILL", &crashed.to_string()])
        .gated_status()
        .unwrap();
    assert!(killed.success());
    wait_for("the crashed broker gone", FORM_TIMEOUT, || {
        if alive(crashed) {
            Err(format!("pid {crashed} alive"))
        } else {
            Ok(())
        }
    });
    let rejoin = assert_ok(&lc.run(&["up"]), "local-cluster.sh up after a crash");
    assert!(
        rejoin.contains("broker-a-slave is the master now: broker-a-master joins as its slave"),
        "{rejoin}"
    );
    let rejoined = lc.role(lc.master_port);
    assert_eq!(field(&rejoined, "role"), "SLAVE", "{rejoined:?}");
    assert_eq!(field(&rejoined, "connected"), "true", "{rejoined:?}");
    assert_eq!(field(&lc.role(lc.slave_port), "role"), "SYNC_MASTER");

    // drill --back: the original master takes over again (as SYNC_MASTER, its configured
    // role, though it was restarted as a slave), then hands back.
    let back = assert_ok(
        &lc.run(&["drill", "--back"]),
        "local-cluster.sh drill --back",
    );
    let first = back
        .find(&format!("switchRole {master} -> MASTER: OK"))
        .unwrap_or_else(|| panic!("{back}"));
    let second = back
        .find(&format!("switchRole {slave} -> MASTER: OK"))
        .unwrap_or_else(|| panic!("{back}"));
    assert!(first < second, "{back}");
    assert!(back.contains("== after switching back"), "{back}");
    let promoted = back
        .lines()
        .any(|l| l.starts_with(&format!("broker-a-master  {master}")) && l.contains("SYNC_MASTER"));
    assert!(promoted, "{back}");
    assert_eq!(field(&lc.role(lc.slave_port), "role"), "SYNC_MASTER");
    assert_eq!(field(&lc.role(lc.master_port), "role"), "SLAVE");

    // `mqadmin switchRole --help` tells an operator the same.
    let help = Command::new(lc.bin_dir.join("mqadmin"))
        .args(["switchRole", "--help"])
        .gated_output()
        .unwrap();
    let help = assert_ok(&help, "mqadmin switchRole --help");
    for said in [
        "answers every send SLAVE_NOT_AVAILABLE",
        "switchRole -b SLAVE_ADDR -r MASTER -t ASYNC_MASTER",
        "switchRole -b SLAVE_ADDR -r MASTER -t SYNC_MASTER",
    ] {
        assert!(
            help.contains(said),
            "switchRole --help does not say '{said}':\n{help}"
        );
    }

    // down: everything stopped, ports free, status says so.
    let down = assert_ok(&lc.run(&["down"]), "local-cluster.sh down");
    assert_eq!(down.matches(" stopped").count(), 3, "{down}");
    for (name, pid) in &pids {
        assert!(!alive(*pid), "{name} (pid {pid}) still running");
    }
    for port in [lc.ns_port, lc.master_port, lc.slave_port] {
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} still open"
        );
    }
    let after = lc.run(&["status"]);
    assert_eq!(after.status.code(), Some(3), "{}", stdout(&after));
    assert!(stdout(&after).contains("namesrv: stopped"));
    // The logs say the stops were clean.
    for name in ["broker-a-master", "broker-a-slave"] {
        let log = fs::read_to_string(lc.dir.path().join(format!("{name}.log"))).unwrap();
        assert!(log.contains("broker stopped"), "{name}:\n{log}");
    }
    eprintln!("local-cluster.sh checked in {:?}", started.elapsed());
}
