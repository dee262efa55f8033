// backend_report.h — what a backend plugin ran of the scenario (`kvcheck run --backend`): per op
// and per layer kind, the calls it took and the ones that ran built-in. Plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kv {

// What a backend plugin ran of the scenario (`kvcheck run --backend`).
struct BackendOpReport {
  std::string op;         // an ABI op: write_kv, paged_decode, ...
  std::string placement;  // "backend", "builtin" (not implemented, pinned or fallen back), "unused"
  int64_t backend_calls = 0;
  int64_t builtin_calls = 0;
};

// The calls of one layer kind (attention, mla, linear) of the model, over all ops.
struct BackendKindReport {
  std::string layer_kind;
  int64_t backend_calls = 0;
  int64_t total_calls = 0;
};

struct BackendReport {
  std::string path;  // absolute
  std::string name;
  std::string version;
  std::string sha256;  // of the library file (python:MODULE: over the module's sources)
  int32_t abi_version = 0;
  double load_seconds = 0.0;  // dlopen to the end of init (python: interpreter start, import)
  std::vector<BackendOpReport> ops;
  std::vector<BackendKindReport> layer_kinds;  // the kinds the model has: attention, mla, linear
  std::vector<std::string> notes;  // ops that run built-in and why; what the engine adapted
  int64_t backend_calls() const {
    int64_t n = 0;
    for (const auto& o : ops) n += o.backend_calls;
    return n;
  }
  int64_t total_calls() const {
    int64_t n = 0;
    for (const auto& o : ops) n += o.backend_calls + o.builtin_calls;
    return n;
  }
};

}  // namespace kv
