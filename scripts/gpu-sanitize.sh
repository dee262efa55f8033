#!/usr/bin/env bash
# gpu-sanitize.sh KVCHECK LOGDIR — compute-sanitizer over kvcheck on the GPU (issue 4).
#
# memcheck and initcheck on the clean scenarios (smoke and every seed scenario with
# --no-regressions), racecheck on smoke and seeds 001/002 (it is slow: shared-memory hazards of
# every kernel), then initcheck with new-blocks-not-zeroed on and off on the seed-000 scenario,
# beside kvcheck's own verdict. Each run's log goes to LOGDIR; a markdown summary is printed last
# and written to LOGDIR/sanitizer.md. Exits non-zero when a clean run reports an error.
set -uo pipefail
kvcheck=${1:?usage: gpu-sanitize.sh KVCHECK LOGDIR}
logs=${2:?usage: gpu-sanitize.sh KVCHECK LOGDIR}
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$logs"
summary="$logs/sanitizer.md"
status=0

# One sanitizer run: TOOL NAME SCENARIO KVCHECK-ARGS... ; appends a table row.
run() {
  local tool=$1 name=$2 file=$3
  shift 3
  local log="$logs/$tool-$name.log"
  compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 \
    "$kvcheck" run "$file" --device cuda -q --out "$logs/runs" "$@" > "$log" 2>&1
  local rc=$?
  local errors
  # memcheck/initcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: ... (N errors".
  errors=$( (grep -oE "ERROR SUMMARY: [0-9]+ error" "$log"; grep -oE "\([0-9]+ errors" "$log") |
           tail -1 | grep -oE "[0-9]+" || echo "?")
  local verdict="exit $rc"
  [ $rc -eq 0 ] && verdict="met its expectation"
  [ $rc -eq 1 ] && verdict="did not meet its expectation"
  [ $rc -eq 99 ] && verdict="sanitizer error"
  echo "| $tool | $name | $* | ${errors:-?} | $verdict |" >> "$summary"
  return $rc
}

echo "| tool | scenario | options | sanitizer errors | kvcheck |" > "$summary"
echo "|---|---|---|---:|---|" >> "$summary"
clean=("$repo/scenarios/smoke.json" "$repo"/scenarios/seeds/*.json)
for tool in memcheck initcheck; do
  for f in "${clean[@]}"; do
    name=$(basename "$f" .json)
    run "$tool" "$name" "$f" --no-regressions --expect clean || status=1
  done
done
for f in "$repo/scenarios/smoke.json" "$repo"/scenarios/seeds/00[12]-*.json; do
  run racecheck "$(basename "$f" .json)" "$f" --no-regressions --expect clean --epochs 1 || status=1
done
seed0="$repo/scenarios/seeds/000-mla-linear-hybrid-not-zeroed.json"
run initcheck "000-regression-on" "$seed0" --epochs 3
run initcheck "000-regression-off" "$seed0" --epochs 3 --no-regressions --expect clean || status=1
cat "$summary"
exit $status
