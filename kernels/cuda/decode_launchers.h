// decode_launchers.h — the CUDA paged-decode paths as the dispatcher sees them: for each path,
// whether it can run a descriptor and its launcher, and the split merge that follows every path.
//
// Host-only C++ declarations (no device code), so that kernels/cuda/paged_decode.cu, which picks
// the path, needs none of the kernels' headers. Each function is defined in the file of its path:
//   generic  decode_generic.cu   launch_generic   (runs every descriptor validate() accepts)
//   gqa_tc   decode_gqa_tc.cu    gqa_ok, launch_gqa
//   mla_tc   decode_mla_tc.cu    mla_ok, launch_mla
//   mla_wgmma decode_mla_wgmma.cu mla_wgmma_ok, launch_mla_wgmma (sm_90a image only)
//   merge    decode_merge.cu     launch_merge     (rows with 2 or more splits)
// A launcher assumes validate() passed and its predicate said yes; it throws kv::cuda::LaunchError
// (launch_error.h) when the launch fails. Predicates fill `why` (when not null) with the reason
// for a no.
// The public entry points that choose a path by hand are in kernels/cuda/decode_path.h.
#pragma once

#include <cuda_runtime_api.h>  // cudaStream_t

#include <string>

#include "kernels/op_args.cuh"

namespace kv::cuda::decode_detail {

// The largest v_dim the generic path holds (128 threads x 8 accumulators, decode_generic.cu);
// validate() refuses a larger one, since no path could run it.
inline constexpr int kMaxHeadDim = 1024;

void launch_generic(const PagedDecodeArgs& a, cudaStream_t stream);

bool gqa_ok(const PagedDecodeArgs& a, std::string* why);
void launch_gqa(const PagedDecodeArgs& a, cudaStream_t stream);

bool mla_ok(const PagedDecodeArgs& a, std::string* why);
void launch_mla(const PagedDecodeArgs& a, cudaStream_t stream);

// Also no on a GPU other than compute capability 9.0, or when the loaded image of
// decode_mla_wgmma.cu is not the sm_90a one (wgmma exists only there; see that file).
bool mla_wgmma_ok(const PagedDecodeArgs& a, std::string* why);
void launch_mla_wgmma(const PagedDecodeArgs& a, cudaStream_t stream);

// Does nothing when max_splits < 2 (every row was written directly by the decode kernel).
void launch_merge(const PagedDecodeArgs& a, cudaStream_t stream);

}  // namespace kv::cuda::decode_detail
