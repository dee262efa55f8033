#!/usr/bin/env bash
# test.sh — the whole check, as CI runs it: install dependencies, build, run every test
# (unit tests, CLI tests, each scenario against its own expectation, the mutation test and a
# 90-second fuzzing of the scenario reader), then the ASan+UBSan build of the unit tests and the
# host scenarios (scripts/sanitize.sh, in build-sanitize/). Exits non-zero on any failure; works
# from any working directory. KVCHECK_SKIP_SANITIZE=1 leaves the sanitizer build out.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

"$repo/scripts/setup.sh"
# With nvcc, the CUDA device and the FlashInfer plugin are built, asked for explicitly (so a
# toolkit or FlashInfer change that breaks their build fails here); their tests need a GPU (label
# gpu) and skip without one. Without nvcc: host only, said out loud. Both with the test-only
# hooks (KVCHECK_TEST_HOOKS: the fault injection the exit-code tests use).
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  "$repo/scripts/fetch-flashinfer.sh" "$repo/build/flashinfer"
  "$repo/scripts/build.sh" "$repo/build" -DKVCHECK_TEST_HOOKS=ON -DKVCHECK_CUDA=ON \
    -DKVCHECK_FLASHINFER=ON -DFLASHINFER_INCLUDE_DIR="$repo/build/flashinfer/include"
else
  echo "test.sh: no nvcc: building host-only (no CUDA device, no FlashInfer plugin)" >&2
  "$repo/scripts/build.sh" "$repo/build" -DKVCHECK_TEST_HOOKS=ON -DKVCHECK_CUDA=OFF
fi
cd "$repo/build"
ctest --output-on-failure -j2
if [ "${KVCHECK_SKIP_SANITIZE:-0}" != 1 ]; then
  "$repo/scripts/sanitize.sh" "$repo/build-sanitize"
fi
