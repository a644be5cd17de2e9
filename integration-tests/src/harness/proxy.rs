//! Apache RocketMQ's own proxy (`org.apache.rocketmq:rocketmq-proxy` from Maven Central, resolved
//! by `java-proxy/build.sh`) in **cluster mode** in front of a name server and its brokers —
//! sluice's or Apache's: what the official gRPC SDKs talk to (tests/grpc_proxy.rs).
//!
//! Its `rmq-proxy.json` names the cluster (`rocketMQClusterName`), the name server, the gRPC and
//! remoting ports (two reserved loopback ports) and `localServeAddr` / `remotingAccessAddr`
//! 127.0.0.1 (otherwise the proxy takes the machine's first non-loopback address as its own).
//! Neither listener's address can be configured in 5.3.3 (`NettyServerBuilder.forPort` and the
//! remoting server's default `NettyServerConfig`): both listen on the wildcard address, and the
//! tests only ever connect to 127.0.0.1. Logs (`proxy.log` and the rest) go to
//! `<dir>/home/logs/rocketmqlogs/`. Killed when dropped.
//!
//! In cluster mode the proxy asks the name server for the route of the cluster's own name (the
//! topic a broker registers with `clusterTopicEnable`) and creates `DefaultHeartBeatSyncerTopic`
//! on the cluster at start.

#![allow(
    clippy::unwrap_used,
    reason = "test harness: a failed step should fail the test"
)]

use crate::spawn::GatedCommand;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::tools::{self, Tool, java_binary};
use super::{ChildProcess, ProcessSpec, Readiness, TestDir};
use crate::java::cache_dir;
use crate::ports::{self, assert_loopback};

/// How long the proxy may take to start (a cold JVM on a busy 2-core machine: ~10 s idle).
const PROXY_READY: Duration = Duration::from_secs(120);

/// A running Apache RocketMQ proxy in cluster mode.
#[derive(Debug)]
pub struct ApacheProxy {
    /// The JVM.
    pub process: ChildProcess,
    grpc_port: u16,
    remoting_port: u16,
}

impl ApacheProxy {
    /// Starts proxy `version` (from Maven Central) in front of `namesrv`'s cluster `cluster`, with the
    /// `rmq-proxy.json` keys of `extra` on top of (and replacing) ours; returns once its gRPC
    /// port accepts connections.
    ///
    /// # Panics
    /// When it cannot be resolved or does not start.
    #[must_use]
    pub fn start(
        version: &str,
        namesrv: &str,
        cluster: &str,
        extra: &[(&str, serde_json::Value)],
    ) -> Self {
        assert_loopback(namesrv);
        let classpath = resolve(version).unwrap_or_else(|e| panic!("{e}"));
        let dir = TestDir::new("apache-proxy");
        let ports = vec![ports::reserve(), ports::reserve()];
        let (grpc_port, remoting_port) = (ports[0].port(), ports[1].port());
        let mut conf = serde_json::json!({
            "rocketMQClusterName": cluster,
            "namesrvAddr": namesrv,
            "grpcServerPort": grpc_port,
            "remotingListenPort": remoting_port,
            "localServeAddr": "127.0.0.1",
            "remotingAccessAddr": "127.0.0.1",
            "proxyName": "sluice-it-proxy",
            "enablePrintJstack": false,
            // SIGTERM: the gRPC server waits this long for calls in flight (30 s by default).
            "grpcShutdownTimeSeconds": 1,
        });
        for (key, value) in extra {
            conf[*key] = value.clone();
        }
        let conf_path = dir.path().join("rmq-proxy.json");
        fs::write(&conf_path, serde_json::to_string_pretty(&conf).unwrap()).unwrap();
        let home = dir.path().join("home");
        fs::create_dir_all(&home).unwrap();
        let mut spec = ProcessSpec::new("apache-proxy", java_binary())
            // ROCKETMQ_HOME: where it would look for conf/rmq-proxy.json had -pc not been given.
            .env("ROCKETMQ_HOME", dir.path())
            .env_remove("NAMESRV_ADDR")
            .readiness(Readiness::Connect(ports[0].addr()));
        spec.ready_timeout = PROXY_READY;
        // Its shutdown hook takes 10 s and more; nothing of it is needed once a test is done.
        spec.stop_grace = Duration::from_secs(3);
        spec = spec
            .args(["-Xms256m", "-Xmx512m", "-XX:+UseSerialGC"])
            .arg("-Djava.net.preferIPv4Stack=true")
            .arg("-Drocketmq.namesrv.domain=127.0.0.1:9")
            .arg(format!("-Duser.home={}", home.display()))
            .arg("-cp")
            .arg(&classpath)
            .arg("org.apache.rocketmq.proxy.ProxyStartup")
            .args(["-pm", "cluster", "-pc"])
            .arg(&conf_path);
        ApacheProxy {
            process: ChildProcess::start(spec, dir, ports),
            grpc_port,
            remoting_port,
        }
    }

    /// `127.0.0.1:grpcServerPort`: the gRPC SDKs' endpoint.
    #[must_use]
    pub fn grpc_endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.grpc_port)
    }

    /// `127.0.0.1:remotingListenPort`: the remoting protocol side of the proxy.
    #[must_use]
    pub fn remoting_addr(&self) -> String {
        format!("127.0.0.1:{}", self.remoting_port)
    }

    /// `<dir>/home/logs/rocketmqlogs`.
    #[must_use]
    pub fn log_dir(&self) -> PathBuf {
        self.process.dir().join("home/logs/rocketmqlogs")
    }

    /// The whole `proxy.log` (empty when missing).
    #[must_use]
    pub fn log(&self) -> String {
        fs::read_to_string(self.log_dir().join("proxy.log")).unwrap_or_default()
    }
}

/// Resolves the proxy `version` with `java-proxy/build.sh` into `<java cache>/apache-proxy`,
/// once per version and process; its class path.
///
/// # Errors
/// Java or Maven is missing, or `build.sh` fails (no network and no cached jars).
pub fn resolve(version: &str) -> Result<String, String> {
    static RESOLVED: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());
    let mut resolved = RESOLVED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(cp) = resolved.get(version) {
        return Ok(cp.clone());
    }
    if let Some(absent) = tools::missing(&[Tool::Java, Tool::Maven]) {
        return Err(format!("Apache RocketMQ's proxy needs {absent}"));
    }
    let out_dir = cache_dir().join("apache-proxy");
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("java-proxy")
        .join("build.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(version)
        .arg(&out_dir)
        .gated_output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} {version} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let cp_file = out_dir.join(version).join("classpath.txt");
    let classpath = fs::read_to_string(&cp_file)
        .map_err(|e| format!("{}: {e}", cp_file.display()))?
        .trim()
        .to_owned();
    if !classpath.contains("rocketmq-proxy") {
        return Err(format!("{} holds no rocketmq-proxy jar", cp_file.display()));
    }
    resolved.insert(version.to_owned(), classpath.clone());
    Ok(classpath)
}
