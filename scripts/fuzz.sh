#!/usr/bin/env bash
# fuzz.sh [SECONDS] — fuzz the scenario reader: build its libFuzzer target (tests/fuzz) with
# clang, -fsanitize=fuzzer,address,undefined, in a build folder of its own, and run it for
# SECONDS (default 60; 14400 runs for four hours). The input is what `kvcheck validate` reads
# from a file: parse, validate, estimate the cost. Exits non-zero on any finding (a crash, a
# sanitizer report, an escaping exception, a hang over 10 s on one input), whose input is kept in
# FUZZ_DIR/findings/ (emptied at the start of each run).
#
# Seeds: every file of scenarios/ and tests/fuzz/regressions/ (past findings, each replayed
# first); dictionary: tests/fuzz/scenario.dict. New inputs that reach new code go to
# FUZZ_DIR/corpus/, kept between runs, so runs add up. Without clang it installs Debian's
# clang-14 (apt-get; sudo when not root). Prints "fuzz: N executions in S s, K findings".
#
# Environment: FUZZ_DIR (default build-fuzz/ at the repository root), FUZZ_CXX (the clang++;
# default clang++-14, else clang++), FUZZ_BUILD_JOBS (default every core).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
dir="$(realpath -m "${FUZZ_DIR:-$repo/build-fuzz}")"

find_clang() {
  if [ -n "${FUZZ_CXX:-}" ]; then echo "$FUZZ_CXX"; return; fi
  command -v clang++-14 || command -v clang++ || true
}
# libFuzzer's runtime, which a clang without libclang-rt-14-dev lacks.
has_libfuzzer() {
  [ -f "$("$1" -print-resource-dir)/lib/linux/libclang_rt.fuzzer-$(uname -m).a" ]
}
cxx="$(find_clang)"
if [ -z "$cxx" ] || ! has_libfuzzer "$cxx"; then
  echo "fuzz: no clang++ with libFuzzer: installing Debian's clang-14" >&2
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    clang-14 libclang-rt-14-dev 2>/dev/null ||
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang-14
  cxx="$(find_clang)"
fi
cc="${cxx/clang++/clang}"

# Every library with the sanitizers and libFuzzer's coverage hooks; the target links libFuzzer.
# Line tables only: a finding's stack still names file and line, at a fraction of full debug
# information's compile time.
flags="-gline-tables-only -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
flags+=" -fno-omit-frame-pointer"
# The reader's template-heavy libraries (kv_scenario, kv_report) as unity batches (KVCHECK_UNITY:
# 92 -> 70 s for this script's build and one second of fuzzing, results/ci-time.md); no Python
# host (the target loads no plugin).
cmake -S "$repo" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVCHECK_CUDA=OFF \
  -DKVCHECK_FUZZ=ON -DBUILD_TESTING=OFF -DKVCHECK_UNITY=ON -DKVCHECK_PYTHON=OFF \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >"$dir.configure.log" 2>&1 ||
  { cat "$dir.configure.log" >&2; exit 1; }
cmake --build "$dir/build" -j "${FUZZ_BUILD_JOBS:-$(nproc)}" --target kvcheck_fuzz_scenario
fuzzer="$dir/build/tests/fuzz/kvcheck_fuzz_scenario"

rm -rf "$dir/findings"
mkdir -p "$dir/corpus" "$dir/findings"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# Past findings first, each on its own: they must pass before anything new is looked for.
shopt -s nullglob
regressions=("$repo"/tests/fuzz/regressions/*)
if [ ${#regressions[@]} -gt 0 ]; then
  "$fuzzer" "${regressions[@]}" >"$dir/regressions.log" 2>&1 ||
    { cat "$dir/regressions.log" >&2; echo "fuzz: a past finding fails again" >&2; exit 1; }
fi

log="$dir/fuzz.log"
echo "fuzz: running $fuzzer for $seconds s (log: $log)" >&2
set +e
"$fuzzer" "$dir/corpus" "$repo/scenarios" "$repo/tests/fuzz/regressions" \
  -dict="$repo/tests/fuzz/scenario.dict" -max_total_time="$seconds" -max_len=65536 \
  -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$dir/findings/" -print_final_stats=1 \
  >"$log" 2>&1
rc=$?
set -e
execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
time_s="$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)"
findings=$(find "$dir/findings" -type f | wc -l)
echo "fuzz: ${execs:-?} executions in ${time_s:-$seconds} s, $findings findings" \
  "(corpus: $(find "$dir/corpus" -type f | wc -l) inputs)" >&2
if [ "$rc" -ne 0 ]; then
  tail -60 "$log" >&2
  echo "fuzz: FAILED (exit $rc); inputs in $dir/findings/" >&2
  exit 1
fi
