#!/usr/bin/env bash
# setup.sh — install kvcheck's build dependencies (Debian/Ubuntu, apt-get).
#
# Safe to run twice: when every package is already installed it does nothing. Uses sudo only when
# not running as root.
set -euo pipefail

# python3-jsonschema: for scripts/validate-scenarios.py (the ctest tests schema/*); libdlpack-dev:
# the DLPack header the backend plugin ABI (include/kvcheck/backend.h) builds on; libxml2-utils:
# xmllint, which validates `run --junit` reports against the vendored XSD (ctest schema/junit-xsd);
# python3-yaml: parses examples/ci/github-actions.yml (ctest packaging/ci-example); python3-dev and
# python3-numpy: the Python backend host embeds this interpreter and its tests run the NumPy
# backend (backends/python/numpy_host.py).
packages=(cmake ninja-build g++ libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
          libgtest-dev python3-jsonschema libdlpack-dev libxml2-utils python3-yaml python3-dev
          python3-numpy)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all build dependencies are installed" >&2
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: missing ${missing[*]}, and apt-get is not available; install them by hand" >&2
  exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "setup: missing ${missing[*]}; run as root or install sudo" >&2
    exit 1
  fi
  sudo=(sudo)
fi

echo "setup: installing ${missing[*]}" >&2
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
