// convert_rows.cuh — one element of convert_rows (op_args.cuh: ConvertRowsArgs), shared by the
// host op and the CUDA kernel so both give the same bits.
#pragma once

#include "kernels/dtype.cuh"
#include "kernels/op_args.cuh"

namespace kv {

KV_HD float convert_load(const void* base, DType t, int64_t i) {
  if (t == DType::f32) return static_cast<const float*>(base)[i];
  const uint16_t h = static_cast<const uint16_t*>(base)[i];
  return t == DType::bf16 ? bf16_to_f32(h) : f16_to_f32(h);
}

KV_HD void convert_store(void* base, DType t, int64_t i, float v) {
  if (t == DType::f32) {
    static_cast<float*>(base)[i] = v;
    return;
  }
  static_cast<uint16_t*>(base)[i] = t == DType::bf16 ? f32_to_bf16(v) : f32_to_f16(v);
}

KV_HD void convert_element(const ConvertRowsArgs& a, int64_t r, int64_t c) {
  const float x = convert_load(a.src, a.src_dtype, r * a.src_row_stride + c);
  const float y = (a.map_value && x == a.match) ? a.replace : x * a.scale;
  convert_store(a.dst, a.dst_dtype, r * a.dst_row_stride + c, y);
}

}  // namespace kv
