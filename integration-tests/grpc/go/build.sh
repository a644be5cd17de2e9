#!/usr/bin/env bash
# Builds the Go gRPC case program (Apache's golang/v5 SDK) into OUTDIR/grpc-client.
#
#   build.sh OUTDIR
#
# Modules come through the Go module proxy into the module cache (GOMODCACHE, ~/go/pkg/mod by
# default), compiled packages go to Go's build cache; go.sum pins every module and the build never
# edits go.mod/go.sum (-mod=readonly). The installed Go is used as is (GOTOOLCHAIN=local).
# Idempotent: does nothing when the binary is newer than go.mod, go.sum, build.sh and main.go.
# Serialised with flock on OUTDIR/.build.lock. SLUICE_GO_BUILD_ARGS adds `go build` arguments.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$1"
outdir=$(cd "$1" && pwd)
stamp=$outdir/.built

exec 9>"$outdir/.build.lock"
flock 9

if [[ -f $stamp && -x $outdir/grpc-client && -z $(find "$here" -name '*.go' -newer "$stamp" -print -quit) \
      && -z $(find "$here/go.mod" "$here/go.sum" "$here/build.sh" -newer "$stamp" -print -quit) ]]; then
    exit 0
fi
rm -f "$stamp"
started=$(date +%s)
echo "build.sh: building the Go gRPC case program into $outdir" >&2
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false"
cd "$here"
# shellcheck disable=SC2086 # SLUICE_GO_BUILD_ARGS is a list of words on purpose
go build ${SLUICE_GO_BUILD_ARGS:-} -trimpath -o "$outdir/grpc-client.tmp" . >&2
mv "$outdir/grpc-client.tmp" "$outdir/grpc-client"
touch "$stamp"
echo "build.sh: Go gRPC case program built in $(( $(date +%s) - started ))s" >&2
