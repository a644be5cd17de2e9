//! Apache RocketMQ's own broker (`org.apache.rocketmq:rocketmq-broker` from Maven Central,
//! resolved by [`apache_dist`]) as a child process registered with our name server: the
//! other side of the interop tests, and the reference a 5.x case is run against. It can be
//! stopped gracefully or killed and started again on the same store, ports and logs
//! ([`restart`](ApacheBroker::restart), [`kill`](ApacheBroker::kill)), as
//! [`BrokerProcess`](super::BrokerProcess) can.

#![allow(
    clippy::unwrap_used,
    reason = "test harness: a failed step should fail the test"
)]

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use super::tools::java_binary;
use super::{ChildProcess, ProcessSpec, Readiness, TestDir, registered_ids, wait_until};
use crate::java::apache_dist;
use crate::ports;

/// JVM flags of an Apache broker: a small heap, and what JDK 17 needs opened for 4.9.x's store
/// (without `jdk.internal.ref` / `sun.nio.ch` it cannot unmap its files and the next start fails
/// to load them). 5.x runs with the same flags.
const BROKER_JVM_FLAGS: &[&str] = &[
    "-Xms256m",
    "-Xmx256m",
    "-XX:MaxDirectMemorySize=256m",
    "-XX:+UseSerialGC",
    "-Djava.net.preferIPv4Stack=true",
    "--add-opens",
    "java.base/java.nio=ALL-UNNAMED",
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
];

/// How long an Apache broker may take to start (a cold JVM on a busy 2-core machine).
const APACHE_READY: Duration = Duration::from_secs(90);
/// How long its graceful shutdown (SIGTERM: the JVM's shutdown hook stops every service and
/// flushes the store) may take before it is killed.
const APACHE_STOP_GRACE: Duration = Duration::from_secs(60);

/// An Apache RocketMQ broker of pair [`HA_BROKER_NAME`](super::HA_BROKER_NAME)
/// registered with our name server: `brokerIP1`/`brokerIP2` 127.0.0.1, 16 MiB CommitLog files (as
/// ours), no ACL, its store and `user.home` (its logs: `home/logs/rocketmqlogs/`) in a temp dir.
/// Ports as [`BrokerProcess`]'s: `listenPort - 2` (its VIP channel) to `listenPort + 1` (HA).
///
/// 5.x's timer wheel is off (`timerWheelEnable=false`: its files are hundreds of MB) unless
/// `extra` turns it on; any key of `extra` replaces the default of the same name.
#[derive(Debug)]
pub struct ApacheBroker {
    /// The JVM.
    pub process: ChildProcess,
    port: u16,
    id: i64,
    namesrv: String,
    /// The gRPC port of the proxy it runs inside (local mode: [`ApacheBroker::start_with_grpc`]).
    grpc_port: Option<u16>,
}

impl ApacheBroker {
    /// Starts Apache RocketMQ's broker `version` as `brokerRole=role`, `brokerId=id`,
    /// registered with `namesrv`, with the settings of `extra` on top of the defaults.
    ///
    /// # Panics
    /// When it cannot be resolved, does not start, or does not register.
    pub fn start(
        version: &str,
        namesrv: &str,
        role: &str,
        id: i64,
        extra: &[(&str, &str)],
    ) -> Self {
        Self::start_in_home(version, namesrv, role, id, extra, &[])
    }

    /// [`start`](Self::start) with a `ROCKETMQ_HOME` of its own: the distribution's `conf/`
    /// plus `conf_files` (relative path, content), e.g. 4.9's `conf/plain_acl.yml`.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub fn start_in_home(
        version: &str,
        namesrv: &str,
        role: &str,
        id: i64,
        extra: &[(&str, &str)],
        conf_files: &[(&str, &str)],
    ) -> Self {
        Self::launch(version, namesrv, role, id, extra, conf_files, &[], false)
    }

    /// [`start`](Self::start) with more JVM flags after the defaults (a later `-Xmx` or
    /// `-XX:MaxDirectMemorySize` wins): a broker serving POP through the proxy needs more than
    /// 256 MB of direct memory (5.3.3 gives each pull thread a 4 MB direct buffer, and runs out:
    /// `OutOfMemoryError: Cannot reserve 4259840 bytes of direct buffer memory`).
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub fn start_with_jvm_flags(
        version: &str,
        namesrv: &str,
        role: &str,
        id: i64,
        extra: &[(&str, &str)],
        jvm_flags: &[&str],
    ) -> Self {
        Self::launch(version, namesrv, role, id, extra, &[], jvm_flags, false)
    }

    /// An ASYNC_MASTER `brokerId=0` inside Apache's proxy `version` in local mode
    /// (`ProxyStartup -pm local -bc broker.conf -pc rmq-proxy.json`: what `mqbroker
    /// --enable-proxy` runs), serving gRPC on a port of its own ([`grpc_endpoint`]), with the
    /// timer wheel on (POP's revive needs it) and 1 GiB of direct memory.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    ///
    /// [`grpc_endpoint`]: Self::grpc_endpoint
    #[must_use]
    pub fn start_with_grpc(version: &str, namesrv: &str, extra: &[(&str, &str)]) -> Self {
        // POP needs the timer wheel (revive) and more direct memory than the default 256 MB
        // (see integration-tests/grpc/README.md).
        let mut all = vec![("timerWheelEnable", "true")];
        all.extend_from_slice(extra);
        let broker = Self::launch(
            version,
            namesrv,
            "ASYNC_MASTER",
            0,
            &all,
            &[],
            &["-XX:MaxDirectMemorySize=1g"],
            true,
        );
        let grpc = broker.grpc_endpoint();
        let serving = || {
            grpc.parse().is_ok_and(|addr| {
                std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
            })
        };
        assert!(
            wait_until(APACHE_READY, serving),
            "Apache's proxy in local mode never served gRPC on {grpc}:\n{}",
            broker.log_tail()
        );
        broker
    }

    /// `127.0.0.1:grpcServerPort` of the proxy it runs inside.
    ///
    /// # Panics
    /// When it was not started with [`start_with_grpc`](Self::start_with_grpc).
    #[must_use]
    pub fn grpc_endpoint(&self) -> String {
        let port = self
            .grpc_port
            .expect("started with the proxy (start_with_grpc)");
        format!("127.0.0.1:{port}")
    }

    #[allow(clippy::too_many_arguments, reason = "one per way the tests start it")]
    fn launch(
        version: &str,
        namesrv: &str,
        role: &str,
        id: i64,
        extra: &[(&str, &str)],
        conf_files: &[(&str, &str)],
        jvm_flags: &[&str],
        with_proxy: bool,
    ) -> Self {
        let dist = apache_dist(version).unwrap_or_else(|e| panic!("{e}"));
        let (mut classpath, mut rocketmq_home) = (dist.classpath, dist.home);
        let dir = TestDir::new(&format!("apache-{version}-{}", role.to_lowercase()));
        let mut ports = ports::reserve_consecutive(4);
        let port = ports[2].port();
        let store = dir.path().join("store");
        let mut conf = vec![
            ("brokerClusterName", "DefaultCluster".to_owned()),
            ("brokerName", "broker-a".to_owned()),
            ("brokerId", id.to_string()),
            ("brokerRole", role.to_owned()),
            ("namesrvAddr", namesrv.to_owned()),
            ("brokerIP1", "127.0.0.1".to_owned()),
            ("brokerIP2", "127.0.0.1".to_owned()),
            ("listenPort", port.to_string()),
            ("storePathRootDir", store.display().to_string()),
            (
                "storePathCommitLog",
                store.join("commitlog").display().to_string(),
            ),
            ("mappedFileSizeCommitLog", (16 * 1024 * 1024).to_string()),
            ("flushDiskType", "ASYNC_FLUSH".to_owned()),
            ("autoCreateTopicEnable", "true".to_owned()),
            // 5.x: no timer wheel files (hundreds of MB) in a test, unless it asks for them.
            ("timerWheelEnable", "false".to_owned()),
        ];
        for (key, value) in extra {
            conf.retain(|(k, _)| k != key);
            conf.push((*key, (*value).to_owned()));
        }
        let text: String = conf.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        let conf_path = dir.path().join("broker.conf");
        fs::write(&conf_path, text).unwrap();
        let home = dir.path().join("home");
        fs::create_dir_all(&home).unwrap();
        if !conf_files.is_empty() {
            let own = dir.path().join("rocketmq-home");
            fs::create_dir_all(own.join("conf")).unwrap();
            if let Ok(entries) = fs::read_dir(rocketmq_home.join("conf")) {
                for e in entries.flatten().filter(|e| e.path().is_file()) {
                    fs::copy(e.path(), own.join("conf").join(e.file_name())).unwrap();
                }
            }
            for (path, content) in conf_files {
                let target = own.join(path);
                fs::create_dir_all(target.parent().unwrap()).unwrap();
                fs::write(target, content).unwrap();
            }
            rocketmq_home = own;
        }
        let mut spec = ProcessSpec::new(
            &format!("apache-broker-{}", role.to_lowercase()),
            java_binary(),
        )
        .env("ROCKETMQ_HOME", &rocketmq_home)
        .readiness(Readiness::Connect(ports[2].addr()));
        spec.ready_timeout = APACHE_READY;
        spec.stop_grace = APACHE_STOP_GRACE;
        for flag in BROKER_JVM_FLAGS.iter().chain(jvm_flags) {
            spec = spec.arg(flag);
        }
        let mut grpc_port = None;
        let main = if with_proxy {
            // The proxy's class path holds the broker's; its ports are two more.
            classpath = super::proxy::resolve(version).unwrap_or_else(|e| panic!("{e}"));
            let (grpc, remoting) = (ports::reserve(), ports::reserve());
            let proxy_conf = serde_json::json!({
                "rocketMQClusterName": "DefaultCluster",
                "namesrvAddr": namesrv,
                "grpcServerPort": grpc.port(),
                "remotingListenPort": remoting.port(),
                "localServeAddr": "127.0.0.1",
                "remotingAccessAddr": "127.0.0.1",
                "proxyName": "sluice-it-local-proxy",
                "enablePrintJstack": false,
                "grpcShutdownTimeSeconds": 1,
            });
            let proxy_conf_path = dir.path().join("rmq-proxy.json");
            fs::write(&proxy_conf_path, proxy_conf.to_string()).unwrap();
            grpc_port = Some(grpc.port());
            ports.extend([grpc, remoting]);
            vec![
                "org.apache.rocketmq.proxy.ProxyStartup".to_owned(),
                "-pm".to_owned(),
                "local".to_owned(),
                "-bc".to_owned(),
                conf_path.display().to_string(),
                "-pc".to_owned(),
                proxy_conf_path.display().to_string(),
            ]
        } else {
            vec![
                "org.apache.rocketmq.broker.BrokerStartup".to_owned(),
                "-c".to_owned(),
                conf_path.display().to_string(),
            ]
        };
        spec = spec
            .arg(format!("-Duser.home={}", home.display()))
            .arg("-Drocketmq.namesrv.domain=127.0.0.1:9")
            .arg("-cp")
            .arg(&classpath)
            .args(&main);
        let broker = ApacheBroker {
            process: ChildProcess::start(spec, dir, ports),
            port,
            id,
            namesrv: namesrv.to_owned(),
            grpc_port,
        };
        broker.wait_registered();
        broker
    }

    fn wait_registered(&self) {
        let addr = self.addr();
        assert!(
            wait_until(APACHE_READY, || registered_ids(&self.namesrv, &addr)
                .contains(&self.id)),
            "Apache broker {addr} did not register as {}:\n{}",
            self.id,
            self.log_tail()
        );
    }

    /// Stops it gracefully (SIGTERM; its shutdown hook flushes the store) and starts it again
    /// on the same store, ports and logs; or, after [`kill`](Self::kill), just starts it again.
    /// Returns once it is registered again.
    ///
    /// # Panics
    /// When it had to be killed (it did not stop within its grace period), or does not come
    /// back.
    pub fn restart(&mut self) {
        if self.process.is_running() {
            let status = self.process.stop();
            assert!(
                status.is_some_and(|s| s.code().is_some()),
                "Apache broker {} did not stop on SIGTERM ({status:?}):\n{}",
                self.addr(),
                self.log_tail()
            );
        }
        self.process.restart();
        self.wait_registered();
    }

    /// SIGKILL, at once: [`restart`](Self::restart) starts it again on the same store.
    pub fn kill(&mut self) {
        self.process.kill();
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn ha_addr(&self) -> String {
        format!("127.0.0.1:{}", self.port + 1)
    }

    pub fn store_dir(&self) -> PathBuf {
        self.process.dir().join("store")
    }

    pub fn log_tail(&self) -> String {
        let log = self.process.dir().join("home/logs/rocketmqlogs/broker.log");
        let text = fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        format!(
            "--- {} (last 40 lines)\n{}",
            log.display(),
            lines[lines.len().saturating_sub(40)..].join("\n")
        )
    }
}

/// Apache RocketMQ's own name server (`org.apache.rocketmq.namesrv.NamesrvStartup`, resolved with
/// the broker by [`apache_dist`]): `listenPort` a reserved loopback port, `bindAddress`
/// 127.0.0.1, `user.home` (its logs) and KV config in a temp dir. For tests whose reference run is
/// all Apache (the proxy tests). Killed when dropped.
#[derive(Debug)]
pub struct ApacheNamesrv {
    /// The JVM.
    pub process: ChildProcess,
    port: u16,
}

impl ApacheNamesrv {
    /// Starts Apache's name server `version`; returns once it accepts connections.
    ///
    /// # Panics
    /// When it cannot be resolved or does not start.
    #[must_use]
    pub fn start(version: &str) -> Self {
        let dist = apache_dist(version).unwrap_or_else(|e| panic!("{e}"));
        let dir = TestDir::new(&format!("apache-{version}-namesrv"));
        let ports = vec![ports::reserve()];
        let port = ports[0].port();
        let home = dir.path().join("home");
        fs::create_dir_all(&home).unwrap();
        let conf = format!(
            "listenPort={port}\nbindAddress=127.0.0.1\nkvConfigPath={}\n",
            dir.path().join("kvConfig.json").display()
        );
        let conf_path = dir.path().join("namesrv.conf");
        fs::write(&conf_path, conf).unwrap();
        let mut spec = ProcessSpec::new(&format!("apache-namesrv-{version}"), java_binary())
            .env("ROCKETMQ_HOME", &dist.home)
            .readiness(Readiness::Connect(ports[0].addr()));
        spec.ready_timeout = APACHE_READY;
        spec = spec
            .args(["-Xms128m", "-Xmx128m", "-XX:+UseSerialGC"])
            .arg("-Djava.net.preferIPv4Stack=true")
            .arg(format!("-Duser.home={}", home.display()))
            .arg("-cp")
            .arg(&dist.classpath)
            .arg("org.apache.rocketmq.namesrv.NamesrvStartup")
            .arg("-c")
            .arg(&conf_path);
        ApacheNamesrv {
            process: ChildProcess::start(spec, dir, ports),
            port,
        }
    }

    /// `127.0.0.1:port`.
    #[must_use]
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}
