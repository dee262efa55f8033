// decode_splits.h — the built-in decode planner: the split-KV schedule (kDecodeMetaHeader format,
// op_args.cuh) that the built-in paged_decode reads, computed on the host from the sequence
// lengths. The engine's decode plan step (DecodePlanArgs) runs it on the built-in devices; a
// backend plugin plans with its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/op_args.cuh"

namespace kv {

// One chunk size (a multiple of the block size) for the whole batch, as flash-decoding schedulers
// pick it: enough splits for the longest row to spread over max_splits. Padded rows (seq_len 0)
// get 0 splits. uniform (engine.decode_splits "uniform"): every other row gets the longest row's
// count, as fixed-split schedulers launch them, so a shorter row's last splits hold no tokens.
std::vector<int32_t> plan_decode_splits(const std::vector<int32_t>& seq_lens, int32_t block_size,
                                        int32_t max_splits, bool uniform = false);

// The fp8 decode path's own metadata builder, as FlashMLA's fp8 path has its own: it balances the
// batch's KV blocks over kFp8WorkParts work partitions instead of splitting the longest row over
// max_splits, so its plans differ from plan_decode_splits' whenever the batch is uneven. Same
// format and the same limit of max_splits per row.
inline constexpr int32_t kFp8WorkParts = 8;
std::vector<int32_t> plan_decode_splits_fp8(const std::vector<int32_t>& seq_lens,
                                            int32_t block_size, int32_t max_splits,
                                            bool uniform = false);

// The built-in planner for a cache of this dtype: the fp8 builder for fp8_e4m3, else
// plan_decode_splits.
std::vector<int32_t> plan_decode_splits_for(DType cache_dtype,
                                            const std::vector<int32_t>& seq_lens,
                                            int32_t block_size, int32_t max_splits,
                                            bool uniform = false);

// Bytes of the plan for up to max_rows decode rows.
inline size_t decode_plan_bytes(int32_t max_rows) {
  return (static_cast<size_t>(max_rows) + kDecodeMetaHeader) * sizeof(int32_t);
}

// Bytes of the built-in paged_decode's scratch: partial outputs [rows][max_splits][num_q_heads]
// [v_dim] floats, then their lse [rows][max_splits][num_q_heads].
inline size_t decode_workspace_bytes(int64_t rows, int64_t num_q_heads, int64_t v_dim,
                                     int64_t max_splits) {
  return static_cast<size_t>(rows * max_splits * num_q_heads * (v_dim + 1)) * sizeof(float);
}

}  // namespace kv
