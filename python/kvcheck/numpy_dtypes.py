"""Storage types to and from float32 with NumPy, rounding exactly as kvcheck's ops do
(kernels/dtype.cuh): round-to-nearest-even, NaN kept; bf16 and f16 overflow to Inf; fp8 e4m3fn
saturates finite values to +-448 and maps NaN and +-Inf to NaN (0x7f / 0xff).

kvcheck hands bf16 as uint16 and fp8 e4m3 as uint8 arrays: decode(a.cache.k, a.cache.dtype)
reads them as float32, encode(x, dtype) makes the stored form. With torch, the same memory is
`t.view(torch.bfloat16)` / `t.view(torch.float8_e4m3fn)`.
"""

import numpy as np


def bf16_to_f32(u16):
    return (np.asarray(u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((u + (0x7FFF + ((u >> 16) & 1))) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def _fp8_table():
    b = np.arange(256, dtype=np.uint32)
    sign = np.where(b & 0x80, -1.0, 1.0)
    exp = (b >> 3) & 0xF
    mant = (b & 0x7).astype(np.float64)
    normal = (1.0 + mant / 8.0) * np.exp2(exp.astype(np.float64) - 7)
    value = np.where(exp == 0, mant / 512.0, normal)
    value = np.where((exp == 0xF) & ((b & 0x7) == 0x7), np.nan, value)
    return (sign * value).astype(np.float32)


FP8_E4M3_VALUES = _fp8_table()


def fp8_e4m3_to_f32(u8):
    return FP8_E4M3_VALUES[np.asarray(u8, dtype=np.uint8)]


def f32_to_fp8_e4m3(x):
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32) if x.flags.c_contiguous else np.ascontiguousarray(x).view(np.uint32)
    sign = ((u >> 24) & 0x80).astype(np.uint8)
    bits = u & 0x7FFFFFFF
    a = bits.view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        sub = np.rint(a * np.float32(512.0)).astype(np.uint32)  # rint: half to even
        exp = (bits >> 23).astype(np.int64) - 127 + 7
        mant = bits & 0x7FFFFF
        b = (exp << 3) | (mant >> 20)
        rest = mant & 0xFFFFF
        b = b + ((rest > 0x80000) | ((rest == 0x80000) & ((b & 1) == 1)))
        normal = np.minimum(b, 0x7E)
        out = np.where(a < np.float32(0.015625), sub, normal)
        out = np.where(a >= np.float32(448.0), 0x7E, out)
        out = np.where(bits >= 0x7F800000, 0x7F, out)
    return (out.astype(np.uint8) | sign).astype(np.uint8)


def decode(stored, dtype):
    """float32 values of stored cache elements of ABI dtype `dtype` (fp8 unscaled)."""
    if dtype == "f32":
        return np.asarray(stored, dtype=np.float32)
    if dtype == "f16":
        return np.asarray(stored).astype(np.float32)
    if dtype == "bf16":
        return bf16_to_f32(stored)
    if dtype == "fp8_e4m3":
        return fp8_e4m3_to_f32(stored)
    raise ValueError(f"decode: {dtype!r} is no cache dtype")


def encode(x, dtype):
    """The stored form of float32 values in a cache of ABI dtype `dtype`."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "f32":
        return x
    if dtype == "f16":
        with np.errstate(over="ignore"):
            return x.astype(np.float16)
    if dtype == "bf16":
        return f32_to_bf16(x)
    if dtype == "fp8_e4m3":
        return f32_to_fp8_e4m3(x)
    raise ValueError(f"encode: {dtype!r} is no cache dtype")


def round_through(x, dtype, scale=1.0):
    """What float32 values read back as after a store into a cache of `dtype` with dequantisation
    scale `scale` (stored = x / scale, read = stored * scale)."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "f32" and scale == 1.0:
        return x
    return decode(encode(x / np.float32(scale), dtype), dtype) * np.float32(scale)
