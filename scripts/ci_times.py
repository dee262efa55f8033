#!/usr/bin/env python3
"""ci_times.py — where a ctest run's time went, by test group and by label.

  scripts/ci_times.py BUILD_DIR [--junit FILE] [--wall SECONDS]
  scripts/ci_times.py --self-test

Reads the JUnit file ctest wrote (`ctest --output-junit FILE`; default BUILD_DIR/ctest-junit.xml)
for each test's time and status, and the tests' labels from `ctest --show-only=json-v1` in
BUILD_DIR (the JUnit file has none). A test's group is its name up to the first '/' (scenario/...,
seeds/..., mutation/...); a name without one (a GoogleTest case, gpu-conform-...) is grouped by
its first label. Prints two tables, each row with the tests, the failed ones, their time summed
(ctest runs tests in parallel, so the sums exceed the wall time) and, given --wall (ctest's wall
time), the group's share of that wall time in proportion to its summed time.

scripts/test.sh calls it at its end, also after a failure: a missing or unreadable JUnit file or
ctest listing is said, not fatal. Python 3 standard library only; exits 0 but on a usage problem.
"""
import argparse
import collections
import json
import pathlib
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

FAILED = {"fail", "failed", "error"}


def read_junit(path):
    """[(name, seconds, status)] from ctest's JUnit file; status as ctest writes it (run, fail,
    notrun, disabled)."""
    tests = []
    for case in ET.parse(path).getroot().iter("testcase"):
        status = case.get("status", "run")
        if case.find("failure") is not None or case.find("error") is not None:
            status = "fail"
        tests.append((case.get("name", "?"), float(case.get("time", "0") or 0), status))
    return tests


def labels_from_ctest_json(doc):
    """{test name: [labels]} from `ctest --show-only=json-v1` output."""
    labels = {}
    for test in doc.get("tests", []):
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                labels[test.get("name", "?")] = list(prop.get("value", []))
        labels.setdefault(test.get("name", "?"), [])
    return labels


def read_labels(build_dir):
    try:
        out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build_dir, check=True,
                             capture_output=True, text=True, timeout=120).stdout
        return labels_from_ctest_json(json.loads(out))
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        print(f"ci_times: no test labels ({e}); grouped by name only", file=sys.stderr)
        return {}


def group_of(name, labels):
    if "/" in name:
        return name.split("/", 1)[0]
    return labels[0] if labels else "other"


class Row:
    def __init__(self):
        self.tests = self.failed = 0
        self.seconds = 0.0

    def add(self, seconds, status):
        self.tests += 1
        self.failed += status in FAILED
        self.seconds += seconds


def tally(tests, labels):
    by_group, by_label = collections.defaultdict(Row), collections.defaultdict(Row)
    total = Row()
    for name, seconds, status in tests:
        own = labels.get(name, [])
        by_group[group_of(name, own)].add(seconds, status)
        for label in own or ["(none)"]:
            by_label[label].add(seconds, status)
        total.add(seconds, status)
    return by_group, by_label, total


def table(title, rows, total, wall):
    width = max([len(title)] + [len(k) for k in rows])
    head = f"  {title:<{width}}  {'tests':>5}  {'failed':>6}  {'test time':>10}"
    if wall is not None:
        head += f"  {'~wall':>7}"
    lines = [head]
    order = sorted(rows.items(), key=lambda kv: (-kv[1].seconds, kv[0]))
    for key, r in order + [("all", total)]:
        line = f"  {key:<{width}}  {r.tests:>5}  {r.failed:>6}  {r.seconds:>8.1f} s"
        if wall is not None:
            share = wall * r.seconds / total.seconds if total.seconds > 0 else 0.0
            line += f"  {share:>5.0f} s"
        lines.append(line)
    return lines


def report(tests, labels, wall):
    by_group, by_label, total = tally(tests, labels)
    out = []
    what = f"ctest: {total.tests} tests, {total.seconds:.1f} s of test time"
    if wall is not None:
        what += f" in {wall:.0f} s of wall time (~wall: each row's share of it)"
    out.append(what)
    out += table("group", by_group, total, wall)
    if labels:
        out.append("")
        out += table("label", by_label, total, wall)
    return "\n".join(out)


def self_test():
    junit = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="t" tests="4" failures="1">
  <testcase name="scenario/a.json" classname="scenario/a.json" time="3.0" status="run"/>
  <testcase name="scenario/b.json" classname="scenario/b.json" time="1.0" status="fail">
    <failure message="Failed"/>
  </testcase>
  <testcase name="Pool.Allocates" classname="Pool.Allocates" time="0.5" status="run"/>
  <testcase name="gpu-conform-x" classname="gpu-conform-x" time="0" status="notrun"/>
</testsuite>"""
    listing = {"tests": [
        {"name": "scenario/a.json", "properties": [{"name": "LABELS", "value": ["scenario"]}]},
        {"name": "scenario/b.json", "properties": [{"name": "LABELS", "value": ["scenario"]}]},
        {"name": "Pool.Allocates", "properties": [{"name": "LABELS", "value": ["unit"]}]},
        {"name": "gpu-conform-x", "properties": [{"name": "LABELS", "value": ["gpu", "slow"]}]}]}
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "junit.xml"
        path.write_text(junit)
        tests = read_junit(path)
    labels = labels_from_ctest_json(listing)
    by_group, by_label, total = tally(tests, labels)
    problems = []
    want = {"scenario": (2, 1, 4.0), "unit": (1, 0, 0.5), "gpu": (1, 0, 0.0)}
    got = {k: (r.tests, r.failed, r.seconds) for k, r in by_group.items()}
    if got != want:
        problems.append(f"groups {got} != {want}")
    if (by_label["slow"].tests, total.tests, total.failed) != (1, 4, 1):
        problems.append("labels or totals wrong")
    text = report(tests, labels, 3.0)
    if "scenario" not in text or "   3 s" not in text:
        problems.append("report:\n" + text)
    for p in problems:
        print(f"ci_times self-test: FAILED: {p}", file=sys.stderr)
    if not problems:
        print("ci_times self-test: passed")
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_dir", nargs="?", type=pathlib.Path)
    ap.add_argument("--junit", type=pathlib.Path, help="default: BUILD_DIR/ctest-junit.xml")
    ap.add_argument("--wall", type=float, help="ctest's wall time in seconds")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if args.build_dir is None:
        ap.error("BUILD_DIR is required")
    junit = args.junit or args.build_dir / "ctest-junit.xml"
    try:
        tests = read_junit(junit)
    except (OSError, ET.ParseError) as e:
        print(f"ctest: no per-test times ({junit}: {e})")
        return 0
    print(report(tests, read_labels(args.build_dir), args.wall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
