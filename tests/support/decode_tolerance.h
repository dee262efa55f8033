// decode_tolerance.h — how far a CUDA paged-decode path may be from the host op, relative L2 per
// (row, head): the one figure the decode --check of kvbench_decode, its benchmark's pre-timing
// check and the GPU tests all use.
//
// generic and gqa_tc compute in float32 (gqa_tc through bf16 hi + lo operands, 2^-17 per operand;
// ~1e-6 measured). The MLA paths round q and p to 16 bits as FlashMLA does (bf16; fp8 caches: f16
// with 11 bits, q scaled by a power of two per head): 2.5e-3 worst measured for bf16 on random
// data (results/decode-bench.md), so 2e-2 for bf16 and 5e-3 for fp8.
#pragma once

#include "kernels/cuda/decode_path.h"
#include "kernels/dtype.cuh"

namespace kv::test {

inline double decode_path_tolerance(cuda::DecodePath p, DType cache_dtype) {
  if (!cuda::decode_path_rounds_operands(p)) return 1e-4;
  return cache_dtype == DType::fp8_e4m3 ? 5e-3 : 2e-2;
}

}  // namespace kv::test
