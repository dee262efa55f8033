#!/usr/bin/env bash
# bench-decode.sh OUTDIR [kvbench_decode options] — the paged-decode benchmark in one go on this
# machine's GPU:
#   1. build kvbench_decode with CMake and nvcc alone (-DKVCHECK_BENCH_ONLY=ON: no spdlog/fmt/json/
#      CLI11/GTest packages, the GPU image need not have them) into build-bench/; the ptxas
#      resource report (registers, spills) goes to OUTDIR/build.log and a SASS summary (16-byte
#      loads, mma, local memory per kernel) to OUTDIR/sass-summary.txt;
#   2. kvbench_decode --check: every CUDA decode path against the host op (OUTDIR/check.log);
#   3. kvbench_decode: copy bandwidth, GQA and MLA decode sweeps (OUTDIR/kvbench.log, .json);
#   4. tests/bench/torch_decode.py: PyTorch SDPA / FlexAttention on the same shapes, same GPU,
#      and the combined table OUTDIR/decode-bench.md, printed last.
# Extra arguments go to the benchmark (e.g. --quick, --only gqa, --batches 1,64).
# The build, by hand (what step 1 runs; the binary is build-bench/tests/bench/kvbench_decode):
#   cmake -S . -B build-bench -G Ninja -DKVCHECK_BENCH_ONLY=ON -DCMAKE_BUILD_TYPE=Release
#   cmake --build build-bench --target kvbench_decode
# Environment: BENCH_PHASES (default "check bench torch"), BENCH_FLEX=all|some|none (default
# some: FlexAttention compiles a kernel per shape), KVBENCH_BIN (use this binary, no build),
# BENCH_BUILD (build folder under the repo, default build-bench: one per set of CMake arguments),
# BENCH_CMAKE_ARGS (more CMake arguments, e.g. -DCMAKE_CUDA_ARCHITECTURES=90 or the diagnostic
# build of scripts/gpu-sanitize.sh, -DKVCHECK_MLA_WGMMA_SYNC_HANDOFFS=ON: never for timings).
# Exit status: 0 all passed; 1 the check or a benchmark configuration failed (tables still
# written); 2 no GPU, build or usage failure.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -ge 1 ] || { echo "usage: scripts/bench-decode.sh OUTDIR [kvbench_decode options]" >&2; exit 2; }
out="$(mkdir -p "$1" && cd "$1" && pwd)"
shift
phases="${BENCH_PHASES:-check bench torch}"
status=0

nvidia-smi -L || { echo "bench-decode: no GPU visible (nvidia-smi failed)" >&2; exit 2; }

# ---- 1. build ----
build="$repo/${BENCH_BUILD:-build-bench}"
bin="${KVBENCH_BIN:-$build/tests/bench/kvbench_decode}"
if [ -z "${KVBENCH_BIN:-}" ]; then
  echo "bench-decode: building $bin ($(nvcc --version 2>/dev/null | tail -1))"
  # The diagnostic build is off unless BENCH_CMAKE_ARGS turns it on again: CMake keeps options in
  # its cache, and a folder once configured with it must not time the diagnostic kernel later.
  # shellcheck disable=SC2086  # BENCH_CMAKE_ARGS is a list of arguments
  if ! { cmake -S "$repo" -B "$build" -G Ninja -DKVCHECK_BENCH_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
           -DKVCHECK_MLA_WGMMA_SYNC_HANDOFFS=OFF ${BENCH_CMAKE_ARGS:-} &&
         cmake --build "$build" --target kvbench_decode; } > "$out/build.log" 2>&1; then
    echo "bench-decode: build failed; the last lines of $out/build.log:" >&2
    tail -30 "$out/build.log" >&2
    exit 2
  fi
  # ptxas reports only the files it compiles (ninja prints each file's report after its
  # "[n/N] Building CUDA object OBJECT" line): keep each file's latest report in build-bench/ptxas/
  # and append them all to OUTDIR/build.log, so that it covers every kernel after an incremental
  # build too.
  mkdir -p "$build/ptxas"
  awk -v dir="$build/ptxas" '
    /^\[[0-9]+\/[0-9]+\] Building CUDA object / { f = $NF; gsub("/", "_", f); f = dir "/" f ".log"
                                                 printf "" > f; next }
    /^\[[0-9]+\/[0-9]+\] / { f = ""; next }
    f != "" && /^ptxas|bytes stack frame/ { print >> f }' "$out/build.log"
  { echo "---- ptxas report, every CUDA file (its latest compile) ----"
    cat "$build"/ptxas/*.log; } >> "$out/build.log" 2>/dev/null
  cat "$build"/ptxas/*kernels_cuda_*decode*.log 2>/dev/null | grep -E "spill|Used|Compiling entry" |
    sed 's/_ZN2kv4cuda[^ ]*decode/decode/' || true
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
