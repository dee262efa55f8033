#!/usr/bin/env python3
"""package_test.py KVCHECK — kvcheck's Python package (python/kvcheck) for backend authors:
kvcheck.run returns the result document and raises on exits 2, 3 and 4; the FlashInfer page
lists of a block table; the NumPy storage-dtype conversions round as kvcheck does (ties to even,
fp8 saturation, NaN codes). Run by ctest python-host/package with the interpreter the host embeds.
"""
import json
import os
import sys
import tempfile
import unittest

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
import kvcheck  # noqa: E402
from kvcheck import numpy_dtypes as nd, pages, runner  # noqa: E402

KVCHECK = None
TINY = {"format": 1, "name": "tiny", "seed": 3, "model": {"layers": 1},
        "workload": {"requests": 2, "prompt_len": [4, 8], "new_tokens": [2, 4], "epochs": 2}}


class Run(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.tiny = os.path.join(self.tmp.name, "tiny.json")
        with open(self.tiny, "w") as f:
            json.dump(TINY, f)
        os.environ["KVCHECK"] = KVCHECK

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_clean_run_returns_its_result(self):
        r = kvcheck.run(self.tiny, backend="python:numpy_host")
        self.assertEqual((r["verdict"], r["meets_expectation"]), ("clean", True))
        self.assertEqual(r["backend"]["name"], "numpy-host")

    def test_a_module_object_is_a_backend(self):
        sys.path.insert(0, os.path.join(REPO, "backends", "python"))
        import numpy_host
        r = kvcheck.run(self.tiny, backend=numpy_host)
        self.assertEqual(r["backend"]["path"], os.path.abspath(numpy_host.__file__))

    def test_a_missed_expectation_is_a_result_not_an_exception(self):
        r = kvcheck.run(self.tiny, args=["--expect", "corrupt"])
        self.assertEqual((r["verdict"], r["meets_expectation"]), ("clean", False))

    def test_several_results_come_back_as_a_list(self):
        rs = kvcheck.run(self.tiny, args=["--seeds", "1-2"])
        self.assertEqual([r["seed"] for r in rs], [1, 2])

    def test_exits_2_3_raise_with_kvcheck_s_message(self):
        bad = os.path.join(self.tmp.name, "bad.json")
        with open(bad, "w") as f:
            json.dump(dict(TINY, model={"layers": 0}), f)
        with self.assertRaises(kvcheck.runner.BadInput) as e:
            kvcheck.run(bad)
        self.assertEqual(e.exception.code, 2)
        self.assertIn("layers", str(e.exception))
        with self.assertRaises(runner.CannotRun) as e:
            kvcheck.run(self.tiny, backend="python:numpy_host", args=["--backend-option", "x=1"])
        self.assertIn("unknown option 'x=1'", str(e.exception))

    def test_the_binary_comes_from_kvcheck_or_path(self):
        os.environ["KVCHECK"] = ""
        path = os.environ.get("PATH", "")
        os.environ["PATH"] = ""
        try:
            with self.assertRaises(FileNotFoundError):
                runner.find_kvcheck()
            os.environ["PATH"] = os.path.dirname(KVCHECK)
            self.assertEqual(runner.find_kvcheck(), KVCHECK)
        finally:
            os.environ["PATH"] = path


class Pages(unittest.TestCase):
    def test_flashinfer_page_lists(self):
        table = np.array([[5, 6, 7, 0], [9, 0, 0, 0], [1, 2, 3, 4]], dtype=np.int32)
        p = pages.flashinfer_pages(table, [33, 0, 16], 16)
        self.assertEqual(p.indptr.tolist(), [0, 3, 3, 4])
        self.assertEqual(p.indices.tolist(), [5, 6, 7, 1])
        self.assertEqual(p.last_page_len.tolist(), [1, 0, 16])

    def test_block_sizes_1_and_7_and_a_row_subset(self):
        table = np.arange(12, dtype=np.int32).reshape(2, 6)
        p = pages.flashinfer_pages(table, [3, 6], 1, rows=1)
        self.assertEqual((p.indptr.tolist(), p.indices.tolist(), p.last_page_len.tolist()),
                         ([0, 3], [0, 1, 2], [1]))
        p = pages.flashinfer_pages(table, [8, 7], 7)
        self.assertEqual((p.indptr.tolist(), p.indices.tolist(), p.last_page_len.tolist()),
                         ([0, 2, 3], [0, 1, 6], [1, 7]))


    def test_physical_to_logical(self):
        table = np.array([[3, 1, 0], [2, 0, 0], [0, 0, 0]], dtype=np.int32)
        where = pages.physical_to_logical(table, [5, 2, 0], 4, 5)
        self.assertEqual(where.tolist(), [[-1, 1, -1, 0, -1],   # row 0: blocks 3, 1 (5 tokens)
                                          [-1, -1, 0, -1, -1],  # row 1: block 2
                                          [-1, -1, -1, -1, -1]])  # row 2: empty


class Dtypes(unittest.TestCase):
    def test_bf16_rounds_ties_to_even_and_keeps_nan_quiet(self):
        x = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, np.inf, 3.4e38, np.nan], np.float32)
        self.assertEqual(nd.f32_to_bf16(x).tolist(),
                         [0x3F80, 0x3F80, 0x3F82, 0x7F80, 0x7F80, 0x7FC0])
        self.assertEqual(nd.bf16_to_f32(np.array([0x3F82], np.uint16)).tolist(), [1.015625])

    def test_fp8_saturates_rounds_to_even_and_maps_inf_to_nan(self):
        x = np.array([448, 500, -1e9, np.inf, np.nan, 2**-9, 2**-10, 3 * 2**-10, 1.0625, 1.1875],
                     np.float32)
        self.assertEqual(nd.f32_to_fp8_e4m3(x).tolist(),
                         [0x7E, 0x7E, 0xFE, 0x7F, 0x7F, 0x01, 0x00, 0x02, 0x38, 0x3A])
        values = nd.fp8_e4m3_to_f32(np.arange(256, dtype=np.uint8))
        self.assertTrue(np.isnan(values[[0x7F, 0xFF]]).all())
        self.assertEqual(int(np.isnan(values).sum()), 2)
        finite = np.arange(256)[~np.isnan(values)].astype(np.uint8)
        self.assertEqual(nd.f32_to_fp8_e4m3(values[finite]).tolist()[1:],
                         finite.tolist()[1:])  # every code round-trips (-0 is 0x80)

    def test_round_through_a_scaled_cache(self):
        y = nd.round_through(np.array([1.0, 300.0], np.float32), "fp8_e4m3", 2.0)
        self.assertEqual(y.tolist(), [1.0, 288.0])


if __name__ == "__main__":
    KVCHECK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
