#!/usr/bin/env bash
# `make deploy-check`: the syntax and structure of deploy/ (no process is started; the
# configs and local-cluster.sh are run for real by integration-tests/tests/deploy.rs).
#
#   1. shell scripts: `bash -n` / `sh -n`, and shellcheck when it is installed
#   2. deploy/check.py: broker configs, systemd units (plus `systemd-analyze verify` when
#      installed), Kubernetes manifests (PyYAML; plus `kubectl kustomize` when installed)
#
# PyYAML comes from the machine's python3 when it has it, else from a venv this script
# creates once under target/deploy-check-venv (PyPI). Arguments go to check.py
# (`deploy/check.sh --write` regenerates the Kubernetes ConfigMaps).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
[[ "$target" == /* ]] || target="$root/$target"

bash_scripts=("$here/local-cluster.sh" "$here/check.sh")
sh_scripts=("$here/k8s/broker-entrypoint.sh")
for s in "${bash_scripts[@]}"; do bash -n "$s"; done
for s in "${sh_scripts[@]}"; do sh -n "$s"; done
if command -v shellcheck >/dev/null 2>&1; then
  shellcheck "${bash_scripts[@]}" "${sh_scripts[@]}"
  echo "deploy-check: shell scripts clean (bash -n, sh -n, shellcheck)"
else
  echo "deploy-check: shell scripts parse (bash -n, sh -n); shellcheck not installed, skipped"
fi

python=python3
if ! python3 -c 'import yaml; import tomllib' 2>/dev/null; then
  venv="$target/deploy-check-venv"
  if ! "$venv/bin/python" -c 'import yaml' 2>/dev/null; then
    echo "deploy-check: installing PyYAML into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check pyyaml 'tomli; python_version < "3.11"'
  fi
  python="$venv/bin/python"
fi
exec "$python" "$here/check.py" "$@"
