#!/usr/bin/env bash
# same_verdicts.sh — a scenario means the same on the GPU: `kvcheck run SCENARIO --device cuda` must
# exit with the code `--device host` exits with (0: every verdict as expected, 1: a verdict not as
# expected). Exit codes 2 and above on either device (bad input, cannot run) fail the test too.
# Exits 77 — ctest's SKIP_RETURN_CODE — when no GPU is visible.
#
# With --cuda-only (the GPU-scale scenarios of scenarios/gpu/, hours on the host device), only
# --device cuda runs and it must exit 0: every verdict as the scenario expects.
#
# Usage: same_verdicts.sh [--cuda-only] KVCHECK GPU_PROBE OUT_DIR SCENARIO...
set -u
cuda_only=0
if [ "${1:-}" = "--cuda-only" ]; then
  cuda_only=1
  shift
fi
kvcheck=$1 probe=$2 out=$3
shift 3
if ! "$probe" 2>/dev/null; then
  echo "SKIP: no CUDA GPU visible (gpu_probe); nothing compared"
  exit 77
fi

failed=0
for scenario in "$@"; do
  stem=$(basename "$scenario" .json)
  dir="$out/$(basename "$(dirname "$scenario")")-$stem"  # unique per scenario: tests run in parallel
  mkdir -p "$dir"
  if [ "$cuda_only" = 1 ]; then
    host_rc=0  # what the scenario expects: exit 0
  else
    "$kvcheck" run "$scenario" --device host -q --out "$dir/host" >"$dir/host.log" 2>&1
    host_rc=$?
  fi
  start=$(date +%s)
  "$kvcheck" run "$scenario" --device cuda -q --out "$dir/cuda" >"$dir/cuda.log" 2>&1
  cuda_rc=$?
  secs=$(($(date +%s) - start))
  if [ "$host_rc" -eq "$cuda_rc" ] && [ "$host_rc" -lt 2 ]; then
    if [ "$cuda_only" = 1 ]; then
      echo "ok: $stem meets its expectation on cuda (${secs}s)"
    else
      echo "ok: $stem exits $host_rc on host and cuda (cuda ${secs}s)"
    fi
    continue
  fi
  failed=1
  devices="host cuda"
  if [ "$cuda_only" = 1 ]; then
    devices="cuda"
    echo "FAIL: $stem exits $cuda_rc on cuda (0 = as expected, 1 = a verdict not as expected)"
  elif [ "$host_rc" -ne "$cuda_rc" ]; then
    echo "FAIL: $stem exits $host_rc on host but $cuda_rc on cuda"
  else
    echo "FAIL: $stem exits $host_rc on both devices (2 = bad input, 3 = could not run)"
  fi
  # Show why: each device's verdict table (a rerun without -q) and its errors.
  for device in $devices; do
    echo "---- $device: kvcheck run $scenario --device $device (tail) ----"
    cat "$dir/$device.log"
    "$kvcheck" run "$scenario" --device "$device" --out "$dir/$device" 2>&1 | tail -n 30
  done
done
exit $failed
