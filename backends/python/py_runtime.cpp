// py_runtime.cpp — starting the embedded interpreter and reading its errors.
#include "py_runtime.h"

#include <dlfcn.h>

namespace kv::py {

std::string start_interpreter(const std::string& program) {
  if (Py_IsInitialized()) return "";
  // kvcheck loads this plugin RTLD_LOCAL, so libpython (its dependency) is local to it too, and
  // an extension module's undefined Py* symbols would not resolve: promote it to global.
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&Py_InitializeFromConfig), &info) || !info.dli_fname)
    return "cannot find the loaded libpython (dladdr)";
  if (!dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD)) {
    const char* why = dlerror();
    return std::string("cannot make libpython's symbols global: ") + (why ? why : "?");
  }
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;
  config.parse_argv = 0;
  PyStatus status = PyStatus_Ok();
  if (!program.empty())
    status = PyConfig_SetBytesString(&config, &config.program_name, program.c_str());
  if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status))
    return std::string("the Python interpreter did not start: ") +
           (status.err_msg ? status.err_msg : "unknown error");
  PyEval_SaveThread();  // every call takes the GIL through Gil
  return "";
}

std::string text_of(PyObject* s, const std::string& fallback) {
  if (!s || !PyUnicode_Check(s)) return fallback;
  const char* c = PyUnicode_AsUTF8(s);
  if (!c) {
    PyErr_Clear();
    return fallback;
  }
  return c;
}

std::string take_error(PyObject* describe) {
  if (!PyErr_Occurred()) return "";
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value && tb) PyException_SetTraceback(value, tb);
  std::string out;
  if (describe && value) {
    Ref line(PyObject_CallOneArg(describe, value));
    out = text_of(line.get());
    PyErr_Clear();
  }
  if (out.empty()) {
    Ref name(type ? PyObject_GetAttrString(type, "__name__") : nullptr);
    Ref text(value ? PyObject_Str(value) : nullptr);
    PyErr_Clear();
    out = text_of(name.get(), "exception");
    const std::string t = text_of(text.get());
    if (!t.empty()) out += ": " + t;
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return out;
}

}  // namespace kv::py
