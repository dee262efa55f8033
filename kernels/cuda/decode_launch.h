// decode_launch.h — the host side that the launchers of the CUDA paged-decode paths share:
// descriptor checks (power-of-two blocks, 16-byte alignment, the MLA shape), grid sizes, the
// shared-memory opt-in, the programmatic dependent launch and launch errors. The device helpers
// the kernels share are in decode_device.cuh.
//
// Included by the decode files of kernels/cuda (paged_decode.cu and decode_*.cu). Its names live
// in kv::cuda::decode_detail rather than an anonymous namespace because several .cu files include
// it: host functions are inline (aligned16, the one helper device code uses too, is KV_HD), so
// every file's copy is the same entity, and allow_smem's per-device "already granted" table is one
// object for the whole library. Device attributes come from device_attributes.h.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "kernels/cuda/device_attributes.h"
#include "kernels/cuda/launch_error.h"
#include "kernels/hd.cuh"
#include "kernels/op_args.cuh"
#include "kernels/paged_kv.cuh"

namespace kv::cuda::decode_detail {

// Throws LaunchError when the launch just made (`what`, a kernel) failed.
inline void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw LaunchError(std::string("cuda paged_decode: ") + what + " launch failed: " +
                      cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

inline bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }
inline int log2_of(int64_t x) {
  int l = 0;
  while ((int64_t{1} << l) < x) ++l;
  return l;
}
KV_HD bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

inline int v_dim_of(const PagedDecodeArgs& a) { return a.v_dim == 0 ? a.cache.head_dim : a.v_dim; }

// kernel<<<ctas, threads, smem, stream>>>(args...), as a programmatic dependent launch when the
// device has compute capability >= 9.0 (plain stream order otherwise): the kernel's CTAs may be
// scheduled as soon as every CTA of the grid before it has called allow_dependent_launch (or
// exited), and must call wait_for_prior_grids (decode_device.cuh) before reading anything that
// grid, or any grid before it, writes. The launch error is left for check_launch.
template <typename... P, typename... A>
void launch_dependent(void (*kernel)(P...), unsigned ctas, int threads, int smem,
                      cudaStream_t stream, A... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(ctas);
  cfg.blockDim = dim3(static_cast<unsigned>(threads));
  cfg.dynamicSmemBytes = static_cast<size_t>(smem);
  cfg.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  if (compute_capability_major() >= 9) {
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  (void)cudaLaunchKernelEx(&cfg, kernel, args...);
}

// Raises kernel K's dynamic shared-memory limit to at least `bytes` on the current device, once
// per device and size (a function attribute, not a stream operation: legal while a graph is being
// captured).
template <auto K>
void allow_smem(int bytes) {
  if (bytes <= 48 * 1024) return;
  static std::atomic<int> granted[kMaxDevices] = {};
  std::atomic<int>& g = granted[current_device()];
  if (g.load(std::memory_order_relaxed) >= bytes) return;
  if (cudaFuncSetAttribute(K, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) != cudaSuccess) {
    const cudaError_t e = cudaGetLastError();
    throw LaunchError(std::string("cuda paged_decode: cannot raise shared memory to ") +
                      std::to_string(bytes) + " bytes: " + cudaGetErrorString(e));
  }
  g.store(bytes, std::memory_order_relaxed);
}

inline bool cache_aligned16(const PagedKv& c, bool check_v) {
  const int64_t es = dtype_size(c.dtype);
  auto ok = [&](const void* p, int64_t sb, int64_t st, int64_t sh) {
    return aligned16(p) && (sb * es) % 16 == 0 && (st * es) % 16 == 0 && (sh * es) % 16 == 0;
  };
  return ok(c.k, c.k_stride_block, c.k_stride_token, c.k_stride_head) &&
         (!check_v || ok(c.v, c.v_stride_block, c.v_stride_token, c.v_stride_head));
}

// What both MLA paths (mla_tc, mla_wgmma) need of the descriptor: head_dim 576 with v_dim 512,
// V the latent K itself, a bf16 or fp8 cache, power-of-two blocks, 16-byte alignment, and `smem`
// bytes of opt-in shared memory. On false, *why (when given) says what is missing.
inline bool mla_descriptor_ok(const PagedDecodeArgs& a, int smem, std::string* why) {
  const PagedKv& c = a.cache;
  auto no = [&](const char* r) {
    if (why) *why = r;
    return false;
  };
  if (c.dtype != DType::bf16 && c.dtype != DType::fp8_e4m3)
    return no("cache dtype is not bf16/fp8");
  if (c.head_dim != 576 || v_dim_of(a) != 512) return no("not head_dim 576 with v_dim 512");
  if (c.v != c.k || c.v_stride_block != c.k_stride_block || c.v_stride_token != c.k_stride_token ||
      c.v_stride_head != c.k_stride_head)
    return no("V is not the latent K (cache.v != cache.k or different strides)");
  if (!is_pow2(c.block_size)) return no("block size is not a power of two");
  if (!cache_aligned16(c, false)) return no("cache pointer/strides are not 16-byte aligned");
  if (smem_optin() < smem) return no("device shared memory below 227 KB");
  return true;
}

// CTAs of a grid of (row, split, kv head, block of `heads` q heads), the order head_block_cta
// (decode_device.cuh) decodes.
inline int64_t head_block_grid(const PagedDecodeArgs& a, int heads) {
  const int G = a.num_q_heads / a.cache.num_kv_heads;
  const int64_t nhb = (G + heads - 1) / heads;
  return static_cast<int64_t>(a.num_rows) * a.max_splits * a.cache.num_kv_heads * nhb;
}

}  // namespace kv::cuda::decode_detail
