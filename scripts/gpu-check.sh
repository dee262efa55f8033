#!/usr/bin/env bash
# gpu-check.sh LOGDIR — build kvcheck with CUDA from scratch and run the GPU tests, then the unit
# tests, on a machine with an NVIDIA GPU. Every log goes under LOGDIR; a summary table is printed
# last; the exit status is non-zero if any step failed or no GPU was visible.
#
#   scripts/gpu-check.sh /tmp/gpu-logs
#
# Environment:
#   BUILD_DIR                 build folder, wiped first (default: <repo>/build-gpu)
#   CMAKE_CUDA_ARCHITECTURES  GPU architectures to compile for (default: 90, H100/H200)
#   GPU_JOBS                  parallel GPU tests (default: 8; they share the one GPU)
#   GPU_CHECK_ALLOW_NO_GPU=1  do not fail when no GPU is visible (a dry run of the script)
#   GPU_CMAKE_ARGS            more configure arguments, e.g. -DDLPACK_INCLUDE_DIR=DIR where the
#                             machine has no libdlpack-dev (a copy of its dlpack/dlpack.h)
#   GPU_EQUIV_ALL=1           the CUDA-plugin equivalence also over scenarios/gpu/ (slow: 100+ s
#                             a scenario, twice, with the CPU reference)
#   GPU_EQUIV_JOBS            parallel equivalence scenarios (default: GPU_JOBS)
#   GPU_SLOW=1                also the gpu tests labelled "slow" (gpu-reference/gpu/<name>: the
#                             GPU and CPU references compared on the GPU-scale scenarios, minutes)
#
# What "gpu" covers (ctest -L gpu): test_gpu — every CUDA op against the host op on identical
# inputs, and CudaDevice's memory, graph and error behaviour —, gpu-verdicts/<scenario>: each
# scenario must exit with the same code on --device cuda as on --device host, gpu-run/gpu/<name>:
# the GPU-scale scenarios, gpu-reference/<scenario>: the GPU float64 reference agrees with the
# CPU one (1e-9, same verdicts), and gpu-decode-check: `kvbench_decode --check`, every decode path.
# Then "cuda plugin": tests/backend_equivalence.py --device cuda over every scenario of scenarios/
# (not schema/; scenarios/gpu/ too with GPU_EQUIV_ALL=1): `kvcheck run S --device cuda` and the same
# through --backend libkvcheck_backend_cuda.so must give the same exit code, verdict, first failure
# and per-epoch figures, every op call on the plugin (logs in LOGDIR/equivalence/).
# Needs: CUDA 13 (nvcc on PATH or in /usr/local/cuda/bin), CMake >= 3.25, Ninja, g++, and the
# packages of scripts/setup.sh. No network. Leaves GPU settings alone (only reads nvidia-smi).
set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/out-dir.sh" LOGDIR "$@"
logdir="$out"
build="${BUILD_DIR:-$repo/build-gpu}"
arch="${CMAKE_CUDA_ARCHITECTURES:-90}"
jobs="$(nproc)"
gpu_jobs="${GPU_JOBS:-8}"
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

steps=() results=() times=() logs=()
failed=0

# run_step NAME LOG COMMAND...: run, time and record one step; its output goes to LOG only.
run_step() {
  local name=$1 log=$2
  shift 2
  local start=$SECONDS
  echo "== $name ($(date +%H:%M:%S)) -> $log"
  "$@" >"$log" 2>&1
  local rc=$?
  steps+=("$name") times+=("$((SECONDS - start))s") logs+=("$(basename "$log")")
  if [ $rc -eq 0 ]; then
    results+=("ok")
  else
    results+=("FAILED (exit $rc)")
    failed=1
    echo "   failed; last lines of $log:"
    tail -n 15 "$log" | sed 's/^/   | /'
  fi
  return $rc
}

# ctest_summary LOG: "N passed, M failed, K skipped" from a ctest log.
ctest_summary() {
  local log=$1 total failed_n skipped
  # ctest says "100% tests passed out of N" or "97% tests passed, M tests failed out of N".
  total=$(grep -E 'tests passed' "$log" | tail -1 | grep -oE '[0-9]+$')
  failed_n=$(grep -E 'tests passed' "$log" | tail -1 | grep -oE '[0-9]+ tests failed' | grep -oE '^[0-9]+')
  [ -n "$total" ] && failed_n=${failed_n:-0}
  skipped=$(grep -cE 'Test +#[0-9]+: .*\*\*\*Skipped' "$log")
  echo "${total:-?} tests, ${failed_n:-?} failed, ${skipped} skipped"
}

{
  echo "date: $(date -u +%FT%TZ)"
  echo "repo: $repo ($(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown))"
  echo "build: $build, CUDA architectures $arch, $jobs cores"
  command -v nvcc >/dev/null && nvcc --version | tail -n 2
  cmake --version | head -n 1
  g++ --version | head -n 1
  if command -v nvidia-smi >/dev/null; then nvidia-smi; else echo "nvidia-smi: not found"; fi
} >"$logdir/environment.log" 2>&1

rm -rf "$build"
run_step configure "$logdir/configure.log" \
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVCHECK_CUDA=ON \
  -DKVCHECK_TEST_HOOKS=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" ${GPU_CMAKE_ARGS:-} &&
  run_step build "$logdir/build.log" cmake --build "$build" -j "$jobs"
built=$?

gpu_present=0
gpu_note=""
if [ $built -eq 0 ]; then
  if "$build/tests/gpu_probe" >/dev/null 2>&1; then
    gpu_present=1
  else
    gpu_note="no GPU visible: every GPU test skipped"
  fi
  run_step "gpu tests" "$logdir/ctest-gpu.log" \
    ctest --test-dir "$build" -L gpu $([ "${GPU_SLOW:-0}" = 1 ] || echo -LE slow) \
    -j "$gpu_jobs" --output-on-failure --timeout 1800 \
    --output-junit "$logdir/ctest-gpu.xml"
  gpu_summary=$(ctest_summary "$logdir/ctest-gpu.log")
  # Per-scenario lines of same_verdicts.sh (exit codes on both devices, cuda time), for the record.
  grep -hE '^(ok|FAIL): ' "$build/Testing/Temporary/LastTest.log" >"$logdir/verdicts.log" 2>/dev/null
  run_step "unit tests" "$logdir/ctest-unit.log" \
    ctest --test-dir "$build" -L unit -j "$jobs" --output-on-failure --timeout 300 \
    --output-junit "$logdir/ctest-unit.xml"
  unit_summary=$(ctest_summary "$logdir/ctest-unit.log")
fi

# cuda_plugin_equivalence: backend_equivalence.py --device cuda over the scenarios,
# GPU_EQUIV_JOBS at a time; one line per scenario (its log in LOGDIR/equivalence/), non-zero if
# any differs.
cuda_plugin_equivalence() {
  local plugin="$build/backends/libkvcheck_backend_cuda.so" eqdir="$logdir/equivalence"
  local ejobs="${GPU_EQUIV_JOBS:-$gpu_jobs}" f rel slug rc=0 n=0 bad=0
  mkdir -p "$eqdir"
  local files=()
  while IFS= read -r f; do files+=("$f"); done < <(
    find "$repo/scenarios" -name '*.json' -not -name 'suite.json' -not -path '*/schema/*' \
      -not -path '*/scenarios/gpu/*' | sort
    if [ "${GPU_EQUIV_ALL:-0}" = 1 ]; then find "$repo/scenarios/gpu" -name '*.json' | sort; fi)
  local pids=() names=()
  for f in "${files[@]}"; do
    rel="${f#"$repo/scenarios/"}" slug="${rel//\//_}"
    while [ "$(jobs -rp | wc -l)" -ge "$ejobs" ]; do wait -n; done
    python3 "$repo/tests/backend_equivalence.py" --device cuda "$build/kvcheck" "$plugin" "$f" \
      "$build/test-runs/cuda-equivalence/${slug%.json}" >"$eqdir/${slug%.json}.log" 2>&1 &
    pids+=($!) names+=("$rel")
  done
  for i in "${!pids[@]}"; do
    n=$((n + 1))
    if wait "${pids[$i]}"; then
      echo "same: ${names[$i]}"
    else
      bad=$((bad + 1)) rc=1
      echo "DIFFERENT: ${names[$i]} (log: equivalence/$(basename "${names[$i]//\//_}" .json).log)"
      sed 's/^/  | /' "$eqdir/$(basename "${names[$i]//\//_}" .json).log" | tail -n 20
    fi
  done
  echo "cuda plugin equivalence: $n scenarios, $bad different"
  return $rc
}

if [ $built -eq 0 ] && [ $gpu_present -eq 1 ]; then
  run_step "cuda plugin" "$logdir/cuda-plugin-equivalence.log" cuda_plugin_equivalence
  equiv_summary=$(tail -n 1 "$logdir/cuda-plugin-equivalence.log")
fi

if [ $gpu_present -eq 0 ] && [ $built -eq 0 ] && [ "${GPU_CHECK_ALLOW_NO_GPU:-0}" != 1 ]; then
  failed=1
fi

echo
echo "gpu-check summary (logs in $logdir)"
printf '  %-12s %-18s %8s  %s\n' step result time log
for i in "${!steps[@]}"; do
  printf '  %-12s %-18s %8s  %s\n' "${steps[$i]}" "${results[$i]}" "${times[$i]}" "${logs[$i]}"
done
[ -n "${gpu_summary:-}" ] && echo "  gpu:  ${gpu_summary}"
[ -n "${unit_summary:-}" ] && echo "  unit: ${unit_summary}"
[ -n "${equiv_summary:-}" ] && echo "  ${equiv_summary}"
[ -n "$gpu_note" ] && echo "  NOTE: $gpu_note (check nvidia-smi in environment.log)"
if [ $failed -eq 0 ]; then
  echo "  result: PASS"
else
  echo "  result: FAIL"
fi
exit $failed
