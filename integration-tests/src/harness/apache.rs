//! Apache RocketMQ's own broker (`org.apache.rocketmq:rocketmq-broker` from Maven Central,
//! resolved by [`apache_dist`]) as a child process registered with our name server: the
//! other side of the interop tests, and the reference a 5.x case is run against.

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

/// An Apache RocketMQ broker of pair [`HA_BROKER_NAME`](super::HA_BROKER_NAME)
/// registered with our name server: `brokerIP1`/`brokerIP2` 127.0.0.1, 16 MiB CommitLog files (as
/// ours), no ACL, its store and `user.home` (its logs: `home/logs/rocketmqlogs/`) in a temp dir.
/// Ports as [`BrokerProcess`]'s: `listenPort - 2` (its VIP channel) to `listenPort + 1` (HA).
#[derive(Debug)]
pub struct ApacheBroker {
    /// The JVM.
    pub process: ChildProcess,
    port: u16,
}

impl ApacheBroker {
    pub fn start(
        version: &str,
        namesrv: &str,
        role: &str,
        id: i64,
        extra: &[(&str, &str)],
    ) -> Self {
        let dist = apache_dist(version).unwrap_or_else(|e| panic!("{e}"));
        let (classpath, rocketmq_home) = (dist.classpath, dist.home);
        let dir = TestDir::new(&format!("apache-{version}-{}", role.to_lowercase()));
        let ports = ports::reserve_consecutive(4);
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
            // 5.x: no timer wheel files (hundreds of MB) in a test.
            ("timerWheelEnable", "false".to_owned()),
        ];
        conf.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
        let text: String = conf.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        let conf_path = dir.path().join("broker.conf");
        fs::write(&conf_path, text).unwrap();
        let home = dir.path().join("home");
        fs::create_dir_all(&home).unwrap();
        let mut spec = ProcessSpec::new(
            &format!("apache-broker-{}", role.to_lowercase()),
            java_binary(),
        )
        .env("ROCKETMQ_HOME", &rocketmq_home)
        .readiness(Readiness::Connect(ports[2].addr()));
        spec.ready_timeout = APACHE_READY;
        for flag in BROKER_JVM_FLAGS {
            spec = spec.arg(flag);
        }
        spec = spec
            .arg(format!("-Duser.home={}", home.display()))
            .arg("-Drocketmq.namesrv.domain=127.0.0.1:9")
            .arg("-cp")
            .arg(&classpath)
            .arg("org.apache.rocketmq.broker.BrokerStartup")
            .arg("-c")
            .arg(&conf_path);
        let broker = ApacheBroker {
            process: ChildProcess::start(spec, dir, ports),
            port,
        };
        let addr = broker.addr();
        assert!(
            wait_until(APACHE_READY, || registered_ids(namesrv, &addr)
                .contains(&id)),
            "Apache broker {addr} did not register as {id}:\n{}",
            broker.log_tail()
        );
        broker
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
