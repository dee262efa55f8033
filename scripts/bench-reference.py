#!/usr/bin/env python3
"""bench-reference.py KVCHECK [--reference-device D ...] [--extra "ARGS"] SCENARIO...

Time-to-verdict with each float64 reference (results/gpu-reference.md): runs every scenario on --device cuda
once per --reference-device (default: host, then cuda), first with --serial-checks (each step
checked before the next runs), then with the checks overlapping the engine (the default), and
prints a markdown table, one row per run:
  wall s       the run's seconds;
  check s      time spent checking (reference + comparisons: epochs[].check_seconds);
  waited s     of the wall time, how long the engine waited for the checks
               (epochs[].check_wait_seconds; the check seconds themselves when serial);
  forward s    the engine alone: wall - check of the serial run of the same scenario and reference;
  check share  (wall - forward) / wall: what checking added to the time to a verdict;
  reference s by epoch
               epochs[].reference_seconds, one per epoch (the GPU reference keeps finished
               requests' histories: later epochs compute only what differs);
the reference mode used (checks.reference "auto" resolved) and the GPU reference's peak memory.
--extra adds arguments to every run (e.g. "--epochs 1"). Runs kvcheck through
scripts/kvcheck_lib.py."""
import argparse
import os
import shlex
import sys
import tempfile

import kvcheck_lib as kv


def run(a, out, scenario, ref, serial):
    args = ["--device", "cuda", "--reference-device", ref, *shlex.split(a.extra)]
    if serial:
        args.append("--serial-checks")
    p = kv.run_scenario(a.kvcheck, scenario, out, args)
    if p.code >= kv.BAD_INPUT:
        return None, f"exit {p.code}: {p.stderr.strip()[:200]}"
    return p.result(), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kvcheck")
    ap.add_argument("scenarios", nargs="+")
    ap.add_argument("--reference-device", action="append", dest="refs")
    ap.add_argument("--extra", default="")
    a = ap.parse_args()
    refs = a.refs or ["host", "cuda"]
    out = tempfile.mkdtemp(prefix="bench-reference-")
    print("| scenario | reference | mode | checks | verdict | wall s | check s | waited s "
          "| forward s | check share | reference s by epoch | GPU reference memory |")
    print("|---|---|---|---|---|---:|---:|---:|---:|---:|---|---:|")
    for scenario in a.scenarios:
        name = os.path.basename(scenario)[:-5]
        for ref in refs:
            forward = None
            for serial in (True, False):
                d, err = run(a, out, scenario, ref, serial)
                label = "serial" if serial else "overlapped"
                if err:
                    print(f"| {name} | {ref} | - | {label} | {err} |")
                    continue
                check = kv.epoch_sum(d, "check_seconds")
                waited = kv.epoch_sum(d, "check_wait_seconds")
                wall = d["seconds"]
                if serial:
                    forward = wall - check
                share = "-" if forward is None else f"{100 * (wall - forward) / wall:.0f}%"
                mem = d.get("reference_device_bytes")
                by_epoch = " / ".join(f"{e['reference_seconds']:.2f}" for e in d["epochs"])
                label = "overlapped" if d["checks_overlapped"] else "serial"
                print(f"| {name} | {d['reference_device']} | {d['reference_mode']} | {label} "
                      f"| {d['verdict']} | {wall:.1f} | {check:.1f} | {waited:.1f} "
                      f"| {'-' if forward is None else f'{forward:.1f}'} | {share} | {by_epoch} "
                      f"| {'-' if mem is None else f'{mem / 2**30:.2f} GiB'} |")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
