#!/usr/bin/env bash
# gpu-sanitize.sh KVCHECK LOGDIR — compute-sanitizer over kvcheck on the GPU (results/sanitizer.md), then over
# the decode paths (kvbench_decode --check) and the named-barrier probe (racecheck_probe).
#
# scenarios: memcheck and initcheck on the clean scenarios (smoke and every seed scenario with
#   --no-regressions), racecheck on smoke and seeds 001/002 (it is slow: shared-memory hazards of
#   every kernel), then initcheck with new-blocks-not-zeroed on and off on the seed-000 scenario,
#   beside kvcheck's own verdict.
# decode: memcheck, initcheck, synccheck and racecheck on <builddir>/tests/bench/kvbench_decode
#   --check (<builddir> is KVCHECK's folder). A non-zero exit of the check or an error from
#   memcheck/initcheck/synccheck fails the script; racecheck's hazards are recorded and must all
#   be in mla_wgmma's named-barrier hand-offs. Then a diagnostic build of kvbench_decode
#   (KV_MLA_WGMMA_SYNC_HANDOFFS=1, CMake option KVCHECK_MLA_WGMMA_SYNC_HANDOFFS: every bar.arrive
#   of those hand-offs made a bar.sync, built by scripts/bench-decode.sh into build-sanitize-sync/)
#   must pass --check --path mla_wgmma under racecheck with 0 hazards (results/sanitizer.md).
# probe: racecheck on <builddir>/tests/bench/racecheck_probe in each mode. race must report
#   hazards (else racecheck is not seeing the probe), sync and epilogue-sync none, and every mode
#   must exit 0; arrive and epilogue are recorded (hazards there are racecheck not modelling
#   bar.arrive).
# Racecheck counts come from "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)" (N
# stops at --print-limit, 100 by default; E and W do not), the others' from "ERROR SUMMARY: N
# errors"; a missing binary is recorded as "not built".
#
# Environment: SANITIZE_PARTS — the sections to run (default "scenarios decode probe").
# Each run's log goes to LOGDIR; a markdown summary is printed last and written to
# LOGDIR/sanitizer.md. Exits non-zero when a clean run reports an error or an expectation above
# is not met.
set -uo pipefail
kvcheck=${1:?usage: gpu-sanitize.sh KVCHECK LOGDIR}
logs=${2:?usage: gpu-sanitize.sh KVCHECK LOGDIR}
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$logs"
summary="$logs/sanitizer.md"
status=0

# error_count LOG: N of memcheck/initcheck/synccheck's "ERROR SUMMARY: N errors", or nothing.
error_count() {
  grep -oE "ERROR SUMMARY: [0-9]+ error" "$1" | tail -1 | grep -oE "[0-9]+"
}
# race_counts LOG: "N E W" of "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)"
# (singular forms too: "1 hazard displayed (1 error, 0 warnings)"), or nothing.
race_counts() {
  local n='([0-9]+) hazards? displayed' e='([0-9]+) errors?' w='([0-9]+) warnings?'
  sed -nE "s/.*RACECHECK SUMMARY: $n \\($e, $w\\).*/\\1 \\2 \\3/p" "$1" | tail -1
}

# One sanitizer run: TOOL NAME SCENARIO KVCHECK-ARGS... ; appends a table row.
run() {
  local tool=$1 name=$2 file=$3
  shift 3
  local log="$logs/$tool-$name.log"
  compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 \
    "$kvcheck" run "$file" --device cuda -q --out "$logs/runs" "$@" > "$log" 2>&1
  local rc=$?
  local errors n e w
  if [ "$tool" = racecheck ]; then
    read -r n e w <<< "$(race_counts "$log")"
    errors=$e
  else
    errors=$(error_count "$log")
  fi
  local verdict="exit $rc"
  [ $rc -eq 0 ] && verdict="met its expectation"
  [ $rc -eq 1 ] && verdict="did not meet its expectation"
  [ $rc -eq 99 ] && verdict="sanitizer error"
  echo "| $tool | $name | $* | ${errors:-?} | $verdict |" >> "$summary"
  return $rc
}

# section TITLE: a heading and a blank line before the next table.
section() {
  [ -s "$summary" ] && echo >> "$summary"
  printf '### %s\n\n' "$1" >> "$summary"
}
# A section over one binary: TITLE BINARY HEADER-ROW SEPARATOR-ROW. Fails, after a "not built" row
# as wide as the header, when BINARY is not an executable.
binary_section() {
  section "$1"
  printf '%s\n%s\n' "$3" "$4" >> "$summary"
  [ -x "$2" ] && return 0
  local cols
  cols=$(($(tr -cd '|' <<< "$3" | wc -c) - 3))
  printf '| all | not built (%s) |%s\n' "$2" "$(printf ' |%.0s' $(seq "$cols"))" >> "$summary"
  return 1
}

parts=" ${SANITIZE_PARTS:-scenarios decode probe} "
for p in $parts; do
  case $p in
    scenarios | decode | probe) ;;
    *) echo "gpu-sanitize.sh: unknown part '$p' in SANITIZE_PARTS (scenarios decode probe)" >&2
       exit 2 ;;
  esac
done
bench="$(cd "$(dirname "$kvcheck")" && pwd)/tests/bench"
: > "$summary"

if [[ $parts == *" scenarios "* ]]; then
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
    run racecheck "$(basename "$f" .json)" "$f" --no-regressions --expect clean --epochs 1 ||
      status=1
  done
  seed0="$repo/scenarios/seeds/000-mla-linear-hybrid-not-zeroed.json"
  run initcheck "000-regression-on" "$seed0" --epochs 3
  run initcheck "000-regression-off" "$seed0" --epochs 3 --no-regressions --expect clean || status=1
fi

# The decode paths: kvbench_decode --check (every path against the host op) under each tool.
if [[ $parts == *" decode "* ]]; then
  tools="memcheck initcheck synccheck racecheck"
  binary_section "kvbench_decode --check" "$bench/kvbench_decode" \
    "| tool | sanitizer report | kvbench_decode --check |" "|---|---|---|" || tools=""
  for tool in $tools; do
    log="$logs/$tool-kvbench_decode.log"
    limit=(); [ "$tool" = racecheck ] && limit=(--print-limit 100000)
    compute-sanitizer --tool "$tool" "${limit[@]}" "$bench/kvbench_decode" --check > "$log" 2>&1
    rc=$?
    verdict="exit $rc"
    [ $rc -eq 0 ] && verdict="pass"
    [ $rc -ne 0 ] && status=1
    if [ "$tool" = racecheck ]; then
      read -r n e w <<< "$(race_counts "$log")"
      report="${n:-?} hazards (${e:-?} errors, ${w:-?} warnings)"
      # Only the mla_wgmma hand-offs may show (racecheck does not model bar.arrive: the probe
      # below, and the diagnostic build after this loop); a hazard in any other code is real.
      others=$(grep -E "Race reported between" -A1 "$log" | grep -E " at " |
               grep -vcE "decode_mla_wgmma|wg0_|wg1_issue")
      if [ "${others:-0}" != 0 ]; then
        report="$report, $others outside mla_wgmma: NOT MET"
        status=1
      fi
    else
      n=$(error_count "$log")
      report="${n:-?} errors"
      [ "${n:-?}" = 0 ] || status=1
    fi
    echo "| $tool | $report | $verdict |" >> "$summary"
  done
  # The same mla_wgmma data flow with every producer-side bar.arrive made a bar.sync
  # (KV_MLA_WGMMA_SYNC_HANDOFFS, the diagnostic build, made by bench-decode.sh): racecheck must
  # report nothing there, so the hazards above are its blindness to bar.arrive, not races.
  diag="$logs/diag-build"
  BENCH_CMAKE_ARGS=-DKVCHECK_MLA_WGMMA_SYNC_HANDOFFS=ON BENCH_BUILD=build-sanitize-sync \
    BENCH_PHASES=check "$repo/scripts/bench-decode.sh" "$diag" > "$logs/diag-build.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "| racecheck, mla_wgmma with bar.sync hand-offs | build or check failed (exit $rc) | NOT MET |" >> "$summary"
    status=1
  else
    log="$logs/racecheck-kvbench_decode-sync-handoffs.log"
    compute-sanitizer --tool racecheck "$repo/build-sanitize-sync/tests/bench/kvbench_decode" \
      --check --path mla_wgmma > "$log" 2>&1
    rc=$?
    read -r n e w <<< "$(race_counts "$log")"
    verdict="exit $rc"; [ $rc -eq 0 ] && verdict="pass"
    expect="0 hazards"
    { [ $rc -eq 0 ] && [ "${n:-?}" = 0 ]; } || { expect="0 hazards: NOT MET"; status=1; }
    echo "| racecheck, mla_wgmma with bar.sync hand-offs (--path mla_wgmma) | ${n:-?} hazards (${e:-?} errors, ${w:-?} warnings), $expect | $verdict |" >> "$summary"
  fi
fi

# The probe (tests/bench/racecheck_probe.cu): does racecheck model bar.arrive's ordering?
if [[ $parts == *" probe "* ]]; then
  modes="race sync epilogue-sync arrive epilogue"
  binary_section "racecheck_probe under racecheck" "$bench/racecheck_probe" \
    "| mode | hazards | errors | warnings | probe | expected |" "|---|---:|---:|---:|---|---|" ||
    modes=""
  for mode in $modes; do
    log="$logs/racecheck-probe-$mode.log"
    compute-sanitizer --tool racecheck "$bench/racecheck_probe" "$mode" > "$log" 2>&1
    rc=$?
    verdict=$(grep -oE "racecheck_probe $mode: (PASS|FAIL)" "$log" | tail -1 | awk '{print $NF}')
    [ $rc -eq 0 ] || { verdict="${verdict:-exit $rc} (exit $rc)"; status=1; }
    read -r n e w <<< "$(race_counts "$log")"
    case $mode in
      race) expect="> 0 hazards"; met=$([ "${n:-0}" -gt 0 ] && echo yes) ;;
      sync | epilogue-sync) expect="0 hazards"; met=$([ "${n:-?}" = 0 ] && echo yes) ;;
      *) expect="recorded"; met=yes ;;
    esac
    [ "$met" = yes ] || { expect="$expect: NOT MET"; status=1; }
    echo "| $mode | ${n:-?} | ${e:-?} | ${w:-?} | ${verdict:-?} | $expect |" >> "$summary"
  done
fi
cat "$summary"
exit $status
