#!/usr/bin/env bash
# nightly.sh [BUILD_DIR] — the nightly tier: what CI (scripts/test.sh) leaves out for time. Uses
# the build test.sh made (default build/ at the repository root; builds it host-only first where
# it is missing), then runs the ctests labelled "nightly": the rest of seeds 1-20 of every seed
# sweep (CI runs 1-3 of the clean sweep, 1-5 of the caught one), the scale scenario
# (scenarios/nightly/) through the host plugin; then that scenario under ASan+UBSan
# (scripts/sanitize.sh --nightly, in build-sanitize/). About 25 minutes on a 2-core
# machine (results/ci-time.md). Exits non-zero on any failure. NIGHTLY_JOBS: ctest jobs (default
# every core).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$(realpath -m "${1:-$repo/build}")"
jobs="${NIGHTLY_JOBS:-$(nproc)}"

if [ ! -f "$build_dir/CTestTestfile.cmake" ]; then
  "$repo/scripts/setup.sh"
  "$repo/scripts/build.sh" "$build_dir" -DKVCHECK_TEST_HOOKS=ON -DKVCHECK_CUDA=OFF
fi
start=$SECONDS
status=0
(cd "$build_dir" && ctest --output-on-failure -j "$jobs" -L nightly) || status=1
tier=$SECONDS
"$repo/scripts/sanitize.sh" "$repo/build-sanitize" --nightly || status=1
echo "nightly: ctest -L nightly $((tier - start)) s, sanitizer $((SECONDS - tier)) s" >&2
[ "$status" -eq 0 ] || echo "nightly: FAILED: see the failing tests above" >&2
exit "$status"
