// block_count.cuh — how many cache blocks of `block_size` token entries hold `tokens` tokens: the
// one ceil-division that block tables, the scheduler, capacity checks and plugins all size by.
// Host and device (KV_HD), C++17 (the FlashInfer plugin builds at 17).
#pragma once

#include <type_traits>

#include "hd.cuh"

namespace kv {

// (tokens + block_size - 1) / block_size in the type that expression has (int32 for two int32s,
// int64 when either is), so a caller's overflow and rounding stay what they were. 0 tokens need 0
// blocks; block_size must be positive. Negative token counts round toward zero as `/` does:
// callers that can see them (padded rows) check first.
template <typename Tokens, typename BlockSize>
KV_HD constexpr auto blocks_for_tokens(Tokens tokens, BlockSize block_size) {
  static_assert(std::is_integral_v<Tokens> && std::is_integral_v<BlockSize>,
                "blocks_for_tokens: integer token counts and block sizes");
  return (tokens + block_size - 1) / block_size;
}

}  // namespace kv
