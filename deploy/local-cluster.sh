#!/usr/bin/env bash
# A local sluice cluster on loopback: one name server and one SYNC master/slave pair,
# started from deploy/namesrv.toml and deploy/1m-1s-sync/broker-a-{master,slave}.toml.
#
#   deploy/local-cluster.sh up              build (release), start, send a message over remoting and
#                                           one over gRPC (mqgrpc), read both back
#   deploy/local-cluster.sh status          processes, cluster list, HA status (exit 3 if one is down)
#   deploy/local-cluster.sh drill [--back]  role switch: the slave becomes master and the old
#                                           master its slave; --back switches back afterwards
#   deploy/local-cluster.sh down            stop everything (SIGTERM, waits for a clean exit)
#   deploy/local-cluster.sh clean           down, then delete the files
#
# `up` is idempotent: what runs is left alone, what is down is started (a broker whose
# partner is the master now joins as its slave). Everything binds 127.0.0.1 only.
# broker-a-master also serves RocketMQ 5's gRPC protocol (`--enable-proxy`, local mode) on
# GRPC_PORT: the 5.x SDKs (and `mqgrpc`) connect there.
#
# Environment:
#   SLUICE_LOCAL_DIR  logs, stores and pid files (default deploy/.local)
#   NAMESRV_PORT      name server port (9876)
#   MASTER_PORT       broker-a-master port (10911); its HA port is MASTER_PORT + 1
#   SLAVE_PORT        broker-a-slave port (10921); its HA port is SLAVE_PORT + 1
#   GRPC_PORT         broker-a-master's gRPC endpoint (8081)
#   SLUICE_PROFILE    cargo profile to build and run: release (default) or debug
#   SLUICE_BIN_DIR    run the binaries found there and build nothing
#   COMMITLOG_SIZE    mappedFileSizeCommitLog (64 MiB here; the configs say 1 GiB)
#   STOP_TIMEOUT      seconds `down` waits after SIGTERM before SIGKILL (30)
#   RUST_LOG          log filter of the processes (info)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
dir="${SLUICE_LOCAL_DIR:-$here/.local}"
profile="${SLUICE_PROFILE:-release}"
target="${CARGO_TARGET_DIR:-$root/target}"
[[ "$target" == /* ]] || target="$root/$target"
[[ "$profile" == dev ]] && profile=debug # cargo's name for target/debug
bin="${SLUICE_BIN_DIR:-$target/$profile}"
topology="$here/1m-1s-sync"
ns_port="${NAMESRV_PORT:-9876}"
master_port="${MASTER_PORT:-10911}"
slave_port="${SLAVE_PORT:-10921}"
grpc_port="${GRPC_PORT:-8081}"
ns="127.0.0.1:$ns_port"
commitlog_size="${COMMITLOG_SIZE:-67108864}"
stop_timeout="${STOP_TIMEOUT:-30}"
topic="LocalClusterTopic"
export RUST_LOG="${RUST_LOG:-info}"
unset NAMESRV_ADDR # every command below names its name server

# The processes: name, binary, port, HA port (0: none).
processes=(namesrv broker-a-master broker-a-slave)
declare -A binary_of=([namesrv]=mqnamesrv [broker-a-master]=mqbroker [broker-a-slave]=mqbroker)
declare -A port_of=([namesrv]=$ns_port [broker-a-master]=$master_port [broker-a-slave]=$slave_port)
declare -A ha_port_of=([namesrv]=0 [broker-a-master]=$((master_port + 1)) [broker-a-slave]=$((slave_port + 1)))
# The gRPC port (0: none).
declare -A grpc_port_of=([namesrv]=0 [broker-a-master]=$grpc_port [broker-a-slave]=0)

if [[ -t 1 ]]; then bold=$'\033[1m' plain=$'\033[0m'; else bold="" plain=""; fi
say() { printf '%s== %s%s\n' "$bold" "$*" "$plain"; }
die() { printf 'local-cluster: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- binaries

build() {
  if [[ -n "${SLUICE_BIN_DIR:-}" ]]; then
    return
  fi
  local flag=(--release)
  case "$profile" in
    release) ;;
    debug) flag=() ;;
    *) flag=(--profile "$profile") ;;
  esac
  say "building $profile binaries (the first build takes a few minutes)"
  (cd "$root" && cargo build "${flag[@]}" --bins -p nameserver -p broker -p tools -p proxy -q)
}

need_binaries() {
  local b
  for b in mqnamesrv mqbroker mqadmin mqgrpc; do
    [[ -x "$bin/$b" ]] || die "$bin/$b is missing: run '$0 up' (or set SLUICE_BIN_DIR)"
  done
}

mqadmin() { "$bin/mqadmin" "$@"; }

# ---------------------------------------------------------------- processes

# The pid of a running process of ours (from its pid file, checked against /proc), or nothing.
pid_of() {
  local name=$1 pid
  [[ -f "$dir/$name.pid" ]] || return 0
  pid=$(<"$dir/$name.pid")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  if [[ -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "${binary_of[$name]}"; then
    echo "$pid"
  fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Whether PID exists and is not a zombie.
alive() { kill -0 "$1" 2>/dev/null && [[ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]]; }

log_tail() {
  echo "---- last lines of $dir/$1.log" >&2
  tail -n 30 "$dir/$1.log" >&2 || true
}

# start NAME ARGS...: starts NAME's binary with ARGS unless it runs already, and waits
# until it logs that it is listening.
start() {
  local name=$1 pid port
  shift
  pid=$(pid_of "$name")
  if [[ -n "$pid" ]]; then
    echo "$name already running (pid $pid)"
    return
  fi
  for port in "${port_of[$name]}" "${ha_port_of[$name]}" "${grpc_port_of[$name]}"; do
    if [[ "$port" != 0 ]] && port_open "$port"; then
      die "port $port (for $name) is taken by another process; pick other ports with NAMESRV_PORT, MASTER_PORT, SLAVE_PORT, GRPC_PORT"
    fi
  done
  [[ -f "$dir/$name.log" ]] && mv -f "$dir/$name.log" "$dir/$name.log.1"
  rm -f "$dir/$name.pid"
  # A session of its own: the process outlives this script and the terminal. The shell
  # writes its pid, then becomes the binary (same pid).
  # shellcheck disable=SC2016 # expanded by the inner shell, on purpose
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$dir/$name.pid" "$bin/${binary_of[$name]}" "$@" \
    </dev/null >"$dir/$name.log" 2>&1 &
  local waited=0
  until grep -q "listening on " "$dir/$name.log" 2>/dev/null; do
    # alive, not pid_of: while the shell execs the binary its cmdline may read empty.
    pid=$(cat "$dir/$name.pid" 2>/dev/null || true)
    if [[ -n "$pid" ]] && ! alive "$pid"; then
      log_tail "$name"
      die "$name exited during start"
    fi
    if ((waited >= 600)); then
      log_tail "$name"
      die "$name did not start within 60 s"
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  echo "$name started (pid $(pid_of "$name"), 127.0.0.1:${port_of[$name]}, log $dir/$name.log)"
}

# start_broker NAME: starts a broker from its config. When the other broker of the pair
# is the master now (after a drill, or a failover after this one died), this one joins
# as its slave instead of becoming a second master.
start_broker() {
  local name=$1 peer role extra=()
  [[ "$name" == broker-a-master ]] && peer=broker-a-slave || peer=broker-a-master
  if [[ "${grpc_port_of[$name]}" != 0 ]]; then
    extra+=(--enable-proxy -o "grpcServerPort=${grpc_port_of[$name]}")
  fi
  if [[ -z "$(pid_of "$name")" && -n "$(pid_of "$peer")" ]]; then
    role=$(ha_field "${port_of[$peer]}" role)
    if [[ "$role" == *MASTER && "$name" == broker-a-master ]]; then
      echo "$peer is the master now: $name joins as its slave"
      # Promoted again later, it takes its configured role back.
      role=$(sed -n 's/^brokerRole *= *"\([A-Z_]*\)".*/\1/p' "$topology/$name.toml")
      extra+=(-o brokerRole=SLAVE -o brokerId=1 -o "masterRoleOnSwitch=$role")
    elif [[ "$role" == SLAVE && "$name" == broker-a-slave ]]; then
      echo "warning: $peer is a slave and $name starts as one: promote one with" >&2
      echo "  $bin/mqadmin switchRole -n $ns -b 127.0.0.1:${port_of[$peer]} -r MASTER" >&2
    fi
  fi
  start "$name" -c "$topology/$name.toml" -n "$ns" \
    -o "listenPort=${port_of[$name]}" -o "haListenPort=${ha_port_of[$name]}" \
    -o "bindAddress=127.0.0.1" -o "brokerIP1=127.0.0.1" \
    -o "storePathRootDir=$dir/$name" -o "mappedFileSizeCommitLog=$commitlog_size" \
    "${extra[@]}"
  # A slave learns its master's address when it registers (then every 30 s): the master
  # must be registered before its slave starts.
  local waited=0
  until mqadmin clusterList -n "$ns" 2>/dev/null | grep -q " 127.0.0.1:${port_of[$name]} "; do
    if ((waited >= 300)); then
      log_tail "$name"
      die "$name did not register with the name server within 30 s"
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
}

stop() { # name
  local name=$1 pid waited=0
  pid=$(pid_of "$name")
  if [[ -n "$pid" ]]; then
    kill -TERM "$pid"
    while [[ -n "$(pid_of "$name")" ]]; do
      if ((waited >= stop_timeout * 10)); then
        echo "$name (pid $pid) ignored SIGTERM for $stop_timeout s; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
        break
      fi
      sleep 0.1
      waited=$((waited + 1))
    done
    echo "$name stopped"
  fi
  rm -f "$dir/$name.pid"
}

# ---------------------------------------------------------------- the cluster

# Field KEY of `mqadmin haStatus` output TEXT ("role", "connected", "maxOffset", ...).
field() { # text key
  awk -v k="$2" '{ i = index($0, ": "); key = substr($0, 1, i - 1); sub(/ +$/, "", key); if (key == k) print substr($0, i + 2) }' <<<"$1"
}

# haStatus field KEY of the broker at PORT.
ha_field() { # port key
  field "$(mqadmin haStatus -n "$ns" -b "127.0.0.1:$1" 2>/dev/null)" "$2"
}

# Sets `master` and `slave` to the names of the brokers that have those roles now.
find_roles() {
  master="" slave=""
  local name role
  for name in broker-a-master broker-a-slave; do
    role=$(ha_field "${port_of[$name]}" role)
    case "$role" in
      SLAVE) slave=$name ;;
      SYNC_MASTER | ASYNC_MASTER) master=$name ;;
    esac
  done
  [[ -n "$master" && -n "$slave" ]] || die "cannot tell master and slave apart (is the cluster up? '$0 status')"
}

# Waits until the slave follows the master and holds everything the master had when
# the wait began (producers may go on writing meanwhile).
wait_replicating() {
  local waited=0 m s
  m=$(ha_field "${port_of[$master]}" maxOffset)
  while :; do
    s=$(ha_field "${port_of[$slave]}" maxOffset)
    if [[ "$(ha_field "${port_of[$slave]}" connected)" == true && -n "$m" && -n "$s" ]] && ((s >= m)); then
      echo "$slave follows $master, caught up at offset $m"
      return
    fi
    if ((waited >= 300)); then
      die "$slave does not catch up with $master (offsets ${m:-?} / ${s:-?}); logs in $dir"
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
}

# Sends one message and reads it back by its (unique) body.
round_trip() {
  local body since out
  body="hello from sluice $(date +%T) $$-$RANDOM"
  since=$(($(date +%s) * 1000 - 1000))
  mqadmin updateTopic -n "$ns" -c DefaultCluster -t "$topic" -r 4 -w 4 >/dev/null
  mqadmin sendMessage -n "$ns" -t "$topic" -p "$body" -c TagA -k "local-$$"
  out=$(mqadmin consumeMessage -n "$ns" -t "$topic" -s "$since" -c 1000)
  if grep -qF -- "BODY: $body" <<<"$out"; then
    echo "read back: $body"
  else
    printf '%s\n' "$out" >&2
    die "the message just sent did not come back"
  fi
}

# Sends one message through broker-a-master's gRPC endpoint (as a 5.x SDK's producer: route,
# then the queue's broker's endpoint) and reads it back over remoting by its body. Only while
# broker-a-master is the master: a slave's endpoint refuses sends, as Apache's local mode.
grpc_round_trip() {
  local body since out
  if [[ "$(ha_field "$master_port" role)" == SLAVE ]]; then
    echo "gRPC: skipped, broker-a-master is a slave now (its endpoint refuses sends)"
    return
  fi
  body="hello over gRPC $(date +%T) $$-$RANDOM"
  since=$(($(date +%s) * 1000 - 1000))
  "$bin/mqgrpc" sendMessage -e "127.0.0.1:$grpc_port" -t "$topic" -p "$body" -c TagA -k "grpc-$$"
  out=$(mqadmin consumeMessage -n "$ns" -t "$topic" -s "$since" -c 1000)
  if grep -qF -- "BODY: $body" <<<"$out"; then
    echo "read back: $body"
  else
    printf '%s\n' "$out" >&2
    die "the message just sent over gRPC did not come back"
  fi
}

show() {
  mqadmin clusterList -n "$ns" || true
  local name text
  for name in broker-a-master broker-a-slave; do
    [[ -n "$(pid_of "$name")" ]] || continue
    if ! text=$(mqadmin haStatus -n "$ns" -b "127.0.0.1:${port_of[$name]}" 2>&1); then
      printf '%-16s 127.0.0.1:%-6s %s\n' "$name" "${port_of[$name]}" "haStatus failed: $text"
      continue
    fi
    printf '%-16s 127.0.0.1:%-6s %-13s id %s  maxOffset %-8s ' "$name" "${port_of[$name]}" \
      "$(field "$text" role)" "$(field "$text" brokerId)" "$(field "$text" maxOffset)"
    if [[ "$(field "$text" role)" == SLAVE ]]; then
      echo "master $(field "$text" master) connected $(field "$text" connected)"
    else
      echo "slaves $(field "$text" slaves) acked $(field "$text" slaveAckOffset)"
    fi
  done
}

# ---------------------------------------------------------------- commands

up() {
  build
  need_binaries
  mkdir -p "$dir"
  start namesrv -c "$here/namesrv.toml" -o "listenPort=$ns_port" -o "bindAddress=127.0.0.1" \
    -o "kvConfigPath=$dir/namesrv/kvConfig.json" -o "configStorePath=$dir/namesrv/namesrv.properties"
  start_broker broker-a-master
  start_broker broker-a-slave
  find_roles
  wait_replicating
  say "a message through the cluster"
  round_trip
  say "a message through the gRPC endpoint (127.0.0.1:$grpc_port)"
  grpc_round_trip
  say "cluster"
  show
  say "up: name server $ns, $master 127.0.0.1:${port_of[$master]} (master), $slave 127.0.0.1:${port_of[$slave]} (slave), gRPC 127.0.0.1:$grpc_port (broker-a-master)"
  echo "logs:   $dir/{namesrv,broker-a-master,broker-a-slave}.log"
  echo "try:    $bin/mqadmin clusterList -n $ns"
  echo "        $bin/mqgrpc sendMessage -e 127.0.0.1:$grpc_port -t $topic -p hello"
  echo "        $0 drill      (role switch)      $0 down"
}

status() {
  local name pid down=0
  for name in "${processes[@]}"; do
    pid=$(pid_of "$name")
    if [[ -n "$pid" ]]; then
      echo "$name: running (pid $pid, 127.0.0.1:${port_of[$name]}, log $dir/$name.log)"
    else
      echo "$name: stopped"
      down=1
    fi
  done
  if [[ -n "$(pid_of namesrv)" ]]; then
    show
  fi
  return $((down * 3))
}

# Promotes the current slave and makes the old master its slave, keeping the pair's
# replication mode. A SYNC_MASTER acknowledges a send only once a slave holds it, so a
# slave promoted straight to SYNC_MASTER answers every send SLAVE_NOT_AVAILABLE until the
# old master has rejoined as its slave: producers see an outage. The safe sequence:
#   1. promote the slave as ASYNC_MASTER (it acknowledges at once; nothing to wait for),
#   2. demote the old master to its slave (it cuts what the new master does not have),
#   3. wait until that slave has caught up,
#   4. switch the new master to SYNC_MASTER: from here on every SEND_OK is replicated.
# Between 1 and 4 an acknowledged message is held by one broker only, for as long as the
# catch-up takes (milliseconds here).
switch() {
  find_roles
  local old_master=$master old_slave=$slave mode
  mode=$(ha_field "${port_of[$old_master]}" role)
  say "switching $old_slave (127.0.0.1:${port_of[$old_slave]}) to master (ASYNC_MASTER until its slave has caught up)"
  mqadmin switchRole -n "$ns" -b "127.0.0.1:${port_of[$old_slave]}" -r MASTER -t ASYNC_MASTER
  say "switching $old_master (127.0.0.1:${port_of[$old_master]}) to slave of $old_slave"
  mqadmin switchRole -n "$ns" -b "127.0.0.1:${port_of[$old_master]}" -r SLAVE \
    -m "127.0.0.1:${port_of[$old_slave]}"
  find_roles
  [[ "$master" == "$old_slave" ]] || die "$old_slave did not become master"
  wait_replicating
  if [[ "$mode" == SYNC_MASTER ]]; then
    say "$old_master has caught up: $old_slave becomes SYNC_MASTER, as the pair was"
    mqadmin switchRole -n "$ns" -b "127.0.0.1:${port_of[$old_slave]}" -r MASTER -t SYNC_MASTER
  fi
  say "a message through the new master"
  round_trip
  wait_replicating
}

drill() {
  local back=0
  case "${1:-}" in
    --back) back=1 ;;
    "") ;;
    *) die "usage: $0 drill [--back]" ;;
  esac
  need_binaries
  status >/dev/null || die "the cluster is not (fully) up: '$0 status'"
  say "before"
  show
  switch
  say "after"
  show
  if ((back)); then
    switch
    say "after switching back"
    show
  else
    echo "(run '$0 drill' again to switch back; '$0 down' and 'up' restart both in their configured roles)"
  fi
}

down() {
  # The current slave first, so that no broker is left following a stopped master.
  local first=broker-a-slave
  if [[ -n "$(pid_of broker-a-master)" && "$(ha_field "$master_port" role)" == SLAVE ]]; then
    first=broker-a-master
  fi
  stop "$first"
  stop broker-a-master
  stop broker-a-slave
  stop namesrv
}

clean() {
  down
  rm -rf "$dir"
  echo "removed $dir"
}

case "${1:-}" in
  up) up ;;
  status) status ;;
  drill) shift; drill "$@" ;;
  down) down ;;
  clean) clean ;;
  *)
    echo "usage: $0 up|status|drill [--back]|down|clean" >&2
    exit 2
    ;;
esac
