#!/usr/bin/env python3
"""backends-table.py — the scenario x backend verdict table (results/backends.md).

Runs every scenario of scenarios/ and scenarios/gpu/ with --no-regressions on a GPU, once on
kvcheck's built-in CUDA ops and once with each backend plugin given, and writes a markdown table:
verdict, max relative error, seconds, and how many op calls the plugin ran. A scenario that names
regressions runs a second time on each backend with them on (its own expectation): the cell adds
"regression: VERDICT at SITE". A row where a plugin ran nothing says so (with kvcheck's reason) and
never counts as agreement. The header records the GPU, driver and CUDA versions, the plugin's name
and version (FlashInfer's carries its wheel sha256) and the kvcheck commit. Disagreements are
classified by hand in a notes file (JSON: {"scenario path under scenarios/": "one line of why"}),
whose lines go into the table. Runs and reads kvcheck through scripts/kvcheck_lib.py.

A plugin is PATH or python:MODULE (docs/python-backends.md), either with ::OPTIONS (its
--backend-option text, e.g. prefill=ragged, sdpa=cudnn): one column each.

  scripts/backends-table.py build/kvcheck \
      build/backends/flashinfer/libkvcheck_backend_flashinfer.so \
      build/backends/flashinfer/libkvcheck_backend_flashinfer.so::prefill=ragged \
      --scale-args "--epochs 1 --sampled-requests 1" --records results/backends-records.json \
      --notes results/backends-notes.json --out results/backends.md [-- KVCHECK_RUN_ARGS...]
  scripts/backends-table.py --render results/backends-records.json \
      --notes results/backends-notes.json --out results/backends.md   # re-render, no runs
"""
import argparse
import datetime
import json
import pathlib
import subprocess
import sys
import tempfile

import kvcheck_lib as kv


def scenarios():
    """Every scenario file, the GPU-scale ones (directly in scenarios/gpu/) last."""
    files = kv.scenario_files()
    return [p for p in files if not kv.is_gpu_scale(p)] + [p for p in files if kv.is_gpu_scale(p)]


def has_regressions(scenario):
    return bool(json.loads(scenario.read_text()).get("regressions"))


def run(kvcheck, scenario, out_dir, plugin, extra, clean=True):
    """One run: with --no-regressions --expect clean (clean) or as the scenario says."""
    cmd = [kvcheck, "run", str(scenario), "--device", "cuda", "--out", str(out_dir), "--json"]
    cmd += ["--no-regressions", "--expect", "clean"] if clean else []
    if plugin:
        path, _, options = plugin.partition("::")
        cmd += ["--backend", path] + (["--backend-option", options] if options else [])
    p = kv.run(cmd + extra)
    row = {"exit": p.code}
    doc = p.result()
    if doc is None:
        reason = [l for l in p.stderr.splitlines() if "cannot run" in l or "error" in l]
        text = reason[0] if reason else " ".join(p.stderr.split())[-200:]
        row["text"] = f"exit {p.code}: {text}"
        return row
    row["kvcheck"] = doc.get("kvcheck_version", "")
    row["verdict"] = doc["verdict"]
    row["max_err"] = kv.worst_error(kv.error_value(e.get("max_rel_error"))
                                    for e in doc["epochs"])
    row["seconds"] = doc["seconds"]
    f = doc.get("first_failure")
    row["site"] = f["site"] if f else None
    b = doc.get("backend")
    if b:
        total = sum(k["total_calls"] for k in b["layer_kinds"])
        row["calls"] = f'{b["backend_calls"]} of {total}'
        row["ran_nothing"] = b["backend_calls"] == 0
        row["plugin"] = f'{b["name"]} {b.get("version", "")}'
    return row


def status_of(base, r):
    """agree, **differ** (both ran, verdicts differ), or why the pair was not judged."""
    if "verdict" not in base:
        return "not judged: the built-in run did not finish"
    if "verdict" not in r:
        return "not judged: " + ("plugin cannot run it" if "cannot run" in r["text"]
                                 else "plugin run did not finish")
    if r.get("ran_nothing"):
        return "not judged: plugin ran nothing"
    return "agree" if r["verdict"] == base["verdict"] else "**differ**"


def regression_cell(r):
    if r is None:
        return ""
    if "verdict" not in r:
        return "; regression: " + r["text"].replace("|", "/")
    s = f'; regression: {r["verdict"]}' + (f' at {r["site"]}' if r["site"] else "")
    return s + (" (**ran nothing**)" if r.get("ran_nothing") else "")


def cell(r, reg=None):
    if "verdict" not in r:
        return r["text"].replace("|", "/") + regression_cell(reg)
    s = f'{r["verdict"]}, {r["max_err"]:.2e}, {r["seconds"]:.1f} s'
    if "calls" in r:
        s += f', ran {r["calls"]}' + (" (**ran nothing**)" if r["ran_nothing"] else "")
    return s + regression_cell(reg)


def regression_status(base, r):
    """With the regressions on: the same verdict on both (agree) or not (differ)."""
    if base is None or "verdict" not in base or "verdict" not in r or r.get("ran_nothing"):
        return ""
    return ("regression: agree" if r["verdict"] == base["verdict"]
            else "regression: **differ**")


def render(doc, notes):
    """The markdown table of a run's records (see main), with the notes' classifications."""
    rows = []
    for rec in doc["records"]:
        note = notes.get(rec["scenario"], "")
        status = "; ".join(rec["statuses"])
        if "**differ**" in status and note:
            status = status.replace("**differ**", "differ")  # classified in the notes
        cells = " | ".join(rec["cells"])
        rows.append(f'| {rec["scenario"]} | {cells} | {status} | {note} |')
    names = doc["plugin_names"]
    head = [
        "# Scenario x backend verdicts",
        "",
        f'Date: {doc["date"]}. kvcheck {doc["version"]}, commit {doc["commit"]}. '
        f'GPU: {doc["gpu"]}. CUDA: {doc["cuda"]}.',
        "Plugins: " + "; ".join(names) + ".",
        "",
        f'Command: `{doc["command"]}`',
        "(every scenario with --no-regressions --expect clean; a cell: verdict, max relative "
        "error, seconds, op calls the plugin ran; for a scenario with regressions, its verdict "
        "and first failing check site with them on; the clean runs of the GPU-scale scenarios, "
        "directly in scenarios/gpu/, also take the --scale-args). Status: per plugin column, "
        "the clean runs' verdicts compared, then the regression runs'.",
        "",
        "| scenario | built-in cuda | " + " | ".join(names) + " | status | why |",
        "|---|---|" + "---|" * len(names) + "---|---|",
    ]
    return "\n".join(head + rows) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("kvcheck", nargs="?")
    ap.add_argument("plugins", nargs="*")
    ap.add_argument("--notes", help="JSON {scenario path: classification of a disagreement}")
    ap.add_argument("--out", default="-")
    ap.add_argument("--records", help="also write the run's records (JSON) here, for --render")
    ap.add_argument("--render", help="no runs: render the table from these records and --notes")
    ap.add_argument("--scale-args", default="",
                    help="more `kvcheck run` options for the GPU-scale scenarios only (those "
                         "directly in scenarios/gpu/), e.g. \"--epochs 1 --sampled-requests 1\"")
    ap.add_argument("--commit", help="the kvcheck commit (default: git rev-parse HEAD here)")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []  # more `kvcheck run` options
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    notes = json.loads(pathlib.Path(a.notes).read_text()) if a.notes else {}
    if a.render:
        doc = json.loads(pathlib.Path(a.render).read_text())
    else:
        if not a.kvcheck or not a.plugins:
            ap.error("give KVCHECK and at least one PLUGIN (or --render RECORDS)")
        doc = run_all(a, extra)
        if a.records:
            pathlib.Path(a.records).write_text(json.dumps(doc, indent=1) + "\n")
    text = render(doc, notes)
    if a.out == "-":
        sys.stdout.write(text)
    else:
        pathlib.Path(a.out).write_text(text)
    return 0


def run_all(a, extra):
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip()
    commit = a.commit or kv.git_commit()
    records, plugin_names, version = [], {}, ""
    scale = a.scale_args.split()
    with tempfile.TemporaryDirectory() as tmp:
        for s in scenarios():
            # The scale args shorten the clean runs only: a regression may need every epoch.
            args = extra + (scale if kv.is_gpu_scale(s) else [])
            regs = has_regressions(s)
            base = run(a.kvcheck, s, pathlib.Path(tmp) / "builtin", None, args)
            base_reg = run(a.kvcheck, s, pathlib.Path(tmp) / "builtin", None, extra, False) \
                if regs else None
            version = version or base.get("kvcheck", "")
            cells = [cell(base, base_reg)]
            statuses = []  # one per plugin
            for i, plugin in enumerate(a.plugins):
                r = run(a.kvcheck, s, pathlib.Path(tmp) / f"p{i}", plugin, args)
                r_reg = run(a.kvcheck, s, pathlib.Path(tmp) / f"p{i}", plugin, extra, False) \
                    if regs and "verdict" in r else None
                path, _, options = plugin.partition("::")
                if "plugin" in r:
                    plugin_names[plugin] = r["plugin"] + (f" ({options})" if options else "")
                plugin_names.setdefault(plugin, pathlib.Path(path).name +
                                        (f" ({options})" if options else ""))
                cells.append(cell(r, r_reg))
                st = status_of(base, r)
                if r_reg is not None:
                    st = ", ".join(x for x in (st, regression_status(base_reg, r_reg)) if x)
                statuses.append(st)
            records.append({"scenario": kv.scenario_name(s), "cells": cells,
                            "statuses": statuses})
            print(json.dumps(records[-1]), file=sys.stderr, flush=True)
    command = ("scripts/backends-table.py " + " ".join([a.kvcheck] + a.plugins) +
               (f" --scale-args '{a.scale_args}'" if a.scale_args else "") +
               (" -- " + " ".join(extra) if extra else ""))
    return {"date": str(datetime.date.today()), "version": version, "commit": commit,
            "gpu": smi, "cuda": nvcc.splitlines()[-1] if nvcc else "?",
            "plugin_names": [plugin_names[p] for p in a.plugins], "command": command,
            "records": records}


if __name__ == "__main__":
    sys.exit(main())
