#!/usr/bin/env bash
# Time every scenario on the host device and write results/host-speed.md (not scenarios/gpu/:
# GPU scale, hours on the host device; scripts/bench-e2e.sh times them on cuda).
# Usage: scripts/bench-host.sh [KVCHECK]   (default: build/kvcheck; build it first)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kvcheck="${1:-$repo/build/kvcheck}"
out="$repo/results/host-speed.md"
runs="$(mktemp -d)"
trap 'rm -rf "$runs"' EXIT

{
  echo "# Host-device speed"
  echo
  echo "Command: \`scripts/bench-host.sh\` ($(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))."
  echo "Wall time of one \`kvcheck run\` per scenario, as the scenario stands (its own regressions"
  echo "and expectation); \`check\` is the share spent in the float64 reference and the checks."
  echo
  echo "| scenario | verdict | epochs | tokens | blocks allocated | wall (s) | check share |"
  echo "|---|---|---|---|---|---|---|"
  find "$repo/scenarios" -name '*.json' -not -name 'suite.json' -not -path '*/schema/*' -not -path '*/gpu/*' | sort | while read -r f; do
    start=$(date +%s.%N)
    "$kvcheck" run "$f" --json -q --out "$runs" > "$runs/result.json" || true
    end=$(date +%s.%N)
    python3 - "$f" "$runs/result.json" "$start" "$end" "$repo" <<'PY'
import json, os, sys
f, res, start, end, repo = sys.argv[1:]
d = json.load(open(res))["results"][0]  # `run --json`'s document holds the one result
tokens = sum(e["tokens"] for e in d["epochs"])
blocks = sum(e["blocks_allocated"] for e in d["epochs"])
secs = sum(e["seconds"] for e in d["epochs"]) or 1e-9
check = sum(e["check_seconds"] for e in d["epochs"])
print(f"| {os.path.relpath(f, repo)} | {d['verdict']} | {len(d['epochs'])} | {tokens} | {blocks} "
      f"| {float(end) - float(start):.2f} | {100 * check / secs:.0f}% |")
PY
  done
} > "$out"
cat "$out"
