// fi_write.cu — kvcheck's write_kv through FlashInfer's append kernels: AppendPagedKVCache for K
// and V pages (separate or interleaved), AppendPagedKVMlaCache for the latent cache (ckv 512 +
// kpe 64 of one 576-wide row).
//
// FlashInfer appends rows of the cache dtype at (request, position) pairs of a paged layout;
// kvcheck hands float32 rows and one slot per row. A staging kernel on the stream turns each row
// into a request of its own: a one-page list [the slot's block] (indptr[i] = i), position = the
// slot's entry, and the row in the cache dtype: bf16 rounded to nearest even (how kvcheck's
// cache stores it), or fp8 e4m3 of value / scale as FlashInfer quantises (round to nearest even,
// saturating to +-448, NaN kept; an Inf saturates where kvcheck's own write_kv makes it NaN). A
// padded row (slot < 0) must write nothing, but the append kernel writes every row it is given and,
// under a CUDA graph, the row count is fixed at capture: such a row is staged as a rewrite of the
// null block's entry 0 with that entry's own bytes, read just before (a no-op on the cache's
// contents; nothing else ever writes the null block). Everything runs on the stream from device
// data, so a decode step's write_kv can be captured.
//
// Workspace for n rows of `width` elements (K and V: heads x head_dim; MLA: the latent row):
//   indptr [n + 1], indices [n], batch [n], position [n]   (int32)
//   k rows [n][width], v rows [n][width]                     (cache dtype; no v for MLA)
#include "backends/flashinfer/fi_fastdiv.cuh"  // first: see there

#include <cuda_bf16.h>

#include <flashinfer/page.cuh>

#include <string>

#include "backends/flashinfer/fi_common.h"

namespace kvfi {
namespace {


struct WriteRegions {
  size_t indptr, indices, batch, pos, k, v, end;
};

WriteRegions write_regions(int64_t n, int64_t width, bool mla) {
  const size_t ints = align_up(4 * static_cast<size_t>(n + 1));
  const size_t rows = align_up(2 * static_cast<size_t>(n) * static_cast<size_t>(width));  // bf16
  WriteRegions r;
  r.indptr = 0;
  r.indices = r.indptr + ints;
  r.batch = r.indices + ints;
  r.pos = r.batch + ints;
  r.k = r.pos + ints;
  r.v = r.k + rows;
  r.end = r.v + (mla ? 0 : rows);
  return r;
}

// A cache view's addressing: element (block, entry, head, feature) at
// block * sb + entry * st + head * sh + feature.
template <class T>
struct View {
  const T* base;
  int64_t sb, st, sh;
};

template <class T>
View<T> view_of(const kvcheck_tensor& t) {
  return {data_as<const T>(t), stride(t, 0), stride(t, 1), stride(t, 2)};
}

template <class T>
__device__ T encode(float v, float scale);
template <>
__device__ bf16 encode<bf16>(float v, float) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ fp8 encode<fp8>(float v, float scale) {
  return fp8(v / scale);
}

// Block r stages row r (threads over heads x head_dim). src rows are float32 [row][head][dim]
// with row stride `rs`; v / v_out null for MLA. ks / vs: the fp8 scales (ignored for bf16).
template <class T>
__global__ void stage_rows_kernel(const float* k, int64_t k_rs, const float* v, int64_t v_rs,
                                  const int64_t* slots, int32_t n, int32_t heads, int32_t hd,
                                  int32_t block_size, int32_t null_block, View<T> ck, View<T> cv,
                                  float ks, float vs, int32_t* indptr, int32_t* indices,
                                  int32_t* batch, int32_t* pos, T* k_out, T* v_out) {
  const int32_t r = blockIdx.x;
  if (r >= n) return;
  const int64_t slot = slots[r];
  const bool padded = slot < 0;
  if (threadIdx.x == 0) {
    indptr[r] = r;
    if (r == n - 1) indptr[n] = n;
    indices[r] = padded ? null_block : static_cast<int32_t>(slot / block_size);
    batch[r] = r;
    pos[r] = padded ? 0 : static_cast<int32_t>(slot % block_size);
  }
  const int32_t width = heads * hd;
  for (int32_t i = threadIdx.x; i < width; i += blockDim.x) {
    const int32_t h = i / hd, d = i % hd;
    const int64_t at = static_cast<int64_t>(null_block) * ck.sb + h * ck.sh + d;  // entry 0
    k_out[static_cast<int64_t>(r) * width + i] =
        padded ? ck.base[at] : encode<T>(k[r * k_rs + h * hd + d], ks);
    if (v_out == nullptr) continue;
    const int64_t vat = static_cast<int64_t>(null_block) * cv.sb + h * cv.sh + d;
    v_out[static_cast<int64_t>(r) * width + i] =
        padded ? cv.base[vat] : encode<T>(v[r * v_rs + h * hd + d], vs);
  }
}

template <class T>
void write_kv_as(const kvcheck_write_kv_args& a, const WriteRegions& reg, char* ws,
                 cudaStream_t stream) {
  const kvcheck_paged_kv& c = a.cache;
  const bool mla = c.layout == KVCHECK_LAYOUT_MLA_LATENT;
  const int32_t n = a.num_tokens, heads = c.num_kv_heads, hd = c.head_dim;
  auto* indptr = reinterpret_cast<int32_t*>(ws + reg.indptr);
  auto* indices = reinterpret_cast<int32_t*>(ws + reg.indices);
  auto* batch = reinterpret_cast<int32_t*>(ws + reg.batch);
  auto* pos = reinterpret_cast<int32_t*>(ws + reg.pos);
  auto* k_rows = reinterpret_cast<T*>(ws + reg.k);
  auto* v_rows = mla ? nullptr : reinterpret_cast<T*>(ws + reg.v);
  const View<T> ck = view_of<T>(c.k), cv = mla ? ck : view_of<T>(c.v);
  stage_rows_kernel<T><<<n, 128, 0, stream>>>(
      data_as<const float>(a.k), stride(a.k, 0), mla ? nullptr : data_as<const float>(a.v),
      mla ? 0 : stride(a.v, 0), data_as<const int64_t>(a.slot_mapping), n, heads, hd,
      c.block_size, c.null_block, ck, cv, c.k_scale, c.v_scale, indptr, indices, batch, pos,
      k_rows, v_rows);
  check_cuda(cudaGetLastError(), "write_kv staging launch");

  const auto nn = static_cast<uint32_t>(n);
  if (mla) {
    constexpr uint32_t kCkv = kMlaDims[0], kKpe = kMlaDims[1];
    const int64_t strides[2] = {stride(c.k, 0), stride(c.k, 1)};
    T* cache = data_as<T>(c.k);
    flashinfer::paged_kv_mla_t<T, int32_t> kv(c.block_size, kCkv, kKpe, nn, cache, strides,
                                              cache + kCkv, strides, indices, indptr, nullptr);
    check_cuda(flashinfer::AppendPagedKVMlaCache<T, int32_t>(
                   kv, k_rows, k_rows + kCkv, batch, pos, nn, kCkv + kKpe, kCkv + kKpe, stream),
               "AppendPagedKVMlaCache");
    return;
  }
  const int64_t ks[3] = {stride(c.k, 0), stride(c.k, 1), stride(c.k, 2)};
  const int64_t vs[3] = {stride(c.v, 0), stride(c.v, 1), stride(c.v, 2)};
  flashinfer::paged_kv_t<T, int32_t> kv(heads, c.block_size, hd, nn, flashinfer::QKVLayout::kNHD,
                                        data_as<T>(c.k), data_as<T>(c.v), ks, vs, indices,
                                        indptr, nullptr);
  const size_t width = static_cast<size_t>(heads) * hd;
  check_cuda(flashinfer::AppendPagedKVCache<T, int32_t>(kv, k_rows, v_rows, batch, pos, nn, width,
                                                        hd, width, hd, stream),
             "AppendPagedKVCache");
}

}  // namespace

size_t write_workspace_bytes(const kvcheck_size_query& q) {
  const bool mla = q.layout == KVCHECK_LAYOUT_MLA_LATENT;
  const int64_t width = static_cast<int64_t>(std::max(q.num_kv_heads, 1)) * q.head_dim;
  return write_regions(std::max(q.max_rows, 0), width, mla).end;
}

void write_run(const kvcheck_write_kv_args& a, cudaStream_t stream) {
  const kvcheck_paged_kv& c = a.cache;
  const bool mla = c.layout == KVCHECK_LAYOUT_MLA_LATENT;
  const int32_t n = a.num_tokens, heads = c.num_kv_heads, hd = c.head_dim;
  check_cache_dtype(c.dtype);
  if (a.struct_size < offsetof(kvcheck_write_kv_args, workspace) + sizeof(kvcheck_tensor))
    throw OpError("the args carry no workspace (a kvcheck older than this plugin)");
  if (mla && (heads != 1 || hd != kMlaDims[0] + kMlaDims[1]))
    throw OpError("MLA latent rows must be one head of 576 (ckv 512 + kpe 64)");
  if (!mla && hd != 64 && hd != 128)
    throw OpError("head_dim " + std::to_string(hd) + ": this plugin compiles 64 and 128");
  if (stride(a.k, 1) != hd || (!mla && stride(a.v, 1) != hd))
    throw OpError("k / v rows must have packed heads");
  if (n <= 0) return;
  const WriteRegions reg = write_regions(n, static_cast<int64_t>(heads) * hd, mla);
  char* ws = static_cast<char*>(data(a.workspace));
  const size_t ws_bytes = static_cast<size_t>(extent(a.workspace, 0));
  if (ws == nullptr || ws_bytes < reg.end)
    throw OpError("workspace: " + std::to_string(ws_bytes) + " bytes, the call needs " +
                  std::to_string(reg.end));
  if (c.dtype == KVCHECK_FP8_E4M3)
    write_kv_as<fp8>(a, reg, ws, stream);
  else
    write_kv_as<bf16>(a, reg, ws, stream);
}

}  // namespace kvfi
