#!/usr/bin/env bash
# bench-backend-decode.sh KVCHECK_BUILD_DIR PLUGIN_SO [OUT_MD [kvbench_backend_decode options]] —
# decode throughput of a backend plugin's paged_decode against kvcheck's built-in CUDA decode on
# the same shapes and inputs (tests/bench/backend_decode_main.cpp says how), on this machine's GPU:
#   1. builds kvbench_backend_decode in KVCHECK_BUILD_DIR (a configured CUDA build: a full one,
#      or -DKVCHECK_BENCH_ONLY=ON; the plugin itself is not rebuilt, only loaded);
#   2. runs it on PLUGIN_SO (log: KVCHECK_BUILD_DIR/backend-decode-bench.log);
#   3. writes OUT_MD (default results/backend-decode-bench.md): date, commit, GPU, driver and CUDA
#      versions, the plugin's name / version string and sha256, the command, then the table.
# Options after OUT_MD go to the benchmark, e.g. --quick, --only gqa, --batches 1,64,
# --mla-heads 128, --timing eager.
# Example (FlashInfer plugin built with -DKVCHECK_FLASHINFER=ON):
#   scripts/bench-backend-decode.sh build-gpu \
#     build-gpu/backends/flashinfer/libkvcheck_backend_flashinfer.so
# Exit status: the benchmark's (0 all points ran and matched, 1 a point failed: the table is
# still written, 3 the plugin did not load, 77 no GPU visible), 2 usage or build failure.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 2 ]; then
  echo "usage: scripts/bench-backend-decode.sh KVCHECK_BUILD_DIR PLUGIN_SO [OUT_MD [options]]" >&2
  exit 2
fi
build="$(cd "$1" 2>/dev/null && pwd)" || { echo "bench-backend-decode: no folder $1" >&2; exit 2; }
plugin="$(cd "$(dirname "$2")" 2>/dev/null && pwd)/$(basename "$2")"
[ -f "$plugin" ] || { echo "bench-backend-decode: no plugin file $2" >&2; exit 2; }
out="${3:-$repo/results/backend-decode-bench.md}"
shift $(( $# >= 3 ? 3 : 2 ))
log="$build/backend-decode-bench.log"

# ---- 1. build ----
echo "bench-backend-decode: building kvbench_backend_decode in $build"
if ! cmake --build "$build" --target kvbench_backend_decode > "$build/backend-decode-build.log" 2>&1
then
  echo "bench-backend-decode: build failed; the last lines of $build/backend-decode-build.log:" >&2
  tail -30 "$build/backend-decode-build.log" >&2
  exit 2
fi
bin="$build/tests/bench/kvbench_backend_decode"

# ---- 2. run ----
table="$(mktemp)"
trap 'rm -f "$table"' EXIT
echo "bench-backend-decode: $bin --plugin $plugin $*"
"$bin" --plugin "$plugin" --out "$table" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
  echo "bench-backend-decode: kvbench_backend_decode exited $rc; nothing written" >&2
  exit "$rc"
fi

# ---- 3. the report ----
gpu="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
       head -1)"
cuda="$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -1)"
nvcc_v="$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1)"
commit="$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git -C "$repo" diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"
plugin_line="$(grep -m1 '^plugin: ' "$log" | sed 's/^plugin: //')"
mkdir -p "$(dirname "$out")"
{
  echo "# Decode throughput: backend plugin vs built-in CUDA decode"
  echo
  echo "Written by \`scripts/bench-backend-decode.sh\` (kvbench_backend_decode)."
  echo
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- Commit: $commit"
  echo "- GPU: ${gpu:-unknown} (name, driver, memory: nvidia-smi); driver ${cuda:-CUDA unknown}"
  echo "- Build: ${nvcc_v:+nvcc $nvcc_v, }$(basename "$build")"
  echo "- Plugin: ${plugin_line:-unknown}; sha256 $(sha256sum "$plugin" | cut -c1-16)..."
  echo "- Command: \`kvbench_backend_decode --plugin $(basename "$plugin")${*:+ $*}\`" \
       "(exit $rc)"
  echo
  cat "$table"
} > "$out"
echo
echo "bench-backend-decode: wrote $out (log: $log)"
exit "$rc"
