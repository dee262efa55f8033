// fi_mla.cu — MLA decode through FlashInfer's FA2 MLA kernel (BatchMLAPagedAttention over ckv 512
// + kpe 64; a bf16 or fp8 e4m3 cache, fp8 with its scale folded in around the kernel:
// fi_common.h): kvcheck's paged_decode over the latent cache. The cache row of a token is 576
// latent features, the first 512 its ckv (and the value), the last 64 its kpe; q likewise, in the
// latent space (absorbed weights). MLAPlan runs on the host (kvcheck's paged_decode_plan for the
// MLA layers); unlike the decode and prefill plans it leaves the host-to-device copy of its
// schedule to the caller, done here on the stream from pinned staging. Plan buffer layout:
//   [0, int_ws)       FlashInfer's MLA int workspace (work lists: per work item its request's
//                     page offset, q/kv lengths and ranges)
//   indptr [R + 1]    pages before each row (the plan, from the host seq_lens)
//   indices [R * S]   each row's pages at its indptr, packed on the stream by the decode from the
//                     block table
// Its partial outputs and lse go into kvcheck's decode workspace. LSE base 2 (as declared).
#include "backends/flashinfer/fi_fastdiv.cuh"  // first: see there

#include <flashinfer/attention/mla.cuh>
#include <flashinfer/attention/mla_params.cuh>
#include <flashinfer/attention/scheduler.cuh>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/flashinfer/fi_common.h"

namespace kvfi {
namespace {

template <class KV>
using Params = flashinfer::MLAParams<bf16, KV, bf16, int32_t>;
constexpr int32_t kCkv = 512, kKpe = 64;

// MLAPlan's int layout is sized by its work-list capacity (16384 items) and the SM count, not by
// the batch; its float partials by the SMs too (about 17 MB on 132 SMs): generous bounds.
size_t int_ws_bytes() {
  return align_up(2u << 20) + align_up(16384 * static_cast<size_t>(std::max(state().num_sms, 1)));
}
size_t float_ws_bytes() {
  return align_up(256 * 1024 * static_cast<size_t>(std::max(state().num_sms, 1)));
}
// The int workspace, then the page lists' indptr and indices for n requests of S pages at most.
CsrRegions regions(int64_t n, int64_t blocks_per_seq) {
  return csr_regions(int_ws_bytes(), n, blocks_per_seq);
}

PlanStore<flashinfer::MLAPlanInfo>& planned() {
  static PlanStore<flashinfer::MLAPlanInfo> store;
  return store;
}

void check_shape(int32_t head_dim, int32_t v_dim, int32_t cache_dtype) {
  if (head_dim != kCkv + kKpe || v_dim != kCkv)
    throw OpError("MLA: head_dim " + std::to_string(head_dim) + " / v_dim " +
                  std::to_string(v_dim) + ": FlashInfer's MLA kernel takes 576 / 512 (ckv 512 + "
                  "kpe 64)");
  check_cache_dtype(cache_dtype);
}

// Fills FlashInfer's MLA params from a plan (its int buffer at `ibuf`, its partials in `fbuf`)
// and launches the kernel over the latent cache `c` of element type KV.
template <class KV>
void launch_kv(const flashinfer::MLAPlanInfo& pi, void* ibuf, void* fbuf, int32_t* kv_indptr,
            int32_t* indices, const kvcheck_paged_kv& c, const kvcheck_tensor& q_t,
            const kvcheck_tensor& out, const kvcheck_tensor& lse, int32_t nq, float scale,
            bool causal, cudaStream_t stream) {
  using flashinfer::GetPtrFromBaseOffset;
  Params<KV> params;
  bf16* q = data_as<bf16>(q_t);
  KV* cache = data_as<KV>(c.k);
  params.q_nope = q;
  params.q_pe = q + kCkv;
  params.ckv = cache;
  params.kpe = cache + kCkv;
  params.q_indptr = GetPtrFromBaseOffset<int32_t>(ibuf, pi.q_indptr_offset);
  params.kv_indptr = kv_indptr;
  params.partial_indptr = GetPtrFromBaseOffset<int32_t>(ibuf, pi.partial_indptr_offset);
  params.kv_indices = indices;
  params.q_len = GetPtrFromBaseOffset<int32_t>(ibuf, pi.q_len_offset);
  params.kv_len = GetPtrFromBaseOffset<int32_t>(ibuf, pi.kv_len_offset);
  params.q_start = GetPtrFromBaseOffset<int32_t>(ibuf, pi.q_start_offset);
  params.kv_start = GetPtrFromBaseOffset<int32_t>(ibuf, pi.kv_start_offset);
  params.kv_end = GetPtrFromBaseOffset<int32_t>(ibuf, pi.kv_end_offset);
  params.work_indptr = GetPtrFromBaseOffset<int32_t>(ibuf, pi.work_indptr_offset);
  params.merge_packed_offset_start =
      GetPtrFromBaseOffset<int32_t>(ibuf, pi.merge_packed_offset_start_offset);
  params.merge_packed_offset_end =
      GetPtrFromBaseOffset<int32_t>(ibuf, pi.merge_packed_offset_end_offset);
  params.merge_partial_packed_offset_start =
      GetPtrFromBaseOffset<int32_t>(ibuf, pi.merge_partial_packed_offset_start_offset);
  params.merge_partial_packed_offset_end =
      GetPtrFromBaseOffset<int32_t>(ibuf, pi.merge_partial_packed_offset_end_offset);
  params.merge_partial_stride = GetPtrFromBaseOffset<int32_t>(ibuf, pi.merge_partial_stride_offset);
  params.final_o = data_as<bf16>(out);
  params.final_lse = data_as<float>(lse);
  params.partial_o = GetPtrFromBaseOffset<bf16>(fbuf, pi.partial_o_offset);
  params.partial_lse = GetPtrFromBaseOffset<float>(fbuf, pi.partial_lse_offset);
  params.num_heads = flashinfer::uint_fastdiv(nq);
  params.block_size = flashinfer::uint_fastdiv(c.block_size);
  params.q_nope_stride_n = params.q_pe_stride_n = static_cast<uint32_t>(stride(q_t, 0));
  params.q_nope_stride_h = params.q_pe_stride_h = static_cast<uint32_t>(stride(q_t, 1));
  params.ckv_stride_page = params.kpe_stride_page = static_cast<uint32_t>(stride(c.k, 0));
  params.ckv_stride_n = params.kpe_stride_n = static_cast<uint32_t>(stride(c.k, 1));
  params.o_stride_n = static_cast<uint32_t>(stride(out, 0));
  params.o_stride_h = static_cast<uint32_t>(stride(out, 1));
  params.sm_scale = scale * k_scale_of(c);
  params.return_lse_base_on_e = false;
  using flashinfer::MaskMode;
  const cudaError_t e =
      causal ? flashinfer::mla::BatchMLAPagedAttention<MaskMode::kCausal, kCkv, kKpe>(
                   params, pi.num_blks_x, pi.num_blks_y, stream)
             : flashinfer::mla::BatchMLAPagedAttention<MaskMode::kNone, kCkv, kKpe>(
                   params, pi.num_blks_x, pi.num_blks_y, stream);
  check_cuda(e, "BatchMLAPagedAttention");
}

// The kernel for the cache's dtype; then the output rows times the latent's scale (V is the
// latent, stored with k_scale).
void launch(const flashinfer::MLAPlanInfo& pi, void* ibuf, void* fbuf, int32_t* kv_indptr,
            int32_t* indices, const kvcheck_paged_kv& c, const kvcheck_tensor& q_t,
            const kvcheck_tensor& out, const kvcheck_tensor& lse, int32_t nq, float scale,
            bool causal, int32_t rows, cudaStream_t stream) {
  if (c.dtype == KVCHECK_FP8_E4M3)
    launch_kv<fp8>(pi, ibuf, fbuf, kv_indptr, indices, c, q_t, out, lse, nq, scale, causal,
                   stream);
  else
    launch_kv<bf16>(pi, ibuf, fbuf, kv_indptr, indices, c, q_t, out, lse, nq, scale, causal,
                    stream);
  scale_rows(out, rows, k_scale_of(c), stream);
}

}  // namespace

size_t mla_plan_bytes(const kvcheck_size_query& q) {
  use_device();
  return regions(std::max(q.max_rows, 0), q.max_blocks_per_seq).end;
}

size_t mla_workspace_bytes(const kvcheck_size_query&) {
  use_device();
  return float_ws_bytes();
}

void mla_plan(const kvcheck_decode_plan_args& a, cudaStream_t stream) {
  check_shape(a.head_dim, a.v_dim, a.cache_dtype);
  const CsrRegions reg = checked_plan_regions(a, regions);
  void* plan = data(a.plan);
  const int32_t rows = a.num_rows, bs = a.block_size;
  std::vector<int32_t> qo(rows + 1), kv_len = decode_lens(a);
  for (int32_t r = 0; r < rows; ++r) qo[r + 1] = r + 1;
  std::vector<int32_t> kv_indptr = host_pages(kv_len, bs, a.max_blocks_per_seq).indptr;
  std::lock_guard<std::mutex> lock(state().mu);
  const size_t int_bytes = int_ws_bytes();
  auto* pinned = static_cast<char*>(staging(reg.last_page_len));
  Planned<flashinfer::MLAPlanInfo> p;
  p.rows = rows;
  p.block_size = bs;
  p.blocks_per_row = a.max_blocks_per_seq;
  size_t staged = 0;
  // The float partials' offsets are relative to the decode workspace the plan does not see: a
  // stand-in base aligned like kvcheck's buffers gives the same offsets.
  check_cuda(flashinfer::MLAPlan<int32_t>(reinterpret_cast<void*>(kAlign), float_ws_bytes(), plan,
                                           pinned, int_bytes, p.info, staged, qo.data(),
                                           kv_indptr.data(), kv_len.data(), rows, a.num_q_heads,
                                           kCkv, /*causal=*/false, stream),
             "MLAPlan");
  check_cuda(cudaMemcpyAsync(plan, pinned, staged, cudaMemcpyHostToDevice, stream),
             "MLA plan copy");
  // The plan's kv_indptr is per work item; the packing reads one per request.
  std::copy(kv_indptr.begin(), kv_indptr.end(), reinterpret_cast<int32_t*>(pinned + reg.indptr));
  check_cuda(cudaMemcpyAsync(static_cast<char*>(plan) + reg.indptr, pinned + reg.indptr,
                             4 * kv_indptr.size(), cudaMemcpyHostToDevice, stream),
             "MLA indptr copy");
  staging_used(stream);
  planned().put(plan, p);
}

void mla_run(const kvcheck_paged_decode_args& a, cudaStream_t stream) {
  const kvcheck_paged_kv& c = a.cache;
  check_shape(c.head_dim, a.v_dim, c.dtype);
  void* plan = data(a.plan);
  const Planned<flashinfer::MLAPlanInfo> p = planned().get(a);
  const int32_t rows = a.num_rows, nq = a.num_q_heads;
  if (rows == 0) return;
  void* ws = data(a.workspace);
  if (ws == nullptr || static_cast<size_t>(extent(a.workspace, 0)) < float_ws_bytes())
    throw OpError("workspace smaller than workspace_bytes asked for");
  using flashinfer::GetPtrFromBaseOffset;
  const flashinfer::MLAPlanInfo& pi = p.info;
  const CsrRegions reg = regions(rows, p.blocks_per_row);
  auto* indices = reinterpret_cast<int32_t*>(static_cast<char*>(plan) + reg.indices);
  auto* request_indptr = reinterpret_cast<int32_t*>(static_cast<char*>(plan) + reg.indptr);
  pack_pages(data_as<int32_t>(a.block_table), stride(a.block_table, 0), request_indptr, indices,
             rows, stream);
  int32_t* kv_indptr = GetPtrFromBaseOffset<int32_t>(plan, pi.kv_indptr_offset);  // per work

  launch(pi, plan, ws, kv_indptr, indices, c, a.q, a.out, a.lse, nq, a.scale, false, rows,
         stream);
}

// ---- the fused prefill over the latent cache: the same kernel with a causal mask ----
// Workspace: [int ws][indptr [N + 1]][indices [N * S]][float partials]; the plan is made and
// copied per call.

size_t mla_prefill_workspace_bytes(const kvcheck_size_query& q) {
  use_device();
  return align_up(regions(std::max(q.max_seqs, 0), q.max_blocks_per_seq).end) + float_ws_bytes();
}

void mla_prefill_run(const kvcheck_paged_prefill_args& a, cudaStream_t stream) {
  const kvcheck_paged_kv& c = a.cache;
  check_shape(c.head_dim, a.v_dim, c.dtype);
  const int32_t n = a.num_seqs, bs = c.block_size;
  if (a.q_starts_host == nullptr || a.ctx_lens_host == nullptr)
    throw OpError("needs q_starts_host and ctx_lens_host (its planner runs on the host)");
  if (n <= 0) return;
  const int32_t blocks_per_seq = static_cast<int32_t>(extent(a.block_table, 1));
  std::vector<int32_t> qo(a.q_starts_host, a.q_starts_host + n + 1), kv_len = prefill_lens(a);
  std::vector<int32_t> kv_indptr = host_pages(kv_len, bs, blocks_per_seq).indptr;
  char* ws = static_cast<char*>(data(a.workspace));
  const CsrRegions reg = regions(n, blocks_per_seq);
  const size_t float_at = align_up(reg.end);
  if (ws == nullptr || static_cast<size_t>(extent(a.workspace, 0)) < float_at + float_ws_bytes())
    throw OpError("workspace smaller than workspace_bytes asked for");
  flashinfer::MLAPlanInfo pi;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    const size_t int_bytes = int_ws_bytes();
    auto* pinned = static_cast<char*>(staging(reg.last_page_len));
    size_t staged = 0;
    check_cuda(flashinfer::MLAPlan<int32_t>(reinterpret_cast<void*>(kAlign), float_ws_bytes(), ws,
                                             pinned, int_bytes, pi, staged, qo.data(),
                                             kv_indptr.data(), kv_len.data(), n,
                                             a.num_q_heads, kCkv, /*causal=*/true, stream),
               "MLAPlan (causal)");
    check_cuda(cudaMemcpyAsync(ws, pinned, staged, cudaMemcpyHostToDevice, stream),
               "MLA plan copy");
    std::copy(kv_indptr.begin(), kv_indptr.end(),
              reinterpret_cast<int32_t*>(pinned + reg.indptr));
    check_cuda(cudaMemcpyAsync(ws + reg.indptr, pinned + reg.indptr, 4 * kv_indptr.size(),
                               cudaMemcpyHostToDevice, stream),
               "MLA indptr copy");
    staging_used(stream);
  }
  using flashinfer::GetPtrFromBaseOffset;
  int32_t* d_kv_indptr = GetPtrFromBaseOffset<int32_t>(ws, pi.kv_indptr_offset);  // per work
  auto* indices = reinterpret_cast<int32_t*>(ws + reg.indices);
  pack_pages(data_as<int32_t>(a.block_table), stride(a.block_table, 0),
             reinterpret_cast<int32_t*>(ws + reg.indptr), indices, n, stream);
  launch(pi, ws, ws + float_at, d_kv_indptr, indices, c, a.q, a.out, a.lse, a.num_q_heads,
         a.scale, true, a.q_starts_host[n], stream);
}

}  // namespace kvfi
