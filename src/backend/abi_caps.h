// abi_caps.h — what a loaded backend declares (include/kvcheck/backend.h): which ops it implements
// and whether its capabilities (kvcheck_caps) take a scenario's cache. kvcheck checks a scenario
// against them before running; a refusal names the capability.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/dtype.cuh"
#include "kvcheck/backend.h"

namespace kv::backend {

// The cache one attention layer of a scenario uses, as the caps describe caches.
struct CacheShape {
  DType dtype = DType::f32;
  kvcheck_kv_layout layout = KVCHECK_LAYOUT_KV_SEPARATE;
  int32_t head_dim = 0;
  int32_t block_size = 0;
  int32_t gqa_ratio = 0;  // query heads per KV head of an attention layer; 0: not asked (MLA)
  int32_t mla_rope_dim = 0;  // MLA: the latent row is (head_dim - mla_rope_dim) + mla_rope_dim
  // false: the op reads K/V rows in the cache's dtype, not the paged cache itself
  // (varlen_attention), so the cache's layout and block size are not asked of it.
  bool paged = true;
};

// The names of the bits set in `mask` (bit i named name(i), i < count): a caps mask read out.
std::vector<std::string> mask_names(uint32_t mask, int32_t count, const char* (*name)(int32_t));

// Whether the backend's table has the op (a non-NULL function); false past its struct_size. The
// one reading of a table's ops: everything else asks this.
bool implements(const kvcheck_backend& b, kvcheck_op op);
// The ops it implements, in kvcheck_op order.
std::vector<kvcheck_op> implemented_ops(const kvcheck_backend& b);

// Why `caps` cannot take `cache` ("cache dtype fp8_e4m3 is not among the backend's: f32 bf16"),
// or "" if they can. Caps whose struct_size is below the v1 size take nothing.
std::string caps_refusal(const kvcheck_caps& caps, const CacheShape& cache);

}  // namespace kv::backend
