#!/usr/bin/env bash
# The Maven step shared by java/build.sh (the Java test programs) and java-broker/build.sh
# (Apache RocketMQ's own name server and broker): for one RocketMQ version, resolve the
# project's dependencies — and, when it builds an app jar, compile it — then record the
# run-time class path and lay out a ROCKETMQ_HOME from the project's conf/.
#
#   maven-build.sh PROJECT_DIR VERSION OUTDIR DESCRIPTION [--app-jar]
#
# Writes, under OUTDIR/VERSION/: classpath.txt (':'-separated, one line), rocketmq-home/conf/
# (a copy of PROJECT_DIR/conf), build/ (Maven's target directory for this version) and, with
# --app-jar, app.jar. Idempotent: does nothing when the outputs are newer than the project's
# pom.xml, build.sh, src/ and conf/ (and this script) and every jar on the class path is still
# there. Serialised with flock on OUTDIR/.build.lock, so parallel callers wait for one another
# and share ~/.m2 safely. SLUICE_MVN_ARGS adds Maven arguments (e.g. -o, -Dmaven.repo.local=...).
set -euo pipefail

if [[ $# -lt 4 || $# -gt 5 || ( $# -eq 5 && $5 != --app-jar ) ]]; then
    echo "usage: $0 PROJECT_DIR VERSION OUTDIR DESCRIPTION [--app-jar]" >&2
    exit 2
fi
project=$(cd "$1" && pwd)
version=$2
description=$4
app_jar=${5:+yes}
if [[ ! $version =~ ^[0-9A-Za-z._-]+$ ]]; then
    echo "build.sh: bad version: $version" >&2
    exit 2
fi
self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
mkdir -p "$3"
outdir=$(cd "$3" && pwd)
dest=$outdir/$version
stamp=$dest/.built

exec 9>"$outdir/.build.lock"
flock 9

inputs=("$project/pom.xml" "$project/build.sh" "$project/conf" "$self")
[[ -d $project/src ]] && inputs+=("$project/src")

up_to_date() {
    [[ -f $stamp && -f $dest/classpath.txt ]] || return 1
    [[ -z $app_jar || -f $dest/app.jar ]] || return 1
    local f
    for f in "$project"/conf/*; do
        [[ -f $dest/rocketmq-home/conf/$(basename "$f") ]] || return 1
    done
    [[ -z $(find "${inputs[@]}" -newer "$stamp" -print -quit) ]] || return 1
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
echo "build.sh: $description $version into $dest" >&2

goals=(dependency:build-classpath)
[[ -n $app_jar ]] && goals=(package dependency:build-classpath)
# shellcheck disable=SC2086 # SLUICE_MVN_ARGS is a list of words on purpose
mvn -q -B -Dstyle.color=never ${SLUICE_MVN_ARGS:-} \
    -f "$project/pom.xml" \
    -Drocketmq.version="$version" \
    -DbuildDirectory="$dest/build" \
    -Dmdep.outputFile="$dest/classpath.txt.tmp" \
    "${goals[@]}" 2>&1 \
    | sed -e 's/\x1b\[[0-9;]*m//g' >&2   # Debian's Maven 3.8 prints colour resets even with -B

if [[ ! -s $dest/classpath.txt.tmp ]]; then
    echo "build.sh: Maven wrote no class path" >&2
    exit 1
fi
# Maven writes the class path without a trailing newline; keep it one clean line.
tr -d '\n' < "$dest/classpath.txt.tmp" > "$dest/classpath.txt"
rm -f "$dest/classpath.txt.tmp"
if [[ -n $app_jar ]]; then
    cp "$dest/build/app.jar" "$dest/app.jar.tmp"
    mv "$dest/app.jar.tmp" "$dest/app.jar"
fi

rm -rf "$dest/rocketmq-home.tmp"
mkdir -p "$dest/rocketmq-home.tmp/conf"
cp "$project"/conf/* "$dest/rocketmq-home.tmp/conf/"
rm -rf "$dest/rocketmq-home"
mv "$dest/rocketmq-home.tmp" "$dest/rocketmq-home"

touch "$stamp"
echo "build.sh: $description $version done in $(( $(date +%s) - started ))s" >&2
