#!/usr/bin/env bash
# gpu_adapter.sh PROBE KVCHECK PYTHON ADAPTER OPTIONS MIN_OPS SCENARIO — one CUDA adapter of
# backends/python (ctest gpu-python/<adapter>): `kvcheck conform --device cuda` of its ops
# (tolerance 1e-2: bf16 kernels, as for FlashInfer), then SCENARIO on it, regressions off,
# expected clean, with op calls on the adapter. Exit 77 (skip) without a GPU or without torch and
# triton in PYTHON, the interpreter the Python host embeds. OPTIONS: its --backend-option, or "".
set -uo pipefail
probe=$1 kvcheck=$2 python=$3 adapter=$4 options=$5 min_ops=$6 scenario=$7
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$probe" >/dev/null 2>&1 || { echo "no GPU: skipped"; exit 77; }
"$python" -c "import torch, triton" 2>/dev/null || { echo "no torch/triton in $python: skipped"; exit 77; }
opt=()
[ -n "$options" ] && opt=(--backend-option "$options")
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$here/../gpu/conform_gpu.sh" clean "$probe" "$kvcheck" "python:$adapter" "$out/conform.json" \
  "$min_ops" --tolerance 1e-2 "${opt[@]}" || { echo "FAIL: conform"; exit 1; }
"$kvcheck" run "$scenario" --device cuda --backend "python:$adapter" "${opt[@]}" \
  --no-regressions --expect clean --json --out "$out/runs" >"$out/run.json" ||
  { echo "FAIL: $scenario"; tail -c 3000 "$out/run.json"; exit 1; }
"$python" - "$out/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
b = r["backend"]
print(f'{r["scenario"]}: {r["verdict"]}, {b["backend_calls"]} of {b["total_calls"]} op calls on '
      f'{b["name"]} {b["version"]}, loaded in {b["load_seconds"]:.1f} s')
sys.exit(0 if r["verdict"] == "clean" and b["backend_calls"] > 0 else 1)
PY
