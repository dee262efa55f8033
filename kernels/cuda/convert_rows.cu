// convert_rows.cu — CUDA op: float32 <-> the 16-bit io dtypes, with a scale and one value mapped
// (kernels/op_args.cuh: ConvertRowsArgs); the same element function as the host op
// (kernels/convert_rows.cuh), so both give the same bits. A grid-stride loop over rows x cols.
#include <stdexcept>

#include "kernels/convert_rows.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace kv::cuda {
namespace {

__global__ void convert_rows_kernel(ConvertRowsArgs a) {
  const int64_t n = static_cast<int64_t>(a.rows) * a.cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    convert_element(a, i / a.cols, i % a.cols);
}

}  // namespace

void convert_rows(const ConvertRowsArgs& a, cudaStream_t stream) {
  if (a.src_dtype == DType::fp8_e4m3 || a.dst_dtype == DType::fp8_e4m3)
    throw std::invalid_argument("convert_rows: f32, f16 and bf16 only");
  if (a.rows < 0 || a.cols < 0) throw std::invalid_argument("convert_rows: negative size");
  const int64_t n = static_cast<int64_t>(a.rows) * a.cols;
  if (n == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  convert_rows_kernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), kThreads, 0,
                        stream>>>(a);
}

}  // namespace kv::cuda
