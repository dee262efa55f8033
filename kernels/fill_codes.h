// fill_codes.h — the element codes fill_blocks' nan and inf patterns write, the same on the host
// (kernels/host/fill_blocks.cpp) and the GPU (kernels/cuda/fill_blocks.cu): a storage dtype's
// quiet NaN and +Inf as little-endian element bits. e4m3fn has no Inf: its NaN stands for both.
#pragma once

#include <cstdint>

#include "kernels/dtype.cuh"

namespace kv {

struct FillCodes {
  uint32_t nan, inf;
};

constexpr FillCodes fill_codes(DType t) {
  switch (t) {
    case DType::f32:
      return {0x7fc00000u, 0x7f800000u};
    case DType::f16:
      return {0x7e00u, 0x7c00u};
    case DType::bf16:
      return {0x7fc0u, 0x7f80u};
    case DType::fp8_e4m3:
      return {0x7fu, 0x7fu};
  }
  return {0, 0};
}

}  // namespace kv
