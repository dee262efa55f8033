#!/usr/bin/env python3
"""compare_results_test.py KVCHECK — scripts/compare-results.py (ctest scripts/compare-results):
its comparison on made-up runs (a planted difference is found at its JSON pointer, with both
values; timings, paths, versions and renamed spellings are not differences), and the script on
real runs: the same binary twice is the same (exit 0), a binary whose results differ in one
figure is caught (exit 1, naming the field)."""
import importlib.util
import json
import os
import pathlib
import re
import stat
import sys
import tempfile
import unittest

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))
import kvcheck_lib as kv  # noqa: E402

_spec = importlib.util.spec_from_file_location("compare_results", SCRIPTS / "compare-results.py")
cr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cr)

KVCHECK = None  # from the command line

DOC = {
    "schema": "kvcheck.result/2", "kvcheck_version": "0.1.0", "scenario": "s",
    "scenario_path": "/a/s.json", "verdict": "corrupt", "meets_expectation": True,
    "epochs": [{"epoch": 1, "tokens": 10, "max_rel_error": 0.001, "seconds": 1.5,
                "check_seconds": 0.5},
               {"epoch": 2, "tokens": 12, "max_rel_error": "nan", "seconds": 1.2,
                "forward_seconds": 0.7}],
    "coverage_gaps": [{"message": "needs the interleaved cache layout, but the layout is plain"}],
    "backend": {"path": "/a/lib.so", "name": "host", "version": "0.1.0", "sha256": "ab",
                "notes": "loaded /a/lib.so"},
    "seconds": 2.7,
}


def run(doc, code=0, out="/out/a", backend="/a/lib.so"):
    cmd = ["kvcheck", "run", "s.json", "--json", "-q", "--out", out, "--backend", backend]
    return kv.Run(cmd, code, json.dumps(doc) if doc is not None else "", "", 1.0)


def changed(doc, edit):
    doc = json.loads(json.dumps(doc))
    edit(doc)
    return doc


class FirstDifferenceTest(unittest.TestCase):
    def test_planted_difference(self):
        b = changed(DOC, lambda d: d["epochs"][1].update(tokens=13))
        self.assertEqual(cr.first_difference(DOC, b), ("/epochs/1/tokens", 12, 13))
        self.assertIsNone(cr.first_difference(DOC, json.loads(json.dumps(DOC))))

    def test_shapes(self):
        self.assertEqual(cr.first_difference({"a": 1}, {"a": 1, "b": 2}), ("/b", cr.MISSING, 2))
        self.assertEqual(cr.first_difference({"a": [1, 2]}, {"a": [1]}), ("/a/1", 2, cr.MISSING))
        self.assertEqual(cr.first_difference({"a/b~": 1}, {"a/b~": 2}), ("/a~1b~0", 1, 2))
        self.assertIsNone(cr.first_difference({"x": 1}, {"x": 1.0}))
        self.assertEqual(cr.first_difference(True, 1), ("/", True, 1))
        self.assertEqual(cr.first_difference({"x": None}, {"x": 0}), ("/x", None, 0))
        self.assertEqual(cr.first_difference([1], {"0": 1}), ("/", [1], {"0": 1}))


class CompareTest(unittest.TestCase):
    def test_same_but_for_timings_paths_and_versions(self):
        after = changed(DOC, lambda d: (
            d.update(seconds=9.0, scenario_path="/b/s.json", kvcheck_version="0.2.0"),
            d["epochs"][0].update(seconds=3.0, check_seconds=2.0),
            d["backend"].update(path="/b/lib2.so", version="0.2.0", sha256="cd",
                                notes="loaded /b/lib2.so")))
        self.assertIsNone(cr.compare(run(DOC), run(after, out="/out/b", backend="/b/lib2.so")))

    def test_planted_difference(self):
        after = changed(DOC, lambda d: d["epochs"][0].update(max_rel_error=0.002))
        self.assertEqual(cr.compare(run(DOC), run(after)),
                         "/epochs/0/max_rel_error: before 0.001, after 0.002")
        after = changed(DOC, lambda d: d.update(verdict="clean"))
        self.assertEqual(cr.compare(run(DOC), run(after)),
                         '/verdict: before "corrupt", after "clean"')
        after = changed(DOC, lambda d: d["backend"].update(name="other"))
        self.assertIn("/backend/name", cr.compare(run(DOC), run(after)))
        after = changed(DOC, lambda d: d.update(new_field=1))
        self.assertEqual(cr.compare(run(DOC), run(after)), "/new_field: before (absent), after 1")

    def test_exit_codes(self):
        self.assertEqual(cr.compare(run(DOC, 0), run(DOC, 1)), "before exit 0, after exit 1")
        self.assertIsNone(cr.compare(run(None, 2), run(None, 2)))
        self.assertEqual(cr.compare(run(None, 1), run(DOC, 1)),
                         "only the after run wrote a result document")
        self.assertIn("killed at the timeout", cr.compare(run(None, kv.TIMEOUT), run(DOC)))

    def test_renamed_spellings(self):
        renamed = {"plain": "kv_separate", "interleaved": "kv_interleaved", "separate": None}
        after = changed(DOC, lambda d: d["coverage_gaps"][0].update(
            message="needs the kv_interleaved cache layout, but the layout is kv_separate"))
        self.assertIsNone(cr.compare(run(DOC), run(after), renamed))
        self.assertIn("/coverage_gaps/0/message", cr.compare(run(DOC), run(after), {}))
        # A whole word only: "plainly" is no layout.
        self.assertEqual(cr.renamer(renamed)("plainly plain separate"), "plainly kv_separate separate")
        self.assertEqual(cr.renamer({"separate": "kv_pool"})("kv_separate separate"),
                         "kv_separate kv_pool")

    def test_lists_of_documents(self):
        twins = [DOC, changed(DOC, lambda d: d.update(scenario="s.clean"))]
        after = [DOC, changed(twins[1], lambda d: d.update(verdict="clean"))]
        self.assertEqual(cr.compare(run(twins), run(after)),
                         '/1/verdict: before "corrupt", after "clean"')


class ScriptTest(unittest.TestCase):
    SCENARIOS = [kv.SCENARIOS / "smoke.json",
                 kv.SCENARIOS / "regressions" / "gather-assumes-contiguous-plain.json"]

    def script(self, before, after, *more):
        return kv.run([sys.executable, SCRIPTS / "compare-results.py", "--before", before,
                       "--after", after, *more, *self.SCENARIOS])

    def test_same_binary_twice(self):
        r = self.script(KVCHECK, KVCHECK)
        self.assertEqual(r.code, 0, r.stdout + r.stderr)
        self.assertEqual(len(re.findall("^same     ", r.stdout, re.M)), 2, r.stdout)
        self.assertIn("2 pairs of runs (host): 2 same, 0 differ", r.stdout)

    def test_a_difference_is_caught(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake = pathlib.Path(tmp) / "kvcheck-off-by-one"
            fake.write_text(
                f"#!{sys.executable}\n"
                "import json, subprocess, sys\n"
                f"r = subprocess.run([{str(KVCHECK)!r}] + sys.argv[1:], stdout=subprocess.PIPE)\n"
                "doc = json.loads(r.stdout)\n"
                "doc['results'][0]['epochs'][-1]['tokens'] += 1  # `run --json`'s one result\n"
                "print(json.dumps(doc))\n"
                "sys.exit(r.returncode)\n")
            fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
            r = self.script(KVCHECK, str(fake))
        self.assertEqual(r.code, 1, r.stdout + r.stderr)
        self.assertIn("DIFFERS  smoke.json: /epochs/", r.stdout)
        self.assertIn("/tokens: before ", r.stdout)
        self.assertIn("0 same, 2 differ", r.stdout)

    def test_usage(self):
        r = self.script(KVCHECK, os.devnull)
        self.assertEqual(r.code, 2)
        self.assertIn("--after /dev/null: not an executable file", r.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__.splitlines()[0])
    KVCHECK = sys.argv.pop(1)
    unittest.main()
