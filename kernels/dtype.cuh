// dtype.cuh — storage types of the KV cache and their conversions to and from float.
//
// The conversions are written out bit by bit (no cuda_bf16.h intrinsics) so that the host device and
// the GPU round identically: round-to-nearest-even, NaN kept as a quiet NaN, overflow to Inf for
// f16/bf16. fp8 is e4m3 "fn" (the OCP/NVIDIA flavour used for KV caches): no Inf, NaN = 0x7f/0xff,
// largest finite 448; conversion saturates finite values to ±448 and maps NaN and ±Inf to NaN.
#pragma once

#include <cstdint>
#include <cstring>

#include "hd.cuh"

namespace kv {

enum class DType : int32_t { f32 = 0, f16 = 1, bf16 = 2, fp8_e4m3 = 3 };

KV_HD int dtype_size(DType t) {
  return t == DType::f32 ? 4 : (t == DType::fp8_e4m3 ? 1 : 2);
}

KV_HD uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

KV_HD float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// ---- bf16 ---------------------------------------------------------------------------------------

KV_HD uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN
  uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

KV_HD float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

// ---- f16 (IEEE binary16) ------------------------------------------------------------------------

KV_HD uint16_t f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: Inf
  if (abs < 0x38800000u) {  // below the smallest normal 2^-14: subnormal or zero
    // value = abs_float; subnormal unit is 2^-24. Round-to-nearest-even of value / 2^-24.
    float a = f32_from_bits(abs);
    float scaled = a * 16777216.0f;  // exact: multiplication by a power of two
    uint32_t q = static_cast<uint32_t>(scaled);
    float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t exp = ((abs >> 23) - 127 + 15);
  uint32_t mant = abs & 0x7fffffu;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | h);
}

KV_HD float f16_to_f32(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return f32_from_bits(sign | 0x7f800000u | (mant << 13));  // Inf / NaN
  if (exp == 0) {
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

// ---- fp8 e4m3fn ---------------------------------------------------------------------------------

KV_HD float fp8_e4m3_to_f32(uint8_t b) {
  uint32_t sign = (b & 0x80u) ? 1u : 0u;
  uint32_t exp = (b >> 3) & 0xfu;
  uint32_t mant = b & 0x7u;
  float v;
  if (exp == 0xfu && mant == 0x7u) return f32_from_bits(0x7fc00000u | (sign << 31));  // NaN
  if (exp == 0) {
    v = static_cast<float>(mant) * (1.0f / 512.0f);  // subnormal: mant * 2^-9
  } else {
    v = f32_from_bits(((exp - 7 + 127) << 23) | (mant << 20));
  }
  return sign ? -v : v;
}

KV_HD uint8_t f32_to_fp8_e4m3(float f) {
  uint32_t u = f32_bits(f);
  uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint8_t>(sign | 0x7fu);  // NaN and Inf -> NaN
  float a = f32_from_bits(abs);
  if (a >= 448.0f) return static_cast<uint8_t>(sign | 0x7eu);  // saturate to the largest finite
  if (a < 0.015625f) {  // below 2^-6: subnormal, unit 2^-9
    float scaled = a * 512.0f;
    uint32_t q = static_cast<uint32_t>(scaled);
    float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    return static_cast<uint8_t>(sign | q);  // q == 8 carries into the smallest normal: correct
  }
  uint32_t exp = (abs >> 23) - 127 + 7;
  uint32_t mant = abs & 0x7fffffu;
  uint32_t b = (exp << 3) | (mant >> 20);
  uint32_t rest = mant & 0xfffffu;
  if (rest > 0x80000u || (rest == 0x80000u && (b & 1u))) ++b;
  if (b > 0x7eu) b = 0x7eu;  // rounding up past 448 saturates
  return static_cast<uint8_t>(sign | b);
}

// ---- generic element access ---------------------------------------------------------------------

// Read element `idx` of a buffer of type `t` as float. fp8 values are returned unscaled.
KV_HD float load_as_f32(const void* base, int64_t idx, DType t) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(base)[idx];
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(base)[idx]);
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(base)[idx]);
    case DType::fp8_e4m3: return fp8_e4m3_to_f32(static_cast<const uint8_t*>(base)[idx]);
  }
  return 0.0f;
}

KV_HD void store_from_f32(void* base, int64_t idx, DType t, float v) {
  switch (t) {
    case DType::f32: static_cast<float*>(base)[idx] = v; break;
    case DType::f16: static_cast<uint16_t*>(base)[idx] = f32_to_f16(v); break;
    case DType::bf16: static_cast<uint16_t*>(base)[idx] = f32_to_bf16(v); break;
    case DType::fp8_e4m3: static_cast<uint8_t*>(base)[idx] = f32_to_fp8_e4m3(v); break;
  }
}

// The value a float takes after a round trip through storage type `t`; what the reference uses to
// "round K/V the way the cache stores them".
KV_HD float round_through(float v, DType t) {
  switch (t) {
    case DType::f32: return v;
    case DType::f16: return f16_to_f32(f32_to_f16(v));
    case DType::bf16: return bf16_to_f32(f32_to_bf16(v));
    case DType::fp8_e4m3: return fp8_e4m3_to_f32(f32_to_fp8_e4m3(v));
  }
  return v;
}

// The value a float takes after being written into a cache of type `t` whose dequantisation scale
// is `scale` (stored = v / scale, read back = stored * scale), as write_kv and load_k/load_v do.
KV_HD float round_through_scaled(float v, DType t, float scale) {
  return round_through(v / scale, t) * scale;
}

}  // namespace kv
