#!/usr/bin/env bash
# Builds the Java gRPC case program (sluice.it.GrpcClient) against rocketmq-client-java VERSION.
#
#   build.sh VERSION OUTDIR
#
# Writes, under OUTDIR/VERSION/: app.jar, classpath.txt (the SDK's shaded jar and its few
# dependencies, ':'-separated, one line). Then:
#   java -cp "$(cat OUTDIR/VERSION/classpath.txt):OUTDIR/VERSION/app.jar" sluice.it.GrpcClient normal ...
#
# The work is integration-tests/maven-build.sh's (idempotent, flock'ed on OUTDIR/.build.lock;
# SLUICE_MVN_ARGS adds Maven arguments, e.g. -o).
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 VERSION OUTDIR" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/../../maven-build.sh" "$here" "$1" "$2" "building the gRPC case program against rocketmq-client-java" --app-jar
