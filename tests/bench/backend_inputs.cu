// backend_inputs.cu — kvbench_backend_decode's shared inputs (backend_inputs.h): the decode
// benchmarks' inputs (decode_inputs.cu), and the one kernel of its own: q rounded through the
// plugin's io dtype, written in both types.
#include <algorithm>

#include "tests/bench/backend_inputs.h"

namespace kv::bench {
namespace {

// q (float32) rounded in place through `io`, and the rounded values stored as `io` in q_io.
__global__ void round_to_io_kernel(float* q, void* q_io, DType io, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float v = round_through(q[i], io);
    q[i] = v;
    store_from_f32(q_io, int64_t(i), io, v);
  }
}

}  // namespace

double input_set_bytes(const DecodeShape& s, DType io) {
  const double q = double(s.batch) * s.q_heads * s.head_dim;
  const double out = double(s.batch) * s.q_heads * s.v_dim;
  return double(cache_bytes(s, int64_t(s.batch) * table_stride_of(s))) +
         (q + out) * (4.0 + dtype_size(io)) + 4.0 * s.batch * table_stride_of(s);
}

BackendInputs make_backend_inputs(const DecodeShape& s, int sets, int max_splits_cap, DType io,
                                  uint64_t seed) {
  BackendInputs in;
  static_cast<DecodeInputs&>(in) = make_decode_inputs(s, sets, max_splits_cap, seed);
  in.io = io;
  const size_t qn = in.q_set * sets;
  in.q_io = DevBuf(qn * dtype_size(io));
  const unsigned grid = unsigned(std::min<size_t>((qn + 255) / 256, 132 * 16));
  round_to_io_kernel<<<grid, 256>>>(in.q.as<float>(), in.q_io.as(), io, qn);
  BENCH_CUDA(cudaGetLastError());
  in.out_io = DevBuf(in.out_set * sets * dtype_size(io));
  poison_outputs(in);
  return in;
}

PagedDecodeArgs plugin_args(const DecodeShape& s, const BackendInputs& in, int set) {
  PagedDecodeArgs a = decode_args(s, in, set, nullptr, 1, s.batch);
  const size_t esz = dtype_size(in.io);
  // AbiBuilder takes float pointers and the caller retypes the tensors: the element offsets are
  // the same, only the element size differs.
  a.q = reinterpret_cast<const float*>(in.q_io.as<char>() + in.q_set * set * esz);
  a.out = reinterpret_cast<float*>(in.out_io.as<char>() + in.out_set * set * esz);
  a.partial_out = a.partial_lse = nullptr;
  return a;
}

void poison_outputs(BackendInputs& in) {
  BENCH_CUDA(cudaMemset(in.out.as(), 0xff, in.out.bytes()));        // f32 NaN
  BENCH_CUDA(cudaMemset(in.out_io.as(), 0xff, in.out_io.bytes()));  // NaN in f32, f16 and bf16
  BENCH_CUDA(cudaDeviceSynchronize());  // before a decode on another (non-blocking) stream
}

std::vector<float> builtin_out_host(const BackendInputs& in) {
  return download<float>(in.out, in.out_set);
}

std::vector<float> plugin_out_host(const BackendInputs& in) {
  const size_t esz = dtype_size(in.io);
  const std::vector<uint8_t> raw = download<uint8_t>(in.out_io, in.out_set * esz);
  std::vector<float> v(in.out_set);
  for (size_t i = 0; i < v.size(); ++i) v[i] = load_as_f32(raw.data(), int64_t(i), in.io);
  return v;
}

}  // namespace kv::bench
