#!/usr/bin/env bash
# bench-e2e.sh OUTDIR — end-to-end figures (results/e2e-bench.md): steps per second and the
# checker's share of the wall time of the largest seed scenario on --device host and --device
# cuda, and the one-million-cached-token scenario (scenarios/gpu/million-tokens.json) on cuda.
# Writes each run's result JSON and log under OUTDIR and the table to OUTDIR/e2e.md (also printed).
#
#   scripts/bench-e2e.sh /tmp/e2e            # after scripts/build.sh (or gpu-check.sh) built kvcheck
#
# Environment: KVCHECK (default <repo>/build/kvcheck), E2E_SEED_SCENARIO (default: seed 000, the
# seed scenario with the most blocks and tokens), E2E_SKIP_HOST=1 / E2E_SKIP_MILLION=1 to leave
# runs out. The seed scenario runs with --no-regressions --expect clean (a clean run: the figures are the
# engine's and checker's normal cost, not a failure's).
set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/out-dir.sh" OUTDIR "$@"
kvcheck="${KVCHECK:-$repo/build/kvcheck}"
seed="${E2E_SEED_SCENARIO:-$repo/scenarios/seeds/000-mla-linear-hybrid-not-zeroed.json}"
million="$repo/scenarios/gpu/million-tokens.json"
if [ ! -x "$kvcheck" ]; then
  echo "error: $kvcheck is not an executable; build first (scripts/build.sh) or set KVCHECK" >&2
  exit 2
fi

failed=0
runs=()
# one NAME SCENARIO DEVICE [ARGS...]: run kvcheck, keep its --json document (kvcheck.run/1) as
# OUTDIR/NAME.json.
one() {
  local name=$1 scenario=$2 device=$3
  shift 3
  echo "== $name: kvcheck run $(basename "$scenario") --device $device $*"
  "$kvcheck" run "$scenario" --device "$device" --json "$@" >"$out/$name.json" 2>"$out/$name.log"
  local rc=$?
  echo "   exit $rc ($(tail -n 1 "$out/$name.log"))"
  # 0 = as expected; anything else is a failed benchmark run (the table still shows what ran).
  [ $rc -eq 0 ] || failed=1
  runs+=("$name.json")
}

[ "${E2E_SKIP_HOST:-0}" = 1 ] || one seed-host "$seed" host --no-regressions --expect clean
one seed-cuda "$seed" cuda --no-regressions --expect clean
[ "${E2E_SKIP_MILLION:-0}" = 1 ] || one million-cuda "$million" cuda

python3 "$repo/scripts/e2e-table.py" "$out" "${runs[@]}" | tee "$out/e2e.md"
exit $failed
