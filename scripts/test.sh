#!/usr/bin/env bash
# test.sh — the whole check, as CI runs it: install dependencies, build, run every test
# (unit tests, CLI tests, and each scenario against its own expectation). Exits non-zero on any
# failure; works from any working directory.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

"$repo/scripts/setup.sh"
"$repo/scripts/build.sh" "$repo/build"
cd "$repo/build"
ctest --output-on-failure -j2
