// py_runtime.h — the embedded CPython interpreter of the Python backend host: started once per
// process, its GIL taken around every call from kvcheck, Python's errors turned into one line.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>

namespace kv::py {

// Starts the interpreter (once per process; later calls return at once): libpython's symbols
// made global first, so that the extension modules a backend imports (NumPy, torch) can bind to
// them although kvcheck dlopens this plugin RTLD_LOCAL; no signal handlers (kvcheck owns SIGINT).
// `program` is the interpreter whose prefix (a venv's site-packages among it) Python takes, or ""
// for the one this host was built against. Returns "" or why it could not start.
std::string start_interpreter(const std::string& program);

// The GIL for the lifetime of the object, from any thread.
class Gil {
 public:
  Gil() : state_(PyGILState_Ensure()) {}
  ~Gil() { PyGILState_Release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  PyGILState_STATE state_;
};

// An owned reference (new references only); null when a call failed with an exception set.
class Ref {
 public:
  Ref() = default;
  explicit Ref(PyObject* p) : p_(p) {}
  ~Ref() { Py_XDECREF(p_); }
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  Ref& operator=(Ref&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  PyObject* get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }
  PyObject* release() {
    PyObject* p = p_;
    p_ = nullptr;
    return p;
  }

 private:
  PyObject* p_ = nullptr;
};

// The pending exception (cleared) as one line, through `describe` (kvcheck._host.describe: type,
// text, last frame) when it is given and works, else type and text. "" if none is pending.
std::string take_error(PyObject* describe);

// A Python str's UTF-8 text, or `fallback` if it is not one.
std::string text_of(PyObject* s, const std::string& fallback = "");

}  // namespace kv::py
