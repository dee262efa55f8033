// call_cost.cpp — kvbench_python_call: what the Python host adds to one op call. Calls
// paged_decode N times with the same arguments (8 rows, 32 q / 8 kv heads, head_dim 128, a
// bf16-sized cache of 1024 blocks of 16, plan and workspace) on a no-op C op and on the Python
// host running tests/python_host/noop_backend.py (an op that touches every array it gets), and
// prints the mean time per call of each and their difference. Host memory, or GPU memory with
// --device cuda in a CUDA build (torch tensors through DLPack).
//
//   build/tests/kvbench_python_call [--calls N] [--device host|cuda]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kvcheck/backend.h"
#include "plugin/backend_library.h"

#ifdef KVCHECK_CALL_COST_CUDA
#include <cuda_runtime.h>
#endif

namespace {

// Memory of the run's device, freed at exit.
void* device_bytes(size_t n, bool cuda) {
#ifdef KVCHECK_CALL_COST_CUDA
  if (cuda) {
    void* p = nullptr;
    if (cudaMalloc(&p, n) != cudaSuccess) {
      std::fprintf(stderr, "cudaMalloc of %zu bytes failed\n", n);
      std::exit(1);
    }
    return p;
  }
#endif
  (void)cuda;
  return std::calloc(n, 1);
}

struct Tensor {
  kvcheck_tensor t{};
  int64_t shape[4]{}, strides[4]{};
};

// A contiguous tensor of `dtype` and `dims` over fresh memory of the device.
void make(Tensor& x, int32_t dtype, std::vector<int64_t> dims, int bytes, bool cuda) {
  x.t.dtype = dtype;
  x.t.dl.ndim = static_cast<int32_t>(dims.size());
  x.t.dl.device = {cuda ? kDLCUDA : kDLCPU, 0};
  x.t.dl.dtype = {dtype == KVCHECK_F32 ? uint8_t(kDLFloat) : dtype == KVCHECK_I32 ? uint8_t(kDLInt)
                                                                                  : uint8_t(kDLUInt),
                  static_cast<uint8_t>(8 * bytes), 1};
  int64_t n = 1;
  for (int i = x.t.dl.ndim - 1; i >= 0; --i) {
    x.shape[i] = dims[i];
    x.strides[i] = n;
    n *= dims[i];
  }
  x.t.dl.shape = x.shape;
  x.t.dl.strides = x.strides;
  x.t.dl.data = device_bytes(static_cast<size_t>(n) * bytes, cuda);
}

int32_t noop_decode(void*, const kvcheck_paged_decode_args*, void*, char*, size_t) {
  return KVCHECK_OK;
}

// Mean microseconds per call of `op` over `calls` calls (after 100 to warm up).
template <class Op>
double time_calls(Op op, const kvcheck_paged_decode_args& a, int calls) {
  char err[512];
  for (int i = 0; i < 100; ++i) op(nullptr, &a, nullptr, err, sizeof(err));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    if (op(nullptr, &a, nullptr, err, sizeof(err)) != KVCHECK_OK) {
      std::fprintf(stderr, "the op failed: %s\n", err);
      std::exit(1);
    }
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 20000;
  bool cuda = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--calls" && i + 1 < argc) calls = std::atoi(argv[++i]);
    else if (arg == "--device" && i + 1 < argc) cuda = std::string(argv[++i]) == "cuda";
    else {
      std::fprintf(stderr, "usage: %s [--calls N] [--device host|cuda]\n", argv[0]);
      return 2;
    }
  }
#ifndef KVCHECK_CALL_COST_CUDA
  if (cuda) {
    std::fprintf(stderr, "this build has no CUDA device\n");
    return 2;
  }
#endif
  const int rows = 8, hq = 32, hkv = 8, hd = 128, blocks = 1024, bs = 16, per_seq = 64;
  Tensor q, out, lse, table, lens, plan, work, k, v;
  make(q, KVCHECK_BF16, {rows, hq, hd}, 2, cuda);
  make(out, KVCHECK_BF16, {rows, hq, hd}, 2, cuda);
  make(lse, KVCHECK_F32, {rows, hq}, 4, cuda);
  make(table, KVCHECK_I32, {rows, per_seq}, 4, cuda);
  make(lens, KVCHECK_I32, {rows}, 4, cuda);
  make(plan, KVCHECK_U8, {4096}, 1, cuda);
  make(work, KVCHECK_U8, {1 << 20}, 1, cuda);
  make(k, KVCHECK_BF16, {blocks, bs, hkv, hd}, 2, cuda);
  make(v, KVCHECK_BF16, {blocks, bs, hkv, hd}, 2, cuda);
  kvcheck_paged_decode_args a{};
  a.struct_size = sizeof(a);
  a.cache.struct_size = sizeof(a.cache);
  a.cache.layout = KVCHECK_LAYOUT_KV_SEPARATE;
  a.cache.dtype = KVCHECK_BF16;
  a.cache.num_blocks = blocks;
  a.cache.block_size = bs;
  a.cache.num_kv_heads = hkv;
  a.cache.head_dim = hd;
  a.cache.k = k.t;
  a.cache.v = v.t;
  a.cache.k_scale = a.cache.v_scale = 1.0f;
  a.q = q.t;
  a.out = out.t;
  a.lse = lse.t;
  a.block_table = table.t;
  a.seq_lens = lens.t;
  a.plan = plan.t;
  a.workspace = work.t;
  a.num_rows = rows;
  a.num_q_heads = hq;
  a.v_dim = hd;
  a.scale = 0.088f;
  a.max_splits = 1;

  const double c_us = time_calls(noop_decode, a, calls);
  setenv("KVCHECK_PYTHON_HOST", KVCHECK_PYTHON_HOST_PATH, 0);  // the build's host, not beside us
  kv::BackendLibrary lib(std::string("python:") + KVCHECK_NOOP_BACKEND, cuda ? kDLCUDA : kDLCPU,
                         0);
  const kvcheck_backend& t = lib.table();
  const double py_us = time_calls(
      [&t](void*, const kvcheck_paged_decode_args* x, void* s, char* e, size_t n) {
        return t.paged_decode(t.self, x, s, e, n);
      },
      a, calls);
  std::printf("device %s, %d calls of paged_decode (9 tensors)\n", cuda ? "cuda" : "host", calls);
  std::printf("  no-op C op:            %8.3f us/call\n", c_us);
  std::printf("  no-op Python op:       %8.3f us/call (%s)\n", py_us, lib.version().c_str());
  std::printf("  the Python host adds:  %8.3f us/call\n", py_us - c_us);
  return 0;
}
