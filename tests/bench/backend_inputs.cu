// backend_inputs.cu — kvbench_backend_decode's shared inputs (backend_inputs.h): the cache and
// tables as tests/bench/decode_runner.cu lays them out (NHD pages; MLA: one latent page per
// block, V its first v_dim features), and the one kernel of its own: q rounded through the
// plugin's io dtype, written in both types.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

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

size_t cache_bytes(const DecodeShape& s, int64_t blocks) {
  const int64_t page = int64_t(s.block_size) * s.kv_heads * s.head_dim * dtype_size(s.dtype);
  return size_t(page * blocks * (s.latent ? 1 : 2));
}

}  // namespace

int table_stride_of(const DecodeShape& s) { return (s.context + s.block_size - 1) / s.block_size; }

double input_set_bytes(const DecodeShape& s, DType io) {
  const double q = double(s.batch) * s.q_heads * s.head_dim;
  const double out = double(s.batch) * s.q_heads * s.v_dim;
  return double(cache_bytes(s, int64_t(s.batch) * table_stride_of(s))) +
         (q + out) * (4.0 + dtype_size(io)) + 4.0 * s.batch * table_stride_of(s);
}

BackendInputs make_backend_inputs(const DecodeShape& s, int sets, int max_splits_cap, DType io,
                                  uint64_t seed) {
  BackendInputs in;
  in.io = io;
  in.sets = sets;
  in.max_splits_cap = max_splits_cap;
  in.table_stride = table_stride_of(s);
  const int64_t blocks = int64_t(sets) * s.batch * in.table_stride + 1;  // + the null block 0
  in.cache = DevBuf(cache_bytes(s, blocks));
  in.desc = make_paged_kv(in.cache.as(), KvLayout::kv_separate, s.dtype, int32_t(blocks), s.block_size,
                          s.kv_heads, s.head_dim);
  if (s.latent) {  // one latent page per block; V reads its first v_dim features
    in.desc.v = in.desc.k;
    in.desc.v_stride_block = in.desc.k_stride_block;
    in.desc.v_stride_token = in.desc.k_stride_token;
    in.desc.v_stride_head = in.desc.k_stride_head;
  }
  fill_uniform(in.cache.as(), in.cache.bytes() / dtype_size(s.dtype), s.dtype, -1.0f, 1.0f, 1.0f,
               seed, nullptr);

  // Shuffled block ids: consecutive tokens of a row live in unrelated blocks, as after churn.
  std::vector<int32_t> ids(blocks - 1);
  std::iota(ids.begin(), ids.end(), 1);
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(seed));
  in.tables = upload(ids);  // [set][row][table_stride]
  in.lens = upload(std::vector<int32_t>(s.batch, s.context));

  in.q_set = size_t(s.batch) * s.q_heads * s.head_dim;
  in.out_set = size_t(s.batch) * s.q_heads * s.v_dim;
  const size_t qn = in.q_set * sets;
  in.q = DevBuf(qn * 4);
  in.q_io = DevBuf(qn * dtype_size(io));
  fill_uniform(in.q.as(), qn, DType::f32, -1.0f, 1.0f, 1.0f, seed + 1, nullptr);
  const unsigned grid = unsigned(std::min<size_t>((qn + 255) / 256, 132 * 16));
  round_to_io_kernel<<<grid, 256>>>(in.q.as<float>(), in.q_io.as(), io, qn);
  BENCH_CUDA(cudaGetLastError());
  in.out = DevBuf(in.out_set * sets * 4);
  in.out_io = DevBuf(in.out_set * sets * dtype_size(io));
  in.pout = DevBuf(size_t(s.batch) * max_splits_cap * s.q_heads * s.v_dim * 4);
  in.plse = DevBuf(size_t(s.batch) * max_splits_cap * s.q_heads * 4);
  poison_outputs(in);
  return in;
}

PagedDecodeArgs builtin_args(const DecodeShape& s, const BackendInputs& in, int set,
                             const int32_t* meta, int max_splits) {
  PagedDecodeArgs a;
  a.cache = in.desc;
  a.q = in.q.as<float>() + in.q_set * set;
  a.q_row_stride = int64_t(s.q_heads) * s.head_dim;
  a.out = in.out.as<float>() + in.out_set * set;
  a.out_row_stride = int64_t(s.q_heads) * s.v_dim;
  a.block_table = in.tables.as<int32_t>() + size_t(set) * s.batch * in.table_stride;
  a.block_table_stride = in.table_stride;
  a.seq_lens = in.lens.as<int32_t>();
  a.split_meta = meta;
  a.partial_out = in.pout.as<float>();
  a.partial_lse = in.plse.as<float>();
  a.max_splits = max_splits;
  a.num_rows = s.batch;
  a.num_q_heads = s.q_heads;
  a.v_dim = s.v_dim;
  a.scale = 1.0f / std::sqrt(float(s.head_dim));
  return a;
}

PagedDecodeArgs plugin_args(const DecodeShape& s, const BackendInputs& in, int set) {
  PagedDecodeArgs a = builtin_args(s, in, set, nullptr, 1);
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
