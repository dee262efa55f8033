// decode_inputs.cu — the device inputs both decode benchmarks share (decode_inputs.h).
#include "tests/bench/decode_inputs.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace kv::bench {

int table_stride_of(const DecodeShape& s) { return (s.context + s.block_size - 1) / s.block_size; }

size_t cache_bytes(const DecodeShape& s, int64_t blocks) {
  const int64_t page = int64_t(s.block_size) * s.kv_heads * s.head_dim * dtype_size(s.dtype);
  return size_t(page * blocks * (s.latent ? 1 : 2));
}

DecodeInputs make_decode_inputs(const DecodeShape& s, int sets, int max_splits_cap, uint64_t seed,
                                bool shuffled, bool head_major) {
  DecodeInputs in;
  in.sets = sets;
  in.max_splits_cap = max_splits_cap;
  in.table_stride = table_stride_of(s);
  const int64_t blocks = int64_t(sets) * s.batch * in.table_stride + 1;  // + the null block 0
  in.cache = DevBuf(cache_bytes(s, blocks));
  in.desc = make_paged_kv(in.cache.as(), KvLayout::kv_separate, s.dtype, int32_t(blocks),
                          s.block_size, s.kv_heads, s.head_dim);
  if (head_major) {  // within a page [head][entry][feature], same page size
    in.desc.k_stride_head = in.desc.v_stride_head = int64_t(s.block_size) * s.head_dim;
    in.desc.k_stride_token = in.desc.v_stride_token = s.head_dim;
  }
  if (s.latent) {  // one latent page per block; V reads its first v_dim features
    in.desc.v = in.desc.k;
    in.desc.v_stride_block = in.desc.k_stride_block;
    in.desc.v_stride_token = in.desc.k_stride_token;
    in.desc.v_stride_head = in.desc.k_stride_head;
  }
  if (s.dtype == DType::fp8_e4m3) in.desc.k_scale = in.desc.v_scale = s.kv_scale;
  const size_t elems = in.cache.bytes() / dtype_size(s.dtype);
  fill_uniform(in.cache.as(), elems, s.dtype, -1.0f, 1.0f, in.desc.k_scale, seed, nullptr);

  // Shuffled block ids: consecutive tokens of a row live in unrelated blocks, as after churn.
  // Sequential: a row's blocks are adjacent in memory, the layout a fresh cache gives, to tell
  // the cost of scattered pages from the kernel's own.
  std::vector<int32_t> ids(blocks - 1);
  std::iota(ids.begin(), ids.end(), 1);
  if (shuffled) std::shuffle(ids.begin(), ids.end(), std::mt19937_64(seed));
  in.tables = upload(ids);  // [set][row][table_stride]: exactly the ids, in order
  in.lens = upload(std::vector<int32_t>(s.batch, s.context));

  in.q_set = size_t(s.batch) * s.q_heads * s.head_dim;
  in.out_set = size_t(s.batch) * s.q_heads * s.v_dim;
  in.q = DevBuf(in.q_set * sets * 4);
  fill_uniform(in.q.as(), in.q_set * sets, DType::f32, -1.0f, 1.0f, 1.0f, seed + 1, nullptr);
  in.out = DevBuf(in.out_set * sets * 4);
  BENCH_CUDA(cudaMemset(in.out.as(), 0xff, in.out.bytes()));  // NaN: unwritten shows
  in.pout = DevBuf(size_t(s.batch) * max_splits_cap * s.q_heads * s.v_dim * 4);
  in.plse = DevBuf(size_t(s.batch) * max_splits_cap * s.q_heads * 4);
  BENCH_CUDA(cudaDeviceSynchronize());
  return in;
}

PagedDecodeArgs decode_args(const DecodeShape& s, const DecodeInputs& in, int set,
                            const int32_t* meta, int max_splits, int rows) {
  return {.cache = in.desc, .q = in.q.as<float>() + in.q_set * set,
          .q_row_stride = int64_t(s.q_heads) * s.head_dim,
          .out = in.out.as<float>() + in.out_set * set,
          .out_row_stride = int64_t(s.q_heads) * s.v_dim,
          .block_table = in.tables.as<int32_t>() + size_t(set) * s.batch * in.table_stride,
          .block_table_stride = in.table_stride, .seq_lens = in.lens.as<int32_t>(),
          .split_meta = meta, .partial_out = in.pout.as<float>(),
          .partial_lse = in.plse.as<float>(), .max_splits = max_splits, .num_rows = rows,
          .num_q_heads = s.q_heads, .v_dim = s.v_dim,
          .scale = 1.0f / std::sqrt(float(s.head_dim))};
}

std::vector<int> splits_worth_trying(const DecodeShape& s, const std::vector<int>& wanted) {
  std::vector<int> v;
  for (int m : wanted)
    if (m >= 1 && m <= table_stride_of(s) && (m == 1 || int64_t(m) * s.batch <= 2048))
      v.push_back(m);
  if (v.empty()) v.push_back(1);
  return v;
}

int input_set_count(double set_bytes, double rotate_bytes, double fixed) {
  int dev = 0, l2 = 0;
  BENCH_CUDA(cudaGetDevice(&dev));
  BENCH_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const double rotate = rotate_bytes > 0 ? rotate_bytes : std::max(8.0 * l2, 512.0 * (1 << 20));
  size_t free_b = 0, total_b = 0;
  BENCH_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const double budget = 0.85 * double(free_b) - fixed;
  if (budget < set_bytes) return 0;
  const int want = int(std::min<double>(64, std::ceil(rotate / set_bytes)));
  return std::max(1, std::min<int>(want, int(budget / set_bytes)));
}

}  // namespace kv::bench
