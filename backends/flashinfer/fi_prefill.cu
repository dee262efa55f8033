// fi_prefill.cu — the fused paged prefill through FlashInfer's FA2 batch prefill over the paged
// cache (kvcheck's paged_prefill): each sequence's new tokens attend to its cached context and
// causally to themselves, all read from the paged cache (write_kv ran first). FlashInfer's causal
// mask is aligned to the end of the sequence, so query i of a sequence with kv_len = ctx + q_len
// sees keys 0 .. ctx + i: kvcheck's meaning.
//
// PrefillPlan runs on the host from the call's host mirrors (q_starts_host, ctx_lens_host) and
// copies its schedule through pinned staging into the call's workspace, laid out for N sequences
// of R rows with a block table of S entries per sequence:
//   [0, int_ws)       FlashInfer's int workspace
//   indptr [N + 1], last_page_len [N]   (the plan, from the host lens)
//   indices [N * S]   (packed on the stream from the device block table)
// Without split-KV (disable_split_kv): the workspace is sized per call before FlashInfer's
// planner has seen the lengths, and its split partials are bounded only by the plan; each CTA
// then reads a whole sequence's keys. bf16 q / out, a bf16 or fp8 e4m3 cache (fp8: its scales
// around the kernel, fi_common.h), head dims 64 and 128, CTA_TILE_Q 16 / 64 / 128 (the plan picks
// one).
#include "backends/flashinfer/fi_fastdiv.cuh"  // first: see there

#include <flashinfer/attention/default_prefill_params.cuh>
#include <flashinfer/attention/prefill.cuh>
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
using Params = flashinfer::BatchPrefillPagedParams<bf16, KV, bf16, int32_t>;
constexpr auto kCausal = flashinfer::MaskMode::kCausal;

CsrRegions regions(int64_t rows, int64_t seqs, int64_t group, int64_t blocks_per_seq) {
  return csr_regions(prefill_int_ws_bytes(rows, seqs, group), seqs, blocks_per_seq);
}

template <uint32_t CTA, uint32_t HD, class KV>
cudaError_t launch(const Params<KV>& p, cudaStream_t s) {
  return flashinfer::BatchPrefillWithPagedKVCacheDispatched<true, CTA, HD, HD, kNoRope, false,
                                                            kCausal, Variant>(p, nullptr, nullptr,
                                                                              false, s);
}

template <uint32_t HD, class KV>
cudaError_t launch_tile(int64_t cta_tile_q, const Params<KV>& p, cudaStream_t s) {
  return with_cta_tile(cta_tile_q, [&](auto cta) {
    return launch<decltype(cta)::value, HD, KV>(p, s);
  });
}

template <class KV>
void launch_kv(const kvcheck_paged_prefill_args& a, const flashinfer::PrefillPlanInfo& pi,
               char* ws, int32_t* d_indptr, int32_t* d_indices, int32_t* d_last,
               cudaStream_t stream) {
  const kvcheck_paged_kv& c = a.cache;
  const int32_t hd = c.head_dim, nq = a.num_q_heads, nkv = c.num_kv_heads, n = a.num_seqs;
  const int32_t bs = c.block_size, group = nq / nkv;
  const int64_t kv_strides[3] = {stride(c.k, 0), stride(c.k, 1), stride(c.k, 2)};
  Params<KV> p;
  p.q = data_as<bf16>(a.q);
  p.paged_kv = flashinfer::paged_kv_t<KV, int32_t>(
      nkv, bs, hd, n, flashinfer::QKVLayout::kNHD, data_as<KV>(c.k), data_as<KV>(c.v),
      kv_strides, d_indices, d_indptr, d_last);
  p.q_indptr = data_as<int32_t>(a.q_starts);
  p.o = data_as<bf16>(a.out);
  p.lse = data_as<float>(a.lse);
  p.group_size = flashinfer::uint_fastdiv(group);
  p.num_qo_heads = nq;
  p.q_stride_n = static_cast<int32_t>(stride(a.q, 0));
  p.q_stride_h = static_cast<int32_t>(stride(a.q, 1));
  set_plain_attention(p, a.scale * k_scale_of(c));
  set_prefill_schedule(p, ws, pi);
  const cudaError_t e = hd == 64 ? launch_tile<64, KV>(pi.cta_tile_q, p, stream)
                                 : launch_tile<128, KV>(pi.cta_tile_q, p, stream);
  check_cuda(e, "BatchPrefillWithPagedKVCacheDispatched");
  scale_rows(a.out, a.q_starts_host[n], v_scale_of(c), stream);
}

}  // namespace

size_t prefill_workspace_bytes(const kvcheck_size_query& q) {
  if (q.layout == KVCHECK_LAYOUT_MLA_LATENT) return mla_prefill_workspace_bytes(q);
  const int64_t group = q.num_q_heads / std::max(q.num_kv_heads, 1);
  return regions(std::max(q.max_rows, 0), std::max(q.max_seqs, 0), group, q.max_blocks_per_seq)
      .end;
}

void prefill_run(const kvcheck_paged_prefill_args& a, cudaStream_t stream) {
  const kvcheck_paged_kv& c = a.cache;
  if (c.layout == KVCHECK_LAYOUT_MLA_LATENT) return mla_prefill_run(a, stream);
  const int32_t hd = c.head_dim, nq = a.num_q_heads, nkv = c.num_kv_heads, n = a.num_seqs;
  if (hd != 64 && hd != 128)
    throw OpError("head_dim " + std::to_string(hd) + ": this plugin compiles 64 and 128");
  if (a.v_dim != hd) throw OpError("v_dim must equal head_dim");
  check_cache_dtype(c.dtype);
  if (nkv <= 0 || nq % nkv != 0) throw OpError("num_q_heads must be a multiple of num_kv_heads");
  if (a.q_starts_host == nullptr || a.ctx_lens_host == nullptr)
    throw OpError("needs q_starts_host and ctx_lens_host (its planner runs on the host)");
  if (stride(a.out, 0) != static_cast<int64_t>(nq) * hd || stride(a.out, 1) != hd)
    throw OpError("out must be packed [rows][heads][head_dim] (FlashInfer writes it so)");
  for (int d = 0; d < 3; ++d)
    if (stride(c.k, d) != stride(c.v, d))
      throw OpError("K and V must have the same strides (the plugin compiles SAME_KV_STRIDES)");
  if (n <= 0) return;
  const int32_t bs = c.block_size, blocks_per_seq = static_cast<int32_t>(extent(a.block_table, 1));
  const int32_t rows = a.q_starts_host[n], group = nq / nkv;
  std::vector<int32_t> qo(a.q_starts_host, a.q_starts_host + n + 1);
  HostPages pages = host_pages(prefill_lens(a), bs, blocks_per_seq);
  const CsrRegions reg = regions(rows, n, group, blocks_per_seq);
  char* ws = static_cast<char*>(data(a.workspace));
  const size_t ws_bytes = static_cast<size_t>(extent(a.workspace, 0));
  if (ws == nullptr || ws_bytes < reg.end)
    throw OpError("workspace: " + std::to_string(ws_bytes) + " bytes, the call needs " +
                  std::to_string(reg.end));

  flashinfer::PrefillPlanInfo pi;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    const size_t int_bytes = reg.indptr, csr_bytes = reg.indices - reg.indptr;
    auto* pinned = static_cast<char*>(staging(int_bytes + csr_bytes));
    // No split-KV: the float workspace is never used; a stand-in base keeps the planner's
    // arithmetic (it only aligns and adds offsets).
    check_cuda(flashinfer::PrefillPlan<int32_t>(
                   reinterpret_cast<void*>(kAlign), 0, ws, pinned, int_bytes, pi, qo.data(),
                   pages.indptr.data(), rows, n, nq, nkv, hd, hd, bs, /*enable_cuda_graph=*/false,
                   sizeof(bf16), /*window_left=*/-1, /*fixed_split_size=*/-1,
                   /*disable_split_kv=*/true, /*num_colocated_ctas=*/0, /*uniform_q_len=*/0,
                   stream, c.dtype == KVCHECK_FP8_E4M3 ? 1 : sizeof(bf16)),
               "PrefillPlan");
    char* csr = pinned + int_bytes;
    std::copy(pages.indptr.begin(), pages.indptr.end(), reinterpret_cast<int32_t*>(csr));
    std::copy(pages.last_page_len.begin(), pages.last_page_len.end(),
              reinterpret_cast<int32_t*>(csr + (reg.last_page_len - reg.indptr)));
    check_cuda(cudaMemcpyAsync(ws + reg.indptr, csr, csr_bytes, cudaMemcpyHostToDevice, stream),
               "plan copy");
    staging_used(stream);
  }
  if (pi.split_kv) throw OpError("PrefillPlan split KV although asked not to");
  auto* d_indptr = reinterpret_cast<int32_t*>(ws + reg.indptr);
  auto* d_last = reinterpret_cast<int32_t*>(ws + reg.last_page_len);
  auto* d_indices = reinterpret_cast<int32_t*>(ws + reg.indices);
  pack_pages(data_as<int32_t>(a.block_table), stride(a.block_table, 0), d_indptr, d_indices, n,
             stream);

  if (c.dtype == KVCHECK_FP8_E4M3)
    launch_kv<fp8>(a, pi, ws, d_indptr, d_indices, d_last, stream);
  else
    launch_kv<bf16>(a, pi, ws, d_indptr, d_indices, d_last, stream);
}

}  // namespace kvfi
