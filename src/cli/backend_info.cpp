// backend_info.cpp — a plugin's identity, declaration and op placement, as JSON and as text.
#include "cli/backend_info.h"

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/abi_caps.h"
#include "backend/abi_tensor.h"

namespace kv::cli {
namespace {

// A caps mask read out; 0 declares "any".
std::vector<std::string> declared(uint32_t mask, int32_t n, const char* (*name)(int32_t)) {
  if (mask == 0) return {"any"};
  return backend::mask_names(mask, n, name);
}

nlohmann::json int_list(const int32_t* v, int32_t n) {
  if (!v || n <= 0) return "any";
  return nlohmann::json(std::vector<int32_t>(v, v + n));
}

// "any", or ["512+64", ...]: the (kv_lora_rank, qk_rope_dim) pairs an MLA cache may have.
nlohmann::json mla_pairs(const kvcheck_caps& c) {
  if (!c.mla_dims || c.num_mla_dims <= 0) return "any";
  nlohmann::json out = nlohmann::json::array();
  for (int32_t i = 0; i < c.num_mla_dims; ++i)
    out.push_back(std::to_string(c.mla_dims[2 * i]) + "+" + std::to_string(c.mla_dims[2 * i + 1]));
  return out;
}

const char* graph_name(int32_t g) {
  return g == KVCHECK_GRAPHS_FULL ? "full" : g == KVCHECK_GRAPHS_DECODE ? "decode" : "none";
}

nlohmann::json caps_json(const kvcheck_caps& c) {
  return {{"cache_dtypes", declared(c.cache_dtypes, 4, backend::dtype_name)},
          {"layouts", declared(c.layouts, 3, backend::layout_name)},
          {"io_dtype", backend::dtype_name(c.io_dtype)},
          {"head_dims", int_list(c.head_dims, c.num_head_dims)},
          {"block_sizes", int_list(c.block_sizes, c.num_block_sizes)},
          {"gqa_ratios", int_list(c.gqa_ratios, c.num_gqa_ratios)},
          {"mla_dims", mla_pairs(c)},
          {"lse_base", c.lse_base == KVCHECK_LSE_BASE2 ? "2" : "e"},
          {"empty_row_lse", c.empty_row_lse > 0 ? "+inf" : "-inf"},
          {"pad_seq_len", c.pad_seq_len},
          {"pad_block_id", c.pad_block_id},
          {"needs_zeroed_blocks", c.needs_zeroed_blocks != 0},
          {"graph_support", graph_name(c.graph_support)}};
}

std::string text_of(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + text_of(x);
    return s;
  }
  return v.dump();
}

}  // namespace

nlohmann::json backend_json(const BackendLibrary& lib) {
  const kvcheck_backend& t = lib.table();
  nlohmann::json ops = nlohmann::json::array();
  for (int i = 0; i < KVCHECK_NUM_OPS; ++i) {
    const auto op = static_cast<kvcheck_op>(i);
    ops.push_back({{"op", backend::op_name(op)},
                   {"placement", lib.implements(op) ? "backend" : "builtin"}});
  }
  return {{"path", lib.path()},
          {"name", lib.name()},
          {"version", lib.version()},
          {"abi_version", t.abi_version},
          {"sha256", lib.sha256()},
          {"plan", t.paged_decode_plan != nullptr},
          {"caps", caps_json(t.caps)},
          {"ops", ops}};
}

void print_backend(std::ostream& os, const BackendLibrary& lib) {
  const nlohmann::json j = backend_json(lib);
  os << fmt::format("backend {} {} (ABI version {})\n", lib.name(), lib.version(),
                    lib.table().abi_version);
  os << "  path:    " << lib.path() << '\n';
  os << "  sha256:  " << lib.sha256() << '\n';
  os << "\ndeclares:\n";
  for (const auto& [key, value] : j["caps"].items())
    os << fmt::format("  {:<20} {}\n", key, text_of(value));
  os << fmt::format("  {:<20} {}\n", "decode plan step", j["plan"].get<bool>() ? "yes" : "no");
  os << "\nops (where each runs with this backend; pin one back with --backend-op OP=builtin):\n";
  for (const auto& o : j["ops"])
    os << fmt::format("  {:<20} {}\n", o["op"].get<std::string>(),
                      o["placement"] == "backend" ? "backend" : "built-in (not implemented)");
}

}  // namespace kv::cli
