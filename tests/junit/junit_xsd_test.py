#!/usr/bin/env python3
"""junit_xsd_test.py — `kvcheck run --junit` writes reports that the vendored JUnit XSD accepts
and whose counts are the summary line's (ctest schema/junit-xsd).

  junit_xsd_test.py KVCHECK CRASH_PLUGIN XSD WORK_DIR

Two runs: one with every outcome but an error (a clean scenario, one that misses its
expectation, one left unrun by --exitfirst), and one through a plugin that crashes (an error).
Each report must pass `xmllint --noout --schema XSD` and carry the summary line's counts.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

TINY = {"format": 1, "name": "tiny", "seed": 3, "model": {"layers": 1},
        "workload": {"requests": 2, "prompt_len": [4, 8], "new_tokens": [2, 4], "epochs": 2}}
# Recycled NaN-poisoned blocks with the regression on, but expected clean: misses.
POISON = {"format": 1, "name": "poison & <friends>", "seed": 3, "model": {"layers": 1},
          "cache": {"num_blocks": 8, "block_size": 4}, "faults": {"freed_blocks": "nan"},
          "regressions": ["new-blocks-not-zeroed"], "expect": "clean",
          "workload": {"requests": 2, "prompt_len": [5, 7], "new_tokens": [2, 3], "epochs": 2}}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check_report(path, summary_text, xsd, want):
    if not os.path.exists(path):
        fail("no report at " + path)
    v = subprocess.run(["xmllint", "--noout", "--schema", xsd, path], capture_output=True,
                       text=True)
    if v.returncode != 0:
        fail("xmllint rejects {}: {}{}".format(path, v.stdout, v.stderr))
    m = re.search(r"(\d+) passed, (\d+) failed, (\d+) could not run, (\d+) errors?"
                  r"(?:, (\d+) not run)? in ", summary_text)
    if not m:
        fail("no summary line in: " + summary_text[-2000:])
    passed, failed, cannot, errors, not_run = (int(g or 0) for g in m.groups())
    suite = ET.parse(path).getroot().find("testsuite")
    cases = suite.findall("testcase")
    counts = {"tests": len(cases),
              "failures": sum(c.find("failure") is not None for c in cases),
              "errors": sum(c.find("error") is not None for c in cases),
              "skipped": sum(c.find("skipped") is not None for c in cases)}
    from_summary = {"tests": passed + failed + cannot + errors + not_run, "failures": failed,
                    "errors": errors + cannot, "skipped": not_run}
    for k in counts:
        if int(suite.get(k)) != counts[k] or counts[k] != from_summary[k]:
            fail("{}: {} is {} in the attribute, {} testcases, {} in the summary".format(
                path, k, suite.get(k), counts[k], from_summary[k]))
    if from_summary != want:
        fail("{}: counts {}, want {}".format(path, from_summary, want))
    return cases


def main():
    kvcheck, crash_plugin, xsd, work = sys.argv[1:5]
    if shutil.which("xmllint") is None:
        fail("xmllint is missing (Debian libxml2-utils; scripts/setup.sh installs it)")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # Two copies of TINY under their own names (one run refuses two results of one name).
    files = (("a-tiny.json", dict(TINY, name="tiny-a")), ("b-poison.json", POISON),
             ("c-tiny.json", dict(TINY, name="tiny-c")))
    for name, doc in files:
        with open(os.path.join(work, name), "w") as f:
            json.dump(doc, f)

    code, out, err = run([kvcheck, "run", "a-tiny.json", "b-poison.json", "c-tiny.json", "-x",
                          "--junit", "mixed.xml", "--out", "out", "-q"], work)
    if code != 1:
        fail("the mixed run exits {}, want 1: {}".format(code, err))
    cases = check_report(os.path.join(work, "mixed.xml"), out, xsd,
                         {"tests": 3, "failures": 1, "errors": 0, "skipped": 1})
    if cases[1].get("name") != "poison & <friends>":
        fail("the escaped name does not read back: " + str(cases[1].get("name")))

    code, out, err = run([kvcheck, "run", "a-tiny.json", "--backend", crash_plugin, "--junit",
                          "crash.xml", "--out", "out-crash", "-q"], work)
    if code != 1:
        fail("the crashing plugin's run exits {}, want 1: {}".format(code, err))
    cases = check_report(os.path.join(work, "crash.xml"), out, xsd,
                         {"tests": 1, "failures": 0, "errors": 1, "skipped": 0})
    if cases[0].find("error").get("type") != "crash":
        fail("the error's type is {}, want crash".format(cases[0].find("error").get("type")))
    print("ok: both reports valid under {}, counts as the summary's".format(os.path.basename(xsd)))


if __name__ == "__main__":
    main()
