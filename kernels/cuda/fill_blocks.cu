// fill_blocks.cu — CUDA op: zero_blocks / poison_blocks (fill_blocks), and fill_pattern, the raw
// buffer fill that CudaDevice::fill and memset_async use.
//
// Reference: kernels/host/fill_blocks.cpp. Both devices write the same bytes, so a poisoned block
// reads back identically wherever the run happens:
//   - zero / nan / inf: the dtype's element code (kernels/fill_codes.h) repeated, a tail
//     shorter than one element getting the leading bytes of the code. Every 8-byte word of the
//     pattern is the same (8 is a multiple of every element size).
//   - random_bits: the host draws 8-byte words from a sequential splitmix64 stream. splitmix64 is
//     counter-based: word w is mix(s0 + (w + 1) * golden) with s0 = mix(seed + golden) ^ stream,
//     so each thread computes its own words directly, bit for bit the host's stream.
// Kernels: fill_span writes one pattern over [dst, dst + bytes), a 64-bit store per word where
// the address is 8-byte aligned and the word is whole, byte stores otherwise (fp8 pages can start
// at any byte). fill_blocks runs K pages first, then V pages, in two launches: the host writes
// K(b) then V(b) per block, and with MLA's cache.v == cache.k the two pages are the same memory, so
// V's bytes must land last; one launch over both would race.
#include <cstdint>
#include <stdexcept>

#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/fill_codes.h"

namespace kv::cuda {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

__host__ __device__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// One pattern: a constant word (zero / nan / inf), or the random stream starting at s0.
struct FillSpec {
  bool random = false;
  uint64_t word = 0;
  uint64_t s0 = 0;
};

FillSpec make_spec(FillPattern p, DType t, uint64_t seed) {
  FillSpec s;
  switch (p) {
    case FillPattern::zero:
      break;
    case FillPattern::nan:
    case FillPattern::inf: {
      const uint64_t c = p == FillPattern::nan ? fill_codes(t).nan : fill_codes(t).inf;
      const int size = dtype_size(t);
      s.word = size == 4 ? (c | c << 32) : size == 2 ? c * 0x0001000100010001ull
                                                     : c * 0x0101010101010101ull;
      break;
    }
    case FillPattern::random_bits:
      s.random = true;
      s.s0 = mix64(seed + kGolden);  // the host's first splitmix64 call; ^ stream comes per span
      break;
  }
  return s;
}

// Words [first, words) of the pattern with step `step` into dst (bytes long). s0 already
// includes the stream.
__device__ void fill_span(unsigned char* dst, uint64_t bytes, const FillSpec& f, uint64_t s0,
                          uint64_t first, uint64_t step) {
  const uint64_t words = (bytes + 7) / 8;
  const bool aligned = (reinterpret_cast<uintptr_t>(dst) & 7u) == 0;
  for (uint64_t w = first; w < words; w += step) {
    const uint64_t val = f.random ? mix64(s0 + (w + 1) * kGolden) : f.word;
    const uint64_t b0 = w * 8;
    if (aligned && b0 + 8 <= bytes) {
      *reinterpret_cast<uint64_t*>(dst + b0) = val;
    } else {
      for (int k = 0; k < 8 && b0 + k < bytes; ++k)
        dst[b0 + k] = static_cast<unsigned char>(val >> (8 * k));  // little-endian, as memcpy
    }
  }
}

__global__ void fill_pattern_kernel(unsigned char* dst, uint64_t bytes, FillSpec f, uint64_t s0) {
  fill_span(dst, bytes, f, s0, static_cast<uint64_t>(global_thread()),
            static_cast<uint64_t>(global_stride()));
}

// One launch per side (K or V): blockIdx.y walks the block ids, x the words of a page.
__global__ void fill_pages_kernel(PagedKv c, const int32_t* ids, int32_t num_ids, FillSpec f,
                                  bool v_side) {
  const int esize = dtype_size(c.dtype);
  const uint64_t page_bytes = static_cast<uint64_t>(page_elems(c)) * esize;
  for (int32_t i = blockIdx.y; i < num_ids; i += gridDim.y) {
    const int64_t b = ids[i];
    unsigned char* page =
        v_side ? static_cast<unsigned char*>(c.v) + v_offset(c, b, 0, 0, 0) * esize
               : static_cast<unsigned char*>(c.k) + k_offset(c, b, 0, 0, 0) * esize;
    const uint64_t stream = 2 * static_cast<uint64_t>(b) + (v_side ? 1 : 0);
    fill_span(page, page_bytes, f, f.s0 ^ stream, static_cast<uint64_t>(blockIdx.x) * blockDim.x +
                                                      threadIdx.x,
              static_cast<uint64_t>(gridDim.x) * blockDim.x);
  }
}

}  // namespace

void fill_pattern(void* dst, size_t bytes, FillPattern pattern, DType dtype, uint64_t seed,
                  uint64_t stream_id, cudaStream_t stream) {
  if (bytes == 0) return;
  const FillSpec f = make_spec(pattern, dtype, seed);
  const int64_t words = static_cast<int64_t>((bytes + 7) / 8);
  fill_pattern_kernel<<<grid_for(words), kThreads, 0, stream>>>(static_cast<unsigned char*>(dst),
                                                                 bytes, f, f.s0 ^ stream_id);
}

void fill_blocks(const FillBlocksArgs& a, cudaStream_t stream) {
  const PagedKv& c = a.cache;
  if (a.num_ids <= 0 || page_elems(c) <= 0) return;
  const FillSpec f = make_spec(a.pattern, c.dtype, a.seed);
  const int64_t page_words = (page_elems(c) * dtype_size(c.dtype) + 7) / 8;
  // x covers one page (capped), y the ids (capped: the kernel loops over the rest).
  const unsigned gx = static_cast<unsigned>(std::min<int64_t>((page_words + kThreads - 1) / kThreads,
                                                              64));
  const unsigned gy = static_cast<unsigned>(std::min<int32_t>(a.num_ids, 65535));
  const dim3 grid(std::max(1u, gx), gy);
  fill_pages_kernel<<<grid, kThreads, 0, stream>>>(c, a.block_ids, a.num_ids, f, false);
  fill_pages_kernel<<<grid, kThreads, 0, stream>>>(c, a.block_ids, a.num_ids, f, true);
}

}  // namespace kv::cuda
