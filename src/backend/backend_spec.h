// backend_spec.h — a backend as the user names it (`--backend`, a scenario's backend `library`,
// BACKEND= of scripts/bisect-step.sh): the path of a plugin's shared library, or
// `python:MODULE`, a Python module that kvcheck's Python host plugin runs (backends/python/;
// MODULE is a dotted name importable from the working folder, PYTHONPATH or backends/python/, or
// the path of a .py file).
//
// The Python host is an ordinary plugin to the rest of kvcheck: python:MODULE resolves to its
// library with the option text "module=MODULE" on the first line and the user's
// --backend-option after it. Once loaded it names the module's file, digest and runtime
// (kvcheck_python_identity), which the result records in place of the host library's.
#pragma once

#include <string>
#include <string_view>

namespace kv {

inline constexpr std::string_view kPythonPrefix = "python:";
// The Python host's one export besides the ABI's entry point: the module's identity as JSON.
inline constexpr const char* kPythonIdentitySymbol = "kvcheck_python_identity";

bool is_python_backend(std::string_view spec);

// What to dlopen for a backend spec, and the option text its init gets.
struct BackendTarget {
  std::string library;
  std::string options;
  std::string python_module;  // "" for a C plugin
  std::string problem;        // why the spec cannot be loaded ("" if it can)
};
BackendTarget backend_target(const std::string& spec, const std::string& options);

// What a result file name starts its backend part from (cli/result_paths.h shortens it): a
// plugin's file name ("libkvcheck_backend_flashinfer.so"), the module's last name for python:MODULE
// ("mod" for python:pkg.mod or python:dir/mod.py).
std::string backend_short_stem(const std::string& spec);

// A scenario's backend `library` taken relative to the scenario's folder: a plugin path or the
// file of python:FILE.py; a python:dotted.name is left as it is.
std::string backend_relative_to(const std::string& spec, const std::string& folder);

// The Python host's reading of its option text (in the plugin).
struct PythonHostOptions {
  std::string module;   // what to import
  std::string rest;     // the user's --backend-option, handed to the module's kvcheck_backend
  std::string problem;  // "" or what is wrong with the text
};
PythonHostOptions python_host_options(const std::string& text);

}  // namespace kv
