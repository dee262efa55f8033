"""kvcheck's Python package: write a kvcheck backend in Python, and run kvcheck from Python.

    import kvcheck

    def kvcheck_backend(host):            # in your module; run with --backend python:your_module
        return kvcheck.Backend(name="mine", version="0.1", caps=kvcheck.Caps(io_dtype="bf16"),
                               ops={"paged_decode": my_decode})

docs/python-backends.md walks through it. Importable without building anything: the names of the
ABI (kvcheck.abi), the declaration (Backend, Caps, Host, Unsupported), kvcheck.run for a test
suite, page lists for libraries (kvcheck.pages) and NumPy helpers for the storage dtypes
(kvcheck.numpy_dtypes); the last two are imported on use.
"""

from . import abi
from .backend import Backend, Caps, Host, Unsupported
from .runner import BadInput, CannotRun, InternalError, KvcheckError, run

__all__ = ["abi", "Backend", "Caps", "Host", "Unsupported", "run", "KvcheckError", "BadInput",
           "CannotRun", "InternalError"]
