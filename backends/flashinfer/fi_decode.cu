// fi_decode.cu — GQA paged decode through FlashInfer's FA2 batch decode: DecodePlan on the host
// (kvcheck's paged_decode_plan), BatchDecodeWithPagedKVCacheDispatched on the stream (its
// paged_decode), bf16 q / out, a bf16 or fp8 e4m3 cache (fp8: k_scale folded into the softmax
// scale, v_scale applied to the output rows after), head dims 64 and 128, the group sizes
// FlashInfer compiles.
//
// FlashInfer reads page lists in CSR form (indptr, indices, last_page_len); kvcheck hands a block
// table [rows][max_blocks_per_seq] and seq_lens. They live in kvcheck's persistent plan buffer,
// laid out for a step of R rows and a block table of S entries per row:
//   [0, int_ws)          FlashInfer's int workspace (its schedule: request / tile indices ...)
//   indptr [R + 1]       pages before each row (the plan, from the host seq_lens)
//   last_page_len [R]    tokens in each row's last page (the plan)
//   indices [R * S]      each row's pages, packed (the decode, from the device block table)
// The plan copies its part through pinned staging on the stream; the decode's first kernel packs
// the block table, then FlashInfer's kernels run, all on the stream, so a CUDA graph captured over
// the decode replays correctly after each new plan. FlashInfer plans with enable_cuda_graph: its
// grid then depends only on the row count, the per-step schedule lives in the int workspace. Its
// split-KV partials go into kvcheck's decode workspace (float: [heads][padded rows][head_dim + 1]).
// A row of seq_len 0 (a graph-padded row) has no pages: FlashInfer writes o = 0, lse = -inf.
#include "backends/flashinfer/fi_fastdiv.cuh"  // first: see there

#include <flashinfer/attention/decode.cuh>
#include <flashinfer/attention/default_decode_params.cuh>
#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/attention/variants.cuh>
#include <flashinfer/page.cuh>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/flashinfer/fi_common.h"
#include "backends/flashinfer/fi_params.cuh"

namespace kvfi {
namespace {

template <class KV>
using Params = flashinfer::BatchDecodeParams<bf16, KV, bf16, int32_t>;

// FlashInfer's padded batch is at most max_grid / kv_heads, max_grid = blocks per SM (at most 32
// on sm_90) x SMs: the int workspace and the split partials are sized for that.
size_t padded_rows_bound(int32_t kv_heads) {
  const int64_t sms = std::max(state().num_sms, 1);
  return static_cast<size_t>((32 * sms + kv_heads - 1) / std::max(kv_heads, 1));
}
size_t int_ws_bytes() {
  return align_up(16 * 32 * static_cast<size_t>(std::max(state().num_sms, 1)) + 4096);
}

CsrRegions regions(int32_t rows, int32_t blocks_per_row) {
  return csr_regions(int_ws_bytes(), rows, blocks_per_row);
}

PlanStore<flashinfer::DecodePlanInfo>& planned() {
  static PlanStore<flashinfer::DecodePlanInfo> store;
  return store;
}

// The GQA group size as the template argument FlashInfer's work estimation takes.
template <uint32_t HD, class KV>
cudaError_t plan_for(int32_t group, void* fake_float_base, size_t float_bytes, void* int_buffer,
                     void* pinned, size_t int_bytes, flashinfer::DecodePlanInfo& info,
                     int32_t* indptr_h, uint32_t rows, uint32_t q_heads, uint32_t block_size,
                     cudaStream_t s) {
#define KVFI_GROUP(G)                                                                         \
  case G:                                                                                     \
    return flashinfer::DecodePlan<HD, kNoRope, Variant, Params<KV>>(                          \
        fake_float_base, float_bytes, int_buffer, pinned, int_bytes, info, indptr_h, rows,    \
        q_heads, block_size, true, s,                                                          \
        flashinfer::BatchDecodeWithPagedKVCacheWorkEstimationDispatched<G, HD, kNoRope,        \
                                                                         Variant, Params<KV>>);
  switch (group) {
    KVFI_GROUP(1) KVFI_GROUP(2) KVFI_GROUP(3) KVFI_GROUP(4) KVFI_GROUP(6) KVFI_GROUP(8)
    KVFI_GROUP(16)
    default: throw OpError("GQA ratio " + std::to_string(group) + " is not one FlashInfer's "
                           "decode compiles (1, 2, 3, 4, 6, 8, 16)");
  }
#undef KVFI_GROUP
}

void check_shape(int32_t head_dim, int32_t v_dim, int32_t cache_dtype, int32_t layout) {
  if (head_dim != 64 && head_dim != 128)
    throw OpError("head_dim " + std::to_string(head_dim) + ": this plugin compiles 64 and 128");
  if (v_dim != head_dim) throw OpError("v_dim must equal head_dim");
  check_cache_dtype(cache_dtype);
  if (layout == KVCHECK_LAYOUT_MLA_LATENT) throw OpError("the MLA cache is not decoded here");
}

}  // namespace

size_t decode_plan_bytes(const kvcheck_size_query& q) {
  if (q.layout == KVCHECK_LAYOUT_MLA_LATENT) return mla_plan_bytes(q);
  use_device();
  return regions(std::max(q.max_rows, 0), q.max_blocks_per_seq).end;
}

size_t decode_workspace_bytes(const kvcheck_size_query& q) {
  if (q.layout == KVCHECK_LAYOUT_MLA_LATENT) return mla_workspace_bytes(q);
  use_device();
  const size_t padded = padded_rows_bound(std::max(q.num_kv_heads, 1));
  const size_t heads = static_cast<size_t>(std::max(q.num_q_heads, 0));
  const size_t dim = static_cast<size_t>(std::max(q.v_dim, 0));
  return align_up(heads * padded * dim * sizeof(float)) +
         align_up(heads * padded * sizeof(float));
}

void decode_plan(const kvcheck_decode_plan_args& a, cudaStream_t stream) {
  if (a.layout == KVCHECK_LAYOUT_MLA_LATENT) return mla_plan(a, stream);
  check_shape(a.head_dim, a.v_dim, a.cache_dtype, a.layout);
  if (a.num_kv_heads <= 0 || a.num_q_heads % a.num_kv_heads != 0)
    throw OpError("num_q_heads must be a multiple of num_kv_heads");
  const CsrRegions reg = checked_plan_regions(a, regions);
  void* plan = data(a.plan);
  const int32_t rows = a.num_rows, bs = a.block_size;
  HostPages pages = host_pages(decode_lens(a), bs, a.max_blocks_per_seq);
  std::lock_guard<std::mutex> lock(state().mu);
  const size_t int_bytes = int_ws_bytes();
  const size_t csr_bytes = reg.indices - reg.indptr;
  auto* pinned = static_cast<char*>(staging(int_bytes + csr_bytes));
  Planned<flashinfer::DecodePlanInfo> p;
  p.rows = rows;
  p.block_size = bs;
  p.blocks_per_row = a.max_blocks_per_seq;
  // The split partials' offsets are relative to the decode workspace, which the plan does not
  // see: FlashInfer only aligns and adds offsets, so a stand-in base aligned like kvcheck's
  // buffers gives the same offsets.
  void* float_base = reinterpret_cast<void*>(kAlign);
  kvcheck_size_query q{};
  q.num_q_heads = a.num_q_heads;
  q.num_kv_heads = a.num_kv_heads;
  q.v_dim = a.v_dim;
  const size_t float_bytes = decode_workspace_bytes(q);
  const int32_t group = a.num_q_heads / a.num_kv_heads;
  auto plan_dtype = [&](auto kv) {
    using KV = decltype(kv);
    return a.head_dim == 64 ? plan_for<64, KV>(group, float_base, float_bytes, plan, pinned,
                                               int_bytes, p.info, pages.indptr.data(), rows,
                                               a.num_q_heads, bs, stream)
                            : plan_for<128, KV>(group, float_base, float_bytes, plan, pinned,
                                                int_bytes, p.info, pages.indptr.data(), rows,
                                                a.num_q_heads, bs, stream);
  };
  const cudaError_t e =
      a.cache_dtype == KVCHECK_FP8_E4M3 ? plan_dtype(fp8{}) : plan_dtype(bf16{});
  check_cuda(e, "DecodePlan");
  char* csr = pinned + int_bytes;
  std::copy(pages.indptr.begin(), pages.indptr.end(), reinterpret_cast<int32_t*>(csr));
  std::copy(pages.last_page_len.begin(), pages.last_page_len.end(),
            reinterpret_cast<int32_t*>(csr + (reg.last_page_len - reg.indptr)));
  check_cuda(cudaMemcpyAsync(static_cast<char*>(plan) + reg.indptr, csr, csr_bytes,
                             cudaMemcpyHostToDevice, stream),
             "plan copy");
  staging_used(stream);
  planned().put(plan, p);
}

namespace {

template <class KV>
void run_kv(const kvcheck_paged_decode_args& a, const Planned<flashinfer::DecodePlanInfo>& p,
            cudaStream_t stream) {
  const kvcheck_paged_kv& c = a.cache;
  void* plan = data(a.plan);
  const int32_t rows = a.num_rows, nq = a.num_q_heads, hd = c.head_dim;
  const CsrRegions reg = regions(rows, p.blocks_per_row);
  char* base = static_cast<char*>(plan);
  auto* indptr = reinterpret_cast<int32_t*>(base + reg.indptr);
  auto* last = reinterpret_cast<int32_t*>(base + reg.last_page_len);
  auto* indices = reinterpret_cast<int32_t*>(base + reg.indices);
  pack_pages(data_as<int32_t>(a.block_table), stride(a.block_table, 0), indptr, indices, rows,
             stream);

  const int64_t kv_strides[3] = {stride(c.k, 0), stride(c.k, 1), stride(c.k, 2)};
  flashinfer::paged_kv_t<KV, int32_t> kv(
      c.num_kv_heads, c.block_size, hd, rows, flashinfer::QKVLayout::kNHD, data_as<KV>(c.k),
      data_as<KV>(c.v), kv_strides, indices, indptr, last);
  Params<KV> params;
  params.q = data_as<bf16>(a.q);
  params.paged_kv = kv;
  params.o = data_as<bf16>(a.out);
  params.lse = data_as<float>(a.lse);
  params.num_qo_heads = nq;
  params.q_stride_n = static_cast<int32_t>(stride(a.q, 0));
  params.q_stride_h = static_cast<int32_t>(stride(a.q, 1));
  set_plain_attention(params, a.scale * k_scale_of(c));
  const flashinfer::DecodePlanInfo& pi = p.info;
  using flashinfer::GetPtrFromBaseOffset;
  params.request_indices = GetPtrFromBaseOffset<int32_t>(plan, pi.request_indices_offset);
  params.kv_tile_indices = GetPtrFromBaseOffset<int32_t>(plan, pi.kv_tile_indices_offset);
  params.o_indptr = GetPtrFromBaseOffset<int32_t>(plan, pi.o_indptr_offset);
  params.kv_chunk_size_ptr = GetPtrFromBaseOffset<int32_t>(plan, pi.kv_chunk_size_ptr_offset);
  params.padded_batch_size = pi.padded_batch_size;
  bf16* tmp_v = nullptr;
  float* tmp_s = nullptr;
  if (pi.split_kv) {
    void* ws = data(a.workspace);
    if (ws == nullptr) throw OpError("the plan splits KV but there is no workspace");
    tmp_v = GetPtrFromBaseOffset<bf16>(ws, pi.v_offset);
    tmp_s = GetPtrFromBaseOffset<float>(ws, pi.s_offset);
    if (pi.enable_cuda_graph)
      params.block_valid_mask = GetPtrFromBaseOffset<bool>(plan, pi.block_valid_mask_offset);
  }
  const cudaError_t e =
      hd == 64 ? flashinfer::BatchDecodeWithPagedKVCacheDispatched<64, kNoRope, Variant>(
                     params, tmp_v, tmp_s, false, stream)
               : flashinfer::BatchDecodeWithPagedKVCacheDispatched<128, kNoRope, Variant>(
                     params, tmp_v, tmp_s, false, stream);
  check_cuda(e, "BatchDecodeWithPagedKVCacheDispatched");
  scale_rows(a.out, rows, v_scale_of(c), stream);
}

}  // namespace

void decode_run(const kvcheck_paged_decode_args& a, cudaStream_t stream) {
  const kvcheck_paged_kv& c = a.cache;
  if (c.layout == KVCHECK_LAYOUT_MLA_LATENT) return mla_run(a, stream);
  check_shape(c.head_dim, a.v_dim, c.dtype, c.layout);
  const Planned<flashinfer::DecodePlanInfo> p = planned().get(a);
  const int32_t nq = a.num_q_heads, hd = c.head_dim;
  if (stride(a.out, 0) != static_cast<int64_t>(nq) * hd || stride(a.out, 1) != hd)
    throw OpError("out must be packed [rows][heads][head_dim] (FlashInfer writes it so)");
  for (int d = 0; d < 3; ++d)
    if (stride(c.k, d) != stride(c.v, d))
      throw OpError("K and V must have the same strides (FlashInfer's decode reads V at K's)");
  if (a.num_rows == 0) return;
  if (c.dtype == KVCHECK_FP8_E4M3)
    run_kv<fp8>(a, p, stream);
  else
    run_kv<bf16>(a, p, stream);
}

}  // namespace kvfi
