#!/usr/bin/env bash
# Compares `agent run` with `opencode run` on the same scripted sessions (six steps, 100 reads,
# 1000 reads) through the project's scripted OpenAI-compatible server; prints wall time, peak RSS
# and per-step overhead for both, and the ratios. Needs network access to the npm registry
# (OpenCode is installed into a temporary directory, removed afterwards) and GNU time.
#
#   scripts/bench/compare.sh                 # every scenario
#   scripts/bench/compare.sh six,100         # some of them
#   OPENCODE_VERSION=1.18.33 scripts/bench/compare.sh
#
# Run `pnpm build` first: the bundled CLI is what is measured.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
version="${OPENCODE_VERSION:-1.18.33}"
scenarios="${1:-six,100,1000}"

if [ ! -f "$root/packages/cli/dist/bundle/bin.js" ]; then
  echo "compare: build first (pnpm build)" >&2
  exit 2
fi

install_dir="$(mktemp -d "${TMPDIR:-/tmp}/opencode-ai-XXXXXX")"
trap 'rm -rf "$install_dir"' EXIT

echo "installing opencode-ai@$version into $install_dir" >&2
npm install --prefix "$install_dir" --no-audit --no-fund --loglevel=error "opencode-ai@$version" >&2
opencode="$install_dir/node_modules/.bin/opencode"
"$opencode" --version >/dev/null

cd "$root"
node --import tsx scripts/bench/compare.ts "$opencode" "$scenarios"
