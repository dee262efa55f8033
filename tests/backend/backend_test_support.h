// backend_test_support.h — shared fixtures of the backend plugin tests: the built host plugin
// (KVCHECK_HOST_BACKEND, dlopen'ed once), a call wrapper that reports the plugin's message, a twin
// of a test cache (same bytes, another buffer) so the plugin and kv::host run on identical inputs,
// and bit-for-bit comparison. Random data, poisoning and caches come from the kernel tests.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "backend/abi_convert.h"
#include "kernels/kernel_test_support.h"
#include "kvcheck/backend.h"

namespace kv::test {

inline constexpr DLDevice kCpu = {kDLCPU, 0};

inline kvcheck_host host_for(DLDevice device, const char* options = "") {
  kvcheck_host h{};
  h.struct_size = sizeof(h);
  h.abi_version = KVCHECK_BACKEND_ABI_VERSION;
  h.device = device;
  h.options = options;
  return h;
}

// The host plugin's library, loaded once for the test binary and never unloaded.
inline void* host_plugin_handle() {
  static void* handle = dlopen(KVCHECK_HOST_BACKEND, RTLD_NOW | RTLD_LOCAL);
  return handle;
}

inline kvcheck_backend_init_fn host_plugin_init() {
  void* h = host_plugin_handle();
  return h ? reinterpret_cast<kvcheck_backend_init_fn>(dlsym(h, KVCHECK_BACKEND_INIT_SYMBOL))
           : nullptr;
}

// The host plugin's table on kDLCPU; fails the test (and returns a table of NULLs) if it will not
// load.
inline const kvcheck_backend& host_plugin() {
  static const kvcheck_backend* table = [] {
    kvcheck_backend_init_fn init = host_plugin_init();
    if (init == nullptr) return static_cast<const kvcheck_backend*>(nullptr);
    char err[256] = "";
    const kvcheck_host host = host_for(kCpu);
    return init(KVCHECK_BACKEND_ABI_VERSION, &host, err, sizeof(err));
  }();
  static const kvcheck_backend none{};
  if (table == nullptr) {
    const char* why = dlerror();
    ADD_FAILURE() << "cannot load " << KVCHECK_HOST_BACKEND << ": "
                  << (why ? why : "init returned NULL");
  }
  return table ? *table : none;
}

// Calls one op of the table; "" on KVCHECK_OK, else the status and the plugin's message.
template <class Fn, class Args>
std::string call(Fn fn, const Args& args) {
  if (fn == nullptr) return "op is NULL in the table";
  char err[512];
  memset(err, 'x', sizeof(err));  // the plugin must NUL-terminate what it writes
  const int32_t status = fn(host_plugin().self, &args, nullptr, err, sizeof(err));
  if (status == KVCHECK_OK) return "";
  return "status " + std::to_string(status) + ": " + std::string(err, strnlen(err, sizeof(err)));
}

// A cache with the same bytes in another buffer, its descriptor moved along.
inline TestCache twin(const TestCache& c) {
  TestCache t;
  t.storage = c.storage;
  t.desc = c.desc;
  char* from = reinterpret_cast<char*>(const_cast<uint64_t*>(c.storage.data()));
  char* to = reinterpret_cast<char*>(t.storage.data());
  t.desc.k = to + (static_cast<char*>(c.desc.k) - from);
  t.desc.v = to + (static_cast<char*>(c.desc.v) - from);
  return t;
}

// An MLA latent cache: one head of kv_lora_rank + rope features per token, v == k.
inline TestCache make_latent_cache(DType dtype, int32_t num_blocks, int32_t block_size,
                                   int32_t head_dim) {
  TestCache c = make_test_cache(KvLayout::kv_separate, dtype, num_blocks, block_size, 1, head_dim);
  c.desc.v = c.desc.k;
  c.desc.v_stride_block = c.desc.k_stride_block;
  c.desc.v_stride_token = c.desc.k_stride_token;
  c.desc.v_stride_head = c.desc.k_stride_head;
  return c;
}

// A cache configuration of the parity tests.
struct CacheKind {
  const char* name;
  DType dtype;
  KvLayout layout;
  bool mla;  // latent: one head, v == k (layout ignored)
  int32_t block_size, kv_heads, head_dim;
};

// Awkward caches: block sizes 1, 3, 7, 16; every dtype; plain, interleaved and MLA latent.
inline const std::vector<CacheKind>& cache_kinds() {
  static const std::vector<CacheKind> kinds = {
      {"f32_plain_bs1", DType::f32, KvLayout::kv_separate, false, 1, 2, 4},
      {"bf16_plain_bs3", DType::bf16, KvLayout::kv_separate, false, 3, 3, 5},
      {"f16_interleaved_bs7", DType::f16, KvLayout::kv_interleaved, false, 7, 2, 6},
      {"fp8_interleaved_bs16", DType::fp8_e4m3, KvLayout::kv_interleaved, false, 16, 1, 8},
      {"fp8_plain_bs7", DType::fp8_e4m3, KvLayout::kv_separate, false, 7, 2, 3},
      {"bf16_mla_bs7", DType::bf16, KvLayout::kv_separate, true, 7, 1, 11},
      {"fp8_mla_bs3", DType::fp8_e4m3, KvLayout::kv_separate, true, 3, 1, 9},
      {"f32_mla_bs16", DType::f32, KvLayout::kv_separate, true, 16, 1, 6},
  };
  return kinds;
}

inline void PrintTo(const CacheKind& k, std::ostream* os) { *os << k.name; }

// A cache of that kind, every byte a NaN code; fp8 with scales other than 1.
inline TestCache make_cache(const CacheKind& k, int32_t num_blocks) {
  TestCache c = k.mla ? make_latent_cache(k.dtype, num_blocks, k.block_size, k.head_dim)
                      : make_test_cache(k.layout, k.dtype, num_blocks, k.block_size, k.kv_heads,
                                        k.head_dim);
  if (k.dtype == DType::fp8_e4m3) {
    c.desc.k_scale = 0.02f;
    c.desc.v_scale = k.mla ? 0.02f : 0.05f;  // MLA's V is its K
  }
  return c;
}

// "" when a and b hold the same bytes, else where they first differ.
template <class T>
std::string bit_diff(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size())
    return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (memcmp(&a[i], &b[i], sizeof(T)) != 0) return "element " + std::to_string(i) + " differs";
  return "";
}

// Identical float buffers, both filled with the poison NaN (kernel_test_support.h).
inline std::vector<float> poisoned(size_t n) {
  std::vector<float> v(n);
  poison(v);
  return v;
}

}  // namespace kv::test
