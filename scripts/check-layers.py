#!/usr/bin/env python3
"""check-layers.py [--self-test] — the include graph between kvcheck's modules follows its layers.

Every `#include "MODULE/..."` in src/MODULE/, kernels/ and backends/ is an edge between modules;
each module may include only those ALLOWED says, and the graph of what is allowed has no cycle
once the edges DEBT_EDGES names (debt, each with its way out) are left out. CMake links the libraries in one direction,
but every module sees the same include folders, so only this check keeps a header of a higher
layer out of a lower one (a result model that includes the checker, a reference that includes
the engine's ops). Exits 1 naming each file and include that breaks a rule.
"""
import os
import re
import sys

import kvcheck_lib

REPO = str(kvcheck_lib.REPO)

# What each module may include besides itself. kernels/ is the bottom (shared host/device math);
# kvcheck/ is the public ABI header (include/kvcheck/); cli/ is the top.
ALLOWED = {
    "kernels": set(),
    # Threads, clocks, the RNG, device errors, byte sizes: below every module of src/.
    "util": set(),
    "io": set(),
    # The op vocabulary (src/ops/op_table.h): below both device/ and backend/, which read it, and
    # over the ABI header only, whose ops its rows name.
    "ops": {"kvcheck"},
    "backend": {"kernels", "kvcheck", "ops"},
    "device": {"kernels", "ops", "util"},
    "scenario": {"backend", "io", "kernels", "util"},
    # The synthetic model's weights, shared by the engine and the reference.
    "model": {"kernels", "scenario", "util"},
    "engine": {"device", "kernels", "model", "scenario", "util"},
    "plugin": {"backend", "device", "io", "kvcheck", "ops", "scenario", "util"},
    "conform": {"backend", "device", "kernels", "kvcheck", "ops", "plugin", "util"},
    # The float64 reference: the model, the scenario and the utilities; never the engine, its
    # devices, its ops (kernels/ beyond the shared math of ONLY_FILES), plugins or backends.
    "reference": {"kernels", "model", "scenario", "util"},
    # A run's result model: plain data that check/ fills and report/ prints; neither of them.
    "result": {"device", "engine", "model", "ops", "reference", "scenario", "util"},
    "check": {"device", "engine", "kernels", "model", "reference", "result", "scenario", "util"},
    "report": {"check", "device", "io", "ops", "result", "scenario", "util"},
    "cli": {"backend", "check", "conform", "device", "engine", "io", "kernels", "kvcheck", "model",
            "ops", "plugin", "reference", "report", "result", "scenario", "util"},
    # Plugins over kvcheck's ABI: its conversions and math, and the version string.
    "backends": {"backend", "kernels", "kvcheck", "ops", "report"},
}

# Where a module may include only some files of another. The reference shares with the ops only
# the math that defines the model (the storage rounding of dtype.cuh and model_math.cuh's one
# formula at two precisions): it stays in kernels/, the bottom layer that nvcc-compiled ops (which
# never include src/) and the scenario's DType both need; anything else of kernels/ would be the
# engine's code path judged by itself.
ONLY_FILES = {
    ("reference", "kernels"): {"kernels/dtype.cuh", "kernels/model_math.cuh"},
}

# Allowed edges that close a cycle: known debt, each with what removes it. The cycle check runs
# on the graph without them.
DEBT_EDGES = {}

INCLUDE = re.compile(r'^\s*#\s*include\s+"(([A-Za-z_]+)/[^"]*)"', re.M)


def module_dirs():
    """(module, directory) for every module whose includes are checked."""
    for name in sorted(os.listdir(os.path.join(REPO, "src"))):
        path = os.path.join(REPO, "src", name)
        if os.path.isdir(path):
            yield name, path
    yield "kernels", os.path.join(REPO, "kernels")
    yield "backends", os.path.join(REPO, "backends")


def edges():
    """(module, included module, file, line, included path) for every cross-module include."""
    for module, path in module_dirs():
        for root, _, files in os.walk(path):
            for f in files:
                if not f.endswith((".h", ".hpp", ".cpp", ".cu", ".cuh", ".c")):
                    continue
                p = os.path.join(root, f)
                text = open(p, encoding="utf-8", errors="replace").read()
                for m in INCLUDE.finditer(text):
                    target = m.group(2)
                    if target != module:
                        line = text.count("\n", 0, m.start()) + 1
                        yield module, target, os.path.relpath(p, REPO), line, m.group(1)


def cycles(graph):
    """Pairs of modules that reach each other in `graph` (module -> set of modules)."""
    def reach(a):
        seen, todo = set(), [a]
        while todo:
            for b in graph.get(todo.pop(), ()):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen
    r = {m: reach(m) for m in graph}
    return {frozenset({a, b}) for a in graph for b in r[a] if a != b and a in r.get(b, ())}


def check(allowed, found):
    errors = []
    modules = set(allowed)
    for module, target, path, line, included in found:
        if module not in allowed:
            errors.append(f"{path}: module {module} is not in check-layers.py's ALLOWED table")
            modules.add(module)
        elif target in allowed or target == "kvcheck":
            if target not in allowed[module]:
                errors.append(f"{path}:{line}: {module}/ includes {target}/, which its layer may "
                              f"not (allowed: {', '.join(sorted(allowed[module])) or 'none'})")
            elif included not in ONLY_FILES.get((module, target), {included}):
                errors.append(f"{path}:{line}: {module}/ includes {included}; of {target}/ it may "
                              f"include only {', '.join(sorted(ONLY_FILES[(module, target)]))}")
    acyclic = {m: {t for t in ts if (m, t) not in DEBT_EDGES} for m, ts in allowed.items()}
    for pair in sorted(cycles(acyclic), key=sorted):
        errors.append(f"the allowed graph has a cycle between {' and '.join(sorted(pair))}")
    return errors


def self_test():
    bad = [("result", "check", "src/result/x.h", 3, "check/checker.h"),
           ("check", "report", "src/check/y.h", 1, "report/format.h"),
           ("reference", "engine", "src/reference/r.h", 2, "engine/engine.h"),
           ("reference", "device", "src/reference/r.h", 3, "device/device.h"),
           ("reference", "kernels", "src/reference/r.h", 4, "kernels/host/paged_decode.h")]
    errors = check(ALLOWED, bad)
    assert len(errors) == 5 and "result/ includes check/" in errors[0], errors
    assert "check/ includes report/" in errors[1], errors
    assert "reference/ includes engine/" in errors[2] and "reference/ includes device/" in errors[3]
    assert "may include only kernels/dtype.cuh" in errors[4], errors
    assert check(ALLOWED, [("reference", "kernels", "src/reference/r.h", 4,
                            "kernels/dtype.cuh")]) == []
    looped = dict(ALLOWED, device={"kernels", "engine"})
    assert any("cycle between device and engine" in e for e in check(looped, [])), "no cycle found"
    assert check(ALLOWED, [("engine", "device", "src/engine/z.h", 1, "device/device.h")]) == []
    print("check-layers self-test: a forbidden include, a file outside a module's only-files and a "
          "new cycle are caught")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    found = list(edges())
    errors = check(ALLOWED, found)
    for e in errors:
        print(f"check-layers: {e}", file=sys.stderr)
    if errors:
        sys.exit(1)
    debt = "; ".join(DEBT_EDGES.values()) or "none"
    print(f"check-layers: {len(found)} cross-module includes, every one allowed by its layer; "
          f"known debt: {debt}")


if __name__ == "__main__":
    main()
