// decode_device.cuh — the device code that the CUDA paged-decode paths share: reading the
// device-side split plan, where a finished split state goes, the programmatic-launch waits, and
// the PTX wrappers of the tensor-core paths (cp.async, ldmatrix, mma.sync). The host side of their
// launchers is decode_launch.h.
//
// Included by the decode kernel files of kernels/cuda (decode_*.cu), nvcc only; it is built with
// each of them (kv_cuda_kernels, the top-level CMakeLists' glob of kernels/cuda/*.cu). Its names
// live in kv::cuda::decode_detail rather than an anonymous namespace because several .cu files
// include it: every function is __forceinline__, so every file's copy is the same entity.
//
// Why the split plan is read on the device, why a padded row writes nothing and why a broken plan
// gives NaN: the header comment of kernels/cuda/paged_decode.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/attn_state.cuh"
#include "kernels/op_args.cuh"
#include "kernels/paged_kv.cuh"

namespace kv::cuda::decode_detail {

// What the CTA of (row, split) has to do, read from the device-side plan exactly as the host op
// reads it. `fill_zero` / `fill_nan` are done by the split-0 CTA of a row only.
struct Split {
  enum Kind : int { skip, fill_zero, fill_nan, empty, attend };
  Kind kind = skip;
  int32_t num_splits = 0;
  int32_t start = 0, end = 0;  // tokens [start, end) of the row, end <= seq_len (an int32)
};

__device__ __forceinline__ Split read_split(const PagedDecodeArgs& a, int row, int s) {
  Split r;
  const int64_t seq_len = a.seq_lens[row];
  if (seq_len <= 0) return r;  // a padded row writes nothing
  const int32_t ns = a.split_meta[kDecodeMetaHeader + row];
  const int64_t chunk = a.split_meta[0];
  r.num_splits = ns;
  if (ns > a.max_splits || (ns > 0 && chunk <= 0)) {  // the host throws: make it loud instead
    r.kind = s == 0 ? Split::fill_nan : Split::skip;
    return r;
  }
  if (ns <= 0) {  // the host merges zero states: output 0
    r.kind = s == 0 ? Split::fill_zero : Split::skip;
    return r;
  }
  if (s >= ns) return r;
  const int64_t start = s * chunk;  // past seq_len for an empty split; clamped below
  r.start = static_cast<int32_t>(min(start, seq_len));
  r.end = static_cast<int32_t>(min(start + chunk, seq_len));
  r.kind = r.start < r.end ? Split::attend : Split::empty;
  return r;
}

__device__ __forceinline__ int64_t partial_index(const PagedDecodeArgs& a, int row, int s, int h) {
  return (static_cast<int64_t>(row) * a.max_splits + s) * a.num_q_heads + h;
}

// Where the finished state of (row, split, head) goes: the workspace, or, for a row with one
// split, `out` as the host's merge of that state with the empty one writes it (wa * 0 + wb * o,
// which is o for a finite lse and keeps NaN visible).
struct StateSink {
  float* o = nullptr;
  float* lse = nullptr;  // null when direct
  MergeWeights w{};
  bool direct = false;
  __device__ __forceinline__ float value(float v) const {
    return direct ? w.wa * 0.0f + w.wb * v : v;
  }
  __device__ __forceinline__ void put(int i, float v) const { o[i] = value(v); }
  __device__ __forceinline__ void put_lse(float l) const {
    if (!direct) *lse = l;
  }
};

// The vd output values of (row, split, head): in `out` for a row with one split, else in the
// workspace.
__device__ __forceinline__ float* state_out(const PagedDecodeArgs& a, int row, int s, int ns, int h,
                                            int vd) {
  if (ns == 1) return a.out + row * a.out_row_stride + static_cast<int64_t>(h) * vd;
  return a.partial_out + partial_index(a, row, s, h) * vd;
}

__device__ __forceinline__ StateSink state_sink(const PagedDecodeArgs& a, int row, int s, int ns,
                                                int h, int vd, float lse) {
  StateSink k;
  k.direct = ns == 1;
  k.o = state_out(a, row, s, ns, h, vd);
  if (k.direct) {
    k.w = merge_weights(-INFINITY, lse);
  } else {
    k.lse = a.partial_lse + partial_index(a, row, s, h);
  }
  return k;
}

// The CTA-wide writes that need no attention: a row the plan gives 0 splits (zeros) or a broken
// plan (NaN) for heads [h0, h0 + nh), and the empty state (0, -inf) of a split past the row's end.
__device__ __forceinline__ void fill_out_heads(const PagedDecodeArgs& a, int row, int h0, int nh,
                                               int vd, float v) {
  float* o = a.out + row * a.out_row_stride + static_cast<int64_t>(h0) * vd;
  for (int i = threadIdx.x; i < nh * vd; i += blockDim.x) o[i] = v;
}

__device__ __forceinline__ void write_empty_split(const PagedDecodeArgs& a, int row, int s, int ns,
                                                  int h0, int nh, int vd) {
  for (int h = h0; h < h0 + nh; ++h) {
    const StateSink k = state_sink(a, row, s, ns, h, vd, -INFINITY);
    for (int i = threadIdx.x; i < vd; i += blockDim.x) k.put(i, 0.0f);
    if (threadIdx.x == 0) k.put_lse(-INFINITY);
  }
}

// Every path's first step after read_split: the CTA-wide cases that need no attention (a CTA past
// its row's splits or of a padded row does nothing; split 0 of a row with 0 splits or a broken
// plan fills heads [h0, h0 + nh) with zeros or NaN; a split past the row's end leaves the empty
// state). True when the CTA is done.
__device__ __forceinline__ bool finish_without_attention(const PagedDecodeArgs& a, const Split& sp,
                                                         int row, int s, int h0, int nh, int vd) {
  if (sp.kind == Split::skip) return true;
  if (sp.kind == Split::fill_zero || sp.kind == Split::fill_nan) {
    fill_out_heads(a, row, h0, nh, vd, sp.kind == Split::fill_nan ? NAN : 0.0f);
    return true;
  }
  if (sp.kind == Split::empty) {
    write_empty_split(a, row, s, sp.num_splits, h0, nh, vd);
    return true;
  }
  return false;
}

// The MLA paths' grid: CTA = (row, split, kv head, block of `heads` q heads), fastest first.
struct HeadBlockCta {
  int row, s, kvh;
  int h0;  // q head of the CTA's local row 0
  int nh;  // real heads of this CTA (the last block of a group may be partial)
};
__device__ __forceinline__ HeadBlockCta head_block_cta(const PagedDecodeArgs& a, int heads) {
  const int G = a.num_q_heads / a.cache.num_kv_heads;
  const int nhb = (G + heads - 1) / heads;
  int idx = blockIdx.x;
  const int hb = idx % nhb;
  idx /= nhb;
  HeadBlockCta t;
  t.kvh = idx % a.cache.num_kv_heads;
  idx /= a.cache.num_kv_heads;
  t.s = idx % a.max_splits;
  t.row = idx / a.max_splits;
  t.h0 = t.kvh * G + hb * heads;
  t.nh = min(heads, G - hb * heads);
  return t;
}

// A kernel launched by launch_dependent (decode_launch.h) may start while the grids before it in
// the stream still run, and reads nothing they write before this wait, which returns once they
// have completed and their writes are visible (at once when the launch was an ordinary one).
__device__ __forceinline__ void wait_for_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Lets the grid launched after this one as its programmatic dependent (the split merge, the next
// decode) be scheduled now: it waits for this grid's completion before it reads anything this grid
// writes.
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

__device__ __forceinline__ float warp_max_ignore_nan(float v, int lanes_mask_width) {
  // fmaxf drops a NaN operand, as the host's `if (s > tile_max)` does.
  for (int o = 1; o < lanes_mask_width; o <<= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The exponent e of the per-head power-of-two q scale of the fp8 MLA paths (they run on f16
// operands): the max |q| over the head's n features, reduced over the warp and brought into
// [2^13, 2^14) by 2^e; 0 when that max is zero or not finite. Every lane of the warp must call it;
// every lane gets e.
__device__ __forceinline__ int q_pow2_exponent(const float* qhead, int n, int lane) {
  float mx = 0.0f;
  for (int f = lane; f < n; f += 32) mx = fmaxf(mx, fabsf(qhead[f]));
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  int e = 0;
  if (mx > 0.0f && isfinite(mx)) {
    int ex;
    frexpf(mx, &ex);  // mx in [2^(ex-1), 2^ex)
    e = min(max(14 - ex, -126), 126);
  }
  return e;
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy that bypasses L1; `present` false writes 16 zero bytes and reads
// nothing (the source address must still be a valid one).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool present) {
  const int n = present ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D += A·B on one m16n8k16 tile, float accumulators; kF16 picks f16 operands, else bf16.
template <bool kF16>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  if constexpr (kF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats as one register of 16-bit operands, element `lo` in the low half (the lower k or n
// index of an mma fragment).
template <bool kF16>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (kF16) {
    __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&r, &v, 4);
  } else {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&r, &v, 4);
  }
  return r;
}

// x = hi + lo + O(2^-17 |x|) with hi, lo bf16: the float32 value as two bf16 operands.
__device__ __forceinline__ void split_bf16(float x, float& hi, float& lo) {
  hi = __bfloat162float(__float2bfloat16_rn(x));
  lo = x - hi;
}

// Byte offset of 16-byte chunk `ch` of row `r` in a tile of rows of `row_bytes` bytes, XOR-
// swizzled over groups of 8 chunks so that the 8 rows an ldmatrix phase reads, and the 8 chunks a
// cp.async phase writes, fall in 8 different bank groups. row_bytes must be a multiple of 128.
__device__ __forceinline__ uint32_t swz(int r, int ch, int row_bytes) {
  return static_cast<uint32_t>(r * row_bytes + ((ch ^ (r & 7)) << 4));
}

}  // namespace kv::cuda::decode_detail
