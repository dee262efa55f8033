// fi_fp8.cu — the fp8 cache's value scale applied after FlashInfer's kernels (fi_common.h): the
// output rows of a decode or prefill over an fp8 cache, multiplied by v_scale in place.
#include "backends/flashinfer/fi_common.h"

namespace kvfi {
namespace {

__global__ void scale_rows_kernel(bf16* out, int64_t row_stride, int32_t rows, int32_t cols,
                                  float s) {
  const int64_t n = static_cast<int64_t>(rows) * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    bf16& e = out[(i / cols) * row_stride + i % cols];
    e = __float2bfloat16_rn(__bfloat162float(e) * s);
  }
}

}  // namespace

void scale_rows(const kvcheck_tensor& out, int32_t rows, float s, cudaStream_t stream) {
  if (s == 1.0f || rows <= 0) return;
  const auto cols = static_cast<int32_t>(extent(out, 1) * extent(out, 2));
  const int64_t n = static_cast<int64_t>(rows) * cols;
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 4096));
  scale_rows_kernel<<<blocks, 256, 0, stream>>>(data_as<bf16>(out), stride(out, 0), rows, cols,
                                                 s);
  check_cuda(cudaGetLastError(), "scale_rows launch");
}

}  // namespace kvfi
