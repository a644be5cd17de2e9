#!/usr/bin/env bash
# A local sluice cluster on loopback: one name server and one master/slave pair.
#
#   deploy/local-cluster.sh up       build (release), start, send and read back a message
#   deploy/local-cluster.sh status   processes, cluster list, HA status
#   deploy/local-cluster.sh drill    role switch: the slave becomes master, then back
#   deploy/local-cluster.sh down     stop everything (clean shutdown, SIGTERM)
#
# Files (logs, stores, pids) live under $SLUICE_LOCAL_DIR (default deploy/.local).
# Ports: name server 9876, master 10911 (HA 10912), slave 10921 (HA 10922); override
# with NAMESRV_PORT, MASTER_PORT, SLAVE_PORT.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
dir="${SLUICE_LOCAL_DIR:-$here/.local}"
ns_port="${NAMESRV_PORT:-9876}"
master_port="${MASTER_PORT:-10911}"
slave_port="${SLAVE_PORT:-10921}"
ns="127.0.0.1:$ns_port"
bin="${CARGO_TARGET_DIR:-$root/target}/release"
topic="LocalClusterTopic"

log() { printf '\033[1m== %s\033[0m\n' "$*"; }

build() {
  log "building release binaries (first time takes a few minutes)"
  (cd "$root" && cargo build --release --bins -p nameserver -p broker -p tools -q)
}

start() { # name, then the command
  local name=$1; shift
  if [[ -f "$dir/$name.pid" ]] && kill -0 "$(cat "$dir/$name.pid")" 2>/dev/null; then
    echo "$name already running (pid $(cat "$dir/$name.pid"))"
    return
  fi
  "$@" >"$dir/$name.log" 2>&1 &
  echo $! >"$dir/$name.pid"
  echo "$name started (pid $!, log $dir/$name.log)"
}

wait_port() { # port, name
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "$2 did not open port $1; last log lines:" >&2
  tail -20 "$dir/$2.log" >&2
  exit 1
}

stop() { # name
  local pidfile="$dir/$1.pid"
  [[ -f "$pidfile" ]] || return 0
  local pid; pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "$1 stopped"
  fi
  rm -f "$pidfile"
}

broker() { # name, port, role, id
  start "$1" "$bin/mqbroker" -c "$here/broker.toml" -n "$ns" \
    -o "brokerName=broker-a" -o "brokerRole=$3" -o "brokerId=$4" \
    -o "listenPort=$2" -o "haListenPort=$(($2 + 1))" -o "bindAddress=127.0.0.1" \
    -o "storePathRootDir=$dir/$1-store" -o "mappedFileSizeCommitLog=67108864"
  wait_port "$2" "$1"
}

up() {
  build
  mkdir -p "$dir"
  start namesrv "$bin/mqnamesrv" -c "$here/namesrv.toml" -o "listenPort=$ns_port" \
    -o "bindAddress=127.0.0.1" -o "kvConfigPath=$dir/namesrv/kvConfig.json" \
    -o "configStorePath=$dir/namesrv/namesrv.properties"
  wait_port "$ns_port" namesrv
  broker master "$master_port" SYNC_MASTER 0
  broker slave "$slave_port" SLAVE 1
  sleep 1
  log "cluster"
  "$bin/mqadmin" clusterList -n "$ns"
  log "a message through the cluster"
  "$bin/mqadmin" updateTopic -n "$ns" -c DefaultCluster -t "$topic" -r 4 -w 4 >/dev/null
  "$bin/mqadmin" sendMessage -n "$ns" -t "$topic" -p "hello from sluice $(date +%T)" -c TagA -k key-1
  "$bin/mqadmin" consumeMessage -n "$ns" -t "$topic" -c 1 -s "$(( $(date +%s) - 60 ))000" || true
  log "up: name server $ns, master 127.0.0.1:$master_port, slave 127.0.0.1:$slave_port"
}

status() {
  for name in namesrv master slave; do
    if [[ -f "$dir/$name.pid" ]] && kill -0 "$(cat "$dir/$name.pid")" 2>/dev/null; then
      echo "$name: running (pid $(cat "$dir/$name.pid"))"
    else
      echo "$name: stopped"
    fi
  done
  "$bin/mqadmin" clusterList -n "$ns" || true
}

drill() {
  log "before"
  status
  log "switching the slave (127.0.0.1:$slave_port) to master"
  "$bin/mqadmin" switchRole -n "$ns" -b "127.0.0.1:$slave_port" -r MASTER
  log "switching the old master (127.0.0.1:$master_port) to slave of it"
  "$bin/mqadmin" switchRole -n "$ns" -b "127.0.0.1:$master_port" -r SLAVE -m "127.0.0.1:$((slave_port + 1))"
  sleep 2
  log "after"
  status
}

down() {
  stop slave
  stop master
  stop namesrv
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  drill) drill ;;
  *) echo "usage: $0 up|down|status|drill" >&2; exit 2 ;;
esac
