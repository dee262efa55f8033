#!/usr/bin/env bash
# result_schema_check.sh KVCHECK PYTHON OUTDIR PLUGIN — result documents that kvcheck writes (a
# clean run, a corrupt one with a first failure, a control whose regression a setting rules out (a
# coverage gap), a sampled-mode one, one with a backend plugin) are
# valid under the committed scenarios/schema/result.schema.json for a standard validator
# (python3-jsonschema); `run --json`'s documents (two scenarios, one of them corrupt as expected,
# compared with a --baseline; and one that the deadline stops before its first result) are valid
# under scenarios/schema/run.schema.json, whose results are result documents.
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
mkdir -p "$out/run"
"$kvcheck" run -q --no-out --baseline "$out/run/base" --update-baseline "$repo/scenarios/smoke.json"
"$kvcheck" run --json --no-out --baseline "$out/run/base" "$repo/scenarios/smoke.json" \
  "$repo/scenarios/regressions/new-blocks-not-zeroed.json" >"$out/run/two.json"
grep -q '"without": 1' "$out/run/two.json"  # the baseline block is there to be validated
# The deadline (1 s) before the first result: exit 3, a document with no results.
"$python" -c 'import json, sys; s = json.load(open(sys.argv[1])); s["workload"]["epochs"] = 500
json.dump(s, open(sys.argv[2], "w"))' "$repo/scenarios/smoke.json" "$out/run/long.json"
rc=0
"$kvcheck" run --json --no-out --max-seconds 1 "$out/run/long.json" >"$out/run/stopped.json" || rc=$?
[ "$rc" -eq 3 ] && grep -q '"results": \[\]' "$out/run/stopped.json"
"$python" "$repo/scripts/validate-scenarios.py" --schema "$repo/scenarios/schema/run.schema.json" \
  "$out/run/two.json" "$out/run/stopped.json"
# The check can fail: a result inside the run document is held to the result schema.
"$python" -c 'import json, sys; d = json.load(open(sys.argv[1])); d["results"][1]["verdict"] = "x"
json.dump(d, open(sys.argv[2], "w"))' "$out/run/two.json" "$out/run/bad.json"
rc=0
"$python" "$repo/scripts/validate-scenarios.py" --schema "$repo/scenarios/schema/run.schema.json" \
  "$out/run/bad.json" 2>"$out/run/bad.err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "/results/1/verdict" "$out/run/bad.err"
