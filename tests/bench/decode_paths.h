// decode_paths.h — the decode entry points kvbench_decode needs beyond kernels/cuda/cuda_ops.h:
// running one named path of the CUDA paged decode, and asking which path a descriptor gets.
// Defined in kernels/cuda/paged_decode.cu (namespace kv::cuda); declared here because only the
// benchmark and its --check mode choose paths by hand. The engine calls kv::cuda::paged_decode,
// which takes `automatic` (or `generic` when KVCHECK_DECODE_PATH=generic is set).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "kernels/op_args.cuh"

namespace kv::cuda {

enum class DecodePath : int32_t { automatic = 0, generic = 1, gqa_tc = 2, mla_tc = 3 };

// Runs `path` (automatic: the fastest the descriptor allows); throws std::invalid_argument when
// the path cannot run the descriptor, kv::DeviceError when a launch fails.
void paged_decode_path(const PagedDecodeArgs& a, DecodePath path, cudaStream_t stream);
const char* decode_path_name(DecodePath p);
DecodePath decode_path_for(const PagedDecodeArgs& a);
bool decode_path_supports(const PagedDecodeArgs& a, DecodePath p, std::string* why);

}  // namespace kv::cuda
