#!/usr/bin/env python3
"""e2e-table.py OUTDIR RESULT.json... — the end-to-end table of scripts/bench-e2e.sh.

Per run (`kvcheck run --json`'s kvcheck.run/1 document, its first result): device, steps, tokens,
wall seconds of the epochs, steps and tokens per second, the shares of the wall time spent in the
model's steps on the device (forward) and in the reference and checks (check), the reference mode
and the peak of cached tokens. Files that are missing, not JSON or without a result (a run that
failed) are listed as such. Reads the results with scripts/kvcheck_lib.py.
"""
import json
import pathlib
import sys

import kvcheck_lib as kv


def row(path):
    try:
        docs = kv.results_of(json.loads(path.read_text()))
    except (OSError, ValueError) as e:
        return f"| {path.stem} | - | run failed: {type(e).__name__} (see {path.stem}.log) |" + " - |" * 10
    if not docs:  # `run --json`'s document holds no result: the run stopped before it ended
        return f"| {path.stem} | - | run failed: no result (see {path.stem}.log) |" + " - |" * 10
    doc = docs[0]
    ep = doc["epochs"]
    steps = kv.epoch_sum(doc, "steps")
    tokens = kv.epoch_sum(doc, "tokens")
    secs = kv.epoch_sum(doc, "seconds")
    fwd = kv.epoch_sum(doc, "forward_seconds")
    chk = kv.epoch_sum(doc, "check_seconds")
    peak = max((e.get("peak_cached_tokens") or 0) for e in ep)
    mode = doc.get("reference_mode", "?")
    if mode == "sampled":
        mode += f" ({doc.get('reference_sampled_requests', '?')}/epoch)"
    return (f"| {path.stem} | {doc['scenario']} | {doc['device']} | {doc['verdict']} | {len(ep)} | "
            f"{steps} | {tokens} | {secs:.2f} | {steps / secs:.1f} | {tokens / secs:.0f} | "
            f"{100 * fwd / secs:.1f}% | {100 * chk / secs:.1f}% | {mode} | {peak} |")


def main():
    out = pathlib.Path(sys.argv[1])
    print("| run | scenario | device | verdict | epochs | steps | tokens | seconds | steps/s | "
          "tokens/s | forward share | check share | reference | peak cached tokens |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for name in sys.argv[2:]:
        print(row(out / name))


if __name__ == "__main__":
    main()
