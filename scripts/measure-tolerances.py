#!/usr/bin/env python3
"""Measure the largest clean drift per cache dtype, to justify the default tolerances.

Runs the smoke scenario and every regression and seed scenario with --no-regressions, for each
cache dtype (f32, f16, bf16, fp8_e4m3 with k_scale 1/16 and v_scale 1/4) and seeds 1..N, and prints a markdown table of the largest max_rel_error seen
beside the default tolerance. Usage: scripts/measure-tolerances.py [KVCHECK] [SEEDS]
"""
import glob, json, os, subprocess, sys, tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
kvcheck = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "kvcheck")
seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
files = [os.path.join(root, "scenarios", "smoke.json")] + sorted(
    glob.glob(os.path.join(root, "scenarios", "regressions", "*.json")) +
    glob.glob(os.path.join(root, "scenarios", "seeds", "*.json")))

rows = []
with tempfile.TemporaryDirectory() as tmp:
    for dtype in ("f32", "f16", "bf16", "fp8_e4m3"):
        worst, runs, tol = 0.0, 0, None
        for f in files:
            doc = json.load(open(f))
            cache = doc.setdefault("cache", {})
            cache["dtype"] = dtype
            cache.pop("k_scale", None)
            cache.pop("v_scale", None)
            if dtype == "fp8_e4m3":
                cache.update({"k_scale": 0.0625, "v_scale": 0.25})
            doc.pop("checks", None)
            path = os.path.join(tmp, os.path.basename(f))
            json.dump(doc, open(path, "w"))
            for seed in range(1, seeds + 1):
                out = subprocess.run([kvcheck, "run", path, "--no-regressions", "--expect", "clean",
                                      "--seed", str(seed), "--json", "--out", os.path.join(tmp, "runs"), "-q"],
                                     capture_output=True, text=True)
                res = json.loads(out.stdout)
                tol = res["tolerance"]
                runs += 1
                if res["verdict"] != "clean":
                    print(f"NOT CLEAN: {f} dtype {dtype} seed {seed}", file=sys.stderr)
                for e in res["epochs"]:
                    err = e["max_rel_error"]
                    worst = max(worst, float(err) if not isinstance(err, str) else float("inf"))
        rows.append((dtype, runs, worst, tol))

print("| cache dtype | clean runs | largest max_rel_error | default tolerance | headroom |")
print("|---|---|---|---|---|")
for dtype, runs, worst, tol in rows:
    print(f"| {dtype} | {runs} | {worst:.2e} | {tol:.0e} | {tol / worst:.1f}x |")
