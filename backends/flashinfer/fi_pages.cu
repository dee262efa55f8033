// fi_pages.cu — kvcheck's block table as FlashInfer's page lists: the host side (page counts,
// indptr, last-page lengths) and a row's pages packed at its indptr offset (fi_common.h).
#include "backends/flashinfer/fi_common.h"
#include "kernels/block_count.cuh"

namespace kvfi {
namespace {

__global__ void pack_pages_kernel(const int32_t* table, int64_t stride, const int32_t* indptr,
                                  int32_t* indices, int32_t rows) {
  const int32_t r = blockIdx.x;
  if (r >= rows) return;
  const int32_t begin = indptr[r], n = indptr[r + 1] - begin;
  for (int32_t j = threadIdx.x; j < n; j += blockDim.x) indices[begin + j] = table[r * stride + j];
}

}  // namespace

void pack_pages(const int32_t* table, int64_t stride, const int32_t* indptr, int32_t* indices,
                int32_t rows, cudaStream_t stream) {
  if (rows <= 0) return;
  pack_pages_kernel<<<rows, 128, 0, stream>>>(table, stride, indptr, indices, rows);
  check_cuda(cudaGetLastError(), "pack_pages launch");
}

HostPages host_pages(const std::vector<int32_t>& lens, int32_t block_size, int32_t max_pages) {
  const size_t n = lens.size();
  HostPages p{std::vector<int32_t>(n + 1, 0), std::vector<int32_t>(n, 0)};
  for (size_t s = 0; s < n; ++s) {
    const int32_t len = std::max(lens[s], 0);
    const int32_t pages = kv::blocks_for_tokens(len, block_size);
    if (pages > max_pages)
      throw OpError("sequence " + std::to_string(s) + " of " + std::to_string(len) +
                    " tokens needs more pages than its block table row holds (" +
                    std::to_string(max_pages) + ")");
    p.indptr[s + 1] = p.indptr[s] + pages;
    p.last_page_len[s] = pages ? len - (pages - 1) * block_size : 0;
  }
  return p;
}

std::vector<int32_t> decode_lens(const kvcheck_decode_plan_args& a) {
  std::vector<int32_t> lens(a.seq_lens_host, a.seq_lens_host + std::max(a.num_rows, 0));
  for (int32_t& l : lens) l = std::max(l, 0);
  return lens;
}

std::vector<int32_t> prefill_lens(const kvcheck_paged_prefill_args& a) {
  std::vector<int32_t> lens(std::max(a.num_seqs, 0));
  for (size_t s = 0; s < lens.size(); ++s)
    lens[s] = a.ctx_lens_host[s] + a.q_starts_host[s + 1] - a.q_starts_host[s];
  return lens;
}

}  // namespace kvfi
