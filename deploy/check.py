#!/usr/bin/env python3
"""Checks deploy/ without starting anything (run by `make deploy-check` via check.sh).

The broker configs are also started for real by integration-tests/tests/deploy.rs;
this checks what no test starts: their documented conventions, the systemd units,
the Kubernetes manifests and the Grafana dashboard.

  deploy/check.sh           check; exit 1 listing every problem
  deploy/check.sh --write   regenerate deploy/k8s/{config,scripts}.yaml from their sources
(check.sh finds a Python with PyYAML and runs this file with the same arguments.)

Checks:
  configs  every deploy/<topology>/<broker>-{master,slave}.toml parses; brokerName,
           brokerId, brokerRole and masterRoleOnSwitch follow from the file name and the
           topology; ports are the documented ones (listenPort + 1 for HA) and unique;
           storePathRootDir is /var/lib/sluice/<file name> (the systemd StateDirectory);
           a pair means the same in the one-pair and the two-pair topology.
  systemd  ini structure (sections, known keys, no duplicates), absolute ExecStart of our
           binaries with configs under /etc/sluice, the settings operators rely on
           (User, Restart, KillSignal, TimeoutStopSec, LimitNOFILE, EnvironmentFile);
           then `systemd-analyze verify` (when installed) with stub binaries, which must
           print nothing; sluice.sysusers through `systemd-sysusers --dry-run`.
  k8s      every YAML parses (PyYAML); apiVersion/kind/metadata.name/namespace; every
           StatefulSet has a headless Service named by serviceName whose selector and
           ports match, selectors match template labels, volumeClaimTemplates, mounts
           that resolve, TCP probes on declared ports, resource requests, the image
           placeholder; commands run /usr/local/bin/mqnamesrv or the broker entrypoint
           with config paths that are keys of the mounted ConfigMap, one config per
           replica with brokerId = ordinal; NAMESRV_ADDR names every name server pod;
           ConfigMaps equal their source files; PodDisruptionBudgets select pods;
           kustomization.yaml lists every manifest; the entrypoint picks the config by
           ordinal (run with a stub mqbroker); `kubectl kustomize` renders (if installed).
  grafana  deploy/grafana/sluice-dashboard.json parses; it imports as is (schemaVersion,
           the DS_PROMETHEUS input, the cluster/node_id/topic/consumer_group variables);
           panel ids are unique; every panel has a gridPos and, rows aside, the datasource
           ${DS_PROMETHEUS} and a query; panels do not overlap; every rocketmq_*/sluice_*
           name in a query or variable is one sluice exports (GRAFANA_METRICS below);
           then (when Go is installed) Grafana's own dashboard schema, strictly, through
           the Grafana Foundation SDK (deploy/grafana/check): unknown fields, wrong types
           and missing required fields fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: check.sh installs tomli
    import tomli as tomllib  # type: ignore[no-redef]

import yaml

DEPLOY = Path(__file__).resolve().parent
K8S = DEPLOY / "k8s"
SYSTEMD = DEPLOY / "systemd"
DASHBOARD = DEPLOY / "grafana" / "sluice-dashboard.json"

TOPOLOGIES = {
    "1m-1s-sync": (["broker-a"], "SYNC_MASTER"),
    "1m-1s-async": (["broker-a"], "ASYNC_MASTER"),
    "2m-2s-sync": (["broker-a", "broker-b"], "SYNC_MASTER"),
    "2m-2s-async": (["broker-a", "broker-b"], "ASYNC_MASTER"),
}
# The documented ports (deploy/README.md): every broker its own, so a set runs on one host.
PORTS = {
    "broker-a-master": 10911,
    "broker-a-slave": 10921,
    "broker-b-master": 10931,
    "broker-b-slave": 10941,
}
REQUIRED_BROKER_KEYS = [
    "brokerClusterName",
    "brokerName",
    "brokerId",
    "brokerRole",
    "flushDiskType",
    "brokerIP1",
    "namesrvAddr",
    "listenPort",
    "haListenPort",
    "storePathRootDir",
]
# The topology the Kubernetes manifests carry.
K8S_TOPOLOGY = "2m-2s-sync"
IMAGE = "registry.example.invalid/sluice:0.1.0"
NAMESPACE = "sluice"
BINARIES = {"mqnamesrv", "mqbroker"}

problems: list[str] = []


def problem(where: object, message: str) -> None:
    problems.append(f"{where}: {message}")


def rel(path: Path) -> str:
    return str(path.relative_to(DEPLOY.parent))


# ---------------------------------------------------------------- broker configs


def load_toml(path: Path) -> dict | None:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        problem(rel(path), f"does not parse: {e}")
        return None


def check_configs() -> None:
    dirs = sorted(p.name for p in DEPLOY.iterdir() if p.is_dir() and any(p.glob("*.toml")))
    if dirs != sorted(TOPOLOGIES):
        problem("deploy/", f"topology directories {dirs}, expected {sorted(TOPOLOGIES)}")
    if load_toml(DEPLOY / "namesrv.toml") is None:
        return
    by_topology: dict[str, dict[str, dict]] = {}
    for topology, (pairs, master_role) in TOPOLOGIES.items():
        files = sorted((DEPLOY / topology).glob("*.toml"))
        names = [f.stem for f in files]
        expected = sorted(f"{p}-{r}" for p in pairs for r in ("master", "slave"))
        if names != expected:
            problem(f"deploy/{topology}", f"files {names}, expected {expected}")
        seen_ports: dict[int, str] = {}
        configs = {}
        for f in files:
            c = load_toml(f)
            if c is None:
                continue
            configs[f.stem] = c
            where = rel(f)
            for key in REQUIRED_BROKER_KEYS:
                if key not in c:
                    problem(where, f"missing {key}")
            for key, value in c.items():
                if isinstance(value, dict):
                    problem(where, f"[{key}]: keep the file flat, as broker.conf is")
            name, _, role = f.stem.rpartition("-")
            master = role == "master"
            want = {
                "brokerClusterName": "DefaultCluster",
                "brokerName": name,
                "brokerId": 0 if master else 1,
                "brokerRole": master_role if master else "SLAVE",
                "brokerIP1": "127.0.0.1",
                "namesrvAddr": "127.0.0.1:9876",
                "listenPort": PORTS.get(f.stem),
                "haListenPort": PORTS.get(f.stem, -1) + 1,
                "storePathRootDir": f"/var/lib/sluice/{f.stem}",
            }
            if not master:
                want["masterRoleOnSwitch"] = master_role
            elif "masterRoleOnSwitch" in c:
                problem(where, "masterRoleOnSwitch is for slaves")
            for key, value in want.items():
                if c.get(key) != value:
                    problem(where, f"{key} = {c.get(key)!r}, expected {value!r}")
            if c.get("flushDiskType") not in ("ASYNC_FLUSH", "SYNC_FLUSH"):
                problem(where, f"flushDiskType = {c.get('flushDiskType')!r}")
            for port in (c.get("listenPort"), c.get("haListenPort")):
                if port in seen_ports:
                    problem(where, f"port {port} also used by {seen_ports[port]}")
                seen_ports[port] = f.stem
        by_topology[topology] = configs
    # broker-a means the same alone and next to broker-b.
    for mode in ("sync", "async"):
        one, two = by_topology.get(f"1m-1s-{mode}", {}), by_topology.get(f"2m-2s-{mode}", {})
        for stem, c in one.items():
            if stem in two and two[stem] != c:
                diff = sorted(k for k in set(c) | set(two[stem]) if c.get(k) != two[stem].get(k))
                problem(f"deploy/1m-1s-{mode}/{stem}.toml", f"differs from 2m-2s-{mode} in {diff}")


# ---------------------------------------------------------------- systemd

SYSTEMD_KEYS = {
    "Unit": set(
        """Description Documentation After Before Wants Requires BindsTo PartOf Conflicts
        AssertPathExists ConditionPathExists StartLimitIntervalSec StartLimitBurst""".split()
    ),
    "Service": set(
        """Type User Group Environment EnvironmentFile ExecStart ExecStartPre ExecStop
        ExecReload StateDirectory StateDirectoryMode WorkingDirectory KillSignal KillMode
        SendSIGKILL TimeoutStartSec TimeoutStopSec Restart RestartSec LimitNOFILE LimitMEMLOCK
        LimitNPROC NoNewPrivileges ProtectSystem ProtectHome PrivateTmp PrivateDevices
        ProtectKernelTunables ProtectKernelModules ProtectKernelLogs ProtectControlGroups
        ProtectClock ProtectHostname RestrictAddressFamilies RestrictNamespaces RestrictRealtime
        RestrictSUIDSGID LockPersonality MemoryDenyWriteExecute SystemCallArchitectures
        CapabilityBoundingSet AmbientCapabilities UMask ReadWritePaths ReadOnlyPaths""".split()
    ),
    "Install": {"WantedBy", "RequiredBy", "Alias", "DefaultInstance"},
}
# Keys that may repeat (they accumulate).
SYSTEMD_LISTS = set("Environment EnvironmentFile After Wants ExecStartPre Documentation".split())


def parse_unit(path: Path) -> dict[str, dict[str, list[str]]] | None:
    """Sections -> key -> values, with systemd's comment and continuation rules."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    pending = ""
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        where = f"{rel(path)}:{number}"
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                problem(where, f"bad section header {line!r}")
                return None
            current = line[1:-1]
            if current in sections:
                problem(where, f"section [{current}] twice")
            sections.setdefault(current, {})
            continue
        if current is None:
            problem(where, "setting before the first section")
            return None
        if "=" not in line:
            problem(where, f"not key=value: {line!r}")
            continue
        key, value = (s.strip() for s in line.split("=", 1))
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", key):
            problem(where, f"bad key {key!r}")
        known = SYSTEMD_KEYS.get(current)
        if known is not None and key not in known:
            problem(where, f"{key} is not a key this checker knows in [{current}]")
        values = sections[current].setdefault(key, [])
        if values and key not in SYSTEMD_LISTS:
            problem(where, f"{key} set twice in [{current}]")
        values.append(value)
    if pending:
        problem(rel(path), "ends in a line continuation")
    return sections


def one(unit: dict, section: str, key: str) -> str:
    return (unit.get(section, {}).get(key) or [""])[-1]


def check_systemd() -> None:
    units = sorted(SYSTEMD.glob("*.service"))
    names = [u.name for u in units]
    if names != ["sluice-broker@.service", "sluice-namesrv.service"]:
        problem("deploy/systemd", f"units {names}")
    for path in units:
        unit = parse_unit(path)
        if unit is None:
            continue
        where = rel(path)
        for section in ("Unit", "Service", "Install"):
            if section not in unit:
                problem(where, f"no [{section}] section")
        unknown = set(unit) - set(SYSTEMD_KEYS)
        if unknown:
            problem(where, f"unknown sections {sorted(unknown)}")
        exec_start = one(unit, "Service", "ExecStart").split()
        if not exec_start or not exec_start[0].startswith("/"):
            problem(where, f"ExecStart must start with an absolute path: {exec_start}")
            continue
        binary = Path(exec_start[0])
        if binary.parent != Path("/usr/local/bin") or binary.name not in BINARIES:
            problem(where, f"ExecStart runs {binary}, expected /usr/local/bin/mq*")
        template = "@." in path.name
        config = exec_start[exec_start.index("-c") + 1] if "-c" in exec_start else ""
        want_config = "/etc/sluice/%i.toml" if template else "/etc/sluice/namesrv.toml"
        if config != want_config:
            problem(where, f"-c {config!r}, expected {want_config}")
        if binary.name != ("mqbroker" if template else "mqnamesrv"):
            problem(where, f"{binary.name} in the {'broker' if template else 'name server'} unit")
        expected = {
            "User": "sluice",
            "Group": "sluice",
            "Restart": "on-failure",
            "KillSignal": "SIGTERM",
            "StateDirectory": "sluice/%i" if template else "sluice/namesrv",
        }
        for key, value in expected.items():
            if one(unit, "Service", key) != value:
                problem(where, f"{key}={one(unit, 'Service', key)!r}, expected {value!r}")
        for key in (
            "TimeoutStopSec",
            "LimitNOFILE",
            "EnvironmentFile",
            "ProtectSystem",
            "NoNewPrivileges",
        ):
            if not one(unit, "Service", key):
                problem(where, f"no {key}")
        if "/etc/sluice/sluice.env" not in " ".join(unit["Service"].get("EnvironmentFile", [])):
            problem(where, "EnvironmentFile does not read /etc/sluice/sluice.env")
        if not any(v.startswith("RUST_LOG=") for v in unit["Service"].get("Environment", [])):
            problem(where, "no default RUST_LOG")
        if not template:
            # The name server's files live in its state directory.
            for arg in exec_start:
                key, _, value = arg.partition("=")
                inside = value.startswith("/var/lib/sluice/namesrv/")
                if key in ("kvConfigPath", "configStorePath") and not inside:
                    problem(where, f"{arg} is outside StateDirectory")
        if one(unit, "Install", "WantedBy") != "multi-user.target":
            problem(where, "WantedBy=multi-user.target missing")
    systemd_analyze(units)
    check_sysusers(SYSTEMD / "sluice.sysusers")


def check_sysusers(path: Path) -> None:
    """The user the units run as; `systemd-sysusers --dry-run` on it when installed."""
    entries = [
        line.split()
        for line in path.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if [e[:2] for e in entries] != [["u", "sluice"]]:
        problem(rel(path), f"expected one entry `u sluice ...`, got {entries}")
    tool = shutil.which("systemd-sysusers")
    if tool is None:
        return
    with tempfile.TemporaryDirectory(prefix="sluice-sysusers-") as root:
        conf_dir = Path(root) / "usr/lib/sysusers.d"
        conf_dir.mkdir(parents=True)
        (conf_dir / "sluice.conf").write_text(path.read_text())
        out = subprocess.run(
            [tool, f"--root={root}", "--dry-run"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        text = out.stdout + out.stderr
        if out.returncode != 0 or "sluice.conf" in text or "Creating user 'sluice'" not in text:
            problem("systemd-sysusers --dry-run", f"exit {out.returncode}:\n{text.strip()}")


def systemd_analyze(units: list[Path]) -> None:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        print("deploy-check: systemd-analyze not installed; the structural unit checks ran alone")
        return
    with tempfile.TemporaryDirectory(prefix="sluice-units-") as tmp:
        stubs = Path(tmp) / "bin"
        stubs.mkdir()
        for name in BINARIES:
            stub = stubs / name
            stub.write_text("#!/bin/sh\n")
            stub.chmod(0o755)
        unit_dir = Path(tmp) / "units"
        unit_dir.mkdir()
        for u in units:
            (unit_dir / u.name).write_text(u.read_text().replace("/usr/local/bin/", f"{stubs}/"))
        targets = [
            str(unit_dir / ("sluice-broker@broker-a-master.service" if "@." in u.name else u.name))
            for u in units
        ]
        out = subprocess.run(
            [tool, "verify", *targets], capture_output=True, text=True, timeout=60, check=False
        )
        text = (out.stdout + out.stderr).strip()
        if out.returncode != 0 or text:
            problem("systemd-analyze verify", f"exit {out.returncode}:\n{text}")
        else:
            print(f"deploy-check: systemd-analyze verify: {len(targets)} units clean")


# ---------------------------------------------------------------- kubernetes

CONFIG_MAPS = {
    # name -> (file name in deploy/k8s, {key: source})
    "sluice-config": (
        "config.yaml",
        {
            "namesrv.toml": DEPLOY / "namesrv.toml",
            **{f.name: f for f in sorted((DEPLOY / K8S_TOPOLOGY).glob("*.toml"))},
        },
    ),
    "sluice-scripts": ("scripts.yaml", {"broker-entrypoint.sh": K8S / "broker-entrypoint.sh"}),
}


def render_config_map(name: str, sources: dict[str, Path]) -> str:
    origins = ", ".join(sorted({rel(p) for p in sources.values()}))
    lines = [
        f"# GENERATED by `deploy/check.sh --write` from {origins}.",
        "# Edit those and regenerate; `make deploy-check` fails while this differs.",
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        f"  name: {name}",
        f"  namespace: {NAMESPACE}",
        "  labels:",
        "    app.kubernetes.io/name: sluice",
        "data:",
    ]
    for key, path in sources.items():
        text = path.read_text()
        if any(line != line.rstrip() for line in text.splitlines()):
            problem(rel(path), "trailing whitespace (a YAML block scalar cannot keep it)")
        lines.append(f"  {key}: |")
        lines.extend(f"    {line}" if line else "" for line in text.splitlines())
    return "\n".join(lines) + "\n"


def write_config_maps() -> None:
    for name, (file_name, sources) in CONFIG_MAPS.items():
        (K8S / file_name).write_text(render_config_map(name, sources))
        print(f"wrote {rel(K8S / file_name)}")


def dig(obj: object, *keys: str) -> object:
    """obj[k1][k2]..., or None where a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def labels_match(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def load_manifests() -> list[tuple[Path, dict]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        try:
            loaded = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError as e:
            problem(rel(path), f"does not parse: {e}")
            continue
        if path.name == "kustomization.yaml":
            continue
        for doc in loaded:
            if doc is None:
                continue
            if not isinstance(doc, dict):
                problem(rel(path), "a document is not a mapping")
                continue
            docs.append((path, doc))
    return docs


def check_k8s() -> None:
    docs = load_manifests()
    by_kind: dict[str, dict[str, tuple[Path, dict]]] = {}
    for path, doc in docs:
        where = rel(path)
        kind = doc.get("kind")
        meta = doc.get("metadata") or {}
        name = meta.get("name")
        if not doc.get("apiVersion") or not kind or not name:
            problem(where, f"apiVersion/kind/metadata.name missing in {doc.get('kind')} {name}")
            continue
        if kind != "Namespace" and meta.get("namespace") != NAMESPACE:
            problem(
                where, f"{kind} {name}: namespace {meta.get('namespace')!r}, expected {NAMESPACE}"
            )
        if name in by_kind.setdefault(kind, {}):
            problem(where, f"{kind} {name} defined twice")
        by_kind[kind][name] = (path, doc)

    for kind in ("Namespace", "ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget"):
        if kind not in by_kind:
            problem("deploy/k8s", f"no {kind}")

    # ConfigMaps are their sources, byte for byte.
    for name, (file_name, sources) in CONFIG_MAPS.items():
        path = K8S / file_name
        if name not in by_kind.get("ConfigMap", {}):
            problem(rel(path), f"no ConfigMap {name} (run deploy/check.sh --write)")
            continue
        data = by_kind["ConfigMap"][name][1].get("data") or {}
        for key, source in sources.items():
            if data.get(key) != source.read_text():
                problem(
                    rel(path), f"{key} differs from {rel(source)} (run deploy/check.sh --write)"
                )
        extra = set(data) - set(sources)
        if extra:
            problem(rel(path), f"keys without a source: {sorted(extra)}")
        if path.read_text() != render_config_map(name, sources):
            problem(rel(path), "not as generated (run deploy/check.sh --write)")

    config_maps = {n: d.get("data") or {} for n, (_, d) in by_kind.get("ConfigMap", {}).items()}
    services = by_kind.get("Service", {})
    statefulsets = by_kind.get("StatefulSet", {})
    namesrv_hosts = []
    for name, (path, sts) in statefulsets.items():
        where = f"{rel(path)} StatefulSet {name}"
        spec = sts.get("spec") or {}
        template = spec.get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not labels_match((spec.get("selector") or {}).get("matchLabels") or {}, labels):
            problem(where, "selector.matchLabels do not match the template labels")
        service_name = spec.get("serviceName")
        service = services.get(service_name, (None, None))[1]
        pod = template.get("spec") or {}
        containers = pod.get("containers") or []
        if service is None:
            problem(where, f"serviceName {service_name!r} is no Service here")
        else:
            sspec = service.get("spec") or {}
            if sspec.get("clusterIP") != "None":
                problem(where, f"Service {service_name} is not headless (clusterIP: None)")
            if not labels_match(sspec.get("selector") or {}, labels):
                problem(where, f"Service {service_name} selector does not match the pods")
            port_names = {p.get("name") for c in containers for p in c.get("ports") or []}
            for p in sspec.get("ports") or []:
                if p.get("targetPort") not in port_names:
                    target = p.get("targetPort")
                    problem(where, f"Service port {p.get('name')} targets {target!r}: no such port")
        claims = {
            (c.get("metadata") or {}).get("name") for c in spec.get("volumeClaimTemplates") or []
        }
        if not claims:
            problem(where, "no volumeClaimTemplates")
        volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        replicas = spec.get("replicas")
        if not isinstance(replicas, int) or replicas < 1:
            problem(where, f"replicas {replicas!r}")
            continue
        if len(containers) != 1:
            problem(where, f"{len(containers)} containers, expected 1")
            continue
        c = containers[0]
        if c.get("image") != IMAGE:
            problem(where, f"image {c.get('image')!r}, expected the placeholder {IMAGE}")
        port_names = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
        for probe in ("readinessProbe", "livenessProbe"):
            tcp = (c.get(probe) or {}).get("tcpSocket") or {}
            if tcp.get("port") not in port_names:
                problem(where, f"{probe} is not a TCP probe on a declared port")
        requests = (c.get("resources") or {}).get("requests") or {}
        if not {"cpu", "memory"} <= set(requests):
            problem(where, "resources.requests needs cpu and memory")
        # Mounted files: path -> (config map, key).
        files: dict[str, tuple[str, str]] = {}
        for m in c.get("volumeMounts") or []:
            vname, mount = m.get("name"), m.get("mountPath", "")
            if vname in claims:
                continue
            volume = volumes.get(vname)
            if volume is None:
                problem(where, f"volumeMount {vname} has no volume or claim template")
                continue
            cm = (volume.get("configMap") or {}).get("name")
            if cm is None:
                continue
            if cm not in config_maps:
                problem(where, f"volume {vname} uses ConfigMap {cm}, which is not here")
                continue
            items = (volume.get("configMap") or {}).get("items")
            pairs = (
                [(i.get("key"), i.get("path")) for i in items]
                if items
                else [(k, k) for k in config_maps[cm]]
            )
            for key, file_path in pairs:
                if key not in config_maps[cm]:
                    problem(where, f"ConfigMap {cm} has no key {key}")
                    continue
                files[f"{mount.rstrip('/')}/{file_path}"] = (cm, key)
        command = [*(c.get("command") or []), *(c.get("args") or [])]
        env = {e.get("name"): e for e in c.get("env") or []}
        component = labels.get("app.kubernetes.io/component")
        if component == "namesrv":
            namesrv_hosts = [
                f"{name}-{i}.{service_name}.{NAMESPACE}.svc.cluster.local:{port_names.get('remoting')}"
                for i in range(replicas)
            ]
            if command[:1] != ["/usr/local/bin/mqnamesrv"]:
                problem(where, f"command {command[:1]}, expected /usr/local/bin/mqnamesrv")
            config = command[command.index("-c") + 1] if "-c" in command else None
            if config not in files:
                problem(where, f"-c {config} is not a mounted ConfigMap file")
            if f"listenPort={port_names.get('remoting')}" not in command:
                problem(where, "listenPort is not the container port")
        elif component == "broker":
            check_broker_statefulset(
                where, name, labels, command, env, files, replicas, port_names, config_maps
            )
        else:
            problem(where, f"component label {component!r}")
    for name, (path, sts) in statefulsets.items():
        containers = dig(sts, "spec", "template", "spec", "containers") or [{}]
        env = {e.get("name"): e.get("value") for e in containers[0].get("env") or []}
        addr = env.get("NAMESRV_ADDR")
        if addr is not None and addr.split(";") != namesrv_hosts:
            expected = ";".join(namesrv_hosts)
            problem(f"{rel(path)} StatefulSet {name}", f"NAMESRV_ADDR {addr!r}, not {expected!r}")

    pods = [
        dig(d, "spec", "template", "metadata", "labels") or {}
        for _, d in statefulsets.values()
    ]
    for name, (path, pdb) in by_kind.get("PodDisruptionBudget", {}).items():
        selector = dig(pdb, "spec", "selector", "matchLabels") or {}
        if not any(labels_match(selector, labels) for labels in pods):
            problem(f"{rel(path)} PodDisruptionBudget {name}", "selects no pods")
    for name, (path, svc) in services.items():
        selector = dig(svc, "spec", "selector") or {}
        if not any(labels_match(selector, labels) for labels in pods):
            problem(f"{rel(path)} Service {name}", "selects no pods")

    check_kustomization(len(docs))
    check_entrypoint()


def check_broker_statefulset(
    where, name, labels, command, env, files, replicas, port_names, config_maps
) -> None:
    if command[:2] != ["/bin/sh", "/opt/sluice/broker-entrypoint.sh"]:
        problem(where, f"command {command[:2]}, expected /bin/sh /opt/sluice/broker-entrypoint.sh")
        return
    if "/opt/sluice/broker-entrypoint.sh" not in files:
        problem(where, "broker-entrypoint.sh is not mounted at /opt/sluice")
    configs = command[2:]
    if len(configs) != replicas:
        problem(
            where, f"{replicas} replicas but {len(configs)} configs in args: pod N needs the N-th"
        )
    if port_names.get("remoting") != 10911 or port_names.get("ha") != 10912:
        problem(where, f"ports {port_names}, the entrypoint serves 10911 and HA 10912")
    for key in ("POD_NAME", "POD_IP"):
        field = ((env.get(key) or {}).get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
        if field != {"POD_NAME": "metadata.name", "POD_IP": "status.podIP"}[key]:
            problem(where, f"env {key} must come from the downward API")
    instance = labels.get("app.kubernetes.io/instance")
    if name != f"sluice-{instance}":
        problem(where, f"name should be sluice-{instance}")
    for ordinal, path in enumerate(configs):
        if path not in files:
            problem(where, f"config of pod {ordinal}, {path}, is not a mounted ConfigMap file")
            continue
        cm, key = files[path]
        try:
            c = tomllib.loads(config_maps[cm][key])
        except tomllib.TOMLDecodeError as e:
            problem(where, f"{key}: {e}")
            continue
        if c.get("brokerName") != instance:
            problem(
                where,
                f"pod {ordinal} config {key} is brokerName {c.get('brokerName')!r}, not {instance}",
            )
        if c.get("brokerId") != ordinal:
            problem(where, f"pod {ordinal} config {key} has brokerId {c.get('brokerId')}")
        master = c.get("brokerRole") in ("SYNC_MASTER", "ASYNC_MASTER")
        if master != (ordinal == 0):
            problem(where, f"pod {ordinal} config {key} has brokerRole {c.get('brokerRole')}")


def check_kustomization(objects: int) -> None:
    path = K8S / "kustomization.yaml"
    try:
        k = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        problem(rel(path), str(e))
        return
    listed = sorted(k.get("resources") or [])
    present = sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
    if listed != present:
        problem(rel(path), f"resources {listed}, files {present}")
    if k.get("namespace") != NAMESPACE:
        problem(rel(path), f"namespace {k.get('namespace')!r}")
    images = {i.get("name"): i for i in k.get("images") or []}
    if IMAGE.split(":")[0] not in images:
        problem(rel(path), f"images does not set {IMAGE.split(':')[0]}")
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("deploy-check: kubectl not installed; `kubectl kustomize` skipped")
        return
    out = subprocess.run(
        [kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=60, check=False
    )
    if out.returncode != 0:
        problem("kubectl kustomize deploy/k8s", out.stderr.strip())
        return
    rendered = [d for d in yaml.safe_load_all(out.stdout) if d]
    if len(rendered) != objects:
        problem("kubectl kustomize deploy/k8s", f"rendered {len(rendered)} objects")
    else:
        print(f"deploy-check: kubectl kustomize: {len(rendered)} objects")


def check_entrypoint() -> None:
    """Runs the entrypoint with a stub mqbroker that prints its arguments."""
    script = K8S / "broker-entrypoint.sh"
    with tempfile.TemporaryDirectory(prefix="sluice-entrypoint-") as tmp:
        stub = Path(tmp) / "mqbroker"
        stub.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
        stub.chmod(0o755)
        base = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "SLUICE_BIN_DIR": tmp,
            "POD_IP": "192.0.2.10",
            "NAMESRV_ADDR": "ns-0:9876;ns-1:9876",
        }
        configs = ["/etc/sluice/broker-a-master.toml", "/etc/sluice/broker-a-slave.toml"]

        def run(pod: str, extra: dict | None = None):
            return subprocess.run(
                ["sh", str(script), *configs],
                env={**base, "POD_NAME": pod, **(extra or {})},
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )

        for ordinal, config in enumerate(configs):
            out = run(f"sluice-broker-a-{ordinal}")
            args = out.stdout.splitlines()
            want = [
                "-c",
                config,
                "-o",
                "brokerIP1=192.0.2.10",
                "-o",
                "listenPort=10911",
                "-o",
                "haListenPort=10912",
                "-o",
                "storePathRootDir=/data/store",
            ]
            if out.returncode != 0 or args != want:
                got = f"exit {out.returncode}, args {args}, stderr {out.stderr.strip()}"
                problem(rel(script), f"pod {ordinal}: {got}")
        for pod, extra in [
            ("sluice-broker-a-2", None),
            ("no-ordinal", None),
            ("sluice-broker-a-0", {"NAMESRV_ADDR": ""}),
        ]:
            out = run(pod, extra)
            if out.returncode == 0 or out.stdout:
                got = f"exit {out.returncode}: {out.stdout}"
                problem(rel(script), f"{pod} {extra or ''}: should refuse to start, got {got}")


# ---------------------------------------------------------------- grafana

# The sample names sluice exports (metrics crate; broker/src/metrics.rs, meters.rs;
# nameserver/src/metrics.rs). A dashboard query naming anything else shows "No data".
GRAFANA_COUNTERS = """
    rocketmq_messages_in_total rocketmq_throughput_in_total rocketmq_messages_out_total
    rocketmq_throughput_out_total rocketmq_send_to_dlq_messages_total
    rocketmq_commit_messages_total rocketmq_rollback_messages_total
    sluice_long_polling_holds_total sluice_pull_page_cache_messages_total""".split()
GRAFANA_HISTOGRAMS = """
    rocketmq_message_size rocketmq_finish_message_latency_ms
    rocketmq_topic_create_execution_time_milliseconds
    rocketmq_consumer_group_create_execution_time_milliseconds rocketmq_rpc_latency_milliseconds
    sluice_store_fsync_latency_microseconds sluice_store_group_commit_size
    sluice_ha_ack_latency_microseconds""".split()
GRAFANA_GAUGES = """
    rocketmq_half_messages rocketmq_broker_permission rocketmq_topic_number
    rocketmq_consumer_group_number rocketmq_producer_connections rocketmq_consumer_connections
    rocketmq_consumer_lag_messages rocketmq_consumer_lag_latency_milliseconds
    rocketmq_consumer_inflight_messages rocketmq_consumer_queueing_latency_milliseconds
    rocketmq_consumer_ready_messages rocketmq_storage_size_bytes
    rocketmq_storage_flush_behind_bytes rocketmq_storage_dispatch_behind_bytes
    rocketmq_storage_message_reserve_time_milliseconds sluice_ha_slave_lag_bytes
    sluice_ha_slave_lag_time_milliseconds sluice_ha_slaves sluice_ha_master_link_up
    sluice_long_polling_held sluice_namesrv_live_brokers sluice_namesrv_topics
    rocketmq_timer_enqueue_lag rocketmq_timer_dequeue_lag rocketmq_timing_messages
    rocketmq_pop_checkpoint_buffer_size rocketmq_pop_revive_lag_milliseconds""".split()
GRAFANA_METRICS = (
    set(GRAFANA_COUNTERS)
    | set(GRAFANA_GAUGES)
    | {h + s for h in GRAFANA_HISTOGRAMS for s in ("_bucket", "_sum", "_count")}
)
GRAFANA_DS = "${DS_PROMETHEUS}"
GRAFANA_VARIABLES = ["cluster", "node_id", "topic", "consumer_group"]
METRIC_TOKEN = re.compile(r"\b(?:rocketmq|sluice)_[a-z0-9_]+")


def check_metric_names(where: str, what: str, query: str) -> None:
    for name in METRIC_TOKEN.findall(query):
        if name not in GRAFANA_METRICS:
            problem(where, f"{what}: {name} is not a metric sluice exports (GRAFANA_METRICS)")


def check_grafana() -> None:
    where = rel(DASHBOARD)
    try:
        board = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        problem(where, f"does not parse: {e}")
        return
    if board.get("schemaVersion") != 39:
        problem(where, f"schemaVersion {board.get('schemaVersion')!r}, expected 39")
    if board.get("id") is not None or not board.get("uid") or not board.get("title"):
        problem(where, "needs id null (Grafana assigns it), a uid and a title")
    inputs = [i for i in board.get("__inputs", []) if i.get("name") == "DS_PROMETHEUS"]
    if [(i.get("type"), i.get("pluginId")) for i in inputs] != [("datasource", "prometheus")]:
        problem(where, "__inputs needs one datasource DS_PROMETHEUS with pluginId prometheus")
    variables = {v.get("name"): v for v in dig(board, "templating", "list") or []}
    for name in GRAFANA_VARIABLES:
        v = variables.get(name)
        if v is None:
            problem(where, f"no templating variable ${name}")
            continue
        if v.get("type") != "query" or dig(v, "datasource", "uid") != GRAFANA_DS:
            problem(where, f"${name}: a query variable on {GRAFANA_DS}")
        query = dig(v, "query", "query") if isinstance(v.get("query"), dict) else v.get("query")
        if not isinstance(query, str) or not query.startswith("label_values("):
            problem(where, f"${name}: query {query!r} is not label_values(...)")
        else:
            check_metric_names(where, f"${name}", query)
    for name in ("cluster", "node_id"):
        query = dig(variables.get(name, {}), "definition") or ""
        if "rocketmq_broker_permission" not in str(query):
            problem(where, f"${name} does not list label values of rocketmq_broker_permission")

    seen: dict[object, str] = {}
    top = board.get("panels")
    if not isinstance(top, list) or not top:
        problem(where, "no panels")
        return
    # What is drawn together: the top level, and each collapsed row's own panels.
    layers = [("top level", [p for p in top if isinstance(p, dict)])]
    for p in layers[0][1]:
        if p.get("type") == "row":
            nested = p.get("panels") or []
            if nested and not p.get("collapsed"):
                problem(where, f"row {p.get('title')!r}: an expanded row holds no panels")
            layers.append((f"row {p.get('title')!r}", nested))
    for layer, panels in layers:
        boxes: list[tuple[str, int, int, int, int]] = []
        for p in panels:
            title = f"panel {p.get('id')} {p.get('title')!r}"
            if p.get("id") in seen:
                problem(where, f"{title}: id also used by {seen[p.get('id')]}")
            seen[p.get("id")] = title
            if not isinstance(p.get("id"), int):
                problem(where, f"{title}: no integer id")
            pos = p.get("gridPos") or {}
            if not all(isinstance(pos.get(k), int) for k in "hwxy"):
                problem(where, f"{title}: gridPos {pos}")
                continue
            if pos["x"] < 0 or pos["w"] < 1 or pos["x"] + pos["w"] > 24 or pos["h"] < 1:
                problem(where, f"{title}: gridPos {pos} outside the 24 columns")
            for other, x, y, w, h in boxes:
                if (
                    x < pos["x"] + pos["w"]
                    and pos["x"] < x + w
                    and y < pos["y"] + pos["h"]
                    and pos["y"] < y + h
                ):
                    problem(where, f"{title} overlaps {other} ({layer})")
            boxes.append((title, pos["x"], pos["y"], pos["w"], pos["h"]))
            if p.get("type") == "row":
                continue
            if p.get("type") not in ("timeseries", "stat"):
                problem(where, f"{title}: type {p.get('type')!r}, expected timeseries or stat")
            if dig(p, "datasource", "uid") != GRAFANA_DS:
                problem(where, f"{title}: datasource {p.get('datasource')}, expected {GRAFANA_DS}")
            if not dig(p, "fieldConfig", "defaults", "unit"):
                problem(where, f"{title}: no unit")
            targets = p.get("targets") or []
            if not targets:
                problem(where, f"{title}: no target")
            for t in targets:
                expr = t.get("expr") if isinstance(t, dict) else None
                if not isinstance(expr, str) or not expr.strip():
                    problem(where, f"{title}: a target without expr")
                    continue
                if dig(t, "datasource", "uid") not in (None, GRAFANA_DS):
                    problem(where, f"{title}: target {t.get('refId')} on {t.get('datasource')}")
                if expr.count("(") != expr.count(")") or expr.count("{") != expr.count("}"):
                    problem(where, f"{title}: unbalanced brackets in {expr}")
                check_metric_names(where, title, expr)
    grafana_schema()


def grafana_schema() -> None:
    go = shutil.which("go")
    if go is None:
        print("deploy-check: go not installed; the dashboard's Grafana schema check skipped")
        return
    out = subprocess.run(
        [go, "run", ".", str(DASHBOARD)],
        cwd=DASHBOARD.parent / "check",
        capture_output=True,
        text=True,
        timeout=900,
    )
    if out.returncode != 0:
        problem(rel(DASHBOARD), f"Grafana's schema: {(out.stderr or out.stdout).strip()}")
    else:
        print(f"deploy-check: {out.stdout.strip()}")


# ---------------------------------------------------------------- main


def main() -> int:
    if sys.argv[1:] == ["--write"]:
        write_config_maps()
        return 0
    if sys.argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    check_configs()
    check_systemd()
    check_k8s()
    check_grafana()
    if problems:
        print(f"deploy-check: {len(problems)} problem(s):", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    print("deploy-check: configs, systemd units, Kubernetes manifests and Grafana dashboard OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
