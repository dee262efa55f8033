#!/usr/bin/env bash
# result_schema_check.sh KVCHECK PYTHON OUTDIR PLUGIN — result documents that kvcheck writes (a
# clean run, a corrupt one with a first failure, a control whose regression a setting rules out (a
# coverage gap), a sampled-mode one, one with a backend plugin) are
# valid under the committed scenarios/schema/result.schema.json for a standard validator
# (python3-jsonschema).
set -euo pipefail
kvcheck="$1" python="$2" out="$3" plugin="$4"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rm -rf "$out" && mkdir -p "$out"
"$kvcheck" run -q --out "$out" "$repo/scenarios/smoke.json"
"$kvcheck" run -q --out "$out" "$repo/scenarios/regressions/new-blocks-not-zeroed.json"
"$kvcheck" run -q --out "$out" "$repo/scenarios/regressions/gather-assumes-contiguous-plain.json"
grep -q '"mechanism": "cache.layout"' "$out/gather-assumes-contiguous-plain.json"
"$kvcheck" run -q --out "$out/sampled" --sampled-requests 2 "$repo/scenarios/smoke.json"
"$kvcheck" run -q --out "$out/backend" --backend "$plugin" "$repo/scenarios/smoke.json"
"$python" "$repo/scripts/validate-scenarios.py" --schema "$repo/scenarios/schema/result.schema.json" \
  "$out"/*.json "$out"/sampled/*.json "$out"/backend/*.json
