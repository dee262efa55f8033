#!/usr/bin/env bash
# fetch-flashinfer.sh [DEST] — FlashInfer's header-only CUDA kernels for backends/flashinfer, from
# the pinned PyPI wheel (which carries them under flashinfer/data/include/): `pip download
# --no-deps`, the wheel's sha256 checked, only the headers unpacked into DEST/include (default
# build/flashinfer at the repository root). DEST/VERSION records the version and the sha256; CMake
# reads it (-DKVCHECK_FLASHINFER=ON -DFLASHINFER_INCLUDE_DIR=DEST/include) and refuses any other.
# Nothing of FlashInfer runs in Python: the wheel is only an archive here.
#
# Run it before configuring; it does nothing when DEST already holds this version. Needs network
# access to PyPI (the GPU machines have none: fetch here, carry DEST there).
set -euo pipefail

version=0.7.2.post1
sha256=bfdc18b9e1e4d8d0730fe4343dc0e284cd0c160086de80f99888bc4867922d49
wheel=flashinfer_python-${version}-py3-none-any.whl

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$repo/build/flashinfer}"

if [ -f "$dest/VERSION" ] && grep -qx "flashinfer-python $version sha256 $sha256" "$dest/VERSION" \
    && [ -f "$dest/include/flashinfer/page.cuh" ]; then
  echo "fetch-flashinfer: $dest already holds flashinfer-python $version" >&2
  exit 0
fi

if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "fetch-flashinfer: installing python3-pip (for pip download)" >&2
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    python3-pip
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetch-flashinfer: downloading flashinfer-python==$version (about 60 MB)" >&2
python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
  "flashinfer-python==$version"
if [ ! -f "$tmp/$wheel" ]; then
  echo "fetch-flashinfer: pip did not produce $wheel (got: $(ls "$tmp"))" >&2
  exit 1
fi
got="$(sha256sum "$tmp/$wheel" | cut -d' ' -f1)"
if [ "$got" != "$sha256" ]; then
  echo "fetch-flashinfer: $wheel has sha256 $got, expected $sha256: refusing it" >&2
  exit 1
fi

rm -rf "$dest.partial"
mkdir -p "$dest.partial"
python3 - "$tmp/$wheel" "$dest.partial/include" <<'PY'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
prefix = "flashinfer/data/include/"
n = 0
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if not name.startswith(prefix) or name.endswith("/"):
            continue
        rel = name[len(prefix):]
        if rel.startswith("/") or ".." in rel.split("/"):
            sys.exit(f"fetch-flashinfer: unsafe path in the wheel: {name}")
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(name) as src, open(path, "wb") as dst:
            dst.write(src.read())
        n += 1
if n == 0:
    sys.exit("fetch-flashinfer: the wheel holds no flashinfer/data/include/")
print(f"fetch-flashinfer: {n} headers", file=sys.stderr)
PY
echo "flashinfer-python $version sha256 $sha256" >"$dest.partial/VERSION"
rm -rf "$dest"
mv "$dest.partial" "$dest"
echo "fetch-flashinfer: headers in $dest/include (configure with -DKVCHECK_FLASHINFER=ON" \
     "-DFLASHINFER_INCLUDE_DIR=$dest/include)" >&2
