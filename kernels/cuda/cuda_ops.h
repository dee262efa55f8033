// cuda_ops.h — the CUDA launchers of every op in kernels/op_args.cuh, what CudaDevice calls.
//
// Each launcher enqueues its kernel(s) on `stream` and returns at once: no allocation, no host
// synchronisation, no read of device memory from the host, so every launcher may be captured into
// a CUDA graph and a replay reads the descriptor's buffers as they are at replay time. Sizes that
// live in device memory (q_starts, ctx_lens, seq_lens, *amax_rows, ...) are read by the kernels;
// grids over them are sized from the host-side counts and loop over the rest.
//
// The meaning of every op is the host op of the same name in kernels/host/ (the spec), and the
// math is the shared __host__ __device__ helpers of kernels/*.cuh. Accumulation is float32, in a
// different order than the host where the work is split across threads, so results agree with the
// host within float rounding; data movement and conversion (write, gather, fill, fp8
// quantise-dequantise, argmax) agree bit for bit.
//
// Launchers throw std::invalid_argument for a descriptor the host op also rejects and that can be
// seen from the host (v_dim out of range, groups < 1, ...). Contract breaks that sit in device
// memory cannot be reported by a kernel; the kernels then skip the offending sequence/row instead
// of reading out of bounds where they can (documented per op). Launch errors are checked by the
// caller (cudaGetLastError after every launcher).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/op_args.cuh"

namespace kv::cuda {

// ---- KV cache ----
void write_kv(const WriteKvArgs& a, cudaStream_t stream);
// The production split-KV decode: kernels/cuda/paged_decode.cu picks a path (decode_*.cu).
void paged_decode(const PagedDecodeArgs& a, cudaStream_t stream);
void gather_kv(const GatherKvArgs& a, cudaStream_t stream);
void fill_blocks(const FillBlocksArgs& a, cudaStream_t stream);

// ---- attention on contiguous rows ----
void varlen_attention(const VarlenAttnArgs& a, cudaStream_t stream);
void merge_states(const MergeStatesArgs& a, cudaStream_t stream);

// ---- linear attention (recurrent state in the block pool) ----
void linear_attention(const LinearAttnArgs& a, cudaStream_t stream);

// ---- batch-wide ----
void quant_fp8(const QuantFp8Args& a, cudaStream_t stream);

// ---- the engine's bridge to a backend's conventions ----
void convert_rows(const ConvertRowsArgs& a, cudaStream_t stream);

// ---- the synthetic model's dense ops ----
void embed(const EmbedArgs& a, cudaStream_t stream);
void rms_norm(const RmsNormArgs& a, cudaStream_t stream);
void linear(const LinearArgs& a, cudaStream_t stream);
void argmax(const ArgmaxArgs& a, cudaStream_t stream);

// ---- raw fills ----
// fill_pattern of kernels/host/host_ops.h on device memory, byte for byte the same: nan / inf write
// the dtype's code, random_bits the splitmix64 stream of (seed, stream_id), zero writes zeros.
void fill_pattern(void* dst, size_t bytes, FillPattern pattern, DType dtype, uint64_t seed,
                  uint64_t stream_id, cudaStream_t stream);

}  // namespace kv::cuda
