#!/usr/bin/env python3
"""op_bound_test.py KVCHECK WORKDIR — the op checks' bound holds on the suite (docs/oracle.md):
every scenario of scripts/calibrate-oracle.py's default set, clean (regressions off), seed 1,
the cache forced to bf16 and to fp8, on the host; then `calibrate-oracle.py check`: no site's
largest error / bound above 1 (the bound would cry wolf) or below 0.1 (too loose)."""
import pathlib
import subprocess
import sys

repo = pathlib.Path(__file__).resolve().parents[2]
script = repo / "scripts" / "calibrate-oracle.py"
kvcheck, work = sys.argv[1], pathlib.Path(sys.argv[2])
work.mkdir(parents=True, exist_ok=True)
records = work / "op-bound.json"
subprocess.run([sys.executable, script, "measure", kvcheck, records, "--seeds", "1",
                "--dtypes", "bf16,fp8_e4m3", "--jobs", "2"], check=True)
sys.exit(subprocess.run([sys.executable, script, "check", records]).returncode)
