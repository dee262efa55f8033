#!/usr/bin/env python3
"""many_files_test.py KVCHECK WORKDIR — a run over 10,000 scenario files stays small and on time.

10,000 copies of scenarios/smoke.json (each with its own "name", so their results are distinct
files) go through one `kvcheck run --max-seconds 8`, once with the table and once with --json.
Each run must:
  - stop at its deadline: exit 3 with the deadline's message, within a few seconds of it, loading
    and validating all 10,000 files included (the whole run is under the deadline, not only the
    scenarios);
  - keep its peak RSS under 200 MB (memory linear in the number of files: before issue 34 the
    options, with every path, were copied once per scenario: 1,000 files 91 MB, 10,000 over 6 GB);
  - have written one result file per scenario it finished, and (--json) printed exactly those
    documents as one JSON array, closed although the run stopped early.
A whole 10,000-scenario run (about 12 minutes) is in scripts/robustness.sh, not here.
"""
import json
import os
import re
import shutil
import subprocess
import sys

COUNT = 10_000
DEADLINE = 8
SLACK = 6.0  # process start, the stop itself, a loaded 2-core machine
PEAK_LIMIT = 200 * 1024 * 1024


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    kvcheck, work = sys.argv[1], sys.argv[2]
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    shutil.rmtree(work, ignore_errors=True)
    files = os.path.join(work, "scenarios")
    os.makedirs(files)
    with open(os.path.join(repo, "scenarios", "smoke.json")) as f:
        smoke = json.load(f)
    paths = []
    for i in range(COUNT):
        smoke["name"] = f"smoke-{i:05d}"
        p = os.path.join(files, f"s{i:05d}.json")
        with open(p, "w") as f:
            json.dump(smoke, f)
        paths.append(p)

    for extra in ([], ["--json"]):
        out = os.path.join(work, "out" + ("-json" if extra else ""))
        # A fresh interpreter's RUSAGE_CHILDREN is this one child's peak (we run one at a time,
        # and ru_maxrss of children is the largest of them): measure the first, then a second
        # process for the second.
        cmd = [kvcheck, "run", "-q", "--out", out, "--max-seconds", str(DEADLINE), *extra, *paths]
        probe = (
            "import resource, subprocess, sys, time\n"
            "t = time.monotonic()\n"
            "r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
            "sys.stdout.buffer.write(r.stdout)\n"
            "sys.stderr.buffer.write(r.stderr)\n"
            "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
            "sys.stderr.write(f'\\n#probe {r.returncode} {peak} {time.monotonic() - t:.2f}\\n')\n"
        )
        r = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True)
        m = re.search(r"#probe (-?\d+) (\d+) ([\d.]+)", r.stderr)
        if not m:
            fail(f"the probe said nothing: {r.stderr[-2000:]}")
        code, peak, wall = int(m.group(1)), int(m.group(2)), float(m.group(3))
        label = "with --json" if extra else "with the table"
        print(f"{label}: exit {code}, peak RSS {peak / 2**20:.1f} MiB, {wall:.1f} s")
        if code != 3:
            fail(f"{label}: exit {code}, not 3 (the deadline): {r.stderr[-2000:]}")
        if "--max-seconds 8 reached" not in r.stderr:
            fail(f"{label}: no deadline message: {r.stderr[-2000:]}")
        if wall > DEADLINE + SLACK:
            fail(f"{label}: ran {wall:.1f} s against a deadline of {DEADLINE} s")
        if peak >= PEAK_LIMIT:
            fail(f"{label}: peak RSS {peak / 2**20:.1f} MiB, over 200 MiB")
        written = sorted(os.listdir(out))
        if not written or any(not w.endswith(".json") or w.startswith(".") for w in written):
            fail(f"{label}: result files {written[:5]}...")
        if extra:
            docs = json.loads(r.stdout)
            if not isinstance(docs, list) or len(docs) != len(written):
                fail(f"{label}: {len(docs)} documents on stdout, {len(written)} result files")
            if sorted(d["scenario"] + ".json" for d in docs) != written:
                fail(f"{label}: the documents are not the scenarios whose files were written")
        print(f"  {len(written)} scenario(s) finished before the deadline")
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
