#!/usr/bin/env bash
# conform_gpu.sh — `kvcheck conform --device cuda` on a GPU (ctest gpu-conform-*); exit 77 (skip)
# without one.
#   clean PROBE KVCHECK PLUGIN OUT.json [MIN_OPS [CONFORM_ARGS...]]
#                                         every op the plugin implements (at least MIN_OPS,
#                                         default 8) is covered by cases and conforms: exit 0
#   fault PROBE KVCHECK PLUGIN            a plugin whose kernel faults: exit 1, "device error"
set -uo pipefail
mode=$1 probe=$2 kvcheck=$3 plugin=$4
"$probe" >/dev/null 2>&1 || exit 77
case "$mode" in
  clean)
    out=$5 min_ops=${6:-8}
    shift 6 2>/dev/null || shift $#
    "$kvcheck" conform --device cuda --backend "$plugin" --json "$@" >"$out" || {
      python3 -c "import json,sys; [print(o['op'], o['passed'], '/', o['cases'], o['first_failure'])
                  for o in json.load(open(sys.argv[1]))['ops']]" "$out"; exit 1; }
    python3 - "$out" "$min_ops" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
min_ops = int(sys.argv[2])
bad = [o["op"] for o in r["ops"] if not (o["covered"] and o["cases"] > 0 and o["ok"])]
for o in r["ops"]:
    print(f'{o["op"]:18} {o["passed"]}/{o["cases"]} worst {o["worst_error"]}')
sys.exit(1 if bad or len(r["ops"]) < min_ops else 0)
PY
    ;;
  fault)
    text=$("$kvcheck" conform --device cuda --backend "$plugin" 2>&1)
    rc=$?
    echo "$text"
    [ "$rc" -eq 1 ] && grep -q "device error" <<<"$text"
    ;;
  *) echo "usage: conform_gpu.sh clean|fault ..." >&2; exit 2 ;;
esac
