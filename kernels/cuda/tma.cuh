// tma.cuh — the tensor memory accelerator (TMA, sm_90) as the mla_wgmma path uses it: a tensor
// map over the paged cache (host), mbarriers and the 4-d tiled copy that completes on one (device).
//
// The map: a bf16 cache seen as a 4-d tensor (feature, entry, kv head, block), innermost
// first, with the descriptor's own strides (so every layout kvcheck builds is covered) and a box of
// 64 features x `rows` entries, stored with the 128-byte swizzle: the box lands in shared memory in
// exactly the K-major SW128 tile layout of mla_wgmma_tiles.cuh when its destination is a row of a
// 1024-byte aligned tile and `rows` is a multiple of 8. A block coordinate past the cache's last
// block is out of bounds: the box is zero-filled, and its bytes still count on the mbarrier.
//
// Encoding goes through the driver's cuTensorMapEncodeTiled, reached with
// cudaGetDriverEntryPointByVersion: no link against libcuda.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/paged_kv.cuh"

namespace kv::cuda::decode_detail {

// A map over `c`'s K (bf16) with boxes of 64 features x `rows` entries; false (and `map`
// unspecified) where the driver has no encoder or refuses the shape or strides.
inline bool encode_cache_map(const PagedKv& c, int rows, CUtensorMap* map) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      fn = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  if (encode == nullptr) return false;
  if (c.dtype != DType::bf16) return false;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(c.head_dim),
                              static_cast<cuuint64_t>(c.block_size),
                              static_cast<cuuint64_t>(c.num_kv_heads),
                              static_cast<cuuint64_t>(c.num_blocks)};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(c.k_stride_token) * 2,
                                 static_cast<cuuint64_t>(c.k_stride_head) * 2,
                                 static_cast<cuuint64_t>(c.k_stride_block) * 2};
  const cuuint32_t box[4] = {64, static_cast<cuuint32_t>(rows), 1, 1};
  const cuuint32_t unit[4] = {1, 1, 1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, c.k, dims, strides, box, unit,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// ---- device side ----

// mbarriers (shared::cta, 8 bytes): initialised by one thread, made visible to the async proxy with
// fence_mbar_init, before any other thread or the TMA engine uses them.
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival that also expects `bytes` of transactions in the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "TMA_MBAR_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra TMA_MBAR_WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// The box at coordinates (c0, c1, c2, c3) of `map` into shared memory at `dst`, completing on
// `bar`. `map` is the address of a __grid_constant__ kernel parameter.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// `bytes` (a multiple of 16) from shared memory at `src` to global memory at `dst` (16-byte
// aligned) by the TMA engine, in this thread's bulk async-group; bulk_commit closes the group and
// bulk_wait_read waits until every committed group has read its shared-memory source (the
// global writes complete on their own; a kernel's writes are all visible when it ends).
__device__ __forceinline__ void bulk_store(void* dst, uint32_t src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst),
               "r"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}

}  // namespace kv::cuda::decode_detail
