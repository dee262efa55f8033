// cuda_backend.cu — kvcheck's built-in CUDA ops (kernels/cuda) as a backend plugin:
// libkvcheck_backend_cuda.so, name "builtin-cuda". Built only with the CUDA device.
//
// Every op of the table but paged_prefill converts its ABI args back into kvcheck's descriptor
// (the table of builtin_table.h) and calls the kv::cuda launcher that CudaDevice calls, on
// the stream kvcheck passes, then checks cudaGetLastError; so through the ABI it computes bit for
// bit what kvcheck's CUDA device computes (tests/backend_equivalence.py --device cuda holds it to
// that). The decode plan is the built-in planner's (plan_decode_splits_for), computed on the host
// and copied into kvcheck's plan buffer on the stream, as Device::paged_decode_plan does;
// paged_decode carves kvcheck's partial_out / partial_lse out of the workspace it declared. Its
// optional lse output is one small kernel of this file (decode_lse_kernel). Runs on kDLCUDA only.
// No exception leaves an op: each becomes KVCHECK_ERROR with its message.
//
// Two CUDA runtimes, one context. kvcheck links the CUDA runtime statically, and so does this
// plugin (with kv_cuda_kernels: the version script keeps all of it local), so the process holds
// two cudart instances, each with its own module registry, kernel attributes, device-attribute
// cache and "last error". Both sit on the one CUDA driver: streams (cudaStream_t is a CUstream),
// device pointers and the primary context of a GPU are driver objects, valid in both. The plugin
// makes no CUDA call at init (kvcheck may load it to describe it without a GPU); each op uses the
// context current on the calling thread (kvcheck's: CudaDevice made the GPU's primary context
// current) and only if its runtime reports another device does it cudaSetDevice to the one kvcheck
// named, whose primary context is the one kvcheck uses. Launch errors are read from this plugin's
// runtime (kvcheck's cudaGetLastError cannot see them); a sticky fault is the context's, so both
// see it.
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/abi_convert.h"
#include "backends/builtin/builtin_table.h"
#include "kernels/attn_state.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/decode_splits.h"
#include "kernels/paged_kv.cuh"
#include "kvcheck/backend.h"
#include "report/version.h"

namespace {

using namespace kv;

// What init was given: the GPU kvcheck runs on.
struct State {
  int device = 0;
};
State g_state;

using builtin_plugin::put_error;

std::string cuda_error(const char* op, const char* call, cudaError_t e) {
  return std::string(op) + ": " + call + " failed: " + cudaGetErrorName(e) + " (" +
         cudaGetErrorString(e) + ")";
}

// The GPU kvcheck named, current on this thread (see the top); "" or why not.
std::string use_device(const char* op, const State& st) {
  int dev = -1;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess && dev == st.device) return "";
  (void)cudaGetLastError();
  e = cudaSetDevice(st.device);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda_error(op, "cudaSetDevice", e);
  }
  return "";
}

// ---- the optional lse of paged_decode ------------------------------------------------------
//
// The decode keeps the split states of rows with 2 or more splits in the workspace, where the lse
// is the host plugin's fold of them (merge_weights from the empty state, split by split). A row
// with one split is written straight to `out` and its lse is kept nowhere: this kernel recomputes
// it over the split's tokens [0, min(chunk, seq_len)) as max + log(sum exp(score - max)), the
// scores being scale * q.k with K read through the cache's strides (dequantised as the decode
// reads it). A padded row (seq_len <= 0) is untouched, as its output; a row the plan gives 0
// splits gets -inf (its output is 0), a broken plan NaN (its output is NaN).

constexpr int kLseThreads = 128;

__global__ void __launch_bounds__(kLseThreads) decode_lse_kernel(const PagedDecodeArgs a,
                                                                  float* lse) {
  __shared__ float sm_m[kLseThreads], sm_d[kLseThreads];
  __shared__ int sm_nan[kLseThreads];
  const int H = a.num_q_heads;
  const int h = blockIdx.x % H, row = blockIdx.x / H;
  const int64_t seq_len = a.seq_lens[row];
  if (seq_len <= 0) return;
  const int32_t ns = a.split_meta[kDecodeMetaHeader + row];
  const int64_t chunk = a.split_meta[0];
  float* dst = lse + static_cast<int64_t>(row) * H + h;
  if (ns > a.max_splits || (ns > 0 && chunk <= 0)) {
    if (threadIdx.x == 0) *dst = NAN;
    return;
  }
  if (ns <= 0) {
    if (threadIdx.x == 0) *dst = -INFINITY;
    return;
  }
  if (ns >= 2) {
    if (threadIdx.x == 0) {
      float l = -INFINITY;
      for (int32_t s = 0; s < ns; ++s)
        l = merge_weights(l, a.partial_lse[(static_cast<int64_t>(row) * a.max_splits + s) * H +
                                           h]).lse;
      *dst = l;
    }
    return;
  }
  // One split: recompute.
  const PagedKv& c = a.cache;
  const int group = H / c.num_kv_heads;
  const int kvh = h / group;
  const int hd = c.head_dim, bs = c.block_size;
  const float* q = a.q + row * a.q_row_stride + static_cast<int64_t>(h) * hd;
  const int32_t* table = a.block_table + static_cast<int64_t>(row) * a.block_table_stride;
  const int64_t end = min(chunk, seq_len);
  float m = -INFINITY, d = 0.0f;
  int nan = 0;
  for (int64_t t = threadIdx.x; t < end; t += blockDim.x) {
    const int32_t block = table[t / bs];
    const int64_t entry = t % bs;
    float dot = 0.0f;
    for (int f = 0; f < hd; ++f) dot += q[f] * load_k(c, block, entry, kvh, f);
    const float x = dot * a.scale;
    if (x != x) {
      nan = 1;
      continue;
    }
    if (x == -INFINITY) continue;
    if (x > m) {
      d = (m == -INFINITY) ? 0.0f : d * expf(m - x);
      m = x;
    }
    d += expf(x - m);  // +inf - +inf is NaN: an infinite score makes the lse NaN
  }
  sm_m[threadIdx.x] = m;
  sm_d[threadIdx.x] = d;
  sm_nan[threadIdx.x] = nan;
  __syncthreads();
  if (threadIdx.x != 0) return;
  SoftmaxState st;
  for (int i = 0; i < static_cast<int>(blockDim.x); ++i) {
    nan |= sm_nan[i];
    const float mi = sm_m[i], di = sm_d[i];
    if (mi == -INFINITY) continue;
    if (mi > st.m) {
      st.d = (st.m == -INFINITY) ? 0.0f : st.d * expf(st.m - mi);
      st.m = mi;
    }
    st.d += di * expf(mi - st.m);
  }
  *dst = nan ? NAN : softmax_lse(st);
}

void launch_decode_lse(const PagedDecodeArgs& d, float* lse, cudaStream_t s) {
  const int64_t ctas = static_cast<int64_t>(d.num_rows) * d.num_q_heads;
  if (ctas <= 0) return;
  if (ctas > 0x7fffffff) throw std::invalid_argument("paged_decode: lse grid too large");
  decode_lse_kernel<<<static_cast<unsigned>(ctas), kLseThreads, 0, s>>>(d, lse);
}

// ---- the plugin ------------------------------------------------------------------------------

// What CudaDevice runs: every cache dtype, layout and head dim the launchers take (they refuse at
// launch, as in the built-in device, what they cannot: paged_decode's v_dim above kMaxHeadDim
// 1024, linear attention's head_dim above 1024), with the host device's conventions.
struct CudaOps {
  static constexpr const char* kName = "builtin-cuda";
  static constexpr DLDeviceType kRunsOn = kDLCUDA;
  static constexpr const char* kElsewhere = "on the host, libkvcheck_backend_host.so";
  static std::string version() { return std::string("kvcheck ") + kKvcheckVersion; }
  static void* self() { return &g_state; }

  // Runs one op's body on the stream, which returns "" or why it failed; then the launch check.
  // Exceptions become the message too (the launchers' std::invalid_argument and LaunchError).
  template <class Args, class Body>
  static int32_t run(const char* op, void* self, const Args* a, void* stream, char* err,
                     size_t err_size, Body body) {
    try {
      const State& st = self ? *static_cast<const State*>(self) : g_state;
      std::string why = a ? use_device(op, st) : std::string(op) + ": args is NULL";
      if (why.empty()) why = body(*a, stream);
      if (why.empty()) {
        const cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess) return KVCHECK_OK;
        why = cuda_error(op, "kernel launch", e);
      }
      put_error(err, err_size, why);
    } catch (const std::exception& e) {
      (void)cudaGetLastError();  // a launcher that threw may have left a launch error behind
      put_error(err, err_size, builtin_plugin::op_message(op, e.what()));
    } catch (...) {
      put_error(err, err_size, std::string(op) + ": unknown exception");
    }
    return KVCHECK_ERROR;
  }

  KV_BUILTIN_OP_FUNCTIONS(cuda)

  static std::string paged_decode(const PagedDecodeArgs& d, float* lse, void* stream) {
    const auto s = static_cast<cudaStream_t>(stream);
    cuda::paged_decode(d, s);
    if (lse && d.num_rows > 0) {
      // The decode's own launch check first, so that an error names the right kernel.
      const cudaError_t e = cudaGetLastError();
      const char* op = backend::op_name(KVCHECK_OP_PAGED_DECODE);
      if (e != cudaSuccess) return cuda_error(op, "kernel launch", e);
      launch_decode_lse(d, lse, s);
    }
    return "";
  }

  // The plan is copied into kvcheck's persistent plan buffer on the stream, then the stream is
  // waited for, as the built-in Device::paged_decode_plan does (upload = copy + synchronize). The
  // wait is what keeps the host vector alive until the copy has read it: CUDA's "API
  // synchronization behavior" says only that a pageable host-to-device cudaMemcpyAsync "may" be
  // staged before it returns, so the plugin does not rely on staging. kvcheck never plans while
  // it captures a graph (its built-in planner could not either); a capturing stream is refused.
  static std::string store_plan(const std::vector<int32_t>& plan, const DecodePlanArgs& d,
                                void* stream) {
    const auto s = static_cast<cudaStream_t>(stream);
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(s, &cap);
    if (e != cudaSuccess) return cuda_error("paged_decode_plan", "cudaStreamIsCapturing", e);
    if (cap != cudaStreamCaptureStatusNone)
      return "paged_decode_plan: called while the stream is being captured: the plan is a copy "
             "from host memory, which a graph cannot hold";
    const size_t bytes = plan.size() * sizeof(int32_t);
    e = cudaMemcpyAsync(d.plan, plan.data(), bytes, cudaMemcpyHostToDevice, s);
    if (e != cudaSuccess) return cuda_error("paged_decode_plan", "cudaMemcpyAsync", e);
    e = cudaStreamSynchronize(s);  // `plan` (host) must outlive the copy: see above
    if (e != cudaSuccess) return cuda_error("paged_decode_plan", "cudaStreamSynchronize", e);
    return "";
  }
};

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  const kvcheck_backend* table =
      kv::builtin_plugin::init<CudaOps>(abi_version, host, err, err_size);
  if (table) g_state.device = host->device.device_id;  // no CUDA call: see the top
  return table;
}
