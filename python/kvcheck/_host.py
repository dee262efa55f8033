"""The Python half of kvcheck's Python backend host (backends/python/): imports the backend
module, reads its declaration, and turns what goes wrong into one line for kvcheck. Called from
C++ only; backend authors never import it.
"""

import hashlib
import importlib
import importlib.util
import json
import os
import platform
import sys
import traceback
import types

from . import abi
from .backend import Host, Unsupported, declaration

def where(exc):
    """The last frame of an exception's traceback: 'file.py:12 in fn', or ''."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)  # importlib's own say nothing
              if not f.filename.startswith("<frozen") and "importlib" not in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    return f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}"


def describe(exc):
    """One line for kvcheck: the exception's type and text, and where it was raised."""
    text = str(exc).strip().splitlines()
    text = text[0] if text else ""
    at = where(exc)
    head = type(exc).__name__ + (f": {text}" if text else "")
    return f"{head} (at {at})" if at else head


def _import(spec, search):
    """The backend module: a dotted name, or a .py file's path."""
    for d in reversed(search):
        if d and d not in sys.path:
            sys.path.insert(0, d)
    if spec.endswith(".py") or os.sep in spec:
        path = os.path.abspath(spec)
        if not os.path.isfile(path):
            raise Unsupported(f"no such file: {path}")
        name = os.path.splitext(os.path.basename(path))[0]
        folder = os.path.dirname(path)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        s = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(s)
        sys.modules[name] = module
        s.loader.exec_module(module)
        return module
    return importlib.import_module(spec)


def _files(module):
    """The module's source files: the file, or every .py of its package's folder."""
    path = getattr(module, "__file__", None)
    if not path:
        return []
    if hasattr(module, "__path__"):
        root = os.path.dirname(path)
        out = []
        for d, dirs, names in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            out += [os.path.join(d, n) for n in sorted(names) if n.endswith(".py")]
        return out
    return [path]


def identity(module):
    """Which code this is: the module's file, a sha256 over its source files, and the versions of
    the interpreter and the libraries it imported (numpy, torch with CUDA and cuDNN, triton)."""
    files = _files(module)
    digest = hashlib.sha256()
    root = os.path.dirname(files[0]) if files else ""
    for f in files:
        with open(f, "rb") as fh:
            digest.update(os.path.relpath(f, root).encode() + b"\0")
            digest.update(hashlib.sha256(fh.read()).hexdigest().encode() + b"\n")
    versions = [f"Python {platform.python_version()}"]
    for name in ("numpy", "torch", "triton", "cupy"):
        m = sys.modules.get(name)
        if m is None:
            continue
        v = f"{name} {getattr(m, '__version__', '?')}"
        if name == "torch":
            try:
                v += f" (CUDA {m.version.cuda}, cuDNN {m.backends.cudnn.version()})"
            except Exception:  # a CPU-only torch
                pass
        versions.append(v)
    return {"path": files[0] if files else "", "sha256": digest.hexdigest(),
            "files": len(files), "runtime": ", ".join(versions)}


class Loaded:
    """One backend module, loaded for a device: its declaration and its callables."""

    def __init__(self, spec, device, device_id, options, search):
        try:
            self.module = _import(spec, search)
        except Unsupported:
            raise
        except Exception as e:
            raise Unsupported(f"the module does not import: {describe(e)}") from None
        entry = getattr(self.module, "kvcheck_backend", None)
        if not callable(entry):
            raise Unsupported(f"the module ({getattr(self.module, '__file__', '?')}) defines no "
                              "kvcheck_backend(host) function (docs/python-backends.md)")
        try:
            self.backend = entry(Host(device=device, device_id=device_id, options=options))
        except Unsupported as e:
            raise Unsupported(f"the module refused to start: {e}") from None
        except Exception as e:
            raise Unsupported(f"its kvcheck_backend raised {describe(e)}") from None
        try:
            self.declaration = declaration(self.backend)
        except ValueError as e:
            raise Unsupported(f"its declaration: {e}") from None
        self.ops = tuple(self.backend.ops.get(op) for op in abi.OPS)
        self.cuda = device == "cuda"
        self.device_id = device_id
        self.stream = None
        if self.cuda:
            try:
                import torch
            except Exception as e:
                raise Unsupported("the Python host hands CUDA tensors to a backend as torch "
                                  f"tensors, and torch does not import: {describe(e)}") from None
            self.torch = torch
            torch.cuda.set_device(device_id)  # kvcheck's GPU is the current one
            self.tensor = torch.from_dlpack
        else:
            import numpy
            self.tensor = numpy.asarray
            self.numpy = numpy
        # After the imports above: the versions name what the ops will run with.
        self.identity = identity(self.module)
        self.identity_json = json.dumps(self.identity)

    def empty(self, shape, dtype):
        """A zero-element array of an ABI dtype (a tensor whose data pointer is NULL)."""
        if self.cuda:
            return self.torch.empty(shape, dtype=getattr(self.torch, abi.NUMPY_VIEW[dtype]),
                                    device=f"cuda:{self.device_id}")
        return self.numpy.empty(shape, dtype=abi.NUMPY_VIEW[dtype])

    def use_stream(self, handle):
        """Make kvcheck's CUDA stream torch's current one (once per stream, not per call)."""
        if handle == self.stream:
            return
        cuda = self.torch.cuda
        s = (cuda.ExternalStream(handle, device=self.device_id) if handle
             else cuda.default_stream(self.device_id))  # 0: the legacy default stream
        cuda.set_stream(s)
        self.stream = handle

    def close(self):
        if self.backend.close is not None:
            self.backend.close()


def load(spec, device, device_id, options, search):
    return Loaded(spec, device, device_id, options, search)


Namespace = types.SimpleNamespace
