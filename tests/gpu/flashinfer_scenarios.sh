#!/usr/bin/env bash
# flashinfer_scenarios.sh PROBE KVCHECK PLUGIN REPO OUTDIR — every scenario of the repository
# through the FlashInfer plugin on a GPU, regressions off (ctest gpu-flashinfer-scenarios; exit 77
# without a GPU). A scenario FlashInfer can take must come out clean with FlashInfer running some
# of its op calls; one it cannot take must be refused up front as "cannot run" (exit 3) naming
# the capability. Never a false alarm, a crash or a silent pass. The GPU-scale scenarios run one
# epoch with one sampled request, to keep the test short.
set -uo pipefail
probe=$1 kvcheck=$2 plugin=$3 repo=$4 out=$5
"$probe" >/dev/null 2>&1 || exit 77
mkdir -p "$out"
fail=0 ran=0 refused=0
while IFS= read -r f; do
  extra=()
  [ "$(dirname "$f")" = "$repo/scenarios/gpu" ] && extra=(--epochs 1 --sampled-requests 1)
  name=${f#"$repo"/scenarios/}
  "$kvcheck" run "$f" --device cuda --backend "$plugin" --no-regressions --expect clean \
    "${extra[@]}" --json -q --out "$out/runs" >"$out/doc.json" 2>"$out/err.txt"
  rc=$?
  if [ "$rc" -eq 3 ] && grep -q "cannot run: backend flashinfer" "$out/err.txt"; then
    refused=$((refused + 1))
    continue
  fi
  calls=$(python3 -c "import json,sys
print(json.load(open(sys.argv[1]))['results'][0]['backend']['backend_calls'])" \
          "$out/doc.json" 2>/dev/null || echo 0)
  if [ "$rc" -ne 0 ] || [ "$calls" -eq 0 ]; then
    echo "FAIL $name: exit $rc, FlashInfer ran $calls op calls"
    head -5 "$out/err.txt"
    fail=1
  else
    ran=$((ran + 1))
  fi
done < <(find "$repo/scenarios" -name '*.json' -not -path '*/schema/*' | sort)
echo "flashinfer: $ran scenarios clean, $refused refused up front"
[ "$ran" -gt 0 ] && exit "$fail"
exit 1
