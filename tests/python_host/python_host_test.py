#!/usr/bin/env python3
"""python_host_test.py KVCHECK — the Python backend host (`--backend python:MODULE`) on the host
device: a module that raises, crashes, exits or hangs inside an op is that op's error verdict
(exit 1, the exception's type, text and last frame in the message); one that does not import,
lacks kvcheck_backend, declares nonsense or refuses is "cannot run" (exit 3) before any step; an
op that returns a value instead of writing is an error; a backend whose declared LSE base is not
what it writes is caught; list, conform and the result name the module and its digest.

Each test writes a module into a fresh folder and runs kvcheck there (the working folder is on the
module search path). Run by ctest (python-host/cases) with the interpreter the host embeds.
"""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

KVCHECK = None
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = {"format": 1, "name": "tiny", "seed": 3, "model": {"layers": 1},
        "workload": {"requests": 2, "prompt_len": [4, 8], "new_tokens": [2, 4], "epochs": 2}}

# A module that wraps numpy_host and changes one op: `{change}` is the op's new body.
WRAP = """
import os, time, ctypes
import numpy as np
import kvcheck
import numpy_host as base

def changed(a):
{change}

def kvcheck_backend(host):
    b = base.kvcheck_backend(host)
    b.ops["{op}"] = changed
    return b
"""


class PythonHost(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        with open(os.path.join(self.dir, "tiny.json"), "w") as f:
            json.dump(TINY, f)

    def tearDown(self):
        self.tmp.cleanup()

    def module(self, name, text):
        with open(os.path.join(self.dir, name + ".py"), "w") as f:
            f.write(textwrap.dedent(text))

    def wrap(self, name, op, body):
        self.module(name, WRAP.format(op=op, change=textwrap.indent(textwrap.dedent(body), "    ")))

    def kvcheck(self, *args, timeout=120):
        p = subprocess.run([KVCHECK, *args], cwd=self.dir, capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def run_error(self, module, op, *extra):
        """Runs tiny.json on `module`: exit 1, verdict error naming `op`; the result's error."""
        code, out, err = self.kvcheck("run", "tiny.json", "--backend", "python:" + module,
                                      "--out", "out", "--json", *extra)
        self.assertEqual(code, 1, err)
        doc = json.loads(out)
        self.assertEqual(len(doc["results"]), 1)
        r = doc["results"][0]
        self.assertEqual(r["verdict"], "error", err)
        self.assertEqual(r["error"]["op"], op)
        return r["error"]

    def cannot_run(self, module, *extra):
        code, out, err = self.kvcheck("run", "tiny.json", "--backend", "python:" + module,
                                      "--out", "out", *extra)
        self.assertEqual(code, 3, out + err)
        files = [f for _, _, names in os.walk(os.path.join(self.dir, "out")) for f in names]
        self.assertEqual(files, [], "no result of a refusal")
        return err

    # ---- the ops misbehave: a verdict about the backend, naming the op --------------------

    def test_an_exception_names_its_type_text_and_frame(self):
        self.wrap("raises", "paged_decode", "raise ValueError('the split count is off')")
        e = self.run_error("raises", "paged_decode")
        self.assertEqual(e["kind"], "status")
        self.assertIn("ValueError: the split count is off", e["message"])
        self.assertIn("raises.py:", e["message"])
        self.assertIn("in changed", e["message"])

    def test_writing_the_wrong_shape_is_the_op_error(self):
        self.wrap("shape", "write_kv", "a.cache.k[0] = np.zeros((3, 5))")
        e = self.run_error("shape", "write_kv")
        self.assertIn("ValueError", e["message"])

    def test_returning_a_tensor_instead_of_writing_is_an_error(self):
        self.wrap("returns", "paged_decode", "return np.zeros_like(a.out)")
        e = self.run_error("returns", "paged_decode")
        self.assertIn("returned a ndarray instead of None", e["message"])

    def test_os_exit_inside_an_op_is_an_error_not_a_pass(self):
        self.wrap("exits", "write_kv", "os._exit(0)")
        e = self.run_error("exits", "write_kv", "--expect", "corrupt")
        self.assertEqual(e["kind"], "exit")
        self.assertEqual(e["exit_code"], 0)

    def test_a_segfault_inside_an_op_is_a_crash(self):
        self.wrap("crashes", "gather_kv", "ctypes.string_at(0)")
        smoke = os.path.join(REPO, "scenarios", "smoke.json")
        code, out, err = self.kvcheck("run", smoke, "--backend", "python:crashes", "--no-out",
                                      "--json")
        # smoke.json has cached-context prefills, so gather_kv runs.
        self.assertEqual(code, 1)
        e = json.loads(out)["results"][0]["error"]
        self.assertEqual((e["kind"], e["signal"], e["op"]), ("crash", "SIGSEGV", "gather_kv"))

    def test_a_hang_is_killed_at_the_backend_timeout(self):
        self.wrap("hangs", "write_kv", "while True: pass")
        e = self.run_error("hangs", "write_kv", "--backend-timeout", "2")
        self.assertEqual(e["kind"], "hang")

    def test_a_declared_lse_base_the_op_does_not_write_is_caught(self):
        # varlen_attention writes log2 lse while declaring natural: the built-in merge weighs
        # context and new tokens wrongly. The honest module is clean on the same scenario.
        self.module("lse_lie", """
            import numpy as np
            import numpy_host as base
            def varlen(a):
                base.varlen_attention(a)
                a.lse[...] = a.lse * np.float32(1.4426950408889634)
            def kvcheck_backend(host):
                b = base.kvcheck_backend(host)
                b.ops = {"varlen_attention": varlen}
                b.paged_decode_plan = b.plan_bytes = None
                return b
            """)
        smoke = os.path.join(REPO, "scenarios", "smoke.json")
        code, out, err = self.kvcheck("run", smoke, "--backend", "python:lse_lie", "--no-out",
                                      "--json")
        self.assertEqual(code, 1, err)
        self.assertEqual(json.loads(out)["results"][0]["verdict"], "corrupt")
        code, out, err = self.kvcheck("run", smoke, "--backend", "python:numpy_host", "--no-out")
        self.assertEqual(code, 0, out + err)

    # ---- the module cannot be used: cannot run, before any step --------------------------

    def test_a_module_that_does_not_import(self):
        self.module("broken", "def kvcheck_backend(host):\n  return (\n")
        err = self.cannot_run("broken")
        self.assertIn("python:broken: kvcheck_backend_init refused to start: the module does not "
                      "import: SyntaxError", err)

    def test_a_module_that_is_not_there(self):
        err = self.cannot_run("no_such_backend_module")
        self.assertIn("No module named 'no_such_backend_module'", err)

    def test_a_module_without_kvcheck_backend(self):
        self.module("plain", "x = 1\n")
        self.assertIn("defines no kvcheck_backend(host) function", self.cannot_run("plain"))

    def test_declarations_kvcheck_has_no_value_for(self):
        cases = {
            "unknown_op": ('ops={"paged_decodex": lambda a: None}', "unknown op 'paged_decodex'"),
            "bad_dtype": ('caps=kvcheck.Caps(cache_dtypes=["bf17"]), ops=OPS',
                          "caps.cache_dtypes: got 'bf17'"),
            "bad_layout": ('caps=kvcheck.Caps(layouts=["paged"]), ops=OPS',
                           "caps.layouts: got 'paged'"),
            "bad_io": ('caps=kvcheck.Caps(io_dtype="fp8_e4m3"), ops=OPS',
                       "caps.io_dtype: got 'fp8_e4m3'"),
            "no_ops": ("ops={}", "ops: expected a dict of at least one op"),
            "plan_no_size": ("ops=OPS, paged_decode_plan=lambda a: None",
                             "paged_decode_plan needs plan_bytes"),
        }
        for name, (fields, expected) in cases.items():
            with self.subTest(name):
                fields = fields if "caps=" in fields else "caps=kvcheck.Caps(), " + fields
                self.module(name, f"""
                    import kvcheck
                    OPS = {{"merge_states": lambda a: None}}
                    def kvcheck_backend(host):
                        return kvcheck.Backend(name="x", version="1", {fields})
                    """)
                self.assertIn(expected, self.cannot_run(name))

    def test_a_refusal_carries_the_module_s_reason_and_bisect_skips(self):
        self.module("refuses", """
            import kvcheck
            def kvcheck_backend(host):
                raise kvcheck.Unsupported("needs a GPU with sm_90")
            """)
        self.assertIn("the module refused to start: needs a GPU with sm_90",
                      self.cannot_run("refuses"))
        code, _, _ = self.kvcheck("run", "tiny.json", "--backend", "python:refuses", "--no-out",
                                  "--bisect")
        self.assertEqual(code, 125)

    def test_an_exit_while_loading_is_cannot_run(self):
        self.module("exits_early", "import os\nos._exit(3)\n")
        self.cannot_run("exits_early")

    def test_the_user_s_options_reach_the_module(self):
        err = self.cannot_run("numpy_host", "--backend-option", "prefill=sideways")
        self.assertIn("unknown option 'prefill=sideways'", err)

    # ---- the module as a backend: identity, list, conform, a file path ---------------------

    def test_the_result_names_the_module_its_digest_and_runtime(self):
        code, out, err = self.kvcheck("run", "tiny.json", "--backend", "python:numpy_host",
                                      "--out", "out", "--json")
        self.assertEqual(code, 0, err)
        b = json.loads(out)["results"][0]["backend"]
        self.assertEqual(b["path"], os.path.join(REPO, "backends", "python", "numpy_host.py"))
        self.assertEqual(b["name"], "numpy-host")
        self.assertIn("Python 3.", b["version"])
        self.assertIn("numpy", b["version"])
        self.assertRegex(b["sha256"], "^[0-9a-f]{64}$")
        self.assertGreater(b["load_seconds"], 0)  # the interpreter's start and the import
        # The result file is named after the module.
        self.assertTrue(os.path.exists(os.path.join(self.dir, "out", "tiny.numpy_host.json")))

    def test_a_module_given_as_a_file_and_the_digest_follows_its_text(self):
        self.module("mine", "from numpy_host import kvcheck_backend\n")
        digests = []
        for text in ("from numpy_host import kvcheck_backend\n",
                     "from numpy_host import kvcheck_backend  # changed\n"):
            self.module("mine", text)
            code, out, err = self.kvcheck("list", "--backend", "python:./mine.py", "--json")
            self.assertEqual(code, 0, err)
            doc = json.loads(out)
            digests.append(doc["backend"]["sha256"])
            self.assertEqual(doc["backend"]["path"], os.path.join(self.dir, "mine.py"))
        self.assertNotEqual(digests[0], digests[1])

    def test_conform_writes_through_every_output_of_every_op(self):
        # conform compares each op's outputs (out, lse, cache pages, state, y, scale) with the
        # built-in op's: the NumPy views it writes through are kvcheck's memory.
        code, out, err = self.kvcheck("conform", "--backend", "python:numpy_host", "--json")
        self.assertEqual(code, 0, out + err)
        ops = {o["op"]: o for o in json.loads(out)["ops"]}
        for op in ("write_kv", "paged_decode", "gather_kv", "varlen_attention", "merge_states",
                   "linear_attention", "fill_blocks", "quant_fp8"):
            self.assertGreater(ops[op]["cases"], 0, op)
            self.assertEqual(ops[op]["passed"], ops[op]["cases"], op)

    def test_the_fused_variant_runs_paged_prefill(self):
        code, out, err = self.kvcheck("run", os.path.join(REPO, "scenarios", "smoke.json"),
                                      "--backend", "python:numpy_host", "--backend-option",
                                      "prefill=fused", "--no-out", "--json")
        self.assertEqual(code, 0, err)
        r = json.loads(out)["results"][0]
        calls = {c["op"]: c for c in r["backend"]["ops"]}
        self.assertEqual(calls["paged_prefill"]["placement"], "backend")

    def test_git_bisect_finds_the_commit_that_broke_a_python_backend(self):
        # BACKEND=python:MODULE needs no build: each commit's module is imported as checked out.
        repo = os.path.join(self.dir, "mine")
        os.mkdir(repo)
        git = lambda *a: subprocess.run(["git", "-C", repo, *a], check=True, capture_output=True,
                                        text=True).stdout
        git("init", "-q")
        git("config", "user.email", "t@example.com")
        git("config", "user.name", "t")
        honest = "from numpy_host import kvcheck_backend\n"
        liar = textwrap.dedent("""
            import numpy as np
            import numpy_host as base
            def varlen(a):
                base.varlen_attention(a)
                a.lse[...] = a.lse * np.float32(1.4426950408889634)  # log2, declared natural
            def kvcheck_backend(host):
                b = base.kvcheck_backend(host)
                b.ops["varlen_attention"] = varlen
                return b
            """)
        commits = []
        for i, text in enumerate([honest, honest + "# 1\n", liar, liar + "# 3\n"]):
            with open(os.path.join(repo, "kv_backend.py"), "w") as f:
                f.write(text)
            git("add", "kv_backend.py")
            git("commit", "-q", "-m", f"step {i}")
            commits.append(git("rev-parse", "HEAD").strip())
        git("bisect", "start", commits[-1], commits[0])
        env = dict(os.environ, KVCHECK=KVCHECK, BACKEND="python:kv_backend",
                   SCENARIOS=os.path.join(REPO, "scenarios", "smoke.json"),
                   KVCHECK_OUT=os.path.join(self.dir, "bisect-out"))
        p = subprocess.run(["git", "-C", repo, "bisect", "run",
                            os.path.join(REPO, "scripts", "bisect-step.sh")],
                           env=env, capture_output=True, text=True, timeout=300)
        self.assertIn(f"{commits[2]} is the first bad commit", p.stdout, p.stdout + p.stderr)

    def test_bf16_io_arrives_as_uint16_and_a_write_in_the_wrong_dtype_is_caught(self):
        # io_dtype bf16: q and out are uint16 views. Writing float results into them unconverted
        # (NumPy casts 0.37 to 0) is corrupt; converting with kvcheck.numpy_dtypes is clean.
        for honest, verdict in ((True, "clean"), (False, "corrupt")):
            self.module(f"bf16_{honest}", f"""
                import types
                import numpy as np
                import numpy_host as base
                from kvcheck.numpy_dtypes import bf16_to_f32, f32_to_bf16
                def decode(a):
                    assert a.q.dtype == np.uint16 and a.out.dtype == np.uint16
                    f = types.SimpleNamespace(**vars(a))
                    f.q = bf16_to_f32(a.q)
                    f.out = np.zeros(a.out.shape, np.float32)
                    base.paged_decode(f)
                    a.out[...] = f32_to_bf16(f.out) if {honest} else f.out
                def kvcheck_backend(host):
                    b = base.kvcheck_backend(host)
                    b.caps.io_dtype = "bf16"
                    b.ops = {{"paged_decode": decode}}
                    return b
                """)
            smoke = os.path.join(REPO, "scenarios", "smoke.json")
            code, out, err = self.kvcheck("run", smoke, "--backend", f"python:bf16_{honest}",
                                          "--no-out", "--json", "--expect", verdict)
            self.assertEqual(code, 0, out[-2000:] + err[-2000:])
            r = json.loads(out)["results"][0]
            self.assertEqual(r["verdict"], verdict)
            self.assertGreater(r["backend"]["backend_calls"], 0)

    def test_a_backend_without_graph_support_runs_eagerly_and_says_so(self):
        # A library that allocates while it runs (PyTorch's caching allocator) declares none.
        self.module("eager", """
            import numpy_host as base
            def kvcheck_backend(host):
                b = base.kvcheck_backend(host)
                b.caps.graph_support = "none"
                return b
            """)
        smoke = os.path.join(REPO, "scenarios", "smoke.json")
        code, out, err = self.kvcheck("run", smoke, "--backend", "python:eager", "--no-out",
                                      "--json")
        self.assertEqual(code, 0, err)
        r = json.loads(out)["results"][0]
        self.assertIn("engine: CUDA graphs off (the backend supports none)", r["backend"]["notes"])
        self.assertEqual(r["coverage"]["graph_replays"], 0)

    def test_a_python_spec_without_a_module(self):
        code, out, err = self.kvcheck("run", "tiny.json", "--backend", "python:", "--no-out")
        self.assertEqual(code, 3, err)
        self.assertIn("expected python:MODULE", err)


if __name__ == "__main__":
    KVCHECK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
