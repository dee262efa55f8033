#!/usr/bin/env bash
# downstream_test.sh BUILD_DIR WORK_DIR — kvcheck as a dependency: install the build into a
# prefix, check what the install holds, then configure tests/downstream/ (find_package(kvcheck),
# kvcheck_add_scenario_tests, kvcheck_add_suite_tests) against it and run its ctest: every test
# registered must run and pass.
set -euo pipefail
build=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in bin/kvcheck include/kvcheck/backend.h share/kvcheck/scenarios/suite.json \
         share/kvcheck/scenarios/schema/result.schema.json share/man/man1/kvcheck.1 \
         share/bash-completion/completions/kvcheck lib/cmake/kvcheck/kvcheckConfig.cmake \
         lib/cmake/kvcheck/kvcheckConfigVersion.cmake lib/cmake/kvcheck/kvcheck_gpu_test.sh; do
  [ -e "$work/prefix/$f" ] || { echo "FAIL: the install lacks $f"; exit 1; }
done
"$work/prefix/bin/kvcheck" --version
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" 2>&1 \
  || { cat "$work/configure.log"; exit 1; }
(cd "$work/build" && ctest -N | tail -1)
count=$(cd "$work/build" && ctest -N | sed -n 's/^Total Tests: //p')
# 2 scenarios x 2 seeds, the 9 shipped regression scenarios, the suite's 2 files.
[ "$count" = 15 ] || { echo "FAIL: $count tests registered, expected 15"; exit 1; }
(cd "$work/build" && ctest -j2 --output-on-failure) || { echo "FAIL: the downstream ctest failed"; exit 1; }
# (Not `ctest | grep -q` under pipefail: grep's early exit would fail the pipe.)
labelled=$(cd "$work/build" && ctest -N -L mine)
[[ $labelled == *"mine/sub/tiny.json/seed2"* ]] \
  || { echo "FAIL: no test mine/sub/tiny.json/seed2 labelled mine"; exit 1; }
echo "ok: installed, found and ran $count tests"
