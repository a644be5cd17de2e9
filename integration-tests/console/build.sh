#!/usr/bin/env bash
# Installs the console check's one dependency (playwright-core, from the npm registry; it
# drives the machine's Chromium and downloads no browser) into OUT, and copies the check
# there. Skips the install when OUT already has this package.json's dependencies.
#   build.sh OUT
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$1"
mkdir -p "$out"
if ! cmp -s "$here/package.json" "$out/package.json" || [ ! -d "$out/node_modules/playwright-core" ]; then
  start=$(date +%s)
  cp "$here/package.json" "$out/package.json"
  (cd "$out" && npm install --no-audit --no-fund --loglevel=error >&2)
  echo "build.sh: playwright-core installed in $(( $(date +%s) - start ))s" >&2
fi
cp "$here/console_check.mjs" "$out/console_check.mjs"
