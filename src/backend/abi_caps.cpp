// abi_caps.cpp — reading a backend's declared ops and capabilities (abi_caps.h).
#include "backend/abi_caps.h"

#include <cstddef>

#include "backend/abi_tensor.h"

namespace kv::backend {
namespace {

// "a b c" of the set bits of a mask, named by `name`.
std::string mask_text(uint32_t mask, int32_t count, const char* (*name)(int32_t)) {
  std::string s;
  for (const std::string& n : mask_names(mask, count, name)) s += (s.empty() ? "" : " ") + n;
  return s.empty() ? "none" : s;
}

bool listed(const int32_t* list, int32_t n, int32_t v) {
  if (list == nullptr) return true;  // NULL: any
  for (int32_t i = 0; i < n; ++i)
    if (list[i] == v) return true;
  return false;
}

std::string list_text(const int32_t* list, int32_t n) {
  std::string s;
  for (int32_t i = 0; i < n; ++i) s += (i ? " " : "") + std::to_string(list[i]);
  return s.empty() ? "none" : s;
}

}  // namespace

std::vector<std::string> mask_names(uint32_t mask, int32_t count, const char* (*name)(int32_t)) {
  std::vector<std::string> names;
  for (int32_t i = 0; i < count; ++i)
    if (mask & (1u << i)) names.emplace_back(name(i));
  return names;
}

bool implements(const kvcheck_backend& b, kvcheck_op op) {
  // A member is there only if the backend's struct_size covers it.
#define KV_HAS(member) \
  (offsetof(kvcheck_backend, member) + sizeof(b.member) <= b.struct_size && b.member != nullptr)
  switch (op) {
    case KVCHECK_OP_WRITE_KV: return KV_HAS(write_kv);
    case KVCHECK_OP_PAGED_DECODE: return KV_HAS(paged_decode);
    case KVCHECK_OP_GATHER_KV: return KV_HAS(gather_kv);
    case KVCHECK_OP_VARLEN_ATTENTION: return KV_HAS(varlen_attention);
    case KVCHECK_OP_MERGE_STATES: return KV_HAS(merge_states);
    case KVCHECK_OP_LINEAR_ATTENTION: return KV_HAS(linear_attention);
    case KVCHECK_OP_FILL_BLOCKS: return KV_HAS(fill_blocks);
    case KVCHECK_OP_QUANT_FP8: return KV_HAS(quant_fp8);
    case KVCHECK_OP_PAGED_PREFILL: return KV_HAS(paged_prefill);
    case KVCHECK_NUM_OPS: break;
  }
#undef KV_HAS
  return false;
}

std::vector<kvcheck_op> implemented_ops(const kvcheck_backend& b) {
  std::vector<kvcheck_op> ops;
  for (int32_t i = 0; i < KVCHECK_NUM_OPS; ++i)
    if (implements(b, static_cast<kvcheck_op>(i))) ops.push_back(static_cast<kvcheck_op>(i));
  return ops;
}

std::string caps_refusal(const kvcheck_caps& caps, const CacheShape& c) {
  if (caps.struct_size < sizeof(kvcheck_caps))
    return "caps struct_size " + std::to_string(caps.struct_size) + " is less than the v1 size " +
           std::to_string(sizeof(kvcheck_caps));
  const int32_t dt = to_abi(c.dtype);
  if (caps.cache_dtypes != 0 && !(caps.cache_dtypes & KVCHECK_DTYPE_BIT(dt)))
    return std::string("cache dtype ") + dtype_name(dt) + " is not among the backend's: " +
           mask_text(caps.cache_dtypes, 32, dtype_name);
  if (c.paged && caps.layouts != 0 && !(caps.layouts & KVCHECK_LAYOUT_BIT(c.layout)))
    return std::string("cache layout ") + layout_name(c.layout) + " is not among the backend's: " +
           mask_text(caps.layouts, 3, layout_name);
  if (c.layout == KVCHECK_LAYOUT_MLA_LATENT && caps.mla_dims != nullptr) {
    const int32_t rank = c.head_dim - c.mla_rope_dim;
    bool ok = false;
    std::string pairs;
    for (int32_t i = 0; i < caps.num_mla_dims; ++i) {
      ok = ok || (caps.mla_dims[2 * i] == rank && caps.mla_dims[2 * i + 1] == c.mla_rope_dim);
      pairs += (i ? " " : "") + std::to_string(caps.mla_dims[2 * i]) + "+" +
               std::to_string(caps.mla_dims[2 * i + 1]);
    }
    if (!ok)
      return "MLA latent " + std::to_string(rank) + "+" + std::to_string(c.mla_rope_dim) +
             " (kv_lora_rank + qk_rope_dim) is not among the backend's: " +
             (pairs.empty() ? "none" : pairs);
  } else if (!listed(caps.head_dims, caps.num_head_dims, c.head_dim)) {
    return "head_dim " + std::to_string(c.head_dim) + " is not among the backend's: " +
           list_text(caps.head_dims, caps.num_head_dims);
  }
  if (c.paged && !listed(caps.block_sizes, caps.num_block_sizes, c.block_size))
    return "block_size " + std::to_string(c.block_size) + " is not among the backend's: " +
           list_text(caps.block_sizes, caps.num_block_sizes);
  if (c.gqa_ratio > 0 && !listed(caps.gqa_ratios, caps.num_gqa_ratios, c.gqa_ratio))
    return "GQA ratio " + std::to_string(c.gqa_ratio) + " (query heads per KV head) is not among "
           "the backend's: " + list_text(caps.gqa_ratios, caps.num_gqa_ratios);
  return "";
}

}  // namespace kv::backend
