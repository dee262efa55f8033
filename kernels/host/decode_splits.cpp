// decode_splits.cpp — the built-in decode planner (decode_splits.h).
#include "kernels/decode_splits.h"

#include <algorithm>

#include "kernels/block_count.cuh"

namespace kv {
namespace {

int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

// The metadata buffer's contents (kDecodeMetaHeader) for one chunk size: padded rows get 0 splits;
// uniform: every other row the batch's largest count.
std::vector<int32_t> split_meta(const std::vector<int32_t>& seq_lens, int32_t chunk,
                                bool uniform) {
  std::vector<int32_t> meta(kDecodeMetaHeader + seq_lens.size());
  meta[0] = chunk;
  int32_t most = 0;
  for (size_t r = 0; r < seq_lens.size(); ++r) {
    meta[kDecodeMetaHeader + r] = seq_lens[r] > 0 ? ceil_div(seq_lens[r], chunk) : 0;
    most = std::max(most, meta[kDecodeMetaHeader + r]);
  }
  if (uniform)
    for (size_t r = 0; r < seq_lens.size(); ++r)
      if (seq_lens[r] > 0) meta[kDecodeMetaHeader + r] = most;
  return meta;
}

}  // namespace

std::vector<int32_t> plan_decode_splits(const std::vector<int32_t>& seq_lens, int32_t block_size,
                                        int32_t max_splits, bool uniform) {
  // One chunk size for the whole batch, as flash-decoding schedulers pick it: enough splits for
  // the longest row to spread over max_splits, never less than one block.
  int32_t longest = 0;
  for (int32_t s : seq_lens) longest = std::max(longest, s);
  const int32_t blocks = std::max(1, blocks_for_tokens(longest, block_size));
  return split_meta(seq_lens, ceil_div(blocks, max_splits) * block_size, uniform);
}

std::vector<int32_t> plan_decode_splits_fp8(const std::vector<int32_t>& seq_lens,
                                            int32_t block_size, int32_t max_splits, bool uniform) {
  int32_t longest = 0;
  int64_t total_blocks = 0;
  for (int32_t s : seq_lens) {
    longest = std::max(longest, s);
    total_blocks += blocks_for_tokens(s, block_size);
  }
  const int32_t longest_blocks = std::max(1, blocks_for_tokens(longest, block_size));
  const auto balanced = static_cast<int32_t>((total_blocks + kFp8WorkParts - 1) / kFp8WorkParts);
  // At least what keeps the longest row within max_splits; otherwise an equal share of the work.
  const int32_t chunk_blocks = std::max({1, ceil_div(longest_blocks, max_splits), balanced});
  return split_meta(seq_lens, chunk_blocks * block_size, uniform);
}

std::vector<int32_t> plan_decode_splits_for(DType cache_dtype,
                                            const std::vector<int32_t>& seq_lens,
                                            int32_t block_size, int32_t max_splits, bool uniform) {
  return cache_dtype == DType::fp8_e4m3
             ? plan_decode_splits_fp8(seq_lens, block_size, max_splits, uniform)
             : plan_decode_splits(seq_lens, block_size, max_splits, uniform);
}

}  // namespace kv
