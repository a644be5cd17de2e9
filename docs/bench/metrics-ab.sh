#!/bin/bash
# A/B: the sluice broker's send throughput with metrics off and on (PROM, scraped every 15 s),
# three alternating 25 s runs of async 1 KiB sends each; stores on /dev/shm. Needs a release
# build (cargo build --release -p broker -p nameserver -p tools) and curl. About 4 minutes.
# Measured 2026-12-06: off 136.7k, 122.6k, 149.3k msg/s; on 123.3k, 148.7k, 135.0k.
set -u
B="$(cd "$(dirname "$0")/../.." && pwd)/target/release"
ROOT=/dev/shm/ab-metrics
rm -rf $ROOT; mkdir -p $ROOT
$B/mqnamesrv -o listenPort=39876 -o bindAddress=127.0.0.1 -o kvConfigPath=$ROOT/kv.json > $ROOT/ns.log 2>&1 &
NS=$!
sleep 1
run() {
  local mode=$1 i=$2
  local store=$ROOT/store-$mode-$i
  local extra=""
  if [ "$mode" = on ]; then extra="-o metricsExporterType=PROM -o metricsPromExporterPort=39557 -o metricsPromExporterHost=127.0.0.1"; fi
  $B/mqbroker -n 127.0.0.1:39876 -o brokerIP1=127.0.0.1 -o bindAddress=127.0.0.1 -o listenPort=39911 -o storePathRootDir=$store -o mappedFileSizeCommitLog=1073741824 $extra > $ROOT/b-$mode-$i.log 2>&1 &
  local bp=$!
  sleep 3
  if [ "$mode" = on ]; then (while kill -0 $bp 2>/dev/null; do curl -s 127.0.0.1:39557/metrics > /dev/null; sleep 15; done) & fi
  local t0=$(awk '{print $14+$15}' /proc/$bp/stat)
  local out=$($B/mqbench producer -n 127.0.0.1:39876 --duration 25s --mode async --threads 16 --inflight 16 --connections 2 2>&1 | grep -iE "msg/s|tps" | tail -1)
  local t1=$(awk '{print $14+$15}' /proc/$bp/stat)
  local hz=$(getconf CLK_TCK)
  echo "$mode run $i: cpu_s=$(echo "scale=2; ($t1-$t0)/$hz" | bc) :: $out"
  if [ "$mode" = on ]; then curl -s 127.0.0.1:39557/metrics | grep -E '^rocketmq_messages_in_total' | head -2; fi
  kill $bp; wait $bp 2>/dev/null
  rm -rf $store
}
for i in 1 2 3; do run off $i; run on $i; done
kill $NS
