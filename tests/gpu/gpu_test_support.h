// gpu_test_support.h — the GPU tests' fixture: a HostDevice and a CudaDevice side by side, "twin"
// buffers with identical contents on both, and comparisons that explain a mismatch.
//
// Every GPU test runs the CUDA op and the host op (the spec) on identical inputs and compares.
// Outputs are poisoned first with kPoisonBits (a NaN payload no op produces) on both devices, so:
//   - an element the host op leaves unwritten must still hold kPoisonBits on the GPU, and
//     vice versa (catches out-of-range writes and missing writes);
//   - NaN positions must match (payloads may differ: GPU arithmetic returns the canonical NaN),
//     ±Inf must match exactly;
//   - finite values: bit-exact for data movement and conversion ops, otherwise within a relative L2
//     tolerance per row, whose reason each test states.
// Tests skip (GTEST_SKIP) when no GPU is visible, so the binary passes on a host-only machine.
// KVCHECK_GPU_TEST_SEED=<n> changes the random inputs (default 1); failures print the seed.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "device/cuda/cuda_device.h"
#include "device/host_device.h"
#include "kernels/kernel_test_support.h"
#include "tests/support/row_compare.h"

namespace kv::gpu_test {

using test::kPoisonBits;
using test::Rng;

enum class Side { host, cuda };

inline uint64_t base_seed() {
  const char* s = std::getenv("KVCHECK_GPU_TEST_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 1;
}

// One allocation on each device, same size. p<T>(side) is the pointer an op on that side gets.
struct Twin {
  void* h = nullptr;
  void* d = nullptr;
  size_t bytes = 0;
  template <class T = void>
  T* p(Side s) const { return static_cast<T*>(s == Side::host ? h : d); }
};

struct TwinCache;

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_gpu_present()) GTEST_SKIP() << "no CUDA GPU visible: GPU tests skipped";
    if (const std::string why = cuda_kernel_image_missing(); !why.empty())
      GTEST_SKIP() << why << ": GPU tests skipped";
    cuda_ = std::make_unique<CudaDevice>();
    rng_.seed(base_seed() * 1000003 + std::hash<std::string>{}(
        ::testing::UnitTest::GetInstance()->current_test_info()->name()));
  }
  void TearDown() override {
    for (Twin& t : twins_) {
      host_.release(t.h);
      if (cuda_) cuda_->release(t.d);
    }
    twins_.clear();
  }

  Device& dev(Side s) { return s == Side::host ? static_cast<Device&>(host_) : *cuda_; }

  // Run `op(Device&, Side)` on the host device, then on the CUDA device, and wait for the GPU.
  template <class F>
  void on_both(F&& op) {
    op(static_cast<Device&>(host_), Side::host);
    op(static_cast<Device&>(*cuda_), Side::cuda);
    cuda_->synchronize();
  }

  Twin twin(size_t bytes) {
    Twin t{host_.alloc(bytes), cuda_->alloc(bytes), bytes};
    twins_.push_back(t);
    return t;
  }
  template <class T>
  Twin upload(const std::vector<T>& v) {
    Twin t = twin(std::max<size_t>(1, v.size() * sizeof(T)));
    set(t, v);
    return t;
  }
  template <class T>
  void set(const Twin& t, const std::vector<T>& v) {
    host_.upload(t.h, v.data(), v.size() * sizeof(T));
    cuda_->upload(t.d, v.data(), v.size() * sizeof(T));
  }
  // `n` floats of kPoisonBits on both sides.
  Twin poisoned_floats(size_t n) {
    std::vector<float> v(n);
    test::poison(v);
    return upload(v);
  }
  template <class T>
  std::vector<T> get(const Twin& t, Side s, size_t n) {
    std::vector<T> v(n);
    dev(s).download(v.data(), t.p(s), n * sizeof(T));
    return v;
  }

  // A cache on both devices whose every byte is `fill` (dtype codes, or seeded random bits that
  // include NaN/Inf codes as stale memory does), identical on the two sides.
  TwinCache cache(KvLayout layout, DType dtype, int32_t num_blocks, int32_t block_size,
                  int32_t kv_heads, int32_t head_dim, FillPattern fill = FillPattern::nan);
  // A cache on both devices holding `bytes`, a layer cache of that shape built on the host.
  TwinCache cache_holding(const std::vector<unsigned char>& bytes, KvLayout layout, DType dtype,
                          int32_t num_blocks, int32_t block_size, int32_t kv_heads,
                          int32_t head_dim);

  std::string trace_seed() const { return "KVCHECK_GPU_TEST_SEED=" + std::to_string(base_seed()); }

  HostDevice host_;
  std::unique_ptr<CudaDevice> cuda_;
  Rng rng_;
  std::vector<Twin> twins_;
};

// ---- comparisons -------------------------------------------------------------------------------

// show, same_class and the row comparison behind close_rows: tests/support/row_compare.h, shared
// with kvbench_decode --check.
using test::same_class;
using test::show;

// Bytes equal everywhere.
inline ::testing::AssertionResult same_bytes(const std::vector<unsigned char>& h,
                                             const std::vector<unsigned char>& c) {
  if (h.size() != c.size()) return ::testing::AssertionFailure() << "sizes differ";
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < h.size(); ++i)
    if (h[i] != c[i] && bad++ == 0) first = i;
  if (!bad) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << h.size() << " bytes differ; first at byte " << first << ": host 0x"
         << std::hex << int(h[first]) << ", cuda 0x" << int(c[first]) << std::dec;
}

// Elements of a buffer of `t` (a cache) agree: same bits, or NaN on both sides (a NaN that went
// through GPU arithmetic has the canonical payload; the host keeps the input's).
inline ::testing::AssertionResult same_elements(const std::vector<unsigned char>& h,
                                                const std::vector<unsigned char>& c, DType t) {
  if (h.size() != c.size()) return ::testing::AssertionFailure() << "sizes differ";
  const int es = dtype_size(t);
  for (size_t i = 0; i + es <= h.size(); i += es) {
    if (std::memcmp(&h[i], &c[i], es) == 0) continue;
    const float hv = load_as_f32(h.data(), static_cast<int64_t>(i / es), t);
    const float cv = load_as_f32(c.data(), static_cast<int64_t>(i / es), t);
    if (std::isnan(hv) && std::isnan(cv)) continue;
    return ::testing::AssertionFailure() << "element " << i / es << " (byte " << i
                                         << ") differs: host " << show(hv) << ", cuda " << show(cv);
  }
  return ::testing::AssertionSuccess();
}

// Element-exact comparison of floats (NaN payloads aside).
inline ::testing::AssertionResult same_floats(const std::vector<float>& h,
                                              const std::vector<float>& c) {
  for (size_t i = 0; i < h.size(); ++i) {
    std::string why;
    if (!same_class(h[i], c[i], why))
      return ::testing::AssertionFailure() << "element " << i << ": " << why;
    if (std::isfinite(h[i]) && f32_bits(h[i]) != f32_bits(c[i]) && !(h[i] == 0 && c[i] == 0))
      return ::testing::AssertionFailure()
             << "element " << i << ": host " << show(h[i]) << " != cuda " << show(c[i])
             << " (this op must agree bit for bit)";
  }
  return ::testing::AssertionSuccess();
}

// Row-wise comparison: rows of `row` elements at stride `row` (the vectors are [rows][row]).
// Classes must agree element by element; over the finite elements of a row,
// ||cuda - host|| <= tol * max(||host||, floor) where floor keeps all-but-zero rows from
// turning rounding noise into a large ratio (test::compare_row).
inline ::testing::AssertionResult close_rows(const std::vector<float>& h,
                                             const std::vector<float>& c, size_t row, double tol,
                                             double floor = 1e-6) {
  if (h.size() != c.size()) return ::testing::AssertionFailure() << "sizes differ";
  double worst = 0.0;
  for (size_t r0 = 0; r0 < h.size(); r0 += row) {
    const size_t n = std::min(h.size(), r0 + row) - r0;
    const test::RowCheck rc = test::compare_row(&h[r0], &c[r0], n, tol, floor);
    if (rc.bad_element != test::RowCheck::kNoElement)
      return ::testing::AssertionFailure()
             << "row " << r0 / row << ", element " << rc.bad_element << ": " << rc.why;
    worst = std::max(worst, rc.err);
    if (!rc.ok)
      return ::testing::AssertionFailure()
             << "row " << r0 / row << ": relative L2 error " << rc.err << " > tolerance " << tol;
  }
  return ::testing::AssertionSuccess() << "worst relative L2 " << worst;
}

// lse-like values: classes agree and |cuda - host| <= tol * (1 + |host|).
inline ::testing::AssertionResult close_scalars(const std::vector<float>& h,
                                                const std::vector<float>& c, double tol) {
  for (size_t i = 0; i < h.size(); ++i) {
    std::string why;
    if (!same_class(h[i], c[i], why))
      return ::testing::AssertionFailure() << "element " << i << ": " << why;
    if (!std::isfinite(h[i]) || test::is_poison(h[i])) continue;
    const double err = std::fabs(static_cast<double>(c[i]) - h[i]);
    if (!(err <= tol * (1.0 + std::fabs(h[i]))))
      return ::testing::AssertionFailure() << "element " << i << ": host " << show(h[i])
                                           << ", cuda " << show(c[i]) << ", |diff| " << err;
  }
  return ::testing::AssertionSuccess();
}

// ---- a paged cache on both devices ----------------------------------------------------------

struct TwinCache {
  Twin mem;
  KvLayout layout = KvLayout::kv_separate;
  DType dtype = DType::f32;
  int32_t num_blocks = 0, block_size = 0, kv_heads = 0, head_dim = 0;
  float k_scale = 1.0f, v_scale = 1.0f;
  bool v_is_k = false;  // MLA: one latent row per token, V read through the K pointer

  PagedKv desc(Side s) const {
    PagedKv c = make_paged_kv(mem.p(s), layout, dtype, num_blocks, block_size, kv_heads, head_dim);
    c.k_scale = k_scale;
    c.v_scale = v_is_k ? k_scale : v_scale;
    if (v_is_k) c.v = c.k, c.v_stride_block = c.k_stride_block;
    return c;
  }
  size_t bytes() const { return mem.bytes; }
};

inline TwinCache GpuTest::cache(KvLayout layout, DType dtype, int32_t num_blocks,
                                int32_t block_size, int32_t kv_heads, int32_t head_dim,
                                FillPattern fill) {
  const size_t bytes = static_cast<size_t>(
      layer_cache_bytes(num_blocks, block_size, kv_heads, head_dim, dtype));
  std::vector<unsigned char> init(bytes);
  host::fill_pattern(init.data(), bytes, fill, dtype, rng_(), 0);
  return cache_holding(init, layout, dtype, num_blocks, block_size, kv_heads, head_dim);
}

inline TwinCache GpuTest::cache_holding(const std::vector<unsigned char>& bytes, KvLayout layout,
                                        DType dtype, int32_t num_blocks, int32_t block_size,
                                        int32_t kv_heads, int32_t head_dim) {
  return {.mem = upload(bytes), .layout = layout, .dtype = dtype, .num_blocks = num_blocks,
          .block_size = block_size, .kv_heads = kv_heads, .head_dim = head_dim};
}

}  // namespace kv::gpu_test
