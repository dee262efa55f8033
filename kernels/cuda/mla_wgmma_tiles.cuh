// mla_wgmma_tiles.cuh — the shared-memory tiles and warpgroup MMAs (wgmma, sm_90a) of the MLA
// decode path: layouts, matrix descriptors, the three GEMM chains and the fragment maps.
//
// Included by kernels/cuda/decode_mla_wgmma.cu (the kernel) and tests/bench/wgmma_probe.cu (which
// checks exactly these functions against a CPU loop), nvcc only. The wgmma functions assemble for
// sm_90a only: callers compile them under `#if defined(__CUDA_ARCH_FEAT_SM90_ALL)`.
//
// One layout for every 16-bit tile (Q: 64 heads x 576, K: 64 tokens x 576, P: 64 heads x 64):
// the wgmma "K-major, 128-byte swizzle" canonical layout. Features are cut into k-blocks of 64
// (128 bytes); k-block kb of all 64 rows is one 8 KB slab [row][128 B]; inside a row the 16-byte
// chunk c (features 8c..8c+7 of the block) sits at position c ^ (row & 7). The hardware applies
// that XOR to address bits 4-6 from bits 7-9, so every tile starts 1024-byte aligned.
//
//   S = Q·K^T : A = Q, B = K, both K-major (the contraction runs along the 128-byte rows);
//               k-step s (16 features) starts at kb = s / 4, byte 32 * (s % 4) of the row;
//               SBO (next 8 rows) = 1024 B, LBO unused for swizzled K-major (set to 16 B).
//   O = P·V   : B = V = features [256 w, 256 w + 256) of the same K tile, read MN-major
//               (transposed, imm-trans-b = 1): N (features) runs along the rows, K (tokens) across
//               them. LBO (next 64 features = next k-block) = 8192 B, SBO (next 8 tokens) = 1024 B;
//               k-step kk (16 tokens) starts 2048 * kk bytes in.
//   A = P     : from registers (warpgroup 0: its S accumulators repacked, see p_frag) or from the
//               K-major P tile (warpgroup 1).
//
// Accumulator fragment of m64nN (f32), thread t of the warpgroup, register i (0 .. N/2 - 1):
//   row = 16 (t / 32) + (t % 32) / 4 + 8 ((i / 2) % 2),  col = 8 (i / 4) + 2 (t % 4) + i % 2.
// A fragment of m64k16 from registers (16-bit, 4 registers of 2 elements, low half = lower k):
//   reg 0: (row r, k 2q, 2q+1), reg 1: (row r + 8, same k), reg 2: (row r, k 2q+8, 2q+9),
//   reg 3: (row r + 8, k 2q+8, 2q+9), with r = 16 (t / 32) + (t % 32) / 4, q = t % 4
// — the same as the accumulator of m64n16, so P's A fragments are S's accumulators, packed.
#pragma once

#include <cstdint>

#include "kernels/cuda/decode_device.cuh"  // pack2

namespace kv::cuda::decode_detail {

inline constexpr int kWgRows = 64;                  // rows of every tile: heads or tokens
inline constexpr int kKBlockBytes = kWgRows * 128;  // one 64-feature k-block of 64 rows: 8 KB

// Byte offset of element (row, feat) / of 16-byte chunk c (features 8c..8c+7) of a 64-row tile.
__host__ __device__ constexpr uint32_t sw128_off(int row, int feat) {
  return static_cast<uint32_t>((feat >> 6) * kKBlockBytes + row * 128 +
                               ((((feat >> 3) & 7) ^ (row & 7)) << 4) + (feat & 7) * 2);
}
__host__ __device__ constexpr uint32_t sw128_chunk(int row, int c) {
  return static_cast<uint32_t>((c >> 3) * kKBlockBytes + row * 128 + (((c & 7) ^ (row & 7)) << 4));
}

// ---- matrix descriptors (PTX "matrix descriptor": start >> 4 in bits 0-13, LBO >> 4 in 16-29,
// SBO >> 4 in 32-45, base offset 0 in 49-51, swizzle mode in 62-63 with 1 = 128 B) ----

__host__ __device__ constexpr uint64_t sw128_desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((smem_addr & 0x3FFFFu) >> 4) |
         (static_cast<uint64_t>((lbo & 0x3FFFFu) >> 4) << 16) |
         (static_cast<uint64_t>((sbo & 0x3FFFFu) >> 4) << 32) | (uint64_t{1} << 62);
}
// K-major operand (Q, K as B of Q·K^T, P): rows of 128 bytes, 8-row groups 1024 B apart.
__host__ __device__ constexpr uint64_t desc_kmajor(uint32_t smem_addr) {
  return sw128_desc(smem_addr, 16, 1024);
}
// MN-major operand (V as B of P·V): 64-feature groups 8192 B apart, 8-token groups 1024 B apart.
__host__ __device__ constexpr uint64_t desc_mnmajor(uint32_t smem_addr) {
  return sw128_desc(smem_addr, kKBlockBytes, 1024);
}
// Advancing a descriptor by a byte offset that keeps the address field from carrying (all tiles
// lie below 256 KB and offsets are multiples of 16) is adding offset / 16, as CUTLASS does.
__host__ __device__ constexpr uint64_t desc_add(uint64_t d, uint32_t bytes) {
  return d + (bytes >> 4);
}

// ---- fragment maps (see the header comment) ----

__host__ __device__ constexpr int acc_row(int t, int i) {
  return 16 * (t >> 5) + ((t & 31) >> 2) + 8 * ((i >> 1) & 1);
}
__host__ __device__ constexpr int acc_col(int t, int i) {
  return 8 * (i >> 2) + 2 * (t & 3) + (i & 1);
}

// A fragments of P for the 4 k-steps (16 tokens each) of P·V, from the m64n64 accumulator `p`.
template <bool kF16>
__device__ __forceinline__ void p_frag(const float (&p)[32], uint32_t (&a)[4][4]) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    a[kk][0] = pack2<kF16>(p[8 * kk + 0], p[8 * kk + 1]);  // row r,     tokens 16kk + 2q, +1
    a[kk][1] = pack2<kF16>(p[8 * kk + 2], p[8 * kk + 3]);  // row r + 8
    a[kk][2] = pack2<kF16>(p[8 * kk + 4], p[8 * kk + 5]);  // row r,     tokens 16kk + 8 + 2q, +1
    a[kk][3] = pack2<kF16>(p[8 * kk + 6], p[8 * kk + 7]);  // row r + 8
  }
}
// Where register j of k-step kk of p_frag lives in a 64 x 64 tile: (row, first column).
__host__ __device__ constexpr int pfrag_row(int t, int j) {
  return 16 * (t >> 5) + ((t & 31) >> 2) + 8 * (j & 1);
}
__host__ __device__ constexpr int pfrag_col(int t, int kk, int j) {
  return 16 * kk + 8 * (j >> 1) + 2 * (t & 3);
}

// P from registers (p_frag's layout, thread t of the warpgroup) into a K-major 64 x 64 tile.
__device__ __forceinline__ void store_p(uint8_t* sP, const uint32_t (&pa)[4][4], int t) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      *reinterpret_cast<uint32_t*>(sP + sw128_off(pfrag_row(t, j), pfrag_col(t, kk, j))) =
          pa[kk][j];
}

// ---- PTX wrappers ----

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Generic-proxy writes of shared memory (st.shared, finished cp.async) made visible to the async
// proxy that wgmma reads through: the writer executes it after its writes, before the barrier.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Named barriers: `count` threads in all, producers arrive, consumers sync.
__device__ __forceinline__ void named_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
// Keeps the compiler from moving reads/writes of accumulator registers across wgmma issue/wait.
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

#define KV_WG_ACC8(d, i)                                                                      \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define KV_WG_ACC32(d, i) \
  KV_WG_ACC8(d, i), KV_WG_ACC8(d, i + 8), KV_WG_ACC8(d, i + 16), KV_WG_ACC8(d, i + 24)
#define KV_WG_ACC128(d) \
  KV_WG_ACC32(d, 0), KV_WG_ACC32(d, 32), KV_WG_ACC32(d, 64), KV_WG_ACC32(d, 96)
#define KV_WG_R32                                                          \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define KV_WG_R128                                                                               \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                       \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "             \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "             \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "             \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "             \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "             \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

// d(64x64, f32) += A(64x16, smem K-major) · B(16x64, smem K-major); d = A·B when accumulate is 0.
template <bool kF16>
__device__ __forceinline__ void wgmma_64x64_ss(float (&d)[32], uint64_t da, uint64_t db,
                                               int accumulate = 1) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (kF16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" KV_WG_R32
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : KV_WG_ACC32(d, 0)
        : "l"(da), "l"(db), "r"(accumulate));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" KV_WG_R32
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : KV_WG_ACC32(d, 0)
        : "l"(da), "l"(db), "r"(accumulate));
  }
#endif
}

// d(64x256, f32) += A(64x16, registers) · B(16x256, smem MN-major: imm-trans-b = 1).
template <bool kF16>
__device__ __forceinline__ void wgmma_64x256_rs(float (&d)[128], const uint32_t (&a)[4],
                                                uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (kF16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {" KV_WG_R128
        "}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
        : KV_WG_ACC128(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {" KV_WG_R128
        "}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
        : KV_WG_ACC128(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
  }
#endif
}

// d(64x256, f32) += A(64x16, smem K-major) · B(16x256, smem MN-major: imm-trans-b = 1).
template <bool kF16>
__device__ __forceinline__ void wgmma_64x256_ss(float (&d)[128], uint64_t da, uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (kF16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {" KV_WG_R128
        "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
        : KV_WG_ACC128(d)
        : "l"(da), "l"(db), "r"(1));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {" KV_WG_R128
        "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
        : KV_WG_ACC128(d)
        : "l"(da), "l"(db), "r"(1));
  }
#endif
}

// ---- the GEMM chains of one 64-token tile (issue only: the caller fences, commits, waits) ----

// s += Q·K^T over 576 features: 36 k-steps (s = Q·K^T with `overwrite`: the first step does not
// read s, so s need not be zeroed by other instructions while earlier wgmmas are in flight).
// q_addr / k_addr: shared addresses of the tiles.
template <bool kF16>
__device__ __forceinline__ void qk_chain(float (&s)[32], uint32_t q_addr, uint32_t k_addr,
                                         bool overwrite = false) {
  const uint64_t dq = desc_kmajor(q_addr), dk = desc_kmajor(k_addr);
#pragma unroll
  for (int ks = 0; ks < 36; ++ks) {
    const uint32_t off = (ks >> 2) * kKBlockBytes + (ks & 3) * 32;
    wgmma_64x64_ss<kF16>(s, desc_add(dq, off), desc_add(dk, off), (ks == 0 && overwrite) ? 0 : 1);
  }
}

// o += P·V[:, 256 half .. +256] with P from registers: 4 k-steps of 16 tokens.
template <bool kF16>
__device__ __forceinline__ void pv_chain_rs(float (&o)[128], const uint32_t (&pa)[4][4],
                                            uint32_t k_addr, int half) {
  const uint64_t dv = desc_mnmajor(k_addr + half * 4 * kKBlockBytes);
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) wgmma_64x256_rs<kF16>(o, pa[kk], desc_add(dv, kk * 2048));
}

// o += P·V[:, 256 half .. +256] with P from its K-major tile at p_addr.
template <bool kF16>
__device__ __forceinline__ void pv_chain_ss(float (&o)[128], uint32_t p_addr, uint32_t k_addr,
                                            int half) {
  const uint64_t dp = desc_kmajor(p_addr);
  const uint64_t dv = desc_mnmajor(k_addr + half * 4 * kKBlockBytes);
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
    wgmma_64x256_ss<kF16>(o, desc_add(dp, kk * 32), desc_add(dv, kk * 2048));
}

}  // namespace kv::cuda::decode_detail
