#!/usr/bin/env python3
"""Per-epoch figures of the five seed scenarios with their regression on and off.

Runs every scenarios/seeds/*.json as written (regression on), with --no-regressions (off), and
seed 001 also with --zero-init-outputs (the reverted mitigation, regression still on), and prints
a markdown table: per epoch, the share of clean requests (the analogue of seed 000's GSM8K score),
non-finite outputs and the largest drift. Usage: scripts/seed-table.py [KVCHECK] [DEVICE]
Runs kvcheck through scripts/kvcheck_lib.py.
"""
import json, sys, tempfile

import kvcheck_lib as kv

kvcheck = sys.argv[1] if len(sys.argv) > 1 else kv.default_kvcheck()
device = sys.argv[2] if len(sys.argv) > 2 else "host"


def run(path, *extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = kv.run_scenario(kvcheck, path, tmp, ["--device", device, *extra])
    if out.code not in (kv.OK, kv.MISMATCH):
        sys.exit(f"kvcheck failed on {path} {extra}: {out.stderr}")
    return out.result()


def fmt_err(e):
    return e if isinstance(e, str) else f"{e:.2e}"


print(f"Device: {device}. Command: `scripts/seed-table.py {' '.join(sys.argv[1:])}`".rstrip())
print()
print("| seed scenario | regression | run | epoch | clean requests | non-finite | max rel err | us/step | zero-init us/step |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
for path in kv.scenarios_in("seeds"):
    name = path.stem
    runs = [("on", ()), ("off", ("--no-regressions", "--expect", "clean"))]
    if name.startswith("001"):
        runs.insert(1, ("on + zero-init", ("--zero-init-outputs", "--expect", "clean")))
    for label, extra in runs:
        res = run(path, *extra)
        reg = ", ".join(json.load(open(path))["regressions"])
        for e in res["epochs"]:
            steps = max(e["steps"], 1)
            zero = e["zero_init_seconds"]
            print(f"| {name} | {reg} | {label} ({res['verdict']}) | {e['epoch']} | "
                  f"{e['clean_request_fraction']:.3f} | {e['nonfinite_outputs']} | "
                  f"{fmt_err(e['max_rel_error'])} | {1e6 * e['forward_seconds'] / steps:.1f} | "
                  f"{(f'{1e6 * zero / steps:.2f}' if zero > 0 else '-')} |")
