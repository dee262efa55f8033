"""kvcheck.run: kvcheck from a backend repository's own test suite.

    import kvcheck

    def test_decode_is_clean():
        r = kvcheck.run("scenarios/smoke.json", backend="python:mypkg.kv_backend")
        assert r["verdict"] == "clean", r["first_failure"]

The binary is $KVCHECK, else `kvcheck` on PATH. A run whose verdict misses its expectation (exit
1) returns its result: the test asserts on it. Exits 2 (bad input), 3 (cannot run here) and 4
(a kvcheck bug) raise, with kvcheck's message.
"""
import json
import os
import shutil
import subprocess


class KvcheckError(Exception):
    """kvcheck could not judge: `code` is its exit status, `stderr` what it said."""

    def __init__(self, message, code, stderr):
        super().__init__(message)
        self.code = code
        self.stderr = stderr


class BadInput(KvcheckError):      # exit 2: the scenario or an option is wrong
    pass


class CannotRun(KvcheckError):     # exit 3: not here (no GPU, the backend refuses the shape ...)
    pass


class InternalError(KvcheckError):  # exit 4: a bug of kvcheck's own
    pass


RAISES = {2: BadInput, 3: CannotRun, 4: InternalError}


def find_kvcheck():
    """$KVCHECK, else kvcheck on PATH."""
    path = os.environ.get("KVCHECK") or shutil.which("kvcheck")
    if not path:
        raise FileNotFoundError("kvcheck: set KVCHECK to the binary (e.g. ~/kvcheck/build/kvcheck) "
                                "or put it on PATH")
    return path


def _backend_spec(backend):
    """A backend as kvcheck's --backend takes it: a plugin path, python:MODULE, or a module."""
    if backend is None or isinstance(backend, str):
        return backend
    path = getattr(backend, "__file__", None)
    if not path:
        raise TypeError(f"backend: got {backend!r}, expected a path, 'python:MODULE' or a module")
    return "python:" + os.path.abspath(path)


def run(scenario, backend=None, *, device="host", args=(), kvcheck=None, timeout=None):
    """Runs one scenario file and returns its result document (a dict: verdict, first_failure,
    epochs, backend ...; the schema is `kvcheck schema result`). More results (--seeds, a folder)
    come back as a list."""
    cmd = [kvcheck or find_kvcheck(), "run", os.fspath(scenario), "--json", "--no-out",
           "--device", device, *args]
    spec = _backend_spec(backend)
    if spec:
        cmd += ["--backend", spec]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode in RAISES:
        lines = [l for l in p.stderr.splitlines() if l.startswith("error:")]
        why = lines[-1] if lines else p.stderr.strip()[-500:]
        raise RAISES[p.returncode](f"kvcheck exited {p.returncode}: {why}", p.returncode, p.stderr)
    if p.returncode not in (0, 1):
        raise KvcheckError(f"kvcheck ended with status {p.returncode}: {p.stderr[-500:]}",
                           p.returncode, p.stderr)
    results = json.loads(p.stdout)["results"]
    return results[0] if len(results) == 1 else results
