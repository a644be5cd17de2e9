#!/usr/bin/env bash
# Lays out the Python gRPC case program's environment: a venv in OUTDIR/venv with the pinned
# requirements.txt (rocketmq-python-client from PyPI and what it pulls in), installed with pip
# through the pip cache ($SLUICE_PIP_CACHE, else ~/.cache/pip), and a copy of grpc_client.py.
#
#   setup.sh OUTDIR          then: OUTDIR/venv/bin/python OUTDIR/grpc_client.py normal ...
#
# Idempotent: does nothing when OUTDIR is newer than requirements.txt, grpc_client.py and this
# script and the venv's python still runs. Serialised with flock on OUTDIR/.build.lock.
# SLUICE_PYTHON picks the interpreter (python3 by default; 3.9 or newer).
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

if [[ -f $stamp && -x $outdir/venv/bin/python \
      && -z $(find "$here/requirements.txt" "$here/grpc_client.py" "$here/setup.sh" -newer "$stamp" -print -quit) ]] \
      && "$outdir/venv/bin/python" -c 'import rocketmq' 2>/dev/null; then
    exit 0
fi
rm -f "$stamp"
started=$(date +%s)
echo "setup.sh: installing the Python gRPC SDK into $outdir/venv" >&2
rm -rf "$outdir/venv"
"${SLUICE_PYTHON:-python3}" -m venv "$outdir/venv"
PIP_CACHE_DIR=${SLUICE_PIP_CACHE:-$HOME/.cache/pip} PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$outdir/venv/bin/pip" install --quiet -r "$here/requirements.txt" >&2
cp "$here/grpc_client.py" "$outdir/grpc_client.py"
touch "$stamp"
echo "setup.sh: Python gRPC SDK installed in $(( $(date +%s) - started ))s" >&2
