#!/usr/bin/env bash
# Resolves Apache RocketMQ's proxy (org.apache.rocketmq:rocketmq-proxy VERSION, from Maven Central)
# for the gRPC SDK tests (integration-tests/tests/grpc_proxy.rs).
#
#   build.sh VERSION OUTDIR
#
# Writes, under OUTDIR/VERSION/:
#   classpath.txt     the proxy and its dependencies, ':'-separated, one line
#   rocketmq-home/    a ROCKETMQ_HOME (conf/: nothing the proxy reads; the tests write its
#                     rmq-proxy.json themselves and pass it with -pc)
#
# Then:
#   java -cp "$(cat OUTDIR/VERSION/classpath.txt)" org.apache.rocketmq.proxy.ProxyStartup \
#       -pm cluster -pc rmq-proxy.json
#
# The work is integration-tests/maven-build.sh's (shared with the other build.sh). Idempotent,
# flock'ed on OUTDIR/.build.lock; SLUICE_MVN_ARGS adds Maven arguments (e.g. -o).
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 VERSION OUTDIR" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/../maven-build.sh" "$here" "$1" "$2" "resolving Apache RocketMQ proxy"
