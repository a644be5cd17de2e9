#!/usr/bin/env bash
# Builds the Java test programs against one RocketMQ version and records the run-time class path.
#
#   build.sh VERSION OUTDIR
#
# Writes, under OUTDIR/VERSION/:
#   app.jar           the programs in src/main/java/sluice/it
#   classpath.txt     the dependencies (rocketmq-client, rocketmq-tools, ...), ':'-separated, one line
#   rocketmq-home/    a ROCKETMQ_HOME for mqadmin (conf/logback_tools.xml, needed by 4.x)
#   build/            Maven's target directory for this version (never shared between versions)
#
# Then:
#   java -cp "$(cat OUTDIR/VERSION/classpath.txt):OUTDIR/VERSION/app.jar" sluice.it.RouteProbe ...
#   ROCKETMQ_HOME=OUTDIR/VERSION/rocketmq-home java -cp ... \
#       org.apache.rocketmq.tools.command.MQAdminStartup clusterList -n 127.0.0.1:PORT
#
# The work is integration-tests/maven-build.sh's (shared with the other build.sh).
# Idempotent: does nothing when the outputs are newer than pom.xml, build.sh, src/ and conf/ and
# every jar on the class path is still there. Builds are serialised with flock on
# OUTDIR/.build.lock, so parallel callers (test binaries) wait for one another and share ~/.m2
# safely. Extra Maven arguments may be given in SLUICE_MVN_ARGS (e.g. -o, -Dmaven.repo.local=...).
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 VERSION OUTDIR" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/../maven-build.sh" "$here" "$1" "$2" "building sluice-it-java against RocketMQ" --app-jar
