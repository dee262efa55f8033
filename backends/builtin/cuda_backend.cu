// cuda_backend.cu — kvcheck's built-in CUDA ops (kernels/cuda) as a backend plugin:
// libkvcheck_backend_cuda.so, name "builtin-cuda". Built only with the CUDA device.
//
// Every op of the table but paged_prefill converts its ABI args back into kvcheck's descriptor
// (from_abi, src/backend/abi_convert.h) and calls the kv::cuda launcher that CudaDevice calls, on
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

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/abi_convert.h"
#include "backends/builtin/builtin_plugin.h"
#include "kernels/attn_state.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch_error.h"
#include "kernels/decode_splits.h"
#include "kernels/paged_kv.cuh"
#include "kvcheck/backend.h"
#include "report/version.h"

namespace {

using namespace kv;

constexpr const char* kName = "builtin-cuda";

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

// Runs one op's body on the stream, which returns "" or why it failed; then the launch check.
// Exceptions become the message too (the launchers' std::invalid_argument and LaunchError).
template <class Args, class Body>
int32_t run_op(const char* op, void* self, const Args* a, void* stream, char* err,
               size_t err_size, Body body) {
  try {
    const State& st = self ? *static_cast<const State*>(self) : g_state;
    std::string why = a ? use_device(op, st) : std::string(op) + ": args is NULL";
    if (why.empty()) why = body(*a, static_cast<cudaStream_t>(stream));
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

// An op that is its kvcheck descriptor handed to the kv::cuda launcher as it is.
template <class Desc, class Args>
int32_t convert_and_launch(const char* op, void* self, const Args* a, void* stream, char* err,
                           size_t err_size, void (*launcher)(const Desc&, cudaStream_t)) {
  return run_op(op, self, a, stream, err, err_size, [&](const Args& in, cudaStream_t s) {
    Desc d;
    std::string why = backend::from_abi(in, &d);
    if (why.empty()) launcher(d, s);
    return why;
  });
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

// ---- ops ----------------------------------------------------------------------------------

int32_t write_kv(void* self, const kvcheck_write_kv_args* a, void* s, char* err, size_t n) {
  return convert_and_launch<WriteKvArgs>("write_kv", self, a, s, err, n, cuda::write_kv);
}

int32_t gather_kv(void* self, const kvcheck_gather_kv_args* a, void* s, char* err, size_t n) {
  return convert_and_launch<GatherKvArgs>("gather_kv", self, a, s, err, n, cuda::gather_kv);
}

int32_t varlen_attention(void* self, const kvcheck_varlen_attention_args* a, void* s, char* err,
                         size_t n) {
  return convert_and_launch<VarlenAttnArgs>("varlen_attention", self, a, s, err, n,
                                            cuda::varlen_attention);
}

int32_t merge_states(void* self, const kvcheck_merge_states_args* a, void* s, char* err,
                     size_t n) {
  return convert_and_launch<MergeStatesArgs>("merge_states", self, a, s, err, n,
                                             cuda::merge_states);
}

int32_t linear_attention(void* self, const kvcheck_linear_attention_args* a, void* s, char* err,
                         size_t n) {
  return convert_and_launch<LinearAttnArgs>("linear_attention", self, a, s, err, n,
                                            cuda::linear_attention);
}

int32_t fill_blocks(void* self, const kvcheck_fill_blocks_args* a, void* s, char* err,
                    size_t n) {
  return convert_and_launch<FillBlocksArgs>("fill_blocks", self, a, s, err, n,
                                            cuda::fill_blocks);
}

int32_t quant_fp8(void* self, const kvcheck_quant_fp8_args* a, void* s, char* err, size_t n) {
  return convert_and_launch<QuantFp8Args>("quant_fp8", self, a, s, err, n, cuda::quant_fp8);
}

int32_t paged_decode(void* self, const kvcheck_paged_decode_args* a, void* s, char* err,
                     size_t n) {
  return run_op("paged_decode", self, a, s, err, n,
                [](const kvcheck_paged_decode_args& in, cudaStream_t stream) {
                  PagedDecodeArgs d;
                  float* lse = nullptr;
                  std::string why = backend::from_abi(in, &d, &lse);
                  if (!why.empty()) return why;
                  if (d.num_rows > 0 && d.split_meta == nullptr)
                    return std::string("paged_decode: plan: absent; builtin-cuda reads the split "
                                       "plan that paged_decode_plan wrote there");
                  if (d.num_rows > 0 && d.partial_out == nullptr)
                    return std::string("paged_decode: workspace: absent; builtin-cuda needs "
                                       "workspace_bytes(KVCHECK_OP_PAGED_DECODE) bytes");
                  cuda::paged_decode(d, stream);
                  if (lse && d.num_rows > 0) {
                    // The decode's own launch check first, so that an error names the right kernel.
                    const cudaError_t e = cudaGetLastError();
                    if (e != cudaSuccess) return cuda_error("paged_decode", "kernel launch", e);
                    launch_decode_lse(d, lse, stream);
                  }
                  return std::string();
                });
}

// The plan is computed on the host and copied into kvcheck's persistent plan buffer on the stream,
// then the stream is waited for, as the built-in Device::paged_decode_plan does (upload = copy +
// synchronize). The wait is what keeps the host vector alive until the copy has read it: CUDA's
// "API synchronization behavior" says only that a pageable host-to-device cudaMemcpyAsync "may"
// be staged before it returns, so the plugin does not rely on staging. kvcheck never plans while it
// captures a graph (its built-in planner could not either); a capturing stream is refused.
int32_t paged_decode_plan(void* self, const kvcheck_decode_plan_args* a, void* s, char* err,
                          size_t n) {
  return run_op("paged_decode_plan", self, a, s, err, n,
                [](const kvcheck_decode_plan_args& in, cudaStream_t stream) {
    DecodePlanArgs d;
    std::string why;
    const std::vector<int32_t> plan = builtin_plugin::builtin_plan(in, &d, &why);
    if (!why.empty()) return why;
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(stream, &cap);
    if (e != cudaSuccess) return cuda_error("paged_decode_plan", "cudaStreamIsCapturing", e);
    if (cap != cudaStreamCaptureStatusNone)
      return std::string("paged_decode_plan: called while the stream is being captured: the "
                         "plan is a copy from host memory, which a graph cannot hold");
    const size_t bytes = plan.size() * sizeof(int32_t);
    e = cudaMemcpyAsync(d.plan, plan.data(), bytes, cudaMemcpyHostToDevice, stream);
    if (e != cudaSuccess) return cuda_error("paged_decode_plan", "cudaMemcpyAsync", e);
    e = cudaStreamSynchronize(stream);  // `plan` (host) must outlive the copy: see above
    if (e != cudaSuccess) return cuda_error("paged_decode_plan", "cudaStreamSynchronize", e);
    return std::string();
  });
}

// ---- the table ----------------------------------------------------------------------------

kvcheck_backend make_table() {
  static const std::string version = std::string("kvcheck ") + kKvcheckVersion;
  // What CudaDevice runs: every cache dtype, layout and head dim the launchers take (they refuse
  // at launch, as in the built-in device, what they cannot: paged_decode's v_dim above
  // kMaxHeadDim 1024, linear attention's head_dim above 1024), with the host device's conventions.
  kvcheck_backend b = builtin_plugin::builtin_table(kName, version.c_str(), &g_state);
  b.write_kv = write_kv;
  b.paged_decode = paged_decode;
  b.gather_kv = gather_kv;
  b.varlen_attention = varlen_attention;
  b.merge_states = merge_states;
  b.linear_attention = linear_attention;
  b.fill_blocks = fill_blocks;
  b.quant_fp8 = quant_fp8;
  b.paged_prefill = nullptr;  // kvcheck runs its gather -> varlen -> merge chain
  b.paged_decode_plan = paged_decode_plan;
  return b;
}

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  const kvcheck_backend* table = kv::builtin_plugin::init(
      kName, kDLCUDA, "on the host, libkvcheck_backend_host.so", abi_version, host, err,
      err_size, make_table);
  if (table) g_state.device = host->device.device_id;  // no CUDA call: see the top
  return table;
}
