// fill_blocks.cpp — host op: zero_blocks / poison_blocks, and the pattern fill they share with
// the host device's fill().
//
// A page is block_size * kv_heads * head_dim elements starting at k_offset(block, 0, 0, 0) (or
// v_offset), contiguous in both layouts make_paged_kv builds. Patterns are written as codes of the
// cache dtype, so a poisoned bf16 block reads back as bf16 NaN, not as two halves of an f32 NaN.
#include <algorithm>
#include <cstring>

#include "kernels/fill_codes.h"
#include "kernels/host/host_ops.h"
#include "kernels/host/poll.h"

namespace kv::host {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void fill_code(unsigned char* dst, size_t bytes, uint32_t code, int size) {
  unsigned char elem[4];
  memcpy(elem, &code, 4);  // little-endian: the low `size` bytes are the element
  for (size_t i = 0; i < bytes; ++i) dst[i] = elem[i % size];
}

// Bytes filled between two poll points (poll.h): a large step's output buffers are gigabytes.
// A whole number of elements and of random_bits' 8-byte words, so chunks write what one pass
// would.
constexpr size_t kFillChunk = size_t{1} << 20;

// `state`: random_bits' stream, carried from one chunk to the next.
void fill_chunk(unsigned char* d, size_t bytes, FillPattern pattern, DType dtype,
                uint64_t& state) {
  switch (pattern) {
    case FillPattern::zero:
      memset(d, 0, bytes);
      break;
    case FillPattern::nan:
      fill_code(d, bytes, nan_code(dtype), dtype_size(dtype));
      break;
    case FillPattern::inf:
      fill_code(d, bytes, inf_code(dtype), dtype_size(dtype));
      break;
    case FillPattern::random_bits: {
      size_t i = 0;
      for (; i + 8 <= bytes; i += 8) {
        const uint64_t r = splitmix64(state);
        memcpy(d + i, &r, 8);
      }
      if (i < bytes) {
        const uint64_t r = splitmix64(state);
        memcpy(d + i, &r, bytes - i);
      }
      break;
    }
  }
}

}  // namespace

uint32_t nan_code(DType t) { return fill_codes(t).nan; }
uint32_t inf_code(DType t) { return fill_codes(t).inf; }

void fill_pattern(void* dst, size_t bytes, FillPattern pattern, DType dtype, uint64_t seed,
                  uint64_t stream) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  uint64_t state = seed;
  state = splitmix64(state) ^ stream;  // decorrelate (seed, stream) pairs
  for (size_t at = 0; at < bytes; at += kFillChunk) {
    const size_t n = std::min(kFillChunk, bytes - at);
    poll_point(static_cast<int64_t>(n));  // --max-seconds
    fill_chunk(d + at, n, pattern, dtype, state);
  }
}

void fill_blocks(const FillBlocksArgs& a) {
  const PagedKv& c = a.cache;
  const int esize = dtype_size(c.dtype);
  const size_t page_bytes = static_cast<size_t>(page_elems(c)) * esize;
  for (int32_t i = 0; i < a.num_ids; ++i) {
    const int64_t b = a.block_ids[i];
    char* kp = static_cast<char*>(c.k) + k_offset(c, b, 0, 0, 0) * esize;
    char* vp = static_cast<char*>(c.v) + v_offset(c, b, 0, 0, 0) * esize;
    fill_pattern(kp, page_bytes, a.pattern, c.dtype, a.seed, 2 * static_cast<uint64_t>(b));
    fill_pattern(vp, page_bytes, a.pattern, c.dtype, a.seed, 2 * static_cast<uint64_t>(b) + 1);
  }
}

}  // namespace kv::host
