// conform.cpp — `kvcheck conform`'s driver: runs the check of each op the backend implements
// (conform_cache.cpp, conform_attention.cpp) and prints the per-op table and its JSON.
#include "conform/conform.h"

#include <iomanip>
#include <limits>
#include <ostream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/abi_caps.h"
#include "backend/abi_tensor.h"
#include "conform/conform_support.h"
#include "device/host_device.h"

namespace kv::conform {

namespace {

using Check = void (*)(const Target&, OpReport*);

constexpr double kInf = std::numeric_limits<double>::infinity();

// The check of each ABI op, in kvcheck_op order (the op's name is the op table's,
// ops/op_table.h; whether a table implements it, backend::implements).
struct OpEntry {
  kvcheck_op op;
  Check check;  // nullptr: not covered by conform yet
};

constexpr OpEntry kOps[] = {
    {KVCHECK_OP_WRITE_KV, check_write_kv},
    {KVCHECK_OP_PAGED_DECODE, check_paged_decode},
    {KVCHECK_OP_GATHER_KV, check_gather_kv},
    {KVCHECK_OP_VARLEN_ATTENTION, check_varlen_attention},
    {KVCHECK_OP_MERGE_STATES, check_merge_states},
    {KVCHECK_OP_LINEAR_ATTENTION, check_linear_attention},
    {KVCHECK_OP_FILL_BLOCKS, check_fill_blocks},
    {KVCHECK_OP_QUANT_FP8, check_quant_fp8},
    {KVCHECK_OP_PAGED_PREFILL, check_paged_prefill},
};
constexpr bool one_entry_per_op_in_order() {
  for (int32_t i = 0; i < KVCHECK_NUM_OPS; ++i)
    if (kOps[i].op != i) return false;
  return sizeof(kOps) / sizeof(kOps[0]) == KVCHECK_NUM_OPS;
}
static_assert(one_entry_per_op_in_order(), "a check entry per ABI op, in kvcheck_op order");

std::string pad(const std::string& s, size_t w) {
  return s + std::string(w > s.size() ? w - s.size() : 0, ' ');
}

std::string lpad(const std::string& s, size_t w) {
  return std::string(w > s.size() ? w - s.size() : 0, ' ') + s;
}

}  // namespace

ConformReport run_conform(const kvcheck_backend& backend, const ConformOptions& options) {
  HostDevice host;
  return run_conform(backend, options, host, DLDevice{kDLCPU, 0});
}

bool ConformReport::all_passed() const {
  for (const OpReport& o : ops)
    if (!o.ok()) return false;
  return true;
}

ConformReport run_conform(const kvcheck_backend& backend, const ConformOptions& options,
                          Device& device, DLDevice dl) {
  ConformReport rep;
  rep.backend_name = backend.name ? backend.name : "";
  rep.backend_version = backend.version ? backend.version : "";
  rep.seed = options.seed;
  rep.attention_tolerance = options.attention_tolerance;
  const Target target{backend, options, device, dl};
  std::string device_failed;  // the op in which the device failed: nothing runs after it
  for (const OpEntry& e : kOps) {
    if (!backend::implements(backend, e.op)) continue;
    const char* name = backend::op_name(e.op);
    OpReport r;
    r.op = name;
    if (auto before = options.failed_before.find(e.op); before != options.failed_before.end()) {
      Tally(&r).add("during its cases", before->second, kInf);
    } else if (!device_failed.empty()) {
      r.covered = false;
      r.note = "not run: the device failed in " + device_failed;
    } else if (e.check == nullptr) {
      r.covered = false;
      r.note = "not covered by conform yet";
    } else {
      try {
        CallMark mark(options.record, name);
        e.check(target, &r);
      } catch (const DeviceError& err) {
        Tally(&r).add("case " + std::to_string(r.cases + 1),
                      std::string("device error: ") + err.what(), kInf);
        device_failed = name;
      }
    }
    rep.ops.push_back(std::move(r));
  }
  if (rep.ops.empty()) throw std::invalid_argument("the backend implements no op");
  return rep;
}

void print_conform(std::ostream& os, const ConformReport& r) {
  os << "backend: " << r.backend_name << " " << r.backend_version
     << "   seed: " << r.seed << "   attention tolerance: " << fmt_err(r.attention_tolerance)
     << " (relative L2)\n\n";
  os << "  " << pad("op", 18) << lpad("cases", 6) << lpad("passed", 8) << lpad("worst err", 11)
     << "  first failing case\n";
  for (const OpReport& o : r.ops) {
    os << "  " << pad(o.op, 18);
    if (!o.covered) {
      os << lpad("-", 6) << lpad("-", 8) << lpad("-", 11) << "  (" << o.note << ")\n";
      continue;
    }
    os << lpad(std::to_string(o.cases), 6) << lpad(std::to_string(o.passed), 8)
       << lpad(fmt_err(o.worst_error), 11) << "  " << (o.ok() ? "-" : o.first_failure) << '\n';
    if (!o.note.empty()) os << "  " << pad("", 18) << "  note: " << o.note << '\n';
  }
  int failed = 0;
  for (const OpReport& o : r.ops) failed += o.ok() ? 0 : 1;
  os << "\nverdict: " << (failed ? fmt::format("{} op(s) do not conform", failed)
                                 : std::string("every op conforms"))
     << '\n';
}

nlohmann::json conform_document(const ConformReport& r) {
  nlohmann::json ops = nlohmann::json::array();
  for (const OpReport& o : r.ops)
    ops.push_back({{"op", o.op}, {"covered", o.covered}, {"cases", o.cases},
                   {"passed", o.passed}, {"ok", o.ok()},
                   {"worst_error", o.worst_error == o.worst_error && o.worst_error < 1e300
                                       ? nlohmann::json(o.worst_error)
                                       : nlohmann::json(fmt_err(o.worst_error))},
                   {"first_failure", o.first_failure.empty() ? nlohmann::json(nullptr)
                                                             : nlohmann::json(o.first_failure)},
                   {"note", o.note}});
  return nlohmann::json{{"schema", "kvcheck.conform/1"}, {"backend", r.backend_name},
                        {"backend_version", r.backend_version}, {"seed", r.seed},
                        {"attention_tolerance", r.attention_tolerance},
                        {"passed", r.all_passed()}, {"ops", ops}};
}

std::string conform_json(const ConformReport& r) { return conform_document(r).dump(2); }

namespace {
// worst_error as conform_document writes it: a number, or "inf" / "nan" as text.
double error_from_json(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  const std::string t = v.get<std::string>();
  return t == "inf" ? kInf : t == "-inf" ? -kInf : std::numeric_limits<double>::quiet_NaN();
}
}  // namespace

ConformReport conform_report_from_json(const nlohmann::json& doc) {
  ConformReport r;
  r.backend_name = doc.at("backend").get<std::string>();
  r.backend_version = doc.at("backend_version").get<std::string>();
  r.seed = doc.at("seed").get<uint64_t>();
  r.attention_tolerance = doc.at("attention_tolerance").get<double>();
  for (const auto& o : doc.at("ops"))
    r.ops.push_back({.op = o.at("op").get<std::string>(),
                     .covered = o.at("covered").get<bool>(),
                     .cases = o.at("cases").get<int>(),
                     .passed = o.at("passed").get<int>(),
                     .worst_error = error_from_json(o.at("worst_error")),
                     .first_failure = o.at("first_failure").is_null()
                                          ? std::string()
                                          : o.at("first_failure").get<std::string>(),
                     .note = o.at("note").get<std::string>()});
  return r;
}

}  // namespace kv::conform
