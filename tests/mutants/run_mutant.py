#!/usr/bin/env python3
"""run_mutant.py — runs kvcheck's backend suite against one mutant backend plugin and checks that
the suite catches its bug and names the op (ctest mutant/<name>, tests/mutants/CMakeLists.txt).

  run_mutant.py KVCHECK PLUGIN OP SOURCE_DIR [--backend-timeout S]

The backend suite is the default suite, scenarios/smoke.json, scenarios/seeds/*.json,
scenarios/regressions/*.json in that order, run with --clean-twins (and, for a mutant, with
--exitfirst: the run ends at the first miss): each scenario that switches
regressions on also runs, right after itself, as "<name>.clean" with them off, expecting clean.
The twins are what judge a backend's ops on the shapes only those scenarios have (MLA, fp8 caches,
the interleaved layout, linear attention), where the original expects "corrupt" anyway.

OP "-" is the clean plugin: kvcheck must exit 0. Otherwise it must exit 1 and the first run
(in run order, twins included) whose result misses its expectation must name OP: its first
failure's `ops` list contains OP, or, for a verdict "error" (crash, exit, hang, error status), its
error block's `op` is OP. Stdlib only; runs and reads kvcheck through scripts/kvcheck_lib.py.
"""
import argparse
import os
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import kvcheck_lib as kv  # noqa: E402


def suite(source_dir):
    sc = os.path.join(source_dir, "scenarios")
    return ([os.path.join(sc, "smoke.json")]
            + [str(p) for p in kv.scenarios_in("seeds", root=sc)]
            + [str(p) for p in kv.scenarios_in("regressions", root=sc)])


def results_by_path(out_dir):
    """The result documents kvcheck wrote (one per run, named after the file), grouped by the
    real path of their scenario file, the original before its clean twin."""
    found = {}
    for doc in kv.read_results(out_dir):
        found.setdefault(os.path.realpath(doc["scenario_path"]), []).append(doc)
    return found


def run_order(scenarios, results, source_dir):
    """[(label, doc)] in kvcheck's run order up to and with the first run that misses its
    expectation (under --exitfirst nothing after it runs), and the labels of runs before it that
    left no result."""
    runs, missing = [], []
    for s in scenarios:
        rel = os.path.relpath(s, source_dir)
        docs = results.get(os.path.realpath(s), [])
        if not docs:
            missing.append(rel)
            continue
        runs.append((rel, docs[0]))
        if kv.misses_expectation(docs[0]):
            break
        if docs[0].get("regressions"):
            if len(docs) < 2:
                missing.append(rel + " (clean twin)")
            else:
                runs.append(("{} (clean twin {})".format(rel, docs[1].get("scenario")), docs[1]))
                if kv.misses_expectation(docs[1]):
                    break
    return runs, missing


def describe(doc):
    """One line: what the result says went wrong."""
    err = doc.get("error")
    if doc.get("verdict") == "error" and err:
        return "error {} in op {} at epoch {}, step {}: {}".format(
            err.get("kind"), err.get("op"), err.get("epoch"), err.get("step"), err.get("message"))
    ff = doc.get("first_failure")
    if ff:
        return "verdict {} (expected {}); first failure: site {} (ops {}), check {}, {}".format(
            doc.get("verdict"), doc.get("expected"), ff.get("site"), ", ".join(ff.get("ops", [])),
            ff.get("check"), ff.get("detail"))
    return "verdict {} (expected {}), no failure recorded".format(
        doc.get("verdict"), doc.get("expected"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kvcheck")
    ap.add_argument("plugin")
    ap.add_argument("op", help='the op the suite must name, "-" for the clean plugin')
    ap.add_argument("source_dir")
    ap.add_argument("--backend-timeout", default="60")
    args = ap.parse_args()
    label = os.path.basename(args.plugin)
    scenarios = suite(args.source_dir)

    with tempfile.TemporaryDirectory(prefix="kvmutant-") as out_dir:
        # A mutant's run ends at its first miss (--exitfirst): what the test judges is that miss.
        cmd = ([args.kvcheck, "run"] + scenarios
               + ["--clean-twins", "--backend", args.plugin,
                  "--backend-timeout", args.backend_timeout, "--out", out_dir, "-q"]
               + (["--exitfirst"] if args.op != "-" else []))
        proc = kv.run(cmd, merge_output=True)
        runs, missing = run_order(scenarios, results_by_path(out_dir), args.source_dir)

    def fail(msg):
        print("FAIL {}: {}".format(label, msg))
        print("--- kvcheck exit {}; output tail:\n{}".format(proc.code, proc.stdout[-3000:]))
        return 1

    if missing:
        return fail("no result for " + ", ".join(missing))
    misses = [(name, doc) for name, doc in runs if kv.misses_expectation(doc)]

    if args.op == "-":
        if proc.code != kv.OK or misses:
            first = ("; first miss: {}: {}".format(misses[0][0], describe(misses[0][1]))
                     if misses else "")
            return fail("the clean plugin must meet every expectation (exit 0), got exit {}{}"
                        .format(proc.code, first))
        print("ok {}: clean, all {} runs ({} scenarios and their clean twins) meet their "
              "expectation".format(label, len(runs), len(scenarios)))
        return 0

    if not misses:
        return fail("not caught: every run meets its expectation (exit {})"
                    .format(proc.code))
    name, doc = misses[0]
    where = "{}: {}".format(name, describe(doc))
    if proc.code != kv.MISMATCH:
        return fail("kvcheck exit {}, want 1; first miss {}".format(proc.code, where))
    if not kv.names_op(doc, args.op):
        return fail("caught, but the first miss does not name {}: {}".format(args.op, where))
    print("ok {}: caught, naming {}: {}".format(label, args.op, where))
    return 0


if __name__ == "__main__":
    sys.exit(main())
