#!/usr/bin/env python3
"""ci_example_test.py KVCHECK — examples/ci/github-actions.yml is valid YAML with the jobs the
docs describe, and every kvcheck command in it names a subcommand and only options that
subcommand has (from `kvcheck SUBCOMMAND --help`), so the example cannot drift from the CLI."""
import pathlib
import re
import subprocess
import sys

import yaml

REPO = pathlib.Path(__file__).resolve().parent.parent
kvcheck = sys.argv[1]
doc = yaml.safe_load((REPO / "examples/ci/github-actions.yml").read_text())
failures = []
if set(doc.get("jobs", {})) != {"host", "gpu"}:
    failures.append(f"jobs {sorted(doc.get('jobs', {}))}, expected host and gpu")
commands = []
for job in doc.get("jobs", {}).values():
    for step in job.get("steps", []):
        for line in str(step.get("run", "")).split("&&"):
            m = re.search(r"build/kvcheck\s+(\S+)(.*)", line.replace("\n", " "))
            if m:
                commands.append((m.group(1), m.group(2)))
if len(commands) < 4:
    failures.append(f"{len(commands)} kvcheck commands found, expected 4")
helps = {}
for sub, args in commands:
    if sub not in helps:
        r = subprocess.run([kvcheck, sub, "--help"], capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"kvcheck {sub}: not a subcommand ({r.stderr.strip()})")
            continue
        helps[sub] = set(re.findall(r"--[a-z][a-z-]+", r.stdout))
    for opt in re.findall(r"(?<![\w-])--[a-z][a-z-]+", args):
        if opt not in helps.get(sub, set()):
            failures.append(f"kvcheck {sub}: no option {opt}")
for f in failures:
    print("FAIL:", f)
print("ok" if not failures else f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
