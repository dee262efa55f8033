#!/usr/bin/env bash
# sanitize.sh [BUILD_DIR] [--nightly] — the ASan+UBSan check: configure kvcheck host-only
# (KVCHECK_CUDA=OFF) with the test-only hooks (KVCHECK_TEST_HOOKS=ON), without the mutant
# backends (KVCHECK_MUTANTS=OFF: their tests are not run here), and g++
# -fsanitize=address,undefined -fno-sanitize-recover=undefined in a build folder of its own
# (default build-sanitize/ at the repository root), build it, and run the unit tests (`ctest -L
# unit`) and every host scenario against its expectation (the ctests as-written/* and validate/*,
# from scenarios/suite.json) under the sanitizers, but for the scale scenario scenarios/nightly/ (4 minutes under ASan on a
# 2-core machine, and no code path the others miss). --nightly runs that one only
# (scripts/nightly.sh). Any sanitizer report fails its test; exits non-zero then.
# Prints the time of each part. SANITIZE_JOBS: build and test jobs (default every core).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$repo/build-sanitize" nightly=0
for arg in "$@"; do
  if [ "$arg" = --nightly ]; then nightly=1; else build_dir="$arg"; fi
done
jobs="${SANITIZE_JOBS:-$(nproc)}"

# -O1: sanitized code at -O2 takes longer to build for little faster tests. -g1 for the reports:
# line tables (every frame of a report keeps its file and line) without the variables' debug
# information, which the template-heavy CLI and test code spends much of its compile time on. The
# argument-parsing, JSON and CLI-test targets compile as unity batches (KVCHECK_UNITY). The
# Python backend host is left out (an uninstrumented libpython and NumPy inside ASan's process
# report the interpreter's own allocations); its tests run in the release build (label python).
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
start=$SECONDS
cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DKVCHECK_CUDA=OFF \
  -DKVCHECK_TEST_HOOKS=ON -DKVCHECK_MUTANTS=OFF -DKVCHECK_UNITY=ON -DKVCHECK_PYTHON=OFF \
  -DCMAKE_C_FLAGS_SANITIZE="-O1 -g1 $flags" -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1 $flags" \
  -DCMAKE_EXE_LINKER_FLAGS_SANITIZE="$flags" -DCMAKE_SHARED_LINKER_FLAGS_SANITIZE="$flags" \
  -DCMAKE_MODULE_LINKER_FLAGS_SANITIZE="$flags"
cmake --build "$build_dir" -j "$jobs"
built=$SECONDS

# A backend plugin that crashes on purpose (tests/plugins, tests/mutants) must die by its signal,
# as kvcheck's worker process expects, not by ASan's report of it: handle_segv=0 and kin. Leaks
# are reported (a leak fails the test).
asan="detect_leaks=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0"
asan+=":allow_user_segv_handler=1"
export ASAN_OPTIONS="${ASAN_OPTIONS:-$asan}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
cd "$build_dir"
status=0
if [ "$nightly" = 1 ]; then
  ctest --output-on-failure -j "$jobs" -R '^as-written/nightly/' || status=1
  echo "sanitize: build $((built - start)) s, nightly scenarios $((SECONDS - built)) s" >&2
  exit "$status"
fi
ctest --output-on-failure -j "$jobs" -L unit || status=1
unit=$SECONDS
ctest --output-on-failure -j "$jobs" -R '^(as-written|validate)/' -E '^as-written/nightly/' || status=1
echo "sanitize: build $((built - start)) s, unit tests $((unit - built)) s," \
  "host scenarios $((SECONDS - unit)) s" >&2
[ "$status" -eq 0 ] || echo "sanitize: FAILED: see the failing tests above" >&2
exit "$status"
