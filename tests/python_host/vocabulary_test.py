#!/usr/bin/env python3
"""vocabulary_test.py — kvcheck's Python package speaks the ABI's vocabulary: every name and value
of python/kvcheck/abi.py is the one include/kvcheck/backend.h defines (the header is the
reference: KVCHECK_LAYOUT_KV_SEPARATE = 0 is "kv_separate" = 0), and nothing of the header's is
missing. Run by ctest python-host/vocabulary."""
import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
from kvcheck import abi  # noqa: E402

HEADER = (REPO / "include" / "kvcheck" / "backend.h").read_text()


def enum(prefix, skip=()):
    """{lower-case name after prefix: value} of the header's `PREFIX_NAME = value` entries."""
    found = re.findall(r"\b" + prefix + r"([A-Z0-9_]+)\s*=\s*(-?\d+)", HEADER)
    return {name.lower(): int(v) for name, v in found if name not in skip}


def main():
    checks = {
        "DTYPES": (abi.DTYPES, enum("KVCHECK_", ("OK", "ERROR", "UNSUPPORTED", "NUM_OPS",
                                                "BACKEND_ABI_VERSION")) ),
        "LAYOUTS": (abi.LAYOUTS, enum("KVCHECK_LAYOUT_")),
        "OPS": ({op: i for i, op in enumerate(abi.OPS)}, enum("KVCHECK_OP_")),
        "LSE_BASES": (abi.LSE_BASES, enum("KVCHECK_LSE_")),
        "GRAPH_SUPPORT": (abi.GRAPH_SUPPORT, enum("KVCHECK_GRAPHS_")),
        "FILL_PATTERNS": (abi.FILL_PATTERNS, enum("KVCHECK_FILL_")),
    }
    # KVCHECK_<X> = n matches the other enums' prefixes too: keep the dtype entries only.
    dtype_names = re.search(r"typedef enum \{(.*?)\} kvcheck_dtype;", HEADER, re.S).group(1)
    checks["DTYPES"] = (abi.DTYPES, {k: v for k, v in checks["DTYPES"][1].items()
                                     if "KVCHECK_" + k.upper() + " " in dtype_names})
    version = int(re.search(r"#define KVCHECK_BACKEND_ABI_VERSION (\d+)", HEADER).group(1))
    failed = 0
    if abi.ABI_VERSION != version:
        print(f"FAIL ABI_VERSION {abi.ABI_VERSION}, the header's {version}")
        failed += 1
    for name, (ours, header) in checks.items():
        if ours != header:
            print(f"FAIL abi.{name} = {ours}\n  the header has {header}")
            failed += 1
        else:
            print(f"ok abi.{name}: {len(ours)} names")
    if set(abi.CACHE_DTYPES) - set(abi.DTYPES) or set(abi.IO_DTYPES) - set(abi.CACHE_DTYPES):
        print("FAIL CACHE_DTYPES / IO_DTYPES name dtypes the header lacks")
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
