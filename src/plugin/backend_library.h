// backend_library.h — a backend plugin loaded from its shared library: dlopen, the one entry point
// (kvcheck_backend_init), and a check of the table it returns before kvcheck trusts any of it.
//
// Everything that goes wrong here is "cannot run" (exit 3, 125 under --bisect): the file is not a
// shared library, lacks the entry point, speaks another ABI version, refuses the device, or returns
// a table that contradicts the header. The message names the backend and exactly what is missing.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kvcheck/backend.h"

namespace kv {

struct BackendLoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class BackendLibrary {
 public:
  // path: a backend spec (backend/backend_spec.h: a plugin's path or python:MODULE). device: DLPack
  // device type (kDLCPU, kDLCUDA) and index the run uses. sha256: the file's digest when the
  // caller has it already (one hash for all of a run's workers), else "". Throws
  // BackendLoadError.
  BackendLibrary(const std::string& path, int32_t device_type, int32_t device_id,
                 const std::string& options = "", const std::string& sha256 = "");
  ~BackendLibrary();
  BackendLibrary(const BackendLibrary&) = delete;
  BackendLibrary& operator=(const BackendLibrary&) = delete;

  const kvcheck_backend& table() const { return *table_; }
  // The plugin's file (absolute) and its sha256 as sha256sum prints it; for python:MODULE the
  // module's file and a digest over its source files.
  const std::string& path() const { return path_; }
  const std::string& sha256() const { return sha256_; }
  std::string name() const { return table_->name; }
  // The plugin's version string; for python:MODULE with the interpreter and libraries it ran
  // with ("1.0; Python 3.11.2, numpy 1.24.2").
  std::string version() const { return version_; }
  // Wall seconds from dlopen to the end of the plugin's init: for python:MODULE the interpreter's
  // start and the module's import (a library's kernels compile later, inside their first call).
  double load_seconds() const { return load_seconds_; }
  // backend::implements and implemented_ops (backend/abi_caps.h) of its table.
  bool implements(kvcheck_op op) const;
  std::vector<kvcheck_op> implemented_ops() const;

 private:
  std::string path_, sha256_, version_;
  double load_seconds_ = 0.0;
  std::string python_identity(const std::string& module);
  void* handle_ = nullptr;
  const kvcheck_backend* table_ = nullptr;
};

}  // namespace kv
