#!/usr/bin/env bash
# Builds the Go test programs (rocketmq-client-go) into OUTDIR.
#
#   build.sh OUTDIR
#
# Writes OUTDIR/producer and OUTDIR/push-consumer. Modules come through the Go module proxy into
# the module cache (GOMODCACHE, ~/go/pkg/mod by default); compiled packages go to the build cache
# (GOCACHE, ~/.cache/go-build). go.sum pins every module; the build never edits go.mod/go.sum.
#
# Idempotent: does nothing when both binaries are newer than go.mod, go.sum, build.sh and every
# .go file. Builds are serialised with flock on OUTDIR/.build.lock, so parallel callers (test
# binaries) wait for one another. The installed Go is used as is (GOTOOLCHAIN=local: never a
# toolchain download). Extra `go build` arguments may be given in SLUICE_GO_BUILD_ARGS.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$1"
outdir=$(cd "$1" && pwd)
stamp=$outdir/.built
programs=(producer push-consumer)

exec 9>"$outdir/.build.lock"
flock 9

up_to_date() {
    [[ -f $stamp ]] || return 1
    local p
    for p in "${programs[@]}"; do
        [[ -x $outdir/$p ]] || return 1
    done
    [[ -z $(find "$here/go.mod" "$here/go.sum" "$here/build.sh" "$here/cmd" "$here/internal" \
        -newer "$stamp" -print -quit) ]]
}

if up_to_date; then
    exit 0
fi

rm -f "$stamp"
started=$(date +%s)
echo "build.sh: building the Go test programs into $outdir" >&2
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false"
tmp=$outdir/.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
cd "$here"
# shellcheck disable=SC2086 # SLUICE_GO_BUILD_ARGS is a list of words on purpose
go build ${SLUICE_GO_BUILD_ARGS:-} -trimpath -o "$tmp/" ./cmd/... >&2
for p in "${programs[@]}"; do
    mv "$tmp/$p" "$outdir/$p"
done
rmdir "$tmp"
touch "$stamp"
echo "build.sh: Go programs built in $(( $(date +%s) - started ))s" >&2
