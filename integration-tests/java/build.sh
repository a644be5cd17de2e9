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
# Idempotent: does nothing when the outputs are newer than pom.xml, build.sh, src/ and conf/ and
# every jar on the class path is still there. Builds are serialised with flock on
# OUTDIR/.build.lock, so parallel callers (test binaries) wait for one another and share ~/.m2
# safely. Extra Maven arguments may be given in SLUICE_MVN_ARGS (e.g. -o, -Dmaven.repo.local=...).
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
    [[ -f $stamp && -f $dest/app.jar && -f $dest/classpath.txt && -f $dest/rocketmq-home/conf/logback_tools.xml ]] || return 1
    [[ -z $(find "$here/pom.xml" "$here/build.sh" "$here/src" "$here/conf" -newer "$stamp" -print -quit) ]] || return 1
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
echo "build.sh: building sluice-it-java against RocketMQ $version into $dest" >&2

# shellcheck disable=SC2086 # SLUICE_MVN_ARGS is a list of words on purpose
mvn -q -B -Dstyle.color=never ${SLUICE_MVN_ARGS:-} \
    -f "$here/pom.xml" \
    -Drocketmq.version="$version" \
    -DbuildDirectory="$dest/build" \
    -Dmdep.outputFile="$dest/classpath.txt.tmp" \
    package dependency:build-classpath 2>&1 \
    | sed -e 's/\x1b\[[0-9;]*m//g' >&2   # Debian's Maven 3.8 prints colour resets even with -B

if [[ ! -s $dest/classpath.txt.tmp ]]; then
    echo "build.sh: Maven wrote no class path" >&2
    exit 1
fi
# Maven writes the class path without a trailing newline; keep it one clean line.
tr -d '\n' < "$dest/classpath.txt.tmp" > "$dest/classpath.txt"
rm -f "$dest/classpath.txt.tmp"
cp "$dest/build/app.jar" "$dest/app.jar.tmp"
mv "$dest/app.jar.tmp" "$dest/app.jar"

rm -rf "$dest/rocketmq-home.tmp"
mkdir -p "$dest/rocketmq-home.tmp/conf"
cp "$here"/conf/* "$dest/rocketmq-home.tmp/conf/"
rm -rf "$dest/rocketmq-home"
mv "$dest/rocketmq-home.tmp" "$dest/rocketmq-home"

touch "$stamp"
echo "build.sh: RocketMQ $version built in $(( $(date +%s) - started ))s" >&2
