#!/usr/bin/env bash
# test.sh — the whole check, as CI runs it: install dependencies, build, run every test but the
# nightly tier (each scenario against its own expectation, seed sweeps over seeds 1-3 (clean) and
# 1-5 (caught), the mutant backends, bisect, schema and script tests, the Python backend host, a
# 30-second fuzzing of the scenario reader), then the
# ASan+UBSan build of the unit and CLI tests (GoogleTest, label unit: run there only) and the host
# scenarios (scripts/sanitize.sh, in build-sanitize/). The nightly tier (label "nightly": the rest
# of seeds 1-20 of each sweep, the scale scenario through a plugin and under the sanitizers, 10
# minutes of fuzzing) is scripts/nightly.sh. Exits non-zero on any failure; works from any working
# directory. KVCHECK_SKIP_SANITIZE=1 leaves the sanitizer build out (the unit tests then run here).
# At its end, also after a failure, it prints the wall time of each stage, and where ctest's time
# went by test group and label (scripts/ci_times.py, from build/ctest-junit.xml).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
junit="$repo/build/ctest-junit.xml"

# Stage times: stage NAME starts a stage (ending the one before), the EXIT trap ends the last and
# prints the table, then the script exits with the status it had.
stage_names=() stage_seconds=() stage_name="" stage_start=0 ctest_wall=""
end_stage() {
  if [ -n "$stage_name" ]; then
    stage_names+=("$stage_name")
    stage_seconds+=($((SECONDS - stage_start)))
    [ "$stage_name" = ctest ] && ctest_wall=$((SECONDS - stage_start))
  fi
  stage_name=""
}
stage() { end_stage; stage_name="$1"; stage_start=$SECONDS; }
print_times() {
  local status=$? failed="" i
  [ "$status" -ne 0 ] && failed="$stage_name"
  end_stage
  echo ""
  echo "test.sh: time per stage (wall)"
  for i in "${!stage_names[@]}"; do
    printf '  %-22s %6d s%s\n' "${stage_names[$i]}" "${stage_seconds[$i]}" \
      "$([ "${stage_names[$i]}" = "$failed" ] && echo "  FAILED (exit $status)")"
  done
  printf '  %-22s %6d s\n' total "$SECONDS"
  if [ -n "$ctest_wall" ]; then
    python3 "$repo/scripts/ci_times.py" "$repo/build" --junit "$junit" --wall "$ctest_wall" \
      || echo "test.sh: scripts/ci_times.py failed; no ctest breakdown" >&2
  fi
  # The last line: every `kvcheck run` of scenarios/suite.json that ctest made, summed by kvcheck.
  if [ -x "$repo/build/kvcheck" ] && [ -d "$repo/build/test-runs/suite" ]; then
    echo ""
    echo "kvcheck summarize build/test-runs/suite (scenarios/suite.json's runs):"
    "$repo/build/kvcheck" summarize --brief "$repo/build/test-runs/suite" || true
  fi
  exit "$status"
}
trap print_times EXIT

stage setup
"$repo/scripts/setup.sh"
# With nvcc, the CUDA device and the FlashInfer plugin are built, asked for explicitly (so a
# toolkit or FlashInfer change that breaks their build fails here); their tests need a GPU (label
# gpu) and skip without one. Without nvcc: host only, said out loud. Both with the test-only
# hooks (KVCHECK_TEST_HOOKS: the fault injection the exit-code tests use). The unit tests run
# once, in the sanitizer build (below): this build leaves their binaries out.
unit_tests=ON
[ "${KVCHECK_SKIP_SANITIZE:-0}" != 1 ] && unit_tests=OFF
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  stage fetch-flashinfer
  "$repo/scripts/fetch-flashinfer.sh" "$repo/build/flashinfer"
  stage configure+build
  "$repo/scripts/build.sh" "$repo/build" -DKVCHECK_TEST_HOOKS=ON -DKVCHECK_UNIT_TESTS=$unit_tests \
    -DKVCHECK_CUDA=ON -DKVCHECK_FLASHINFER=ON \
    -DFLASHINFER_INCLUDE_DIR="$repo/build/flashinfer/include"
else
  echo "test.sh: no nvcc: building host-only (no CUDA device, no FlashInfer plugin)" >&2
  stage configure+build
  "$repo/scripts/build.sh" "$repo/build" -DKVCHECK_TEST_HOOKS=ON -DKVCHECK_UNIT_TESTS=$unit_tests \
    -DKVCHECK_CUDA=OFF
fi
cd "$repo/build"
stage ctest
rm -f "$junit"
# The unit tests (label unit) run once, under the sanitizers (scripts/sanitize.sh runs `ctest -L
# unit` in its host build, which builds every unit test this one has); here only when that stage is
# skipped.
exclude=nightly
[ "${KVCHECK_SKIP_SANITIZE:-0}" != 1 ] && exclude='nightly|unit'
ctest --output-on-failure -j2 -LE "$exclude" --output-junit "$junit"
if [ "${KVCHECK_SKIP_SANITIZE:-0}" != 1 ]; then
  stage "sanitizer build+tests"
  "$repo/scripts/sanitize.sh" "$repo/build-sanitize"
fi
