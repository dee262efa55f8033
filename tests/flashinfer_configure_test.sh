#!/usr/bin/env bash
# flashinfer_configure_test.sh SOURCE_DIR — configuring with -DKVCHECK_FLASHINFER=ON stops with a
# message that says how to fetch the headers when they are missing or of another version (ctest
# configure/flashinfer-*). Without nvcc the first refusal is the missing CUDA device instead,
# which is checked then.
set -uo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

configure() {  # INCLUDE_DIR: prints cmake's output on one line (it wraps), returns its status
  cmake -S "$src" -B "$tmp/build-$RANDOM" -G Ninja -DKVCHECK_FLASHINFER=ON \
    -DFLASHINFER_INCLUDE_DIR="$1" -DBUILD_TESTING=OFF 2>&1 | tr '\n' ' ' | tr -s ' '
}

has_cuda=0
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then has_cuda=1; fi

out=$(configure "$tmp/nowhere") && fail "configure without headers succeeded"
if [ $has_cuda = 1 ]; then
  grep -q "no FlashInfer headers" <<<"$out" || fail "no 'no FlashInfer headers' in: $out"
  grep -q "scripts/fetch-flashinfer.sh" <<<"$out" || fail "no fetch hint in: $out"
  mkdir -p "$tmp/old/include/flashinfer"
  touch "$tmp/old/include/flashinfer/page.cuh"
  echo "flashinfer-python 0.6.0 sha256 0123abcd" >"$tmp/old/VERSION"
  out=$(configure "$tmp/old/include") && fail "configure with FlashInfer 0.6.0 succeeded"
  grep -q "FlashInfer '0.6.0'" <<<"$out" || fail "the found version is not named in: $out"
  grep -q "not the pinned 0.7.2.post1" <<<"$out" || fail "the pin is not named in: $out"
else
  grep -q "needs the CUDA device" <<<"$out" || fail "no 'needs the CUDA device' in: $out"
fi
echo "ok"
