// fi_ragged.cu — the plugin's second prefill mode (`--backend-option prefill=ragged`): kvcheck's
// gather_kv -> varlen_attention -> merge_states chain with FlashInfer in two of its links.
//   varlen_attention: its FA2 batch prefill over ragged (contiguous) K/V, causal for the new
//     tokens (kvcheck's q_len == k_len: FlashInfer's end-aligned mask means the same) and unmasked
//     for the context; o in bf16, lse base 2.
//   merge_states: its MergeState over the first num_merge rows; the rows after them copy state b.
// gather_kv stays kvcheck's (FlashInfer has no such op), so the prefill-chain regressions apply.
//
// varlen's K/V come as float32 rows: a staging kernel rounds them to bf16 (round to nearest even,
// how the bf16 cache stores them; the context rows were read from that cache, so exact) into the
// workspace; for kv_dtype fp8 (new tokens over an fp8 cache) each element goes through e4m3 with
// its scale first, as the cache stores it, then to bf16 (exact for power-of-two scales; with a
// calibrated scale such as 0.0173 the dequantised value is rounded to bf16, relative 2^-9). Layout
// for R query rows, K key rows and N sequences:
//   [0, int_ws)        PrefillPlan's int workspace (no split-KV, as fi_prefill.cu)
//   k rows [K][nkv][hd], v rows [K][nkv][hd]   (bf16)
// PrefillPlan runs on the host from the call's host mirrors (q_starts_host, k_starts_host) with a
// page size of 1: a ragged K/V is a paged one of one-token pages.
#include "backends/flashinfer/fi_fastdiv.cuh"  // first: see there

#include <cuda_bf16.h>

#include <flashinfer/attention/cascade.cuh>
#include <flashinfer/attention/default_prefill_params.cuh>
#include <flashinfer/attention/prefill.cuh>
#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/attention/variants.cuh>

#include <string>
#include <vector>

#include "backends/flashinfer/fi_common.h"
#include "backends/flashinfer/fi_params.cuh"

namespace kvfi {
namespace {

using Params = flashinfer::BatchPrefillRaggedParams<bf16, bf16, bf16, int32_t>;

struct RaggedRegions {
  size_t k, v, end;
};

RaggedRegions ragged_regions(int64_t rows, int64_t keys, int64_t seqs, int64_t group,
                             int64_t width) {
  RaggedRegions r;
  r.k = prefill_int_ws_bytes(rows, seqs, group);
  r.v = r.k + align_up(2 * static_cast<size_t>(std::max<int64_t>(keys, 0) * width));
  r.end = r.v + align_up(2 * static_cast<size_t>(std::max<int64_t>(keys, 0) * width));
  return r;
}

// A K/V element as the cache would hold it: through e4m3 with its scale for an fp8 kv_dtype.
__device__ float as_cached(float x, bool through_fp8, float scale) {
  return through_fp8 ? static_cast<float>(fp8(x / scale)) * scale : x;
}

// Rows of float32 [row][width] at row stride rs into packed bf16, for k and v at once.
__global__ void to_bf16_kernel(const float* k, const float* v, int64_t rs, int64_t rows,
                               int32_t width, bool through_fp8, float ks, float vs, bf16* k_out,
                               bf16* v_out) {
  const int64_t n = rows * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / width, c = i % width;
    k_out[i] = __float2bfloat16_rn(as_cached(k[r * rs + c], through_fp8, ks));
    v_out[i] = __float2bfloat16_rn(as_cached(v[r * rs + c], through_fp8, vs));
  }
}

template <uint32_t CTA, uint32_t HD, flashinfer::MaskMode MASK>
cudaError_t launch(const Params& p, cudaStream_t s) {
  return flashinfer::BatchPrefillWithRaggedKVCacheDispatched<CTA, HD, HD, kNoRope, false, MASK,
                                                             Variant>(p, nullptr, nullptr, false,
                                                                      s);
}

template <uint32_t HD, flashinfer::MaskMode MASK>
cudaError_t launch_tile(int64_t cta_tile_q, const Params& p, cudaStream_t s) {
  return with_cta_tile(cta_tile_q, [&](auto cta) {
    return launch<decltype(cta)::value, HD, MASK>(p, s);
  });
}

template <uint32_t HD>
cudaError_t launch_mask(bool causal, int64_t cta_tile_q, const Params& p, cudaStream_t s) {
  return causal ? launch_tile<HD, flashinfer::MaskMode::kCausal>(cta_tile_q, p, s)
                : launch_tile<HD, flashinfer::MaskMode::kNone>(cta_tile_q, p, s);
}

bool packed_rows(const kvcheck_tensor& t, int64_t heads, int64_t dim) {
  return stride(t, 0) == heads * dim && stride(t, 1) == dim;
}

}  // namespace

size_t varlen_workspace_bytes(const kvcheck_size_query& q) {
  const int64_t group = q.num_q_heads / std::max(q.num_kv_heads, 1);
  const int64_t rows = std::max(q.max_rows, 0);  // query rows and key rows are both at most this
  return ragged_regions(rows, rows, std::max(q.max_seqs, 0), group,
                        static_cast<int64_t>(q.num_kv_heads) * q.head_dim)
      .end;
}

void varlen_run(const kvcheck_varlen_attention_args& a, cudaStream_t stream) {
  const int32_t hd = a.head_dim, nq = a.num_q_heads, nkv = a.num_kv_heads, n = a.num_seqs;
  if (a.struct_size < offsetof(kvcheck_varlen_attention_args, k_starts_host) + sizeof(void*))
    throw OpError("the args carry no workspace or host starts (a kvcheck older than this plugin)");
  if (hd != 64 && hd != 128)
    throw OpError("head_dim " + std::to_string(hd) + ": this plugin compiles 64 and 128");
  if (a.v_dim != hd) throw OpError("v_dim must equal head_dim");
  if (a.kv_dtype != KVCHECK_BF16 && a.kv_dtype != KVCHECK_FP8_E4M3 && a.kv_dtype != KVCHECK_F32)
    throw OpError("kv_dtype must be bf16 or fp8_e4m3 (or f32 rows read from such a cache)");
  if (nkv <= 0 || nq % nkv != 0) throw OpError("num_q_heads must be a multiple of num_kv_heads");
  if (a.q_starts_host == nullptr || a.k_starts_host == nullptr)
    throw OpError("needs q_starts_host and k_starts_host (its planner runs on the host)");
  if (!packed_rows(a.out, nq, hd)) throw OpError("out must be packed [rows][heads][head_dim]");
  if (stride(a.q, 1) != hd || stride(a.k, 1) != hd || stride(a.k, 0) != stride(a.v, 0))
    throw OpError("q / k / v must have packed heads, k and v one row stride");
  if (n <= 0) return;
  const int32_t rows = a.q_starts_host[n], keys = a.k_starts_host[n], group = nq / nkv;
  if (rows <= 0) return;
  const RaggedRegions reg = ragged_regions(rows, keys, n, group, static_cast<int64_t>(nkv) * hd);
  char* ws = static_cast<char*>(data(a.workspace));
  const size_t ws_bytes = static_cast<size_t>(extent(a.workspace, 0));
  if (ws == nullptr || ws_bytes < reg.end)
    throw OpError("workspace: " + std::to_string(ws_bytes) + " bytes, the call needs " +
                  std::to_string(reg.end));
  auto* k_rows = reinterpret_cast<bf16*>(ws + reg.k);
  auto* v_rows = reinterpret_cast<bf16*>(ws + reg.v);
  if (keys > 0) {
    const int64_t elems = static_cast<int64_t>(keys) * nkv * hd;
    const int blocks = static_cast<int>(std::min<int64_t>((elems + 255) / 256, 4096));
    to_bf16_kernel<<<blocks, 256, 0, stream>>>(data_as<const float>(a.k),
                                               data_as<const float>(a.v), stride(a.k, 0), keys,
                                               nkv * hd, a.kv_dtype == KVCHECK_FP8_E4M3,
                                               a.k_scale, a.v_scale, k_rows, v_rows);
    check_cuda(cudaGetLastError(), "varlen staging launch");
  }

  std::vector<int32_t> qo(a.q_starts_host, a.q_starts_host + n + 1);
  std::vector<int32_t> kv(a.k_starts_host, a.k_starts_host + n + 1);
  flashinfer::PrefillPlanInfo pi;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    auto* pinned = staging(reg.k);
    // No split-KV: the float workspace is never used (see fi_prefill.cu).
    check_cuda(flashinfer::PrefillPlan<int32_t>(
                   reinterpret_cast<void*>(kAlign), 0, ws, pinned, reg.k, pi, qo.data(),
                   kv.data(), rows, n, nq, nkv, hd, hd, /*page_size=*/1,
                   /*enable_cuda_graph=*/false, sizeof(bf16), /*window_left=*/-1,
                   /*fixed_split_size=*/-1, /*disable_split_kv=*/true, /*num_colocated_ctas=*/0,
                   /*uniform_q_len=*/0, stream, sizeof(bf16)),
               "PrefillPlan");
    staging_used(stream);
  }
  if (pi.split_kv) throw OpError("PrefillPlan split KV although asked not to");

  Params p;
  p.q = data_as<bf16>(a.q);
  p.k = k_rows;
  p.v = v_rows;
  p.q_indptr = data_as<int32_t>(a.q_starts);
  p.kv_indptr = data_as<int32_t>(a.k_starts);
  p.o = data_as<bf16>(a.out);
  p.lse = data_as<float>(a.lse);
  p.group_size = flashinfer::uint_fastdiv(group);
  p.num_qo_heads = nq;
  p.num_kv_heads = nkv;
  p.q_stride_n = static_cast<uint32_t>(stride(a.q, 0));
  p.q_stride_h = hd;
  p.k_stride_n = p.v_stride_n = static_cast<uint32_t>(nkv * hd);
  p.k_stride_h = p.v_stride_h = hd;
  set_plain_attention(p, a.scale);
  set_prefill_schedule(p, ws, pi);
  const bool causal = a.causal != 0;
  const cudaError_t e = hd == 64 ? launch_mask<64>(causal, pi.cta_tile_q, p, stream)
                                 : launch_mask<128>(causal, pi.cta_tile_q, p, stream);
  check_cuda(e, "BatchPrefillWithRaggedKVCacheDispatched");
}

void merge_run(const kvcheck_merge_states_args& a, cudaStream_t stream) {
  const int32_t n = a.num_rows, m = a.num_merge, nh = a.num_heads, hd = a.head_dim;
  if (hd != 64 && hd != 128)
    throw OpError("head_dim " + std::to_string(hd) + ": this plugin compiles 64 and 128");
  if (m < 0 || m > n) throw OpError("num_merge outside [0, num_rows]");
  for (const kvcheck_tensor* t : {&a.out_a, &a.out_b, &a.out})
    if (!packed_rows(*t, nh, hd)) throw OpError("out_a / out_b / out must be packed rows");
  auto* lse_out = data_as<float>(a.lse_out);
  if (m > 0)
    check_cuda(flashinfer::MergeState<bf16, bf16>(data_as<bf16>(a.out_a), data_as<float>(a.lse_a),
                                                  data_as<bf16>(a.out_b), data_as<float>(a.lse_b),
                                                  data_as<bf16>(a.out), lse_out,
                                                  static_cast<uint32_t>(m), nh, hd, stream),
               "MergeState");
  if (m == n) return;
  // Rows without context: state b as it is.
  const size_t row = static_cast<size_t>(nh) * hd, rest = static_cast<size_t>(n - m);
  check_cuda(cudaMemcpyAsync(data_as<bf16>(a.out) + m * row, data_as<bf16>(a.out_b) + m * row,
                             rest * row * sizeof(bf16), cudaMemcpyDeviceToDevice, stream),
             "merge copy");
  if (lse_out)
    check_cuda(cudaMemcpyAsync(lse_out + static_cast<size_t>(m) * nh,
                               data_as<float>(a.lse_b) + static_cast<size_t>(m) * nh,
                               rest * nh * sizeof(float), cudaMemcpyDeviceToDevice, stream),
               "merge lse copy");
}

}  // namespace kvfi
