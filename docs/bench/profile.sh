#!/usr/bin/env bash
# Profiles one sluice broker during a bench scenario's measured phase (how the bottlenecks in
# BENCHMARKS.md were found):
#
#   docs/bench/profile.sh SCENARIO [master|slave] OUTDIR [strace]
#
# Runs `bench --system sluice --scenario SCENARIO --repeat 1` (release binaries, built first),
# waits for the measured producer to start, then records 6 s of `perf record -g --call-graph dwarf`
# on the broker (and, with `strace`, 4 s of `strace -f -T` of its syscalls). Read with e.g.
#   perf report -i OUTDIR/perf.data --no-children --sort comm,sym --stdio -g none | head -40
set -euo pipefail
if [[ $# -lt 3 ]]; then
    echo "usage: $0 SCENARIO master|slave OUTDIR [strace]" >&2
    exit 2
fi
scenario=$1 role=$2 out=$3 extra=${4:-}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$out"
cd "$root"
cargo build -q --release -p integration-tests --bin bench
target/release/bench --system sluice --scenario "$scenario" --repeat 1 --out "$out/run" \
    --report "$out/BENCHMARKS.md" --charts "$out/charts" > "$out/driver.log" 2>&1 &
driver=$!
log=$out/run/logs/$scenario-sluice-1/mqbench-producer.log
for _ in $(seq 1 1500); do [[ -f $log ]] && break; sleep 0.2; done
sleep 3
pid=$(pgrep -f "sluice-bench-sluice-.*store-$role" | head -1)
echo "broker $role: pid $pid" | tee "$out/pid"
perf record -F 999 -g --call-graph dwarf,16384 -p "$pid" -o "$out/perf.data" -- sleep 6 \
    > "$out/perf.log" 2>&1
if [[ $extra == strace ]]; then
    timeout 4 strace -f -T -p "$pid" -o "$out/strace.txt" \
        -e trace=msync,fsync,fdatasync,futex,writev,write,recvfrom,read,epoll_wait || true
fi
wait "$driver"
grep -E "ok in|FAILED" "$out/driver.log"
