// convert_rows.cpp — host op: float32 <-> the 16-bit io dtypes, with a scale and one value mapped
// (kernels/op_args.cuh: ConvertRowsArgs). The bridge between the engine and a backend whose
// declared io dtype or lse convention differs from kvcheck's float32, natural-log one.
#include <stdexcept>

#include "kernels/convert_rows.cuh"
#include "kernels/host/host_ops.h"
#include "kernels/host/poll.h"

namespace kv::host {

void convert_rows(const ConvertRowsArgs& a) {
  if (a.src_dtype == DType::fp8_e4m3 || a.dst_dtype == DType::fp8_e4m3)
    throw std::invalid_argument("convert_rows: f32, f16 and bf16 only");
  if (a.rows < 0 || a.cols < 0) throw std::invalid_argument("convert_rows: negative size");
  for (int64_t r = 0; r < a.rows; ++r) {
    poll_point(a.cols);  // --max-seconds
    for (int64_t c = 0; c < a.cols; ++c) convert_element(a, r, c);
  }
}

}  // namespace kv::host
