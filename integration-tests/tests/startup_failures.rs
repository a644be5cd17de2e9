//! A process that cannot start a part its role needs exits non-zero within a second with
//! one line naming the cause, and never says "boot success" (nor logs its listening line)
//! before: `mqbroker` with its HA port, main port or VIP port taken, its store locked by
//! another broker, its store directory unusable, a config file that cannot be read or
//! parsed, an unknown role or flush type; `mqnamesrv` with its port taken or a config it
//! cannot use. And the gRPC endpoint inside `mqbroker`: off by default, on with
//! `-o enableGrpcProxy=true` or `--enable-proxy` (a message sent through it with `mqgrpc`),
//! and a taken `grpcServerPort` refused like the other ports, as is the endpoint of a broker
//! whose only ACL is 4.9's plain one (it would serve gRPC unchecked). The metrics endpoint:
//! an exporter sluice lacks (`OTLP_GRPC`) and a taken `metricsPromExporterPort` refused too.

#![allow(clippy::unwrap_used, reason = "test: a failed step should fail loudly")]

use integration_tests::spawn::GatedCommand;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use integration_tests::harness::{
    BrokerProcess, ChildProcess, Exited, NamesrvProcess, ProcessSpec, TestDir, binary,
    update_topic, workspace_root,
};
use integration_tests::ports;

/// The bound of the issue: out within a second of the spawn (a debug build on a busy
/// 2-core machine gets some slack on top for the process start itself).
const EXIT_WITHIN: Duration = Duration::from_millis(1500);
/// How long a start that does not fail is given before it is killed.
const GIVE_UP: Duration = Duration::from_secs(10);

/// A broker spec on `port` (VIP port − 2, HA port + 1) with its store under `dir`,
/// from `deploy/broker.toml`.
fn broker_spec(dir: &Path, port: u16) -> ProcessSpec {
    broker_spec_from(
        &workspace_root().join("deploy").join("broker.toml"),
        dir,
        port,
    )
}

/// [`broker_spec`] from another config file.
fn broker_spec_from(config: &Path, dir: &Path, port: u16) -> ProcessSpec {
    ProcessSpec::new("mqbroker", binary("broker", "mqbroker")).loopback_broker(
        config,
        &dir.join("store"),
        port,
    )
}

/// Asserts the start failed as it must: non-zero, quickly, no readiness said, exactly one
/// line on stderr, and that line (the only one in either stream) mentions every `needle`.
fn assert_refused(what: &str, exited: &Exited, needles: &[&str]) {
    let all = format!("{}{}", exited.stdout, exited.stderr);
    let status = exited
        .status
        .unwrap_or_else(|| panic!("{what}: still running after {GIVE_UP:?}:\n{all}"));
    assert!(!status.success(), "{what}: exited {status}:\n{all}");
    assert!(
        exited.elapsed <= EXIT_WITHIN,
        "{what}: took {:?} to exit:\n{all}",
        exited.elapsed
    );
    for said in ["boot success", "listening on"] {
        assert!(!all.contains(said), "{what}: said '{said}':\n{all}");
    }
    let lines: Vec<&str> = exited.stderr.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "{what}: stderr is not one line:\n{all}");
    for needle in needles {
        assert!(
            lines[0].contains(needle),
            "{what}: '{}' does not name '{needle}'",
            lines[0]
        );
        let mentions = all.lines().filter(|l| l.contains(needle)).count();
        assert_eq!(
            mentions, 1,
            "{what}: '{needle}' printed {mentions} times:\n{all}"
        );
    }
}

fn free_run_of_ports() -> (Vec<ports::PortReservation>, u16) {
    let mut run = ports::reserve_consecutive(4);
    for p in &mut run {
        p.release_listener();
    }
    let port = run[2].port();
    (run, port)
}

#[test]
fn mqbroker_refuses_to_start_without_a_port_its_role_needs() {
    for (what, taken, key, role) in [
        (
            "HA port taken (SYNC_MASTER)",
            1i32,
            "haListenPort",
            "SYNC_MASTER",
        ),
        (
            "HA port taken (ASYNC_MASTER)",
            1,
            "haListenPort",
            "ASYNC_MASTER",
        ),
        ("main port taken", 0, "listenPort", "ASYNC_MASTER"),
        ("VIP port taken", -2, "fastListenPort", "ASYNC_MASTER"),
    ] {
        let dir = TestDir::new("start-port");
        let (_run, port) = free_run_of_ports();
        let busy = u16::try_from(i32::from(port) + taken).unwrap();
        let holder = TcpListener::bind(("127.0.0.1", busy)).unwrap();
        let exited = broker_spec(dir.path(), port)
            .setting("brokerRole", role)
            .run_to_exit(dir.path(), GIVE_UP);
        drop(holder);
        assert_refused(what, &exited, &[&format!("127.0.0.1:{busy}"), key]);
    }
}

#[test]
fn mqbroker_refuses_to_start_without_its_grpc_port() {
    let dir = TestDir::new("start-grpc-port");
    let (_run, port) = free_run_of_ports();
    let mut grpc = ports::reserve();
    grpc.release_listener();
    let holder = TcpListener::bind(("127.0.0.1", grpc.port())).unwrap();
    let exited = broker_spec(dir.path(), port)
        .arg("--enable-proxy")
        .setting("grpcServerPort", grpc.port())
        .run_to_exit(dir.path(), GIVE_UP);
    drop(holder);
    assert_refused(
        "gRPC port taken",
        &exited,
        &[&format!("127.0.0.1:{}", grpc.port()), "grpcServerPort"],
    );
}

#[test]
fn mqbroker_refuses_metrics_it_cannot_serve() {
    let dir = TestDir::new("start-metrics");
    let (_run, port) = free_run_of_ports();
    let exited = broker_spec(dir.path(), port)
        .setting("metricsExporterType", "OTLP_GRPC")
        .run_to_exit(dir.path(), GIVE_UP);
    assert_refused(
        "OTLP exporter",
        &exited,
        &["metricsExporterType=OTLP_GRPC is not supported"],
    );

    let dir = TestDir::new("start-metrics-port");
    let (_run, port) = free_run_of_ports();
    let mut metrics = ports::reserve();
    metrics.release_listener();
    let holder = TcpListener::bind(("127.0.0.1", metrics.port())).unwrap();
    let exited = broker_spec(dir.path(), port)
        .setting("metricsExporterType", "PROM")
        .setting("metricsPromExporterHost", "127.0.0.1")
        .setting("metricsPromExporterPort", metrics.port())
        .run_to_exit(dir.path(), GIVE_UP);
    drop(holder);
    assert_refused(
        "metrics port taken",
        &exited,
        &[
            &format!("127.0.0.1:{}", metrics.port()),
            "metricsPromExporterPort",
        ],
    );
}

#[test]
fn mqbroker_refuses_a_grpc_endpoint_the_plain_acl_would_not_cover() {
    let dir = TestDir::new("start-grpc-plain-acl");
    let (_run, port) = free_run_of_ports();
    let grpc = ports::reserve();
    let exited = broker_spec(dir.path(), port)
        .arg("--enable-proxy")
        .setting("grpcServerPort", grpc.port())
        .setting("aclEnable", "true")
        .run_to_exit(dir.path(), GIVE_UP);
    assert_refused(
        "gRPC endpoint with only the 4.9 plain ACL",
        &exited,
        &["enableGrpcProxy with aclEnable", "authenticationEnabled"],
    );
}

/// Whether something accepts connections at `port` on loopback.
fn listening(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(1),
    )
    .is_ok()
}

/// `mqgrpc sendMessage` through the endpoint at `port`: its stdout, or why it failed.
fn grpc_send(port: u16, topic: &str) -> Result<String, String> {
    let out = std::process::Command::new(binary("proxy", "mqgrpc"))
        .args([
            "sendMessage",
            "-e",
            &format!("127.0.0.1:{port}"),
            "-t",
            topic,
        ])
        .args(["-p", "through gRPC"])
        .gated_output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

#[test]
fn the_grpc_endpoint_is_off_by_default_and_on_when_asked() {
    let ns = NamesrvProcess::start();
    for (what, args, setting) in [
        ("default", &[][..], None),
        ("-o enableGrpcProxy=true", &[][..], Some("true")),
        ("--enable-proxy", &["--enable-proxy"][..], None),
    ] {
        let dir = TestDir::new("grpc-on-off");
        let (mut run, port) = free_run_of_ports();
        let grpc = ports::reserve();
        let grpc_port = grpc.port();
        run.push(grpc);
        let mut spec = broker_spec(dir.path(), port)
            .setting("namesrvAddr", ns.addr())
            .setting("grpcServerPort", grpc_port);
        for a in args {
            spec = spec.arg(a);
        }
        if let Some(v) = setting {
            spec = spec.setting("enableGrpcProxy", v);
        }
        let broker = ChildProcess::start(spec, dir, run);
        let on = setting.is_some() || !args.is_empty();
        assert_eq!(listening(grpc_port), on, "{what}: gRPC port listening");
        if on {
            let topic = format!("GrpcOnOff{port}");
            update_topic(&ns.addr(), ["-b", &format!("127.0.0.1:{port}")], &topic, 4).assert_ok();
            // The route reaches the name server at the broker's next registration.
            let mut last = String::new();
            let sent =
                integration_tests::harness::wait_until(
                    Duration::from_secs(10),
                    || match grpc_send(grpc_port, &topic) {
                        Ok(out) => {
                            last = out;
                            true
                        }
                        Err(why) => {
                            last = why;
                            false
                        }
                    },
                );
            assert!(sent && last.contains("SEND_OK"), "{what}: {last}");
            assert!(
                last.contains(&format!("endpoint=127.0.0.1:{grpc_port}")),
                "{what}: the route names the broker's own endpoint: {last}"
            );
        }
        drop(broker);
    }
}

#[test]
fn a_second_broker_on_a_locked_store_exits_naming_the_lock_and_its_holder() {
    let ns = NamesrvProcess::start();
    let mut first = BrokerProcess::start(&ns.addr());
    let store = first.store_dir();
    let holder = first.process().pid().unwrap();
    let dir = TestDir::new("start-locked");
    let (_run, port) = free_run_of_ports();
    // The first broker's settings (BrokerProcess's file size): only the lock may refuse it.
    let exited = broker_spec(dir.path(), port)
        .setting("storePathRootDir", store.display())
        .setting("mappedFileSizeCommitLog", 16 * 1024 * 1024)
        .run_to_exit(dir.path(), GIVE_UP);
    let lock = store.join("lock");
    assert_refused(
        "store locked",
        &exited,
        &[&lock.display().to_string(), &format!("pid {holder}")],
    );
    // The first broker is untouched: still serving, still holding its lock.
    assert!(first.process().is_running());
    assert_eq!(
        std::fs::read_to_string(&lock).unwrap().trim(),
        holder.to_string()
    );
}

#[test]
fn mqbroker_refuses_settings_it_cannot_use() {
    let dir = TestDir::new("start-settings");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let garbled = dir.path().join("garbled.toml");
    std::fs::write(&garbled, "listenPort = = 10911\n[broken\n").unwrap();
    let missing = dir.path().join("missing.conf");
    let (_run, port) = free_run_of_ports();
    let spec = || broker_spec(dir.path(), port);
    let cases = [
        (
            "unknown role",
            spec().setting("brokerRole", "MASTERX"),
            "brokerRole = 'MASTERX'".to_owned(),
        ),
        (
            "unknown flush type",
            spec().setting("flushDiskType", "SOMETIMES"),
            "flushDiskType = 'SOMETIMES'".to_owned(),
        ),
        (
            "store dir not writable",
            spec().setting("storePathRootDir", file.join("store").display()),
            "a-file/store".to_owned(),
        ),
        (
            "unreadable config",
            broker_spec_from(&missing, dir.path(), port),
            "missing.conf".to_owned(),
        ),
        (
            "garbled config",
            broker_spec_from(&garbled, dir.path(), port),
            "garbled.toml".to_owned(),
        ),
    ];
    for (what, spec, needle) in cases {
        let exited = spec.run_to_exit(dir.path(), GIVE_UP);
        assert_refused(what, &exited, &[&needle]);
    }
}

#[test]
fn mqnamesrv_refuses_to_start_without_its_port_or_config() {
    let dir = TestDir::new("start-namesrv");
    let garbled = dir.path().join("garbled.toml");
    std::fs::write(&garbled, "listenPort = = 9876\n").unwrap();
    let kv = dir.path().join("kv.json");
    std::fs::write(&kv, "{ not json").unwrap();
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = held.local_addr().unwrap().port();
    let spec = |port: u16| {
        ProcessSpec::new("mqnamesrv", binary("nameserver", "mqnamesrv"))
            .setting("listenPort", port)
            .setting("bindAddress", "127.0.0.1")
            .setting("kvConfigPath", dir.path().join("ok-kv.json").display())
    };
    let cases = [
        (
            "port taken",
            spec(busy),
            vec![format!("127.0.0.1:{busy}"), "listenPort".into()],
        ),
        (
            "garbled config",
            spec(0).arg("-c").arg(&garbled),
            vec!["garbled.toml".into()],
        ),
        (
            "garbled kvConfig",
            spec(0).setting("kvConfigPath", kv.display()),
            vec![kv.display().to_string()],
        ),
        (
            "bad setting",
            spec(0).setting("listenPort", "port"),
            vec!["listenPort = 'port'".into()],
        ),
    ];
    for (what, spec, needles) in cases {
        let exited = spec.run_to_exit(dir.path(), GIVE_UP);
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        assert_refused(what, &exited, &needles);
    }
}
