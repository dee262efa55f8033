// host_ops.h — the host (CPU) implementations of every op in kernels/op_args.cuh.
//
// These are what HostDevice runs, and the behaviour the CUDA kernels must match: same descriptors,
// same addressing (k_offset / v_offset of paged_kv.cuh), same tile granularity where it decides
// whether a bug shows, float accumulation as GPU kernels do. One file per op family; no threads.
// Ops may throw std::invalid_argument when a descriptor breaks its own contract (e.g. a decode
// row asks for more splits than the workspace holds), where a GPU kernel would write out of bounds.
// The ops whose work grows with a step's rows call poll.h's poll_point() between rows (or tiles,
// or megabytes of a fill), so that a caller can end them mid-op (--max-seconds).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/op_args.cuh"

namespace kv::host {

// ---- KV cache ----
void write_kv(const WriteKvArgs& a);
void paged_decode(const PagedDecodeArgs& a);
void gather_kv(const GatherKvArgs& a);
void fill_blocks(const FillBlocksArgs& a);

// ---- attention on contiguous rows ----
void varlen_attention(const VarlenAttnArgs& a);
void merge_states(const MergeStatesArgs& a);

// ---- linear attention (recurrent state in the block pool) ----
void linear_attention(const LinearAttnArgs& a);

// ---- batch-wide ----
void quant_fp8(const QuantFp8Args& a);

// ---- the fused paged prefill: a backend's op; this is its spec, composed of the ops above ----
void paged_prefill(const PagedPrefillArgs& a);

// ---- the engine's bridge to a backend's conventions ----
void convert_rows(const ConvertRowsArgs& a);

// ---- the synthetic model's dense ops ----
void embed(const EmbedArgs& a);
void rms_norm(const RmsNormArgs& a);
void linear(const LinearArgs& a);
void argmax(const ArgmaxArgs& a);

// Fill `bytes` bytes with `pattern` as elements of `dtype`: nan / inf write the dtype's quiet-NaN
// / +Inf code (fp8 e4m3 has no Inf: NaN), random_bits writes bytes from a splitmix64 stream seeded
// by `seed` and `stream` (so each block gets its own deterministic bytes), zero writes zeros. A
// tail shorter than one element gets the leading bytes of the element code.
void fill_pattern(void* dst, size_t bytes, FillPattern pattern, DType dtype, uint64_t seed,
                  uint64_t stream);

// The quiet-NaN / +Inf code of a dtype as little-endian bytes (fill_blocks' contract).
uint32_t nan_code(DType t);
uint32_t inf_code(DType t);

}  // namespace kv::host
