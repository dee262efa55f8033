#!/usr/bin/env python3
"""calibrate-oracle.py — measure the largest clean drift per (cache dtype, check site, op
precision), to calibrate the oracle's tolerances (src/check/tolerances.cpp; results/oracle-calibration.md).

  measure: scripts/calibrate-oracle.py measure KVCHECK OUT.json [--device host|cuda]
               [--backend PLUGIN.so] [--seeds 1-100|43-48,53,...]
               [--dtypes f32,f16,bf16,fp8_e4m3] [--jobs N] [--reference-device host]
               [SCENARIO...]
      Runs every scenario (default: smoke.json, seeds/, regressions/, shapes/ and the
      FlashInfer-shape variants under gpu/seeds/ and gpu/regressions/; not the GPU-scale ones),
      with the cache dtype forced to each dtype (fp8: k_scale 1/16, v_scale 1/4 unless the
      scenario is fp8 already), --no-regressions, for every seed, with checks.tolerance 0.999
      so that no drift check can stop a run early: every epoch's max_rel_error_by_site is
      kept. A run a backend cannot take (exit 3) is counted as such. Writes one record per run
      to OUT.json.
  report:  scripts/calibrate-oracle.py report OUT.md REC.json... [--margin 3] [--floor 2e-3]
               [--exclude SCENARIO...]
      The largest error per (dtype, site, precision) over the records, where it happened, and
      the tolerance it calls for: margin x largest, rounded up to two significant digits, at
      least the floor. Then, per scenario, the checks.site_tolerances its own runs in its own
      cache dtype call for (what a model the table does not fit writes into its scenario).
      --exclude leaves a scenario's runs out of the table (not out of its own figures).
      Then the op checks (checks.op_drift, docs/oracle.md): per (dtype, site, op precision) the
      largest error / bound of an op's output against float64 over its own inputs.
  check:   scripts/calibrate-oracle.py check REC.json... [--min-ratio 0.1]
      The op bound is a check of the formula, not calibrated: exit 1 if a (dtype, site, op
      precision)'s largest error / bound is above 1 (the bound cries wolf) or below --min-ratio
      (the bound is more than 1/min-ratio times the largest clean error: too loose to catch
      anything). ctest oracle/op-bound runs it over a few seeds on the host.
Not a CI job (but for `check` over a few seeds): a calibration is run once and its figures go to results/oracle-calibration.md.
Runs and reads kvcheck through scripts/kvcheck_lib.py.
"""
import argparse
import concurrent.futures
import datetime
import functools
import json
import math
import pathlib
import signal
import sys
import tempfile

import kvcheck_lib as kv

DTYPES = ["f32", "f16", "bf16", "fp8_e4m3"]


def default_scenarios():
    s = kv.SCENARIOS
    return [s / "smoke.json"] + sorted(
        p for d in ("seeds", "regressions", "shapes", "gpu/seeds", "gpu/regressions")
        for p in (s / d).glob("*.json"))


def seed_range(text):
    """'1-100', '53' or a comma list of them ('43-48,53,73-74'), in the order given."""
    seeds = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        seeds += range(int(a), int(b or a) + 1)
    return seeds


def forced(src, dtype, tmp):
    """A copy of scenario `src` with its cache dtype forced and its tolerance opened."""
    doc = json.loads(src.read_text())
    cache = doc.setdefault("cache", {})
    was_fp8 = cache.get("dtype") == "fp8_e4m3"
    cache["dtype"] = dtype
    if dtype == "fp8_e4m3" and not was_fp8:
        cache.update({"k_scale": 0.0625, "v_scale": 0.25})
    elif dtype != "fp8_e4m3":
        cache.pop("k_scale", None)
        cache.pop("v_scale", None)
    checks = doc.setdefault("checks", {})
    checks["tolerance"] = 0.999
    checks.pop("site_tolerances", None)  # they would go over the opened tolerance
    rel = kv.scenario_name(src)
    path = tmp / f'{rel.replace("/", "_")[:-5]}.{dtype}.json'
    path.write_text(json.dumps(doc))
    return rel, path


def run_one(kvcheck, path, seed, device, backend, out_dir, reference_device=None):
    args = ["--device", device, "--seed", str(seed), "--no-regressions", "--expect", "clean"]
    if reference_device:  # the op checks run beside the CPU reference only
        args += ["--reference-device", reference_device]
    if backend:
        args += ["--backend", backend]
    p = kv.run_scenario(kvcheck, path, out_dir, args)
    if p.code == kv.CANNOT_RUN:
        return {"exit": kv.CANNOT_RUN}
    doc = p.result()
    if doc is None:
        return {"exit": p.code, "error": p.stderr.strip()[-300:]}
    def largest(key):
        sites = {}
        for e in doc["epochs"]:
            for site, v in e.get(key, {}).items():
                v = kv.error_value(v)
                sites[site] = v if math.isnan(v) or site not in sites else max(sites[site], v)
        return sites
    op_precision = "half_io" if backend else "cuda_builtin" if device == "cuda" else "host_f32"
    return {"exit": p.code, "verdict": doc["verdict"], "sites": largest("max_rel_error_by_site"),
            "precision": "half_io" if backend else "f32",
            "op_precision": op_precision, "op_errors": largest("max_op_error_by_site"),
            "op_ratios": largest("max_op_bound_ratio_by_site"),
            "input_errors": largest("max_input_error_by_site")}


def measure(a):
    files = [pathlib.Path(f).resolve() for f in a.scenarios] or default_scenarios()
    records = []
    # A measurement stopped early leaves runs going: their output folders may not be removable.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as t:
        tmp = pathlib.Path(t)
        # Seed by seed, so that a run stopped early has measured every scenario at its seeds.
        forced_files = [(dtype, *forced(f, dtype, tmp)) for dtype in a.dtypes.split(",")
                        for f in files]
        jobs = [(rel, dtype, seed, path) for seed in seed_range(a.seeds)
                for dtype, rel, path in forced_files]
        # SIGTERM (a `timeout`) ends the measurement early: the records so far are written.
        # `timeout` signals this process and then its whole process group, this process again:
        # a second SystemExit while the records are written would lose them.
        def stop(*_):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            sys.exit(143)
        signal.signal(signal.SIGTERM, stop)
        pool = concurrent.futures.ThreadPoolExecutor(a.jobs)
        try:
            futs = {pool.submit(run_one, a.kvcheck, path, seed, a.device, a.backend,
                                tmp / f"out{i % a.jobs}", a.reference_device): (rel, dtype, seed)
                    for i, (rel, dtype, seed, path) in enumerate(jobs)}
            for k, fut in enumerate(concurrent.futures.as_completed(futs)):
                rel, dtype, seed = futs[fut]
                r = fut.result()
                r.update({"scenario": rel, "dtype": dtype, "seed": seed, "device": a.device})
                records.append(r)
                if r["exit"] not in (kv.OK, kv.CANNOT_RUN):
                    print(f"NOT CLEAN: {rel} {dtype} seed {seed}: {r}", file=sys.stderr)
                if k % 200 == 0:
                    print(f"{k}/{len(jobs)}", file=sys.stderr, flush=True)
                    write_records(a, records, len(jobs))  # a killed run keeps what it measured
        except SystemExit:
            print(f"stopped early: {len(records)} of {len(jobs)} runs", file=sys.stderr)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
    write_records(a, records, len(jobs))
    return 0


def write_records(a, records, planned):
    """The records so far, with what was measured, written atomically to a.out."""
    meta = {"date": str(datetime.date.today()), "kvcheck": a.kvcheck, "device": a.device,
            "backend": a.backend, "seeds": a.seeds, "dtypes": a.dtypes, "runs": len(records),
            "planned": planned,
            "commit": kv.git_commit()}
    tmp = pathlib.Path(a.out + ".tmp")
    tmp.write_text(json.dumps({"meta": meta, "records": list(records)}) + "\n")
    tmp.replace(a.out)


@functools.lru_cache(maxsize=None)
def native_dtype(name):
    """The cache dtype scenario `name` (kv.scenario_name()) names itself."""
    doc = json.loads((kv.SCENARIOS / name).read_text())  # an absolute name stays one
    return doc.get("cache", {}).get("dtype", "bf16")


def round_up(x):
    """x rounded up to two significant digits."""
    if x <= 0:
        return 0.0
    e = math.floor(math.log10(x)) - 1
    return math.ceil(x / 10 ** e - 1e-9) * 10 ** e


def op_worst(records):
    """Per (dtype, site, op precision): (largest error / bound, its run, largest op error, runs,
    largest end-to-end error, largest input error) over the runs with op figures."""
    worst = {}
    for r in records:
        if r["exit"] == kv.CANNOT_RUN:
            continue
        for site, ratio in r.get("op_ratios", {}).items():
            key = (r["dtype"], site, r["op_precision"])
            where = f'{r["scenario"]} seed {r["seed"]} ({r["device"]})'
            old = worst.get(key, (-1.0, "", 0.0, 0, 0.0, 0.0))
            err = max(old[2], r["op_errors"].get(site, 0.0))
            e2e = max(old[4], r["sites"].get(site, 0.0))
            inp = max(old[5], r.get("input_errors", {}).get(site, 0.0))
            best = (ratio, where) if math.isnan(ratio) or ratio > old[0] else old[:2]
            worst[key] = (*best, err, old[3] + 1, e2e, inp)
    return worst


def read_records(files):
    metas, records = [], []
    for f in files:
        doc = json.loads(pathlib.Path(f).read_text())
        metas.append(doc["meta"])
        records += doc["records"]
    return metas, records


def op_table(worst, min_ratio):
    # The last three columns split the end-to-end error: the op's own (op error) and what its
    # inputs brought (input error: float64 of the op over the engine's inputs vs the reference).
    lines = ["| cache dtype | site | op precision | runs | largest error / bound | where | "
             "largest op error | largest end-to-end error | largest input error |",
             "|---|---|---|---|---|---|---|---|---|"]
    bad = []
    for key in sorted(worst, key=lambda k: (DTYPES.index(k[0]), k[1], k[2])):
        ratio, where, err, runs, e2e, inp = worst[key]
        flag = ""
        if not ratio <= 1.0:
            flag = " **above the bound**"
        elif ratio < min_ratio:
            flag = f" **bound over {1 / min_ratio:g}x the error**"
        if flag:
            bad.append(f"{' '.join(key)}: {ratio:.3g} ({where})")
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {runs} | {ratio:.3g}{flag} | {where} | "
                     f"{err:.3g} | {e2e:.3g} | {inp:.3g} |")
    return lines, bad


def check(a):
    _, records = read_records(a.records)
    lines, bad = op_table(op_worst(records), a.min_ratio)
    print("\n".join(lines))
    if not lines[2:]:
        print("no op check figures in the records", file=sys.stderr)
        return 1
    for b in bad:
        print(f"op bound: {b}", file=sys.stderr)
    return 1 if bad else 0


def report(a):
    worst, runs, skipped, unclean, metas, per_scenario = {}, {}, 0, 0, [], {}
    excluded = set()
    for x in a.exclude:  # a path, or a name as the records give it (relative to scenarios/)
        path = pathlib.Path(x) if pathlib.Path(x).exists() else kv.SCENARIOS / x
        if not path.exists():
            sys.exit(f"--exclude {x}: no such scenario (a path, or relative to scenarios/)")
        excluded.add(kv.scenario_name(path))
    seen = set()  # scenarios the records hold
    for f in a.records:
        doc = json.loads(pathlib.Path(f).read_text())
        metas.append(doc["meta"])
        for r in doc["records"]:
            seen.add(r["scenario"])
            if r["exit"] == kv.CANNOT_RUN:
                skipped += 1
                continue
            if r["exit"] != kv.OK:
                unclean += 1
            if r["exit"] == kv.OK and r["dtype"] == native_dtype(r["scenario"]):
                own = per_scenario.setdefault(r["scenario"], {})
                for site, v in r.get("sites", {}).items():
                    if not math.isnan(v):  # a NaN row fails its run: not clean
                        own[site] = max(own.get(site, 0.0), v)
            if r["scenario"] in excluded:
                continue
            for site, v in r.get("sites", {}).items():
                key = (r["dtype"], site, r["precision"])
                runs[key] = runs.get(key, 0) + 1
                if key not in worst or math.isnan(v) or v > worst[key][0]:
                    worst[key] = (v, f'{r["scenario"]} seed {r["seed"]} ({r["device"]})')
    unmatched = excluded - seen
    if unmatched:
        sys.exit(f"--exclude: no record of {', '.join(sorted(unmatched))}")
    lines = [
        "| cache dtype | site | op precision | runs | largest clean error | where | "
        f"tolerance ({a.margin:g}x, floor {a.floor:g}) |",
        "|---|---|---|---|---|---|---|",
    ]
    table = {}
    for key in sorted(worst, key=lambda k: (DTYPES.index(k[0]), k[1], k[2])):
        v, where = worst[key]
        tol = max(round_up(a.margin * v), a.floor)
        table.setdefault(key[0], {}).setdefault(key[2], {})[key[1]] = tol
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {runs[key]} | {v:.3g} | {where} | "
                     f"{tol:.2g} |")
    head = [f"Records: {', '.join(str(f) for f in a.records)}; runs a backend could not take: "
            f"{skipped}; runs not clean: {unclean}.", ""]
    for m in metas:
        head.append(f"- {m['date']}, commit {m['commit']}: device {m['device']}, backend "
                    f"{m['backend'] or '-'}, seeds {m['seeds']}, dtypes {m['dtypes']}: "
                    f"{m.get('runs', '?')} of {m.get('planned', '?')} runs")
    own = ["", "Per scenario, in its own cache dtype: the checks.site_tolerances its runs call "
           "for", ""]
    for scenario in sorted(per_scenario):
        sites = {site: float(f"{max(round_up(a.margin * v), a.floor):.2g}")
                 for site, v in sorted(per_scenario[scenario].items())}
        own.append(f"- {scenario}{' (excluded from the table)' if scenario in excluded else ''}"
                   f": `{json.dumps(sites)}`")
    ops, _ = op_table(op_worst(read_records(a.records)[1]), 0.1)
    text = "\n".join(head + [""] + lines) + "\n\n```json\n" + json.dumps(table, indent=1) + \
        "\n```\n" + "\n".join(own) + "\n\nOp checks (error / bound, docs/oracle.md):\n\n" + \
        "\n".join(ops) + "\n"
    pathlib.Path(a.out).write_text(text)
    print(text)
    return 1 if unclean else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("kvcheck")
    m.add_argument("out")
    m.add_argument("scenarios", nargs="*")
    m.add_argument("--device", default="host")
    m.add_argument("--backend")
    m.add_argument("--seeds", default="1-100")
    m.add_argument("--dtypes", default=",".join(DTYPES))
    m.add_argument("--jobs", type=int, default=2)
    m.add_argument("--reference-device", help="host: the op checks' figures on a GPU too")
    r = sub.add_parser("report")
    r.add_argument("out")
    r.add_argument("records", nargs="+")
    r.add_argument("--margin", type=float, default=3.0)
    r.add_argument("--floor", type=float, default=2e-3)
    r.add_argument("--exclude", nargs="*", default=[])
    c = sub.add_parser("check")
    c.add_argument("records", nargs="+")
    c.add_argument("--min-ratio", type=float, default=0.1)
    # Scenarios and records may follow the options too (argparse stops a positional list at an
    # option).
    a, rest = ap.parse_known_args()
    if rest and any(x.startswith("-") for x in rest):
        ap.error(f"unrecognized arguments: {' '.join(rest)}")
    if a.cmd == "measure":
        a.scenarios += rest
    else:
        a.records += rest
    return {"measure": measure, "report": report, "check": check}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
