#!/usr/bin/env python3
"""bench-reference.py KVCHECK [--reference-device D ...] [--extra "ARGS"] SCENARIO...

Time-to-verdict with each float64 reference (issue 20): runs every scenario on --device cuda
once per --reference-device (default: host, then cuda) and prints a markdown table, one row per
run: wall seconds, the seconds the checks took (reference + comparisons, the result's
epochs[].check_seconds), their share of the wall time, the engine's forward seconds (wall - check),
the reference mode used (checks.reference "auto" resolved) and the GPU reference's peak memory.
--extra adds arguments to every run (e.g. "--epochs 1")."""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kvcheck")
    ap.add_argument("scenarios", nargs="+")
    ap.add_argument("--reference-device", action="append", dest="refs")
    ap.add_argument("--extra", default="")
    a = ap.parse_args()
    refs = a.refs or ["host", "cuda"]
    out = tempfile.mkdtemp(prefix="bench-reference-")
    print("| scenario | reference | mode | verdict | wall s | check s | check share | forward s "
          "| GPU reference memory |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|")
    for scenario in a.scenarios:
        name = os.path.basename(scenario)[:-5]
        for ref in refs:
            cmd = [a.kvcheck, "run", scenario, "--device", "cuda", "--reference-device", ref,
                   "-q", "--json", "--out", out, *shlex.split(a.extra)]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode >= 2:
                print(f"| {name} | {ref} | exit {p.returncode} | {p.stderr.strip()[:200]} |")
                continue
            d = json.loads(p.stdout)
            check = sum(e["check_seconds"] for e in d["epochs"])
            wall = d["seconds"]
            mem = d.get("reference_device_bytes")
            print(f"| {name} | {d['reference_device']} | {d['reference_mode']} | {d['verdict']} "
                  f"| {wall:.1f} | {check:.1f} | {100 * check / wall:.0f}% | {wall - check:.1f} "
                  f"| {'-' if mem is None else f'{mem / 2**30:.2f} GiB'} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
