// fi_pages.cu — kvcheck's block table as FlashInfer's page lists: a row's pages packed at its
// indptr offset (fi_common.h).
#include "backends/flashinfer/fi_common.h"

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

}  // namespace kvfi
