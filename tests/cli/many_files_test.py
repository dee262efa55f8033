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
    documents as the results of one kvcheck.run/1 document, closed although the run stopped
    early, whose summary counts them, the one stopped at the deadline and the rest not run.
A whole 10,000-scenario run (about 12 minutes) is in scripts/robustness.sh, not here. Runs
kvcheck through scripts/kvcheck_lib.py.
"""
import json
import os
import pathlib
import shutil
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import kvcheck_lib as kv  # noqa: E402

COUNT = 10_000
DEADLINE = 8
SLACK = 6.0  # process start, the stop itself, a loaded 2-core machine
PEAK_LIMIT = 200 * 1024 * 1024


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    kvcheck, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    files = os.path.join(work, "scenarios")
    os.makedirs(files)
    with open(kv.SCENARIOS / "smoke.json") as f:
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
        # The peak is this one kvcheck's (kv.run's probe).
        r = kv.run_kvcheck(kvcheck, ["run", "-q", "--out", out, "--max-seconds", str(DEADLINE),
                                     *extra, *paths], peak_rss=True)
        code, peak, wall = r.code, r.peak_rss_bytes, r.seconds
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
            doc = r.document()
            if not isinstance(doc, dict) or doc.get("schema") != kv.RUN_SCHEMA:
                fail(f"{label}: stdout is not one {kv.RUN_SCHEMA} document: {r.stdout[-2000:]}")
            docs, summary = r.results(), r.summary()
            if len(docs) != len(written):
                fail(f"{label}: {len(docs)} documents on stdout, {len(written)} result files")
            counts = (summary["passed"], summary["could_not_run"], summary["not_run"],
                      summary["exit_code"])
            if counts != (len(docs), 1, COUNT - len(docs) - 1, 3):
                fail(f"{label}: summary {counts} (passed, could not run, not run, exit code)")
            # Each result is named after its scenario file.
            if sorted(os.path.basename(d["scenario_path"]) for d in docs) != written:
                fail(f"{label}: the documents are not the scenarios whose files were written")
        print(f"  {len(written)} scenario(s) finished before the deadline")
    shutil.rmtree(work, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
