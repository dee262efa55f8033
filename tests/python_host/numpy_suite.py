#!/usr/bin/env python3
"""numpy_suite.py KVCHECK OUT_DIR [--builtin] — the NumPy backend (backends/python/numpy_host.py)
through the Python host over kvcheck's host gate (scenarios/suite.json's "as-written" entry
without nightly/): every scenario, at its own seed, meets its expectation, which the built-in host
ops meet too (ctest as-written/*, in the same CI run), so the verdicts are the built-in ones. Then
its fused variant (--backend-option prefill=fused: paged_prefill in place of the gather -> varlen
-> merge chain) the same, but for scenarios whose regression lives in the chain it replaces (the
result notes "has no effect"): those must come out clean. --builtin also runs the built-in ops
and compares verdict and first failing check site scenario by scenario (one more pass).

Run by ctest python-host/numpy-suite with the interpreter the host embeds.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import kvcheck_lib as kl  # noqa: E402

# The as-written entry of scenarios/suite.json, nightly/ left out (it is the nightly tier's).
FOLDERS = ["smoke.json", "regressions", "seeds", "shapes", "gpu/seeds", "gpu/regressions"]
BACKEND = "python:numpy_host"
# Scenarios where the NumPy backend may differ from the built-in ops, with the reason. None.
# (A result's "expected" is the scenario's expectation: "clean" or "corrupt".)
EXCEPTIONS = {}


def outcome(doc):
    failure = doc.get("first_failure") or {}
    return doc["verdict"], failure.get("site")


def run_all(kvcheck, out, extra):
    paths = [str(kl.SCENARIOS / f) for f in FOLDERS]
    r = kl.run_kvcheck(kvcheck, ["run", *paths, "-j", "2", "--json", "--out", str(out), *extra],
                       timeout=900)
    if r.code not in (kl.OK, kl.MISMATCH):
        sys.exit(f"{' '.join(r.cmd)}: {kl.describe_exit(r.code)}\n{r.stderr[-3000:]}")
    return {doc["scenario_path"]: doc for doc in r.results()}


def main():
    kvcheck, out = sys.argv[1], pathlib.Path(sys.argv[2])
    builtin = run_all(kvcheck, out / "builtin", []) if "--builtin" in sys.argv[3:] else None
    problems = []
    for variant, extra in (("chain", []), ("fused", ["--backend-option", "prefill=fused"])):
        numpy = run_all(kvcheck, out / variant, ["--backend", BACKEND, *extra])
        if builtin is not None and sorted(numpy) != sorted(builtin):
            problems.append(f"{variant}: ran other scenarios than the built-in run")
        same = replaced = 0
        for path, doc in sorted(numpy.items()):
            ran = doc["backend"]["backend_calls"]
            if ran == 0:
                problems.append(f"{variant} {path}: no op call ran on the backend")
            chain_only = any("has no effect" in n for n in doc["backend"].get("notes", []))
            if chain_only:
                replaced += 1
                if doc["verdict"] != "clean":
                    problems.append(f"{variant} {path}: its regression lives in the replaced "
                                    f"chain, yet the verdict is {doc['verdict']}")
                continue
            if builtin is None:
                want, got = doc["expected"], doc["verdict"]
            else:
                want, got = outcome(builtin[path]), outcome(doc)
            if got == want:
                same += 1
            elif path not in EXCEPTIONS:
                problems.append(f"{variant} {path}: {got} on the NumPy backend, {want} "
                                f"{'expected' if builtin is None else 'built-in'}")
        against = "expected" if builtin is None else "on the built-in ops"
        print(f"{variant}: {same} of {len(numpy)} scenarios as {against}, {replaced} judged "
              "without their chain regression")
        if variant == "chain" and replaced:
            problems.append("chain: the engine replaced the chain, which only paged_prefill does")
    for p in problems:
        print("FAIL", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
