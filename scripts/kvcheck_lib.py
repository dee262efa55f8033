"""kvcheck_lib.py — what the Python scripts share about kvcheck: where the repository and the
binary are, kvcheck's exit statuses, running a command with a timeout (exit status, stdout,
stderr, seconds; the peak memory of the child on request), reading result documents (from `run
--json`'s document on stdout, or from an --out folder) and walking scenarios/.

Which scenarios make "the suite" is not defined here: each script keeps its own list until the
suite file (a later issue) defines one. Python 3.11 standard library only. A script in scripts/
imports it as it is; one elsewhere puts scripts/ on its path first:

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[N] / "scripts"))

tests/scripts/kvcheck_lib_test.py tests every helper (ctest scripts/kvcheck-lib).
"""
import dataclasses
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "scenarios"

# kvcheck's exit statuses (src/cli/exit_codes.h; `kvcheck schema exit-codes` prints the table,
# and the test of this module keeps these in step with it).
OK = 0
MISMATCH = 1  # a verdict does not match its expectation, or a verdict is error
BAD_INPUT = 2
CANNOT_RUN = 3
INTERNAL_ERROR = 4
BISECT_SKIP = 125

TIMEOUT = "timeout"  # Run.code of a command killed at its timeout

# What `kvcheck run --json` prints (src/report/run_schema.h): one document, results and summary.
RUN_SCHEMA = "kvcheck.run/1"


def default_kvcheck(build="build"):
    """The kvcheck binary of a build folder of the repository (scripts/build.sh's: build/)."""
    return str(REPO / build / "kvcheck")


def git_commit(short=True):
    """The repository's HEAD commit ('' outside a git checkout)."""
    cmd = ["git", "-C", str(REPO), "rev-parse"] + (["--short"] if short else []) + ["HEAD"]
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()


# ---- running a command ----------------------------------------------------------------------

@dataclasses.dataclass
class Run:
    """One finished command: its exit status (negative: killed by that signal; TIMEOUT: killed
    at its timeout), what it wrote (decoded as UTF-8, bad bytes replaced) and its wall seconds."""
    cmd: list
    code: object
    stdout: str
    stderr: str
    seconds: float
    peak_rss_bytes: int = 0  # run(..., peak_rss=True) only: the child's peak resident memory

    def document(self):
        """The JSON that stdout holds (`run --json`: one "kvcheck.run/1" document, results and
        summary), or None when stdout is not JSON (the run ended before writing)."""
        try:
            return json.loads(self.stdout)
        except ValueError:
            return None

    def results(self):
        """The result documents of `run --json`, in run order (results_of() of document())."""
        return results_of(self.document())

    def result(self):
        """The one result document of a `run --json` of one scenario; None when the run wrote
        none (bad input, cannot run, a crash). More than one is a ValueError: the caller meant
        results()."""
        docs = self.results()
        if not docs:
            return None
        if len(docs) > 1:
            raise ValueError(f"{len(docs)} result documents where one was expected: "
                             f"{' '.join(self.cmd)}")
        return docs[0]

    def summary(self):
        """The summary of `run --json` (counts, line, problems, baseline, exit_code); None when
        stdout holds no run document."""
        doc = self.document()
        if isinstance(doc, dict) and doc.get("schema") == RUN_SCHEMA:
            return doc["summary"]
        return None


# A fresh interpreter between us and the command: its RUSAGE_CHILDREN peak is the command's
# alone (ru_maxrss of children is the largest child's, so our own earlier children would count).
# It also keeps the timeout, so that a command past it is killed, not orphaned with the probe.
# Its last line on stderr: "#probe CODE PEAK_BYTES SECONDS" (CODE "timeout" past the timeout).
_PROBE = (
    "import resource, subprocess, sys, time\n"
    "limit = None if sys.argv[1] == 'none' else float(sys.argv[1])\n"
    "t = time.monotonic()\n"
    "try:\n"
    "    r = subprocess.run(sys.argv[2:], stdout=sys.stdout.fileno(), stderr=subprocess.PIPE,\n"
    "                       stdin=subprocess.DEVNULL, timeout=limit)\n"
    "    sys.stderr.buffer.write(r.stderr)\n"
    "    code = r.returncode\n"
    "except subprocess.TimeoutExpired:\n"
    "    code = 'timeout'\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
    "sys.stderr.write(f'\\n#probe {code} {peak} {time.monotonic() - t:.3f}\\n')\n"
)


def run(cmd, timeout=None, cwd=None, peak_rss=False, merge_output=False):
    """Runs cmd (a list) with no stdin and returns a Run; the command is killed after timeout
    seconds (then code is TIMEOUT and what it wrote is lost). peak_rss: also measure the
    command's peak resident memory, through a probe interpreter (seconds are then the
    command's own, without the probe's start). merge_output: stderr goes into stdout, in the
    order written (Run.stderr is empty)."""
    cmd = [str(c) for c in cmd]
    if peak_rss:
        return _run_probed(cmd, timeout, cwd)
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, timeout=timeout, cwd=cwd,
                           stderr=subprocess.STDOUT if merge_output else subprocess.PIPE,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Run(cmd, TIMEOUT, "", "", time.monotonic() - start)
    return Run(cmd, p.returncode, p.stdout.decode(errors="replace"),
               (p.stderr or b"").decode(errors="replace"), time.monotonic() - start)


def _run_probed(cmd, timeout, cwd):
    limit = "none" if timeout is None else str(timeout)
    p = subprocess.run([sys.executable, "-c", _PROBE, limit, *cmd], capture_output=True,
                       cwd=cwd, stdin=subprocess.DEVNULL)
    err = p.stderr.decode(errors="replace")
    head, sep, tail = err.rpartition("\n#probe ")
    if not sep:  # the probe itself failed
        raise RuntimeError(f"the peak-memory probe failed (exit {p.returncode}): {err[-2000:]}")
    code, peak, seconds = tail.split()
    code = TIMEOUT if code == TIMEOUT else int(code)
    return Run(cmd, code, p.stdout.decode(errors="replace"), head, float(seconds), int(peak))


def run_kvcheck(kvcheck, args, **kw):
    """`kvcheck ARGS...` through run() (its keywords too)."""
    return run([kvcheck, *args], **kw)


def run_scenario(kvcheck, scenario, out_dir, args=(), **kw):
    """`kvcheck run SCENARIO --json -q --out OUT_DIR ARGS...` through run(): the result
    document is Run.result() (None when the run wrote none: bad input, cannot run, a crash)."""
    return run_kvcheck(kvcheck, ["run", scenario, "--json", "-q", "--out", out_dir, *args], **kw)


def describe_exit(code):
    """'exit N', 'killed by SIGNAME', or 'hung (kvcheck)' for a Run's code."""
    if code == TIMEOUT:
        return "hung (kvcheck)"
    if isinstance(code, int) and code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit {code}"


# ---- result documents -----------------------------------------------------------------------

def results_of(doc):
    """The result documents of a parsed `run --json` document, in run order ([] when the run
    stopped before its first); None when it is not one. An earlier kvcheck's (before
    kvcheck.run/1: one bare result document, or a list of them) reads as its results too, so
    that runs of two commits compare (compare-results.py, bisecting)."""
    if isinstance(doc, dict) and doc.get("schema") == RUN_SCHEMA:
        return doc["results"]
    if isinstance(doc, dict) and str(doc.get("schema", "")).startswith("kvcheck.result/"):
        return [doc]
    if isinstance(doc, list):
        return doc
    return None


# The result's wall-time figures (report/result_json.cpp): top level and per epoch.
TIMINGS = ("seconds", "check_seconds", "check_wait_seconds", "reference_seconds",
           "forward_seconds", "zero_init_seconds")
BACKEND_TIMINGS = ("load_seconds",)  # in the result's backend block


def error_value(v):
    """A result's error figure as a float: numbers as they are, the strings "nan", "inf" and
    "-inf" (how the result writes non-finite numbers) as those floats; None stays None."""
    return None if v is None else float(v)


def worst_error(values):
    """The largest of error figures (error_value()s; None ignored, none at all 0.0); a NaN
    among them wins."""
    vals = [v for v in values if v is not None] or [0.0]
    return math.nan if any(math.isnan(v) for v in vals) else max(vals)


def epoch_sum(doc, key):
    """The sum of a figure over a result's epochs (a missing or null figure counts 0)."""
    return sum(e.get(key) or 0 for e in doc["epochs"])


# What says how a result was made (report/result_json.cpp, cli/run_scenarios.cpp): the build,
# the command line and the time; two runs of one scenario differ there by nature.
RUN_IDENTITY = ("build", "command_line", "started_at")


def without_timings(doc):
    """A copy of a result document without its wall-time figures (TIMINGS), at the top level
    and in each epoch, and without how it was made (RUN_IDENTITY): what two runs of one
    scenario must agree on besides."""
    doc = {k: v for k, v in doc.items() if k not in TIMINGS and k not in RUN_IDENTITY}
    if isinstance(doc.get("backend"), dict):
        doc["backend"] = {k: v for k, v in doc["backend"].items() if k not in BACKEND_TIMINGS}
    if isinstance(doc.get("epochs"), list):
        doc["epochs"] = [{k: v for k, v in e.items() if k not in TIMINGS} for e in doc["epochs"]]
    return doc


def misses_expectation(doc):
    """Whether a result fails its run: its verdict is not the expected one, or it is error."""
    return not doc.get("meets_expectation") or doc.get("verdict") == "error"


def names_op(doc, op):
    """Whether a failed result names op: its first failure's ops hold it, or (verdict error) its
    error block's op is it."""
    if doc.get("verdict") == "error":
        return (doc.get("error") or {}).get("op") == op
    return op in ((doc.get("first_failure") or {}).get("ops") or [])


def read_results(out_dir):
    """The result documents under an --out folder (one file per run, named after the scenario
    file: "<path>[.<backend>][.seed<N>][.clean].json", in subfolders as the files were), each
    scenario's before its clean twin ("<name>.clean") where both are there."""
    docs = []
    for path in sorted(pathlib.Path(out_dir).rglob("*.json")):
        if not path.name.startswith("."):
            with open(path) as f:
                docs.append(json.load(f))
    return original_first(docs)


def original_first(docs):
    """Documents sorted so that a scenario's ("<name>") comes before its clean twin's
    ("<name>.clean")."""
    return sorted(docs, key=lambda d: len(d.get("scenario", "")))


# ---- scenario files -------------------------------------------------------------------------

def scenario_files(root=SCENARIOS):
    """Every scenario file under root (default scenarios/) but the schemas (scenarios/schema/)
    and suite files (suite.json, *.suite.json), sorted by path."""
    root = pathlib.Path(root)
    return sorted(p for p in root.rglob("*.json")
                  if "schema" not in p.relative_to(root).parts
                  and p.name != "suite.json" and not p.name.endswith(".suite.json"))


def scenarios_in(folder, root=SCENARIOS):
    """The scenario files directly in root/folder ('' for root itself), sorted."""
    return sorted((pathlib.Path(root) / folder).glob("*.json"))


def scenario_name(path, root=SCENARIOS):
    """How tables and records name a scenario: its path relative to scenarios/ where it is in
    there, else its absolute path."""
    path = pathlib.Path(path).resolve()
    try:
        return str(path.relative_to(pathlib.Path(root).resolve()))
    except ValueError:
        return str(path)


def is_gpu_scale(path, root=SCENARIOS):
    """Whether a scenario is one of the GPU-scale ones, directly in scenarios/gpu/ (hours on the
    host device; its gpu/seeds/ and gpu/regressions/ variants are host-sized)."""
    return pathlib.Path(path).resolve().parent == (pathlib.Path(root) / "gpu").resolve()
