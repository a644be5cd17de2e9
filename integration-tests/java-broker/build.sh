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
# Idempotent: does nothing when the outputs are newer than pom.xml, build.sh and conf/ and every
# jar on the class path is still there; works offline (SLUICE_MVN_ARGS=-o) once ~/.m2 holds the
# jars. Builds are serialised with flock on OUTDIR/.build.lock. Extra Maven arguments may be given
# in SLUICE_MVN_ARGS (e.g. -o, -Dmaven.repo.local=...).
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 VERSION OUTDIR" >&2
    exit 2
fi
version=$1
if [[ ! $version =~ ^[0-9A-Za-z._-]+$ ]]; then
    echo "build.sh: bad version: $version" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$2"
outdir=$(cd "$2" && pwd)
dest=$outdir/$version
stamp=$dest/.built

exec 9>"$outdir/.build.lock"
flock 9

up_to_date() {
    [[ -f $stamp && -f $dest/classpath.txt && -f $dest/rocketmq-home/conf/logback_broker.xml ]] || return 1
    [[ -z $(find "$here/pom.xml" "$here/build.sh" "$here/conf" -newer "$stamp" -print -quit) ]] || return 1
    local jar
    local -a jars
    IFS=: read -r -a jars < "$dest/classpath.txt"
    for jar in "${jars[@]}"; do
        [[ -f $jar ]] || return 1
    done
}

if up_to_date; then
    exit 0
fi

mkdir -p "$dest"
rm -f "$stamp"
started=$(date +%s)
echo "build.sh: resolving Apache RocketMQ broker $version into $dest" >&2

# shellcheck disable=SC2086 # SLUICE_MVN_ARGS is a list of words on purpose
mvn -q -B -Dstyle.color=never ${SLUICE_MVN_ARGS:-} \
    -f "$here/pom.xml" \
    -Drocketmq.version="$version" \
    -DbuildDirectory="$dest/build" \
    -Dmdep.outputFile="$dest/classpath.txt.tmp" \
    dependency:build-classpath 2>&1 \
    | sed -e 's/\x1b\[[0-9;]*m//g' >&2   # Debian's Maven 3.8 prints colour resets even with -B

if [[ ! -s $dest/classpath.txt.tmp ]]; then
    echo "build.sh: Maven wrote no class path" >&2
    exit 1
fi
tr -d '\n' < "$dest/classpath.txt.tmp" > "$dest/classpath.txt"
rm -f "$dest/classpath.txt.tmp"

rm -rf "$dest/rocketmq-home.tmp"
mkdir -p "$dest/rocketmq-home.tmp/conf"
cp "$here"/conf/* "$dest/rocketmq-home.tmp/conf/"
rm -rf "$dest/rocketmq-home"
mv "$dest/rocketmq-home.tmp" "$dest/rocketmq-home"

touch "$stamp"
echo "build.sh: Apache RocketMQ broker $version resolved in $(( $(date +%s) - started ))s" >&2
