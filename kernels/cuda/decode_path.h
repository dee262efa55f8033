// decode_path.h — choosing the CUDA paged decode's path by hand: the benchmark, its --check mode
// and the GPU tests run each path on its own. Defined in kernels/cuda/paged_decode.cu (namespace
// kv::cuda). The engine calls kv::cuda::paged_decode (kernels/cuda/cuda_ops.h), which takes
// `automatic` (or `generic` when KVCHECK_DECODE_PATH=generic is set: decode_path_env.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "kernels/op_args.cuh"

namespace kv::cuda {

// automatic takes the fastest path the descriptor allows: mla_wgmma, then mla_tc, gqa_tc, generic.
enum class DecodePath : int32_t { automatic = 0, generic = 1, gqa_tc = 2, mla_tc = 3, mla_wgmma = 4 };

// Runs `path`; throws std::invalid_argument when the path cannot run the descriptor,
// kv::cuda::LaunchError (launch_error.h) when a launch fails.
void paged_decode_path(const PagedDecodeArgs& a, DecodePath path, cudaStream_t stream);
const char* decode_path_name(DecodePath p);
// The path `automatic` picks for `a` (never automatic), and whether `p` can run `a` (why not).
DecodePath decode_path_for(const PagedDecodeArgs& a);
bool decode_path_supports(const PagedDecodeArgs& a, DecodePath p, std::string* why);

// The MLA paths round q and p to 16 bits before the matrix products (as FlashMLA does): their
// error against the float host op is ~1e-3, not the ~1e-6 of the float-accurate paths.
inline bool decode_path_rounds_operands(DecodePath p) {
  return p == DecodePath::mla_tc || p == DecodePath::mla_wgmma;
}

}  // namespace kv::cuda
