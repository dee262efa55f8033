#!/usr/bin/env bash
# bench-backend.sh KVCHECK PLUGIN [SCENARIO] [RUNS] — what the plugin ABI costs per step: the
# scenario (default scenarios/nightly/fill-4096.json) run RUNS times (default 5) in process and
# through PLUGIN (kvcheck's own ops behind the ABI, e.g. build/backends/libkvcheck_backend_host.so),
# alternating, and the median forward seconds per step of each (the device's steps: what the
# indirection adds to; library load and start-up excluded). Prints a table and the ratio.
# KVCHECK_ARGS (environment) go to both runs, e.g. "--device cuda --sampled-requests 1" for a
# GPU scenario (the reference's cost is outside the step time, a small sample keeps runs short).
set -euo pipefail
kvcheck="$1" plugin="$2"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scenario="${3:-$repo/scenarios/nightly/fill-4096.json}"
runs="${4:-5}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for i in $(seq "$runs"); do
  # shellcheck disable=SC2086  # KVCHECK_ARGS is a list on purpose
  "$kvcheck" run -q --json --out "$out/a" ${KVCHECK_ARGS:-} "$scenario" > "$out/inproc-$i.json"
  # shellcheck disable=SC2086
  "$kvcheck" run -q --json --out "$out/b" ${KVCHECK_ARGS:-} --backend "$plugin" "$scenario" \
    > "$out/plugin-$i.json"
done
python3 - "$out" "$runs" "$scenario" <<'PY'
import json, statistics, sys, pathlib
out, runs, scenario = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def per_step(kind):
    vals = []
    for i in range(1, runs + 1):
        d = json.loads((out / f"{kind}-{i}.json").read_text())["results"][0]  # `run --json`
        steps = sum(e["steps"] for e in d["epochs"])
        vals.append(sum(e["forward_seconds"] for e in d["epochs"]) / steps)
    return vals
a, b = per_step("inproc"), per_step("plugin")
ma, mb = statistics.median(a), statistics.median(b)
print(f"scenario: {scenario}, {runs} alternating runs each")
print(f"{'':12} {'median us/step':>15} {'min':>10} {'max':>10}")
for name, v in (("in process", a), ("plugin", b)):
    print(f"{name:12} {1e6 * statistics.median(v):15.1f} {1e6 * min(v):10.1f} {1e6 * max(v):10.1f}")
print(f"plugin / in process: {mb / ma:.3f}")
PY
