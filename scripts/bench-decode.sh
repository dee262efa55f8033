#!/usr/bin/env bash
# bench-decode.sh OUTDIR [kvbench_decode options] — the paged-decode benchmark in one go on this
# machine's GPU:
#   1. build kvbench_decode with nvcc alone (no CMake, no spdlog/fmt/json packages: the GPU image
#      need not have them) into build-bench/, only when a source is newer than the binary; the
#      ptxas resource report (registers, spills) goes to OUTDIR/build.log and a SASS summary
#      (16-byte loads, mma, local memory per kernel) to OUTDIR/sass-summary.txt;
#   2. kvbench_decode --check: every CUDA decode path against the host op (OUTDIR/check.log);
#   3. kvbench_decode: copy bandwidth, GQA and MLA decode sweeps (OUTDIR/kvbench.log, .json);
#   4. tests/bench/torch_decode.py: PyTorch SDPA / FlexAttention on the same shapes, same GPU,
#      and the combined table OUTDIR/decode-bench.md, printed last.
# Extra arguments go to the benchmark (e.g. --quick, --only gqa, --batches 1,64).
# Environment: BENCH_PHASES (default "check bench torch"), BENCH_FLEX=all|some|none (default
# some: FlexAttention compiles a kernel per shape), KVBENCH_BIN (use this binary, no build),
# NVCC_ARCH (default sm_90), NVCC_EXTRA (more nvcc flags, e.g. -DKV_CP_ASYNC_L2_PREFETCH=256),
# BENCH_BUILD (build folder under the repo, default build-bench: one per flag set).
# Exit status: 0 all passed; 1 the check or a benchmark configuration failed (tables still
# written); 2 no GPU, build or usage failure.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -ge 1 ] || { echo "usage: scripts/bench-decode.sh OUTDIR [kvbench_decode options]" >&2; exit 2; }
out="$(mkdir -p "$1" && cd "$1" && pwd)"
shift
phases="${BENCH_PHASES:-check bench torch}"
arch="${NVCC_ARCH:-sm_90}"
status=0

nvidia-smi -L || { echo "bench-decode: no GPU visible (nvidia-smi failed)" >&2; exit 2; }

# ---- 1. build ----
bin="${KVBENCH_BIN:-$repo/${BENCH_BUILD:-build-bench}/kvbench_decode}"
if [ -z "${KVBENCH_BIN:-}" ]; then
  cd "$repo"
  # The paged decode: the dispatcher paged_decode.cu and one decode_*.cu per path (and the merge).
  srcs=(tests/bench/decode_bench.cu tests/bench/decode_runner.cu tests/bench/decode_check.cu
        tests/bench/bench_fill.cu tests/bench/bench_report.cpp kernels/cuda/paged_decode.cu
        kernels/cuda/decode_*.cu kernels/host/*.cpp src/engine/step_plan.cpp
        src/engine/scheduler.cpp src/engine/block_pool.cpp)
  deps=("${srcs[@]}" tests/bench/*.h kernels/*.cuh kernels/cuda/*.cuh kernels/cuda/*.h
        kernels/host/*.h src/engine/*.h tests/kernels/kernel_test_support.h tests/support/*.h)
  stale=0
  [ -x "$bin" ] || stale=1
  for f in "${deps[@]}"; do [ "$f" -nt "$bin" ] && stale=1; done
  if [ "$stale" = 1 ]; then
    echo "bench-decode: building $bin ($arch, $(nvcc --version | tail -1))"
    objdir="$(dirname "$bin")/obj"
    mkdir -p "$objdir"
    rm -f "$objdir"/*.o
    : > "$out/build.log"
    pids=()
    for f in "${srcs[@]}"; do
      o="$objdir/$(echo "$f" | tr '/' '_').o"
      # -Xptxas -v on the decode kernel files only: their report is the one that matters.
      extra=(); [[ "$f" == kernels/cuda/* ]] && extra=(-Xptxas -v)
      # wgmma exists only in sm_90a code (as in CMakeLists.txt: this file alone, whatever NVCC_ARCH).
      archf=(-arch="$arch"); [[ "$f" == kernels/cuda/decode_mla_wgmma.cu ]] && archf=(-gencode=arch=compute_90a,code=sm_90a)
      nvcc -std=c++20 -O3 "${archf[@]}" -I"$repo" -I"$repo/src" --expt-relaxed-constexpr \
        -lineinfo -Xcompiler=-fno-fast-math ${NVCC_EXTRA:-} "${extra[@]}" -c "$f" -o "$o" >>"$out/build.log" 2>&1 &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || status=2; done
    if [ "$status" = 0 ]; then
      nvcc -arch="$arch" -o "$bin" "$objdir"/*.o >>"$out/build.log" 2>&1 || status=2
    fi
    if [ "$status" != 0 ]; then
      echo "bench-decode: build failed; the last lines of $out/build.log:" >&2
      tail -30 "$out/build.log" >&2
      exit 2
    fi
    grep -E "spill|Used|Compiling entry" "$out/build.log" | sed 's/_ZN2kv4cuda[^ ]*decode/decode/' || true
  fi
fi
if command -v cuobjdump >/dev/null; then
  cuobjdump --dump-sass "$bin" 2>/dev/null | awk '
    /Function :/ { if (f) printf "%-32s LDGSTS.128 %4d  LDG.128 %4d  HMMA %4d  HGMMA %4d  LDSM %4d  LDL/STL %d\n", f, a, b, h, w, m, l;
                   f = $3; if (match(f, /decode_[a-z_]+_kernel(IL[a-z0-9]+E)?/)) f = substr(f, RSTART, RLENGTH)
                   a = b = h = w = m = l = 0 }
    /LDGSTS.*128/ { a++ } /LDG\.E\.128|LDG\.E\.ENL2\.128/ { b++ } /HMMA/ { h++ } /HGMMA/ { w++ } /LDSM/ { m++ } /LDL|STL/ { l++ }
    END { if (f) printf "%-32s LDGSTS.128 %4d  LDG.128 %4d  HMMA %4d  HGMMA %4d  LDSM %4d  LDL/STL %d\n", f, a, b, h, w, m, l }' \
    | grep -i decode > "$out/sass-summary.txt" || true
fi

# ---- 2. correctness against the host op ----
if [[ " $phases " == *" check "* ]]; then
  echo "bench-decode: kvbench_decode --check"
  "$bin" --check > "$out/check.log" 2>&1
  rc=$?
  grep -E "^FAIL" "$out/check.log" | head -20
  tail -6 "$out/check.log"
  [ "$rc" = 0 ] || { echo "bench-decode: CHECK FAILED (exit $rc), see $out/check.log"; status=1; }
fi

# ---- 3. our benchmark ----
if [[ " $phases " == *" bench "* ]]; then
  echo "bench-decode: kvbench_decode $*"
  "$bin" --json "$out/kvbench-decode.json" "$@" 2>&1 | tee "$out/kvbench.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || { echo "bench-decode: BENCHMARK FAILED (exit $rc)"; status=1; }
  # A copy beside the binary, so that a later call with BENCH_PHASES=torch finds it.
  [ -f "$out/kvbench-decode.json" ] && cp "$out/kvbench-decode.json" "$(dirname "$bin")/last-kvbench-decode.json"
fi
if [[ " $phases " == *" torch "* ]] && [ ! -f "$out/kvbench-decode.json" ] &&
   [ -f "$(dirname "$bin")/last-kvbench-decode.json" ]; then
  echo "bench-decode: using the previous run's $(dirname "$bin")/last-kvbench-decode.json"
  cp "$(dirname "$bin")/last-kvbench-decode.json" "$out/kvbench-decode.json"
fi

# ---- 4. PyTorch on the same GPU, and the combined table ----
if [[ " $phases " == *" torch "* ]] && [ -f "$out/kvbench-decode.json" ]; then
  echo "bench-decode: PyTorch baselines"
  PYTHONUNBUFFERED=1 python3 "$repo/tests/bench/torch_decode.py" --ours "$out/kvbench-decode.json" \
    --out "$out/decode-bench.md" --json "$out/torch-decode.json" --flex "${BENCH_FLEX:-some}" \
    > "$out/torch.log" 2>&1 || { echo "bench-decode: torch_decode.py failed, see $out/torch.log"; tail -5 "$out/torch.log"; }
fi

echo
[ -s "$out/sass-summary.txt" ] && cat "$out/sass-summary.txt"
grep -hE "passed, .* failed" "$out/check.log" 2>/dev/null | sed 's/^/check: /'
[ -f "$out/decode-bench.md" ] && cat "$out/decode-bench.md"
exit "$status"
