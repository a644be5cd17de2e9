#!/usr/bin/env bash
# Resolves Apache RocketMQ's broker (org.apache.rocketmq:rocketmq-broker VERSION, from Maven Central)
# and lays out what it needs to run, for the HA interop tests (integration-tests/tests/ha_interop.rs).
#
#   build.sh VERSION OUTDIR
#
# Writes, under OUTDIR/VERSION/:
#   classpath.txt     the broker and its dependencies, ':'-separated, one line
#   rocketmq-home/    a ROCKETMQ_HOME (conf/logback_broker.xml: 4.x's BrokerStartup exits without it)
#
# Then:
#   ROCKETMQ_HOME=OUTDIR/VERSION/rocketmq-home java <flags, see README.md> \
#       -cp "$(cat OUTDIR/VERSION/classpath.txt)" org.apache.rocketmq.broker.BrokerStartup -c broker.conf
#
# The work is integration-tests/maven-build.sh's (shared with the other build.sh).
# Idempotent: does nothing when the outputs are newer than pom.xml, build.sh and conf/ and every
# jar on the class path is still there; works offline (SLUICE_MVN_ARGS=-o) once ~/.m2 holds the
# jars. Builds are serialised with flock on OUTDIR/.build.lock. Extra Maven arguments may be given
# in SLUICE_MVN_ARGS (e.g. -o, -Dmaven.repo.local=...).
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 VERSION OUTDIR" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/../maven-build.sh" "$here" "$1" "$2" "resolving Apache RocketMQ name server + broker"
