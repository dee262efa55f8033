#!/usr/bin/env bash
# build.sh [BUILD_DIR [CMAKE_ARGS...]] — configure (Ninja, Release) and build kvcheck and its tests
# with every core. BUILD_DIR defaults to build/ at the repository root; CMAKE_ARGS go to the
# configure step (e.g. -DKVCHECK_CUDA=ON). Works from any working directory.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-$repo/build}"
shift || true

cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" -j "$(nproc)"
