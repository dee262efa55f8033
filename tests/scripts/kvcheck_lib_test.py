#!/usr/bin/env python3
"""kvcheck_lib_test.py KVCHECK — scripts/kvcheck_lib.py, helper by helper (ctest
scripts/kvcheck-lib): running a command (exit status, output, timeout, signal, peak memory), the
exit statuses against `kvcheck schema exit-codes`, a real run's document (results, summary) and
--out folder, an earlier kvcheck's stdout read alike,
the result helpers on made-up documents, and the walk over scenarios/."""
import json
import math
import os
import pathlib
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import kvcheck_lib as kv  # noqa: E402

KVCHECK = None  # from the command line


class RunTest(unittest.TestCase):
    def test_exit_status_and_output(self):
        r = kv.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
        self.assertEqual((r.code, r.stdout, r.stderr), (3, "out\n", "err\n"))
        self.assertEqual(r.cmd, ["sh", "-c", "echo out; echo err >&2; exit 3"])
        self.assertIsNone(r.document())

    def test_no_stdin_and_bad_bytes(self):
        r = kv.run(["sh", "-c", "cat; printf 'a\\377b' >&2"])
        self.assertEqual(r.code, 0)
        self.assertEqual(r.stdout, "")
        self.assertEqual(r.stderr, "a\ufffdb")

    def test_timeout(self):
        r = kv.run(["sleep", "30"], timeout=0.3)
        self.assertEqual(r.code, kv.TIMEOUT)
        self.assertLess(r.seconds, 10)
        self.assertEqual(kv.describe_exit(r.code), "hung (kvcheck)")

    def test_signal(self):
        r = kv.run(["sh", "-c", "kill -SEGV $$"])
        self.assertEqual(r.code, -11)
        self.assertEqual(kv.describe_exit(r.code), "killed by SIGSEGV")
        self.assertEqual(kv.describe_exit(2), "exit 2")

    def test_merged_output_keeps_order(self):
        r = kv.run(["sh", "-c", "echo 1; echo 2 >&2; echo 3"], merge_output=True)
        self.assertEqual((r.stdout, r.stderr), ("1\n2\n3\n", ""))

    def test_json_document(self):
        r = kv.run(["sh", "-c", "echo '[{\"verdict\": \"clean\"}]'"])
        self.assertEqual(r.document(), [{"verdict": "clean"}])

    def test_results_of_a_run_document_and_of_an_earlier_kvchecks_stdout(self):
        def stdout(doc):
            return kv.Run(["kvcheck"], 0, json.dumps(doc), "", 0.0)
        one = {"schema": "kvcheck.result/2", "scenario": "a"}
        two = {"schema": "kvcheck.result/2", "scenario": "b"}
        summary = {"passed": 2, "exit_code": 0}
        run = stdout({"schema": kv.RUN_SCHEMA, "results": [one, two], "summary": summary})
        self.assertEqual(run.results(), [one, two])
        self.assertEqual(run.summary(), summary)
        with self.assertRaises(ValueError):
            run.result()
        empty = stdout({"schema": kv.RUN_SCHEMA, "results": [], "summary": summary})
        self.assertEqual((empty.results(), empty.result()), ([], None))
        # Before kvcheck.run/1: a bare document for one scenario, a list for several; no summary.
        self.assertEqual((stdout(one).results(), stdout(one).result()), ([one], one))
        self.assertEqual(stdout([one, two]).results(), [one, two])
        self.assertIsNone(stdout(one).summary())
        for other in ({"schema": "kvcheck.conform/1"}, 7):
            self.assertIsNone(stdout(other).results())
        no_json = kv.Run(["kvcheck"], 3, "", "", 0.0)
        self.assertEqual((no_json.results(), no_json.result(), no_json.summary()),
                         (None, None, None))

    def test_peak_rss(self):
        grow = "b = bytearray(96 << 20); b[::4096] = b'x' * len(b[::4096]); print('ok')"
        r = kv.run([sys.executable, "-c", grow + "; import sys; sys.stderr.write('e'); "
                    "sys.exit(5)"], peak_rss=True)
        self.assertEqual((r.code, r.stdout, r.stderr), (5, "ok\n", "e"))
        self.assertGreater(r.peak_rss_bytes, 96 << 20)
        self.assertLess(r.peak_rss_bytes, 1 << 30)
        small = kv.run(["true"], peak_rss=True)
        self.assertLess(small.peak_rss_bytes, 64 << 20)

    def test_peak_rss_timeout_kills_the_command(self):
        with tempfile.TemporaryDirectory() as tmp:
            pid_file = os.path.join(tmp, "pid")
            r = kv.run(["sh", "-c", f"echo $$ > {pid_file}; exec sleep 30"], timeout=0.5,
                       peak_rss=True)
            self.assertEqual(r.code, kv.TIMEOUT)
            pid = int(pathlib.Path(pid_file).read_text())
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)  # gone (reaped by the probe), not orphaned


class KvcheckTest(unittest.TestCase):
    def test_exit_codes_are_kvchecks(self):
        r = kv.run_kvcheck(KVCHECK, ["schema", "exit-codes"])
        meaning = {row["code"]: row["meaning"] for row in json.loads(r.stdout)["exit_codes"]}
        self.assertTrue(meaning[kv.OK].startswith("every verdict matches"), meaning[kv.OK])
        self.assertTrue(meaning[kv.MISMATCH].startswith("a verdict does not"))
        self.assertTrue(meaning[kv.BAD_INPUT].startswith("bad input"))
        self.assertTrue(meaning[kv.CANNOT_RUN].startswith("the run cannot be carried out"))
        self.assertTrue(meaning[kv.INTERNAL_ERROR].startswith("an internal error"))
        self.assertIn(kv.BISECT_SKIP, meaning)

    def test_run_scenario_and_its_results(self):
        with tempfile.TemporaryDirectory() as out:
            r = kv.run_scenario(KVCHECK, kv.SCENARIOS / "smoke.json", out, ["--device", "host"])
            self.assertEqual(r.code, kv.OK, r.stderr)
            self.assertEqual(r.document()["schema"], kv.RUN_SCHEMA)
            summary = r.summary()
            self.assertEqual((summary["passed"], summary["exit_code"]), (1, kv.OK), summary)
            self.assertEqual(len(r.results()), 1)
            doc = r.result()
            self.assertEqual((doc["scenario"], doc["verdict"]), ("smoke", "clean"))
            self.assertFalse(kv.misses_expectation(doc))
            self.assertEqual([d["scenario"] for d in kv.read_results(out)], ["smoke"])
            self.assertEqual(kv.epoch_sum(doc, "tokens"), sum(e["tokens"] for e in doc["epochs"]))
            bare = kv.without_timings(doc)
            self.assertNotIn("seconds", bare)
            for e in bare["epochs"]:
                self.assertFalse(set(kv.TIMINGS) & set(e), e)
            self.assertEqual(bare["epochs"][0]["tokens"], doc["epochs"][0]["tokens"])
            self.assertIn("seconds", doc)  # the original is left alone

    def test_bad_input_has_no_document(self):
        with tempfile.TemporaryDirectory() as out:
            r = kv.run_scenario(KVCHECK, os.path.join(out, "missing.json"), out)
        self.assertEqual(r.code, kv.BAD_INPUT)
        self.assertIsNone(r.document())
        self.assertIsNone(r.result())


class ResultHelpersTest(unittest.TestCase):
    def test_error_values(self):
        self.assertTrue(math.isnan(kv.error_value("nan")))
        self.assertEqual(kv.error_value("-inf"), -math.inf)
        self.assertEqual(kv.error_value(0.5), 0.5)
        self.assertIsNone(kv.error_value(None))
        self.assertEqual(kv.worst_error([0.1, None, 0.3]), 0.3)
        self.assertTrue(math.isnan(kv.worst_error([0.1, math.nan, 0.3])))
        self.assertEqual(kv.worst_error([None]), 0.0)

    def test_misses_and_names_op(self):
        corrupt = {"verdict": "corrupt", "meets_expectation": False,
                   "first_failure": {"ops": ["write_kv", "paged_decode"]}}
        error = {"verdict": "error", "meets_expectation": True, "error": {"op": "gather_kv"}}
        self.assertTrue(kv.misses_expectation(corrupt))
        self.assertTrue(kv.misses_expectation(error))
        self.assertFalse(kv.misses_expectation({"verdict": "clean", "meets_expectation": True}))
        self.assertTrue(kv.names_op(corrupt, "paged_decode"))
        self.assertFalse(kv.names_op(corrupt, "gather_kv"))
        self.assertTrue(kv.names_op(error, "gather_kv"))
        self.assertFalse(kv.names_op(error, "write_kv"))

    def test_originals_before_twins(self):
        with tempfile.TemporaryDirectory() as out:
            for name in ("b.clean", "b", "a"):
                pathlib.Path(out, name + ".json").write_text(json.dumps({"scenario": name}))
            pathlib.Path(out, "notes.txt").write_text("not a result")
            pathlib.Path(out, "sub").mkdir()  # a folder run's results mirror its folders
            pathlib.Path(out, "sub", "c.json").write_text(json.dumps({"scenario": "c"}))
            pathlib.Path(out, "sub", ".c.json.tmp.1.2").write_text("{")  # a temporary
            names = [d["scenario"] for d in kv.read_results(out)]
        self.assertLess(names.index("b"), names.index("b.clean"))
        self.assertEqual(sorted(names), ["a", "b", "b.clean", "c"])


class ScenarioWalkTest(unittest.TestCase):
    def test_the_repository(self):
        files = kv.scenario_files()
        self.assertIn(kv.SCENARIOS / "smoke.json", files)
        self.assertEqual(files, sorted(files))
        self.assertFalse([f for f in files if "schema" in f.relative_to(kv.SCENARIOS).parts])
        seeds = kv.scenarios_in("seeds")
        self.assertTrue(seeds and set(seeds) <= set(files))
        self.assertEqual(kv.scenario_name(seeds[0]), "seeds/" + seeds[0].name)
        self.assertTrue(kv.is_gpu_scale(kv.SCENARIOS / "gpu" / "llama-gqa-bf16.json"))
        self.assertFalse(kv.is_gpu_scale(kv.SCENARIOS / "gpu" / "seeds" / "x.json"))
        self.assertFalse(kv.is_gpu_scale(kv.SCENARIOS / "smoke.json"))
        self.assertTrue(kv.default_kvcheck().endswith("/build/kvcheck"))
        self.assertRegex(kv.git_commit(), "^[0-9a-f]*$")

    def test_a_tree_of_its_own(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp) / "schema"  # a root named like the skipped folder
            for rel in ("a.json", "schema/s.json", "sub/b.json", "sub/c.txt"):
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text("{}")
            self.assertEqual(kv.scenario_files(root), [root / "a.json", root / "sub/b.json"])
            self.assertEqual(kv.scenarios_in("", root), [root / "a.json"])
            self.assertEqual(kv.scenario_name(root / "a.json", root), "a.json")
            self.assertEqual(kv.scenario_name(root / "a.json"), str((root / "a.json").resolve()))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__.splitlines()[0])
    KVCHECK = sys.argv.pop(1)
    unittest.main()
