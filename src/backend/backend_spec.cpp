// backend_spec.cpp — backend specs: plugin paths and python:MODULE.
#include "backend/backend_spec.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace kv {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHostLibrary = "libkvcheck_backend_python.so";
constexpr std::string_view kModuleKey = "module=";

// Where this kvcheck's Python host is: $KVCHECK_PYTHON_HOST, else beside the executable (the
// build tree's backends/) or in the install tree's lib/kvcheck/. "" if nowhere.
std::string python_host_library() {
  if (const char* env = std::getenv("KVCHECK_PYTHON_HOST"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path dir = exe.parent_path();
  for (const fs::path& p :
       {dir / "backends" / kHostLibrary, dir / ".." / "lib" / "kvcheck" / kHostLibrary})
    if (fs::is_regular_file(p, ec)) return p.lexically_normal().string();
  return "";
}

}  // namespace

bool is_python_backend(std::string_view spec) { return spec.starts_with(kPythonPrefix); }

BackendTarget backend_target(const std::string& spec, const std::string& options) {
  BackendTarget t;
  if (!is_python_backend(spec)) {
    t.library = spec;
    t.options = options;
    return t;
  }
  t.python_module = spec.substr(kPythonPrefix.size());
  if (t.python_module.empty() || t.python_module.find('\n') != std::string::npos) {
    t.problem = "got \"" + spec + "\", expected python:MODULE (a dotted module name or a .py file)";
    return t;
  }
  t.library = python_host_library();
  if (t.library.empty()) {
    t.problem = "this kvcheck has no Python host (" + std::string(kHostLibrary) +
                " beside it): build it with -DKVCHECK_PYTHON=ON (needs python3-dev), or set "
                "KVCHECK_PYTHON_HOST to its path";
    return t;
  }
  t.options = std::string(kModuleKey) + t.python_module + "\n" + options;
  return t;
}

std::string backend_short_stem(const std::string& spec) {
  if (!is_python_backend(spec)) return fs::path(spec).filename().string();
  std::string m = spec.substr(kPythonPrefix.size());
  if (m.ends_with(".py")) return fs::path(m).stem().string();
  const size_t dot = m.rfind('.');
  return dot == std::string::npos ? m : m.substr(dot + 1);
}

std::string backend_relative_to(const std::string& spec, const std::string& folder) {
  const bool python = is_python_backend(spec);
  const std::string path = python ? spec.substr(kPythonPrefix.size()) : spec;
  if (python && !path.ends_with(".py")) return spec;
  fs::path p = path;
  if (p.is_relative()) p = fs::path(folder) / p;
  return (python ? std::string(kPythonPrefix) : "") + p.lexically_normal().string();
}

PythonHostOptions python_host_options(const std::string& text) {
  PythonHostOptions o;
  const size_t nl = text.find('\n');
  const std::string first = text.substr(0, nl);
  if (!first.starts_with(kModuleKey) || first.size() == kModuleKey.size()) {
    o.problem = "the Python host is loaded as --backend python:MODULE (its options start with "
                "module=MODULE), got options \"" + first + "\"";
    return o;
  }
  o.module = first.substr(kModuleKey.size());
  if (nl != std::string::npos) o.rest = text.substr(nl + 1);
  return o;
}

}  // namespace kv
