// fi_fastdiv.cuh — FlashInfer's uint_fastdiv for toolkits whose CCCL lacks cuda::fast_mod_div.
//
// FlashInfer 0.7.2's fastdiv.cuh wraps cuda::fast_mod_div (CCCL 3.1 and later); CUDA 13.0 ships
// CCCL 3.0.1 without it. Included before any FlashInfer header (every file of this plugin does:
// kernel parameters carry uint_fastdiv by value, so all of them must see the same definition),
// this header either lets the real one through or takes its include guard and defines the same
// interface: a default of d = 0 that leaves n / d = n and n % d = n, as upstream does, and an
// exact quotient for every 32-bit n and d > 1 by q = (M * n) >> 64 with M = ceil(2^64 / d)
// (Lemire, Kaser and Kurz, "Faster remainder by direct computation", 2019: exact because M carries
// 64 fraction bits for 32-bit operands).
#pragma once

#include <cstdint>

#if __has_include(<cuda/__cmath/fast_modulo_division.h>)
#include <flashinfer/fastdiv.cuh>  // the toolkit has cuda::fast_mod_div: FlashInfer's own
#else
#define FLASHINFER_FASTDIV_CUH_  // FlashInfer's include guard: its header becomes empty

namespace flashinfer {

struct uint_fastdiv {
  uint32_t d_ = 0;
  uint64_t m_ = 0;  // ceil(2^64 / d), for d > 1

  __host__ __device__ uint_fastdiv() {}
  __host__ uint_fastdiv(uint32_t d) : d_(d), m_(d > 1 ? ~0ull / d + 1 : 0) {}

  __host__ __device__ __forceinline__ operator unsigned int() const { return d_; }

  __host__ __device__ __forceinline__ void divmod(uint32_t n, uint32_t& q, uint32_t& r) const {
    if (d_ <= 1) {
      q = n;
    } else {
#ifdef __CUDA_ARCH__
      q = static_cast<uint32_t>(__umul64hi(m_, static_cast<uint64_t>(n)));
#else
      q = static_cast<uint32_t>((static_cast<unsigned __int128>(m_) * n) >> 64);
#endif
    }
    r = n - q * d_;
  }
};

__host__ __device__ __forceinline__ uint32_t operator/(const uint32_t n, const uint_fastdiv& d) {
  uint32_t q, r;
  d.divmod(n, q, r);
  return q;
}

__host__ __device__ __forceinline__ uint32_t operator%(const uint32_t n, const uint_fastdiv& d) {
  uint32_t q, r;
  d.divmod(n, q, r);
  return r;
}

}  // namespace flashinfer
#endif
